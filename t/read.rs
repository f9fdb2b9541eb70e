//! The read path against a lake in a local folder: `git ls-remote`, `clone`, `fetch`, with real
//! git. Each test builds its own lake with the test writer.

use serde_json::json;

use crate::support::{parse_ls_remote, vid, LakeBuilder, TestEnv};

/// main: 1-2-3, tag v1 at 1, branch team/etl at 2.
pub(crate) fn small_lake() -> LakeBuilder {
    let mut l = LakeBuilder::new();
    l.chain(1, 3);
    l.branch("main", 3).branch("team/etl", 2).tag("v1", 1);
    l.put("refs/requests/17", vid(2));
    l.put("notes.txt", "a file a host added at the root");
    l
}

#[test]
fn ls_remote_lists_branches_tags_and_head() {
    let t = TestEnv::new();
    let url = t.local_lake("lake", &small_lake());
    let out = t.ok(".", &["ls-remote", &url]);
    let refs = parse_ls_remote(&out);
    let names: Vec<&str> = refs.iter().map(|(_, n)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "HEAD",
            "refs/heads/main",
            "refs/heads/team/etl",
            "refs/tags/v1"
        ],
        "{out}"
    );
    assert_eq!(refs[0].0, refs[1].0, "HEAD has main's commit");
    assert!(refs.iter().all(|(oid, _)| oid.len() == 40));
    assert!(
        !out.contains("requests"),
        "refs/requests are the host's own: {out}"
    );

    let symref = t.ok(".", &["ls-remote", "--symref", &url, "HEAD"]);
    assert!(
        symref.starts_with("ref: refs/heads/main\tHEAD\n"),
        "{symref}"
    );

    let heads = t.ok(".", &["ls-remote", "--heads", &url]);
    assert_eq!(parse_ls_remote(&heads).len(), 2, "{heads}");
    let tags = t.ok(".", &["ls-remote", "--tags", &url]);
    assert_eq!(
        parse_ls_remote(&tags),
        vec![(refs[3].0.clone(), "refs/tags/v1".to_string())]
    );
}

#[test]
fn clone_checks_out_main_with_history() {
    let t = TestEnv::new();
    let url = t.local_lake("lake", &small_lake());
    t.ok(".", &["clone", "-q", &url, "work"]);
    assert_eq!(
        t.ok("work", &["rev-parse", "--abbrev-ref", "HEAD"]),
        "main\n"
    );
    assert_eq!(t.ok("work", &["rev-list", "--count", "HEAD"]), "3\n");
    assert_eq!(
        t.ok("work", &["log", "-1", "--format=%s%n%b"]),
        format!("Load batch 3\nFDL-Version: {}\n\n", vid(3))
    );
    let files = t.ok("work", &["ls-tree", "--name-only", "HEAD"]);
    assert_eq!(files, "dataset.json\nversion.json\n");
    assert!(t
        .ok("work", &["show", "HEAD:dataset.json"])
        .contains("\"rows\": 30"));
    let branches = t.ok("work", &["branch", "-r"]);
    assert!(branches.contains("origin/team/etl"), "{branches}");
    assert_eq!(t.ok("work", &["tag"]), "v1\n");
    t.ok("work", &["fsck", "--strict"]);
    let diff = t.ok(
        "work",
        &["diff", "--stat", "v1", "main", "--", "dataset.json"],
    );
    assert!(diff.contains("dataset.json"), "{diff}");
    // Objects arrive as a pack, not loose files.
    let count = t.ok("work", &["count-objects", "-v"]);
    assert!(count.contains("count: 0\n"), "{count}");
}

