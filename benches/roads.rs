//! `make bench`, third part (issue 29): every road a reader takes to a packed lake, each beside
//! the same road with packs off (`fdl.usePacks=false`), in one run: requests the server
//! answered and wall time, with the goal. On an S3-compatible server that answers each
//! request a fixed delay after it came (`t/support/s3lite.rs`), a lake of `<versions>` with
//! 1,000 tags, packed by `git-remote-fdl pack`:
//! - a cold `git clone` and a cold `git ls-remote` outside any repository;
//! - a `git fetch` into a clone made when the lake held a quarter of its versions, after the
//!   rest were written and packed;
//! - a signed lake of 203 versions, cloned with `fdlRequireSignatures`;
//!
//! and over plain HTTP (`t/support/http.rs`, a web server that cannot list, each answer
//! `<ms>` late), the same lake's folder packed, cloned without `fdlTrustPacks`, beside the same
//! clone at 0 ms, and (up to 1,000 versions) a fetch of three quarters of them written and
//! packed since the clone, beside the same fetch with packs off. Every clone is compared with
//! the folder's.
//!
//! `FDL_BENCH_ROADS=<versions>x<ms>,...` (`make bench`: `2000x0,2000x30,100000x0,100000x30`),
//! `FDL_BENCH_ROADS_HTTP=<versions>x<ms>,...` (`300x20,3500x20`).

// The shared test support is one crate's private modules, `pub` to one another.
#![allow(unreachable_pub)]

#[allow(dead_code)]
#[path = "../t/support/mod.rs"]
mod support;

use std::time::{Duration, Instant};

use support::run::pack;
use support::s3lite::{self, S3Lite};
use support::{pairs, parse_ls_remote, requests_traced, LakeBuilder, TestEnv};

const TAGS: u64 = 1_000;

/// A linear lake of `n` versions, two branches, `TAGS` tags spread over it, and `refs.json`.
fn lake(n: u64) -> LakeBuilder {
    let mut l = LakeBuilder::new();
    l.chain(1, n);
    l.branch("main", n).branch("staging", n - 1);
    for k in 1..=TAGS.min(n) {
        l.tag(&format!("t{k:04}"), k * n / TAGS.min(n));
    }
    l.refs_json();
    l
}

/// One measured road: what it cost with packs and without, and its goal.
struct Row {
    road: String,
    packed: (f64, u64),
    unpacked: Option<(f64, u64)>,
    goal: String,
    met: bool,
}

/// `git <args>` in a fresh environment reaching `server` (its own user cache: nothing known),
/// timed, and the requests the server answered meanwhile.
fn cold(server: &S3Lite, args: &[&str]) -> (f64, u64, String) {
    let t = server.test_env();
    server.reset();
    let start = Instant::now();
    let out = t.ok(".", args);
    let wall = start.elapsed().as_secs_f64();
    server.settle();
    (wall, server.counts().requests, out)
}

/// The cold clone and the cold listing outside a repository, packed and not.
fn cold_roads(server: &S3Lite, versions: u64, delay_ms: u64, rows: &mut Vec<Row>) {
    let bucket = format!("roads-{versions}-{delay_ms}");
    let l = lake(versions);
    server.put_files(&bucket, "lake/", &l.files);
    let url = format!("fdl::s3://{bucket}/lake/");
    server.set_delay(Duration::ZERO);
    pack(&server.test_env(), &url);
    server.set_delay(Duration::from_millis(delay_ms));
    let (files, refs) = (l.files_under("versions/"), l.files_under("refs/"));
    let most = refs.div_ceil(1000) + files.div_ceil(1000) + 30;
    let off = "fdl.usePacks=false";
    let (pw, pr, _) = cold(server, &["clone", "-q", "--bare", &url, "c.git"]);
    let (uw, ur, _) = cold(server, &["-c", off, "clone", "-q", "--bare", &url, "c.git"]);
    let at = format!("{versions} versions, {refs} refs, {delay_ms} ms");
    rows.push(Row {
        road: format!("cold clone ({at})"),
        packed: (pw, pr),
        unpacked: Some((uw, ur)),
        goal: format!("<= {most} requests"),
        met: pr <= most,
    });
    let (lw, lr, listed) = cold(server, &["ls-remote", &url]);
    let (luw, lur, plain) = cold(server, &["-c", off, "ls-remote", &url]);
    assert_eq!(parse_ls_remote(&listed), parse_ls_remote(&plain), "{url}");
    rows.push(Row {
        road: format!("cold ls-remote outside a repository ({at})"),
        packed: (lw, lr),
        unpacked: Some((luw, lur)),
        goal: format!(
            "<= {most} requests, <= 1.5x the packed clone ({:.2}x)",
            lw / pw
        ),
        met: lr <= most && lw <= 1.5 * pw,
    });
}

