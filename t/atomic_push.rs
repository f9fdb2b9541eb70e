//! `git push --atomic`: at most one new tag, written last, and an undo that never deletes a tag
//! another push was told exists.

use std::process::Stdio;
use std::time::Duration;

use crate::support::run::OpenWatch;
use crate::support::{lake, text, vid, TestEnv};

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .unwrap()
        .trim()
        .to_string()
}

#[test]
fn atomic_undo_never_deletes_a_tag_another_push_was_told_exists() {
    let t = TestEnv::new();
    let url = t.local_lake("lake", &lake(5, 2));
    for w in ["a", "b"] {
        t.ok(".", &["clone", "-q", &url, w]);
    }
    // A live writer holds the lock of a new branch: push A's create of it waits, then fails.
    // (Git sends new refs in the order given, after the refs the lake has.)
    let holder = format!(
        "pid {} on {} since {}\n",
        std::process::id(),
        hostname(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs()
    );
    std::fs::write(t.path("lake/refs/heads/late.lock"), &holder).unwrap();
    let lock_read = OpenWatch::new(&t.path("lake/refs/heads"));
    let mut push_a = t
        .command(
            "git",
            "a",
            &[
                "push",
                "--atomic",
                "origin",
                "origin/main~1:refs/tags/release",
                "origin/main~2:refs/heads/late",
            ],
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // A reads the held lock once it has listed the lake (no tag then) and planned its writes.
    lock_read.wait_for_open("late.lock", Duration::from_secs(60));
    // Meanwhile B pushes the same tag, and is told it exists.
    let out = t.git("b", &["push", "origin", "origin/main~1:refs/tags/release"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    // The race happened: B's tag landed while A still waited for the lock, before its undo.
    assert!(
        push_a.try_wait().unwrap().is_none(),
        "push A ended before B pushed: the race was not run"
    );
    let a = push_a.wait_with_output().unwrap();
    let a_err = text(&a.stderr);
    assert!(!a.status.success(), "{a_err}");
    // A had listed the lake before B's tag: it planned the tag's creation, refused as a whole.
    assert!(
        a_err.contains("-> release (atomic push failed)"),
        "A never planned the tag, so nothing raced it: {a_err}"
    );
    assert!(
        a_err.contains("held by pid") && a_err.contains("rm '"),
        "who holds the lock, and how to clear it: {a_err}"
    );
    assert!(
        t.path("lake/refs/tags/release").exists(),
        "A's undo deleted the tag B was told exists:\n{a_err}"
    );
    assert_eq!(
        std::fs::read_to_string(t.path("lake/refs/tags/release"))
            .unwrap()
            .trim(),
        vid(4)
    );
    assert!(!t.path("lake/refs/heads/late").exists());
}

#[test]
fn atomic_push_of_two_new_tags_is_refused_before_any_write() {
    let t = TestEnv::new();
    let url = t.local_lake("lake", &lake(5, 2));
    t.ok(".", &["clone", "-q", &url, "work"]);
    let err = t.fails(
        "work",
        &[
            "push",
            "--atomic",
            "origin",
            "origin/main:refs/tags/n1",
            "origin/main:refs/tags/n2",
            "origin/main~1:refs/heads/staging",
        ],
    );
    assert!(
        err.contains("an --atomic push creates at most one tag"),
        "{err}"
    );
    assert!(!t.path("lake/refs/tags/n1").exists() && !t.path("lake/refs/heads/staging").exists());
    // One tag and a branch: all or nothing, the tag written last.
    t.ok(
        "work",
        &[
            "push",
            "-q",
            "--atomic",
            "origin",
            "origin/main:refs/tags/n1",
            "origin/main~1:refs/heads/staging",
        ],
    );
    assert!(t.path("lake/refs/tags/n1").exists() && t.path("lake/refs/heads/staging").exists());
}
