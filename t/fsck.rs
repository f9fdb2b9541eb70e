//! `git-remote-fdl fsck`: the digests and `HEAD` it cannot check, and rewritten versions found
//! from a remote's address or a relative remote, wherever in a clone it runs.

use serde_json::json;

use crate::support::{helper, lake, text, vid, LakeBuilder, TestEnv, Where};

#[test]
fn fsck_catalogs_reports_digests_that_are_not_digests() {
    let t = TestEnv::new();
    let mut l = LakeBuilder::new();
    l.chain(1, 7);
    l.branch("main", 7);
    l.refs_json();
    let hex = "a".repeat(64);
    let bad = [
        json!(5),
        json!("abc"),
        json!(format!("sha256:{hex}")),
        json!("a".repeat(63)),
        json!(format!("{}g", "a".repeat(63))),
    ];
    for (i, sha) in bad.iter().enumerate() {
        let n = i as u64 + 2;
        let record = json!({"parents": [vid(n - 1)], "message": "m", "sha256": sha});
        l.record(&vid(n), serde_json::to_vec(&record).unwrap());
    }
    let url = t.local_lake("lake", &l);
    // Version 7's digest in upper case is the same digest: accepted (a tolerant reader).
    let catalog = std::fs::read(t.path(&format!("lake/versions/{}/ducklake.duckdb", vid(7))));
    let sha = crate::support::lake::hex(&<sha2::Sha256 as sha2::Digest>::digest(catalog.unwrap()));
    let upper = json!({"parents": [vid(6)], "message": "m", "sha256": sha.to_uppercase()});
    let record = t.path(&format!("lake/versions/{}/version.json", vid(7)));
    std::fs::write(record, serde_json::to_vec(&upper).unwrap()).unwrap();
    let out = helper(&t, ".", &["fsck", "--catalogs", &url]);
    let (stdout, err) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(1), "{stdout}{err}");
    let problems: Vec<&str> = stdout.lines().collect();
    assert_eq!(problems.len(), 5, "{stdout}");
    for n in 2..=6 {
        assert!(
            stdout.contains(&format!("version {}: version.json's sha256", vid(n))),
            "{stdout}"
        );
    }
    assert!(stdout.contains("'sha256:aaaa"), "{stdout}");
    assert!(!stdout.contains(&vid(7)), "{stdout}");
}

#[test]
fn fsck_reports_a_head_naming_a_tag_or_garbage_and_goes_on() {
    for head in ["ref: refs/tags/v1\n", "\x01garbage\n"] {
        let t = TestEnv::new();
        let mut l = lake(5, 2);
        l.put("HEAD", head);
        l.record(&vid(3), b"{not json".to_vec());
        let url = t.local_lake("lake", &l);
        let out = helper(&t, ".", &["fsck", &url]);
        let (stdout, err) = (text(&out.stdout), text(&out.stderr));
        assert_eq!(out.status.code(), Some(1), "{head:?}: {stdout}{err}");
        assert!(stdout.contains("HEAD"), "{head:?}: {stdout}");
        assert!(stdout.contains(&vid(3)), "{head:?}: {stdout}");
        assert!(!stdout.contains('\x01'), "{stdout}");
    }
}

/// Rewrites version 3's record in the lake, as an attacker would after a clone.
fn rewrite_version_3(at: &crate::support::LakeAt) {
    let v3 = vid(3);
    let record = at.read(&format!("versions/{v3}/version.json")).unwrap();
    at.write(
        &format!("versions/{v3}/version.json"),
        &record.replace("Load batch 3", "Load batch 3, edited"),
    );
}

fn rewritten_line(t: &TestEnv, cwd: &str) -> String {
    let old3 = t.ok(cwd, &["rev-parse", "origin/main~1"]);
    format!(
        "error: version {} was rewritten in the lake: the repository holds commit {} for it, the lake now gives ",
        vid(3),
        old3.trim()
    )
}

