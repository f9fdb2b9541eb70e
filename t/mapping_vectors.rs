//! Mapping v1's vectors as data (`docs/mapping-vectors.json`): every golden vector and refusal
//! of `t/golden.rs`, `t/golden_edges.rs` and `t/golden_refusals.rs` in a form another
//! implementation runs without reading prose, and the helper run on every case of that file
//! alone. `FDL_WRITE_MAPPING_VECTORS=1` writes the file anew from them instead of checking it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use serde_json::{json, Map, Value};

use crate::golden;
use crate::golden_edges::{self, Readable, COMMIT_P, P};
use crate::golden_refusals;
use crate::support::{parse_ls_remote, TestEnv};

fn vectors_file() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("docs/mapping-vectors.json")
}

/// A file's bytes as the format holds them: text where they are UTF-8, else base64; a file of
/// one repeated byte after some text (the size limits) as that text and its length.
fn file_value(bytes: &[u8]) -> Value {
    let pad = bytes.len() > 4096 && bytes.ends_with(&[b' '; 64]);
    if pad {
        let text = std::str::from_utf8(bytes).unwrap().trim_end_matches(' ');
        return json!({"text": text, "pad": " ", "to": bytes.len()});
    }
    match std::str::from_utf8(bytes) {
        Ok(text) => Value::String(text.to_string()),
        Err(_) => json!({"base64": base64::engine::general_purpose::STANDARD.encode(bytes)}),
    }
}

fn file_bytes(value: &Value) -> Vec<u8> {
    match value {
        Value::String(text) => text.as_bytes().to_vec(),
        Value::Object(o) if o.contains_key("base64") => base64::engine::general_purpose::STANDARD
            .decode(o["base64"].as_str().unwrap())
            .unwrap(),
        Value::Object(o) => {
            let mut bytes = o["text"].as_str().unwrap().as_bytes().to_vec();
            let pad = o["pad"].as_str().unwrap().as_bytes();
            assert_eq!(pad.len(), 1, "pad is one byte");
            bytes.resize(o["to"].as_u64().unwrap() as usize, pad[0]);
            bytes
        }
        other => panic!("not a file: {other}"),
    }
}

fn files_of(files: &BTreeMap<String, Vec<u8>>) -> Value {
    Value::Object(
        files
            .iter()
            .map(|(path, bytes)| (path.clone(), file_value(bytes)))
            .collect(),
    )
}

/// A lake as `t/golden_edges.rs` writes it (`fdl.json`, `HEAD`), the parent every edge case holds,
/// and a version `id` with `record` that `main` names.
fn edge_files(id: &str, record: &[u8], dataset: Option<&[u8]>) -> BTreeMap<String, Vec<u8>> {
    let mut files = crate::support::LakeBuilder::new().files;
    files.insert(
        format!("versions/{P}/version.json"),
        br#"{"message": "p"}"#.to_vec(),
    );
    files.insert(format!("versions/{id}/version.json"), record.to_vec());
    if let Some(d) = dataset {
        files.insert(format!("versions/{id}/dataset.json"), d.to_vec());
    }
    files.insert("refs/heads/main".into(), format!("{id}\n").into_bytes());
    files
}

fn readable_case(v: &Readable) -> Value {
    // P is in the lake whatever the record says, but a commit only where it is a parent.
    let mut commits = Map::new();
    if !v.parents.is_empty() {
        commits.insert(P.into(), COMMIT_P.into());
    }
    commits.insert(v.id.into(), v.commit.into());
    json!({
        "name": v.name,
        "files": files_of(&edge_files(v.id, &v.record, v.dataset)),
        "commits": commits,
        "refs": {"HEAD": v.commit, "refs/heads/main": v.commit},
    })
}

fn unreadable_case(name: &str, id: &str, files: BTreeMap<String, Vec<u8>>, refusal: &str) -> Value {
    json!({"name": name, "files": files_of(&files), "unreadable": [id], "refusal": refusal})
}

/// Every file of a folder lake, by its path under the lake.
fn files_below(root: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else {
                let rel = path.strip_prefix(root).unwrap().to_str().unwrap();
                out.insert(rel.to_string(), std::fs::read(&path).unwrap());
            }
        }
    }
    out
}

