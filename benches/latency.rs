//! `make bench`, second part: the helper against an S3-compatible server that answers every
//! request a fixed delay after it came (`t/support/s3lite.rs`, on 127.0.0.1; its own work is
//! inside the delay), as a store far away would.
//! For each lake size and delay, five operations, each with its wall time, the requests the
//! server answered, round trips in sequence (wall / delay) and effective concurrency (time
//! requests spent in the server / wall), beside the goal of issue 8.
//!
//! `FDL_BENCH_LATENCY=<versions>x<ms>,...` picks the runs (`make bench` passes the set,
//! `2000x0,2000x20,2000x50,10000x0,10000x20,10000x50`); `FDL_BENCH_LARGE=100000x30` adds a cold
//! clone of a large lake and a fetch of 200 new versions on top of it; `FDL_BENCH_PACKED`
//! (issue 22: `2000x0,2000x30,10000x0,10000x30,100000x0,100000x30`) a cold clone of the same
//! lake without and with its own packs (`git-remote-fdl pack`), and a fetch of 20 versions
//! made after packing; `FDL_BENCH_PEER_DELAYS=0,30` the same packed clone beside awslabs'
//! git-remote-s3 (`FDL_BENCH_PEER`: the folder holding it); `FDL_BENCH_SHALLOW` (issue 48:
//! `100000x30`) a depth-1 clone of a tag of a packed lake beside its full clone.

// The shared test support is one crate's private modules, `pub` to one another.
#![allow(unreachable_pub)]

// The tests' support, of which a benchmark uses a part.
#[allow(dead_code)]
#[path = "../t/support/mod.rs"]
mod support;

use std::time::{Duration, Instant};

use support::s3lite::{self, Counts, S3Lite};
use support::{pairs, LakeBuilder, TestEnv};

/// Tags in the lake: the no-op fetch is measured on about a thousand refs.
const TAGS: u64 = 1_000;

struct Row {
    versions: u64,
    delay_ms: u64,
    op: &'static str,
    wall: f64,
    counts: Counts,
    goal: String,
    met: Option<bool>,
}

fn lake(n: u64) -> LakeBuilder {
    let mut l = LakeBuilder::new();
    l.chain(1, n);
    l.branch("main", n).branch("staging", n - 1);
    // At most a tag a version: a lake smaller than TAGS would otherwise tag version 0, which
    // does not exist.
    let tags = TAGS.min(n);
    for k in 1..=tags {
        l.tag(&format!("t{k:04}"), k * n / tags);
    }
    l.refs_json();
    l
}

fn run(server: &S3Lite, t: &TestEnv, cwd: &str, args: &[&[&str]]) -> (f64, Counts) {
    server.reset();
    let start = Instant::now();
    for a in args {
        t.ok(cwd, a);
    }
    (start.elapsed().as_secs_f64(), server.counts())
}

/// Runs of each operation: the median wall time is shown (the machine may be busy).
const RUNS: usize = 3;

/// The median wall time of `runs` (and the counts of the last).
fn median(runs: Vec<(f64, Counts)>) -> (f64, Counts) {
    let counts = runs.last().expect("at least one run").1.clone();
    (support::median(runs.iter().map(|r| r.0).collect()), counts)
}

/// A lake of `versions` on the one server of the run (a bucket of its own), the server
/// answering after `delay_ms`, and a test environment that reaches it. One server serves every
/// run: each holds a few hundred threads waiting for connections.
fn setup(server: &S3Lite, versions: u64, delay_ms: u64) -> (String, LakeBuilder, TestEnv) {
    let bucket = format!("bench-{versions}-{delay_ms}");
    let l = lake(versions);
    server.put_files(&bucket, "lake/", &l.files);
    let t = server.test_env();
    server.set_delay(Duration::from_millis(delay_ms));
    (bucket, l, t)
}

impl Row {
    fn new(versions: u64, delay_ms: u64, op: &'static str, m: (f64, Counts), goal: Goal) -> Row {
        let (wall, counts) = m;
        let rt = wall * 1000.0 / delay_ms.max(1) as f64;
        let (goal, met) = goal.judge(wall, rt, delay_ms);
        Row {
            versions,
            delay_ms,
            op,
            wall,
            counts,
            goal,
            met,
        }
    }
}

