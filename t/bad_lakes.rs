//! Broken and hostile lakes: each gets a one-line `fatal:` naming the lake and the ref or
//! version at fault, a non-zero exit, no panic, no hang, no read outside the root, and a failed
//! fetch that updates no ref.

use std::net::TcpListener;
use std::time::{Duration, Instant};

use crate::support::http::serve;
use crate::support::{vid, LakeBuilder, TestEnv};

fn base() -> LakeBuilder {
    let mut l = LakeBuilder::new();
    l.chain(1, 3);
    l.branch("main", 3);
    l
}

/// Runs `git ls-remote` on the lake and returns stderr, insisting on failure without a panic.
fn ls_remote_fails(l: &LakeBuilder) -> String {
    let t = TestEnv::new();
    let url = t.local_lake("lake", l);
    let err = t.fails(".", &["ls-remote", &url]);
    assert!(!err.contains("panicked"), "{err}");
    assert!(
        err.lines().next().unwrap_or("").starts_with("fatal: "),
        "{err}"
    );
    err
}

#[test]
fn no_fdl_json() {
    let mut l = base();
    l.remove("fdl.json");
    let err = ls_remote_fails(&l);
    assert!(
        err.contains("is not an FDL lake: it has no fdl.json"),
        "{err}"
    );
    assert!(err.contains("hint: "), "{err}");
}

