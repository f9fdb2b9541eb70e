//! A remote's name where a lake is expected: a remote with `vcs = fdl` and no URL, and a
//! remote of another kind named to `git-remote-fdl ls`, are said to be what they are, never
//! opened as a folder of that name.

use crate::support::{LakeBuilder, TestEnv};

#[test]
fn a_remote_with_vcs_fdl_and_no_url_says_it_has_no_url() {
    let t = TestEnv::new();
    t.ok(".", &["init", "-q", "work"]);
    t.ok("work", &["config", "remote.origin.vcs", "fdl"]);
    t.ok(
        "work",
        &[
            "config",
            "remote.origin.fetch",
            "+refs/heads/*:refs/remotes/origin/*",
        ],
    );
    for args in [vec!["fetch", "origin"], vec!["ls-remote", "origin"]] {
        let out = t.git("work", &args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(128), "{err}");
        assert!(
            err.contains("fatal: remote 'origin' has no URL")
                && err.contains("git config remote.origin.url fdl::<address>"),
            "{err}"
        );
        assert!(!err.contains("cannot open lake"), "{err}");
    }
}

#[test]
fn ls_of_a_remote_that_is_not_fdl_says_it_is_not_an_fdl_remote() {
    let t = TestEnv::new();
    let mut l = LakeBuilder::new();
    l.chain(1, 1);
    l.branch("main", 1).refs_json();
    // A folder named like the remote, holding a lake: the remote's name still wins, as in Git.
    t.local_lake("work/origin", &l);
    t.ok(".", &["init", "-q", "--bare", "bare.git"]);
    t.ok("work", &["init", "-q"]);
    t.ok("work", &["remote", "add", "origin", "../bare.git"]);
    let out = t
        .command(
            env!("CARGO_BIN_EXE_git-remote-fdl"),
            "work",
            &["ls", "origin"],
        )
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(128), "{err}");
    assert!(
        err.contains("fatal: 'origin' is not an fdl remote of this repository"),
        "{err}"
    );
    assert!(
        out.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}
