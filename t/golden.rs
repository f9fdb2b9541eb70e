//! Mapping v1, pinned. The lake in `t/fixtures/golden-lake/` must always map to the commit IDs
//! below (they are also the test vectors of `docs/mapping.md`). If one of these tests fails,
//! the mapping changed and every commit users have pinned would change with it: don't.

use std::io::Write;
use std::path::PathBuf;
use std::process::Stdio;

use crate::support::http::serve;
use crate::support::{copy_dir, parse_ls_remote, LakeBuilder, TestEnv};

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

fn pipe(t: &TestEnv, args: &[&str], input: &[u8]) -> String {
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

// Edge vectors: the answers docs/mapping.md gives where two careful readers could differ
// ("Reading the record" and "Test vectors"). Each readable one is rebuilt with Git's plumbing
// from the documented rules; each unreadable one pins the refusal.

/// The parent edge vectors name: a root whose record is `{"message": "p"}`.
pub(crate) const P: &str = "e0000000-0000-4000-8000-000000000000";
pub(crate) const COMMIT_P: &str = "3053e32c4e89293eb13b3c830e453932b41b67d3";

/// A readable edge vector: its inputs, what the rules make of them, and its pinned commit.
pub(crate) struct Readable {
    pub(crate) name: &'static str,
    pub(crate) id: &'static str,
    pub(crate) record: Vec<u8>,
    pub(crate) dataset: Option<&'static [u8]>,
    /// Version IDs (`P` only), in commit order.
    pub(crate) parents: &'static [&'static str],
    pub(crate) ident: &'static str,
    pub(crate) time: u64,
    /// The message before the trailer.
    pub(crate) message: &'static str,
    pub(crate) commit: &'static str,
}

/// `{"message": "<message>", "x": ...}` nested `levels` deep in all, the top object included.
fn nested(levels: usize, message: &str) -> Vec<u8> {
    let inner = levels - 1;
    format!(
        r#"{{"message": "{message}", "x": {}{}}}"#,
        "[".repeat(inner),
        "]".repeat(inner)
    )
    .into_bytes()
}

