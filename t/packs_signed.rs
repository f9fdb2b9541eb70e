//! Issue 29, item 5: a lake whose readers require signatures (`fdlRequireSignatures`) clones
//! through its packs: `pack` records each version's `version.json.sig` (its ETag and text),
//! and the reader checks every packed version's signature against the keys it trusts before
//! it takes the version. A signature replaced or removed after packing is noticed by its
//! listed ETag, and that version is read and checked as without packs.

use crate::packs::{pack, read_one_by_one, requests_traced};
use crate::support::lake::vid;
use crate::support::signing::{keygen, signature};
use crate::support::{LakeBuilder, TestEnv, Where};

const VERSIONS: u64 = 200;

/// A chain of `VERSIONS` versions by Alice, each signed by her; `main` at the last, `v1`
/// half way.
fn signed_lake(t: &TestEnv) -> LakeBuilder {
    let mut l = LakeBuilder::new();
    let alice = serde_json::json!("Alice <alice@example.org>");
    for n in 1..=VERSIONS {
        let parents: Vec<u64> = (n > 1).then_some(n - 1).into_iter().collect();
        l.version_by(n, &parents, "signed work", alice.clone());
    }
    l.branch("main", VERSIONS).tag("v1", VERSIONS / 2);
    l.refs_json();
    for n in 1..=VERSIONS {
        let path = format!("versions/{}/version.json", vid(n));
        let sig = signature(t, "alice", &l.files[&path]);
        l.put(&format!("{path}.sig"), sig);
    }
    l
}

/// `git clone --bare` of `url` into `dir` with signatures required, trusting
/// `allowed_signers`, traced: whether it succeeded, what it said, and its requests.
fn strict_clone(t: &TestEnv, url: &str, dir: &str) -> (bool, String, u64) {
    let signers = format!(
        "remote.origin.fdlAllowedSignersFile={}",
        t.path("allowed_signers").display()
    );
    let args = [
        "clone",
        "-q",
        "--bare",
        "-c",
        "remote.origin.fdlRequireSignatures=true",
        "-c",
        &signers,
        url,
        dir,
    ];
    let out = t
        .command("git", ".", &args)
        .env("GIT_REMOTE_FDL_DEBUG", "1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let said = stderr.lines().filter(|l| !l.contains("] ")).collect();
    (out.status.success(), said, requests_traced(&stderr))
}

/// Each ref of bare repository `dir` has the commit reading the lake one by one gives.
fn same_refs(t: &TestEnv, dir: &str, url: &str) {
    let got = t.ok(dir, &["for-each-ref", "--format=%(objectname) %(refname)"]);
    for (commit, name) in read_one_by_one(t, url).iter().filter(|(_, n)| n != "HEAD") {
        assert!(got.contains(&format!("{commit} {name}")), "{name}: {got}");
    }
    t.ok(dir, &["fsck", "--no-dangling"]);
}

#[test]
fn a_signed_lake_clones_through_its_packs_with_every_signature_checked() {
    let mut t = TestEnv::new();
    let alice = keygen(&t, "alice");
    let bob = keygen(&t, "bob");
    let trusted = format!("alice@example.org {alice}\nalice@example.org {bob}\n");
    std::fs::write(t.path("allowed_signers"), &trusted).unwrap();
    let lake = signed_lake(&t);
    let at = t.lake_at(Where::S3, "signed", &lake);
    let said = pack(&t, &at.url);
    assert!(
        said.contains(&format!("{VERSIONS} new were packed")),
        "{said}"
    );

    let (ok, said, requests) = strict_clone(&t, &at.url, "strict.git");
    assert!(ok, "{said}");
    assert!(!said.contains("warning"), "{said}");
    same_refs(&t, "strict.git", &at.url);
    eprintln!("a signed lake of {VERSIONS} versions, packed: {requests} requests");
    // The listing (four files a version, 1,000 a page), the refs, the list, a record, a pack.
    assert!(requests <= 30, "{requests} requests");

    // Re-signed by another trusted key after packing: another ETag, so read and checked.
    let resigned = vid(VERSIONS / 2 + 10);
    let path = format!("versions/{resigned}/version.json");
    at.write_bytes(
        &format!("{path}.sig"),
        &signature(&t, "bob", &lake.files[&path]),
    );
    let (ok, said, _) = strict_clone(&t, &at.url, "resigned.git");
    assert!(ok, "{said}");
    assert!(
        said.contains(&format!(
            "version {resigned}: its signature was replaced or removed after it was packed"
        )),
        "{said}"
    );
    same_refs(&t, "resigned.git", &at.url);

    // A reader who trusts neither key: no pack stands in for the check, and the clone fails
    // as reading the versions makes it fail.
    let mallory = keygen(&t, "mallory");
    std::fs::write(
        t.path("allowed_signers"),
        format!("alice@example.org {mallory}\n"),
    )
    .unwrap();
    let (ok, said, _) = strict_clone(&t, &at.url, "untrusting.git");
    assert!(!ok, "{said}");
    assert!(
        said.contains("fatal:") && said.contains("signature"),
        "{said}"
    );
    std::fs::write(t.path("allowed_signers"), &trusted).unwrap();

    // A signature removed after packing: that version is read, and is unsigned.
    let removed = vid(VERSIONS / 4);
    crate::packs::remove(&at, &format!("versions/{removed}/version.json.sig"));
    // The user's cache remembers the versions checked by the clones above (a version once
    // checked stays known, as without packs): without it, the version is read and checked.
    std::fs::remove_dir_all(t.path("home/.cache/git-remote-fdl")).unwrap();
    let (ok, said, _) = strict_clone(&t, &at.url, "removed.git");
    assert!(!ok, "{said}");
    assert!(said.contains(&removed), "{said}");
    assert!(said.contains("no signature"), "{said}");
}
