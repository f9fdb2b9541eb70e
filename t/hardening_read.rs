//! Hardening of the read side (issue 7): a store that cannot list never shows "no refs" for
//! "refs unknown", refs passed over are named, and memory stays under a fixed budget whatever
//! the lake holds.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::Path;

use crate::support::http::serve;
use crate::support::{vid, LakeBuilder, TestEnv};

fn lake() -> LakeBuilder {
    let mut l = LakeBuilder::new();
    l.chain(1, 4);
    l.branch("main", 4).branch("dev", 2).tag("v1", 1);
    l.refs_json();
    l
}

/// Serves `root` like the plain HTTP server, except that `refs.json` answers 500 with a body.
fn serve_refs_json_broken(root: &Path) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let root = root.to_path_buf();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let root = root.clone();
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut out = stream;
                loop {
                    let mut request = String::new();
                    if reader.read_line(&mut request).unwrap_or(0) == 0 {
                        return;
                    }
                    loop {
                        let mut h = String::new();
                        if reader.read_line(&mut h).unwrap_or(0) == 0 || h == "\r\n" {
                            break;
                        }
                    }
                    let path = request.split_whitespace().nth(1).unwrap_or("/").to_string();
                    let file = root.join(path.trim_start_matches('/'));
                    let reply = if path.ends_with("refs.json") {
                        let body = "internal error";
                        format!("HTTP/1.1 500 Internal Server Error\r\nContent-Length: {}\r\n\r\n{body}", body.len()).into_bytes()
                    } else if let Ok(body) = std::fs::read(&file) {
                        let mut r =
                            format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n", body.len())
                                .into_bytes();
                        r.extend_from_slice(&body);
                        r
                    } else {
                        b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n".to_vec()
                    };
                    if out.write_all(&reply).is_err() {
                        return;
                    }
                }
            });
        }
    });
    format!("fdl::http://127.0.0.1:{port}/")
}

#[test]
fn http_lake_without_refs_json_is_fatal_and_prune_keeps_branches() {
    let t = TestEnv::new();
    let l = lake();
    t.local_lake("lake", &l);
    let server = serve(&t.path("lake"));
    let url = format!("fdl::{}", server.url);
    t.ok(".", &["clone", "-q", &url, "work"]);
    let before = t.ok("work", &["branch", "-r"]);
    assert!(before.contains("origin/dev"), "{before}");
    std::fs::remove_file(t.path("lake/refs.json")).unwrap();
    let err = t.fails("work", &["fetch", "--prune", "origin"]);
    assert!(
        err.contains("fatal: lake 'http://127.0.0.1:")
            && err.contains("has no refs.json, and this store cannot list refs/"),
        "{err}"
    );
    assert!(err.contains("hint: "), "{err}");
    assert_eq!(t.ok("work", &["branch", "-r"]), before);
    let out = t.git(".", &["ls-remote", &url]);
    assert!(!out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stdout), "");
}

#[test]
fn http_lake_with_unreadable_refs_json_is_fatal() {
    let t = TestEnv::new();
    t.local_lake("lake", &lake());
    let url = serve_refs_json_broken(&t.path("lake"));
    let err = t.fails(".", &["ls-remote", &url]);
    assert!(
        err.contains("refs.json: cannot be read") && err.contains("500"),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn refs_json_naming_one_ref_twice_is_an_error() {
    let t = TestEnv::new();
    let mut l = lake();
    l.put(
        "refs.json",
        format!(
            "{{\"refs/heads/main\": \"{}\",\n \"refs/heads/main\": \"{}\"}}\n",
            vid(4),
            vid(3)
        ),
    );
    t.local_lake("lake", &l);
    let server = serve(&t.path("lake"));
    let err = t.fails(".", &["ls-remote", &format!("fdl::{}", server.url)]);
    assert!(
        err.contains("refs.json names refs/heads/main twice, with different versions"),
        "{err}"
    );
}

#[test]
fn refs_dropped_from_a_folder_listing_are_named() {
    use std::os::unix::ffi::OsStrExt;
    let t = TestEnv::new();
    let mut l = lake();
    l.put("elsewhere/refs/x", format!("{}\n", vid(3)));
    let url = t.local_lake("lake", &l);
    let heads = t.path("lake/refs/heads");
    let outside = t.path("outside-ref");
    std::fs::write(&outside, format!("{}\n", vid(2))).unwrap();
    let fifo = heads.join("fifo");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    std::os::unix::fs::symlink(&outside, heads.join("leaks")).unwrap();
    std::fs::write(
        heads.join(std::ffi::OsStr::from_bytes(b"caf\xe9")),
        format!("{}\n", vid(1)),
    )
    .unwrap();
    std::os::unix::fs::symlink(t.path("lake/elsewhere/refs"), heads.join("team")).unwrap();
    let out = t.git(".", &["ls-remote", &url]);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stderr}");
    assert!(stdout.contains("refs/heads/main"), "{stdout}");
    for (name, why) in [
        ("refs/heads/fifo", "not a regular file"),
        ("refs/heads/leaks", "leads outside the lake's root"),
        ("refs/heads/caf", "not UTF-8"),
        ("refs/heads/team/", "a symlink to a folder"),
    ] {
        assert!(
            stderr
                .lines()
                .any(|l| l.starts_with("warning: ") && l.contains(name) && l.contains(why)),
            "no warning for {name}:\n{stderr}"
        );
    }
}

/// Runs `git` and returns whether it succeeded, the helper's peak resident memory (KiB, as
/// the helper reads it from /proc at exit: a process forked from this large test binary would
/// count the binary's pages), and git's stderr.
pub(crate) fn helper_peak_rss(t: &TestEnv, cwd: &str, args: &[&str]) -> (bool, u64, String) {
    peak_rss_of(t, "git", cwd, args)
}

/// As [`helper_peak_rss`], for any program that runs the helper (the helper itself included).
pub(crate) fn peak_rss_of(
    t: &TestEnv,
    program: &str,
    cwd: &str,
    args: &[&str],
) -> (bool, u64, String) {
    let file = t.path(&format!("peak-{}", args[0]));
    let _ = std::fs::remove_file(&file);
    let out = t
        .command(program, cwd, args)
        .env("GIT_REMOTE_FDL_TEST_PEAK_FILE", &file)
        .output()
        .unwrap();
    let peaks = std::fs::read_to_string(&file).unwrap_or_default();
    let peak = peaks.lines().filter_map(|l| l.parse::<u64>().ok()).max();
    let peak = peak.expect("the helper recorded its peak memory");
    (
        out.status.success(),
        peak,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
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
    const MIB: usize = 1 << 20;
    // 12 versions with a 60 MiB dataset.json each, and 8 versions no ref reaches with a 15 MiB
    // version.json each: before, ls-remote held every file read (over 800 MiB). The tip's
    // message is 4 MiB: its commit is made from bytes kept on disk meanwhile.
    let t = TestEnv::new();
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

/// A JSON array of zeros about `bytes` long: what a writer's unknown field may hold, and, with
/// serde_json's `arbitrary_precision`, about 130 bytes a `0` once parsed into a tree.
pub(crate) fn zeros(bytes: usize) -> String {
    let mut out = String::with_capacity(bytes + 2);
    out.push('[');
    while out.len() + 2 < bytes {
        out.push_str("0,");
    }
    out.push_str("0]");
    out
}

/// What the manual promises: file contents in flight under 128 MiB, whatever the lake holds.
pub(crate) const BUDGET_KIB: u64 = 128 << 10;

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
