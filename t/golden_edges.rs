//! Mapping v1's edge vectors, pinned: each readable record where two careful readers of
//! `docs/mapping.md` could differ maps to the commit below, rebuilt with Git's plumbing from the
//! documented rules. If one of these tests fails, the mapping changed: don't.

use crate::golden::pipe;
use crate::support::{parse_ls_remote, LakeBuilder, TestEnv};

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
pub(crate) fn nested(levels: usize, message: &str) -> Vec<u8> {
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
pub(crate) fn edge_lake() -> LakeBuilder {
    let mut l = LakeBuilder::new();
    l.record(P, br#"{"message": "p"}"#.to_vec());
    l
}

/// Git plumbing in a bare repository, for rebuilding commits from the documented rules.
pub(crate) struct Plumb<'a> {
    t: &'a TestEnv,
}

impl Plumb<'_> {
    pub(crate) fn new(t: &TestEnv) -> Plumb<'_> {
        t.ok(".", &["init", "-q", "--bare", "plumb.git"]);
        Plumb { t }
    }

    fn blob(&self, bytes: &[u8]) -> String {
        pipe(self.t, &["hash-object", "-w", "--stdin"], bytes)
    }

    pub(crate) fn tree(&self, dataset: Option<&[u8]>, version: &[u8]) -> String {
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
    pub(crate) fn commit(
        &self,
        tree: &str,
        parents: &[&str],
        ident: &str,
        time: u64,
        msg: &str,
    ) -> String {
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

pub(crate) fn ls_remote_map(t: &TestEnv, url: &str) -> std::collections::BTreeMap<String, String> {
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