fn measure(server: &S3Lite, versions: u64, delay_ms: u64, rows: &mut Vec<Row>) {
    let (bucket, mut l, t) = setup(server, versions, delay_ms);
    let url = &format!("fdl::s3://{bucket}/lake/");
    let mut push = |op: &'static str, measured: (f64, Counts), goal: Goal| {
        rows.push(Row::new(versions, delay_ms, op, measured, goal));
    };
    let clones: Vec<String> = (0..RUNS).map(|i| format!("c{i}.git")).collect();
    let cold = median(
        clones
            .iter()
            .map(|c| run(server, &t, ".", &[&["clone", "-q", "--bare", url, c]]))
            .collect(),
    );
    // The issue sets this goal at 2,000 versions; beyond, the store's requests in flight
    // (fdlConcurrency, 256) bound it: about requests / 256 round trips.
    let clone_goal = match versions <= 2_000 {
        true => Goal::RoundTrips(40.0),
        false => Goal::Report("no goal set (40 round trips at 2,000 versions)"),
    };
    push("cold clone", cold, clone_goal);
    // The same, as a fetch into an empty repository: Git then writes each ref as a file (a
    // clone writes one packed-refs file), which is most of the time on a slow disk. Its runs
    // are taken in turn with those of ls-remote-then-fetch, which writes the same files and
    // is judged against it: a slow spell of the disk falls on both.
    let in_empty_repo = |repo: String, cmds: &[&[&str]]| {
        t.ok(".", &["init", "-q", "--bare", &repo]);
        t.ok(&repo, &["remote", "add", "origin", url]);
        run(server, &t, &repo, cmds)
    };
    let (mut fetches, mut ls_fetches) = (Vec::new(), Vec::new());
    for i in 0..RUNS {
        fetches.push(in_empty_repo(
            format!("e{i}.git"),
            &[&["fetch", "-q", "origin"]],
        ));
        let cmds: [&[&str]; 2] = [&["ls-remote", "origin"], &["fetch", "-q", "origin"]];
        ls_fetches.push(in_empty_repo(format!("l{i}.git"), &cmds));
    }
    let empty_fetch = median(fetches);
    let fetch_wall = empty_fetch.0;
    push("cold fetch, empty repo", empty_fetch, Goal::None);
    let lf = median(ls_fetches);
    push("ls-remote, then fetch", lf, Goal::Times(1.3, fetch_wall));
    l.chain(versions + 1, versions + 20);
    // As a writer does: the ref, then refs.json.
    l.branch("main", versions + 20).refs_json();
    server.put_files(&bucket, "lake/", &l.files);
    let fetch = |c: &String| run(server, &t, c, &[&["fetch", "-q", "origin"]]);
    let plus20 = median(clones.iter().map(fetch).collect());
    push("fetch of 20 new versions", plus20, Goal::RoundTrips(15.0));
    let noop = median(clones.iter().map(fetch).collect());
    push("no-op fetch, 1,002 refs", noop, Goal::RoundTrips(10.0));
    let tip = t.ok("c0.git", &["rev-parse", "main"]).trim().to_string();
    let tags = median(
        (0..RUNS)
            .map(|i| {
                let spec = format!("{tip}:refs/tags/bench-{i}");
                run(server, &t, "c0.git", &[&["push", "-q", "origin", &spec]])
            })
            .collect(),
    );
    push("push of one tag", tags, Goal::RoundTrips(4.0));
    // The same onto a refs.json that lags the ref files (a writer stopped between the two):
    // the push reads refs.json's token and lists the refs again before it writes refs.json.
    let mut behind = l.clone();
    behind.branch("main", versions + 19).refs_json();
    let stale: std::collections::BTreeMap<String, Vec<u8>> =
        [("refs.json".to_string(), behind.files["refs.json"].clone())].into();
    let onto_stale = median(
        (0..RUNS)
            .map(|i| {
                server.put_files(&bucket, "lake/", &stale);
                let spec = format!("{tip}:refs/tags/bench-stale-{i}");
                run(server, &t, "c0.git", &[&["push", "-q", "origin", &spec]])
            })
            .collect(),
    );
    let why = "no goal set: 4 waves (t/waves.rs)";
    push("tag push, stale refs.json", onto_stale, Goal::Report(why));
    // Writers at once, each from a repository of its own: all but one lose each race for
    // refs.json, and read it and list the refs again.
    let racing = (0..RUNS).map(|i| racing_pushes(server, (&t, &bucket), &tip, i));
    let racing = median(racing.collect());
    let why = "no goal set: every tag in refs.json (checked)";
    push("16 tag pushes at once", racing, Goal::Report(why));
    // Outside any repository: the user's cache (in the test HOME) makes the second one cheap.
    t.ok(".", &["ls-remote", url]);
    let outside = median(
        (0..RUNS)
            .map(|_| run(server, &t, ".", &[&["ls-remote", url]]))
            .collect(),
    );
    push("ls-remote outside a repo", outside, Goal::RoundTrips(10.0));
}

