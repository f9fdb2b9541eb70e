//! Issue 29, item 3: a repository that knows the lake takes the versions it lacks from the
//! lake's packs when they are worth their download (a repository that has not fetched for a
//! while), and reads a few new versions as before; a pack weighed and left is not weighed again.
//! The refs always equal the lake's versions read one by one.

use crate::packs::{
    clone, listed_packs, pack, read_one_by_one, remove, requests_traced, rewrite_version,
};
use crate::support::{lake, LakeAt, LakeBuilder, TestEnv, Where};

/// The lake `lake(base, base / 2)` grown by a chain of versions to `last`.
pub(crate) fn grown(base: u64, last: u64) -> LakeBuilder {
    let mut l = lake(base, base / 2);
    if last > base {
        l.chain(base + 1, last);
        l.branch("main", last);
        l.refs_json();
    }
    l
}

/// Grows the lake at `at` from `grown(base, was)` to `grown(base, last)` as a writer does: the
/// new versions' files, then the branch, then `refs.json`.
pub(crate) fn grow_to(at: &LakeAt, base: u64, was: u64, last: u64) {
    let (before, after) = (grown(base, was), grown(base, last));
    let text = |path: &str| String::from_utf8_lossy(&after.files[path]).into_owned();
    for path in after.files.keys() {
        if path.starts_with("versions/") && !before.files.contains_key(path) {
            at.write(path, &text(path));
        }
    }
    at.write("refs/heads/main", &text("refs/heads/main"));
    at.write("refs.json", &text("refs.json"));
}