#[test]
fn unknown_major_version_is_refused() {
    let mut l = base();
    l.put("fdl.json", r#"{"fdl": "2.0", "id": "x"}"#);
    let err = ls_remote_fails(&l);
    assert!(
        err.contains("fdl.json says FDL 2.0, whose major version 2 this helper does not know"),
        "{err}"
    );
}

#[test]
fn invalid_fdl_json() {
    let mut l = base();
    l.put("fdl.json", "{not json");
    assert!(ls_remote_fails(&l).contains("fdl.json is not valid JSON"));
}

#[test]
fn cycle_in_parents() {
    let mut l = LakeBuilder::new();
    l.version(1, &[3], "a");
    l.version(2, &[1], "b");
    l.version(3, &[2], "c");
    l.branch("main", 3);
    let err = ls_remote_fails(&l);
    assert!(err.contains("lead back to itself (a cycle)"), "{err}");
}

#[test]
fn version_that_is_its_own_parent() {
    let mut l = LakeBuilder::new();
    l.version(1, &[1], "me");
    l.branch("main", 1);
    assert!(ls_remote_fails(&l).contains(&format!("version {}", vid(1))));
}

#[test]
fn missing_parent() {
    let mut l = base();
    l.version(4, &[99], "orphan");
    l.branch("main", 4);
    let err = ls_remote_fails(&l);
    assert!(
        err.contains(&format!(
            "version {}, named by version {}, does not exist",
            vid(99),
            vid(4)
        )),
        "{err}"
    );
}

#[test]
fn ref_to_a_missing_version() {
    let mut l = base();
    l.branch("ghost", 42);
    let err = ls_remote_fails(&l);
    assert!(
        err.contains(&format!(
            "version {}, named by ref refs/heads/ghost, does not exist",
            vid(42)
        )),
        "{err}"
    );
}

#[test]
fn invalid_version_json() {
    let mut l = base();
    l.record(&vid(2), b"{\"parents\": [".to_vec());
    let err = ls_remote_fails(&l);
    assert!(
        err.contains(&format!(
            "version {}: version.json is not valid JSON",
            vid(2)
        )),
        "{err}"
    );
}

#[test]
fn parents_that_try_to_escape() {
    for bad in [
        "../../../etc",
        "/etc/passwd",
        "..",
        "0190f3a2-7b4c-7d2e-8f10-12345678/abc",
    ] {
        let mut l = base();
        l.record(
            &vid(3),
            format!(r#"{{"parents": ["{bad}"], "message": "x"}}"#).into_bytes(),
        );
        let err = ls_remote_fails(&l);
        assert!(err.contains("is not a version ID"), "{bad}: {err}");
    }
}

#[test]
fn huge_version_json_is_not_read() {
    let mut l = base();
    let mut big = b"{\"message\": \"".to_vec();
    big.resize(17 << 20, b'a');
    big.extend_from_slice(b"\"}");
    l.record(&vid(3), big);
    let err = ls_remote_fails(&l);
    assert!(
        err.contains("version.json: larger than the 16777216-byte limit"),
        "{err}"
    );
}

#[test]
fn ref_that_is_not_a_version_id() {
    for content in ["../../etc/passwd", "", "main", "ref: refs/heads/other"] {
        let mut l = base();
        l.put("refs/heads/main", content);
        let err = ls_remote_fails(&l);
        assert!(
            err.contains("ref refs/heads/main: it holds"),
            "{content:?}: {err}"
        );
        assert!(err.contains("which is not a version ID"), "{err}");
    }
}

#[test]
fn ref_names_git_cannot_hold_are_ignored_with_a_warning() {
    let t = TestEnv::new();
    let mut l = base();
    l.branch("bad..name", 2).branch("ok", 2);
    let url = t.local_lake("lake", &l);
    let out = t.git(".", &["ls-remote", &url]);
    let err = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("warning: lake") && err.contains("ignoring refs/heads/bad..name"),
        "{err}"
    );
    assert!(
        stdout.contains("refs/heads/ok") && !stdout.contains("bad..name"),
        "{stdout}"
    );
}

#[test]
fn malformed_head() {
    let mut l = base();
    l.put("HEAD", "ref: refs/heads/../../../x");
    let err = ls_remote_fails(&l);
    assert!(err.contains("HEAD names"), "{err}");
}

#[test]
fn symlinks_out_of_the_root_are_not_followed() {
    let t = TestEnv::new();
    std::fs::write(t.path("secret"), "{\"message\": \"outside\"}").unwrap();
    let l = base();
    let url = t.local_lake("lake", &l);
    let record = t.path(&format!("lake/versions/{}/version.json", vid(2)));
    std::fs::remove_file(&record).unwrap();
    std::os::unix::fs::symlink(t.path("secret"), &record).unwrap();
    let err = t.fails(".", &["ls-remote", &url]);
    assert!(
        err.contains(&format!(
            "versions/{}/version.json: leads outside the lake's root",
            vid(2)
        )),
        "{err}"
    );
}

#[test]
fn a_failed_fetch_updates_no_ref() {
    let t = TestEnv::new();
    let mut l = base();
    let url = t.local_lake("lake", &l);
    t.ok(".", &["clone", "-q", &url, "work"]);
    let before = t.ok("work", &["for-each-ref"]);
    l.version(4, &[3], "good");
    l.version(5, &[4], "good too");
    l.record(&vid(4), b"[\"not an object\"]".to_vec());
    l.branch("main", 5).tag("v9", 3);
    l.write_dir(&t.path("lake"));
    let err = t.fails("work", &["fetch", "origin"]);
    assert!(
        err.contains(&format!(
            "version {}: version.json is not a JSON object",
            vid(4)
        )),
        "{err}"
    );
    assert_eq!(t.ok("work", &["for-each-ref"]), before);
}

#[test]
fn refs_json_values_that_are_not_version_ids() {
    let t = TestEnv::new();
    let mut l = base();
    l.put("refs.json", r#"{"refs/heads/main": "../../../etc/passwd"}"#);
    t.local_lake("lake", &l);
    let server = serve(&t.path("lake"));
    let err = t.fails(".", &["ls-remote", &format!("fdl::{}", server.url)]);
    assert!(err.contains("ref refs/heads/main (in refs.json)"), "{err}");
    l.put("refs.json", "[]");
    l.write_dir(&t.path("lake"));
    let err = t.fails(".", &["ls-remote", &format!("fdl::{}", server.url)]);
    assert!(err.contains("refs.json is not a JSON object"), "{err}");
}

#[test]
fn refs_json_names_that_try_to_escape_are_ignored() {
    let t = TestEnv::new();
    let mut l = base();
    l.put(
        "refs.json",
        format!(
            r#"{{"refs/heads/../../x": "{}", "refs/heads/main": "{}"}}"#,
            vid(1),
            vid(3)
        ),
    );
    t.local_lake("lake", &l);
    let server = serve(&t.path("lake"));
    let out = t.git(".", &["ls-remote", &format!("fdl::{}", server.url)]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("ignoring refs/heads/../../x"), "{err}");
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 2);
}

#[test]
fn a_server_that_never_answers_does_not_hang_the_helper() {
    // Accepts connections and never replies.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for s in listener.incoming().flatten() {
            held.push(s);
        }
    });
    let t = TestEnv::new();
    t.ok(".", &["init", "-q", "work"]);
    t.ok(
        "work",
        &[
            "remote",
            "add",
            "stuck",
            &format!("fdl::http://127.0.0.1:{port}/lake/"),
        ],
    );
    t.ok(
        "work",
        &["config", "--add", "remote.stuck.fdlOption", "timeout=1s"],
    );
    let start = Instant::now();
    let err = t.fails("work", &["fetch", "stuck"]);
    assert!(
        start.elapsed() < Duration::from_secs(60),
        "took {:?}",
        start.elapsed()
    );
    assert!(
        err.contains("fatal: lake 'http://127.0.0.1:") && err.contains("fdl.json"),
        "{err}"
    );
}

