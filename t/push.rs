//! `git push` to a lake, with real git, against a folder and each cloud's emulator (S3, GCS, Azure): what can
//! be pushed, what is refused (with Git's own statuses), and `refs.json` kept equal to the refs.

use crate::support::{vid, LakeAt, LakeBuilder, TestEnv, Where};

/// main: 1..5, staging: 3, tag v1: 2, side: 6 (child of 2).
fn lake() -> LakeBuilder {
    let mut l = crate::support::lake(5, 2);
    l.version(6, &[2], "side work");
    l.branch("staging", 3).branch("side", 6);
    l.refs_json();
    l
}

/// A lake and a clone of it in `work`.
fn setup(place: Where) -> (TestEnv, LakeAt) {
    let mut t = TestEnv::new();
    let lake = t.lake_at(place, "lake", &lake());
    t.ok(".", &["clone", "-q", &lake.url, "work"]);
    (t, lake)
}

fn commit_of(t: &TestEnv, rev: &str) -> String {
    t.ok("work", &["rev-parse", rev]).trim().to_string()
}

/// `refs.json` must equal the ref files once writers stop.
fn assert_refs_json_matches(lake: &LakeAt) {
    assert_eq!(
        lake.refs_json(),
        lake.ref_files(),
        "refs.json differs from the ref files"
    );
}

