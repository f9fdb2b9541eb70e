//! The read path as the repository it fills sees it: its cache, Git's progress, the pack a
//! clone vouches for (`lock`, `connectivity-ok`), a SHA-256 repository, and a failed clone that
//! leaves no folder behind.

use crate::read::small_lake;
use crate::support::{vid, LakeBuilder, TestEnv, Where};

#[test]
fn deleting_the_cache_changes_nothing_and_warm_listing_reads_no_versions() {
    let t = TestEnv::new();
    let mut l = LakeBuilder::new();
    l.chain(1, 50);
    l.branch("main", 50).tag("v1", 10);
    let url = t.local_lake("lake", &l);
    t.ok(".", &["clone", "-q", &url, "work"]);
    let cold = t.ok("work", &["ls-remote", "origin"]);

    let mut traced = t.command("git", "work", &["ls-remote", "origin"]);
    traced.env("GIT_REMOTE_FDL_DEBUG", "1");
    let out = traced.output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(String::from_utf8_lossy(&out.stdout), cold);
    assert!(
        !err.contains("version.json"),
        "a warm ls-remote reads no version: {err}"
    );
    assert!(err.contains("] <- list"), "the exchange is traced: {err}");

    std::fs::remove_dir_all(t.path("work/.git/fdl")).unwrap();
    assert_eq!(t.ok("work", &["ls-remote", "origin"]), cold);
    assert!(t.path("work/.git/fdl").exists(), "the cache is rebuilt");
}

#[test]
fn fetch_after_gc_pruned_objects_rebuilds_them() {
    let t = TestEnv::new();
    let mut l = LakeBuilder::new();
    l.chain(1, 5);
    l.branch("main", 5).branch("side", 5);
    let url = t.local_lake("lake", &l);
    t.ok(".", &["clone", "-q", "--bare", &url, "work.git"]);
    let history = t.ok("work.git", &["rev-list", "--objects", "main"]);
    let objects: Vec<&str> = history
        .split_whitespace()
        .filter(|w| w.len() == 40)
        .collect();
    assert!(objects.len() > 10, "commits, trees and blobs: {history}");
    // Forget everything locally but keep the cache: the helper must notice and rebuild.
    t.ok("work.git", &["update-ref", "-d", "refs/heads/side"]);
    t.ok("work.git", &["update-ref", "-d", "refs/heads/main"]);
    t.ok("work.git", &["symbolic-ref", "HEAD", "refs/heads/none"]);
    t.ok("work.git", &["reflog", "expire", "--expire=now", "--all"]);
    t.ok("work.git", &["gc", "-q", "--prune=now"]);
    // The objects are really gone (not merely unnamed), and the cache still maps every version
    // to its commit: only a helper that checks the repository sends them again.
    for id in &objects {
        let out = t.git("work.git", &["cat-file", "-e", id]);
        assert_eq!(out.status.code(), Some(1), "{id} survived gc");
    }
    let count = t.ok("work.git", &["count-objects", "-v"]);
    assert!(
        count.contains("count: 0\n") && count.contains("in-pack: 0\n"),
        "{count}"
    );
    let cached = std::fs::read_dir(t.path("work.git/fdl"))
        .unwrap()
        .filter(|e| e.as_ref().unwrap().path().is_dir())
        .count();
    assert_eq!(cached, 1, "the cache of the one lake is kept");
    t.ok("work.git", &["fetch", "-q", "origin", "main:main"]);
    assert_eq!(
        t.ok("work.git", &["rev-list", "--objects", "main"]),
        history
    );
    for id in &objects {
        t.ok("work.git", &["cat-file", "-e", id]);
    }
    t.ok("work.git", &["fsck", "--strict"]);
}