#[test]
fn unknown_files_and_version_folders_are_ignored() {
    let t = TestEnv::new();
    let mut l = base();
    l.put("README.md", "hello")
        .put("versions/not-a-uuid/version.json", "{}");
    l.put(&format!("versions/{}/files.json", vid(3)), "{}");
    // An incomplete version (no version.json yet) that nothing names.
    l.put(&format!("versions/{}/ducklake.duckdb", vid(9)), "partial");
    let url = t.local_lake("lake", &l);
    t.ok(".", &["clone", "-q", &url, "work"]);
    assert_eq!(t.ok("work", &["rev-list", "--count", "HEAD"]), "3\n");
}

#[test]
fn a_fifo_in_the_lake_is_refused_not_waited_on() {
    let t = TestEnv::new();
    let url = t.local_lake("lake", &base());
    std::fs::remove_file(t.path("lake/HEAD")).unwrap();
    let fifo = std::ffi::CString::new(t.path("lake/HEAD").to_str().unwrap()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o644) }, 0);
    let start = Instant::now();
    let err = t.fails(".", &["ls-remote", &url]);
    assert!(start.elapsed() < Duration::from_secs(30));
    assert!(
        err.contains("HEAD: is not a regular file (a FIFO, socket or device), not a file"),
        "{err}"
    );
}

#[test]
fn symlinks_out_of_the_root_are_neither_listed_nor_written_through() {
    let t = TestEnv::new();
    let url = t.local_lake("lake", &base());
    std::fs::create_dir_all(t.path("outside/heads")).unwrap();
    std::fs::write(t.path("outside/heads/stolen"), vid(1)).unwrap();
    t.ok(".", &["clone", "-q", &url, "work"]);
    std::fs::rename(t.path("lake/refs"), t.path("lake/refs-real")).unwrap();
    std::os::unix::fs::symlink(t.path("outside"), t.path("lake/refs")).unwrap();
    let err = t.fails(".", &["ls-remote", &url]);
    assert!(err.contains("refs: leads outside the lake's root"), "{err}");
    // A push must not create anything through the link either.
    std::fs::remove_file(t.path("lake/refs")).unwrap();
    std::fs::rename(t.path("lake/refs-real"), t.path("lake/refs")).unwrap();
    std::os::unix::fs::symlink(t.path("outside"), t.path("lake/refs/tags")).unwrap_or(());
    std::fs::create_dir_all(t.path("lake/refs/heads")).unwrap();
    std::os::unix::fs::symlink(t.path("outside"), t.path("lake/refs/heads/team")).unwrap();
    let err = t.fails(
        "work",
        &["push", "origin", "origin/main:refs/heads/team/a/b"],
    );
    assert!(err.contains("leads outside the lake's root"), "{err}");
    assert!(
        !t.path("outside/a").exists(),
        "nothing was created outside the lake"
    );
}

#[test]
fn credentials_in_an_address_never_appear_in_output() {
    let t = TestEnv::new();
    let err = t.fails(
        ".",
        &[
            "ls-remote",
            "fdl::https://ghp_SECRETTOKEN@127.0.0.1:1/lake/?sig=SECRETSIG",
        ],
    );
    assert!(err.starts_with("fatal: "), "{err}");
    assert!(
        !err.contains("SECRETTOKEN") && !err.contains("SECRETSIG"),
        "{err}"
    );
    assert!(err.contains("<redacted>@127.0.0.1:1"), "{err}");
}