/// A fetch into clones made when the lake held a quarter of its versions, after the other
/// three quarters were written and packed.
fn absent_road(server: &S3Lite, versions: u64, delay_ms: u64, rows: &mut Vec<Row>) {
    let bucket = format!("absent-{versions}-{delay_ms}");
    let was = versions / 4;
    let mut l = lake(was);
    server.put_files(&bucket, "lake/", &l.files);
    let url = format!("fdl::s3://{bucket}/lake/");
    let t = server.test_env();
    server.set_delay(Duration::ZERO);
    pack(&t, &url);
    t.ok(".", &["clone", "-q", "--bare", &url, "packed.git"]);
    t.ok(
        ".",
        &[
            "-c",
            "fdl.usePacks=false",
            "clone",
            "-q",
            "--bare",
            &url,
            "plain.git",
        ],
    );
    l.chain(was + 1, versions);
    l.branch("main", versions).refs_json();
    server.put_files(&bucket, "lake/", &l.files);
    pack(&t, &url);
    server.set_delay(Duration::from_millis(delay_ms));
    let fetch = |repo: &str, args: &[&str]| {
        server.reset();
        let start = Instant::now();
        t.ok(repo, args);
        let wall = start.elapsed().as_secs_f64();
        server.settle();
        (wall, server.counts().requests)
    };
    let packed = fetch("packed.git", &["fetch", "-q", "origin"]);
    let unpacked = fetch(
        "plain.git",
        &["-c", "fdl.usePacks=false", "fetch", "-q", "origin"],
    );
    let tips = |repo: &str| t.ok(repo, &["rev-parse", "refs/heads/main"]);
    assert_eq!(tips("packed.git"), tips("plain.git"));
    // The 60 requests at 1,500 new versions, and a listing page for every 1,000 more
    // files the check of the new versions lists (three a version).
    let most = 60 + (3 * (versions - was)).saturating_sub(4_500).div_ceil(1000);
    rows.push(Row {
        road: format!(
            "fetch of {} new, packed, into a clone of {was} ({delay_ms} ms)",
            versions - was
        ),
        packed,
        unpacked: Some(unpacked),
        goal: format!("<= {most} requests"),
        met: packed.1 <= most,
    });
}

/// A signed lake of 203 versions (each `version.json.sig` by ssh-keygen), cloned with
/// signatures required, through its packs and without them.
fn signed_road(server: &S3Lite, delay_ms: u64, rows: &mut Vec<Row>) {
    const VERSIONS: u64 = 203;
    let t = server.test_env();
    let key = support::signing::keygen(&t, "alice");
    let signers = t.path("allowed_signers");
    std::fs::write(&signers, format!("alice@example.org {key}\n")).unwrap();
    let mut l = LakeBuilder::new();
    let alice = serde_json::json!("Alice <alice@example.org>");
    for n in 1..=VERSIONS {
        let parents: Vec<u64> = (n > 1).then_some(n - 1).into_iter().collect();
        l.version_by(n, &parents, "signed work", alice.clone());
    }
    l.branch("main", VERSIONS)
        .tag("v1", VERSIONS / 2)
        .refs_json();
    for n in 1..=VERSIONS {
        let path = format!("versions/{}/version.json", support::lake::vid(n));
        let sig = support::signing::signature(&t, "alice", &l.files[&path]);
        l.put(&format!("{path}.sig"), sig);
    }
    let bucket = format!("signed-{delay_ms}");
    server.put_files(&bucket, "lake/", &l.files);
    let url = format!("fdl::s3://{bucket}/lake/");
    server.set_delay(Duration::ZERO);
    pack(&t, &url);
    server.set_delay(Duration::from_millis(delay_ms));
    let strict = [
        "-c".to_string(),
        "remote.origin.fdlRequireSignatures=true".to_string(),
        "-c".to_string(),
        format!("remote.origin.fdlAllowedSignersFile={}", signers.display()),
    ];
    let clone = |extra: &[&str], dir: &str| {
        let mut args: Vec<&str> = strict.iter().map(String::as_str).collect();
        args.extend_from_slice(extra);
        args.extend_from_slice(&["clone", "-q", "--bare", &url, dir]);
        server.reset();
        let start = Instant::now();
        t.ok(".", &args);
        let wall = start.elapsed().as_secs_f64();
        server.settle();
        (wall, server.counts().requests)
    };
    let packed = clone(&[], "signed.git");
    let unpacked = clone(&["-c", "fdl.usePacks=false"], "signed-plain.git");
    rows.push(Row {
        road: format!("signed lake, {VERSIONS} versions, signatures required ({delay_ms} ms)"),
        packed,
        unpacked: Some(unpacked),
        goal: "<= 30 requests".into(),
        met: packed.1 <= 30,
    });
}

