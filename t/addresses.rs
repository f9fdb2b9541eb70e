//! A lake's address as a folder: a clone from a relative folder keeps working, and a `file://`
//! URL through a link and `..` reads what the system resolves.

use crate::support::{helper, lake, text, vid, LakeBuilder, TestEnv};

#[test]
fn a_file_url_through_a_link_and_dot_dot_reads_what_the_system_resolves() {
    let t = TestEnv::new();
    // d/link -> real/inner, so d/link/../lake is real/lake to the system, d/lake as text.
    t.local_lake("real/lake", &lake(4, 2));
    std::fs::create_dir_all(t.path("real/inner")).unwrap();
    std::fs::create_dir_all(t.path("d")).unwrap();
    std::os::unix::fs::symlink(t.path("real/inner"), t.path("d/link")).unwrap();
    t.local_lake("d/lake", &{
        let mut l = LakeBuilder::new();
        l.chain(1, 1);
        l.branch("decoy", 1).refs_json();
        l
    });
    let path = format!("{}/d/link/../lake", t.dir.path().display());
    let by_path = helper(&t, ".", &["ls", &format!("fdl::{path}")]);
    let by_url = helper(&t, ".", &["ls", &format!("fdl::file://{path}")]);
    assert!(text(&by_path.stdout).contains("refs/heads/main"));
    assert_eq!(text(&by_url.stdout), text(&by_path.stdout));
    // Git's own file:// remotes agree.
    t.ok(".", &["init", "-q", "--bare", "real/inner/../bare.git"]);
    let git_path = format!("{}/d/link/../bare.git", t.dir.path().display());
    assert!(t
        .git(".", &["ls-remote", &format!("file://{git_path}")])
        .status
        .success());
}

#[test]
fn clone_from_relative_folder_keeps_fetch_pull_push_working() {
    let t = TestEnv::new();
    let mut l = lake(3, 1);
    l.branch("staging", 2);
    t.local_lake("lake", &l);
    // The command in examples/README.md.
    t.ok(".", &["clone", "-q", "fdl::lake", "demo"]);
    let url = t.ok("demo", &["config", "remote.origin.url"]);
    let real = std::fs::canonicalize(t.path("lake")).unwrap();
    assert_eq!(
        url.trim(),
        format!("fdl::{}", real.display()),
        "recorded absolute, as Git does for its own local clones"
    );
    // With `..`, the folder as `cd` finds it.
    std::fs::create_dir(t.path("sub")).unwrap();
    t.ok(".", &["clone", "-q", "fdl::sub/../lake", "dotdot"]);
    let url = t.ok("dotdot", &["config", "remote.origin.url"]);
    assert_eq!(url.trim(), format!("fdl::{}", real.display()));
    let mut l2 = l;
    l2.version(4, &[3], "four");
    l2.branch("main", 4);
    l2.write_dir(&t.path("lake"));
    t.ok("demo", &["fetch", "-q"]);
    t.ok("demo", &["pull", "-q"]);
    assert_eq!(t.ok("demo", &["rev-list", "--count", "HEAD"]), "4\n");
    t.ok(
        "demo",
        &["push", "-q", "origin", "origin/staging:refs/heads/promoted"],
    );
    assert_eq!(
        std::fs::read_to_string(t.path("lake/refs/heads/promoted"))
            .unwrap()
            .trim(),
        vid(2)
    );
}
