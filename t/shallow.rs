//! Issue 48, item 1: shallow clones and fetches with Git's semantics. Each case runs side by
//! side: the helper on a lake, and Git's own `file://` transport on a bare repository holding
//! the very same commits; the shallow file, the refs, the reachable commits must be the same.

use crate::support::{lake::LakeBuilder, TestEnv, Where};

/// main: 1 - 2 - 3 - 4 - 5 - 6 - 8 (a merge of 6 and 7); feature: 3 - 7; v1 at 2, v2 at 5.
/// Version n is n seconds after 2026-01-01T00:00:00Z.
fn merged_lake() -> LakeBuilder {
    let mut l = LakeBuilder::new();
    l.chain(1, 6);
    l.version(7, &[3], "side work");
    l.version(8, &[6, 7], "merge the side work");
    l.branch("main", 8).branch("feature", 7);
    l.tag("v1", 2).tag("v2", 5);
    l.refs_json();
    l
}

/// A bare repository holding every ref of the lake at `url`, as Git's own server would.
pub(crate) fn bare_of(t: &TestEnv, url: &str, name: &str) -> String {
    t.ok(".", &["init", "-q", "--bare", name]);
    let refs = ["refs/heads/*:refs/heads/*", "refs/tags/*:refs/tags/*"];
    t.ok(name, &["fetch", "-q", url, refs[0], refs[1]]);
    t.ok(name, &["symbolic-ref", "HEAD", "refs/heads/main"]);
    format!("file://{}", t.path(name).display())
}

fn read(t: &TestEnv, rel: &str) -> Option<String> {
    std::fs::read_to_string(t.path(rel)).ok()
}

/// What a repository holds: its shallow commits, refs and reachable commits, sorted.
fn state(t: &TestEnv, dir: &str) -> String {
    let shallow = read(t, &format!("{dir}/.git/shallow")).unwrap_or_default();
    let mut shallow: Vec<&str> = shallow.lines().collect();
    shallow.sort();
    let refs = t.ok(dir, &["for-each-ref", "--format=%(objectname) %(refname)"]);
    let mut commits: Vec<String> = t
        .ok(dir, &["rev-list", "--all"])
        .lines()
        .map(str::to_string)
        .collect();
    commits.sort();
    // Everything the refs reach down to the boundary is there.
    t.ok(dir, &["fsck", "--connectivity-only", "--no-dangling"]);
    format!(
        "shallow:\n{}\nrefs:\n{refs}\ncommits:\n{}",
        shallow.join("\n"),
        commits.join("\n")
    )
}

/// Clones with `clone` from the lake and from the bare repository, runs each of `fetches` in
/// both, and compares them after each step.
pub(crate) fn side_by_side(
    t: &TestEnv,
    lake: &str,
    bare: &str,
    case: usize,
    clone: &[&str],
    fetches: &[&[&str]],
) {
    let (a, b) = (format!("a{case}"), format!("b{case}"));
    for (url, dir) in [(lake, &a), (bare, &b)] {
        let mut args = vec!["clone", "-q"];
        args.extend(clone);
        args.extend([url, dir.as_str()]);
        t.ok(".", &args);
    }
    let what = |step: &str| format!("case {case}: clone {clone:?}{step}");
    assert_eq!(state(t, &a), state(t, &b), "{}", what(""));
    for f in fetches {
        for dir in [&a, &b] {
            let mut args = vec!["fetch", "-q"];
            args.extend(*f);
            t.ok(dir, &args);
        }
        assert_eq!(
            state(t, &a),
            state(t, &b),
            "{}",
            what(&format!(", then fetch {f:?}"))
        );
    }
}

/// Every case a CI job or a user meets, on one store.
fn every_case(place: Where) {
    let mut t = TestEnv::new();
    let lake = t.lake_at(place, "lake", &merged_lake());
    let bare = bare_of(&t, &lake.url, "bare.git");
    // Version 4 is 2026-01-01T00:00:04Z.
    let since_4 = "--shallow-since=2026-01-01T00:00:04Z";
    let cases: [(&[&str], &[&[&str]]); 17] = [
        (&["--depth", "1"], &[]),
        (&["--depth", "3"], &[]),
        (&["--depth", "2", "--no-single-branch"], &[]),
        (&["--depth", "1", "--branch", "v2"], &[]),
        (&["--depth", "1", "--branch", "feature"], &[]),
        (&[since_4, "--no-single-branch"], &[]),
        (&["--shallow-exclude", "v1"], &[]),
        (
            &[
                "--shallow-exclude",
                "v1",
                "--shallow-exclude",
                "refs/heads/feature",
            ],
            &[],
        ),
        (&["--depth", "1"], &[&["--deepen", "1"], &["--deepen", "2"]]),
        (&["--depth", "1"], &[&["--unshallow"]]),
        (
            &["--depth", "1", "--no-single-branch"],
            &[&["--depth", "4"]],
        ),
        (&["--depth", "3"], &[&["--depth", "1"]]),
        (&["--depth", "1"], &[&[since_4]]),
        (&["--depth", "1"], &[&["--shallow-exclude", "v1"]]),
        (&[], &[&["--depth", "2"]]),
        (
            &["--depth", "2", "--no-single-branch"],
            &[&["--deepen", "1"], &["--unshallow"]],
        ),
        (
            &["--depth", "1"],
            &[&["origin", "feature"], &["--depth", "2", "origin", "v1"]],
        ),
    ];
    for (n, (clone, fetches)) in cases.iter().enumerate() {
        side_by_side(&t, &lake.url, &bare, n, clone, fetches);
    }
}