/// `git <args>` in `cwd`, traced: its wall time and the requests the helper made.
fn traced(t: &TestEnv, cwd: &str, args: &[&str]) -> (f64, u64) {
    let start = Instant::now();
    let out = t
        .command("git", cwd, args)
        .env("GIT_REMOTE_FDL_DEBUG", "1")
        .output()
        .unwrap();
    let wall = start.elapsed().as_secs_f64();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    (wall, requests_traced(&stderr))
}

/// A clone over plain HTTP of the lake's folder, packed, `fdlTrustPacks` not set, at `delay_ms`
/// and at 0 ms, traced for its requests.
fn http_road(versions: u64, delay_ms: u64, rows: &mut Vec<Row>) {
    let t = TestEnv::new();
    let folder = t.local_lake("site", &lake(versions));
    pack(&t, &folder);
    let expected = parse_ls_remote(&t.ok(".", &["ls-remote", &folder]));
    let clone = |delay: u64, dir: &str| {
        let server = support::http::serve_with_delay(&t.path("site"), Duration::from_millis(delay));
        let url = format!("fdl::{}", server.url);
        let run = traced(&t, ".", &["clone", "-q", "--bare", &url, dir]);
        let refs =
            parse_ls_remote(&t.ok(dir, &["for-each-ref", "--format=%(objectname)\t%(refname)"]));
        for (commit, name) in expected.iter().filter(|(_, n)| n != "HEAD") {
            assert!(
                refs.contains(&(commit.clone(), name.clone())),
                "{name} over HTTP"
            );
        }
        run
    };
    // A single run of a clone this short swings by a tenth either way: the median of three,
    // taken in turn.
    let (mut nears, mut fars) = (Vec::new(), Vec::new());
    for i in 0..3 {
        nears.push(clone(0, &format!("near-{i}.git")));
        fars.push(clone(delay_ms, &format!("far-{i}.git")));
    }
    // Each run makes the same requests: the median time, and the last run's requests.
    let median = |runs: Vec<(f64, u64)>| {
        let requests = runs.last().expect("three runs").1;
        (
            support::median(runs.iter().map(|r| r.0).collect()),
            requests,
        )
    };
    let (near, far) = (median(nears), median(fars));
    // What the delay added, in round trips: those made one after the other.
    let in_sequence = (far.0 - near.0) / (delay_ms as f64 / 1000.0);
    rows.push(Row {
        road: format!(
            "plain HTTP clone, packed, untrusted ({versions} versions, {delay_ms} ms against 0 ms)"
        ),
        packed: far,
        unpacked: Some(near),
        goal: format!(
            "<= 1.5x the clone at 0 ms ({:.2}x; {in_sequence:.0} round trips in sequence)",
            far.0 / near.0
        ),
        met: far.0 <= 1.5 * near.0,
    });
}

