//! What the helper keeps between sessions (kept packs, the commits cache, the file of refs,
//! ETags) is checked before it is used, and a push after a plain `list` keeps `refs.json` in step.

use std::io::Write;
use std::process::{Output, Stdio};

use crate::support::{lake, text, vid, LakeBuilder, TestEnv, Where, HELPER};

/// Runs the helper as Git would (`git-remote-fdl origin <url>` with `GIT_DIR`), `input` on
/// its stdin.
fn helper_session(t: &TestEnv, git_dir: &str, url: &str, input: &str) -> Output {
    let mut c = t.command(HELPER, ".", &["origin", url]);
    c.env("GIT_DIR", t.path(git_dir));
    c.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = c.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(input.as_bytes()).unwrap();
    drop(stdin);
    child.wait_with_output().unwrap()
}

/// Item 8: a plain `list` (not `list for-push`) then a push in the same helper process writes
/// the ref and `refs.json` both.
#[test]
fn a_plain_list_then_a_tag_push_in_one_session_updates_refs_json() {
    for place in [Where::Local, Where::S3] {
        let mut t = TestEnv::new();
        let at = t.lake_at(place, "lake", &lake(3, 1));
        t.ok(".", &["clone", "-q", &at.url, "work"]);
        let c = t.ok("work", &["rev-parse", "origin/main~1"]);
        let url = at.url.trim_start_matches("fdl::");
        let input = format!("list\npush {}:refs/tags/x\n\n", c.trim());
        let out = helper_session(&t, "work/.git", url, &input);
        let stdout = text(&out.stdout);
        assert!(
            stdout.ends_with("ok refs/tags/x\n\n"),
            "{place:?}: {stdout}\n{}",
            text(&out.stderr)
        );
        assert_eq!(
            at.ref_files().get("refs/tags/x"),
            Some(&vid(2)),
            "{place:?}"
        );
        assert_eq!(
            at.refs_json().get("refs/tags/x"),
            Some(&vid(2)),
            "{place:?}"
        );
    }
}

/// Writes into the lake the files `after` holds that `before` does not (or holds otherwise),
/// as another writer would.
fn grow(at: &crate::support::LakeAt, before: &LakeBuilder, after: &LakeBuilder) {
    for (path, bytes) in &after.files {
        if before.files.get(path) != Some(bytes) {
            at.write(path, std::str::from_utf8(bytes).unwrap());
        }
    }
}

/// The one lake folder in a repository's cache (its commits file, its kept packs).
fn cache_dir(t: &TestEnv, git_dir: &str) -> std::path::PathBuf {
    std::fs::read_dir(t.path(&format!("{git_dir}/fdl")))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.is_dir())
        .unwrap()
}

/// The pack `ls-remote` kept for the next fetch.
fn kept_pack(t: &TestEnv, git_dir: &str) -> Option<std::path::PathBuf> {
    let dir = cache_dir(t, git_dir).join("packs");
    std::fs::read_dir(dir)
        .ok()?
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "pack"))
}

/// What a test does to a kept pack.
type Damage = dyn Fn(&std::path::Path);

/// Item 1: a kept pack damaged after `ls-remote` kept it (a flipped byte, cut in half, the
/// pack gone and its index left) is dropped, not installed: the fetch reads those versions
/// again, and the repository stays sound for every later fetch.
#[test]
fn kept_pack_with_a_flipped_byte_is_dropped_not_installed() {
    for place in [Where::Local, Where::S3] {
        let mut t = TestEnv::new();
        let before = lake(3, 1);
        let at = t.lake_at(place, "lake", &before);
        t.ok(".", &["clone", "-q", &at.url, "work"]);
        let mut after = before.clone();
        after.chain(4, 5);
        after.branch("main", 5).refs_json();
        grow(&at, &before, &after);
        let listed = t.ok("work", &["ls-remote", "origin", "refs/heads/main"]);
        let main = listed.split('\t').next().unwrap().to_string();
        assert!(
            kept_pack(&t, "work/.git").is_some(),
            "{place:?}: no pack kept"
        );
        let damages: [(&str, &Damage); 3] = [
            ("flipped", &|p| {
                let mut bytes = std::fs::read(p).unwrap();
                let at = bytes.len() / 2;
                bytes[at] ^= 0x40;
                std::fs::write(p, bytes).unwrap();
            }),
            ("cut", &|p| {
                let bytes = std::fs::read(p).unwrap();
                std::fs::write(p, &bytes[..bytes.len() / 2]).unwrap();
            }),
            ("gone", &|p| std::fs::remove_file(p).unwrap()),
        ];
        for (name, damage) in damages {
            crate::support::copy_dir(&t.path("work"), &t.path(name));
            damage(&kept_pack(&t, &format!("{name}/.git")).unwrap());
            let out = t.git(name, &["fetch", "-q", "origin"]);
            let err = text(&out.stderr);
            assert!(out.status.success(), "{place:?} {name}: {err}");
            assert!(
                err.starts_with("warning: removed ")
                    && err.contains(", kept by an earlier listing: "),
                "{place:?} {name}: {err}"
            );
            assert_eq!(
                t.ok(name, &["rev-parse", "origin/main"]).trim(),
                main,
                "{place:?} {name}"
            );
            t.ok(name, &["fsck", "--strict"]);
            assert!(
                kept_pack(&t, &format!("{name}/.git")).is_none(),
                "{place:?} {name}"
            );
            let idx_left = std::fs::read_dir(cache_dir(&t, &format!("{name}/.git")).join("packs"))
                .map_or(0, |d| d.count());
            assert_eq!(idx_left, 0, "{place:?} {name}: the index was left");
            // Every later fetch works.
            assert_eq!(
                t.git(name, &["fetch", "-q", "origin"]).status.code(),
                Some(0)
            );
        }
        // Untouched, the kept pack is installed and nothing is read again.
        let out = t.git("work", &["fetch", "-q", "origin"]);
        assert_eq!(text(&out.stderr), "", "{place:?}");
        t.ok("work", &["fsck", "--strict"]);
    }
}

