//! Issue 47: many writers at once, as real `git push` processes started together on one lake:
//! pipelines that each tag their output, and writers that move branches of their own, on moto,
//! SeaweedFS and the GCS emulator (and a folder). Every push lands, and once they are done
//! `refs.json` equals the ref files: a writer that lost the race for `refs.json` applied its
//! own changes to the winner's, and undid none of the others'.

use std::process::Stdio;

use crate::support::{LakeAt, LakeBuilder, TestEnv, Where};

/// Tag pushers and branch movers started at once.
const TAGGERS: usize = 16;
const MOVERS: usize = 4;

/// A chain of 20 versions, `main` at 20, 100 tags, and a branch per mover at version 10.
fn lake() -> LakeBuilder {
    let mut l = LakeBuilder::new();
    l.chain(1, 20);
    l.branch("main", 20);
    for k in 1..=100 {
        l.tag(&format!("old-{k}"), 1 + k % 20);
    }
    for m in 0..MOVERS {
        l.branch(&format!("pipeline-{m}"), 10);
    }
    l.refs_json();
    l
}

fn all_at_once(place: Where) {
    let mut t = TestEnv::new();
    let at: LakeAt = t.lake_at(place, "writers", &lake());
    t.ok(".", &["clone", "-q", "--bare", &at.url, "r.git"]);
    let tip = t.ok("r.git", &["rev-parse", "main"]).trim().to_string();
    let later = t.ok("r.git", &["rev-parse", "main~5"]).trim().to_string();
    // The store check, once, before the race (it is remembered for the user).
    t.ok(
        "r.git",
        &["push", "-q", "origin", &format!("{tip}:refs/tags/first")],
    );
    let mut specs: Vec<String> = (0..TAGGERS)
        .map(|i| format!("{tip}:refs/tags/release-{i}"))
        .collect();
    specs.extend((0..MOVERS).map(|m| format!("{later}:refs/heads/pipeline-{m}")));
    for i in 0..specs.len() {
        crate::support::copy_dir(&t.path("r.git"), &t.path(&format!("w{i}.git")));
    }
    let pushes: Vec<_> = specs
        .iter()
        .enumerate()
        .map(|(i, spec)| {
            t.command("git", &format!("w{i}.git"), &["push", "-q", "origin", spec])
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for (spec, push) in specs.iter().zip(pushes) {
        let out = push.wait_with_output().unwrap();
        let said = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{place:?}: {spec}: {said}");
        assert!(!said.contains("warning"), "{place:?}: {spec}: {said}");
    }
    let files = at.ref_files();
    for i in 0..TAGGERS {
        assert!(
            files.contains_key(&format!("refs/tags/release-{i}")),
            "{place:?}: tag {i}"
        );
    }
    let moved = crate::support::vid(15);
    for m in 0..MOVERS {
        let name = format!("refs/heads/pipeline-{m}");
        assert_eq!(files.get(&name), Some(&moved), "{place:?}: {name}");
    }
    assert_eq!(
        at.refs_json(),
        files,
        "{place:?}: refs.json equals the ref files"
    );
}

#[test]
fn writers_at_once_all_land_and_refs_json_ends_equal_to_the_refs_on_s3() {
    all_at_once(Where::S3);
}

#[test]
fn writers_at_once_all_land_and_refs_json_ends_equal_to_the_refs_on_seaweedfs() {
    all_at_once(Where::SeaweedFs);
}

#[test]
fn writers_at_once_all_land_and_refs_json_ends_equal_to_the_refs_on_gcs() {
    all_at_once(Where::Gcs);
}

#[test]
fn writers_at_once_all_land_and_refs_json_ends_equal_to_the_refs_in_a_folder() {
    all_at_once(Where::Local);
}
