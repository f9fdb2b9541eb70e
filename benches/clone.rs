//! `make bench`: the read path measured side by side in one run, never as a timed test.
//!
//! - for 10,000 and 100,000 versions in a local folder (`FDL_BENCH_FOLDER`): cold `git clone`
//!   beside `git clone --no-local` of a plain repository holding the same commits, the helper's
//!   peak memory, the size of `.git`, and a no-op fetch, each with its ratio to Git;
//! - the same on the S3-compatible server (moto on 127.0.0.1) for a smaller lake, since moto
//!   answers a few hundred requests a second at most;
//! - store requests for a cold clone, a warm `ls-remote` and a fetch of 10 new versions, beside
//!   the minimum the layout allows;
//! - with `FDL_BENCH_MILLION_S3=<versions>x<ms>` (`make bench-million`), the S3 rows of a packed
//!   lake that grew for years (`clone/million.rs`);
//! - with `FDL_BENCH_GEOMETRIC=<base>x<runs>x<versions a run>`, many runs of `pack` on a lake
//!   that grows a little before each (`clone/geometric.rs`).

// The shared test support is one crate's private modules, `pub` to one another.
#![allow(unreachable_pub)]

// The tests' support, of which a benchmark uses a part.
#[allow(dead_code)]
#[path = "../t/support/mod.rs"]
mod support;

use std::time::Instant;

use support::{median, LakeBuilder, TestEnv};

#[path = "clone/million.rs"]
mod million;

#[path = "clone/geometric.rs"]
mod geometric;

fn time<T>(f: impl FnOnce() -> T) -> (T, f64) {
    let start = Instant::now();
    let out = f();
    (out, start.elapsed().as_secs_f64())
}

/// The median of `runs` timings of `f(i)`, for run numbers 0..runs.
fn median_secs(runs: usize, mut f: impl FnMut(usize)) -> f64 {
    median((0..runs).map(|i| timed(|| f(i))).collect())
}

/// The seconds `f` takes, once the disk has written what earlier steps left in memory: a lake
/// of 100,000 versions is 200,000 files just written, and writing them back while a run is
/// timed would slow whichever run comes first.
fn timed<T>(f: impl FnOnce() -> T) -> f64 {
    let synced = std::process::Command::new("sync").status();
    assert!(synced.is_ok_and(|s| s.success()), "sync failed");
    time(f).1
}

/// A linear lake of `n` versions with a tag every 1000 and a second branch.
fn lake(n: u64) -> LakeBuilder {
    let mut l = LakeBuilder::new();
    l.chain(1, n);
    l.branch("main", n).branch("staging", n - 1);
    for k in (1000..=n).step_by(1000) {
        l.tag(&format!("v{k}"), k);
    }
    l.refs_json();
    l
}

/// Runs git with one more variable set, and insists it succeeds.
fn git_with(t: &TestEnv, cwd: &str, args: &[&str], var: (&str, &str)) -> std::process::Output {
    let out = t
        .command("git", cwd, args)
        .env(var.0, var.1)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Requests the helper made in one git command, from its trace.
fn requests(t: &TestEnv, cwd: &str, args: &[&str]) -> String {
    let out = git_with(t, cwd, args, ("GIT_REMOTE_FDL_DEBUG", "1"));
    let err = String::from_utf8_lossy(&out.stderr);
    err.lines()
        .rev()
        .find_map(|l| l.split_once("requests so far: ").map(|(_, r)| r))
        .unwrap_or("none")
        .to_string()
}

/// Requests for pushing one tag, then 100 tags in one push (and that push's seconds).
fn push_requests(t: &TestEnv, repo: &str) -> (String, String, f64) {
    let tip = t.ok(repo, &["rev-parse", "main"]).trim().to_string();
    let one = requests(
        t,
        repo,
        &[
            "push",
            "-q",
            "origin",
            &format!("{tip}:refs/tags/bench-one"),
        ],
    );
    let last100 = t.ok(repo, &["rev-list", "-n", "100", "main"]);
    let specs: Vec<String> = last100
        .lines()
        .enumerate()
        .map(|(i, c)| format!("{c}:refs/tags/bench-{i}"))
        .collect();
    let mut args = vec!["push", "-q", "origin"];
    args.extend(specs.iter().map(String::as_str));
    let (hundred, secs) = time(|| requests(t, repo, &args));
    (one, hundred, secs)
}

fn refs_of(l: &LakeBuilder) -> u64 {
    l.files
        .keys()
        .filter(|k| k.starts_with("refs/heads/") || k.starts_with("refs/tags/"))
        .count() as u64
}

/// Bytes of the files below `dir`.
fn size_of(dir: &std::path::Path) -> u64 {
    let mut total = 0;
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let m = e.metadata().unwrap();
        total += if m.is_dir() {
            size_of(&e.path())
        } else {
            m.len()
        };
    }
    total
}