/// `git fetch origin` of every branch and tag in `dir`, traced: what it said, and its requests.
fn fetch(t: &TestEnv, dir: &str) -> (String, u64) {
    let specs = ["+refs/heads/*:refs/heads/*", "+refs/tags/*:refs/tags/*"];
    let out = t
        .command("git", dir, &["fetch", "-q", "origin", specs[0], specs[1]])
        .env("GIT_REMOTE_FDL_DEBUG", "1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "fetch in {dir}: {stderr}");
    let said = stderr.lines().filter(|l| !l.contains("] ")).collect();
    (said, requests_traced(&stderr))
}

/// The refs of bare repository `dir`, as `(commit, name)`.
fn refs(t: &TestEnv, dir: &str) -> Vec<(String, String)> {
    let out = t.ok(dir, &["for-each-ref", "--format=%(objectname) %(refname)"]);
    out.lines()
        .map(|l| {
            let (c, n) = l.split_once(' ').unwrap();
            (c.to_string(), n.to_string())
        })
        .collect()
}

/// Each branch and tag the lake names has the commit the one-by-one reading gives.
fn same_refs(t: &TestEnv, dir: &str, url: &str) {
    let expected = read_one_by_one(t, url);
    let got = refs(t, dir);
    for (commit, name) in expected.iter().filter(|(_, n)| n != "HEAD") {
        let found = got.iter().find(|(_, n)| n == name).map(|(c, _)| c);
        assert_eq!(found, Some(commit), "{dir}: {name}");
    }
    t.ok(dir, &["fsck", "--no-dangling"]);
}

/// The packs in bare repository `dir`.
fn packs_in(t: &TestEnv, dir: &str) -> Vec<String> {
    let mut packs: Vec<String> = std::fs::read_dir(t.path(dir).join("objects/pack"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter_map(|n| n.strip_suffix(".pack").map(str::to_string))
        .collect();
    packs.sort();
    packs
}

/// The packs a fetch in `dir` weighed and left, from its cache's `weighed-packs`.
fn weighed(t: &TestEnv, dir: &str) -> Vec<String> {
    fn find(dir: &std::path::Path, out: &mut Vec<String>) {
        for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let path = e.path();
            if path.is_dir() {
                find(&path, out);
            } else if e.file_name() == "weighed-packs" {
                let text = std::fs::read_to_string(&path).unwrap();
                out.extend(text.lines().skip(1).map(str::to_string));
            }
        }
    }
    let mut out = Vec::new();
    find(&t.path(dir), &mut out);
    out
}

#[test]
fn a_fetch_after_a_long_absence_takes_the_new_versions_from_their_pack() {
    const WAS: u64 = 100;
    const NOW: u64 = 400;
    for place in [Where::S3, Where::Gcs, Where::Azure, Where::SeaweedFs] {
        let mut t = TestEnv::new();
        let at = t.lake_at(place, "absent", &grown(WAS, WAS));
        pack(&t, &at.url);
        clone(&t, &at.url, "packed.git");
        clone(&t, &at.url, "plain.git");
        t.ok(
            "plain.git",
            &["config", "remote.origin.fdlUsePacks", "false"],
        );
        let first = packs_in(&t, "packed.git");

        // 300 versions written and packed while the repositories were away.
        grow_to(&at, WAS, WAS, NOW);
        pack(&t, &at.url);
        let (said, packed) = fetch(&t, "packed.git");
        assert!(!said.contains("warning"), "{place:?}: {said}");
        same_refs(&t, "packed.git", &at.url);
        let (_, plain) = fetch(&t, "plain.git");
        same_refs(&t, "plain.git", &at.url);
        eprintln!(
            "{place:?}: a fetch of 300 packed versions: {packed} requests, {plain} without packs"
        );
        // The pack list, a record, the pack, a listing of the new versions and the refs.
        let most = 2 * NOW / 1000 + 30;
        assert!(
            packed <= most,
            "{place:?}: {packed} requests, at most {most}"
        );
        assert!(
            plain >= 2 * (NOW - WAS),
            "{place:?}: read one by one: {plain}"
        );
        let second = packs_in(&t, "packed.git");
        assert_eq!(second.len(), first.len() + 1, "{place:?}: {second:?}");

        // Five more, packed: not worth a download; read, and the pack weighed once for all.
        grow_to(&at, WAS, NOW, NOW + 5);
        pack(&t, &at.url);
        let (said, few) = fetch(&t, "packed.git");
        assert!(!said.contains("warning"), "{place:?}: {said}");
        same_refs(&t, "packed.git", &at.url);
        let newest: Vec<String> = listed_packs(&at)
            .into_iter()
            .filter(|p| !second.contains(p))
            .collect();
        assert_eq!(newest.len(), 1, "{place:?}: one new pack: {newest:?}");
        let now = packs_in(&t, "packed.git");
        assert!(
            !now.contains(&newest[0]),
            "{place:?}: not downloaded: {now:?}"
        );
        assert_eq!(weighed(&t, "packed.git"), newest, "{place:?}");
        eprintln!("{place:?}: a fetch of 5 new versions: {few} requests");
        assert!(few <= 30, "{place:?}: {few}");
        fetch(&t, "plain.git");

        // One more, not packed: the weighed pack's record is not read again.
        grow_to(&at, WAS, NOW + 5, NOW + 6);
        let (_, one) = fetch(&t, "packed.git");
        same_refs(&t, "packed.git", &at.url);
        let (_, one_plain) = fetch(&t, "plain.git");
        eprintln!("{place:?}: a fetch of 1 new version: {one} requests, {one_plain} without packs");
        assert!(one <= one_plain + 1, "{place:?}: {one} against {one_plain}");
    }
}

/// What a fetch takes from a pack holds to what the store shows now: a version rewritten after
/// packing, and one deleted (its record still names it), are read as without packs (with a
/// warning), and their descendants with them.
#[test]
fn a_fetch_through_a_pack_reads_a_version_rewritten_or_deleted_after_packing() {
    const WAS: u64 = 50;
    const NOW: u64 = 200;
    let mut t = TestEnv::new();
    let at = t.lake_at(Where::S3, "lies", &grown(WAS, WAS));
    clone(&t, &at.url, "rewritten.git");
    clone(&t, &at.url, "deleted.git");
    grow_to(&at, WAS, WAS, NOW);
    pack(&t, &at.url);

    // The newest version gone (the branch moved back to its parent): the record still names it.
    let gone = crate::support::lake::vid(NOW);
    let all = grown(WAS, NOW);
    for file in all
        .files
        .keys()
        .filter(|f| f.starts_with(&format!("versions/{gone}/")))
    {
        remove(&at, file);
    }
    let back = grown(WAS, NOW - 1);
    at.write(
        "refs/heads/main",
        &String::from_utf8_lossy(&back.files["refs/heads/main"]),
    );
    at.write(
        "refs.json",
        &String::from_utf8_lossy(&back.files["refs.json"]),
    );
    let (said, _) = fetch(&t, "deleted.git");
    assert!(
        said.contains(&format!("version {gone}: it is not in the lake now")),
        "{said}"
    );
    same_refs(&t, "deleted.git", &at.url);

    // Then a version rewritten: it and its descendants are read.
    let v = rewrite_version(&at, 150);
    let (said, _) = fetch(&t, "rewritten.git");
    assert!(
        said.contains(&format!(
            "version {v}: it was rewritten after it was packed"
        )),
        "{said}"
    );
    same_refs(&t, "rewritten.git", &at.url);
}
