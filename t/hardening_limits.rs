//! Hardening, third round (issue 24, items 9 to 13): throttling told by the store's answer
//! only, the open-file limit, fsck's memory and the digests and `HEAD` it cannot check, and a
//! writer killed while breaking a stale lock.

use std::io::{BufReader, Write};
use std::net::TcpListener;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::support::{faults, vid, wire, LakeAt, LakeBuilder, TestEnv, Where};

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// main: 1..5, tag v1: 2.
fn lake() -> LakeBuilder {
    let mut l = LakeBuilder::new();
    l.chain(1, 5);
    l.branch("main", 5).tag("v1", 2);
    l.refs_json();
    l
}

fn helper(t: &TestEnv, args: &[&str]) -> std::process::Output {
    t.command(env!("CARGO_BIN_EXE_git-remote-fdl"), ".", args)
        .output()
        .unwrap()
}

// ---- 9. Throttling is told by the answer, not by digits in the URL ------------------------

/// A version whose ID holds "503" where the old check looked for it in the whole message.
const DIGITS_ID: &str = "50300000-0000-7000-8000-000000000001";

#[test]
fn a_403_on_a_version_whose_id_starts_503_is_one_request() {
    let mut t = TestEnv::new();
    let mut l = LakeBuilder::new();
    l.record(
        DIGITS_ID,
        serde_json::to_vec(&json!({"parents": [], "message": "m"})).unwrap(),
    );
    l.set_ref("refs/heads/main", DIGITS_ID).refs_json();
    let lake = t.lake_at(Where::S3, "lake", &l);
    let proxy = faults::start_denying(&s3_endpoint(&t), &format!("versions/{DIGITS_ID}/"));
    t.set("AWS_ENDPOINT_URL", &proxy.endpoint);
    let start = Instant::now();
    let out = t.git(".", &["ls-remote", &lake.url]);
    let err = text(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("access denied (403"), "{err}");
    let denied = proxy.counters.denied.load(Ordering::SeqCst);
    assert_eq!(denied, 1, "tried {denied} times: {err}");
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "{:?}",
        start.elapsed()
    );
}

/// The endpoint of the S3 server a lake was put on.
fn s3_endpoint(t: &TestEnv) -> String {
    t.env
        .iter()
        .find(|(k, _)| k == "AWS_ENDPOINT_URL")
        .map(|(_, v)| v.clone())
        .expect("the S3 lake's endpoint")
}

/// A free port on 127.0.0.1 whose number holds 503 or 429, bound (or `None` if all are taken).
fn port_with_throttling_digits() -> Option<TcpListener> {
    [
        15030, 25030, 35030, 45030, 15031, 14290, 24290, 34290, 50300, 42900,
    ]
    .iter()
    .find_map(|p| TcpListener::bind(("127.0.0.1", *p)).ok())
}

/// An S3 endpoint that answers every request 403 AccessDenied; counts them.
fn serve_403(listener: TcpListener) -> Arc<AtomicUsize> {
    let count = Arc::new(AtomicUsize::new(0));
    let c = count.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let c = c.clone();
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut out = stream;
                while let Ok(Some(_)) = wire::read_request(&mut reader) {
                    c.fetch_add(1, Ordering::SeqCst);
                    let body = "<Error><Code>AccessDenied</Code></Error>";
                    let head = format!(
                        "HTTP/1.1 403 Forbidden\r\nContent-Length: {}\r\n\r\n",
                        body.len()
                    );
                    if out.write_all(head.as_bytes()).is_err()
                        || out.write_all(body.as_bytes()).is_err()
                    {
                        return;
                    }
                }
            });
        }
    });
    count
}

fn s3_env_at(t: &mut TestEnv, endpoint: &str) {
    t.set("AWS_ENDPOINT_URL", endpoint)
        .set("AWS_ALLOW_HTTP", "true")
        .set("AWS_ACCESS_KEY_ID", "test")
        .set("AWS_SECRET_ACCESS_KEY", "test")
        .set("AWS_REGION", "us-east-1");
}

#[test]
fn an_endpoint_on_a_port_holding_503_that_answers_403_is_not_retried() {
    let mut t = TestEnv::new();
    let listener = port_with_throttling_digits().expect("a free port holding 503 or 429");
    let port = listener.local_addr().unwrap().port();
    let count = serve_403(listener);
    s3_env_at(&mut t, &format!("http://127.0.0.1:{port}"));
    let start = Instant::now();
    let out = t.git(".", &["ls-remote", "fdl::s3://bucket/lake"]);
    let err = text(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("access denied (403"), "{err}");
    let n = count.load(Ordering::SeqCst);
    // Each file read when the lake is opened, once (31 requests when 403s were retried).
    assert!(n <= 10, "{n} requests: {err}");
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "{:?}",
        start.elapsed()
    );
}

#[test]
fn nothing_listening_on_a_port_holding_503_fails_in_seconds() {
    let mut t = TestEnv::new();
    let listener = port_with_throttling_digits().expect("a free port holding 503 or 429");
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    s3_env_at(&mut t, &format!("http://127.0.0.1:{port}"));
    let start = Instant::now();
    let out = t.git(".", &["ls-remote", "fdl::s3://bucket/lake"]);
    let err = text(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("cannot connect"), "{err}");
    // The HTTP client's own retries take about 1.5 s; the old check added 8 more rounds.
    assert!(
        start.elapsed() < Duration::from_secs(6),
        "{:?}: {err}",
        start.elapsed()
    );
}