#[test]
fn fsck_of_a_remotes_address_inside_a_clone_finds_a_rewritten_version() {
    for place in [Where::Local, Where::S3] {
        let mut t = TestEnv::new();
        let at = t.lake_at(place, "lake", &lake(4, 2));
        t.ok(".", &["clone", "-q", &at.url, "work"]);
        rewrite_version_3(&at);
        let expected = rewritten_line(&t, "work");
        let bare = at.url.trim_start_matches("fdl::").to_string();
        let mut addresses = vec![at.url.clone(), bare.clone()];
        match place {
            // The same folder by another path: a trailing slash, a relative path.
            Where::Local => addresses.extend([format!("{bare}/"), "../lake".to_string()]),
            _ => addresses.push(bare.trim_end_matches('/').to_string()),
        }
        for address in addresses {
            let out = helper(&t, "work", &["fsck", "-q", &address]);
            assert_eq!(out.status.code(), Some(1), "{place:?} {address}");
            assert!(
                text(&out.stdout).starts_with(&expected),
                "{place:?} {address}: {}",
                text(&out.stdout)
            );
        }
    }
}

#[test]
fn fsck_of_a_lake_no_remote_names_says_rewrites_cannot_be_seen() {
    let t = TestEnv::new();
    let url = t.local_lake("lake", &lake(4, 2));
    let other = t.local_lake("other", &lake(4, 2));
    t.ok(".", &["clone", "-q", &url, "work"]);
    let out = helper(&t, "work", &["fsck", &other]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        text(&out.stderr),
        "note: this repository has no remote for this lake: versions rewritten and tags moved \
         since a fetch cannot be seen without one (run 'git-remote-fdl fsck <remote>' in a \
         clone of the lake)\nChecked 2 refs and 4 versions: 0 problems\n"
    );
}

#[test]
fn a_relative_remote_is_resolved_from_the_top_of_the_work_tree_in_a_subfolder() {
    let t = TestEnv::new();
    let url = t.local_lake("lake", &lake(4, 2));
    t.ok(".", &["init", "-q", "work"]);
    t.ok("work", &["commit", "-q", "--allow-empty", "-m", "local"]);
    t.ok("work", &["remote", "add", "origin", "fdl::../lake"]);
    t.ok("work", &["fetch", "-q", "origin"]);
    // What ../lake names from the subfolder: another lake, which must not be checked.
    t.local_lake("work/lake", &{
        let mut l = LakeBuilder::new();
        l.chain(1, 1);
        l.branch("main", 1).refs_json();
        l
    });
    std::fs::create_dir_all(t.path("work/sub/deeper")).unwrap();
    let out = helper(&t, "work/sub/deeper", &["fsck", "origin"]);
    assert_eq!(
        (out.status.code(), text(&out.stderr)),
        (
            Some(0),
            "Checked 2 refs and 4 versions: 0 problems\n".to_string()
        )
    );
    let out = helper(
        &t,
        "work/sub",
        &["catalog", "origin/main", "-o", "c.duckdb"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        std::fs::read(t.path("work/sub/c.duckdb")).unwrap(),
        b"test catalog of version 4\n"
    );
    let at = crate::support::LakeAt {
        url: url.clone(),
        place: Where::Local,
        dir: t.path("lake"),
        bucket: String::new(),
        prefix: String::new(),
    };
    rewrite_version_3(&at);
    let out = helper(&t, "work/sub/deeper", &["fsck", "-q", "origin"]);
    assert!(
        text(&out.stdout).starts_with(&rewritten_line(&t, "work")),
        "{}",
        text(&out.stdout)
    );
    // A bare repository: Git runs the helper where the command runs, and so does fsck.
    t.ok(".", &["init", "-q", "--bare", "repo.git"]);
    t.ok("repo.git", &["remote", "add", "origin", "fdl::../lake"]);
    t.ok("repo.git", &["fetch", "-q", "origin"]);
    let out = helper(&t, "repo.git", &["fsck", "origin"]);
    assert_eq!(
        (out.status.code(), text(&out.stderr)),
        (
            Some(0),
            "Checked 2 refs and 4 versions: 0 problems\n".to_string()
        )
    );
}