/// The lake of [`lake`] as another lake put at the same address would be: another `id`, the
/// same version IDs with other content.
fn replacement() -> LakeBuilder {
    let mut l = LakeBuilder::new();
    l.put(
        "fdl.json",
        serde_json::to_vec_pretty(&serde_json::json!({
            "fdl": "0.1",
            "id": "0b5e1c1e-0000-4000-8000-000000000002",
            "data_dir": "data/",
            "catalog_formats": [{"ducklake": "1.1"}]
        }))
        .unwrap(),
    );
    l.version(1, &[], "Another lake's first version");
    l.version(2, &[1], "Another lake's second version");
    l.version(3, &[2], "Another lake's third version");
    l.branch("main", 3).tag("v1", 1).refs_json();
    l
}

/// Item 5: a lake replaced at the same URL (another `fdl.json` id) is listed and fetched as
/// it is, not as the tips remembered of the lake once there say, in a repository and in the
/// user's cache outside one.
#[test]
fn a_lake_replaced_at_the_same_url_is_not_listed_from_the_old_lakes_tips() {
    for place in [Where::Local, Where::S3] {
        let mut t = TestEnv::new();
        let at = t.lake_at(place, "lake", &lake(3, 1));
        t.ok(".", &["clone", "-q", &at.url, "work"]);
        let old = t.ok("work", &["ls-remote", "origin"]);
        // Outside a repository, the user's cache remembers it too.
        assert_eq!(t.ok(".", &["ls-remote", &at.url]), old, "{place:?}");
        grow(&at, &lake(3, 1), &replacement());
        // What a session with no cache at all sees.
        t.ok(".", &["init", "-q", "fresh"]);
        let new = t.ok("fresh", &["ls-remote", &at.url]);
        assert_ne!(new, old, "{place:?}");
        assert_eq!(t.ok("work", &["ls-remote", "origin"]), new, "{place:?}");
        assert_eq!(t.ok(".", &["ls-remote", &at.url]), new, "{place:?}");
        t.ok("work", &["fetch", "-q", "--no-tags", "origin"]);
        let main = t.ok("work", &["rev-parse", "origin/main"]);
        assert!(
            new.contains(&format!("{}\trefs/heads/main", main.trim())),
            "{place:?}"
        );
        let message = t.ok("work", &["log", "-1", "--format=%s", "origin/main"]);
        assert_eq!(message, "Another lake's third version\n", "{place:?}");
    }
}

/// Item 5, fsck: `fsck origin` in a clone of a lake since replaced at the same address (another
/// `fdl.json` id, the same version IDs with other content) reports the versions whose commits
/// changed, although the cache it kept is for the old lake's id, even after an `ls-remote` filled
/// the new lake's cache.
#[test]
fn fsck_of_a_remote_whose_lake_was_replaced_reports_the_rewritten_versions() {
    for place in [Where::Local, Where::S3] {
        let mut t = TestEnv::new();
        let at = t.lake_at(place, "lake", &lake(3, 1));
        t.ok(".", &["clone", "-q", &at.url, "work"]);
        let fetched = t.ok("work", &["rev-parse", "origin/main"]);
        grow(&at, &lake(3, 1), &replacement());
        t.ok("work", &["ls-remote", "origin"]);
        let out = t
            .command(
                env!("CARGO_BIN_EXE_git-remote-fdl"),
                "work",
                &["fsck", "origin"],
            )
            .output()
            .unwrap();
        let problems = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(1), "{place:?}: {problems}");
        assert!(
            problems.contains(&format!(
                "was rewritten in the lake: the repository holds commit {} for it",
                fetched.trim()
            )),
            "{place:?}: {problems}"
        );
    }
}