/// Pushers racing in [`measure`]'s run.
const RACERS: usize = 16;

/// [`RACERS`] tag pushes at once, each from a copy of `c0.git`; checks that refs.json names
/// every tag afterwards.
fn racing_pushes(
    server: &S3Lite,
    (t, bucket): (&TestEnv, &str),
    tip: &str,
    run: usize,
) -> (f64, Counts) {
    let repos: Vec<String> = (0..RACERS).map(|j| format!("race{run}-{j}.git")).collect();
    for r in &repos {
        support::copy_dir(&t.path("c0.git"), &t.path(r));
    }
    let tags: Vec<String> = (0..RACERS).map(|j| format!("race-{run}-{j}")).collect();
    server.reset();
    let start = Instant::now();
    let children: Vec<_> = repos
        .iter()
        .zip(&tags)
        .map(|(r, tag)| {
            let spec = format!("{tip}:refs/tags/{tag}");
            let mut c = t.command("git", r, &["push", "-q", "origin", &spec]);
            c.stdout(std::process::Stdio::null());
            c.spawn().expect("git runs")
        })
        .collect();
    for mut c in children {
        assert!(
            c.wait().expect("git ends").success(),
            "a racing push failed"
        );
    }
    let measured = (start.elapsed().as_secs_f64(), server.counts());
    let refs_json = server.get(bucket, "lake/refs.json").expect("refs.json");
    let refs_json = String::from_utf8_lossy(&refs_json);
    for tag in &tags {
        let name = format!("\"refs/tags/{tag}\"");
        assert!(refs_json.contains(&name), "refs.json lost {name}");
    }
    measured
}

/// A large lake: one cold clone, then a fetch of 200 new versions (one run each: minutes).
fn measure_large(server: &S3Lite, versions: u64, delay_ms: u64, rows: &mut Vec<Row>) {
    let (bucket, mut l, t) = setup(server, versions, delay_ms);
    let url = &format!("fdl::s3://{bucket}/lake/");
    let mut push = |op: &'static str, measured: (f64, Counts), goal: Goal| {
        rows.push(Row::new(versions, delay_ms, op, measured, goal));
    };
    let cold = run(server, &t, ".", &[&["clone", "-q", "--bare", url, "c.git"]]);
    push("cold clone (1 run)", cold, Goal::Seconds(35.0));
    l.chain(versions + 1, versions + 200);
    l.branch("main", versions + 200).refs_json();
    server.put_files(&bucket, "lake/", &l.files);
    let plus200 = run(server, &t, "c.git", &[&["fetch", "-q", "origin"]]);
    push("fetch of 200 new (1 run)", plus200, Goal::Seconds(1.5));
}