/// A lake whose HEAD names a branch that does not exist is listed as Git's own server lists a
/// repository with a dangling HEAD over protocol v0 (the advertisement a remote helper's `list`
/// is): no HEAD line and no `ref:` line, with a warning that says why. A clone then succeeds and,
/// as Git does for such a server, checks out the local default branch (`main` here) when the
/// lake has it. (Over protocol v2 Git's server also names the unborn HEAD, and a clone checks
/// nothing out; a remote helper's listing has no way to say that.)
#[test]
fn a_head_naming_a_missing_branch_is_left_out_as_git_does() {
    let t = TestEnv::new();
    let mut l = small_lake();
    l.put("HEAD", "ref: refs/heads/gone\n");
    let url = t.local_lake("lake", &l);
    let warning = format!(
        "warning: lake '{}': HEAD names refs/heads/gone, which does not exist\n",
        t.path("lake").display()
    );
    let run = |cwd: &str, args: &[&str]| {
        let out = t.git(cwd, args);
        let err = String::from_utf8(out.stderr).unwrap();
        assert!(out.status.success(), "git {args:?}: {err}");
        (String::from_utf8(out.stdout).unwrap(), err)
    };

    let (listed, err) = run(".", &["ls-remote", "--symref", &url]);
    assert_eq!(err, warning);
    let names: Vec<String> = parse_ls_remote(&listed)
        .into_iter()
        .map(|(_, n)| n)
        .collect();
    assert_eq!(
        names,
        ["refs/heads/main", "refs/heads/team/etl", "refs/tags/v1"],
        "{listed}"
    );
    assert!(
        !listed.contains("HEAD") && !listed.contains("ref:"),
        "{listed}"
    );
    assert_eq!(
        run(".", &["ls-remote", "--symref", &url, "HEAD"]),
        (String::new(), warning.clone())
    );

    // Git's own server: the same refs in a bare repository whose HEAD dangles the same way.
    t.ok(".", &["clone", "-q", "--mirror", &url, "git.git"]);
    t.ok("git.git", &["symbolic-ref", "HEAD", "refs/heads/gone"]);
    let git_url = format!("file://{}", t.path("git.git").display());
    for protocol in ["protocol.version=0", "protocol.version=2"] {
        let (git_listed, git_err) = run(".", &["-c", protocol, "ls-remote", "--symref", &git_url]);
        assert_eq!((&listed, git_err.as_str()), (&git_listed, ""), "{protocol}");
    }

    let (_, err) = run(".", &["clone", &url, "work"]);
    assert_eq!(err, format!("Cloning into 'work'...\n{warning}"));
    run(
        ".",
        &[
            "-c",
            "protocol.version=0",
            "clone",
            "-q",
            &git_url,
            "git-work",
        ],
    );
    let main = &parse_ls_remote(&listed)[0].0;
    for clone in ["work", "git-work"] {
        assert_eq!(
            t.ok(clone, &["symbolic-ref", "HEAD"]),
            "refs/heads/main\n",
            "{clone}"
        );
        assert_eq!(t.ok(clone, &["rev-parse", "HEAD"]).trim(), main, "{clone}");
        assert_eq!(
            t.ok(clone, &["config", "branch.main.merge"]),
            "refs/heads/main\n"
        );
        // No origin/HEAD: the remote named no branch.
        assert_eq!(
            t.git(
                clone,
                &["rev-parse", "-q", "--verify", "refs/remotes/origin/HEAD"]
            )
            .status
            .code(),
            Some(1),
            "{clone}"
        );
        assert_eq!(t.ok(clone, &["status", "--porcelain"]), "", "{clone}");
    }
    assert_eq!(
        t.ok(
            "work",
            &["for-each-ref", "--format=%(objectname) %(refname)"]
        ),
        t.ok(
            "git-work",
            &["for-each-ref", "--format=%(objectname) %(refname)"]
        )
    );

    // A bare clone names the same default branch, as Git's does.
    run(".", &["clone", "-q", "--bare", &url, "bare.git"]);
    run(
        ".",
        &[
            "-c",
            "protocol.version=0",
            "clone",
            "-q",
            "--bare",
            &git_url,
            "git-bare.git",
        ],
    );
    for clone in ["bare.git", "git-bare.git"] {
        assert_eq!(
            t.ok(clone, &["symbolic-ref", "HEAD"]),
            "refs/heads/main\n",
            "{clone}"
        );
    }
}

/// Git may ask for a commit it saw that no ref holds: it is found among every commit known,
/// though a clone asks for refs only. One nobody has is refused, naming it.
#[test]
fn a_commit_no_ref_holds_is_fetched_by_its_id() {
    let t = TestEnv::new();
    let url = t.local_lake("lake", &small_lake());
    t.ok(".", &["clone", "-q", &url, "work"]);
    let first = t.ok("work", &["rev-parse", "main~2"]).trim().to_string();
    t.ok(".", &["init", "-q", "empty"]);
    t.ok("empty", &["fetch", "-q", &url, &first]);
    assert_eq!(t.ok("empty", &["rev-parse", "FETCH_HEAD"]).trim(), first);
    let none = "0123456789012345678901234567890123456789";
    let out = t.git("empty", &["fetch", "-q", &url, none]);
    assert!(!out.status.success());
    let lake = t.path("lake").display().to_string();
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!("fatal: lake '{lake}': Git asked for {none}, which no ref of the lake holds\n")
    );
}

#[test]
fn clone_bare() {
    let t = TestEnv::new();
    let url = t.local_lake("lake", &small_lake());
    t.ok(".", &["clone", "-q", "--bare", &url, "bare.git"]);
    assert_eq!(t.ok("bare.git", &["rev-list", "--count", "main"]), "3\n");
    assert_eq!(
        t.ok("bare.git", &["symbolic-ref", "HEAD"]),
        "refs/heads/main\n"
    );
}