// ---- 10. The open-file limit ----------------------------------------------------------------

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

// ---- 11. fsck within the memory budget ------------------------------------------------------

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

// ---- 12. What fsck cannot check is a problem ------------------------------------------------

#[test]
fn fsck_catalogs_reports_digests_that_are_not_digests() {
    let t = TestEnv::new();
    let mut l = LakeBuilder::new();
    l.chain(1, 7);
    l.branch("main", 7);
    l.refs_json();
    let hex = "a".repeat(64);
    let bad = [
        json!(5),
        json!("abc"),
        json!(format!("sha256:{hex}")),
        json!("a".repeat(63)),
        json!(format!("{}g", "a".repeat(63))),
    ];
    for (i, sha) in bad.iter().enumerate() {
        let n = i as u64 + 2;
        let record = json!({"parents": [vid(n - 1)], "message": "m", "sha256": sha});
        l.record(&vid(n), serde_json::to_vec(&record).unwrap());
    }
    let url = t.local_lake("lake", &l);
    // Version 7's digest in upper case is the same digest: accepted (a tolerant reader).
    let catalog = std::fs::read(t.path(&format!("lake/versions/{}/ducklake.duckdb", vid(7))));
    let sha = crate::support::lake::hex(&<sha2::Sha256 as sha2::Digest>::digest(catalog.unwrap()));
    let upper = json!({"parents": [vid(6)], "message": "m", "sha256": sha.to_uppercase()});
    let record = t.path(&format!("lake/versions/{}/version.json", vid(7)));
    std::fs::write(record, serde_json::to_vec(&upper).unwrap()).unwrap();
    let out = helper(&t, &["fsck", "--catalogs", &url]);
    let (stdout, err) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(1), "{stdout}{err}");
    let problems: Vec<&str> = stdout.lines().collect();
    assert_eq!(problems.len(), 5, "{stdout}");
    for n in 2..=6 {
        assert!(
            stdout.contains(&format!("version {}: version.json's sha256", vid(n))),
            "{stdout}"
        );
    }
    assert!(stdout.contains("'sha256:aaaa"), "{stdout}");
    assert!(!stdout.contains(&vid(7)), "{stdout}");
}

#[test]
fn fsck_reports_a_head_naming_a_tag_or_garbage_and_goes_on() {
    for head in ["ref: refs/tags/v1\n", "\x01garbage\n"] {
        let t = TestEnv::new();
        let mut l = lake();
        l.put("HEAD", head);
        l.record(&vid(3), b"{not json".to_vec());
        let url = t.local_lake("lake", &l);
        let out = helper(&t, &["fsck", &url]);
        let (stdout, err) = (text(&out.stdout), text(&out.stderr));
        assert_eq!(out.status.code(), Some(1), "{head:?}: {stdout}{err}");
        assert!(stdout.contains("HEAD"), "{head:?}: {stdout}");
        assert!(stdout.contains(&vid(3)), "{head:?}: {stdout}");
        assert!(!stdout.contains('\x01'), "{stdout}");
    }
}

// ---- 13. A writer killed while breaking a stale lock --------------------------------------

fn dead_writer() -> String {
    let mut child = Command::new("true").spawn().unwrap();
    let pid = child.id();
    child.wait().unwrap();
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    format!("pid {pid} on {} since {now}\n", host.trim())
}

#[test]
fn a_lock_and_its_break_file_left_by_dead_writers_are_recovered() {
    let t = TestEnv::new();
    let url = t.local_lake("lake", &lake());
    t.ok(".", &["clone", "-q", &url, "work"]);
    let lake = LakeAt {
        url: url.clone(),
        place: Where::Local,
        dir: t.path("lake"),
        bucket: String::new(),
        prefix: String::new(),
    };
    for (dir, lock) in [("lake/refs/heads", "main.lock"), ("lake", "refs.json.lock")] {
        std::fs::write(t.path(&format!("{dir}/{lock}")), dead_writer()).unwrap();
        std::fs::write(t.path(&format!("{dir}/.{lock}.break")), dead_writer()).unwrap();
    }
    // A tag push rewrites refs.json under its lock: at once, and refs.json is not left stale.
    let start = Instant::now();
    let out = t.git("work", &["push", "origin", "origin/main:refs/tags/after"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let waited = start.elapsed();
    assert!(waited < Duration::from_secs(5), "{waited:?}");
    assert!(lake.refs_json().contains_key("refs/tags/after"));
    let start = Instant::now();
    let out = t.git(
        "work",
        &["push", "-f", "origin", "origin/main~1:refs/heads/main"],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let waited = start.elapsed();
    assert!(waited < Duration::from_secs(5), "{waited:?}");
    assert_eq!(lake.read("refs/heads/main").unwrap().trim(), vid(4));
    assert_eq!(lake.refs_json(), lake.ref_files());
    for left in [
        "lake/refs/heads/main.lock",
        "lake/refs/heads/.main.lock.break",
        "lake/refs.json.lock",
        "lake/.refs.json.lock.break",
    ] {
        assert!(!t.path(left).exists(), "{left} is left");
    }
}
