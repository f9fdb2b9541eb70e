//! Packs kept geometrically (issue 48, item 5): a packed lake that gains a few versions before
//! each run of `pack`, as a cron after every write leaves it. Whether the base pack stays in
//! the list through every run, the packs listed at the end, and the bytes the runs wrote
//! (each new pack with its record and claims) beside the packed size of the versions they
//! added. `FDL_BENCH_GEOMETRIC=<base>x<runs>x<versions a run>` (by hand: 300 runs take minutes).

use std::time::Instant;

use crate::support::s3lite::{self, S3Lite};
use crate::support::{LakeBuilder, TestEnv};

/// The lake's packs as `git-packs/list.json` names them.
fn listed(server: &S3Lite, bucket: &str) -> Vec<String> {
    let list = server
        .get(bucket, "lake/git-packs/list.json")
        .expect("a list");
    let list: serde_json::Value = serde_json::from_slice(&list).unwrap();
    let packs = list["packs"].as_array().unwrap().iter();
    packs.map(|p| p.as_str().unwrap().to_string()).collect()
}

/// The bytes of the files a run writes for pack `name`: the pack, its record and its claims.
fn written(server: &S3Lite, bucket: &str, name: &str) -> u64 {
    ["pack", "json", "claims"]
        .iter()
        .filter_map(|ext| server.get(bucket, &format!("lake/git-packs/{name}.{ext}")))
        .map(|b| b.len() as u64)
        .sum()
}

/// Versions `first..=last` on top of the lake, with `main` moved to the last and `refs.json`
/// as a writer leaves it: only the files these versions add, and the refs.
fn grown(first: u64, last: u64, tag_at: u64) -> LakeBuilder {
    let mut l = LakeBuilder::new();
    l.chain(first, last);
    l.branch("main", last).tag("v1", tag_at).refs_json();
    l
}

fn run(server: &S3Lite, base: u64, runs: u64, per_run: u64) {
    let bucket = format!("geometric-{base}-{runs}-{per_run}");
    let mut l = LakeBuilder::new();
    l.chain(1, base);
    l.branch("main", base).tag("v1", base / 2).refs_json();
    server.put_files(&bucket, "lake/", &l.files);
    drop(l);
    let t: TestEnv = server.test_env();
    let url = format!("fdl::s3://{bucket}/lake/");
    crate::support::run::pack(&t, &url);
    let first = listed(server, &bucket);
    let base_pack = first[0].clone();
    let base_bytes = written(server, &bucket, &base_pack);
    let mut seen: std::collections::HashSet<String> = first.into_iter().collect();
    let (mut uploaded, mut base_kept, mut most) = (0u64, true, 1);
    let start = Instant::now();
    for r in 0..runs {
        let first = base + r * per_run + 1;
        let last = first + per_run - 1;
        server.put_files(&bucket, "lake/", &grown(first, last, base / 2).files);
        crate::support::run::pack(&t, &url);
        let now = listed(server, &bucket);
        base_kept &= now.contains(&base_pack);
        most = most.max(now.len());
        for name in now.iter().filter(|n| !seen.contains(*n)) {
            uploaded += written(server, &bucket, name);
        }
        seen.extend(now);
    }
    let secs = start.elapsed().as_secs_f64();
    let packs_at_end = listed(server, &bucket).len();
    // The packed size of the versions the runs added: Git's own pack of their objects.
    let added = runs * per_run;
    t.ok(".", &["clone", "-q", "--bare", &url, "final.git"]);
    let script =
        format!("git rev-list --objects main ^main~{added} | git pack-objects -q --stdout | wc -c");
    let out = t
        .command("sh", "final.git", &["-c", &script])
        .output()
        .unwrap();
    let packed_new: u64 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
    let mib = |b: u64| b as f64 / (1 << 20) as f64;
    println!(
        "\n{runs} runs of pack, each after {per_run} new versions, on a packed lake of {base} (s3lite, 0 ms)"
    );
    println!(
        "  runs took                    {secs:>9.1} s ({:.2} s a run)",
        secs / runs as f64
    );
    println!(
        "  base pack ({:.1} MiB) kept       {}",
        mib(base_bytes),
        match base_kept {
            true => "in every run (goal: never rewritten): met",
            false => "NOT in every run (goal: never rewritten): MISSED",
        }
    );
    println!("  packs listed                 {packs_at_end} at the end, {most} at most");
    let ratio = uploaded as f64 / packed_new.max(1) as f64;
    println!(
        "  written by the runs          {:>9.2} MiB, {ratio:.1}x the {added} new versions packed by Git ({:.2} MiB; goal <= 20x): {}",
        mib(uploaded),
        mib(packed_new),
        if ratio <= 20.0 { "met" } else { "MISSED" }
    );
    println!();
}

/// The runs `FDL_BENCH_GEOMETRIC` asks for, on one server.
pub fn rows() {
    let asked = std::env::var("FDL_BENCH_GEOMETRIC").unwrap_or_default();
    let server = match asked.is_empty() {
        true => return,
        false => s3lite::start(),
    };
    for spec in asked.split(',') {
        let n: Vec<u64> = spec
            .split('x')
            .filter_map(|v| v.trim().parse().ok())
            .collect();
        if let [base, runs, per_run] = n[..] {
            run(&server, base, runs, per_run);
        }
    }
}