/// The helper's peak resident memory (KiB) in one git command, by GNU time around the helper
/// (a wrapper first on PATH): measured on the helper itself, not on this large process's fork.
fn helper_peak_kib(t: &TestEnv, cwd: &str, args: &[&str]) -> Option<u64> {
    if !std::path::Path::new("/usr/bin/time").exists() {
        return None;
    }
    let real = env!("CARGO_BIN_EXE_git-remote-fdl");
    let wrap = t.path("peak-wrapper");
    std::fs::create_dir_all(&wrap).unwrap();
    let report = t.path("peak-report");
    let script = format!(
        "#!/bin/sh\nexec /usr/bin/time -a -o '{}' -f %M '{real}' \"$@\"\n",
        report.display()
    );
    let exe = wrap.join("git-remote-fdl");
    std::fs::write(&exe, script).unwrap();
    std::process::Command::new("chmod")
        .args(["+x", exe.to_str().unwrap()])
        .status()
        .unwrap();
    let _ = std::fs::remove_file(&report);
    let path = format!(
        "{}:{}",
        wrap.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    git_with(t, cwd, args, ("PATH", &path));
    let text = std::fs::read_to_string(&report).ok()?;
    text.lines().filter_map(|l| l.trim().parse().ok()).max()
}

/// The peak resident memory (KiB) of `git <args>` and the processes it waited for (GNU time's
/// `%M`: the largest of them, `index-pack` or `pack-objects` in a clone).
fn native_peak_kib(t: &TestEnv, args: &[&str]) -> Option<u64> {
    if !std::path::Path::new("/usr/bin/time").exists() {
        return None;
    }
    let git = t
        .command("sh", ".", &["-c", "command -v git"])
        .output()
        .ok()?;
    let git = String::from_utf8_lossy(&git.stdout).trim().to_string();
    let mut all = vec!["-f", "%M", git.as_str()];
    all.extend_from_slice(args);
    let out = t.command("/usr/bin/time", ".", &all).output().ok()?;
    let text = String::from_utf8_lossy(&out.stderr);
    text.lines().rev().find_map(|l| l.trim().parse().ok())
}

/// The folder figures of issue 8 for a lake of `versions`: clone time, the helper's peak
/// memory, the size of `.git` and a no-op fetch, each beside `git clone --no-local` of the
/// same history.
fn folder_figures(versions: u64) {
    let t = TestEnv::new();
    let url = t.local_lake("lake", &lake(versions));
    t.ok(".", &["clone", "-q", "--bare", &url, "plain-src.git"]);
    t.ok("plain-src.git", &["gc", "-q"]);
    let (lake_secs, git_secs) = side_by_side(&t, &url, &[], "from-", true);
    let peak = helper_peak_kib(&t, ".", &["clone", "-q", "--bare", &url, "peak.git"]);
    remove(&t, "peak.git");
    let lake_size = size_of(&t.path("from-lake-0.git"));
    let git_size = size_of(&t.path("from-plain-0.git"));
    let noop_lake = median_secs(5, |_| {
        t.ok("from-lake-0.git", &["fetch", "-q", "origin"]);
    });
    let noop_git = median_secs(5, |_| {
        t.ok("from-plain-0.git", &["fetch", "-q", "origin"]);
    });
    let mib = |b: u64| b as f64 / (1 << 20) as f64;
    println!("{versions} versions, local folder (median of {RUNS} runs, taken in turn, each after sync; no-op fetch of 5)");
    println!(
        "  {:<28} {:>9.3} s   git clone --no-local {:>7.3} s   {:>5.2}x (goal: <= 1.0x at 100,000 versions, issue 29)",
        "cold clone",
        lake_secs,
        git_secs,
        lake_secs / git_secs
    );
    let native = native_peak_kib(
        &t,
        &[
            "clone",
            "-q",
            "--bare",
            "--no-local",
            "plain-src.git",
            "plain-peak.git",
        ],
    );
    remove(&t, "plain-peak.git");
    match (peak, native) {
        (Some(kib), Some(git)) => println!(
            "  {:<28} {:>9.1} MiB  git clone --no-local {:>7.1} MiB  {:>5.2}x (goal: <= 64 MiB at 100,000 versions)",
            "helper peak memory",
            kib as f64 / 1024.0,
            git as f64 / 1024.0,
            kib as f64 / git as f64
        ),
        (Some(kib), None) => println!(
            "  {:<28} {:>9.1} MiB  (goal: <= 64 MiB at 100,000 versions)",
            "helper peak memory",
            kib as f64 / 1024.0
        ),
        (None, _) => println!(
            "  {:<28} (no /usr/bin/time on this machine)",
            "helper peak memory"
        ),
    }
    println!(
        "  {:<28} {:>9.1} MiB  git clone --no-local {:>7.1} MiB  {:>5.2}x (goal: <= 1.2x)",
        ".git size",
        mib(lake_size),
        mib(git_size),
        lake_size as f64 / git_size as f64
    );
    println!(
        "  {:<28} {:>9.3} s   git fetch (no-op)    {:>7.3} s   {:>5.2}x",
        "no-op fetch",
        noop_lake,
        noop_git,
        noop_lake / noop_git
    );
    cold_clones(&t, &url, &[]);
    trusted_pack_clones(&t, &url);
}

/// The same lake packed (`git-remote-fdl pack`) and cloned through its packs where the user
/// trusts them (`fdlTrustPacks`: a folder has no ETags to check a packed version by), beside
/// Git again, taken in turn.
fn trusted_pack_clones(t: &TestEnv, url: &str) {
    let (_, pack_secs) = time(|| support::run::pack(t, url));
    let (lake_secs, git_secs) = side_by_side(t, url, &["-c", TRUSTED], "trusted-", false);
    println!("the same lake packed ({pack_secs:.1} s), cloned with {TRUSTED}");
    println!(
        "  {:<28} {:>9.3} s   git clone --no-local {:>7.3} s   {:>5.2}x (median of {RUNS}; issue 48's goal: <= 1.2x at 1,000,000 versions)",
        "clone, packs trusted",
        lake_secs,
        git_secs,
        lake_secs / git_secs
    );
    let peak = helper_peak_kib(
        t,
        ".",
        &clone_lake(url, &["-c", TRUSTED], "trusted-peak.git"),
    );
    remove(t, "trusted-peak.git");
    let native = native_peak_kib(t, &clone_plain("trusted-plain-peak.git"));
    remove(t, "trusted-plain-peak.git");
    if let (Some(kib), Some(git)) = (peak, native) {
        println!(
            "  {:<28} {:>9.1} MiB  git clone --no-local {:>7.1} MiB  {:>5.2}x (the pages of the pack it maps count)",
            "helper peak, packs trusted",
            kib as f64 / 1024.0,
            git as f64 / 1024.0,
            kib as f64 / git as f64
        );
    }
    cold_clones(t, url, &["-c", TRUSTED]);
}

/// The median seconds of `RUNS` clones of the lake at `url` (with `config`) and as many of the
/// plain repository, taken in turn, so that both see the machine in the same state. Each copy
/// goes once timed, but for the first of each where `keep_first` (for their size and a no-op
/// fetch): their pages would push a large lake out of memory (at 1,000,000 versions the lake's
/// small files are about what this machine can cache).
fn side_by_side(
    t: &TestEnv,
    url: &str,
    config: &[&str],
    prefix: &str,
    keep_first: bool,
) -> (f64, f64) {
    let (mut lake_runs, mut git_runs) = (Vec::new(), Vec::new());
    let (mut lake_read, mut git_read) = (Vec::new(), Vec::new());
    for i in 0..RUNS {
        let (from_lake, dest) = (
            format!("{prefix}lake-{i}.git"),
            format!("{prefix}plain-{i}.git"),
        );
        let (secs, read) = read_from_disk(|| t.ok(".", &clone_lake(url, config, &from_lake)));
        lake_runs.push(secs);
        lake_read.push(read);
        let (secs, read) = read_from_disk(|| t.ok(".", &clone_plain(&dest)));
        git_runs.push(secs);
        git_read.push(read);
        if i > 0 || !keep_first {
            remove(t, &from_lake);
            remove(t, &dest);
        }
    }
    let mib = |runs: Vec<f64>| median(runs) / 1024.0;
    println!(
        "  (read from the disk during those clones, median: {:.0} MiB from the lake, {:.0} MiB by git clone --no-local; /proc/vmstat pgpgin, the whole machine's)",
        mib(lake_read),
        mib(git_read)
    );
    (median(lake_runs), median(git_runs))
}

/// The seconds `f` takes ([`timed`]) and the KiB the whole machine read from its disks
/// meanwhile (`pgpgin` of `/proc/vmstat`): what of the clone's input the page cache lacked.
fn read_from_disk<T>(f: impl FnOnce() -> T) -> (f64, f64) {
    let paged_in = || {
        let vmstat = std::fs::read_to_string("/proc/vmstat").unwrap_or_default();
        let line = vmstat.lines().find_map(|l| l.strip_prefix("pgpgin "));
        line.and_then(|n| n.trim().parse::<f64>().ok())
            .unwrap_or(f64::NAN)
    };
    let before = paged_in();
    let secs = timed(f);
    (secs, paged_in() - before)
}

/// `git clone` of the lake at `url` into `dest`, `config` (`-c` pairs) given first.
fn clone_lake<'a>(url: &'a str, config: &[&'a str], dest: &'a str) -> Vec<&'a str> {
    let mut args = vec!["clone", "-q", "--bare"];
    args.extend(config);
    args.extend([url, dest]);
    args
}