#[test]
fn shallow_clones_and_fetches_match_git_on_a_folder() {
    every_case(Where::Local);
}

#[test]
fn shallow_clones_and_fetches_match_git_on_s3() {
    every_case(Where::S3);
}

#[test]
fn shallow_clones_and_fetches_match_git_on_gcs_azure_and_seaweedfs() {
    for place in [Where::Gcs, Where::Azure, Where::SeaweedFs] {
        every_case(place);
    }
}

#[test]
fn shallow_clones_and_fetches_match_git_over_plain_http() {
    let t = TestEnv::new();
    merged_lake().write_dir(&t.path("lake"));
    let server = crate::support::http::serve(&t.path("lake"));
    let url = format!("fdl::{}", server.url);
    let bare = bare_of(&t, &url, "bare.git");
    side_by_side(
        &t,
        &url,
        &bare,
        0,
        &["--depth", "1"],
        &[&["--deepen", "2"], &["--unshallow"]],
    );
    side_by_side(&t, &url, &bare, 1, &["--shallow-exclude", "v1"], &[]);
}

#[test]
fn a_depth_one_clone_holds_one_version_and_a_plain_fetch_brings_what_is_new() {
    let t = TestEnv::new();
    let mut l = merged_lake();
    let url = t.local_lake("lake", &l);
    let bare = bare_of(&t, &url, "bare.git");
    t.ok(".", &["clone", "-q", "--depth", "1", &url, "tip"]);
    t.ok(".", &["clone", "-q", "--depth", "1", &bare, "ref"]);
    // The commit, its tree and its two files.
    let objects = t.ok("tip", &["count-objects", "-v"]);
    assert!(objects.contains("in-pack: 4"), "{objects}");
    assert_eq!(t.ok("tip", &["rev-list", "--count", "HEAD"]), "1\n");
    // The lake grows; a fetch without --depth brings the new versions down to what it holds.
    l.version(9, &[8], "new work");
    l.version(10, &[9], "more");
    l.branch("main", 10).refs_json();
    l.write_dir(&t.path("lake"));
    let refs = ["+refs/heads/*:refs/heads/*", "refs/tags/*:refs/tags/*"];
    t.ok("bare.git", &["fetch", "-q", &url, refs[0], refs[1]]);
    t.ok("tip", &["fetch", "-q"]);
    t.ok("ref", &["fetch", "-q"]);
    assert_eq!(t.ok("tip", &["rev-list", "--count", "origin/main"]), "3\n");
    assert_eq!(state(&t, "tip"), state(&t, "ref"));
}

#[test]
fn shallow_requests_that_cannot_be_met_say_why_and_change_nothing() {
    let t = TestEnv::new();
    let url = t.local_lake("lake", &merged_lake());
    let err = t.fails(
        ".",
        &["clone", "-q", "--shallow-exclude", "nope", &url, "x"],
    );
    assert!(
        err.contains("--shallow-exclude=nope names no ref of the lake"),
        "{err}"
    );
    let err = t.fails(
        ".",
        &["clone", "-q", "--shallow-since", "2030-01-01", &url, "y"],
    );
    assert!(
        err.contains("no commits selected for shallow requests"),
        "{err}"
    );
    t.ok(".", &["clone", "-q", "--depth", "1", &url, "z"]);
    let shallow = read(&t, "z/.git/shallow").unwrap();
    let err = t.fails("z", &["fetch", "-q", "--shallow-exclude", "nope"]);
    assert!(err.contains("names no ref"), "{err}");
    assert_eq!(read(&t, "z/.git/shallow").unwrap(), shallow);
}

#[test]
fn unshallow_refuses_a_boundary_the_lake_now_contradicts() {
    let t = TestEnv::new();
    let mut l = merged_lake();
    let url = t.local_lake("lake", &l);
    t.ok(".", &["clone", "-q", "--depth", "1", &url, "c"]);
    let shallow = read(&t, "c/.git/shallow").unwrap();
    // Version 6, below the boundary, is rewritten in the lake: the tip's commit, which the
    // clone took with its parents' IDs, would now be another.
    l.version(6, &[5], "rewritten history");
    l.write_dir(&t.path("lake"));
    let err = t.fails("c", &["fetch", "-q", "--unshallow"]);
    assert!(err.contains("was rewritten in the lake"), "{err}");
    assert_eq!(
        read(&t, "c/.git/shallow").unwrap(),
        shallow,
        "nothing changed"
    );
    assert_eq!(t.ok("c", &["rev-list", "--count", "HEAD"]), "1\n");
}

#[test]
fn fsck_in_a_shallow_clone_says_what_lies_below_its_boundary() {
    let t = TestEnv::new();
    let url = t.local_lake("lake", &merged_lake());
    t.ok(".", &["clone", "-q", "--depth", "1", &url, "c"]);
    let out = crate::support::run::helper(&t, "c", &["fsck", "origin"]);
    let err = crate::support::run::text(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("note: this repository is shallow (1 shallow commit): it holds 1 of the 8 versions checked; the other 7 lie below its boundary and were checked in the lake only"),
        "{err}"
    );
    assert!(err.contains("0 problems"), "{err}");
}
