//! `git-remote-fdl fsck` and `git-remote-fdl catalog`: a lake checked as `git fsck` checks a
//! repository, and a fetched commit turned into its verified catalog, on a folder, on S3 and
//! over plain HTTP.

use sha2::{Digest, Sha256};

use crate::support::http::serve;
use crate::support::{copy_dir, helper, lake, text, vid, TestEnv, Where};

fn sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[test]
fn fsck_of_a_sound_lake_finds_nothing_on_every_store() {
    for place in [Where::Local, Where::S3, Where::Gcs, Where::Azure] {
        let mut t = TestEnv::new();
        let at = t.lake_at(place, "lake", &lake(4, 2));
        let out = helper(&t, ".", &["fsck", "--catalogs", &at.url]);
        assert_eq!(text(&out.stdout), "", "{place:?}: {}", text(&out.stderr));
        assert_eq!(out.status.code(), Some(0), "{place:?}");
        // Not a terminal: no progress redrawn in a log (as Git's fsck); outside a repository,
        // a note that rewrites cannot be seen, and the summary.
        assert_eq!(
            text(&out.stderr),
            "note: outside a repository, versions rewritten and tags moved since a fetch cannot \
             be seen (run 'git-remote-fdl fsck <remote>' in a clone of the lake)\n\
             Checked 2 refs and 4 versions: 0 problems\n",
            "{place:?}"
        );
    }
    // Over plain HTTP, through refs.json.
    let t = TestEnv::new();
    t.local_lake("lake", &lake(4, 2));
    let server = serve(&t.path("lake"));
    let out = helper(&t, ".", &["fsck", "-q", &format!("fdl::{}", server.url)]);
    assert_eq!(
        (text(&out.stdout), text(&out.stderr)),
        (String::new(), String::new())
    );
    assert_eq!(out.status.code(), Some(0));
}