/// `git clone --no-local` of the plain repository holding the same commits into `dest`.
fn clone_plain(dest: &str) -> [&str; 6] {
    ["clone", "-q", "--bare", "--no-local", "plain-src.git", dest]
}

/// Clones of each side in a row of the folder figures.
const RUNS: usize = 3;

/// What lets a clone from a folder take the lake's packs.
const TRUSTED: &str = "remote.origin.fdlTrustPacks=true";

/// Removes a clone the figures no longer need.
fn remove(t: &TestEnv, dir: &str) {
    std::fs::remove_dir_all(t.path(dir)).unwrap();
}

/// Drops the whole machine's page cache where asked to (`FDL_BENCH_DROP_CACHES=1`, as root:
/// `/proc/sys/vm/drop_caches`), and says whether it did: never as a side effect of a bench.
fn drop_page_cache() -> bool {
    if std::env::var_os("FDL_BENCH_DROP_CACHES").is_none_or(|v| v != "1") {
        return false;
    }
    let synced = std::process::Command::new("sync").status();
    synced.is_ok_and(|s| s.success()) && std::fs::write("/proc/sys/vm/drop_caches", "3").is_ok()
}

/// One clone of each side from a dropped page cache: what a lake costs where it is not in
/// memory (the lake's small files against one pack of Git's).
fn cold_clones(t: &TestEnv, url: &str, config: &[&str]) {
    if !drop_page_cache() {
        println!(
            "  {:<28} (not measured: FDL_BENCH_DROP_CACHES=1, as root, drops the page cache first)\n",
            "clone, page cache dropped"
        );
        return;
    }
    let lake_secs = time(|| t.ok(".", &clone_lake(url, config, "cold-lake.git"))).1;
    let git_secs = match drop_page_cache() {
        true => time(|| t.ok(".", &clone_plain("cold-plain.git"))).1,
        false => f64::NAN,
    };
    remove(t, "cold-lake.git");
    remove(t, "cold-plain.git");
    println!(
        "  {:<28} {:>9.3} s   git clone --no-local {:>7.3} s   {:>5.2}x (one run each, after drop_caches)\n",
        "clone, page cache dropped",
        lake_secs,
        git_secs,
        lake_secs / git_secs
    );
}

