//! `make bench`, the writers row (issue 47): N bare clones of one lake each push a tag of its
//! own (distinct names: no push need wait for another), all started at the same instant, on
//! SeaweedFS behind a proxy that holds every request 20 ms, as a store far away would; beside a
//! lone push on the same lake. For each row: the lone push's wall time and requests, the
//! pushes at once (median and slowest wall time, requests a push on average), the CPU of all
//! of them (git's and the helper's, from `getrusage(RUSAGE_CHILDREN)`) against N lone pushes',
//! and the floor: the longer of a lone push and the time this machine's cores need for N lone
//! pushes' CPU (N writers on 2 cores cannot beat it). Each goal of the issue is printed with
//! whether it is met. The last column is the SeaweedFS server's CPU during the pushes at once,
//! and the time the cores need for it and the pushes' together: the server runs on the same
//! cores here, as no store would in production.
//!
//! `FDL_BENCH_WRITERS=<tags>x<writers>,...` picks the rows (`make bench`: `100x32,5000x32,
//! 50000x8`); `FDL_BENCH_WRITERS_DELAY_MS` the proxy's delay (20); `FDL_BENCH_WRITERS_HELPER`
//! a folder holding another build of `git-remote-fdl` to measure instead (an older commit's);
//! `FDL_BENCH_WRITERS_TRACE` a folder where each push's `GIT_REMOTE_FDL_DEBUG` trace is kept,
//! to see the requests of each. Needs `SEAWEEDFS_WEED` (and
//! `MOTO_PYTHON`), as `make test` sets them: `make bench-writers` runs this row alone.

// The shared test support is one crate's private modules, `pub` to one another.
#![allow(unreachable_pub)]

// The tests' support, of which a benchmark uses a part.
#[allow(dead_code)]
#[path = "../t/support/mod.rs"]
mod support;

use std::process::Stdio;
use std::sync::atomic::Ordering::SeqCst;
use std::time::{Duration, Instant};

use support::{pairs, LakeBuilder, TestEnv, Where};

/// The CPU seconds of every child reaped so far (user and system).
fn children_cpu() -> f64 {
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage writes the struct it is given, nothing else.
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    secs(usage.ru_utime) + secs(usage.ru_stime)
}

/// The CPU seconds the SeaweedFS server of this process has used so far (user and system, from
/// `/proc/<pid>/stat`): on this machine it shares the cores with the pushes.
fn server_cpu() -> f64 {
    let ours = format!("fdl-seaweedfs-{}", std::process::id());
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    let mut total = 0.0;
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let path = entry.path();
        let cmdline = std::fs::read(path.join("cmdline")).unwrap_or_default();
        if !String::from_utf8_lossy(&cmdline).contains(&ours) {
            continue;
        }
        let stat = std::fs::read_to_string(path.join("stat")).unwrap_or_default();
        // The fields after the command's name, which may hold spaces: utime and stime are
        // the 14th and 15th of the line.
        let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
        let fields: Vec<&str> = after.split_whitespace().collect();
        let field = |i: usize| {
            fields
                .get(i)
                .and_then(|f| f.parse::<f64>().ok())
                .unwrap_or(0.0)
        };
        total += (field(11) + field(12)) / ticks;
    }
    total
}

fn cores() -> f64 {
    std::thread::available_parallelism().map_or(1, |n| n.get()) as f64
}

fn lake(tags: u64) -> LakeBuilder {
    let mut l = LakeBuilder::new();
    l.chain(1, 20);
    l.branch("main", 20);
    for k in 1..=tags {
        l.tag(&format!("t{k:06}"), 1 + k % 20);
    }
    l.refs_json();
    l
}

/// What one push or one set of pushes at once took.
struct Measured {
    walls: Vec<f64>,
    requests: usize,
    cpu: f64,
    /// The store server's CPU meanwhile.
    server: f64,
}