/// Over plain HTTP, a fetch into a clone made when the lake's folder held a quarter of its
/// versions, after the other three quarters were written and packed, at `delay_ms`, with the
/// packs' records as the index and with packs off.
fn http_absent_road(versions: u64, delay_ms: u64, rows: &mut Vec<Row>) {
    let t = TestEnv::new();
    let was = versions / 4;
    let mut l = lake(was);
    let folder = t.local_lake("site", &l);
    pack(&t, &folder);
    let server = support::http::serve(&t.path("site"));
    let url = format!("fdl::{}", server.url);
    let off = "fdl.usePacks=false";
    // Each fetch is made once per repository: three of each, for medians.
    let repos = |side: &'static str| (0..3).map(move |i| format!("{side}-{i}.git"));
    for repo in repos("near").chain(repos("far")) {
        t.ok(".", &["clone", "-q", "--bare", &url, &repo]);
    }
    t.ok(
        ".",
        &["-c", off, "clone", "-q", "--bare", &url, "plain.git"],
    );
    l.chain(was + 1, versions);
    l.branch("main", versions).refs_json();
    l.write_dir(&t.path("site"));
    pack(&t, &folder);
    let fetch = |repo: &str, args: &[&str]| traced(&t, repo, args);
    let all = "+refs/*:refs/*";
    let median = |side: &'static str| {
        let runs: Vec<(f64, u64)> = repos(side)
            .map(|r| fetch(&r, &["fetch", "-q", "origin", all]))
            .collect();
        let requests = runs.last().expect("three runs").1;
        (
            support::median(runs.iter().map(|r| r.0).collect()),
            requests,
        )
    };
    let near = median("near");
    server.set_delay(Duration::from_millis(delay_ms));
    let packed = median("far");
    let unpacked = fetch("plain.git", &["-c", off, "fetch", "-q", "origin", all]);
    let tips = |repo: &str| t.ok(repo, &["rev-parse", "refs/heads/main"]);
    for repo in repos("near").chain(repos("far")) {
        assert_eq!(tips(&repo), tips("plain.git"), "{repo}");
    }
    let new = versions - was;
    // The refs and the list; the record with the tip; the new versions, two files each, at
    // the 256 requests in flight of plain HTTP; and two to spare.
    let most = 2 + (2 * new).div_ceil(256) + 2;
    // What the delay added, in round trips: those made one after the other.
    let in_sequence = (packed.0 - near.0) / (delay_ms as f64 / 1000.0);
    rows.push(Row {
        road: format!(
            "plain HTTP fetch of {new} new, packed, untrusted, into a clone of {was} ({delay_ms} ms)"
        ),
        packed,
        unpacked: Some(unpacked),
        goal: format!(
            "<= {most} round trips in sequence ({in_sequence:.1}; {:.2} s at 0 ms)",
            near.0
        ),
        met: in_sequence <= most as f64,
    });
}

fn main() {
    let roads = std::env::var("FDL_BENCH_ROADS").unwrap_or_else(|_| "2000x0,2000x30".into());
    let http = std::env::var("FDL_BENCH_ROADS_HTTP").unwrap_or_else(|_| "300x20".into());
    let server = s3lite::start();
    let mut rows = Vec::new();
    for (v, d) in pairs(&roads) {
        eprintln!("measuring the roads of a packed lake of {v} versions at {d} ms...");
        cold_roads(&server, v, d, &mut rows);
        absent_road(&server, v, d, &mut rows);
    }
    let delays: std::collections::BTreeSet<u64> = pairs(&roads).iter().map(|p| p.1).collect();
    for d in delays {
        eprintln!("measuring a signed lake at {d} ms...");
        signed_road(&server, d, &mut rows);
    }
    for (v, d) in pairs(&http) {
        eprintln!("measuring plain HTTP, {v} versions at {d} ms...");
        http_road(v, d, &mut rows);
        // Without packs, that fetch reads a generation a round trip: 2,625 of them at 3,500.
        if v <= 1_000 {
            http_absent_road(v, d, &mut rows);
        }
    }
    println!("Issue 29's roads: packed (and, in brackets, the same road with packs off; for plain HTTP, at 0 ms)");
    println!("{:<78} {:>18} {:>20}  goal", "road", "packed", "(without)");
    for r in &rows {
        let (w, n) = r.packed;
        let without = r
            .unpacked
            .map(|(w, n)| format!("({w:.2} s, {n} req)"))
            .unwrap_or_default();
        let verdict = if r.met { "met" } else { "NOT MET" };
        println!(
            "{:<78} {:>7.2} s {:>5} req {:>20}  {} {verdict}",
            r.road, w, n, without, r.goal
        );
    }
}