/// The same lake cloned before and after `git-remote-fdl pack`, then 20 versions more fetched
/// into the packed clone (which the packs do not hold). Adds a line on `.git`'s size beside the
/// same clone repacked by `git repack -adf`.
fn measure_packed(
    server: &S3Lite,
    versions: u64,
    delay_ms: u64,
    rows: &mut Vec<Row>,
    notes: &mut Vec<String>,
) {
    let (bucket, mut l, t) = setup(server, versions, delay_ms);
    let bucket = format!("{bucket}-packed");
    server.put_files(&bucket, "lake/", &l.files);
    let url = &format!("fdl::s3://{bucket}/lake/");
    let mut push = |op: &'static str, measured: (f64, Counts), goal: Goal| {
        rows.push(Row::new(versions, delay_ms, op, measured, goal));
    };
    let clone = |name: &str| run(server, &t, ".", &[&["clone", "-q", "--bare", url, name]]);
    let runs = if versions > 10_000 { 1 } else { RUNS };
    let plain = median((0..runs).map(|i| clone(&format!("p{i}.git"))).collect());
    let plain_requests = plain.1.requests;
    push("cold clone, no packs", plain, Goal::None);
    server.set_delay(Duration::ZERO);
    let start = Instant::now();
    support::run::pack(&t, url);
    notes.push(format!(
        "{versions} versions: git-remote-fdl pack at 0 ms took {:.1} s",
        start.elapsed().as_secs_f64()
    ));
    server.set_delay(Duration::from_millis(delay_ms));
    let packed = median((0..runs).map(|i| clone(&format!("k{i}.git"))).collect());
    // Issue 22's goal: (objects under versions/) / 1000 + 30 requests, for the listing that
    // checks the packs and a few files. Each ref file is read besides (the lake's 1,002 refs:
    // the same in a clone without packs), so they are counted apart.
    let (objects, refs) = (l.files_under("versions/"), l.files_under("refs/"));
    let most = objects / 1000 + 30;
    let others = packed.1.requests.saturating_sub(refs);
    notes.push(format!(
        "{versions} versions at {delay_ms} ms: packed clone {} requests ({refs} ref files, {others} others; goal for the others <= {most}: {}); {plain_requests} without packs",
        packed.1.requests,
        if others <= most { "met" } else { "NOT MET" }
    ));
    push(
        "cold clone, packed",
        packed,
        Goal::Report("requests: see below"),
    );
    l.chain(versions + 1, versions + 20);
    l.branch("main", versions + 20).refs_json();
    server.put_files(&bucket, "lake/", &l.files);
    let plus20 = run(server, &t, "k0.git", &[&["fetch", "-q", "origin"]]);
    push(
        "fetch of 20 new, packed",
        plus20,
        Goal::Report("no slower than unpacked"),
    );
    let kept = size_of(&t.path("k0.git"));
    t.ok(
        ".",
        &["clone", "-q", "--bare", "--no-local", "k0.git", "r.git"],
    );
    t.ok("r.git", &["repack", "-adfq"]);
    let repacked = size_of(&t.path("r.git"));
    let objects = |repo: &str| size_of(&t.path(repo).join("objects")) as f64 / 1048576.0;
    notes.push(format!(
        "{versions} versions: .git of the packed clone {:.1} MiB, repack -adf {:.1} MiB: {:.2}x (goal <= 1.2x); objects/ alone {:.1} and {:.1} MiB (the rest is the helper's cache, {:.1} MiB)",
        kept as f64 / 1048576.0,
        repacked as f64 / 1048576.0,
        kept as f64 / repacked as f64,
        objects("k0.git"),
        objects("r.git"),
        size_of(&t.path("k0.git").join("fdl")) as f64 / 1048576.0,
    ));
}