/// `git push` of `refs/tags/<prefix>-<i>` from each of `repos`, all started together.
fn push_at_once(
    t: &TestEnv,
    repos: &[String],
    tip: &str,
    prefix: &str,
    proxy: &support::faults::FaultProxy,
) -> Measured {
    let before = (
        proxy.counters.requests.load(SeqCst),
        children_cpu(),
        server_cpu(),
    );
    let start = Instant::now();
    let children: Vec<_> = repos
        .iter()
        .enumerate()
        .map(|(i, repo)| {
            let spec = format!("{tip}:refs/tags/{prefix}-{i}");
            t.command("git", repo, &["push", "-q", "origin", &spec])
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    // Each waited for on a thread of its own: its wall time is when it ended, not when the
    // loop came to it.
    let waiters: Vec<_> = children
        .into_iter()
        .map(|child| {
            std::thread::spawn(move || (child.wait_with_output().unwrap(), start.elapsed()))
        })
        .collect();
    let mut walls = Vec::new();
    for waiter in waiters {
        let (out, wall) = waiter.join().unwrap();
        walls.push(wall.as_secs_f64());
        let said = String::from_utf8_lossy(&out.stderr);
        if let Ok(dir) = std::env::var("FDL_BENCH_WRITERS_TRACE") {
            let file = format!("{dir}/{prefix}-{}.trace", walls.len());
            std::fs::write(file, out.stderr.as_slice()).unwrap();
        }
        assert!(out.status.success(), "a push failed: {said}");
        if said.contains("warning:") {
            eprintln!("{said}");
        }
    }
    Measured {
        walls,
        requests: proxy.counters.requests.load(SeqCst) - before.0,
        cpu: children_cpu() - before.1,
        server: server_cpu() - before.2,
    }
}

fn row(tags: u64, writers: usize, delay: Duration) {
    let mut t = TestEnv::new();
    // Another build of the helper, to compare (the folder holding its git-remote-fdl).
    if let Ok(dir) = std::env::var("FDL_BENCH_WRITERS_HELPER") {
        let path = t
            .command("sh", ".", &["-c", "echo $PATH"])
            .output()
            .unwrap();
        let path = format!("{dir}:{}", String::from_utf8_lossy(&path.stdout).trim());
        t.set("PATH", &path);
    }
    if std::env::var_os("FDL_BENCH_WRITERS_TRACE").is_some() {
        t.set("GIT_REMOTE_FDL_DEBUG", "1");
    }
    let at = t.lake_at(Where::SeaweedFs, &format!("w{tags}x{writers}"), &lake(tags));
    t.ok(".", &["clone", "-q", "--bare", &at.url, "r.git"]);
    let tip = t.ok("r.git", &["rev-parse", "main"]).trim().to_string();
    let proxy = support::faults::start_slow(&support::seaweedfs::seaweedfs().endpoint, delay);
    t.set("AWS_ENDPOINT_URL", &proxy.endpoint);
    // The store check, once (remembered for the user), and a listing that fills the cache.
    t.ok(
        "r.git",
        &["push", "-q", "origin", &format!("{tip}:refs/tags/first")],
    );
    t.ok("r.git", &["fetch", "-q", "origin"]);
    let repos: Vec<String> = (0..writers.max(3)).map(|i| format!("w{i}.git")).collect();
    for repo in &repos {
        support::copy_dir(&t.path("r.git"), &t.path(repo));
    }
    // A lone push, three times (each from a clone of its own): the median.
    let lone: Vec<Measured> = (0..3)
        .map(|i| push_at_once(&t, &repos[i..i + 1], &tip, &format!("lone{i}"), &proxy))
        .collect();
    let lone_wall = support::median(lone.iter().map(|m| m.walls[0]).collect());
    let lone_cpu = support::median(lone.iter().map(|m| m.cpu).collect());
    let lone_requests = lone[1].requests;
    for repo in &repos {
        // Each writer's clone knows the lone pushes' tags, as a pipeline's clone would.
        t.ok(repo, &["fetch", "-q", "origin"]);
    }
    let all = push_at_once(&t, &repos[..writers], &tip, "release", &proxy);
    let median = support::median(all.walls.clone());
    let slowest = all.walls.iter().cloned().fold(0.0, f64::max);
    let floor = lone_wall.max(writers as f64 * lone_cpu / cores());
    let per_push = all.requests as f64 / writers as f64;
    let cpu_ratio = all.cpu / (writers as f64 * lone_cpu);
    let refs = (tags + 1) as f64;
    // What the server's work adds: the cores' time for the pushes' CPU and the server's.
    let machine = (all.cpu + all.server) / cores();
    println!(
        "| {tags} | {writers} | {lone_wall:.2} s, {lone_requests} req, {lone_cpu:.2} s CPU | \
         {median:.2} s / {slowest:.2} s | {floor:.2} s | {:.2}x | {cpu_ratio:.2}x | {per_push:.1} | \
         {:.2} s, {machine:.2} s |",
        slowest / floor,
        all.server
    );
    let goal =
        |what: &str, met: bool| println!("  goal {what}: {}", if met { "met" } else { "MISSED" });
    if writers == 1 {
        return;
    }
    goal(
        &format!("slowest <= 1.5x the floor ({:.2} s)", 1.5 * floor),
        slowest <= 1.5 * floor,
    );
    if tags <= 5_000 {
        goal("all the pushes' CPU <= 1.2x lone pushes'", cpu_ratio <= 1.2);
        goal(
            &format!(
                "<= refs/1000 + 15 requests a push ({:.1})",
                refs / 1000.0 + 15.0
            ),
            per_push <= refs / 1000.0 + 15.0,
        );
    }
    goal(
        &format!(
            "a lone push <= refs/1000 + 10 requests ({:.1})",
            refs / 1000.0 + 10.0
        ),
        lone_requests as f64 <= refs / 1000.0 + 10.0,
    );
}

fn main() {
    let rows =
        pairs(&std::env::var("FDL_BENCH_WRITERS").unwrap_or("100x32,5000x32,50000x8".into()));
    let delay_ms: u64 = std::env::var("FDL_BENCH_WRITERS_DELAY_MS")
        .ok()
        .and_then(|d| d.parse().ok())
        .unwrap_or(20);
    let delay = Duration::from_millis(delay_ms);
    println!(
        "Writers at once on SeaweedFS, each request held {delay_ms} ms ({} cores)\n",
        cores()
    );
    println!("| tags | writers | a lone push | at once: median / slowest | floor | slowest / floor | CPU / lone pushes' | requests a push | server CPU, cores' time for all CPU |");
    println!("| --- | --- | --- | --- | --- | --- | --- | --- | --- |");
    for (tags, writers) in rows {
        row(tags, writers as usize, delay);
    }
}
