//! Broken and hostile lakes: each gets a one-line `fatal:` naming the lake and the ref or
//! version at fault, and why, then a `hint:` when the helper has one; the helper exits 128, as
//! does Git; no panic, no hang, no read outside the root, and a failed fetch that updates no ref.
//! Each test checks the whole of stderr, with the lake's folder written `<lake>`.

use std::io::Write;
use std::net::TcpListener;
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use crate::support::http::serve;
use crate::support::{text, vid, LakeBuilder, TestEnv};

const DAMAGED: &str = "hint: the lake's history is damaged here; ask its owner to repair it\n";
const BROKEN_FILE: &str = "hint: a writer left this file broken; fix or remove it in the lake\n";
const UPGRADE: &str =
    "hint: upgrade git-remote-fdl, or ask the lake's owner which FDL version it uses\n";

pub(crate) fn base() -> LakeBuilder {
    let mut l = LakeBuilder::new();
    l.chain(1, 3);
    l.branch("main", 3);
    l
}

/// The exit code and the whole stderr of a command that must fail with nothing on stdout.
pub(crate) fn failed(out: Output) -> (Option<i32>, String) {
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(!out.status.success(), "should have failed: {err}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "", "{err}");
    (out.status.code(), err)
}

/// Runs `git ls-remote` on the lake and returns its stderr with the lake's folder written
/// `<lake>`, insisting that Git exits 128 and lists nothing, and that the helper itself, asked
/// for `list` as Git asks, exits 128 with the same message.
fn ls_remote_fails(l: &LakeBuilder) -> String {
    let t = TestEnv::new();
    let url = t.local_lake("lake", l);
    ls_remote_fails_at(&t, &url).replace(&t.path("lake").display().to_string(), "<lake>")
}

pub(crate) fn ls_remote_fails_at(t: &TestEnv, url: &str) -> String {
    let (code, err) = failed(t.git(".", &["ls-remote", url]));
    assert_eq!(code, Some(128), "{err}");
    let mut helper = t
        .command(env!("CARGO_BIN_EXE_git-remote-fdl"), ".", &["origin", url])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    helper
        .stdin
        .take()
        .unwrap()
        .write_all(b"list\n\n")
        .expect("the helper reads its command");
    let (code, direct) = failed(helper.wait_with_output().unwrap());
    assert_eq!(code, Some(128), "{direct}");
    assert_eq!(
        direct, err,
        "Git shows the helper's message and nothing else"
    );
    err
}

#[test]
fn no_fdl_json() {
    let mut l = base();
    l.remove("fdl.json");
    assert_eq!(
        ls_remote_fails(&l),
        "fatal: '<lake>' is not an FDL lake: it has no fdl.json\n\
         hint: check the address: it must name the folder that holds fdl.json, HEAD and refs/\n"
    );
}

#[test]
fn unknown_major_version_is_refused() {
    let mut l = base();
    l.put("fdl.json", r#"{"fdl": "2.0", "id": "x"}"#);
    assert_eq!(
        ls_remote_fails(&l),
        format!(
            "fatal: lake '<lake>': fdl.json says FDL 2.0, whose major version 2 this helper \
             does not know\n{UPGRADE}"
        )
    );
}

#[test]
fn invalid_fdl_json() {
    let mut l = base();
    l.put("fdl.json", "{not json");
    assert_eq!(
        ls_remote_fails(&l),
        format!(
            "fatal: lake '<lake>': fdl.json is not valid JSON: key must be a string at line 1 \
             column 2\nhint: fdl.json must be a JSON object with an \"fdl\" version; ask the lake's owner \
             to repair it\n"
        )
    );
}

#[test]
fn cycle_in_parents() {
    let mut l = LakeBuilder::new();
    l.version(1, &[3], "a");
    l.version(2, &[1], "b");
    l.version(3, &[2], "c");
    l.branch("main", 3);
    assert_eq!(
        ls_remote_fails(&l),
        format!(
            "fatal: lake '<lake>': the parents of version {} lead back to itself (a cycle)\n\
             {DAMAGED}",
            vid(3)
        )
    );
}

#[test]
fn version_that_is_its_own_parent() {
    let mut l = LakeBuilder::new();
    l.version(1, &[1], "me");
    l.branch("main", 1);
    assert_eq!(
        ls_remote_fails(&l),
        format!(
            "fatal: lake '<lake>': the parents of version {} lead back to itself (a cycle)\n\
             {DAMAGED}",
            vid(1)
        )
    );
}

#[test]
fn missing_parent() {
    let mut l = base();
    l.version(4, &[99], "orphan");
    l.branch("main", 4);
    assert_eq!(
        ls_remote_fails(&l),
        format!(
            "fatal: lake '<lake>': version {v99}, named by version {}, does not exist \
             (no versions/{v99}/version.json)\n{DAMAGED}",
            vid(4),
            v99 = vid(99),
        )
    );
}

#[test]
fn ref_to_a_missing_version() {
    let mut l = base();
    l.branch("ghost", 42);
    assert_eq!(
        ls_remote_fails(&l),
        format!(
            "fatal: lake '<lake>': version {v42}, named by ref refs/heads/ghost, does not exist \
             (no versions/{v42}/version.json)\n{DAMAGED}",
            v42 = vid(42),
        )
    );
}

#[test]
fn invalid_version_json() {
    let mut l = base();
    l.record(&vid(2), b"{\"parents\": [".to_vec());
    assert_eq!(
        ls_remote_fails(&l),
        format!(
            "fatal: lake '<lake>': version {}: version.json is not valid JSON: EOF while parsing \
             a list at line 1 column 13\n{DAMAGED}",
            vid(2)
        )
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
        assert_eq!(
            ls_remote_fails(&l),
            format!(
                "fatal: lake '<lake>': version {}: parent '{bad}' is not a version ID\n{DAMAGED}",
                vid(3)
            )
        );
    }
}

#[test]
fn huge_version_json_is_not_read() {
    let mut l = base();
    let mut big = b"{\"message\": \"".to_vec();
    big.resize(17 << 20, b'a');
    big.extend_from_slice(b"\"}");
    l.record(&vid(3), big);
    assert_eq!(
        ls_remote_fails(&l),
        format!(
            "fatal: lake '<lake>': versions/{}/version.json: larger than the 16777216-byte limit \
             for this file\n",
            vid(3)
        )
    );
}

/// A ref file that holds no version is passed over with a warning, as Git passes over a broken
/// ref: the lake's other refs are still listed, fetched and pushed (one bad file used to stop
/// every reader and pusher). Its refs.json entry is kept; a push to it says why it cannot be.
#[test]
fn ref_that_is_not_a_version_id_is_passed_over_with_a_warning() {
    let big = "0".repeat((1 << 20) + 1);
    for content in [
        "../../etc/passwd",
        "",
        "main",
        "ref: refs/heads/other",
        big.as_str(),
    ] {
        let t = TestEnv::new();
        let mut l = base();
        // refs.json names the branch at version 1; its file then went bad.
        l.branch("ok", 2).branch("bad", 1).refs_json();
        l.put("refs/heads/bad", content);
        let url = t.local_lake("lake", &l);
        let out = t.git(".", &["ls-remote", &url]);
        let lake = t.path("lake").display().to_string();
        let err = String::from_utf8_lossy(&out.stderr).replace(&lake, "<lake>");
        let why = match content.len() > 100 {
            true => "larger than the 1048576-byte limit for a ref file".to_string(),
            false => format!("it holds '{content}', which is not a version ID"),
        };
        assert!(out.status.success(), "{err}");
        assert_eq!(
            err,
            format!("warning: lake '<lake>': ignoring broken ref refs/heads/bad: {why}\n")
        );
        let names: Vec<String> = crate::support::parse_ls_remote(&text(&out.stdout))
            .into_iter()
            .map(|(_, n)| n)
            .collect();
        assert_eq!(names, ["HEAD", "refs/heads/main", "refs/heads/ok"]);
        t.ok(".", &["clone", "-q", &url, "work"]);
        t.ok("work", &["push", "-q", "origin", "origin/ok:refs/tags/v1"]);
        let refs_json = std::fs::read_to_string(t.path("lake/refs.json")).unwrap();
        assert!(
            refs_json.contains("refs/tags/v1") && refs_json.contains("refs/heads/bad"),
            "{refs_json}"
        );
        let err = text(
            &t.git(
                "work",
                &["push", "-f", "origin", "origin/ok:refs/heads/bad"],
            )
            .stderr,
        );
        assert!(
            err.contains("(the lake's file for this ref holds no version (see the warning)"),
            "{err}"
        );
        assert_eq!(
            std::fs::read(t.path("lake/refs/heads/bad")).unwrap(),
            content.as_bytes()
        );
        // fsck reports it once, as a problem.
        let fsck = t
            .command(env!("CARGO_BIN_EXE_git-remote-fdl"), ".", &["fsck", &url])
            .output()
            .unwrap();
        let problems = text(&fsck.stdout).replace(&lake, "<lake>");
        assert_eq!(fsck.status.code(), Some(1), "{problems}");
        assert_eq!(
            problems,
            format!("error: lake '<lake>': ignoring broken ref refs/heads/bad: {why}\n")
        );
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
    assert!(out.status.success(), "{err}");
    assert_eq!(
        err,
        format!(
            "warning: lake '{}': ignoring refs/heads/bad..name: not a valid ref name: it contains \
             '..'\n",
            t.path("lake").display()
        )
    );
    let names: Vec<String> = crate::support::parse_ls_remote(&String::from_utf8_lossy(&out.stdout))
        .into_iter()
        .map(|(_, n)| n)
        .collect();
    assert_eq!(names, ["HEAD", "refs/heads/main", "refs/heads/ok"]);
}

#[test]
fn malformed_head() {
    let mut l = base();
    l.put("HEAD", "ref: refs/heads/../../../x");
    assert_eq!(
        ls_remote_fails(&l),
        format!(
            "fatal: lake '<lake>': HEAD names 'refs/heads/../../../x', which is not a branch\n\
             {BROKEN_FILE}"
        )
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
    let (code, err) = failed(t.git("work", &["fetch", "origin"]));
    assert_eq!(
        (code, err),
        (
            Some(128),
            format!(
                "fatal: lake '{}': version {}: version.json is not a JSON object\n{DAMAGED}",
                t.path("lake").display(),
                vid(4)
            )
        )
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
    let url = format!("fdl::{}", server.url);
    assert_eq!(
        ls_remote_fails_at(&t, &url),
        format!(
            "fatal: lake '{}': ref refs/heads/main (in refs.json): '../../../etc/passwd' is not \
             a version ID (a UUID)\n{BROKEN_FILE}",
            server.url
        )
    );
    l.put("refs.json", "[]");
    l.write_dir(&t.path("lake"));
    assert_eq!(
        ls_remote_fails_at(&t, &url),
        format!(
            "fatal: lake '{}': refs.json: refs.json is not a JSON object\nhint: over plain HTTP the \
             refs are read from refs.json, which any push to the lake rewrites; or read the lake \
             through its store address (s3://, gs://, az:// or a folder), which lists refs/\n",
            server.url
        )
    );
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
    assert_eq!(
        err,
        format!(
            "warning: lake '{}': refs.json: ignoring refs/heads/../../x: not a valid ref name: a \
             component starts with '.'\n",
            server.url
        )
    );
    let names: Vec<String> = crate::support::parse_ls_remote(&String::from_utf8_lossy(&out.stdout))
        .into_iter()
        .map(|(_, n)| n)
        .collect();
    assert_eq!(names, ["HEAD", "refs/heads/main"]);
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
    let (code, err) = failed(t.git("work", &["fetch", "stuck"]));
    assert!(
        start.elapsed() < Duration::from_secs(60),
        "took {:?}",
        start.elapsed()
    );
    assert_eq!(code, Some(128), "{err}");
    let lake = format!("http://127.0.0.1:{port}/lake/");
    assert_eq!(
        err,
        format!(
            "fatal: lake '{lake}': fdl.json: no answer from http://127.0.0.1:{port} in time: \
             operation timed out\n\
             hint: for a slow store, allow more time: git config --add remote.stuck.fdlOption \
             timeout=120s\n"
        )
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
    let out = t.git(".", &["clone", "-q", &url, "work"]);
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "",
        "no warning either"
    );
    assert_eq!(t.ok("work", &["rev-list", "--count", "HEAD"]), "3\n");
}

#[test]
fn credentials_in_an_address_never_appear_in_output() {
    let t = TestEnv::new();
    let (code, err) = failed(t.git(
        ".",
        &[
            "ls-remote",
            "fdl::https://ghp_SECRETTOKEN@127.0.0.1:1/lake/?sig=SECRETSIG",
        ],
    ));
    assert_eq!(code, Some(128), "{err}");
    assert_eq!(
        err,
        "fatal: lake 'https://<redacted>@127.0.0.1:1/lake/?<redacted>': fdl.json: cannot connect to \
         https://127.0.0.1:1: Connection refused (os error 111)\n\
         hint: check the lake's address and that its server is running\n"
    );
    assert!(
        !err.contains("SECRETTOKEN") && !err.contains("SECRETSIG"),
        "{err}"
    );
    assert!(err.contains("<redacted>@127.0.0.1:1"), "{err}");
}
