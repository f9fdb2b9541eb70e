//! What a user reads, pinned whole (`insta` snapshots in `t/snapshots/`): errors, `doctor`,
//! `fsck`, `verify`, `catalog`, a refused push and a clone's progress. What changes from run to
//! run (the test's folder, a server's port, a time, an ETag) is replaced by a name in brackets.
//! A change to any of these outputs shows here as a diff to review (`cargo insta review`, or
//! `INSTA_UPDATE=always` to accept them all).

use std::process::Output;

use serde_json::json;

use crate::support::s3lite::{self, Conditions};
use crate::support::{helper, lake, text, vid, LakeBuilder, TestEnv};

/// What a command printed, its exit status first, with what varies named.
fn shown(t: &TestEnv, out: &Output) -> String {
    let mut s = format!("exit: {}\n", out.status.code().unwrap_or(-1));
    for (name, bytes) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
        let body = text(bytes).replace('\r', "\n");
        if !body.is_empty() {
            s.push_str(&format!("--- {name}\n{body}"));
        }
    }
    let root = t.dir.path().display().to_string();
    let canonical = std::fs::canonicalize(t.dir.path())
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| root.clone());
    s.replace(&canonical, "[TEST]").replace(&root, "[TEST]")
}

/// The filters for what a store or a clock decides: ports, times, ETags.
fn settings() -> insta::Settings {
    let mut s = insta::Settings::clone_current();
    s.set_snapshot_path("snapshots");
    s.set_prepend_module_to_snapshot(false);
    s.add_filter(r"127\.0\.0\.1:\d+", "[HOST]");
    s.add_filter(r"\b\d+(\.\d+)? ?(ms|µs|s)\b", "[TIME]");
    s.add_filter(r#""[0-9a-f]{32}(-\d+)?""#, "[ETAG]");
    s
}

#[test]
fn a_clone_of_a_folder_that_holds_no_lake() {
    let t = TestEnv::new();
    std::fs::create_dir_all(t.path("empty")).unwrap();
    let out = t.git(".", &["clone", "fdl::empty", "copy"]);
    settings().bind(|| insta::assert_snapshot!(shown(&t, &out)));
}

#[test]
fn a_clone_of_a_lake_with_an_unknown_store_option() {
    let t = TestEnv::new();
    let url = t.local_lake("lake", &lake(3, 1));
    let out = t.git(
        ".",
        &[
            "-c",
            "remote.origin.fdlOption=colour=blue",
            "clone",
            &url,
            "copy",
        ],
    );
    settings().bind(|| insta::assert_snapshot!(shown(&t, &out)));
}

#[test]
fn a_clone_with_progress() {
    let t = TestEnv::new();
    let url = t.local_lake("lake", &lake(5, 2));
    let out = t.git(".", &["clone", "--progress", &url, "copy"]);
    settings().bind(|| insta::assert_snapshot!(shown(&t, &out)));
}

#[test]
fn a_push_git_must_refuse() {
    let t = TestEnv::new();
    let url = t.local_lake("lake", &lake(4, 1));
    t.ok(".", &["clone", "-q", &url, "copy"]);
    // Moving main back two versions is no fast-forward; making v1 again is a tag in the way.
    t.ok("copy", &["tag", "-f", "v1", "HEAD"]);
    let back = t.git("copy", &["push", "origin", "HEAD~2:main"]);
    let tag = t.git("copy", &["push", "origin", "refs/tags/v1"]);
    let both = format!("{}{}", shown(&t, &back), shown(&t, &tag));
    settings().bind(|| insta::assert_snapshot!(both));
}

#[test]
fn fsck_of_a_lake_with_a_digest_that_is_none() {
    let t = TestEnv::new();
    let mut l = LakeBuilder::new();
    l.chain(1, 3);
    l.branch("main", 3);
    l.refs_json();
    let record = json!({"parents": [vid(2)], "message": "m", "sha256": "sha256:abc"});
    l.record(&vid(3), serde_json::to_vec(&record).unwrap());
    let url = t.local_lake("lake", &l);
    let out = helper(&t, ".", &["fsck", "--catalogs", &url]);
    settings().bind(|| insta::assert_snapshot!(shown(&t, &out)));
}

#[test]
fn verify_of_an_unsigned_lake() {
    let t = TestEnv::new();
    let url = t.local_lake("lake", &lake(3, 1));
    let out = helper(&t, ".", &["verify", &url]);
    settings().bind(|| insta::assert_snapshot!(shown(&t, &out)));
}

#[test]
fn catalog_of_a_checked_out_version() {
    let t = TestEnv::new();
    let url = t.local_lake("lake", &lake(3, 1));
    t.ok(".", &["clone", "-q", &url, "copy"]);
    t.ok("copy", &["checkout", "-q", "v1"]);
    let out = helper(&t, "copy", &["catalog", "HEAD", "-o", "v1.duckdb"]);
    settings().bind(|| insta::assert_snapshot!(shown(&t, &out)));
}

#[test]
fn doctor_on_a_folder() {
    let t = TestEnv::new();
    let url = t.local_lake("lake", &lake(3, 1));
    let out = helper(&t, ".", &["doctor", &url]);
    settings().bind(|| insta::assert_snapshot!(shown(&t, &out)));
}

#[test]
fn doctor_on_a_store_that_ignores_conditions() {
    let server = s3lite::start_with(16);
    server.put_files("snap", "lake/", &lake(3, 1).files);
    server.set_conditions(Conditions::Ignored);
    let t = server.test_env();
    let out = helper(&t, ".", &["doctor", "fdl::s3://snap/lake/"]);
    settings().bind(|| insta::assert_snapshot!(shown(&t, &out)));
}