#[test]
fn progress_is_shown_when_asked_and_silent_otherwise() {
    let t = TestEnv::new();
    let url = t.local_lake("lake", &small_lake());
    let out = t.git(".", &["clone", "--progress", &url, "a"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("Reading versions: 100% (3/3), done."), "{err}");
    assert!(
        err.contains("Fetched 3 versions (12 objects) from lake"),
        "{err}"
    );
    let out = t.git(".", &["clone", "-q", &url, "b"]);
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
}

#[test]
fn a_sha256_repository_gets_a_clear_error() {
    let t = TestEnv::new();
    let url = t.local_lake("lake", &small_lake());
    t.ok(".", &["init", "-q", "--object-format=sha256", "work"]);
    t.ok("work", &["remote", "add", "origin", &url]);
    let err = t.fails("work", &["fetch", "origin"]);
    assert!(
        err.contains(
            "fatal: this repository uses sha256 object IDs, but lakes map to SHA-1 commits"
        ),
        "{err}"
    );
    assert!(
        err.contains("hint: clone the lake into a SHA-1 repository"),
        "{err}"
    );
}

#[test]
fn a_listing_reads_dataset_json_only_of_reachable_versions() {
    let t = TestEnv::new();
    let mut l = LakeBuilder::new();
    l.chain(1, 10);
    l.version(99, &[3], "abandoned, no ref names it");
    l.branch("main", 10);
    let url = t.local_lake("lake", &l);
    let out = t
        .command("git", ".", &["clone", "-q", &url, "work"])
        .env("GIT_REMOTE_FDL_DEBUG", "1")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains(&format!("GET versions/{}/version.json", vid(99))),
        "history was listed: {err}"
    );
    assert!(
        !err.contains(&format!("GET versions/{}/dataset.json", vid(99))),
        "{err}"
    );
    assert!(
        err.contains(&format!("GET versions/{}/dataset.json", vid(5))),
        "{err}"
    );
    assert_eq!(t.ok("work", &["rev-list", "--count", "HEAD"]), "10\n");
}

#[test]
fn a_clone_vouches_for_its_pack_so_git_skips_its_walk_and_no_keep_file_is_left() {
    let mut t = TestEnv::new();
    let mut l = small_lake();
    let url = t.local_lake("lake", &l);
    t.set("GIT_REMOTE_FDL_DEBUG", "1");
    let trace = stderr_of_ok(&t, ".", &["clone", "-q", "--bare", &url, "c.git"]);
    let pack_dir = t.path("c.git/objects/pack");
    let lock = trace
        .lines()
        .find_map(|l| l.split_once("-> lock ").map(|(_, p)| p.to_string()))
        .unwrap_or_else(|| panic!("no lock line:\n{trace}"));
    assert!(
        lock.starts_with(&pack_dir.display().to_string()) && lock.ends_with(".keep"),
        "{lock}"
    );
    assert!(trace.contains("-> connectivity-ok\n"), "{trace}");
    // Git removed the .keep file once the clone was done; the repository is whole.
    let left: Vec<String> = std::fs::read_dir(&pack_dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !n.ends_with(".pack") && !n.ends_with(".idx"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
    t.ok("c.git", &["fsck", "--no-dangling"]);
    // A fetch on top of history already there vouches for nothing.
    l.chain(4, 4);
    l.branch("main", 4);
    l.write_dir(&t.path("lake"));
    let fetch = ["fetch", "-q", "origin", "+refs/heads/*:refs/heads/*"];
    let trace = stderr_of_ok(&t, "c.git", &fetch);
    assert!(
        !trace.contains("connectivity-ok") && !trace.contains("-> lock"),
        "{trace}"
    );
    t.ok("c.git", &["fsck", "--no-dangling"]);
}

#[test]
fn a_repository_whose_path_a_protocol_line_cannot_carry_gets_no_lock_line() {
    // Git removes the file a `lock` line names: a line break in the path would make it read
    // another path, so none is named, and Git checks the objects itself.
    let mut t = TestEnv::new();
    let url = t.local_lake("lake", &small_lake());
    t.set("GIT_REMOTE_FDL_DEBUG", "1");
    let clone = ["clone", "-q", "--bare", &url, "a\nb.git"];
    let trace = stderr_of_ok(&t, ".", &clone);
    assert!(
        !trace.contains("-> lock") && !trace.contains("connectivity-ok"),
        "{trace}"
    );
    assert!(!trace.contains("unexpectedly said"), "{trace}");
    let pack_dir = t.path("a\nb.git/objects/pack");
    let keeps = std::fs::read_dir(&pack_dir)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "keep")
        })
        .count();
    assert_eq!(keeps, 0);
    t.ok("a\nb.git", &["fsck", "--no-dangling"]);
}

