//! Issue 46: fetches at once in one repository (an editor's background fetch beside the
//! user's own), the lake growing between rounds: each round a `git ls-remote` (which keeps the
//! objects it read for the next fetch), then two `git fetch` and a `git ls-remote` started
//! together, as real processes. None may fail but as Git's own fetches at once fail (on a ref
//! lock, in Git's words), none may warn, and the repository ends whole and current.

use std::process::{Child, Stdio};

use crate::support::{lake, text, TestEnv};

/// Git's own words when two of its fetches race for one ref.
fn lost_a_ref_lock(stderr: &str) -> bool {
    stderr.contains("cannot lock ref") || stderr.contains(".lock': File exists")
}

fn start(t: &TestEnv, args: &[&str]) -> Child {
    t.command("git", "clone", args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

#[test]
fn two_fetches_and_a_listing_at_once_in_one_repository_all_succeed() {
    let t = TestEnv::new();
    let mut l = lake(3, 1);
    let url = t.local_lake("lake", &l);
    t.ok(".", &["clone", "-q", &url, "clone"]);
    let rounds = 12;
    for round in 0..rounds {
        let n = 4 + round;
        l.version(n, &[n - 1], &format!("Round {round}"));
        l.branch("main", n).refs_json();
        l.write_dir(&t.path("lake"));
        t.ok("clone", &["ls-remote", "origin"]);
        let started = [
            start(&t, &["fetch", "-q", "origin"]),
            start(&t, &["fetch", "-q", "origin"]),
            start(&t, &["ls-remote", "origin"]),
        ];
        for (i, child) in started.into_iter().enumerate() {
            let out = child.wait_with_output().unwrap();
            let said = text(&out.stderr);
            assert!(
                out.status.success() || lost_a_ref_lock(&said),
                "round {round}, process {i}: {said}"
            );
            assert!(
                !said.contains("warning:"),
                "round {round}, process {i}: {said}"
            );
        }
    }
    t.ok("clone", &["fetch", "-q", "origin"]);
    t.ok("clone", &["fsck", "--no-dangling"]);
    let fetched = t.ok("clone", &["rev-parse", "origin/main"]);
    let listed = t.ok("clone", &["ls-remote", "origin", "refs/heads/main"]);
    assert!(listed.starts_with(fetched.trim()), "{fetched} {listed}");
}
