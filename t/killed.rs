//! Fetches killed or interrupted while writing their pack leave no temporary file behind.

use std::process::Stdio;

use crate::support::run::{killed_at, names_in, signal_at_crash_point};
use crate::support::{lake, text, TestEnv};

#[test]
fn a_fetch_killed_while_writing_its_pack_leaves_nothing_behind() {
    let t = TestEnv::new();
    let url = t.local_lake("lake", &lake(5, 2));
    t.ok(".", &["init", "-q", "--bare", "repo.git"]);
    t.ok("repo.git", &["remote", "add", "origin", &url]);
    let fetch = ["fetch", "origin"];
    killed_at(
        &t,
        "repo.git",
        &fetch,
        "GIT_REMOTE_FDL_TEST_STOP_WRITING_PACK",
    );
    let temporaries = || names_in(&t, "repo.git/objects/pack", |n| n.starts_with("tmp_"));
    assert_eq!(temporaries().len(), 1, "{:?}", temporaries());
    let out = t.git("repo.git", &["fetch", "origin"]);
    let err = text(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("left by a fetch (pid") && err.contains("killed while writing"),
        "{err}"
    );
    assert!(temporaries().is_empty(), "{:?}", temporaries());
    t.ok("repo.git", &["fsck", "--no-progress"]);
    assert_eq!(
        t.ok("repo.git", &["rev-list", "--count", "origin/main"]),
        "5\n"
    );
}

#[test]
fn a_fetch_interrupted_while_writing_its_pack_removes_its_temporary_files() {
    for (signal, name) in [
        (libc::SIGINT, "SIGINT"),
        (libc::SIGTERM, "SIGTERM"),
        (libc::SIGHUP, "SIGHUP"),
    ] {
        let t = TestEnv::new();
        let url = t.local_lake("lake", &lake(4, 2));
        t.ok(".", &["init", "-q", "--bare", "repo.git"]);
        t.ok("repo.git", &["remote", "add", "origin", &url]);
        let pid_file = t.path("helper.pid");
        let mut git = t
            .command("git", "repo.git", &["fetch", "origin"])
            .env("GIT_REMOTE_FDL_TEST_STOP_WRITING_PACK", &pid_file)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        signal_at_crash_point(&pid_file, signal);
        assert!(!git.wait().unwrap().success(), "{name}");
        let left: Vec<String> = std::fs::read_dir(t.path("repo.git/objects/pack"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(left, Vec::<String>::new(), "{name}: left behind");
    }
}

/// Where PID 1 reaps no orphans (a container without an init), a killed fetch stays a zombie,
/// which signal 0 still reaches: its temporary files must count as left by a process that
/// is gone. Here the test itself is the parent that has not reaped it yet.
#[test]
fn a_killed_fetch_that_stays_a_zombie_leaves_nothing_behind() {
    let t = TestEnv::new();
    let url = t.local_lake("lake", &lake(5, 2));
    t.ok(".", &["init", "-q", "--bare", "repo.git"]);
    t.ok("repo.git", &["remote", "add", "origin", &url]);
    let listed = t.ok(".", &["ls-remote", &url, "refs/heads/main"]);
    let main = listed.split('\t').next().unwrap().to_string();
    let pid_file = t.path("helper.pid");
    let mut helper = t
        .command(crate::support::HELPER, "repo.git", &["origin", &url])
        .env("GIT_DIR", t.path("repo.git"))
        .env("GIT_REMOTE_FDL_TEST_STOP_WRITING_PACK", &pid_file)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let session = format!("list\nfetch {main} refs/heads/main\n\n");
    std::io::Write::write_all(helper.stdin.as_mut().unwrap(), session.as_bytes()).unwrap();
    signal_at_crash_point(&pid_file, libc::SIGKILL);
    let stat = format!("/proc/{}/stat", helper.id());
    crate::support::run::wait_until(
        std::time::Duration::from_secs(30),
        "the killed helper never became a zombie",
        || std::fs::read_to_string(&stat).is_ok_and(|s| s.contains(") Z ")),
    );
    let temporaries = || names_in(&t, "repo.git/objects/pack", |n| n.starts_with("tmp_"));
    assert_eq!(temporaries().len(), 1, "{:?}", temporaries());
    let out = t.git("repo.git", &["fetch", "origin"]);
    let err = text(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("left by a fetch (pid"), "{err}");
    assert!(temporaries().is_empty(), "{:?}", temporaries());
    helper.wait().unwrap();
}

/// Ctrl-C reaches the whole process group: while `pack`'s inner clone is writing its pack,
/// the clone dies of it as `pack` catches it. However late `pack`'s own handler runs (a
/// loaded machine; here a test hook delays it a second), the signal decides: exit 130 and the
/// temporary clone removed, never the clone's failure (128).
#[test]
fn ctrl_c_to_the_group_during_packs_clone_exits_130_however_late_its_handler_runs() {
    use std::os::unix::process::CommandExt;
    let mut t = TestEnv::new();
    let url = t.local_lake("lake", &lake(8, 4));
    let tmp = t.path("tmp");
    std::fs::create_dir(&tmp).unwrap();
    t.set("TMPDIR", tmp.to_str().unwrap());
    let pid_file = t.path("inner-fetch.pid");
    let pack = t
        .command(crate::support::HELPER, ".", &["pack", &url])
        .env("GIT_REMOTE_FDL_TEST_STOP_WRITING_PACK", &pid_file)
        .env("GIT_REMOTE_FDL_TEST_SIGNAL_DELAY_MS", "1000")
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .unwrap();
    crate::support::run::pid_at_crash_point(&pid_file);
    let group = pack.id() as i32;
    assert_eq!(unsafe { libc::kill(-group, libc::SIGINT) }, 0);
    let out = pack.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", text(&out.stderr));
    let left: Vec<_> = std::fs::read_dir(&tmp).unwrap().flatten().collect();
    assert!(left.is_empty(), "{left:?}");
}