pub(crate) fn readable_vectors() -> Vec<Readable> {
    let r = |s: &str| s.as_bytes().to_vec();
    vec![
        Readable {
            name: "duplicate-key-last-wins",
            id: "e0000000-0000-4000-8000-000000000001",
            record: r(
                r#"{"parents": 5, "parents": ["e0000000-0000-4000-8000-000000000000"], "message": "Later duplicate wins"}"#,
            ),
            dataset: None,
            parents: &[P],
            ident: "unknown <>",
            time: 0,
            message: "Later duplicate wins",
            commit: "ceaa6b90b44e1821a0b63b7b75e776baebc16f5f",
        },
        Readable {
            name: "parents-null-beside-parent",
            id: "e0000000-0000-4000-8000-000000000002",
            record: r(
                r#"{"parents": null, "parent": "e0000000-0000-4000-8000-000000000000", "message": "parents is present"}"#,
            ),
            dataset: None,
            parents: &[],
            ident: "unknown <>",
            time: 0,
            message: "parents is present",
            commit: "c59880c0eb86c28d36b987f075dbbc6b6571da30",
        },
        Readable {
            name: "parent-when-parents-absent",
            id: "e0000000-0000-4000-8000-000000000003",
            record: r(
                r#"{"parent": " \t\r\nE0000000-0000-4000-8000-000000000000\n ", "message": "parent, trimmed"}"#,
            ),
            dataset: None,
            parents: &[P],
            ident: "unknown <>",
            time: 0,
            message: "parent, trimmed",
            commit: "abc2a0ea3cc48b660b1f37148f2bb62232a42787",
        },
        Readable {
            name: "parent-ignored-beside-parents",
            id: "e0000000-0000-4000-8000-000000000004",
            record: r(
                r#"{"parents": ["e0000000-0000-4000-8000-000000000000"], "parent": 5, "message": "parent ignored"}"#,
            ),
            dataset: None,
            parents: &[P],
            ident: "unknown <>",
            time: 0,
            message: "parent ignored",
            commit: "fdc01eee26db3d7665c72e72efe2fc117ad3c454",
        },
        Readable {
            name: "duplicate-parents",
            id: "e0000000-0000-4000-8000-000000000005",
            record: r(
                r#"{"parents": ["e0000000-0000-4000-8000-000000000000", "E0000000-0000-4000-8000-000000000000"], "message": "twice"}"#,
            ),
            dataset: None,
            parents: &[P, P],
            ident: "unknown <>",
            time: 0,
            message: "twice",
            commit: "55f90d68c8baaf4a0ac9648924757b5a2740a0e4",
        },
        Readable {
            name: "message-cr-before-nul",
            id: "e0000000-0000-4000-8000-000000000006",
            record: r(r#"{"message": "a\r\u0000\nb"}"#),
            dataset: None,
            parents: &[],
            ident: "unknown <>",
            time: 0,
            message: "a\n\nb",
            commit: "a20040356c825bb348017b2564aeda863921ab57",
        },
        Readable {
            name: "message-blanks",
            id: "e0000000-0000-4000-8000-000000000007",
            record: r(r#"{"message": "\n\n a \t\n\u00a0\n \n\t\nb\u000b\n\n"}"#),
            dataset: None,
            parents: &[],
            ident: "unknown <>",
            time: 0,
            message: " a\n\u{a0}\n\nb\u{b}",
            commit: "42e6279919bbc8280cbaeef1da4d898a226bfe37",
        },
        Readable {
            // A UUIDv7: the clamped time 0 is a time, so the ID's time is not used.
            name: "time-clamp-after-offset",
            id: "0190f3a2-7b4c-7d2e-8f10-0000000000e8",
            record: r(r#"{"created_at": "1970-01-01T00:30:00+01:00", "message": "clamped"}"#),
            dataset: None,
            parents: &[],
            ident: "unknown <>",
            time: 0,
            message: "clamped",
            commit: "11723be26079021e17679786890c26a6ba2494d1",
        },
        Readable {
            name: "time-offset-before-clamp",
            id: "e0000000-0000-4000-8000-000000000009",
            record: r(r#"{"created_at": "1969-12-31T23:30:00-01:00", "message": "not clamped"}"#),
            dataset: None,
            parents: &[],
            ident: "unknown <>",
            time: 1800,
            message: "not clamped",
            commit: "324ca639e39287fd852a2359e3fa03d3f9db4653",
        },
        Readable {
            name: "time-keys-fall-through",
            id: "e0000000-0000-4000-8000-00000000000a",
            record: r(
                r#"{"created_at": 1722074400, "created": "2024-07-27 10:00:00Z", "timestamp": "2024-07-27T10:00:00+0200", "time": "2024-06-30T23:59:60.5Z", "message": "leap second"}"#,
            ),
            dataset: None,
            parents: &[],
            ident: "unknown <>",
            time: 1719792000,
            message: "leap second",
            commit: "e78a2afe4feb83f19c40cd1292c30a507e68db54",
        },
        Readable {
            name: "author-name-not-a-string",
            id: "e0000000-0000-4000-8000-00000000000b",
            record: r(r#"{"author": {"name": 5, "email": "ada@example.org"}, "message": "m"}"#),
            dataset: None,
            parents: &[],
            ident: "unknown <ada@example.org>",
            time: 0,
            message: "m",
            commit: "811e3f9aec553b936b8241f28a5ebbbcdd5214c1",
        },
        Readable {
            name: "author-email-not-a-string",
            id: "e0000000-0000-4000-8000-00000000000c",
            record: r(
                r#"{"author": {"name": "Ada", "email": ["ada@example.org"]}, "message": "m"}"#,
            ),
            dataset: None,
            parents: &[],
            ident: "Ada <>",
            time: 0,
            message: "m",
            commit: "2de6e0112ce920c21f05b43c4c07f242087a4da4",
        },
        Readable {
            name: "author-string-edges",
            id: "e0000000-0000-4000-8000-00000000000d",
            record: r(r#"{"author": "A <b> c>", "message": "m"}"#),
            dataset: None,
            parents: &[],
            ident: "A <b c>",
            time: 0,
            message: "m",
            commit: "7e3548044c97815994d12775957537096c7bef3e",
        },
        Readable {
            name: "author-no-break-spaces",
            id: "e0000000-0000-4000-8000-00000000000e",
            record: r(r#"{"author": "\u00a0Ada <ada@example.org>\u00a0", "message": "m"}"#),
            dataset: None,
            parents: &[],
            ident: "\u{a0}Ada ada@example.org\u{a0} <>",
            time: 0,
            message: "m",
            commit: "a8d58e868d2eb3bac997fb59bd0ee21473327cd0",
        },
        Readable {
            name: "nul-in-strings",
            id: "e0000000-0000-4000-8000-00000000000f",
            record: r(r#"{"author": "A\u0000da <ada\u0000@example.org>", "message": "\u0000"}"#),
            dataset: None,
            parents: &[],
            ident: "Ada <ada@example.org>",
            time: 0,
            message: "Version e0000000-0000-4000-8000-00000000000f",
            commit: "4bcb32b45b7de74e9b3d708c4e1932d8e50b9acb",
        },
        Readable {
            name: "escaped-keys",
            id: "e0000000-0000-4000-8000-000000000010",
            record: r(r#"{"m\u0065ssage": "escaped key", "\u0061uthor": "Ada"}"#),
            dataset: None,
            parents: &[],
            ident: "Ada <>",
            time: 0,
            message: "escaped key",
            commit: "fc3e125cb14a2ae8a0fd0eda7fdbf60811b4946e",
        },
        Readable {
            name: "number-forms",
            id: "e0000000-0000-4000-8000-000000000011",
            record: r(
                r#"{"n": [1e400, -0, 1E+2, 0.5e-999, 123456789012345678901234567890, -1.0], "message": "numbers"}"#,
            ),
            dataset: None,
            parents: &[],
            ident: "unknown <>",
            time: 0,
            message: "numbers",
            commit: "4d851a77677eb699645b2b408286b9ad3275f212",
        },
        Readable {
            name: "json-whitespace",
            id: "e0000000-0000-4000-8000-000000000012",
            record: r(" \t\r\n{\"message\" : \"blanks\"}\r\n \t"),
            dataset: None,
            parents: &[],
            ident: "unknown <>",
            time: 0,
            message: "blanks",
            commit: "a2652b829b6726904872bcf2f56462a8cfe3557d",
        },
        Readable {
            name: "nesting-127",
            id: "e0000000-0000-4000-8000-000000000013",
            record: nested(127, "deep"),
            dataset: None,
            parents: &[],
            ident: "unknown <>",
            time: 0,
            message: "deep",
            commit: "102f0fbd2cfb1255db198e2e969db4e984a4d07f",
        },
        Readable {
            name: "serde-number-token",
            id: "e0000000-0000-4000-8000-000000000014",
            record: r(
                r#"{"x": {"$serde_json::private::Number": "1"}, "author": {"$serde_json::private::Number": "2"}, "message": "token"}"#,
            ),
            dataset: None,
            parents: &[],
            ident: "unknown <>",
            time: 0,
            message: "token",
            commit: "adeab2e5356ac2ac4be6fdb7e4b752e5ad3694c4",
        },
        Readable {
            name: "dataset-json-bytes",
            id: "e0000000-0000-4000-8000-000000000015",
            record: r(r#"{"message": "dataset taken as bytes"}"#),
            dataset: Some(b"\xef\xbb\xbfnot json\x00\r\n"),
            parents: &[],
            ident: "unknown <>",
            time: 0,
            message: "dataset taken as bytes",
            commit: "01dcb701a4b25d4103b483c785a04fe4027d9de7",
        },
        Readable {
            name: "dataset-json-empty",
            id: "e0000000-0000-4000-8000-000000000016",
            record: r(r#"{"message": "empty dataset"}"#),
            dataset: Some(b""),
            parents: &[],
            ident: "unknown <>",
            time: 0,
            message: "empty dataset",
            commit: "e2976863dcad3e7cb533fe601eff16e36b3f0eb6",
        },
    ]
}

/// The parent `P` every edge lake holds.
fn edge_lake() -> LakeBuilder {
    let mut l = LakeBuilder::new();
    l.record(P, br#"{"message": "p"}"#.to_vec());
    l
}

/// Git plumbing in a bare repository, for rebuilding commits from the documented rules.
struct Plumb<'a> {
    t: &'a TestEnv,
}

impl Plumb<'_> {
    fn new(t: &TestEnv) -> Plumb<'_> {
        t.ok(".", &["init", "-q", "--bare", "plumb.git"]);
        Plumb { t }
    }

    fn blob(&self, bytes: &[u8]) -> String {
        pipe(self.t, &["hash-object", "-w", "--stdin"], bytes)
    }

    fn tree(&self, dataset: Option<&[u8]>, version: &[u8]) -> String {
        let mut spec = String::new();
        if let Some(d) = dataset {
            spec.push_str(&format!("100644 blob {}\tdataset.json\n", self.blob(d)));
        }
        spec.push_str(&format!(
            "100644 blob {}\tversion.json\n",
            self.blob(version)
        ));
        pipe(self.t, &["mktree"], spec.as_bytes())
    }

    /// `git commit-tree` would drop a repeated parent, so the object is written by hand.
    fn commit(&self, tree: &str, parents: &[&str], ident: &str, time: u64, msg: &str) -> String {
        let mut body = format!("tree {tree}\n");
        for p in parents {
            body.push_str(&format!("parent {p}\n"));
        }
        body.push_str(&format!(
            "author {ident} {time} +0000\ncommitter {ident} {time} +0000\n\n{msg}"
        ));
        pipe(
            self.t,
            &["hash-object", "-t", "commit", "-w", "--stdin"],
            body.as_bytes(),
        )
    }
}

fn ls_remote_map(t: &TestEnv, url: &str) -> std::collections::BTreeMap<String, String> {
    parse_ls_remote(&t.ok(".", &["ls-remote", url]))
        .into_iter()
        .map(|(oid, name)| (name, oid))
        .collect()
}

#[test]
fn golden_edge_vectors_map_to_pinned_commits() {
    let t = TestEnv::new();
    let vectors = readable_vectors();
    let mut l = edge_lake();
    l.set_ref("refs/heads/p", P);
    for v in &vectors {
        l.record(v.id, v.record.clone());
        if let Some(d) = v.dataset {
            l.put(&format!("versions/{}/dataset.json", v.id), d);
        }
        l.set_ref(&format!("refs/heads/{}", v.name), v.id);
    }
    let url = t.local_lake("lake", &l);
    let got = ls_remote_map(&t, &url);

    let plumb = Plumb::new(&t);
    let p = plumb.commit(
        &plumb.tree(None, br#"{"message": "p"}"#),
        &[],
        "unknown <>",
        0,
        &format!("p\n\nFDL-Version: {P}\n"),
    );
    assert_eq!(got["refs/heads/p"], p);
    let mut report = String::new();
    let mut pinned = p == COMMIT_P;
    report.push_str(&format!("p {p}\n"));
    for v in &vectors {
        let parents: Vec<&str> = v.parents.iter().map(|_| p.as_str()).collect();
        let rebuilt = plumb.commit(
            &plumb.tree(v.dataset, &v.record),
            &parents,
            v.ident,
            v.time,
            &format!("{}\n\nFDL-Version: {}\n", v.message, v.id),
        );
        assert_eq!(
            got[&format!("refs/heads/{}", v.name)],
            rebuilt,
            "{}: the helper and the documented rules disagree",
            v.name
        );
        pinned &= rebuilt == v.commit;
        report.push_str(&format!("{} {rebuilt}\n", v.name));
    }
    assert!(pinned, "pinned commits changed:\n{report}");
    // Git takes every one of these objects as they are (a repeated parent included).
    t.ok(
        ".",
        &["clone", "-q", "--bare", "--mirror", &url, "clone.git"],
    );
    t.ok("clone.git", &["fsck", "--strict", "--no-dangling"]);
}

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
