//! Issue 48, items 2 to 4: a shallow clone of a lake with packs names the refs by what the
//! packs claim (their claims read in pieces: `git-packs/<pack>.claims/`), reads only the
//! versions it keeps and those no pack holds, and refuses a claim its versions' files deny.
//! Its commits are a full clone's.

use crate::packs::{pack, read_one_by_one, refs_of as refs, requests_traced};
use crate::packs_fetch::{grow_to, grown};
use crate::support::{LakeAt, TestEnv, Where};

/// A lake of 300 versions on S3, packed, then grown by 5 versions no pack holds.
fn packed_lake(t: &mut TestEnv) -> LakeAt {
    let at = t.lake_at(Where::S3, "lake", &grown(300, 300));
    pack(t, &at.url);
    grow_to(&at, 300, 300, 305);
    at
}

/// `git clone <args>`, traced: what it said, and how many requests it made.
fn traced_clone(t: &TestEnv, args: &[&str]) -> (bool, String, u64) {
    let mut all = vec!["clone", "-q"];
    all.extend(args);
    let out = t
        .command("git", ".", &all)
        .env("GIT_REMOTE_FDL_DEBUG", "1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let said = stderr
        .lines()
        .filter(|l| !l.contains("] "))
        .collect::<Vec<_>>()
        .join("\n");
    let requests = if out.status.success() {
        requests_traced(&stderr)
    } else {
        0
    };
    (out.status.success(), said, requests)
}

#[test]
fn a_depth_one_clone_of_a_packed_lake_reads_what_it_keeps_and_maps_as_a_full_clone() {
    let mut t = TestEnv::new();
    let at = packed_lake(&mut t);
    let claims = at.files_below("git-packs/");
    assert!(
        claims.iter().any(|f| f.ends_with(".claims/index")),
        "{claims:?}"
    );
    let (ok, said, requests) =
        traced_clone(&t, &["--depth", "1", "--no-single-branch", &at.url, "tip"]);
    assert!(ok, "{said}");
    // The refs' versions, their files, the refs, the pack list and a few blocks of claims:
    // nothing grows with the 300 packed versions.
    eprintln!("depth-1 clone of a packed lake: {requests} requests");
    assert!(requests <= 40, "{requests} requests: {said}");
    assert_eq!(t.ok("tip", &["rev-list", "--count", "--all"]), "2\n");
    let lake = read_one_by_one(&t, &at.url);
    for (commit, name) in lake.iter().filter(|(_, n)| n != "HEAD") {
        let local = name.replace("refs/heads/", "refs/remotes/origin/");
        let got = refs(&t, "tip");
        assert!(
            got.contains(&(commit.clone(), local.clone())),
            "{local}: {got:?}"
        );
    }
    t.ok("tip", &["fsck", "--no-dangling"]);
    // Deepened to the whole history, it is a full clone, each commit built from the lake.
    t.ok("tip", &["fetch", "-q", "--unshallow"]);
    assert_eq!(t.ok("tip", &["rev-list", "--count", "--all"]), "305\n");
    assert!(!t.path("tip/.git/shallow").exists());
}

#[test]
fn a_claim_the_version_s_files_deny_is_refused_naming_the_pack() {
    let mut t = TestEnv::new();
    let at = t.lake_at(Where::S3, "lake", &grown(300, 300));
    pack(&t, &at.url);
    let pack_name = crate::packs::listed_packs(&at).remove(0);
    // Block 0 holds the oldest versions' claims, v1's (version 150) among them: its commit
    // is made another.
    let block = format!("git-packs/{pack_name}.claims/0");
    let text = at.read(&block).unwrap();
    let v1 = crate::support::lake::vid(150);
    let lied: String = text
        .lines()
        .map(|l| match l.starts_with(&v1) {
            true => format!("{v1} {}\n", "1".repeat(40)),
            false => format!("{l}\n"),
        })
        .collect();
    assert_ne!(lied, text);
    at.write(&block, &lied);
    let (ok, said, _) = traced_clone(&t, &["--depth", "1", "--branch", "v1", &at.url, "c"]);
    assert!(!ok);
    assert!(
        said.contains(&format!("git-packs/{pack_name} claims commit 1111111111111111111111111111111111111111 for version {v1}, but the version's files map to commit")),
        "{said}"
    );
    assert!(!t.path("c").exists(), "nothing kept");
}

#[test]
fn packs_without_claims_are_read_as_before() {
    let mut t = TestEnv::new();
    let at = packed_lake(&mut t);
    for f in at.files_below("git-packs/") {
        if f.contains(".claims/") {
            crate::packs::remove(&at, &f);
        }
    }
    let (ok, said, _) = traced_clone(&t, &["--depth", "1", &at.url, "tip"]);
    assert!(ok, "{said}");
    assert_eq!(t.ok("tip", &["rev-list", "--count", "--all"]), "1\n");
    let lake = read_one_by_one(&t, &at.url);
    let main = lake.iter().find(|(_, n)| n == "refs/heads/main").unwrap();
    assert_eq!(t.ok("tip", &["rev-parse", "HEAD"]).trim(), main.0);
    // The next run of pack writes them from the records: a base pack is never rewritten.
    let said = pack(&t, &at.url);
    assert!(
        said.contains("Wrote the claims of 1 pack made before claims were"),
        "{said}"
    );
    let (ok, said, requests) = traced_clone(&t, &["--depth", "1", &at.url, "again"]);
    assert!(ok, "{said}");
    assert!(requests <= 40, "{requests} requests: {said}");
    assert_eq!(t.ok("again", &["rev-parse", "HEAD"]).trim(), main.0);
}

/// Rewrites the claims of block 0 of the lake's pack: each `(version, commit)` given.
fn lie(at: &LakeAt, pack: &str, lies: &[(&str, &str)]) {
    let block = format!("git-packs/{pack}.claims/0");
    let text = at.read(&block).unwrap();
    let lied: String = text
        .lines()
        .map(|l| {
            let told = lies.iter().find(|(v, _)| l.starts_with(v));
            match told {
                Some((v, c)) => format!("{v} {c}\n"),
                None => format!("{l}\n"),
            }
        })
        .collect();
    at.write(&block, &lied);
}

#[test]
fn claims_that_lie_together_are_caught_when_the_boundary_is_deepened() {
    let mut t = TestEnv::new();
    let at = t.lake_at(Where::S3, "lake", &grown(300, 300));
    pack(&t, &at.url);
    let pack_name = crate::packs::listed_packs(&at).remove(0);
    let (v1, below) = (
        crate::support::lake::vid(150),
        crate::support::lake::vid(149),
    );
    // A lie about the parent alone is caught by the tip's own claim: its files, built on the
    // lie, give another commit, which the error names.
    let x = "2".repeat(40);
    lie(&at, &pack_name, &[(&below, &x)]);
    let (ok, said, _) = traced_clone(&t, &["--depth", "1", "--branch", "v1", &at.url, "c"]);
    assert!(!ok);
    let built_on_lie = said
        .split("the version's files map to commit ")
        .nth(1)
        .map(|rest| rest[..40].to_string())
        .unwrap_or_else(|| panic!("{said}"));
    // Both lies told together pass a depth-1 clone, as a Git server's word passes...
    lie(&at, &pack_name, &[(&below, &x), (&v1, &built_on_lie)]);
    let (ok, said, _) = traced_clone(&t, &["--depth", "1", "--branch", "v1", &at.url, "c"]);
    assert!(ok, "{said}");
    let shallow = std::fs::read_to_string(t.path("c/.git/shallow")).unwrap();
    // ...and --unshallow, which reads every version below, refuses the boundary.
    let err = t.fails("c", &["fetch", "-q", "--unshallow"]);
    assert!(
        err.contains(&format!("version {v1} is the shallow commit {built_on_lie} of this repository, but built on its parents as the lake gives them now it is commit")),
        "{err}"
    );
    let after = std::fs::read_to_string(t.path("c/.git/shallow")).unwrap();
    assert_eq!(after, shallow, "nothing changed");
}

#[test]
fn a_depth_one_clone_over_plain_http_reads_the_claims_and_the_versions_above_the_packs() {
    let mut t = TestEnv::new();
    let at = t.lake_at(Where::Local, "lake", &grown(300, 300));
    pack(&t, &at.url);
    grow_to(&at, 300, 300, 305);
    let server = crate::support::http::serve(&t.path("lake"));
    let url = format!("fdl::{}", server.url);
    let (ok, said, requests) = traced_clone(&t, &["--depth", "1", &url, "tip"]);
    assert!(ok, "{said}");
    // The refs, the pack list, its claims, and the five versions above the pack a generation
    // at a time: no record, no version below.
    eprintln!("depth-1 clone of a packed lake over plain HTTP: {requests} requests");
    assert!(requests <= 40, "{requests} requests: {said}");
    let lake = read_one_by_one(&t, &at.url);
    let main = lake.iter().find(|(_, n)| n == "refs/heads/main").unwrap();
    assert_eq!(t.ok("tip", &["rev-parse", "HEAD"]).trim(), main.0);
    assert_eq!(t.ok("tip", &["rev-list", "--count", "--all"]), "1\n");
}

/// Deepened after a clone that named its refs by the claims, a boundary is a version whose
/// commit only the fetch that builds it knows: it must still be written to `.git/shallow`
/// (it once was left out, leaving a repository Git could not walk).
#[test]
fn a_shallow_clone_of_a_packed_lake_deepens_as_git_does_on_s3_and_over_http() {
    let mut t = TestEnv::new();
    let at = packed_lake(&mut t);
    let folder = t.lake_at(Where::Local, "folder", &grown(300, 300));
    pack(&t, &folder.url);
    grow_to(&folder, 300, 300, 305);
    let server = crate::support::http::serve(&t.path("folder"));
    let http = format!("fdl::{}", server.url);
    // Versions 301 to 305 are above the pack: these boundaries fall in it.
    let cases: [&[&[&str]]; 3] = [
        &[&["--deepen", "7"], &["--deepen", "1"]],
        &[&["--depth", "9"]],
        &[&["--deepen", "6"], &["--unshallow"]],
    ];
    for (n, (url, name)) in [(&at.url, "s3.git"), (&http, "http.git")]
        .iter()
        .enumerate()
    {
        let bare = crate::shallow::bare_of(&t, url, name);
        for (k, fetches) in cases.iter().enumerate() {
            let case = 10 * n + k;
            crate::shallow::side_by_side(&t, url, &bare, case, &["--depth", "1"], fetches);
        }
    }
}
