//! Mapping v1's edge vectors, pinned: each record no reader may read is refused as below, the
//! size limits are inclusive, and a `dataset.json` that is a folder is refused on a folder lake
//! and absent on an object store. If one of these tests fails, the mapping changed: don't.

use crate::golden_edges::{edge_lake, ls_remote_map, nested, Plumb};
use crate::support::TestEnv;

/// Unreadable records: (name, version.json bytes, what the refusal says after `version <id>: `).
pub(crate) fn unreadable_vectors() -> Vec<(&'static str, Vec<u8>, &'static str)> {
    let r = |s: &str| s.as_bytes().to_vec();
    let mut deep_replaced = b"{\"x\": ".to_vec();
    deep_replaced.extend_from_slice(&nested(127, "")[..]);
    deep_replaced.extend_from_slice(b", \"x\": 1}");
    vec![
        (
            "byte-order-mark",
            b"\xef\xbb\xbf{\"message\": \"bom\"}".to_vec(),
            "version.json is not valid JSON: expected value",
        ),
        (
            "empty-file",
            Vec::new(),
            "version.json is not valid JSON: EOF while parsing a value",
        ),
        (
            "parents-entry-number",
            r(r#"{"parents": ["e0000000-0000-4000-8000-000000000000", 5]}"#),
            "'parents' holds something that is not a string",
        ),
        (
            "parents-entry-null",
            r(r#"{"parents": [null]}"#),
            "'parents' holds something that is not a string",
        ),
        (
            "parents-entry-empty",
            r(r#"{"parents": ["e0000000-0000-4000-8000-000000000000", ""]}"#),
            "parent '' is not a version ID",
        ),
        (
            "parents-empty-string",
            r(r#"{"parents": ""}"#),
            "parent '' is not a version ID",
        ),
        (
            "parents-number-beside-parent",
            r(r#"{"parents": 5, "parent": "e0000000-0000-4000-8000-000000000000"}"#),
            "'parents' is neither a list nor a string",
        ),
        (
            "parent-no-break-space",
            r(r#"{"parents": ["\u00a0e0000000-0000-4000-8000-000000000000"]}"#),
            "parent '\\u{a0}e0000000-0000-4000-8000-000000000000' is not a version ID",
        ),
        (
            "parent-form-feed",
            r(r#"{"parents": ["\fe0000000-0000-4000-8000-000000000000"]}"#),
            "parent '\\u{c}e0000000-0000-4000-8000-000000000000' is not a version ID",
        ),
        (
            "parent-nul",
            r(r#"{"parents": ["e0000000-0000-4000-8000-000000000000\u0000"]}"#),
            "parent 'e0000000-0000-4000-8000-000000000000\\0' is not a version ID",
        ),
        (
            "nesting-128",
            nested(128, "deep"),
            "version.json is not valid JSON: recursion limit exceeded",
        ),
        (
            "nesting-128-under-replaced-key",
            deep_replaced,
            "version.json is not valid JSON: recursion limit exceeded",
        ),
        (
            "lone-surrogate-under-replaced-key",
            r(r#"{"message": "\ud800", "message": "ok"}"#),
            "version.json is not valid JSON: unexpected end of hex escape",
        ),
        (
            "non-utf8-in-unknown-field",
            b"{\"x\": \"\xff\", \"message\": \"m\"}".to_vec(),
            "version.json is not valid JSON: invalid unicode code point",
        ),
        (
            "raw-control-character",
            r("{\"message\": \"a\tb\"}"),
            "version.json is not valid JSON: control character",
        ),
        (
            "invalid-escape",
            r(r#"{"message": "a\'b"}"#),
            "version.json is not valid JSON: invalid escape",
        ),
        (
            "trailing-value",
            r(r#"{"message": "a"} {}"#),
            "version.json is not valid JSON: trailing characters",
        ),
        (
            "trailing-form-feed",
            r("{\"message\": \"a\"}\x0c"),
            "version.json is not valid JSON: trailing characters",
        ),
        (
            "trailing-nul",
            r("{\"message\": \"a\"}\0"),
            "version.json is not valid JSON: trailing characters",
        ),
        (
            "number-leading-zero",
            r(r#"{"n": 01}"#),
            "version.json is not valid JSON: invalid number",
        ),
        (
            "number-nan",
            r(r#"{"n": NaN}"#),
            "version.json is not valid JSON: expected value",
        ),
        (
            "not-an-object",
            r(r#"["message"]"#),
            "version.json is not a JSON object",
        ),
        (
            "serde-number-token-top-level",
            r(r#"{"$serde_json::private::Number": "1"}"#),
            "version.json is not a JSON object",
        ),
        (
            "serde-number-token-not-a-number",
            r(r#"{"x": {"$serde_json::private::Number": "abc"}, "message": "m"}"#),
            "version.json is not valid JSON: invalid number",
        ),
        (
            "serde-number-token-escaped",
            r(r#"{"x": {"$serde_json::private::Numb\u0065r": "abc"}, "message": "m"}"#),
            "version.json is not valid JSON: invalid number",
        ),
        (
            "serde-number-token-then-key",
            r(r#"{"x": {"$serde_json::private::Number": "1", "y": 2}, "message": "m"}"#),
            "version.json is not valid JSON: trailing comma",
        ),
    ]
}

/// Runs `git ls-remote` on `url`, insisting on one `fatal:` line that contains `expected`.
fn refused(t: &TestEnv, url: &str, expected: &str) {
    let err = t.fails(".", &["ls-remote", url]);
    let first = err.lines().next().unwrap_or("");
    assert!(
        first.starts_with("fatal: lake '") && first.contains(expected),
        "expected a refusal with {expected:?}, got:\n{err}"
    );
}

#[test]
fn golden_edge_vectors_unreadable_records_are_refused() {
    let t = TestEnv::new();
    let id = "e0000000-0000-4000-8000-0000000000ff";
    for (name, record, why) in unreadable_vectors() {
        let mut l = edge_lake();
        l.record(id, record);
        l.set_ref("refs/heads/main", id);
        let url = t.local_lake(name, &l);
        refused(&t, &url, &format!("': version {id}: {why}"));
    }
}

#[test]
fn golden_edge_vectors_size_limits_are_inclusive() {
    let t = TestEnv::new();
    let id = "e0000000-0000-4000-8000-0000000000fe";
    let mut record = br#"{"message": "at the limits"}"#.to_vec();
    record.resize(16 << 20, b' ');
    let dataset = vec![b' '; 64 << 20];
    let mut l = edge_lake();
    l.record(id, record.clone());
    l.put(&format!("versions/{id}/dataset.json"), dataset.clone());
    l.set_ref("refs/heads/main", id);
    let url = t.local_lake("at", &l);
    let plumb = Plumb::new(&t);
    let rebuilt = plumb.commit(
        &plumb.tree(Some(&dataset), &record),
        &[],
        "unknown <>",
        0,
        &format!("at the limits\n\nFDL-Version: {id}\n"),
    );
    assert_eq!(ls_remote_map(&t, &url)["refs/heads/main"], rebuilt);
    assert_eq!(rebuilt, "eb758ff46fd66b6cd0cd1f287bc9f06470ba1576");

    let mut over = l.clone();
    over.record(id, [&record[..], b" "].concat());
    let url = t.local_lake("version-over", &over);
    refused(
        &t,
        &url,
        &format!(
            "': versions/{id}/version.json: larger than the 16777216-byte limit for this file"
        ),
    );
    let mut over = l;
    over.put(
        &format!("versions/{id}/dataset.json"),
        [&dataset[..], b" "].concat(),
    );
    let url = t.local_lake("dataset-over", &over);
    refused(
        &t,
        &url,
        &format!(
            "': versions/{id}/dataset.json: larger than the 67108864-byte limit for this file"
        ),
    );
}

/// A folder lake has folders; an object store has none, so there a key below `dataset.json/` is
/// another file and `dataset.json` is absent.
#[test]
fn golden_edge_vectors_dataset_json_folder() {
    let mut t = TestEnv::new();
    let id = "e0000000-0000-4000-8000-0000000000fd";
    let mut l = edge_lake();
    l.record(id, br#"{"message": "dataset.json is a folder"}"#.to_vec());
    l.set_ref("refs/heads/main", id);
    let plain = t.local_lake("plain", &l);
    let absent = ls_remote_map(&t, &plain)["refs/heads/main"].clone();
    let plumb = Plumb::new(&t);
    let rebuilt = plumb.commit(
        &plumb.tree(None, br#"{"message": "dataset.json is a folder"}"#),
        &[],
        "unknown <>",
        0,
        &format!("dataset.json is a folder\n\nFDL-Version: {id}\n"),
    );
    assert_eq!(absent, rebuilt);
    assert_eq!(absent, "81e6550b69ebffa0b1ac775e83cde42c96317c34");

    l.put(&format!("versions/{id}/dataset.json/x"), "{}");
    let folder = t.local_lake("folder", &l);
    std::fs::remove_file(t.path(&format!("folder/versions/{id}/dataset.json/x"))).unwrap();
    refused(
        &t,
        &folder,
        &format!("': versions/{id}/dataset.json: is a folder, not a file"),
    );
    l.put(&format!("versions/{id}/dataset.json/x"), "{}");
    let folder = t.local_lake("folder-not-empty", &l);
    refused(
        &t,
        &folder,
        &format!("': versions/{id}/dataset.json: is a folder, not a file"),
    );
    // And fetching it updates nothing.
    t.ok(".", &["init", "-q", "work"]);
    t.fails("work", &["fetch", &folder, "main"]);

    let s3 = t.lake_at(crate::support::Where::S3, "s3", &l);
    assert_eq!(ls_remote_map(&t, &s3.url)["refs/heads/main"], absent);
}
