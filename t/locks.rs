//! Ref locks: lock files that are links, FIFOs or devices are never read; a lock left by a
//! killed or dead writer is recovered or explained; a long branch is locked whole.

use std::process::Command;
use std::time::Duration;

use crate::support::run::{killed_at, names_in, run_within, OpenWatch};
use crate::support::{lake, text, vid, LakeAt, TestEnv, Where};

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
    let url = t.local_lake("lake", &lake(5, 2));
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
    // A tag push rewrites refs.json under its lock: at once (a wait reads the lock again and
    // again), and refs.json is not left stale.
    let reads = OpenWatch::new(&t.path("lake"));
    let out = t.git("work", &["push", "origin", "origin/main:refs/tags/after"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let tries = reads.opens_of("refs.json.lock");
    assert!(
        (1..=3).contains(&tries),
        "refs.json.lock read {tries} times"
    );
    assert!(lake.refs_json().contains_key("refs/tags/after"));
    let reads = OpenWatch::new(&t.path("lake/refs/heads"));
    let out = t.git(
        "work",
        &["push", "-f", "origin", "origin/main~1:refs/heads/main"],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let tries = reads.opens_of("main.lock");
    assert!((1..=3).contains(&tries), "main.lock read {tries} times");
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

#[test]
fn lock_files_that_are_symlinks_fifos_or_devices_are_never_read() {
    let t = TestEnv::new();
    let url = t.local_lake("lake", &lake(5, 2));
    t.ok(".", &["clone", "-q", &url, "work"]);
    let secret = t.path("credentials");
    std::fs::write(&secret, "aws_secret_access_key = SECRET-CONTENT\n").unwrap();
    let lock = t.path("lake/refs.json.lock");
    let cases: [(&str, &dyn Fn()); 4] = [
        ("a symlink", &|| {
            std::os::unix::fs::symlink(&secret, &lock).unwrap();
        }),
        ("a FIFO", &|| {
            let c = std::ffi::CString::new(lock.to_str().unwrap()).unwrap();
            assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
        }),
        ("a symlink", &|| {
            std::os::unix::fs::symlink("/dev/zero", &lock).unwrap();
        }),
        ("held by", &|| {
            let mut hostile =
                b"pid 1 on elsewhere since 1 \x1b]0;pwned\x07\r\nhint: run curl | sh\n".to_vec();
            hostile.extend(std::iter::repeat_n(b'A', 1 << 20));
            std::fs::write(&lock, hostile).unwrap();
        }),
    ];
    for (i, (what, make)) in cases.iter().enumerate() {
        let _ = std::fs::remove_file(&lock);
        make();
        let tag = format!("origin/main:refs/tags/lock{i}");
        let out = run_within(
            t.command("git", "work", &["push", "origin", &tag]),
            Duration::from_secs(30),
        );
        let err = text(&out.stderr);
        assert!(out.status.success(), "the ref write decides: {err}");
        assert!(t.path(&format!("lake/refs/tags/lock{i}")).exists());
        let line = err
            .lines()
            .find(|l| l.contains("refs.json.lock"))
            .unwrap_or_else(|| panic!("case {i}: no word of the lock:\n{err}"));
        assert!(line.contains(what), "case {i}: {line}");
        assert!(!err.contains("SECRET-CONTENT"), "case {i}: {err}");
        assert!(
            !err.contains('\x1b') && !err.contains("\nhint: run curl"),
            "case {i}: {err}"
        );
        assert!(err.len() < 2000, "case {i}: {} bytes of stderr", err.len());
    }
    assert_eq!(
        std::fs::read_to_string(&secret).unwrap(),
        "aws_secret_access_key = SECRET-CONTENT\n"
    );
}

#[test]
fn a_push_killed_holding_the_refs_json_lock_is_repaired_by_the_next_push() {
    let t = TestEnv::new();
    let url = t.local_lake("lake", &lake(5, 2));
    t.ok(".", &["clone", "-q", &url, "work"]);
    let push = ["push", "origin", "origin/main:refs/tags/killed"];
    killed_at(
        &t,
        "work",
        &push,
        "GIT_REMOTE_FDL_TEST_STOP_WRITING_REFS_JSON",
    );
    let lake = LakeAt {
        url: url.clone(),
        place: Where::Local,
        dir: t.path("lake"),
        bucket: String::new(),
        prefix: String::new(),
    };
    let leftovers = |dir: &str| names_in(&t, dir, |n| n.contains(".lock") || n.contains(".tmp-"));
    // The ref was written; refs.json was not, and its lock and temporary file stay.
    assert!(lake.read("refs/tags/killed").is_some());
    assert!(!lake.refs_json().contains_key("refs/tags/killed"));
    assert_eq!(leftovers("lake").len(), 2, "{:?}", leftovers("lake"));
    let out = t.git("work", &["push", "origin", "origin/main:refs/tags/after"]);
    let err = text(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("removed refs.json.lock, a lock left by pid")
            && err.contains("a process that no longer exists")
            && err.contains("removed 1 temporary file(s) left by a killed write of refs.json"),
        "{err}"
    );
    assert_eq!(lake.refs_json(), lake.ref_files());
    assert!(leftovers("lake").is_empty(), "{:?}", leftovers("lake"));
}

/// A lock appears whole: a push killed while taking one leaves no lock (an empty one, which
/// names no writer, held every later push of the ref for 10 s and then failed it), only a
/// hidden file that is never read as a ref.
#[test]
fn a_push_killed_while_taking_a_lock_leaves_no_lock() {
    let t = TestEnv::new();
    let url = t.local_lake("lake", &lake(5, 2));
    t.ok(".", &["clone", "-q", &url, "work"]);
    let push = ["push", "-f", "origin", "origin/main~1:refs/heads/main"];
    killed_at(&t, "work", &push, "GIT_REMOTE_FDL_TEST_STOP_TAKING_LOCK");
    assert!(!t.path("lake/refs/heads/main.lock").exists());
    let staged = || names_in(&t, "lake/refs/heads", |n| n.starts_with(".lock-staged-"));
    assert_eq!(staged().len(), 1, "the killed push's staged lock");
    // Taken at once: a writer waiting for a lock stages a new one on every try.
    let opened = OpenWatch::new(&t.path("lake/refs/heads"));
    let out = t.git(
        "work",
        &["push", "-f", "origin", "origin/main~2:refs/heads/main"],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let tries = opened.opened();
    let staged_tries = tries
        .iter()
        .filter(|n| n.starts_with(".lock-staged-"))
        .count();
    assert!(
        (1..=3).contains(&staged_tries),
        "{staged_tries} tries: {tries:?}"
    );
    let listed = t.ok("work", &["ls-remote", "origin"]);
    assert!(!listed.contains(".main"), "{listed}");
    // The next writer of main removed it: its writer is gone.
    assert!(staged().is_empty(), "{:?}", staged());
}

/// The staged lock's name does not grow with the ref's: a branch whose lock name just fits
/// the file system is still locked whole, and an empty staged file (a writer killed before it
/// wrote into it) is swept once old.
#[test]
fn a_long_branch_is_locked_whole_and_old_empty_staged_locks_are_swept() {
    let t = TestEnv::new();
    let url = t.local_lake("lake", &lake(5, 2));
    t.ok(".", &["clone", "-q", &url, "work"]);
    let long = format!("refs/heads/{}", "b".repeat(225));
    let push = ["push", "origin", &format!("origin/main:{long}")];
    killed_at(&t, "work", &push, "GIT_REMOTE_FDL_TEST_STOP_TAKING_LOCK");
    assert!(!t.path(&format!("lake/{long}.lock")).exists());
    let empty = t.path("lake/refs/heads/.lock-staged-4000000-1-0");
    let f = std::fs::File::create(&empty).unwrap();
    f.set_modified(std::time::SystemTime::now() - Duration::from_secs(120))
        .unwrap();
    t.ok(
        "work",
        &["push", "-q", "origin", &format!("origin/main:{long}")],
    );
    let left = names_in(&t, "lake/refs/heads", |n| n.starts_with('.'));
    assert!(left.is_empty(), "{left:?}");
}

/// An empty lock (left by a writer killed before it wrote its name, as earlier versions
/// could) is as old as its file: an old one is explained at once, not waited on.
#[test]
fn an_old_empty_lock_is_explained_at_once() {
    let t = TestEnv::new();
    let url = t.local_lake("lake", &lake(5, 2));
    t.ok(".", &["clone", "-q", &url, "work"]);
    let lock = t.path("lake/refs/heads/main.lock");
    let f = std::fs::File::create(&lock).unwrap();
    let two_hours_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(7200);
    f.set_modified(two_hours_ago).unwrap();
    let reads = OpenWatch::new(&t.path("lake/refs/heads"));
    let err = t.fails(
        "work",
        &["push", "-f", "origin", "origin/main~1:refs/heads/main"],
    );
    // Explained on the first read, not waited on (a wait reads it every few milliseconds).
    let tries = reads.opens_of("main.lock");
    assert!((1..=3).contains(&tries), "main.lock read {tries} times");
    assert!(
        err.contains("held by an unknown writer, for 7")
            && err.contains("probably left by a push that crashed")
            && err.contains("rm '"),
        "{err}"
    );
}