/// Issue 22's peer, awslabs' git-remote-s3 (from PyPI; one bundle per ref), on the same server
/// at the same delay: a 2,000-commit history with one branch, cloned through this helper from
/// the lake's packs and through the peer from what `git push` wrote for it. `FDL_BENCH_PEER`
/// names the folder that holds `git-remote-s3` (`make bench` installs it in its venv).
fn measure_peer(server: &S3Lite, delay_ms: u64, rows: &mut Vec<Row>, notes: &mut Vec<String>) {
    let Ok(peer_bin) = std::env::var("FDL_BENCH_PEER") else {
        return;
    };
    const VERSIONS: u64 = 2_000;
    let bucket = format!("peer-{delay_ms}");
    let mut l = LakeBuilder::new();
    l.chain(1, VERSIONS);
    l.branch("main", VERSIONS).refs_json();
    server.set_delay(Duration::ZERO);
    server.put_files(&bucket, "lake/", &l.files);
    let mut t = server.test_env();
    // boto3 would otherwise send bodies in aws-chunked encoding, which the test server stores
    // as they come.
    t.set("AWS_REQUEST_CHECKSUM_CALCULATION", "when_required");
    // The test server checks no signature; boto3 wants some keys to sign with.
    t.set("AWS_ACCESS_KEY_ID", "bench")
        .set("AWS_SECRET_ACCESS_KEY", "bench")
        .set("AWS_DEFAULT_REGION", "us-east-1");
    t.set("AWS_RESPONSE_CHECKSUM_VALIDATION", "when_required");
    let url = &format!("fdl::s3://{bucket}/lake/");
    support::run::pack(&t, url);
    t.ok(".", &["clone", "-q", "--bare", url, "src.git"]);
    let path = format!("{peer_bin}:{}", std::env::var("PATH").unwrap_or_default());
    let peer_url = format!("s3://{bucket}/peer");
    let peer = |cwd: &str, args: &[&str]| -> Result<(), String> {
        let mut cmd = t.command("git", cwd, args);
        let out = cmd.env("PATH", &path).output().unwrap();
        match out.status.success() {
            true => Ok(()),
            false => Err(format!(
                "git {args:?} through git-remote-s3 failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            )),
        }
    };
    if let Err(e) = peer("src.git", &["push", "-q", &peer_url, "main"]) {
        return notes.push(e);
    }
    server.set_delay(Duration::from_millis(delay_ms));
    let ours: Vec<(f64, Counts)> = (0..RUNS)
        .map(|i| {
            run(
                server,
                &t,
                ".",
                &[&["clone", "-q", "--bare", url, &format!("o{i}.git")]],
            )
        })
        .collect();
    let ours = median(ours);
    let theirs = (0..RUNS).map(|i| {
        server.reset();
        let start = Instant::now();
        let dir = format!("g{i}.git");
        peer(".", &["clone", "-q", "--bare", &peer_url, &dir])?;
        Ok((start.elapsed().as_secs_f64(), server.counts()))
    });
    let theirs = match theirs.collect::<Result<Vec<_>, String>>() {
        Ok(runs) => median(runs),
        Err(e) => return notes.push(e),
    };
    notes.push(format!(
        "{VERSIONS} commits, one branch, at {delay_ms} ms: packed clone {:.2} s, {} requests; git-remote-s3 {:.2} s, {} requests: {:.2}x (goal <= 1.5x)",
        ours.0, ours.1.requests, theirs.0, theirs.1.requests, ours.0 / theirs.0
    ));
    rows.push(Row::new(
        VERSIONS,
        delay_ms,
        "clone 1 branch, packed",
        ours,
        Goal::Report("see below"),
    ));
    rows.push(Row::new(
        VERSIONS,
        delay_ms,
        "same, git-remote-s3",
        theirs,
        Goal::Report("the peer"),
    ));
}

/// Bytes of the files below `dir`.
fn size_of(dir: &std::path::Path) -> u64 {
    let mut total = 0;
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let m = e.metadata().unwrap();
        total += match m.is_dir() {
            true => size_of(&e.path()),
            false => m.len(),
        };
    }
    total
}

enum Goal {
    None,
    /// Shown, not judged.
    Report(&'static str),
    Seconds(f64),
    RoundTrips(f64),
    /// At most this many times another operation's wall time.
    Times(f64, f64),
}

impl Goal {
    fn judge(&self, wall: f64, rt: f64, delay_ms: u64) -> (String, Option<bool>) {
        match *self {
            Goal::None => ("(the baseline of the next row)".into(), None),
            Goal::Report(what) => (format!("({what})"), None),
            Goal::Seconds(n) => (format!("<= {n} s"), Some(wall <= n)),
            Goal::RoundTrips(n) if delay_ms > 0 => (format!("<= {n} round trips"), Some(rt <= n)),
            Goal::RoundTrips(n) => (format!("<= {n} round trips (needs a delay)"), None),
            Goal::Times(k, of) => (
                format!("<= {k}x cold fetch ({:.2} s)", k * of),
                Some(wall <= k * of),
            ),
        }
    }
}

/// Issue 48's CI clone: `git clone --depth 1 --branch v1` of a packed lake of `versions` with
/// two refs (`main` at the newest, `v1` in the middle), beside the full clone of the same
/// packed lake. Notes the bytes the store sent and the size of `.git/objects`.
fn measure_shallow(
    server: &S3Lite,
    versions: u64,
    delay_ms: u64,
    rows: &mut Vec<Row>,
    notes: &mut Vec<String>,
) {
    let bucket = format!("shallow-{versions}-{delay_ms}");
    let mut l = LakeBuilder::new();
    l.chain(1, versions);
    l.branch("main", versions).tag("v1", versions / 2);
    l.refs_json();
    server.put_files(&bucket, "lake/", &l.files);
    let t = server.test_env();
    let url = &format!("fdl::s3://{bucket}/lake/");
    server.set_delay(Duration::ZERO);
    support::run::pack(&t, url);
    server.set_delay(Duration::from_millis(delay_ms));
    let full = run(
        server,
        &t,
        ".",
        &[&["clone", "-q", "--bare", url, "full.git"]],
    );
    let (full_wall, full_requests, full_bytes) = (full.0, full.1.requests, full.1.body_bytes);
    rows.push(Row::new(
        versions,
        delay_ms,
        "clone of 2 refs, packed",
        full,
        Goal::None,
    ));
    let args = [
        "clone", "-q", "--bare", "--depth", "1", "--branch", "v1", url, "tip.git",
    ];
    let tip = run(server, &t, ".", &[&args]);
    let (requests, bytes) = (tip.1.requests, tip.1.body_bytes);
    let objects = size_of(&t.path("tip.git").join("objects"));
    let ok = requests <= 40 && bytes <= 1 << 20 && tip.0 <= 1.0 && objects <= 64 << 10;
    notes.push(format!(
        "{versions} versions at {delay_ms} ms: depth-1 clone of a tag {:.2} s, {requests} requests, {:.1} KiB read, .git/objects {:.1} KiB (goal <= 1.0 s, 40 requests, 1 MiB, 64 KiB: {}); the full packed clone {:.2} s, {} requests, {:.1} MiB read",
        tip.0,
        bytes as f64 / 1024.0,
        objects as f64 / 1024.0,
        if ok { "met" } else { "NOT MET" },
        full_wall,
        full_requests,
        full_bytes as f64 / 1048576.0,
    ));
    rows.push(Row::new(
        versions,
        delay_ms,
        "depth-1 clone of a tag",
        tip,
        Goal::Seconds(1.0),
    ));
}

/// `<versions>x<ms>,...` as pairs (an empty list: none).
fn main() {
    let runs = std::env::var("FDL_BENCH_LATENCY").unwrap_or_else(|_| "2000x0,2000x20".into());
    let mut rows = Vec::new();
    let server = s3lite::start();
    for (v, d) in pairs(&runs) {
        eprintln!("measuring {v} versions at {d} ms a request...");
        measure(&server, v, d, &mut rows);
    }
    for (v, d) in pairs(&std::env::var("FDL_BENCH_LARGE").unwrap_or_default()) {
        eprintln!("measuring a large lake: {v} versions at {d} ms a request...");
        measure_large(&server, v, d, &mut rows);
    }
    let mut notes = Vec::new();
    for (v, d) in pairs(&std::env::var("FDL_BENCH_PACKED").unwrap_or_default()) {
        eprintln!("measuring a packed lake: {v} versions at {d} ms a request...");
        measure_packed(&server, v, d, &mut rows, &mut notes);
    }
    for (v, d) in pairs(&std::env::var("FDL_BENCH_SHALLOW").unwrap_or_default()) {
        eprintln!("measuring a shallow clone of a packed lake: {v} versions at {d} ms...");
        measure_shallow(&server, v, d, &mut rows, &mut notes);
    }
    let peer = std::env::var("FDL_BENCH_PEER_DELAYS").unwrap_or_default();
    for d in peer.split(',').filter(|r| !r.is_empty()) {
        eprintln!("measuring git-remote-s3 beside a packed lake at {d} ms a request...");
        measure_peer(&server, d.trim().parse().unwrap(), &mut rows, &mut notes);
    }
    println!(
        "S3-compatible server on 127.0.0.1 with a fixed delay per request (t/support/s3lite.rs)"
    );
    println!(
        "wall: median of {RUNS} runs; round trips: wall / delay, and (in brackets) the time over"
    );
    println!("the same operation at 0 ms, / delay: without the helper's and Git's own work");
    println!(
        "{:>8} {:>6}  {:<26} {:>8} {:>9} {:>16} {:>11}  goal",
        "versions", "delay", "operation", "wall", "requests", "round trips", "concurrency"
    );
    for r in &rows {
        let at_zero = rows
            .iter()
            .find(|z| z.delay_ms == 0 && z.versions == r.versions && z.op == r.op)
            .map(|z| z.wall);
        let rt = match (r.delay_ms, at_zero) {
            (0, _) => "-".to_string(),
            (d, Some(z)) => format!(
                "{:.1} ({:.1})",
                r.wall * 1000.0 / d as f64,
                (r.wall - z).max(0.0) * 1000.0 / d as f64
            ),
            (d, None) => format!("{:.1}", r.wall * 1000.0 / d as f64),
        };
        let verdict = match r.met {
            Some(true) => "met",
            Some(false) => "NOT MET",
            None => "",
        };
        println!(
            "{:>8} {:>4}ms  {:<26} {:>7.2}s {:>9} {:>16} {:>11.1}  {} {}",
            r.versions,
            r.delay_ms,
            r.op,
            r.wall,
            r.counts.requests,
            rt,
            r.counts.busy.as_secs_f64() / r.wall,
            r.goal,
            verdict
        );
    }
    for n in &notes {
        println!("{n}");
    }
}
