//! What the helper prints: nothing on a no-op, a note said once, an unknown object named once,
//! and output that is closed or full ends as Git's does.

use std::process::{Output, Stdio};

use crate::support::run::helper_session_in;
use crate::support::{lake, text, vid, TestEnv};

/// Runs the helper with its standard output's reading end already closed (`| head -0`), closed
/// before it starts, so that it cannot write everything before the close.
fn into_closed_pipe(t: &TestEnv, cwd: &str, args: &[&str]) -> Output {
    let (reading_end, writing_end) = std::io::pipe().unwrap();
    drop(reading_end);
    t.command(env!("CARGO_BIN_EXE_git-remote-fdl"), cwd, args)
        .stdout(writing_end)
        .stderr(Stdio::piped())
        .output()
        .unwrap()
}

fn into_dev_full(t: &TestEnv, cwd: &str, args: &[&str], stream: &str) -> Output {
    let full = || {
        Stdio::from(
            std::fs::File::options()
                .write(true)
                .open("/dev/full")
                .unwrap(),
        )
    };
    let mut c = t.command(env!("CARGO_BIN_EXE_git-remote-fdl"), cwd, args);
    match stream {
        "stdout" => c.stdout(full()).stderr(Stdio::piped()),
        _ => c.stdout(Stdio::piped()).stderr(full()),
    };
    c.output().unwrap()
}

#[test]
fn a_closed_pipe_ends_ls_and_fsck_quietly_as_git_does() {
    let t = TestEnv::new();
    let mut l = lake(4, 2);
    // refs.json lacks a tag: one problem for fsck to print.
    l.set_ref("refs/tags/stale", &vid(1));
    let url = t.local_lake("lake", &l);
    for args in [vec!["ls", url.as_str()], vec!["fsck", url.as_str()]] {
        let out = into_closed_pipe(&t, ".", &args);
        // Git's `git log | head -0`: killed by SIGPIPE, which a shell shows as 141.
        assert_eq!(out.status.code(), Some(141), "{args:?}");
        assert_eq!(text(&out.stderr), "", "{args:?}");
    }
}

#[test]
fn a_full_disk_under_stdout_or_stderr_is_an_error_naming_the_output_never_a_bug() {
    let t = TestEnv::new();
    let mut l = lake(4, 2);
    // refs.json lacks a tag: one problem for fsck to print.
    l.set_ref("refs/tags/stale", &vid(1));
    let url = t.local_lake("lake", &l);
    for args in [vec!["ls", url.as_str()], vec!["fsck", url.as_str()]] {
        let out = into_dev_full(&t, ".", &args, "stdout");
        assert_eq!(
            text(&out.stderr),
            "fatal: write failure on standard output: No space left on device\n",
            "{args:?}"
        );
        assert_eq!(out.status.code(), Some(128), "{args:?}");
    }
    // A full stderr is passed over, as Git does: the catalog is written all the same.
    t.ok(".", &["clone", "-q", &url, "work"]);
    let out = into_dev_full(&t, "work", &["catalog", "v1", "-o", "v1.duckdb"], "stderr");
    assert_eq!(out.status.code(), Some(0));
    assert!(text(&out.stdout).starts_with("INSTALL ducklake;"));
    assert_eq!(
        std::fs::read(t.path("work/v1.duckdb")).unwrap(),
        b"test catalog of version 2\n"
    );
    // And a fatal error with a full stderr still ends with Git's status, not an abort.
    let out = into_dev_full(&t, "work", &["catalog", "no-such-ref"], "stderr");
    assert_eq!(out.status.code(), Some(128));
}

/// The helper's own warnings (here: `--depth` ignored) on a full stderr are passed over, as
/// Git passes over its own: the fetch still succeeds, no panic ends it.
#[test]
fn a_fetch_whose_stderr_is_full_still_fetches_with_its_warnings_passed_over() {
    let t = TestEnv::new();
    let url = t.local_lake("lake", &lake(4, 2));
    t.ok(".", &["clone", "-q", &url, "work"]);
    let mut l = lake(4, 2);
    l.version(9, &[4], "nine");
    l.branch("main", 9);
    l.write_dir(&t.path("lake"));
    let full = std::fs::File::options()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let out = t
        .command("git", "work", &["fetch", "--depth=1", "origin"])
        .stderr(Stdio::from(full))
        .output()
        .unwrap();
    assert!(out.status.success(), "{:?}", out.status);
    let log = t.ok("work", &["log", "-1", "--format=%s", "origin/main"]);
    assert_eq!(log, "nine\n");
}

#[test]
fn a_filter_clone_says_once_that_every_object_is_fetched_and_depth_is_kept() {
    let t = TestEnv::new();
    let url = t.local_lake("lake", &lake(3, 1));
    let out = t.git(
        ".",
        &["clone", "--depth", "1", "--filter=blob:none", &url, "work"],
    );
    let err = text(&out.stderr);
    assert!(out.status.success(), "{err}");
    let warnings: Vec<&str> = err.lines().filter(|l| l.starts_with("warning:")).collect();
    assert_eq!(
        warnings,
        ["warning: --filter is ignored for FDL lakes; every object of a version is fetched"],
        "{err}"
    );
    assert_eq!(t.ok("work", &["rev-list", "--count", "HEAD"]), "1\n");
    assert_eq!(
        t.ok("work", &["rev-parse", "--is-shallow-repository"]),
        "true\n"
    );
    // Git's own words when both kinds of limit are asked for at once.
    let err = t.fails(
        ".",
        &[
            "clone",
            "--depth",
            "1",
            "--shallow-since=2020-01-01",
            &url,
            "both",
        ],
    );
    assert!(
        err.contains("fatal: --depth or --deepen cannot be used with --shallow-since"),
        "{err}"
    );
}

#[test]
fn no_progress_noise_on_a_no_op_fetch_ls_remote_or_remote_show() {
    let t = TestEnv::new();
    let url = t.local_lake("lake", &lake(3, 1));
    t.ok(".", &["clone", "-q", &url, "work"]);
    let out = t.git("work", &["fetch", "--progress"]);
    assert_eq!(text(&out.stderr), "", "a no-op fetch prints nothing");
    // What `git ls-remote` asks on a terminal, with the repository's cache (Git sets GIT_DIR).
    let out = helper_session_in(
        &t,
        "work",
        &["origin", &url],
        b"capabilities\noption progress true\nlist\n\n",
        &[("GIT_DIR", ".git")],
    );
    assert_eq!(
        text(&out.stderr),
        "",
        "ls-remote with a warm cache prints nothing"
    );
    let out = t.git("work", &["remote", "show", "origin"]);
    assert_eq!(text(&out.stderr), "");
}

#[test]
fn unknown_sha_is_printed_once() {
    let t = TestEnv::new();
    let url = t.local_lake("lake", &lake(3, 1));
    t.ok(".", &["init", "-q", "work"]);
    let sha = "1234567890123456789012345678901234567890";
    let err = t.fails("work", &["fetch", &url, sha]);
    assert_eq!(err.matches(sha).count(), 1, "{err}");
}