/// Item 6: on an S3-compatible server that gives every object an empty ETag, or one ETag for
/// all, a branch that moved is seen by `ls-remote` and `fetch` (in a repository and outside
/// one), not hidden behind an ETag that did not change.
#[test]
fn etags_that_name_nothing_do_not_hide_a_moved_branch() {
    for tag in ["\"\"", "\"0123456789abcdef\""] {
        let server = crate::support::s3lite::start_with(16);
        let mut before = LakeBuilder::new();
        before.chain(1, 3);
        before.branch("main", 3).refs_json();
        server.put_files("etags", "lake/", &before.files);
        server.set_fixed_etag(Some(tag));
        let t = server.test_env();
        let url = "fdl::s3://etags/lake/";
        t.ok(".", &["clone", "-q", url, "work"]);
        t.ok(".", &["ls-remote", url]);
        t.ok("work", &["ls-remote", "origin"]);
        let mut after = before.clone();
        after.chain(4, 4);
        after.branch("main", 4).refs_json();
        server.put_files("etags", "lake/", &after.files);
        let listed = t.ok("work", &["ls-remote", "origin", "refs/heads/main"]);
        t.ok("work", &["fetch", "-q", "origin"]);
        let main = t.ok("work", &["rev-parse", "origin/main"]);
        assert_eq!(
            listed,
            format!("{}\trefs/heads/main\n", main.trim()),
            "{tag}"
        );
        let message = t.ok("work", &["log", "-1", "--format=%s", "origin/main"]);
        assert_eq!(message, "Load batch 4\n", "ETag {tag}");
        let outside = t.ok(".", &["ls-remote", url, "refs/heads/main"]);
        assert_eq!(outside, listed, "ETag {tag}, outside a repository");
    }
}

/// Rewrites each line of a cache file (`<body> <crc32>`) that `edit` changes, with a checksum
/// that holds: an edit, not damage.
pub(crate) fn edit_cache_file(path: &std::path::Path, edit: impl Fn(&str) -> String) {
    let text = std::fs::read_to_string(path).unwrap();
    let mut out = String::new();
    let mut edited = 0;
    for line in text.lines() {
        match line.rsplit_once(' ').filter(|_| !line.starts_with('#')) {
            Some((body, crc)) if edit(body) != body => {
                let body = edit(body);
                assert_eq!(crc.len(), 8, "{line}");
                out.push_str(&format!(
                    "{body} {:08x}\n",
                    crc32fast::hash(body.as_bytes())
                ));
                edited += 1;
            }
            _ => out.push_str(&format!("{line}\n")),
        }
    }
    assert!(edited > 0, "nothing edited in {}:\n{text}", path.display());
    std::fs::write(path, out).unwrap();
}

/// The file of refs of a repository's cache (`<key>.refs`).
fn refs_file(t: &TestEnv, git_dir: &str) -> std::path::PathBuf {
    std::fs::read_dir(t.path(&format!("{git_dir}/fdl")))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "refs"))
        .unwrap()
}

/// Item 4: an `@tip` line edited with a checksum that holds (main's version remembered as an
/// older commit) does not move `origin/main` back: the commit is checked in the repository
/// (its trailer names another version) and the version read again.
#[test]
fn an_edited_tip_with_a_valid_checksum_does_not_move_a_ref() {
    for place in [Where::Local, Where::S3] {
        let mut t = TestEnv::new();
        let at = t.lake_at(place, "lake", &lake(3, 1));
        t.ok(".", &["clone", "-q", &at.url, "work"]);
        let main = t
            .ok("work", &["rev-parse", "origin/main"])
            .trim()
            .to_string();
        let older = t
            .ok("work", &["rev-parse", "origin/main~1"])
            .trim()
            .to_string();
        let tip = format!("@tip {} {main}", vid(3));
        edit_cache_file(&refs_file(&t, "work/.git"), |l| {
            if l == tip {
                format!("@tip {} {older}", vid(3))
            } else {
                l.to_string()
            }
        });
        let listed = t.ok("work", &["ls-remote", "origin", "refs/heads/main"]);
        assert_eq!(listed, format!("{main}\trefs/heads/main\n"), "{place:?}");
        edit_cache_file(&refs_file(&t, "work/.git"), |l| {
            if l == tip {
                format!("@tip {} {older}", vid(3))
            } else {
                l.to_string()
            }
        });
        let out = t.git("work", &["fetch", "origin"]);
        assert!(out.status.success(), "{place:?}: {}", text(&out.stderr));
        assert!(
            !text(&out.stderr).contains("forced update"),
            "{place:?}: {}",
            text(&out.stderr)
        );
        assert_eq!(
            t.ok("work", &["rev-parse", "origin/main"]).trim(),
            main,
            "{place:?}"
        );
    }
}