/// The file's content, made from the vectors of `t/golden.rs`, `t/golden_edges.rs` and
/// `t/golden_refusals.rs`.
fn rendered() -> String {
    let mut cases = vec![json!({
        "name": "golden-lake",
        "files": files_of(&files_below(&golden::golden())),
        "commits": {
            golden::A: golden::COMMIT_A,
            golden::C: golden::COMMIT_C,
            golden::D: golden::COMMIT_D,
        },
        "refs": {
            "HEAD": golden::COMMIT_D,
            "refs/heads/feature/x": golden::COMMIT_C,
            "refs/heads/main": golden::COMMIT_D,
            "refs/tags/v1": golden::COMMIT_A,
        },
    })];
    cases.extend(golden_edges::readable_vectors().iter().map(readable_case));
    // The size limits are inclusive: a record of 16 MiB and a dataset.json of 64 MiB.
    let id = "e0000000-0000-4000-8000-0000000000fe";
    let mut record = br#"{"message": "at the limits"}"#.to_vec();
    record.resize(16 << 20, b' ');
    let dataset = vec![b' '; 64 << 20];
    let at = "eb758ff46fd66b6cd0cd1f287bc9f06470ba1576";
    cases.push(json!({
        "name": "size-limits",
        "files": files_of(&edge_files(id, &record, Some(&dataset))),
        "commits": {id: at},
        "refs": {"HEAD": at, "refs/heads/main": at},
    }));
    let bad = "e0000000-0000-4000-8000-0000000000ff";
    for (name, record, why) in golden_refusals::unreadable_vectors() {
        // The words after "is not valid JSON:" are the JSON library's, not the mapping's.
        let why = match why.split_once("is not valid JSON:") {
            Some((before, _)) => format!("{before}is not valid JSON"),
            None => why.to_string(),
        };
        let files = edge_files(bad, &record, None);
        cases.push(unreadable_case(
            name,
            bad,
            files,
            &format!("version {bad}: {why}"),
        ));
    }
    let over = [&record[..], b" "].concat();
    cases.push(unreadable_case(
        "version-json-over-the-limit",
        id,
        edge_files(id, &over, Some(&dataset)),
        &format!("versions/{id}/version.json: larger than the 16777216-byte limit for this file"),
    ));
    let over = [&dataset[..], b" "].concat();
    cases.push(unreadable_case(
        "dataset-json-over-the-limit",
        id,
        edge_files(id, &record, Some(&over)),
        &format!("versions/{id}/dataset.json: larger than the 67108864-byte limit for this file"),
    ));
    let doc = json!({
        "format": 1,
        "mapping": "FDL mapping v1 (docs/mapping.md)",
        "files": "each case's lake, by path under its root: a string is the file's bytes as UTF-8; {\"base64\": B} its bytes in base64; {\"text\": T, \"pad\": C, \"to\": N} T followed by the one-byte C up to N bytes",
        "commits": "version ID -> the commit it maps to",
        "refs": "what git ls-remote lists: ref (and HEAD) -> commit",
        "unreadable": "versions the lake cannot map: listing the lake fails, and the refusal names the version with the words of 'refusal' (the JSON library's own words after 'is not valid JSON' are not part of the mapping)",
        "cases": cases,
    });
    format!("{}\n", serde_json::to_string_pretty(&doc).unwrap())
}

#[test]
fn mapping_vectors_json_holds_every_golden_vector() {
    let want = rendered();
    if std::env::var_os("FDL_WRITE_MAPPING_VECTORS").is_some() {
        std::fs::write(vectors_file(), &want).unwrap();
    }
    let have = std::fs::read_to_string(vectors_file()).unwrap_or_default();
    assert!(
        have == want,
        "docs/mapping-vectors.json differs from the vectors of t/golden*.rs; \
         FDL_WRITE_MAPPING_VECTORS=1 writes it anew (never to change a commit)"
    );
}

/// Each version's commit in a mirror clone, from its `FDL-Version` trailer.
fn commits_by_version(t: &TestEnv, repo: &str) -> BTreeMap<String, String> {
    let log = t.ok(
        repo,
        &[
            "log",
            "--all",
            "--format=%H %(trailers:key=FDL-Version,valueonly,separator=)",
        ],
    );
    log.lines()
        .filter_map(|l| l.split_once(' '))
        .map(|(commit, version)| (version.trim().to_string(), commit.to_string()))
        .collect()
}

#[test]
fn every_case_of_mapping_vectors_json_maps_as_it_says() {
    let doc: Value =
        serde_json::from_str(&std::fs::read_to_string(vectors_file()).unwrap()).unwrap();
    assert_eq!(doc["format"], 1);
    let t = TestEnv::new();
    let cases = doc["cases"].as_array().unwrap();
    for (n, case) in cases.iter().enumerate() {
        let name = case["name"].as_str().unwrap();
        let root = t.path(&format!("case-{n}"));
        for (path, value) in case["files"].as_object().unwrap() {
            let file = root.join(path);
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(file, file_bytes(value)).unwrap();
        }
        let url = format!("fdl::{}", root.display());
        if let Some(unreadable) = case.get("unreadable") {
            let refusal = case["refusal"].as_str().unwrap();
            let err = t.fails(".", &["ls-remote", &url]);
            let first = err.lines().next().unwrap_or("");
            assert!(
                first.starts_with("fatal: lake '") && first.contains(&format!("': {refusal}")),
                "{name}: expected a refusal with {refusal:?}, got:\n{err}"
            );
            for id in unreadable.as_array().unwrap() {
                assert!(first.contains(id.as_str().unwrap()), "{name}: {first}");
            }
            continue;
        }
        let listed: Map<String, Value> = parse_ls_remote(&t.ok(".", &["ls-remote", &url]))
            .into_iter()
            .map(|(commit, name)| (name, Value::String(commit)))
            .collect();
        assert_eq!(&Value::Object(listed), &case["refs"], "{name}: refs");
        let repo = format!("case-{n}.git");
        t.ok(".", &["clone", "-q", "--mirror", &url, &repo]);
        let got = commits_by_version(&t, &repo);
        for (version, commit) in case["commits"].as_object().unwrap() {
            assert_eq!(
                got.get(version).map(String::as_str),
                commit.as_str(),
                "{name}: the commit of version {version}"
            );
        }
        std::fs::remove_dir_all(&root).unwrap();
        std::fs::remove_dir_all(t.path(&repo)).unwrap();
    }
}