#[test]
fn fsck_names_each_problem_and_exits_1() {
    let t = TestEnv::new();
    let mut l = lake(4, 2);
    // A branch whose history misses a version, a tag naming no version, refs.json stale,
    // HEAD naming a missing branch.
    l.version(6, &[5], "On a missing parent");
    l.branch("broken", 6).refs_json();
    l.set_ref("refs/tags/ghost", &vid(9));
    l.put("HEAD", b"ref: refs/heads/gone\n".to_vec());
    let url = t.local_lake("lake", &l);
    let out = helper(&t, ".", &["fsck", "-q", &url]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let expected = [
        "error: HEAD names refs/heads/gone, which does not exist".to_string(),
        format!(
            "error: refs.json lacks refs/tags/ghost (its ref file holds {})",
            vid(9)
        ),
        format!("missing version {} (named by version {})", vid(5), vid(6)),
        format!("missing version {} (named by ref refs/tags/ghost)", vid(9)),
    ];
    assert_eq!(text(&out.stdout), expected.join("\n") + "\n");
    assert_eq!(text(&out.stderr), "");
}

#[test]
fn fsck_finds_a_version_rewritten_after_a_clone_and_a_moved_tag() {
    for place in [Where::Local, Where::S3] {
        let mut t = TestEnv::new();
        let at = t.lake_at(place, "lake", &lake(4, 2));
        t.ok(".", &["clone", "-q", &at.url, "work"]);
        assert_eq!(
            helper(&t, "work", &["fsck", "-q", "origin"]).status.code(),
            Some(0)
        );
        let before = t
            .ok("work", &["rev-parse", "refs/tags/v1"])
            .trim()
            .to_string();
        let v3 = vid(3);
        let record = at.read(&format!("versions/{v3}/version.json")).unwrap();
        at.write(
            &format!("versions/{v3}/version.json"),
            &record.replace("Load batch 3", "Load batch 3, edited"),
        );
        at.write("refs/tags/v1", &format!("{}\n", vid(1)));
        at.write(
            "refs.json",
            &at_refs_json(&[("main", 4, true), ("v1", 1, false)]),
        );
        let out = helper(&t, "work", &["fsck", "origin"]);
        assert_eq!(
            out.status.code(),
            Some(1),
            "{place:?}: {}",
            text(&out.stderr)
        );
        let old3 = t
            .ok("work", &["rev-parse", "origin/main~1"])
            .trim()
            .to_string();
        let stdout = text(&out.stdout);
        let lines: Vec<&str> = stdout.lines().collect();
        assert_eq!(lines.len(), 2, "{place:?}: {stdout}");
        assert!(
            lines[1].starts_with(&format!(
                "error: tag refs/tags/v1 moved since it was fetched: the repository has {before} (version {}), the lake's tag now holds version {} (",
                vid(2),
                vid(1)
            )),
            "{place:?}: {stdout}"
        );
        assert!(
            lines[0].starts_with(&format!(
                "error: version {v3} was rewritten in the lake: the repository holds commit {old3} for it, the lake now gives "
            )),
            "{place:?}: {stdout}"
        );
        assert!(
            text(&out.stderr).contains(
                "note: 1 more version(s) get new commits only because versions they descend from were rewritten"
            ),
            "{place:?}: {}",
            text(&out.stderr)
        );
    }
}

/// A flat refs.json: (name, version, is a branch).
fn at_refs_json(refs: &[(&str, u64, bool)]) -> String {
    let entries: Vec<String> = refs
        .iter()
        .map(|(n, v, branch)| {
            let kind = if *branch { "heads" } else { "tags" };
            format!("  \"refs/{kind}/{n}\": \"{}\"", vid(*v))
        })
        .collect();
    format!("{{\n{}\n}}\n", entries.join(",\n"))
}

#[test]
fn fsck_catalogs_finds_a_catalog_that_does_not_match_its_record() {
    let t = TestEnv::new();
    let mut l = lake(4, 2);
    l.put(
        &format!("versions/{}/ducklake.duckdb", vid(2)),
        b"tampered".to_vec(),
    );
    l.remove(&format!("versions/{}/ducklake.duckdb", vid(3)));
    let url = t.local_lake("lake", &l);
    assert_eq!(
        helper(&t, ".", &["fsck", "-q", &url]).status.code(),
        Some(0)
    );
    let out = helper(&t, ".", &["fsck", "-q", "--catalogs", &url]);
    assert_eq!(out.status.code(), Some(1));
    let expected_sha = sha256(b"test catalog of version 2\n");
    assert_eq!(
        text(&out.stdout),
        format!(
            "error: version {}: ducklake.duckdb has sha256 {}, but version.json says {expected_sha}\n\
             error: version {}: ducklake.duckdb is missing\n",
            vid(2),
            sha256(b"tampered"),
            vid(3)
        )
    );
}

#[test]
fn catalog_writes_the_verified_catalog_and_prints_how_to_attach_it() {
    for place in [Where::Local, Where::S3, Where::Gcs, Where::Azure] {
        let mut t = TestEnv::new();
        let at = t.lake_at(place, "lake", &lake(4, 2));
        t.ok(".", &["clone", "-q", &at.url, "work"]);
        let out = helper(&t, "work", &["catalog", "v1", "-o", "sales.duckdb"]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{place:?}: {}",
            text(&out.stderr)
        );
        let written = std::fs::read(t.path("work/sales.duckdb")).unwrap();
        assert_eq!(written, b"test catalog of version 2\n", "{place:?}");
        let sha = sha256(&written);
        assert_eq!(
            text(&out.stderr),
            format!(
                "Wrote the catalog of version {} to sales.duckdb (26 bytes, sha256 {sha} as in version.json)\n",
                vid(2)
            )
        );
        let root = at.url.trim_start_matches("fdl::").trim_end_matches('/');
        let data_path = format!("{root}/data/");
        let attach = format!(
            "ATTACH 'ducklake:{}' AS lake (READ_ONLY, DATA_PATH '{data_path}', OVERRIDE_DATA_PATH true);\n",
            t.path("work/sales.duckdb").display()
        );
        let stdout = text(&out.stdout);
        assert!(
            stdout.starts_with("INSTALL ducklake;\n"),
            "{place:?}: {stdout}"
        );
        assert!(stdout.ends_with(&attach), "{place:?}: {stdout}");
        if place == Where::Local {
            assert_eq!(
                stdout,
                format!("INSTALL ducklake;\nLOAD ducklake;\n{attach}")
            );
        }
        // Without -o: <git dir>/fdl/catalogs/<version>.duckdb, so the work tree stays clean.
        let out = helper(&t, "work", &["catalog", "origin/main"]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let default = format!("work/.git/fdl/catalogs/{}.duckdb", vid(4));
        assert_eq!(
            std::fs::read(t.path(&default)).unwrap(),
            b"test catalog of version 4\n"
        );
        assert!(text(&out.stderr).contains(&format!("to {}", t.path(&default).display())));
        assert!(
            text(&out.stdout).contains(&format!("ducklake:{}", t.path(&default).display())),
            "{}",
            text(&out.stdout)
        );
        std::fs::remove_file(t.path("work/sales.duckdb")).unwrap();
        assert_eq!(t.ok("work", &["status", "--porcelain"]), "", "{place:?}");
    }
}

#[test]
fn catalog_refuses_a_corrupted_catalog_and_writes_nothing() {
    let t = TestEnv::new();
    let url = t.local_lake("lake", &lake(4, 2));
    t.ok(".", &["clone", "-q", &url, "work"]);
    let path = t.path(&format!("lake/versions/{}/ducklake.duckdb", vid(4)));
    std::fs::write(&path, b"not the catalog the record names").unwrap();
    let out = helper(&t, "work", &["catalog", "HEAD", "-o", "out.duckdb"]);
    assert_eq!(out.status.code(), Some(128));
    assert_eq!(
        text(&out.stderr),
        format!(
            "fatal: version {}'s ducklake.duckdb has sha256 {}, but its version.json says {}\n\
             hint: the catalog was damaged or replaced in the lake; nothing was written\n",
            vid(4),
            sha256(b"not the catalog the record names"),
            sha256(b"test catalog of version 4\n")
        )
    );
    let left: Vec<String> = std::fs::read_dir(t.path("work"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| ![".git", "dataset.json", "version.json"].contains(&n.as_str()))
        .collect();
    assert_eq!(left, Vec::<String>::new(), "nothing may be written");
}

#[test]
fn catalog_refuses_commits_that_are_not_this_lakes_versions() {
    let t = TestEnv::new();
    let url = t.local_lake("lake", &lake(4, 2));
    t.ok(".", &["clone", "-q", &url, "work"]);
    // A local commit: no trailer.
    t.ok("work", &["commit", "-q", "--allow-empty", "-m", "local"]);
    let out = helper(&t, "work", &["catalog", "HEAD"]);
    assert_eq!(out.status.code(), Some(128));
    let head = t.ok("work", &["rev-parse", "HEAD"]);
    assert_eq!(
        text(&out.stderr),
        format!(
            "fatal: commit {} is not a lake version (no FDL-Version trailer)\n\
             hint: name a commit fetched from the lake, such as a tag or origin/main\n",
            &head[..12]
        )
    );
    // An amended version: the trailer is there, the commit is not the lake's.
    t.ok("work", &["reset", "-q", "--hard", "origin/main"]);
    t.ok(
        "work",
        &[
            "commit",
            "-q",
            "--amend",
            "--no-edit",
            "--date=2020-01-01T00:00:00Z",
        ],
    );
    let amended = t.ok("work", &["rev-parse", "HEAD"]);
    let lakes = t.ok("work", &["rev-parse", "origin/main"]);
    let out = helper(&t, "work", &["catalog", "HEAD"]);
    assert_eq!(out.status.code(), Some(128));
    assert!(
        text(&out.stderr).starts_with(&format!(
            "fatal: 'HEAD' ({}) names version {}, but lake '{}' maps that version to {}\n",
            &amended[..12],
            vid(4),
            t.path("lake").display(),
            &lakes[..12]
        )),
        "{}",
        text(&out.stderr)
    );
    // Outside any repository.
    let out = helper(&t, ".", &["catalog", "HEAD"]);
    assert_eq!(
        text(&out.stderr),
        "fatal: not in a Git repository\nhint: run 'git-remote-fdl catalog' inside a clone of the lake\n"
    );
    // A format name cannot become a path outside the version.
    let out = helper(
        &t,
        "work",
        &["catalog", "origin/main", "--format", "../../x"],
    );
    assert_eq!(
        text(&out.stderr),
        "fatal: '../../x' is not a DuckLake format name (such as 1.0)\n"
    );
}

#[test]
fn a_version_rewritten_after_it_was_read_stops_the_fetch_naming_both_commits() {
    for place in [Where::Local, Where::S3] {
        let mut t = TestEnv::new();
        let at = t.lake_at(place, "lake", &lake(4, 2));
        t.ok(".", &["init", "-q", "work"]);
        t.ok("work", &["remote", "add", "origin", &at.url]);
        // Listing maps every version and remembers the commits; nothing is fetched yet.
        let listed = t.ok("work", &["ls-remote", "origin", "refs/heads/main"]);
        let old = listed.split('\t').next().unwrap().to_string();
        let v4 = vid(4);
        let record = at.read(&format!("versions/{v4}/version.json")).unwrap();
        at.write(
            &format!("versions/{v4}/version.json"),
            &record.replace("Load batch 4", "Load batch 4, rewritten"),
        );
        // The objects that ls-remote read are kept for the next fetch, which reads nothing
        // again: it brings the commit this repository read, never a new one for an old version.
        copy_dir(&t.path("work"), &t.path("kept"));
        t.ok("kept", &["fetch", "-q", "origin"]);
        assert_eq!(t.ok("kept", &["rev-parse", "origin/main"]).trim(), old);
        // Without them (as after a prune), the fetch reads the version again and sees the change.
        let fdl = t.path("work/.git/fdl");
        for lake_dir in std::fs::read_dir(&fdl).unwrap().flatten() {
            let _ = std::fs::remove_dir_all(lake_dir.path().join("packs"));
        }
        let err = t.fails("work", &["fetch", "origin"]);
        let first = err.lines().next().unwrap();
        assert!(
            first.starts_with(&format!(
                "fatal: lake '{}': version {v4} was rewritten in the lake: it was commit {old} when this repository read it, and would now be commit ",
                at.url.trim_start_matches("fdl::")
            )),
            "{place:?}: {err}"
        );
        assert!(
            err.contains("hint: versions are never rewritten: nothing was fetched; check the lake with 'git-remote-fdl fsck <remote>'"),
            "{place:?}: {err}"
        );
        assert_eq!(
            t.ok("work", &["for-each-ref"]),
            "",
            "{place:?}: no ref was updated"
        );
    }
}

#[test]
fn a_cache_entry_edited_by_hand_is_not_trusted() {
    let t = TestEnv::new();
    let url = t.local_lake("lake", &lake(4, 2));
    t.ok(".", &["clone", "-q", &url, "work"]);
    let main = t
        .ok("work", &["rev-parse", "origin/main"])
        .trim()
        .to_string();
    let older = t
        .ok("work", &["rev-parse", "origin/main~1"])
        .trim()
        .to_string();
    let fdl = t.path("work/.git/fdl");
    let dir = cache_dir_of(&fdl);
    let cache = dir.join("commits");
    let entries = std::fs::read_to_string(&cache).unwrap();
    assert!(entries.contains(&main), "{entries}");
    // Point main's version at an older commit, as a hand edit would, in the commits file and
    // in the file of refs (which remembers the tips' commits).
    std::fs::write(&cache, entries.replace(&main, &older)).unwrap();
    let refs_file = refs_file_of(&fdl);
    let refs = std::fs::read_to_string(&refs_file).unwrap();
    assert!(refs.contains(&main), "{refs}");
    std::fs::write(&refs_file, refs.replace(&main, &older)).unwrap();
    let out = t.git("work", &["ls-remote", "origin", "refs/heads/main"]);
    assert_eq!(text(&out.stdout), format!("{main}\trefs/heads/main\n"));
    assert_eq!(
        text(&out.stderr),
        format!(
            "warning: the commit cache ./.git/fdl/{}/commits had 1 damaged entry: not trusted, computed again from the lake\n",
            dir.file_name().unwrap().to_string_lossy()
        )
    );
    // The cache was repaired: no warning the next time.
    let out = t.git("work", &["ls-remote", "origin", "refs/heads/main"]);
    assert_eq!(text(&out.stderr), "");
}

/// The file of refs in a cache folder (`<key>.refs`, beside each lake's folder).
fn refs_file_of(fdl: &std::path::Path) -> std::path::PathBuf {
    first_entry(fdl, |p| p.extension().is_some_and(|e| e == "refs"))
}

/// The one lake's folder in a cache folder (its commits file, its kept packs).
fn cache_dir_of(fdl: &std::path::Path) -> std::path::PathBuf {
    first_entry(fdl, |p| p.is_dir())
}

fn first_entry(
    dir: &std::path::Path,
    keep: impl Fn(&std::path::Path) -> bool,
) -> std::path::PathBuf {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| keep(p))
        .unwrap()
}

#[test]
fn a_no_op_fetch_answers_from_the_file_of_refs_and_never_reads_the_commits_file() {
    for place in [Where::Local, Where::S3] {
        let mut t = TestEnv::new();
        let mut l = lake(4, 2);
        let at = t.lake_at(place, "lake", &l);
        t.ok(".", &["clone", "-q", "--bare", &at.url, "work.git"]);
        let listed = t.ok("work.git", &["ls-remote", "origin"]);
        let dir = cache_dir_of(&t.path("work.git/fdl"));
        // A commits file the helper could not use: had it been read, it would be written
        // again whole (it is only a cache).
        let commits = dir.join("commits");
        std::fs::write(&commits, "not a cache\n").unwrap();
        t.ok("work.git", &["fetch", "-q", "origin"]);
        assert_eq!(
            t.ok("work.git", &["ls-remote", "origin"]),
            listed,
            "{place:?}"
        );
        assert_eq!(
            std::fs::read_to_string(&commits).unwrap(),
            "not a cache\n",
            "{place:?}: the commits file was read"
        );
        // A ref that moved needs the history: the commits file is read, found unusable, and
        // written whole again with every version.
        let before = l.files.clone();
        l.chain(5, 5);
        l.branch("main", 5).refs_json();
        for (path, bytes) in l.files.iter().filter(|(p, b)| before.get(*p) != Some(b)) {
            at.write(path, std::str::from_utf8(bytes).unwrap());
        }
        t.ok("work.git", &["fetch", "-q", "origin"]);
        let rewritten = std::fs::read_to_string(&commits).unwrap();
        assert!(
            rewritten.starts_with("# git-remote-fdl cache"),
            "{place:?}: {rewritten}"
        );
        assert_eq!(rewritten.lines().count(), 1 + 5, "{place:?}: {rewritten}");
        let v5 = vid(5);
        assert_eq!(
            t.ok(
                "work.git",
                &[
                    "log",
                    "-1",
                    "--format=%(trailers:key=FDL-Version,valueonly)",
                    "FETCH_HEAD"
                ]
            )
            .trim(),
            v5,
            "{place:?}"
        );
    }
}

/// Cache files are the user's, but anything may stand in their place: a FIFO (reading it
/// waited for a writer forever), a link to a device (read without end), a file of gigabytes.
/// Each is passed over as a missing file is, the listing is the same, and the cache is
/// written anew in its place.
#[test]
fn cache_files_that_are_fifos_devices_or_huge_are_passed_over() {
    for place in [Where::Local, Where::S3] {
        let mut t = TestEnv::new();
        let at = t.lake_at(place, "lake", &lake(4, 2));
        t.ok(".", &["clone", "-q", "--bare", &at.url, "work.git"]);
        let listed = t.ok("work.git", &["ls-remote", "origin"]);
        let fdl = t.path("work.git/fdl");
        let files = [refs_file_of(&fdl), cache_dir_of(&fdl).join("commits")];
        let standing_in: [StandIn; 3] = [
            ("a FIFO", &|p| {
                let made = std::process::Command::new("mkfifo")
                    .arg(p)
                    .status()
                    .unwrap();
                assert!(made.success());
            }),
            ("a link to /dev/zero", &|p| {
                std::os::unix::fs::symlink("/dev/zero", p).unwrap()
            }),
            ("a sparse file of over 1 GiB", &|p| {
                let f = std::fs::File::create(p).unwrap();
                f.set_len((1 << 30) + 1).unwrap();
            }),
        ];
        for (what, make) in standing_in {
            for f in &files {
                std::fs::remove_file(f).unwrap();
                make(f);
            }
            let ls_remote = t.command("git", "work.git", &["ls-remote", "origin"]);
            let out =
                crate::support::run::run_within(ls_remote, std::time::Duration::from_secs(60));
            assert!(out.status.success(), "{what}: {}", text(&out.stderr));
            assert_eq!(text(&out.stdout), listed, "{what} ({place:?})");
            for f in &files {
                let meta = std::fs::symlink_metadata(f).unwrap();
                assert!(
                    meta.is_file() && meta.len() < 1 << 20,
                    "{what}: {f:?} rewritten"
                );
            }
        }
    }
}

/// What stands in a cache file's place, and how to make it there.
type StandIn<'a> = (&'a str, &'a dyn Fn(&std::path::Path));
