//! Mapping v1, pinned. The lake in `t/fixtures/golden-lake/` must always map to the commit IDs
//! below (they are also the test vectors of `docs/mapping.md`). If one of these tests fails,
//! the mapping changed and every commit users have pinned would change with it: don't.

use std::io::Write;
use std::path::PathBuf;
use std::process::Stdio;

use crate::support::http::serve;
use crate::support::{copy_dir, TestEnv};

pub(crate) const A: &str = "0190f3a2-7b4c-7d2e-8f10-000000000001";
const B: &str = "0190f3a2-8000-7d2e-8f10-000000000002";
pub(crate) const C: &str = "5f0c8a52-6d3e-4f8e-9b1a-2c7d4e9f0a13";
pub(crate) const D: &str = "0190f3a2-9000-7d2e-8f10-000000000004";

pub(crate) const COMMIT_A: &str = "4907f83cdf8ecbac004b5ade6627e72728bff17b";
pub(crate) const COMMIT_C: &str = "ae8d1559cd8b2dd7bf3a0d481ba2e6afe39be9bc";
pub(crate) const COMMIT_D: &str = "f56348e23959f201614353d63104261fe5111700";

pub(crate) fn golden() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("t/fixtures/golden-lake")
}

fn expected_ls_remote() -> String {
    format!("{COMMIT_D}\tHEAD\n{COMMIT_C}\trefs/heads/feature/x\n{COMMIT_D}\trefs/heads/main\n{COMMIT_A}\trefs/tags/v1\n")
}

#[test]
fn golden_lake_maps_to_pinned_commits() {
    let t = TestEnv::new();
    let url = format!("fdl::{}", golden().display());
    assert_eq!(t.ok(".", &["ls-remote", &url]), expected_ls_remote());
    // Through plain HTTP and refs.json: the same commits.
    let server = serve(&golden());
    assert_eq!(
        t.ok(".", &["ls-remote", &format!("fdl::{}", server.url)]),
        expected_ls_remote()
    );
}

#[test]
fn golden_commits_rebuilt_with_git_plumbing_from_the_documented_rules() {
    let t = TestEnv::new();
    t.ok(".", &["init", "-q", "--bare", "plumb.git"]);
    let lake = golden();
    let blob = |rel: &str| -> String {
        let path = lake.join(rel);
        t.ok("plumb.git", &["hash-object", "-w", path.to_str().unwrap()])
            .trim()
            .to_string()
    };
    let tree = |entries: &[(&str, String)]| -> String {
        let spec: String = entries
            .iter()
            .map(|(n, id)| format!("100644 blob {id}\t{n}\n"))
            .collect();
        pipe(&t, &["mktree"], spec.as_bytes())
    };
    // docs/mapping.md, step by step: identity, time, message with trailer, parents in order.
    let commit = |tree: &str,
                  parents: &[&str],
                  name: &str,
                  email: &str,
                  secs: u64,
                  message: &str|
     -> String {
        let mut body = format!("tree {tree}\n");
        for p in parents {
            body.push_str(&format!("parent {p}\n"));
        }
        body.push_str(&format!("author {name} <{email}> {secs} +0000\ncommitter {name} <{email}> {secs} +0000\n\n{message}"));
        pipe(
            &t,
            &["hash-object", "-t", "commit", "-w", "--stdin"],
            body.as_bytes(),
        )
    };
    let ta = tree(&[("version.json", blob(&format!("versions/{A}/version.json")))]);
    let a = commit(
        &ta,
        &[],
        "Ada Lovelace",
        "ada@example.org",
        1722074400,
        &format!("Initial load\n\nFDL-Version: {A}\n"),
    );
    assert_eq!(a, COMMIT_A);
    let tb = tree(&[
        ("dataset.json", blob(&format!("versions/{B}/dataset.json"))),
        ("version.json", blob(&format!("versions/{B}/version.json"))),
    ]);
    // 2024-07-28T12:30:45.999+02:00 is 10:30:45 UTC, fraction dropped.
    let b = commit(
        &tb,
        &[&a],
        "Zoë Çelik",
        "zoe@example.org",
        1722162645,
        &format!("Ventes: ajout 2026\n\nDétails\n\nFDL-Version: {B}\n"),
    );
    let tc = tree(&[
        ("dataset.json", blob(&format!("versions/{C}/dataset.json"))),
        ("version.json", blob(&format!("versions/{C}/version.json"))),
    ]);
    // No time and not a UUIDv7: time 0. Empty message: "Version <id>".
    let c = commit(
        &tc,
        &[&a],
        "李雷",
        "",
        0,
        &format!("Version {C}\n\nFDL-Version: {C}\n"),
    );
    assert_eq!(c, COMMIT_C);
    let td = tree(&[
        ("dataset.json", blob(&format!("versions/{D}/dataset.json"))),
        ("version.json", blob(&format!("versions/{D}/version.json"))),
    ]);
    // No author: "unknown <>". No time field: the UUIDv7's milliseconds, 0x0190f3a29000 ms.
    let d = commit(
        &td,
        &[&b, &c],
        "unknown",
        "",
        0x0190f3a29000 / 1000,
        &format!("Merge C into B\n\nFDL-Version: {D}\n"),
    );
    assert_eq!(d, COMMIT_D);

    // And a clone holds exactly these objects, byte for byte.
    let url = format!("fdl::{}", golden().display());
    t.ok(".", &["clone", "-q", "--bare", &url, "clone.git"]);
    for id in [&a, &b, &c, &d] {
        let theirs = t.ok("plumb.git", &["cat-file", "commit", id]);
        let ours = t.ok("clone.git", &["cat-file", "commit", id]);
        assert_eq!(theirs, ours);
    }
    assert_eq!(
        t.ok("clone.git", &["ls-tree", "--name-only", "main"]),
        "dataset.json\nversion.json\n"
    );
}

#[test]
fn files_a_host_adds_later_never_change_a_commit() {
    let t = TestEnv::new();
    copy_dir(&golden(), &t.path("lake"));
    for v in [A, B, C, D] {
        let dir = t.path(&format!("lake/versions/{v}"));
        std::fs::write(dir.join("files.json"), "{\"added\": \"later\"}").unwrap();
        std::fs::write(dir.join("version.json.sig"), "signature").unwrap();
        std::fs::write(dir.join("expired.json"), "{}").unwrap();
        std::fs::write(dir.join("preview.png"), [0u8, 1, 2]).unwrap();
        std::fs::create_dir_all(dir.join("catalogs")).unwrap();
        std::fs::write(dir.join("catalogs/1.0.duckdb"), "old format").unwrap();
    }
    let url = format!("fdl::{}", t.path("lake").display());
    assert_eq!(t.ok(".", &["ls-remote", &url]), expected_ls_remote());
}

pub(crate) fn pipe(t: &TestEnv, args: &[&str], input: &[u8]) -> String {
    let mut child = t
        .command("git", "plumb.git", args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}
