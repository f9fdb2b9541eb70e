//! Resources whatever the lake holds: the open-file limit, and peak memory under a fixed budget
//! for clones, fetches, pushes and fsck of large or many versions.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::json;

use crate::support::memory::{helper_peak_rss, zeros, BUDGET_KIB};
use crate::support::moto::s3_endpoint;
use crate::support::{faults, text, vid, LakeBuilder, TestEnv, Where};

/// A clone of 300 versions from a store 100 ms away: the default 256 requests in flight
/// would need more files than a limit of 64 gives (`cannot connect ... Too many open files`).
#[test]
fn a_clone_of_300_versions_100_ms_away_fits_an_open_file_limit_of_64() {
    let mut t = TestEnv::new();
    let mut l = LakeBuilder::new();
    l.chain(1, 300);
    l.branch("main", 300);
    l.refs_json();
    let lake = t.lake_at(Where::S3, "lake", &l);
    let proxy = faults::start_slow(&s3_endpoint(&t), Duration::from_millis(100));
    t.set("AWS_ENDPOINT_URL", &proxy.endpoint);
    // The soft limit alone (raised to the hard one), then both (requests fitted to it).
    for (limit, name) in [("-Sn", "soft"), ("-n", "both")] {
        let script = format!("ulimit {limit} 64 && git clone -q '{}' {name}", lake.url);
        let out = t.command("bash", ".", &["-c", &script]).output().unwrap();
        assert!(
            out.status.success(),
            "ulimit {limit} 64: {}",
            text(&out.stderr)
        );
        let count = t.ok(name, &["rev-list", "--count", "HEAD"]);
        assert_eq!(count.trim(), "300");
    }
}

/// Runs a command of the helper and returns its status, its stderr and its peak resident
/// memory in KiB, as the helper reads it from /proc at exit (`GIT_REMOTE_FDL_TEST_PEAK_FILE`):
/// `wait4` would count the pages of this large test binary, which a spawned child shares until
/// it execs, as the child's own.
fn with_peak_memory(t: &TestEnv, mut cmd: Command) -> (std::process::ExitStatus, String, i64) {
    let file = t.path("peak-fsck");
    let _ = std::fs::remove_file(&file);
    let out = cmd
        .env("GIT_REMOTE_FDL_TEST_PEAK_FILE", &file)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    let peaks = std::fs::read_to_string(&file).unwrap_or_default();
    let peak = peaks.lines().filter_map(|l| l.parse::<i64>().ok()).max();
    (
        out.status,
        String::from_utf8_lossy(&out.stderr).into_owned(),
        peak.expect("the helper recorded its peak memory"),
    )
}

#[test]
fn fsck_of_40_versions_of_15_mib_records_stays_within_the_memory_budget() {
    let t = TestEnv::new();
    let mut l = LakeBuilder::new();
    for n in 1..=40 {
        l.branch(&format!("b{n}"), n);
        l.put(&format!("versions/{}/dataset.json", vid(n)), "{}");
    }
    l.branch("main", 1).refs_json();
    t.local_lake("lake", &l);
    // One record of 15 MiB, which every version's version.json is a link to.
    let big = json!({"parents": [], "message": "x".repeat(15 << 20)});
    std::fs::write(t.path("lake/big.json"), serde_json::to_vec(&big).unwrap()).unwrap();
    for n in 1..=40 {
        let record = t.path(&format!("lake/versions/{}/version.json", vid(n)));
        let _ = std::fs::remove_file(&record);
        std::os::unix::fs::symlink("../../big.json", &record).unwrap();
    }
    let url = t.path("lake").display().to_string();
    let cmd = t.command(env!("CARGO_BIN_EXE_git-remote-fdl"), ".", &["fsck", &url]);
    let (status, err, peak_kib) = with_peak_memory(&t, cmd);
    assert!(status.success(), "{err}");
    assert!(err.contains("40 versions: 0 problems"), "{err}");
    // 40 records of 15 MiB are 600 MiB; the store's budget is 128 MiB of files in flight.
    assert!(
        peak_kib < 320 << 10,
        "fsck peaked at {} MiB",
        peak_kib >> 10
    );
}

