//! `refs.json` as pushes write it: the host's entries kept in every shape, fields beside a
//! ref's version kept, and a file too large to rewrite or read.

use crate::support::{lake, text, vid, TestEnv, Where};

fn refs_json_shape_keeps_the_hosts_entries(place: Where) {
    let id = vid(3);
    let main = vid(5);
    let v1 = vid(2);
    for (shape, refs_json) in [
        (
            "refs map",
            format!(
                r#"{{"refs": {{"refs/heads/main": "{main}", "refs/tags/v1": "{v1}", "refs/requests/7": "{id}"}}}}"#
            ),
        ),
        (
            "refs list",
            format!(
                r#"{{"refs": [{{"name": "refs/heads/main", "version": "{main}"}}, {{"name": "refs/tags/v1", "version": "{v1}"}}, {{"name": "refs/requests/7", "version": "{id}"}}]}}"#
            ),
        ),
        (
            "heads and tags",
            format!(
                r#"{{"heads": {{"main": "{main}"}}, "tags": {{"v1": "{v1}"}}, "refs/requests/7": "{id}", "requests": {{"8": "{id}"}}}}"#
            ),
        ),
    ] {
        let mut l = lake(5, 2);
        l.put("refs.json", refs_json.clone());
        let mut t = TestEnv::new();
        let lake = t.lake_at(place, "lake", &l);
        t.ok(".", &["clone", "-q", &lake.url, "work"]);
        t.ok(
            "work",
            &["push", "-q", "origin", "origin/main:refs/tags/new"],
        );
        let after = lake.read("refs.json").unwrap();
        assert!(
            after.contains("refs/requests/7") && after.contains(&id),
            "{shape}: the host's entry was lost:\n{after}"
        );
        if shape == "heads and tags" {
            assert!(after.contains(r#""8""#), "{shape}:\n{after}");
        }
        let value: serde_json::Value = serde_json::from_str(&after).unwrap();
        let old: serde_json::Value = serde_json::from_str(&refs_json).unwrap();
        assert_eq!(
            value["refs"].is_array(),
            old["refs"].is_array(),
            "{shape}: the shape changed:\n{after}"
        );
        // Readers that cannot list see the new tag.
        if place == Where::Local {
            let server = crate::support::http::serve(&lake.dir);
            let listed = t.ok("work", &["ls-remote", &format!("fdl::{}", server.url)]);
            assert!(
                listed.contains("refs/tags/new") && listed.contains("refs/heads/main"),
                "{shape}: {listed}"
            );
        }
    }
}

#[test]
fn refs_json_in_nested_shapes_keeps_the_hosts_entries_local() {
    refs_json_shape_keeps_the_hosts_entries(Where::Local)
}

#[test]
fn refs_json_in_nested_shapes_keeps_the_hosts_entries_s3() {
    refs_json_shape_keeps_the_hosts_entries(Where::S3)
}

/// A host's fields beside a ref's version in refs.json (an approval, say) stay while the ref
/// holds that version, whatever else a push changes; the ref that moves gets a fresh entry.
#[test]
fn a_hosts_fields_beside_a_refs_version_survive_pushes_of_other_refs() {
    let t = TestEnv::new();
    let mut l = lake(5, 2);
    let entry = |n: u64| format!(r#"{{"version": "{}", "approved_by": "host"}}"#, vid(n));
    let refs_json = format!(
        r#"{{"refs/heads/main": {}, "refs/tags/v1": {}}}"#,
        entry(5),
        entry(2)
    );
    l.put("refs.json", refs_json.into_bytes());
    let url = t.local_lake("lake", &l);
    t.ok(".", &["clone", "-q", &url, "work"]);
    t.ok(
        "work",
        &["push", "-q", "origin", "origin/main~1:refs/tags/v4"],
    );
    let after: serde_json::Value =
        serde_json::from_slice(&std::fs::read(t.path("lake/refs.json")).unwrap()).unwrap();
    assert_eq!(after["refs/heads/main"]["approved_by"], "host", "{after}");
    assert_eq!(after["refs/tags/v1"]["approved_by"], "host", "{after}");
    assert_eq!(after["refs/tags/v4"], serde_json::json!(vid(4)), "{after}");
    // main moves: its approval was of version 5, not of the version it holds now.
    t.ok(
        "work",
        &["push", "-q", "-f", "origin", "origin/main~2:main"],
    );
    let after: serde_json::Value =
        serde_json::from_slice(&std::fs::read(t.path("lake/refs.json")).unwrap()).unwrap();
    assert_eq!(
        after["refs/heads/main"],
        serde_json::json!({ "version": vid(3) }),
        "{after}"
    );
    assert_eq!(after["refs/tags/v1"]["approved_by"], "host", "{after}");
}

/// A refs.json larger than a push reads (64 MiB) no longer stops every push: the refs are
/// written and refs.json is left as it is, with a warning (it was `fatal:` and nothing moved).
#[test]
fn a_refs_json_too_large_to_rewrite_leaves_it_and_still_pushes() {
    let t = TestEnv::new();
    let url = t.local_lake("lake", &lake(5, 2));
    t.ok(".", &["clone", "-q", &url, "work"]);
    let padding = "x".repeat((64 << 20) + 1);
    let huge = format!(r#"{{"refs/heads/main": "{}", "pad": "{padding}"}}"#, vid(5));
    std::fs::write(t.path("lake/refs.json"), &huge).unwrap();
    let out = t.git("work", &["push", "origin", "origin/main~1:refs/tags/v4"]);
    let err = text(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("refs.json: larger than the 67108864-byte limit for this file")
            && err.contains("this push writes the refs and leaves refs.json as it is"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(t.path("lake/refs/tags/v4"))
            .unwrap()
            .trim(),
        vid(4)
    );
    assert_eq!(
        std::fs::metadata(t.path("lake/refs.json")).unwrap().len(),
        huge.len() as u64
    );
}

/// fsck reports a refs.json too large to read as one problem and checks the rest.
#[test]
fn fsck_reports_a_refs_json_too_large_to_read_as_a_problem() {
    let t = TestEnv::new();
    let url = t.local_lake("lake", &lake(5, 2));
    let padding = "x".repeat((64 << 20) + 1);
    let huge = format!(r#"{{"refs/heads/main": "{}", "pad": "{padding}"}}"#, vid(5));
    std::fs::write(t.path("lake/refs.json"), &huge).unwrap();
    let out = t
        .command(env!("CARGO_BIN_EXE_git-remote-fdl"), ".", &["fsck", &url])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        "error: refs.json: larger than the 67108864-byte limit for this file\n"
    );
    assert!(text(&out.stderr).contains("Checked 2 refs and 5 versions: 1 problem"));
}
