//! The S3 rows of a lake that grew for years (issue 48, item 6; `make bench-million` at
//! 1,000,000 versions): a packed lake on `s3lite` answering each request a fixed delay late,
//! and what its users do: a clone, a cold `ls-remote`, a depth-1 clone of a tag, a fetch of
//! 1,000 new versions, and `pack` of those 1,000. Each with its wall time, requests and bytes the
//! store sent, and the clone's peak memory beside native Git's on the same history.
//! `FDL_BENCH_MILLION_S3=<versions>x<ms>,...` picks the runs.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use crate::support::s3lite::{self, Counts, S3Lite};
use crate::support::{pairs, LakeBuilder, TestEnv};

/// `git <args>` in `cwd`, which must succeed: its wall time and what the store counted.
fn measured(server: &S3Lite, t: &TestEnv, cwd: &str, args: &[&str]) -> (f64, Counts) {
    server.reset();
    let start = Instant::now();
    t.ok(cwd, args);
    (start.elapsed().as_secs_f64(), server.counts())
}

/// One row of the table.
fn row(what: &str, (wall, c): &(f64, Counts), extra: &str) {
    println!(
        "  {what:<34} {wall:>8.2} s {:>9} {:>12.1} KiB  {extra}",
        c.requests,
        c.body_bytes as f64 / 1024.0
    );
}

/// The files `after` holds that `before` did not, or holds otherwise (new versions, the refs
/// that moved, `refs.json`).
fn changed(before: &BTreeMap<String, Vec<u8>>, after: &LakeBuilder) -> BTreeMap<String, Vec<u8>> {
    after
        .files
        .iter()
        .filter(|(k, v)| before.get(*k) != Some(*v))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

fn figures(server: &S3Lite, versions: u64, delay_ms: u64) {
    let bucket = format!("million-{versions}-{delay_ms}");
    let mut l = LakeBuilder::new();
    l.chain(1, versions);
    l.branch("main", versions).tag("v1", versions / 2);
    l.refs_json();
    server.put_files(&bucket, "lake/", &l.files);
    let t = server.test_env();
    let url = &format!("fdl::s3://{bucket}/lake/");
    server.set_delay(Duration::ZERO);
    crate::support::run::pack(&t, url);
    server.set_delay(Duration::from_millis(delay_ms));
    println!("\n{versions} versions, packed, on s3lite at {delay_ms} ms a request (1 run each)");
    println!(
        "  {:<34} {:>10} {:>9} {:>16}",
        "operation", "wall", "requests", "store sent"
    );
    let clone_args = ["clone", "-q", "--bare", url.as_str(), "clone.git"];
    server.reset();
    let start = Instant::now();
    let peak = crate::helper_peak_kib(&t, ".", &clone_args);
    let clone = (start.elapsed().as_secs_f64(), server.counts());
    let native = crate::native_peak_kib(
        &t,
        &[
            "clone",
            "-q",
            "--bare",
            "--no-local",
            &t.path("clone.git").display().to_string(),
            "native.git",
        ],
    );
    let memory = match (peak, native) {
        (Some(h), Some(g)) => format!(
            "helper peak {:.0} MiB, git clone --no-local of the same commits {:.0} MiB ({:.2}x; goal <= 1x: {})",
            h as f64 / 1024.0,
            g as f64 / 1024.0,
            h as f64 / g as f64,
            if h <= g { "met" } else { "NOT MET" }
        ),
        _ => "peak memory not measured (no /usr/bin/time)".into(),
    };
    row("clone of 2 refs", &clone, &memory);
    let cold = measured(server, &t, ".", &["ls-remote", url]);
    row("cold ls-remote (no repository)", &cold, "");
    let tip = measured(
        server,
        &t,
        ".",
        &[
            "clone", "-q", "--bare", "--depth", "1", "--branch", "v1", url, "tip.git",
        ],
    );
    row("depth-1 clone of a tag", &tip, "");
    let before = l.files.clone();
    l.chain(versions + 1, versions + 1000);
    l.branch("main", versions + 1000).refs_json();
    server.put_files(&bucket, "lake/", &changed(&before, &l));
    drop(before);
    let fetch = measured(server, &t, "clone.git", &["fetch", "-q", "origin"]);
    row("fetch of 1,000 new versions", &fetch, "");
    server.reset();
    let start = Instant::now();
    crate::support::run::pack(&t, url);
    let pack = (start.elapsed().as_secs_f64(), server.counts());
    row(
        "pack of the 1,000 new",
        &pack,
        &format!("{} PUTs", pack.1.puts),
    );
}

/// The runs `FDL_BENCH_MILLION_S3` asks for, on one server.
pub fn s3_rows() {
    let runs = std::env::var("FDL_BENCH_MILLION_S3").unwrap_or_default();
    if runs.is_empty() {
        return;
    }
    println!(
        "\nA lake that grew for years, on S3 (t/support/s3lite.rs, a fixed delay per request)"
    );
    let server = s3lite::start();
    for (versions, delay_ms) in pairs(&runs) {
        figures(&server, versions, delay_ms);
    }
}
