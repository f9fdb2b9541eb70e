//! Pinning a lake version from another repository with a submodule: `git submodule add
//! fdl::<lake> data`, and a fresh `git clone --recurse-submodules` that checks out the pinned
//! version even after the lake's branch moved on. Git runs remote helpers for submodules only
//! when `protocol.fdl.allow` says so; without it, the error says what to set.

use crate::support::{lake, vid, TestEnv};

fn pinned_version(t: &TestEnv, dir: &str) -> String {
    t.ok(
        dir,
        &[
            "log",
            "-1",
            "--format=%(trailers:key=FDL-Version,valueonly)",
        ],
    )
    .trim()
    .to_string()
}

#[test]
fn a_submodule_pins_a_lake_version() {
    let t = TestEnv::new();
    let mut l = lake(3, 2);
    let url = t.local_lake("lake", &l);
    t.ok(".", &["init", "-q", "--bare", "parent.git"]);
    t.ok(".", &["clone", "-q", "parent.git", "parent"]);

    // Without permission Git refuses the helper in a submodule, and says why.
    let err = t.fails("parent", &["submodule", "add", &url, "data"]);
    assert!(err.contains("transport 'fdl' not allowed"), "{err}");

    // The user's own choice, in their configuration (here the test's HOME).
    t.ok(".", &["config", "--global", "protocol.fdl.allow", "always"]);
    t.ok("parent", &["submodule", "add", &url, "data"]);
    // Pin the release v1 rather than the branch tip.
    t.ok("parent/data", &["checkout", "-q", "v1"]);
    assert_eq!(pinned_version(&t, "parent/data"), vid(2));
    t.ok("parent", &["add", "data"]);
    t.ok(
        "parent",
        &["commit", "-q", "-m", "Pin the sales lake at v1"],
    );
    t.ok("parent", &["push", "-q", "origin", "HEAD:main"]);
    let gitmodules = std::fs::read_to_string(t.path("parent/.gitmodules")).unwrap();
    assert!(gitmodules.contains(&format!("url = {url}")), "{gitmodules}");

    // The lake moves on; a fresh clone still checks out the pinned version.
    l.version(4, &[3], "Load batch 4");
    l.branch("main", 4);
    l.refs_json();
    l.write_dir(&t.path("lake"));
    t.ok(
        ".",
        &["clone", "-q", "--recurse-submodules", "parent.git", "fresh"],
    );
    assert_eq!(pinned_version(&t, "fresh/data"), vid(2));
    let pinned = t.ok("fresh", &["ls-tree", "HEAD", "data"]);
    let head = t.ok("fresh/data", &["rev-parse", "HEAD"]);
    assert!(pinned.contains(head.trim()), "{pinned} vs {head}");
    // Moving the pin is an ordinary submodule update.
    t.ok("fresh/data", &["fetch", "-q", "origin"]);
    t.ok("fresh/data", &["checkout", "-q", "origin/main"]);
    assert_eq!(pinned_version(&t, "fresh/data"), vid(4));

    // Without the setting, the recursive clone fails on the submodule with Git's message.
    t.ok(
        ".",
        &["config", "--global", "--unset", "protocol.fdl.allow"],
    );
    let err = t.fails(
        ".",
        &[
            "clone",
            "-q",
            "--recurse-submodules",
            "parent.git",
            "refused",
        ],
    );
    assert!(err.contains("transport 'fdl' not allowed"), "{err}");
}