fn main() {
    let sizes = std::env::var("FDL_BENCH_FOLDER").unwrap_or_else(|_| "10000,100000".into());
    println!("git-remote-fdl against git, local folder (issue 8's folder figures)\n");
    for n in sizes.split(',').filter_map(|n| n.trim().parse().ok()) {
        folder_figures(n);
    }
    million::s3_rows();
    geometric::rows();
    let versions: u64 = std::env::var("FDL_BENCH_VERSIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000);
    let s3_versions: u64 = std::env::var("FDL_BENCH_S3_VERSIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000);
    println!("store requests and pushes ({versions} versions; S3: {s3_versions})\n");

    let t = TestEnv::new();
    let mut l = lake(versions);
    let url = t.local_lake("lake", &l);
    let r = refs_of(&l);

    // Request counts (local folder: one request per file read or folder listed).
    let cold = requests(&t, ".", &["clone", "-q", "--bare", &url, "counted.git"]);
    let warm = requests(&t, "counted.git", &["ls-remote", "origin"]);
    let last = versions;
    l.chain(last + 1, last + 10);
    l.branch("main", last + 10).refs_json();
    l.write_dir(&t.path("lake"));
    let fetch10 = requests(
        &t,
        "counted.git",
        &["fetch", "-q", "origin", "+refs/heads/*:refs/heads/*"],
    );
    println!("store requests ({r} refs)");
    println!(
        "  {:<26} {:<44} minimum the layout allows",
        "operation", "helper"
    );
    println!(
        "  {:<26} {:<44} get={} list=2 (fdl.json, HEAD, refs, 2 files a version; listings)",
        "cold clone",
        cold,
        2 + r + 2 * versions
    );
    println!(
        "  {:<26} {:<44} get={} list=1 (fdl.json, HEAD, refs)",
        "warm ls-remote",
        warm,
        2 + r
    );
    println!(
        "  {:<26} {:<44} get={} list=1 (+ 2 files a new version)\n",
        "fetch of 10 new versions",
        fetch10,
        2 + r + 20
    );

    // Pushes: one tag, then 100 tags in one push (written concurrently).
    let (one_tag, hundred, hundred_secs) = push_requests(&t, "counted.git");
    println!("pushes, local folder ({versions} versions of history)");
    println!("  {:<26} {:<44} minimum", "operation", "helper");
    println!(
        "  {:<26} {:<44} get={} list=1 put=2 (list for-push: fdl.json, HEAD, refs.json, {r} refs; then the tag and refs.json)",
        "push 1 tag",
        one_tag,
        3 + r
    );
    println!(
        "  {:<26} {:<44} put=101 ({hundred_secs:.3} s)\n",
        "push 100 tags at once", hundred
    );

    // The same on the S3-compatible server.
    let m = support::moto::moto();
    m.create_bucket("bench");
    let small = lake(s3_versions);
    small.write_s3(m, "bench", "lake/");
    let mut ts = TestEnv::new();
    for (k, v) in m.env() {
        ts.set(&k, &v);
    }
    let (_, s3_secs) = time(|| {
        ts.ok(
            ".",
            &["clone", "-q", "--bare", "fdl::s3://bench/lake/", "s3.git"],
        )
    });
    ts.ok("s3.git", &["gc", "-q"]);
    let (_, s3_git_secs) = time(|| {
        ts.ok(
            ".",
            &[
                "clone",
                "-q",
                "--bare",
                "--no-local",
                "s3.git",
                "s3-plain.git",
            ],
        )
    });
    let s3_cold = requests(
        &ts,
        ".",
        &[
            "clone",
            "-q",
            "--bare",
            "fdl::s3://bench/lake/",
            "s3-counted.git",
        ],
    );
    let s3_warm = requests(&ts, "s3-counted.git", &["ls-remote", "origin"]);
    println!("cold clone, S3-compatible server (moto, 127.0.0.1), {s3_versions} versions");
    println!(
        "  {:<40} {:>8.3} s",
        "git clone fdl::s3://bench/lake/", s3_secs
    );
    println!(
        "  {:<40} {:>8.3} s",
        "git clone --no-local <plain repo>", s3_git_secs
    );
    println!(
        "  {:<40} {:>8.2}x   (moto serves each GET in Python)",
        "ratio",
        s3_secs / s3_git_secs
    );
    println!("  {:<40} {}", "requests, cold clone", s3_cold);
    println!("  {:<40} {}", "requests, warm ls-remote", s3_warm);
    let (s3_one, s3_hundred, s3_hundred_secs) = push_requests(&ts, "s3-counted.git");
    println!("  {:<40} {}", "requests, push 1 tag", s3_one);
    println!(
        "  {:<40} {} ({s3_hundred_secs:.3} s)",
        "requests, push 100 tags at once", s3_hundred
    );
}
