//! Refs Git cannot hold side by side (`r` and `r/x`) and a ref too deep for a folder: racing
//! pushes never both win, a lake holding both lists one, and a plain refusal.

use std::process::Output;
use std::sync::{Arc, Barrier};
use std::time::Duration;

use crate::support::run::run_within;
use crate::support::{lake, text, vid, LakeBuilder, TestEnv, Where};

const DF_ROUNDS: usize = 12;

/// Two processes race, round after round, to create `refs/heads/rN` and `refs/heads/rN/x`.
fn racing_pushes_of_a_ref_and_a_ref_below_it(place: Where) {
    let mut t = TestEnv::new();
    let lake = t.lake_at(place, "lake", &lake(5, 2));
    for w in ["a", "b"] {
        t.ok(".", &["clone", "-q", &lake.url, w]);
    }
    let t = Arc::new(t);
    let mut both_refused = 0;
    for round in 0..DF_ROUNDS {
        let barrier = Arc::new(Barrier::new(2));
        let names = [
            format!("refs/heads/r{round}"),
            format!("refs/heads/r{round}/x"),
        ];
        let outs: Vec<Output> = std::thread::scope(|s| {
            let handles: Vec<_> = ["a", "b"]
                .iter()
                .zip(&names)
                .map(|(w, name)| {
                    let (t, barrier) = (t.clone(), barrier.clone());
                    let spec = format!("origin/main:{name}");
                    s.spawn(move || {
                        let cmd = t.command("git", w, &["push", "--porcelain", "origin", &spec]);
                        barrier.wait();
                        run_within(cmd, Duration::from_secs(60))
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let ok: Vec<bool> = outs.iter().map(|o| o.status.success()).collect();
        for (o, name) in outs.iter().zip(&names) {
            let (stdout, stderr) = (text(&o.stdout), text(&o.stderr));
            assert!(!stderr.contains("panicked"), "{stderr}");
            if !o.status.success() {
                // A folder lake may refuse the file before the racer's ref is in place.
                assert!(
                    stdout.contains("exists in the lake")
                        || (place == Where::Local && stdout.contains("is a folder, not a file")),
                    "{name}: a clear rejection:\n{stdout}\n{stderr}"
                );
            } else {
                assert_eq!(
                    lake.read(name).unwrap().trim(),
                    vid(5),
                    "{name} was told ok"
                );
            }
        }
        assert!(
            !(ok[0] && ok[1]),
            "round {round}: both racers won: {names:?}"
        );
        let held: Vec<bool> = names.iter().map(|n| lake.read(n).is_some()).collect();
        assert!(!(held[0] && held[1]), "round {round}: the lake holds both");
        both_refused += usize::from(!ok[0] && !ok[1]);
    }
    // Everyone can still clone, and refs.json equals the ref files.
    let out = t.git(".", &["clone", "-q", &lake.url, "fresh"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(lake.refs_json(), lake.ref_files());
    eprintln!("{place:?}: {DF_ROUNDS} rounds, {both_refused} with both racers refused");
}

#[test]
fn racing_pushes_of_a_ref_and_a_ref_below_it_never_both_win_s3() {
    racing_pushes_of_a_ref_and_a_ref_below_it(Where::S3)
}

#[test]
fn racing_pushes_of_a_ref_and_a_ref_below_it_never_both_win_local() {
    racing_pushes_of_a_ref_and_a_ref_below_it(Where::Local)
}

#[test]
fn a_lake_holding_a_ref_and_refs_below_it_lists_one_and_clones() {
    let mut l = lake(5, 2);
    l.branch("r0", 4)
        .branch("r0/x", 3)
        .tag("t", 1)
        .tag("t/y/z", 2);
    l.refs_json();
    let mut t = TestEnv::new();
    let lake = t.lake_at(Where::S3, "pair", &l);
    let out = t.git(".", &["ls-remote", &lake.url]);
    let (listed, err) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{err}");
    assert!(
        listed.contains("refs/heads/r0\n") && !listed.contains("refs/heads/r0/x"),
        "{listed}"
    );
    assert!(
        listed.contains("refs/tags/t\n") && !listed.contains("refs/tags/t/y/z"),
        "{listed}"
    );
    assert!(
        err.contains("refs/heads/r0 and refs/heads/r0/x cannot both be refs in Git")
            && err.contains("refs/tags/t and refs/tags/t/y/z"),
        "{err}"
    );
    let out = t.git(".", &["clone", &lake.url, "work"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    t.ok("work", &["rev-parse", "origin/r0", "v1", "t"]);
    // A writer refuses to make a third one, in both directions.
    let err = t.fails("work", &["push", "origin", "origin/main:refs/heads/main/x"]);
    assert!(
        err.contains("cannot create refs/heads/main/x: refs/heads/main exists in the lake"),
        "{err}"
    );
    let err = t.fails("work", &["push", "origin", "origin/main:refs/heads/r0/x/y"]);
    assert!(err.contains("exists in the lake"), "{err}");
    // The hidden one can be deleted with Git, and the warning goes.
    t.ok(
        "work",
        &["push", "-q", "origin", "--delete", "refs/heads/r0/x"],
    );
    let out = t.git("work", &["fetch", "origin"]);
    assert!(
        out.status.success() && !text(&out.stderr).contains("refs/heads/r0/x"),
        "{}",
        text(&out.stderr)
    );
    // Over HTTP, from refs.json, the same.
    let dir = t.path("http-lake");
    let mut files = l.files.clone();
    files.retain(|k, _| !k.starts_with("refs/"));
    let folder = LakeBuilder { files };
    folder.write_dir(&dir);
    std::fs::write(dir.join("refs.json"), &l.files["refs.json"]).unwrap();
    let server = crate::support::http::serve(&dir);
    let out = t.git(".", &["clone", &format!("fdl::{}", server.url), "via-http"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("refs/heads/r0 and refs/heads/r0/x cannot both be refs"),
        "{}",
        text(&out.stderr)
    );
}

fn folders_below(dir: &std::path::Path) -> usize {
    let mut n = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            if e.file_type().unwrap().is_dir() {
                n += 1;
                stack.push(e.path());
            }
        }
    }
    n
}

#[test]
fn a_push_of_a_ref_3000_levels_deep_leaves_no_folder_and_later_conflicts_are_plain() {
    let t = TestEnv::new();
    let url = t.local_lake("lake", &lake(5, 2));
    t.ok(".", &["clone", "-q", &url, "work"]);
    let heads = t.path("lake/refs/heads");
    let before = folders_below(&heads);
    let deep = format!("refs/heads/{}b", "a/".repeat(3000));
    let err = t.fails("work", &["push", "origin", &format!("origin/main:{deep}")]);
    assert!(
        err.contains("too long for this folder's file system"),
        "{err}"
    );
    assert!(!err.contains("unknown"), "{err}");
    assert_eq!(folders_below(&heads), before, "folders left behind");
    // The first folder's name is free for a ref.
    t.ok(
        "work",
        &["push", "-q", "origin", "origin/main:refs/heads/a"],
    );
    // Empty folders left by anything else are cleared, as Git does.
    std::fs::create_dir_all(heads.join("e/e/e/e")).unwrap();
    t.ok(
        "work",
        &["push", "-q", "origin", "origin/main:refs/heads/e"],
    );
    // A folder that holds something is a plain refusal, never an unknown outcome.
    std::fs::create_dir_all(heads.join("k")).unwrap();
    std::fs::write(heads.join("k/.keep"), "").unwrap();
    let err = t.fails("work", &["push", "origin", "origin/main:refs/heads/k"]);
    assert!(
        err.contains("[remote rejected]")
            && err.contains("is a folder")
            && !err.contains("unknown"),
        "{err}"
    );
    // A ref in the way is named, in both directions.
    let err = t.fails("work", &["push", "origin", "origin/main:refs/heads/a/x"]);
    assert!(
        err.contains("cannot create refs/heads/a/x: refs/heads/a exists in the lake"),
        "{err}"
    );
}

#[test]
fn a_push_of_a_ref_3000_levels_deep_to_s3_is_a_plain_refusal() {
    let mut t = TestEnv::new();
    let lake = t.lake_at(Where::S3, "deep", &lake(5, 2));
    t.ok(".", &["clone", "-q", &lake.url, "work"]);
    let deep = format!("refs/heads/{}b", "a/".repeat(3000));
    let err = t.fails("work", &["push", "origin", &format!("origin/main:{deep}")]);
    assert!(
        err.contains("too long: its key is") && !err.contains("unknown"),
        "{err}"
    );
    assert_eq!(lake.ref_files().len(), 2, "{:?}", lake.ref_files().keys());
    t.ok(
        "work",
        &["push", "-q", "origin", "origin/main:refs/heads/a"],
    );
}