#[test]
fn fetch_brings_new_versions_and_prune_removes_deleted_branches() {
    let t = TestEnv::new();
    let mut lake = small_lake();
    let url = t.local_lake("lake", &lake);
    t.ok(".", &["clone", "-q", &url, "work"]);
    let before = t.ok("work", &["rev-parse", "origin/main"]);

    lake.chain(4, 6);
    lake.branch("main", 6).tag("v2", 5);
    lake.remove("refs/heads/team/etl");
    std::fs::remove_file(t.path("lake/refs/heads/team/etl")).unwrap();
    lake.write_dir(&t.path("lake"));

    let out = t.git("work", &["fetch", "--prune", "origin"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("[deleted]") && err.contains("origin/team/etl"),
        "{err}"
    );
    assert_eq!(t.ok("work", &["rev-list", "--count", "origin/main"]), "6\n");
    assert_eq!(t.ok("work", &["rev-parse", "origin/main~3"]), before);
    assert_eq!(t.ok("work", &["tag"]), "v1\nv2\n");
    // Nothing new: fetch succeeds and changes nothing.
    let again = t.git("work", &["fetch", "origin"]);
    assert!(again.status.success());
    assert_eq!(String::from_utf8_lossy(&again.stderr), "");
}

#[test]
fn merge_versions_become_merge_commits() {
    let t = TestEnv::new();
    let mut l = LakeBuilder::new();
    l.version(1, &[], "root");
    l.version(2, &[1], "left");
    l.version(3, &[1], "right");
    l.version(4, &[2, 3], "merge right into left");
    l.branch("main", 4);
    let url = t.local_lake("lake", &l);
    t.ok(".", &["clone", "-q", &url, "work"]);
    let parents = t.ok("work", &["log", "-1", "--format=%P"]);
    let p: Vec<&str> = parents.split_whitespace().collect();
    assert_eq!(p.len(), 2);
    assert_eq!(t.ok("work", &["log", "-1", "--format=%s", p[0]]), "left\n");
    assert_eq!(t.ok("work", &["log", "-1", "--format=%s", p[1]]), "right\n");
    assert_eq!(t.ok("work", &["rev-list", "--count", "HEAD"]), "4\n");
}

#[test]
fn non_ascii_authors_and_messages_and_author_forms() {
    let t = TestEnv::new();
    let mut l = LakeBuilder::new();
    l.version_by(
        1,
        &[],
        "Données chargées: ventes 2026 ✓\r\n\r\n\r\nDétails  \n",
        json!("Zoë Çelik <zoe@example.org>"),
    );
    l.version_by(
        2,
        &[1],
        "",
        json!({"name": "Jürgen", "email": "j@example.org", "extra": 1}),
    );
    l.version_by(3, &[2], "plain", json!("李雷"));
    l.branch("main", 3);
    let url = t.local_lake("lake", &l);
    t.ok(".", &["clone", "-q", &url, "work"]);
    let log = t.ok(
        "work",
        &["log", "--format=%an|%ae|%s|%ad", "--date=iso-strict"],
    );
    let lines: Vec<&str> = log.lines().collect();
    assert_eq!(lines[0], "李雷||plain|2026-01-01T00:00:03Z");
    assert_eq!(
        lines[1],
        format!(
            "Jürgen|j@example.org|Version {}|2026-01-01T00:00:02Z",
            vid(2)
        )
    );
    assert_eq!(
        lines[2],
        "Zoë Çelik|zoe@example.org|Données chargées: ventes 2026 ✓|2026-01-01T00:00:01Z"
    );
    let body = t.ok("work", &["log", "-1", "--format=%B", "HEAD~2"]);
    assert_eq!(
        body,
        format!(
            "Données chargées: ventes 2026 ✓\n\nDétails\n\nFDL-Version: {}\n\n",
            vid(1)
        )
    );
    let trailer = t.ok(
        "work",
        &[
            "log",
            "-1",
            "--format=%(trailers:key=FDL-Version,valueonly)",
        ],
    );
    assert_eq!(trailer.trim(), vid(3));
}

#[test]
fn two_clones_in_different_places_agree() {
    let t = TestEnv::new();
    let url = t.local_lake("lake", &small_lake());
    t.ok(".", &["clone", "-q", &url, "one"]);
    std::fs::create_dir_all(t.path("elsewhere/deeper")).unwrap();
    t.ok(
        "elsewhere/deeper",
        &["clone", "-q", "--bare", &url, "two.git"],
    );
    let a = t.ok(
        "one",
        &["rev-parse", "origin/main", "origin/team/etl", "v1"],
    );
    let b = t.ok(
        "elsewhere/deeper/two.git",
        &["rev-parse", "main", "team/etl", "v1"],
    );
    assert_eq!(a, b);
    // The same lake copied to another folder (a mirror) maps to the same commits.
    let mirror = t.local_lake("mirror", &small_lake());
    let c = parse_ls_remote(&t.ok(".", &["ls-remote", &mirror, "refs/heads/main"]));
    assert_eq!(
        format!("{}\n", c[0].0),
        a.lines().next().unwrap().to_string() + "\n"
    );
}

#[test]
fn relative_and_file_urls() {
    let t = TestEnv::new();
    t.local_lake("lake", &small_lake());
    let rel = t.ok(".", &["ls-remote", "fdl::lake"]);
    let file = t.ok(
        ".",
        &[
            "ls-remote",
            &format!("fdl::file://{}", t.path("lake").display()),
        ],
    );
    assert_eq!(rel, file);
    assert_eq!(parse_ls_remote(&rel).len(), 4, "{rel}");
    t.ok(".", &["clone", "-q", "fdl::lake", "work"]);
    assert_eq!(t.ok("work", &["rev-list", "--count", "HEAD"]), "3\n");
}