/// Replaces `files` of a written lake with hard links to one file of `size` bytes of JSON, so
/// that a test lake holds gigabytes of reads on a few megabytes of disk.
fn link_big_file(dir: &Path, files: &[String], make: impl Fn(usize) -> Vec<u8>, size: usize) {
    let big = dir.join("big-file");
    std::fs::write(&big, make(size)).unwrap();
    for f in files {
        let p = dir.join(f);
        let _ = std::fs::remove_file(&p);
        std::fs::hard_link(&big, &p).unwrap();
    }
    std::fs::remove_file(&big).unwrap();
}

#[test]
fn memory_stays_under_a_fixed_ceiling_whatever_the_lake_holds() {
    stays_under_a_fixed_ceiling(TestEnv::new());
}

/// The same, each file read on a blocking thread, as a folder's files are read while they
/// wait on the disk (files larger than the budget has room for wait for it, then are read).
#[test]
fn memory_stays_under_a_fixed_ceiling_when_a_folder_is_read_on_threads() {
    let mut t = TestEnv::new();
    let on_threads = "GIT_REMOTE_FDL_TEST_FOLDER_READS_ON_THREADS";
    t.env.push((on_threads.into(), "1".into()));
    stays_under_a_fixed_ceiling(t);
}

fn stays_under_a_fixed_ceiling(t: TestEnv) {
    const MIB: usize = 1 << 20;
    // 12 versions with a 60 MiB dataset.json each, and 8 versions no ref reaches with a 15 MiB
    // version.json each: before, ls-remote held every file read (over 800 MiB). The tip's
    // message is 4 MiB: its commit is made from bytes kept on disk meanwhile.
    let mut l = LakeBuilder::new();
    l.chain(1, 11);
    l.version(12, &[11], &"a long message\n".repeat(4 * MIB / 15));
    for n in 100..108 {
        l.version(n, &[1], "unreachable");
    }
    l.branch("main", 12);
    let url = t.local_lake("lake", &l);
    let dir = t.path("lake");
    let datasets: Vec<String> = (1..=12)
        .map(|n| format!("versions/{}/dataset.json", vid(n)))
        .collect();
    link_big_file(
        &dir,
        &datasets,
        |size| {
            let row = b"{\"schema\": \"main\", \"table\": \"sales\", \"rows\": 1234567},\n";
            let mut out = b"{\"tables\": [\n".to_vec();
            while out.len() + row.len() + 20 < size {
                out.extend_from_slice(row);
            }
            out.extend_from_slice(b"{}]}\n");
            out
        },
        60 * MIB,
    );
    let records: Vec<String> = (100..108)
        .map(|n| format!("versions/{}/version.json", vid(n)))
        .collect();
    link_big_file(
        &dir,
        &records,
        |size| {
            let filler = "x".repeat(size - 200);
            format!(
                "{{\"parents\": [\"{}\"], \"author\": \"A <a@x>\", \"message\": \"{filler}\"}}",
                vid(1)
            )
            .into_bytes()
        },
        15 * MIB,
    );
    const CEILING_KIB: u64 = 320 << 10;
    let (ok, ls_peak, err) = helper_peak_rss(&t, ".", &["ls-remote", &url]);
    assert!(ok, "{err}");
    let (ok, clone_peak, err) = helper_peak_rss(&t, ".", &["clone", "--bare", "-q", &url, "c.git"]);
    assert!(ok, "{err}");
    eprintln!("peak RSS: ls-remote {ls_peak} KiB, clone {clone_peak} KiB");
    assert!(ls_peak < CEILING_KIB, "ls-remote peaked at {ls_peak} KiB");
    assert!(clone_peak < CEILING_KIB, "clone peaked at {clone_peak} KiB");
    assert_eq!(t.ok("c.git", &["rev-list", "--count", "main"]), "12\n");
    let message = t.ok("c.git", &["log", "-1", "--format=%B", "main"]);
    assert!(message.len() > 4_000_000 && message.starts_with("a long message\n"));
    t.ok("c.git", &["fsck", "--no-dangling"]);
}