macro_rules! on_both {
    ($($name:ident),* $(,)?) => {
        mod local {
            $( #[test] fn $name() { super::$name(crate::support::Where::Local) } )*
        }
        mod s3 {
            $( #[test] fn $name() { super::$name(crate::support::Where::S3) } )*
        }
        mod gcs {
            $( #[test] fn $name() { super::$name(crate::support::Where::Gcs) } )*
        }
        mod azure {
            $( #[test] fn $name() { super::$name(crate::support::Where::Azure) } )*
        }
        mod seaweedfs {
            $( #[test] fn $name() { super::$name(crate::support::Where::SeaweedFs) } )*
        }
        mod rgw {
            $( #[test] #[ignore = "needs Ceph RGW: make test-ceph"] fn $name() { super::$name(crate::support::Where::Rgw) } )*
        }
    };
}

on_both!(
    tag_push_creates_the_tag_and_updates_refs_json,
    tags_never_move_nor_disappear,
    branch_moves_fast_forward_force_and_lease,
    branch_create_and_delete,
    commits_that_are_not_versions_are_refused,
    dry_run_writes_nothing,
    atomic_is_all_or_nothing,
    a_stale_refs_json_is_repaired_by_the_next_push,
    ref_names_with_any_allowed_character_round_trip,
    a_lease_on_a_new_ref_expects_it_absent,
);

fn ref_names_with_any_allowed_character_round_trip(place: Where) {
    let (t, lake) = setup(place);
    for name in [
        "refs/heads/fix#9",
        "refs/heads/café",
        "refs/tags/v1%2f",
        "refs/heads/a{b}",
    ] {
        t.ok(
            "work",
            &["push", "-q", "origin", &format!("origin/main:{name}")],
        );
        assert_eq!(
            lake.read(name).map(|v| v.trim().to_string()),
            Some(vid(5)),
            "{name}"
        );
        let listed = t.ok("work", &["ls-remote", "origin", name]);
        assert!(
            listed.trim_end().ends_with(&format!("\t{name}")),
            "{name}: {listed}"
        );
    }
    assert_refs_json_matches(&lake);
    t.ok(
        "work",
        &["push", "-q", "origin", "--delete", "refs/heads/fix#9"],
    );
    assert_eq!(lake.read("refs/heads/fix#9"), None);
}

fn a_lease_on_a_new_ref_expects_it_absent(place: Where) {
    let (t, lake) = setup(place);
    // Git sends the all-zero ID as the lease of a ref it expects not to exist.
    t.ok(
        "work",
        &[
            "push",
            "-q",
            "--force-with-lease=refs/heads/new:",
            "origin",
            "origin/main:refs/heads/new",
        ],
    );
    assert_eq!(lake.read("refs/heads/new").unwrap().trim(), vid(5));
    t.ok(
        "work",
        &[
            "push",
            "-q",
            "--force-with-lease",
            "origin",
            "origin/main:refs/heads/newer",
        ],
    );
    let err = t.fails(
        "work",
        &[
            "push",
            "--force-with-lease=refs/heads/staging:",
            "origin",
            "origin/main:refs/heads/staging",
        ],
    );
    assert!(err.contains("(stale info)"), "{err}");
    // One push cannot make both a branch and a folder of the same name.
    let err = t.fails(
        "work",
        &[
            "push",
            "origin",
            "origin/main:refs/heads/x",
            "origin/main:refs/heads/x/y",
        ],
    );
    assert!(err.contains("cannot create both"), "{err}");
    assert_eq!(lake.read("refs/heads/x"), None);
}

fn tag_push_creates_the_tag_and_updates_refs_json(place: Where) {
    let (t, lake) = setup(place);
    t.ok("work", &["tag", "v2026.11", "origin/main"]);
    let out = t.git("work", &["push", "origin", "v2026.11"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("* [new tag]         v2026.11 -> v2026.11"),
        "{err}"
    );
    assert_eq!(
        lake.read("refs/tags/v2026.11").unwrap(),
        format!("{}\n", vid(5))
    );
    assert_refs_json_matches(&lake);
    // Readers see it, with the same commit.
    let listed = t.ok("work", &["ls-remote", "origin", "refs/tags/v2026.11"]);
    assert!(
        listed.starts_with(&commit_of(&t, "origin/main")),
        "{listed}"
    );
    // Porcelain output is Git's own.
    t.ok("work", &["tag", "v2026.12", "origin/staging"]);
    let porcelain = t.ok("work", &["push", "--porcelain", "origin", "v2026.12"]);
    assert!(
        porcelain.contains("*\trefs/tags/v2026.12:refs/tags/v2026.12\t[new tag]"),
        "{porcelain}"
    );
}

fn tags_never_move_nor_disappear(place: Where) {
    let (t, lake) = setup(place);
    t.ok("work", &["tag", "-f", "v1", "origin/main"]);
    let err = t.fails("work", &["push", "origin", "v1"]);
    assert!(
        err.contains("! [rejected]        v1 -> v1 (already exists)"),
        "{err}"
    );
    // Even forced: the helper refuses, saying why (Git's "already exists" would come with
    // advice to fetch the tag, which is no help to someone who forced).
    let err = t.fails("work", &["push", "--force", "origin", "v1"]);
    assert!(
        err.contains("! [remote rejected] v1 -> v1 (tags in a lake never move)"),
        "{err}"
    );
    let err = t.fails("work", &["push", "origin", ":refs/tags/v1"]);
    assert!(err.contains("tags in a lake are never deleted"), "{err}");
    assert_eq!(lake.read("refs/tags/v1").unwrap().trim(), vid(2));
    // An annotated tag is refused with a hint to push the commit.
    t.ok("work", &["tag", "-a", "-m", "release", "v2", "origin/main"]);
    let err = t.fails("work", &["push", "origin", "v2"]);
    assert!(
        err.contains("is an annotated tag") && err.contains("v2^{commit}:refs/tags/v2"),
        "{err}"
    );
    t.ok("work", &["push", "origin", "v2^{commit}:refs/tags/v2"]);
    assert_eq!(lake.read("refs/tags/v2").unwrap().trim(), vid(5));
    assert_refs_json_matches(&lake);
}

fn branch_moves_fast_forward_force_and_lease(place: Where) {
    let (t, lake) = setup(place);
    // Promote: staging (3) to main's successor? main is 5; move staging forward to 5.
    let out = t.git(
        "work",
        &["push", "origin", "origin/main:refs/heads/staging"],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(lake.read("refs/heads/staging").unwrap().trim(), vid(5));
    // Roll back without force: Git refuses (non-fast-forward).
    let err = t.fails("work", &["push", "origin", "origin/main~2:refs/heads/main"]);
    assert!(err.contains("(non-fast-forward)"), "{err}");
    // With force: done, reported as a forced update.
    let out = t.git(
        "work",
        &["push", "--force", "origin", "origin/main~2:refs/heads/main"],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("(forced update)"), "{err}");
    assert_eq!(lake.read("refs/heads/main").unwrap().trim(), vid(3));
    t.ok("work", &["fetch", "-q"]);
    // A lease that matches: the non-fast-forward arrives without '+' and must pass.
    let side = commit_of(&t, "origin/side");
    let main = commit_of(&t, "origin/main");
    t.ok(
        "work",
        &[
            "push",
            &format!("--force-with-lease=refs/heads/main:{main}"),
            "origin",
            &format!("{side}:refs/heads/main"),
        ],
    );
    assert_eq!(lake.read("refs/heads/main").unwrap().trim(), vid(6));
    // A lease that does not match: stale info.
    let err = t.fails(
        "work",
        &[
            "push",
            &format!("--force-with-lease=refs/heads/main:{main}"),
            "origin",
            "v1:refs/heads/main",
        ],
    );
    assert!(err.contains("(stale info)"), "{err}");
    assert_eq!(lake.read("refs/heads/main").unwrap().trim(), vid(6));
    assert_refs_json_matches(&lake);
}

fn branch_create_and_delete(place: Where) {
    let (t, lake) = setup(place);
    t.ok(
        "work",
        &["push", "-q", "origin", "v1:refs/heads/release/2026"],
    );
    assert_eq!(lake.read("refs/heads/release/2026").unwrap().trim(), vid(2));
    let err = t.fails("work", &["push", "origin", "v1:refs/heads/release"]);
    assert!(err.contains("refs/heads/release/2026 exists"), "{err}");
    t.ok(
        "work",
        &["push", "-q", "origin", "--delete", "release/2026", "side"],
    );
    assert_eq!(lake.read("refs/heads/release/2026"), None);
    assert_eq!(lake.read("refs/heads/side"), None);
    let err = t.fails("work", &["push", "origin", "--delete", "main"]);
    assert!(
        err.contains("deletion of the current branch prohibited"),
        "{err}"
    );
    let err = t.fails(
        "work",
        &["push", "origin", "origin/main:refs/heads/Release"],
    );
    assert!(err.contains("lake paths are lower case"), "{err}");
    let err = t.fails("work", &["push", "origin", "origin/main:refs/notes/x"]);
    assert!(
        err.contains("a lake holds only refs/heads/* and refs/tags/*"),
        "{err}"
    );
    assert_refs_json_matches(&lake);
    assert!(!lake.refs_json().contains_key("refs/heads/side"));
}

fn commits_that_are_not_versions_are_refused(place: Where) {
    let (t, lake) = setup(place);
    let before = lake.ref_files();
    // A commit made locally.
    t.ok("work", &["commit", "-q", "--allow-empty", "-m", "local"]);
    let err = t.fails("work", &["push", "origin", "HEAD:refs/heads/mine"]);
    assert!(
        err.contains("is not a version of this lake")
            && err.contains("gains versions only through its writers"),
        "{err}"
    );
    // A version's commit amended (same message, trailer included, different tree).
    t.ok("work", &["checkout", "-q", "origin/main"]);
    std::fs::write(t.path("work/extra.txt"), "x").unwrap();
    t.ok("work", &["add", "extra.txt"]);
    t.ok("work", &["commit", "-q", "--amend", "--no-edit"]);
    let err = t.fails("work", &["push", "origin", "HEAD:refs/heads/amended"]);
    assert!(
        err.contains(&format!(
            "names version {}, whose commit in this lake is",
            vid(5)
        )),
        "{err}"
    );
    // A version of another lake.
    let mut other = LakeBuilder::new();
    other.version(77, &[], "elsewhere");
    other.branch("main", 77);
    let other_url = t.local_lake("other", &other);
    t.ok(
        "work",
        &["fetch", "-q", &other_url, "main:refs/remotes/other/main"],
    );
    let err = t.fails("work", &["push", "origin", "other/main:refs/heads/foreign"]);
    assert!(
        err.contains(&format!(
            "names version {}, which this lake does not hold",
            vid(77)
        )),
        "{err}"
    );
    // Push options mean nothing to a lake: Git is told so and stops.
    let err = t.fails(
        "work",
        &["push", "-o", "ci.skip", "origin", "v1:refs/tags/v9"],
    );
    assert!(err.contains("push-option"), "{err}");
    assert_eq!(lake.ref_files(), before, "nothing was written");
}

fn dry_run_writes_nothing(place: Where) {
    let (t, lake) = setup(place);
    let before = (lake.ref_files(), lake.read("refs.json"));
    let out = t.git(
        "work",
        &[
            "push",
            "--dry-run",
            "--force",
            "origin",
            "v1:refs/tags/v9",
            "v1:refs/heads/main",
            "origin/main:refs/heads/new",
        ],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("[new tag]")
            && err.contains("(forced update)")
            && err.contains("[new branch]"),
        "{err}"
    );
    assert_eq!((lake.ref_files(), lake.read("refs.json")), before);
    // A dry run still checks: a refused ref is reported.
    let err = t.fails(
        "work",
        &["push", "--dry-run", "origin", "origin/main:refs/tags/v1"],
    );
    assert!(err.contains("already exists"), "{err}");
}

fn atomic_is_all_or_nothing(place: Where) {
    let (t, lake) = setup(place);
    let before = lake.ref_files();
    let err = t.fails(
        "work",
        &[
            "push",
            "--atomic",
            "--force",
            "origin",
            "origin/main:refs/tags/v1",
            "origin/main:refs/tags/v7",
            "v1:refs/heads/main",
        ],
    );
    assert!(
        err.contains("(tags in a lake never move)") && err.contains("atomic push failed"),
        "{err}"
    );
    assert_eq!(lake.ref_files(), before);
    let out = t.git(
        "work",
        &[
            "push",
            "--atomic",
            "origin",
            "origin/main:refs/tags/v7",
            "origin/main:refs/heads/staging",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(lake.read("refs/tags/v7").unwrap().trim(), vid(5));
    assert_eq!(lake.read("refs/heads/staging").unwrap().trim(), vid(5));
    assert_refs_json_matches(&lake);
}

fn a_stale_refs_json_is_repaired_by_the_next_push(place: Where) {
    let (t, lake) = setup(place);
    // A writer died between its ref write and its refs.json write.
    lake.write("refs/tags/orphaned", &format!("{}\n", vid(4)));
    assert_ne!(lake.refs_json(), lake.ref_files());
    t.ok("work", &["tag", "next", "origin/main"]);
    t.ok("work", &["push", "-q", "origin", "next"]);
    assert_refs_json_matches(&lake);
    assert_eq!(lake.refs_json()["refs/tags/orphaned"], vid(4));
}

#[test]
fn read_only_http_refuses_a_push_before_anything() {
    let t = TestEnv::new();
    let url = t.local_lake("lake", &lake());
    t.ok(".", &["clone", "-q", &url, "work"]);
    let server = crate::support::http::serve(&t.path("lake"));
    let err = t.fails(
        "work",
        &[
            "push",
            &format!("fdl::{}", server.url),
            "origin/main:refs/tags/x",
        ],
    );
    assert!(
        err.contains("is served over plain HTTP, which is read-only: nothing was pushed"),
        "{err}"
    );
    assert!(!t.path("lake/refs/tags/x").exists());
}

#[test]
fn unknown_major_version_refuses_a_push() {
    let t = TestEnv::new();
    let url = t.local_lake("lake", &lake());
    t.ok(".", &["clone", "-q", &url, "work"]);
    std::fs::write(t.path("lake/fdl.json"), r#"{"fdl": "3.0"}"#).unwrap();
    let err = t.fails("work", &["push", "origin", "origin/main:refs/tags/x"]);
    assert!(
        err.contains("major version 3 this helper does not know"),
        "{err}"
    );
    assert!(!t.path("lake/refs/tags/x").exists());
}

#[test]
fn a_lock_left_by_a_killed_push_is_explained() {
    let t = TestEnv::new();
    let url = t.local_lake("lake", &lake());
    t.ok(".", &["clone", "-q", &url, "work"]);
    std::fs::write(
        t.path("lake/refs/tags/x.lock"),
        "pid 4000000 on nowhere since 1\n",
    )
    .unwrap();
    let err = t.fails("work", &["push", "origin", "origin/main:refs/tags/x"]);
    assert!(
        err.contains("refs/tags/x.lock exists: another writer holds this lock"),
        "{err}"
    );
    assert!(
        err.contains("probably left by a push that crashed") && err.contains("rm '"),
        "{err}"
    );
    // Lock files never show up as refs.
    let listed = t.ok("work", &["ls-remote", "origin"]);
    assert!(!listed.contains(".lock"), "{listed}");
}

#[test]
fn a_remote_may_be_named_like_a_subcommand() {
    let t = TestEnv::new();
    let url = t.local_lake("lake", &lake());
    t.ok(".", &["init", "-q", "work"]);
    t.ok("work", &["remote", "add", "verify", &url]);
    t.ok("work", &["fetch", "-q", "verify"]);
    t.ok(
        "work",
        &["push", "-q", "verify", "verify/main:refs/tags/by-name"],
    );
    assert!(t.path("lake/refs/tags/by-name").exists());
}

#[test]
fn mirror_push_and_moves_that_swap_a_folder_for_a_ref() {
    let t = TestEnv::new();
    let url = t.local_lake("lake", &lake());
    t.ok(".", &["clone", "-q", "--mirror", &url, "mirror.git"]);
    let copy = t.local_lake("copy", &lake());
    // The listing Git gets for a push has no HEAD, as from Git's own servers.
    let out = t.git("mirror.git", &["push", "--mirror", &copy]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    t.ok(".", &["clone", "-q", &url, "work"]);
    t.ok(
        "work",
        &["push", "-q", "origin", "origin/main:refs/heads/dd/ee"],
    );
    // Deleting dd/ee and creating dd in one push works, deletions going first.
    t.ok(
        "work",
        &[
            "push",
            "-q",
            "origin",
            ":refs/heads/dd/ee",
            "origin/main:refs/heads/dd",
        ],
    );
    assert_eq!(
        std::fs::read_to_string(t.path("lake/refs/heads/dd"))
            .unwrap()
            .trim(),
        vid(5)
    );
    // A ref with an upper-case name (written by another tool) can still be deleted.
    std::fs::write(t.path("lake/refs/heads/Upper"), vid(2)).unwrap();
    t.ok("work", &["fetch", "-q"]);
    t.ok("work", &["push", "-q", "origin", ":refs/heads/Upper"]);
    assert!(!t.path("lake/refs/heads/Upper").exists());
    // Git may fetch any commit of the lake by ID, not only ref tips.
    let inner = t
        .ok("work", &["rev-parse", "origin/main~2"])
        .trim()
        .to_string();
    t.ok(".", &["init", "-q", "bare-fetch"]);
    t.ok("bare-fetch", &["fetch", "-q", &url, &inner]);
    assert_eq!(
        t.ok("bare-fetch", &["rev-list", "--count", "FETCH_HEAD"]),
        "3\n"
    );
}

#[test]
fn a_lock_left_on_refs_json_is_explained_and_the_push_still_succeeds() {
    let t = TestEnv::new();
    let url = t.local_lake("lake", &lake());
    t.ok(".", &["clone", "-q", &url, "work"]);
    std::fs::write(
        t.path("lake/refs.json.lock"),
        "pid 4000000 on nowhere since 1\n",
    )
    .unwrap();
    let out = t.git(
        "work",
        &["push", "origin", "origin/main:refs/tags/locked-out"],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "the ref write decides: {err}");
    assert!(
        err.contains("warning: refs.json of lake") && err.contains("rm '"),
        "{err}"
    );
    assert!(t.path("lake/refs/tags/locked-out").exists());
}

/// `push.gpgSign=if-asked` (a common global setting) and `--signed=if-asked` push unsigned, with
/// the warning Git's own transports give where the receiving end takes no certificates;
/// `--signed` is refused before anything is written (issue 30, item 13).
#[test]
fn a_push_signed_if_asked_pushes_unsigned_as_to_a_bare_repository() {
    let (t, lake) = setup(Where::Local);
    t.ok(".", &["init", "-q", "--bare", "bare.git"]);
    let warning = "warning: not sending a push certificate since the receiving end does not support --signed push";
    for (args, dst) in [
        (vec!["push", "--signed=if-asked"], "refs/heads/a"),
        (vec!["-c", "push.gpgSign=if-asked", "push"], "refs/heads/b"),
    ] {
        for remote in ["origin", "../bare.git"] {
            let mut args = args.clone();
            let spec = format!("v1:{dst}");
            args.extend([remote, spec.as_str()]);
            let out = t.git("work", &args);
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(out.status.success(), "{remote} {args:?}: {stderr}");
            assert!(stderr.contains(warning), "{remote}: {stderr}");
            assert!(stderr.contains("* [new branch]"), "{remote}: {stderr}");
        }
        assert_eq!(lake.read(dst).unwrap().trim(), vid(2));
    }
    let err = t.fails("work", &["push", "--signed", "origin", "v1:refs/heads/c"]);
    assert!(
        err.contains("fatal: helper fdl does not support --signed"),
        "{err}"
    );
    assert_eq!(lake.read("refs/heads/c"), None);
    assert_refs_json_matches(&lake);
}