/// Runs git, insists it succeeds, and returns what it wrote on stderr (a trace, here).
fn stderr_of_ok(t: &TestEnv, cwd: &str, args: &[&str]) -> String {
    let out = t.git(cwd, args);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "git {args:?}:\n{err}");
    err
}

/// Whether a helper serving `url` still runs (`/proc`: every process's command line).
fn helper_runs_for(url: &str) -> bool {
    let bare = url.trim_start_matches("fdl::");
    std::fs::read_dir("/proc").unwrap().flatten().any(|p| {
        let cmdline = std::fs::read(p.path().join("cmdline")).unwrap_or_default();
        let cmdline = String::from_utf8_lossy(&cmdline);
        cmdline.contains("git-remote-fdl") && cmdline.contains(bare)
    })
}

/// `git clone --branch nope` fails as Git does and Git removes the folder; the helper, ending
/// after Git, must not make it again (issue 30, item 12), so that the clone can be retried.
#[test]
fn a_failed_clone_leaves_no_folder_and_can_be_retried() {
    for place in [Where::Local, Where::S3, Where::Gcs, Where::Azure] {
        let mut t = TestEnv::new();
        let lake = t.lake_at(place, "lake", &small_lake());
        let err = t.fails(".", &["clone", "--branch", "nope", &lake.url, "c"]);
        assert!(
            err.contains("fatal: Remote branch nope not found in upstream origin"),
            "{place:?}: {err}"
        );
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while helper_runs_for(&lake.url) && std::time::Instant::now() < deadline {
            std::thread::yield_now();
        }
        assert!(
            !helper_runs_for(&lake.url),
            "{place:?}: the helper still runs"
        );
        assert!(!t.path("c").exists(), "{place:?}: c was made again");
        t.ok(".", &["clone", "-q", &lake.url, "c"]);
    }
}

/// Issue 30, item 16: while reading versions the progress showed a bare count (`Reading
/// versions: 129`) until the end; Git shows a total and a percentage as soon as it knows one
/// (`Receiving objects:  45% (900/2000)`). The listing knows it: every line has it.
fn progress_has_a_total_from_the_first_line(place: Where) {
    let mut t = TestEnv::new();
    let mut l = LakeBuilder::new();
    l.chain(1, 400);
    l.branch("main", 400).refs_json();
    let lake = t.lake_at(place, "lake", &l);
    let out = t.git(".", &["clone", "--progress", "--bare", &lake.url, "a.git"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let lines: Vec<&str> = err
        .split(['\r', '\n'])
        .filter(|l| l.starts_with("Reading versions:"))
        .collect();
    assert!(lines.len() > 1, "{err}");
    for line in &lines {
        assert!(
            line.contains("% (") && line.contains("/400)"),
            "{line:?} in {err}"
        );
    }
    assert!(
        err.contains("Reading versions: 100% (400/400), done."),
        "{err}"
    );
}

#[test]
fn progress_has_a_total_from_the_first_line_in_a_folder() {
    progress_has_a_total_from_the_first_line(Where::Local);
}

#[test]
fn progress_has_a_total_from_the_first_line_on_s3() {
    progress_has_a_total_from_the_first_line(Where::S3);
}