#[test]
fn a_clone_of_twenty_thousand_versions_stays_under_a_fixed_peak() {
    // What the helper keeps per version is a few IDs; the files go through the budget and into
    // the pack. Before, every object of the clone was held until the pack was written.
    let t = TestEnv::new();
    let mut l = LakeBuilder::new();
    l.chain(1, 20_000);
    l.branch("main", 20_000);
    let url = t.local_lake("lake", &l);
    let (ok, peak, err) = helper_peak_rss(&t, ".", &["clone", "--bare", "-q", &url, "c.git"]);
    assert!(ok, "{err}");
    eprintln!("peak RSS, clone of 20,000 versions: {peak} KiB");
    // Before: 86 MiB (release build), growing by 4 KiB a version.
    assert!(peak < 80 << 10, "clone peaked at {peak} KiB");
    assert_eq!(t.ok("c.git", &["rev-list", "--count", "main"]), "20000\n");
}

#[test]
fn a_version_json_with_a_huge_unknown_field_costs_a_skip_not_a_tree() {
    // Issue 30: a 15 MiB version.json (under its 16 MiB limit) whose unknown field is an array
    // of zeros made a folder clone peak at 804 MiB: the record was parsed whole into a tree.
    const MIB: usize = 1 << 20;
    let t = TestEnv::new();
    let mut l = LakeBuilder::new();
    l.chain(1, 3);
    l.branch("main", 3);
    let path = format!("versions/{}/version.json", vid(3));
    let record = format!(
        "{{\"parents\": [\"{}\"], \"author\": \"A <a@x>\", \"message\": \"big\", \
         \"created_at\": \"2026-01-01T00:00:03Z\", \"writer_stats\": {}}}",
        vid(2),
        zeros(15 * MIB)
    );
    l.put(&path, record.clone());
    let url = t.local_lake("lake", &l);
    let (ok, peak, err) = helper_peak_rss(&t, ".", &["clone", "--bare", "-q", &url, "c.git"]);
    assert!(ok, "{err}");
    eprintln!("peak RSS, clone with a 15 MiB unknown field in version.json: {peak} KiB");
    assert!(peak < BUDGET_KIB, "clone peaked at {peak} KiB");
    // The record is the commit's version.json, byte for byte.
    let blob = t.ok("c.git", &["cat-file", "blob", "main:version.json"]);
    assert_eq!(blob.len(), record.len());
    assert_eq!(
        t.ok("c.git", &["log", "-1", "--format=%s", "main"]),
        "big\n"
    );
}

#[test]
fn a_push_onto_a_refs_json_with_a_huge_unknown_field_keeps_it_within_the_budget() {
    // Issue 30: a push to a lake whose refs.json carries a 16 MiB unknown field peaked at
    // 918 MiB; the field must survive the push, as a host's entries do.
    const MIB: usize = 1 << 20;
    let t = TestEnv::new();
    let mut l = LakeBuilder::new();
    l.chain(1, 3);
    l.branch("main", 3);
    let field = zeros(16 * MIB);
    let refs = format!(
        "{{\"refs/heads/main\": \"{}\", \"host_stats\": {field}}}\n",
        vid(3)
    );
    l.put("refs.json", refs);
    let url = t.local_lake("lake", &l);
    t.ok(".", &["clone", "-q", &url, "w"]);
    let (ok, peak, err) =
        helper_peak_rss(&t, "w", &["push", "-q", "origin", "main:refs/heads/side"]);
    assert!(ok, "{err}");
    eprintln!("peak RSS, push onto a refs.json with a 16 MiB unknown field: {peak} KiB");
    assert!(peak < BUDGET_KIB, "push peaked at {peak} KiB");
    let after = std::fs::read_to_string(t.path("lake/refs.json")).unwrap();
    let after: serde_json::Value = serde_json::from_str(&after).unwrap();
    assert_eq!(after["refs/heads/side"], vid(3).as_str());
    assert_eq!(after["refs/heads/main"], vid(3).as_str());
    let kept = after["host_stats"]
        .as_array()
        .expect("the host's field kept");
    assert_eq!(kept.len(), field.len() / 2);
}