/// Item 4: a commits-file entry edited with a checksum that holds (version 3 remembered as
/// version 1's commit) does not make the next fetch mint version 4 on the wrong parent.
#[test]
fn an_edited_commits_entry_with_a_valid_checksum_does_not_lose_history() {
    for place in [Where::Local, Where::S3] {
        let mut t = TestEnv::new();
        let before = lake(3, 1);
        let at = t.lake_at(place, "lake", &before);
        t.ok(".", &["clone", "-q", &at.url, "work"]);
        let main = t
            .ok("work", &["rev-parse", "origin/main"])
            .trim()
            .to_string();
        let first = t
            .ok("work", &["rev-parse", "origin/main~2"])
            .trim()
            .to_string();
        let commits = cache_dir(&t, "work/.git").join("commits");
        let v3 = vid(3);
        edit_cache_file(&commits, |l| {
            match l.strip_prefix(&format!("{v3} {main}")) {
                Some(rest) => format!("{v3} {first}{rest}"),
                None => l.to_string(),
            }
        });
        let mut after = before.clone();
        after.chain(4, 4);
        after.branch("main", 4).refs_json();
        grow(&at, &before, &after);
        t.ok("work", &["fetch", "-q", "origin"]);
        assert_eq!(
            t.ok("work", &["rev-parse", "origin/main~1"]).trim(),
            main,
            "{place:?}: version 4's parent"
        );
        assert_eq!(
            t.ok("work", &["rev-list", "--count", "origin/main"]),
            "4\n",
            "{place:?}"
        );
    }
}

/// The version lines of a repository's commits file (its header left out).
fn remembered_versions(t: &TestEnv, git_dir: &str) -> usize {
    let commits = std::fs::read_to_string(cache_dir(t, git_dir).join("commits")).unwrap();
    commits.lines().filter(|l| !l.starts_with('#')).count()
}

/// Versions a git command read, from the helper's trace.
fn versions_read(t: &TestEnv, cwd: &str, args: &[&str]) -> usize {
    let out = t
        .command("git", cwd, args)
        .env("GIT_REMOTE_FDL_DEBUG", "1")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    err.lines()
        .filter(|l| l.contains("GET versions/") && l.contains("/version.json"))
        .count()
}

/// A clone's listing goes into the cache once its fetch has written the pack (the two are
/// never held at once); a listing in a repository that no fetch follows, when its session
/// ends; and a listing then a fetch in one session, after the fetch. Each is found by the next
/// command, which reads no version.
#[test]
fn what_a_first_listing_built_is_remembered_whether_or_not_a_fetch_follows() {
    let t = TestEnv::new();
    let url = t.local_lake("lake", &lake(6, 2));
    t.ok(".", &["clone", "-q", "--bare", &url, "cloned.git"]);
    assert_eq!(remembered_versions(&t, "cloned.git"), 6);
    assert_eq!(versions_read(&t, "cloned.git", &["fetch", "origin"]), 0);

    t.ok(".", &["init", "-q", "--bare", "listed.git"]);
    let listed = versions_read(&t, "listed.git", &["ls-remote", &url]);
    assert_eq!(listed, 6);
    assert_eq!(remembered_versions(&t, "listed.git"), 6);
    assert_eq!(versions_read(&t, "listed.git", &["ls-remote", &url]), 0);

    t.ok(".", &["init", "-q", "--bare", "session.git"]);
    let lake_dir = url.trim_start_matches("fdl::");
    let listing = helper_session(&t, "listed.git", lake_dir, "list\n\n");
    let main = text(&listing.stdout)
        .lines()
        .find_map(|l| l.strip_suffix(" refs/heads/main").map(str::to_string))
        .unwrap();
    let input = format!("list\nfetch {main} refs/heads/main\n\n");
    let out = helper_session(&t, "session.git", lake_dir, &input);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(remembered_versions(&t, "session.git"), 6);
}
