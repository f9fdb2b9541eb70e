//! Issue 48: `pack` run after every write keeps its packs geometrically (factor 2), as Git's
//! geometric repacking does: a run merges only the newest packs that hold fewer than twice the
//! versions of what is newer, so the base pack is never rewritten by small runs and the list
//! stays about log2(runs) long. A clone through the packs still maps every version as read
//! one by one.

use crate::packs::{clone, listed_packs, pack, read_one_by_one, same_refs};
use crate::packs_fetch::{grow_to, grown};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::support::{s3lite, LakeBuilder, TestEnv, Where};

#[test]
fn pack_after_every_write_merges_only_the_newest_packs_and_never_the_base() {
    let mut t = TestEnv::new();
    let at = t.lake_at(Where::S3, "geometric", &grown(40, 40));
    pack(&t, &at.url);
    let base = listed_packs(&at);
    assert_eq!(base.len(), 1);
    // Runs of 2 versions each: the list holds the base and packs of 2, 4, 8... versions, as a
    // binary counter counts (base; base 2; base 4; base 4 2; base 8; base 8 2; base 8 4).
    let expected = [2, 2, 3, 2, 3, 3];
    let mut last = 40;
    for (run, packs) in expected.into_iter().enumerate() {
        grow_to(&at, 40, last, last + 2);
        last += 2;
        let said = pack(&t, &at.url);
        let now = listed_packs(&at);
        assert_eq!(now.len(), packs, "run {run}: {said}\n{now:?}");
        assert_eq!(now[0], base[0], "run {run}: the base pack is kept: {said}");
        if run == 3 {
            assert!(
                said.contains("with the 2 newest packs, merged into one"),
                "{said}"
            );
        }
    }
    let expected = read_one_by_one(&t, &at.url);
    let (refs, installed, stderr) = clone(&t, &at.url, "geometric.git");
    same_refs(&expected, &refs);
    assert!(!stderr.contains("warning"), "{stderr}");
    // The base pack at least (a few versions may be cheaper to read than to download).
    let base = format!("{}.pack", base[0]);
    assert!(installed.contains(&base), "{installed:?}");
}

/// A run after a few new versions reads only what it packs: the refs above the packs it keeps,
/// as deep as it packs, their versions' commits taken from the records (the listing shows
/// them unchanged). The base pack is never downloaded, a tag put on an old version is not
/// read, and a run with nothing new clones nothing. A version written between the run's
/// listing and its clone makes the clone deeper than planned: the run then reads the whole
/// history, and packs that version too. What the runs wrote clones to the commits of every
/// version read one by one.
#[test]
fn a_run_after_a_few_writes_reads_only_what_it_packs() {
    let server = s3lite::start();
    server.put_files("above", "lake/", &grown(300, 300).files);
    let t = server.test_env();
    let url = "fdl::s3://above/lake/";
    pack(&t, url);
    let base = server.keys("above", "lake/git-packs/");
    let base = base.iter().find(|k| k.ends_with(".pack")).unwrap().clone();
    let read = Arc::new(AtomicBool::new(false));
    let flag = read.clone();
    server.before_next_get("above", &base, move |_| flag.store(true, Ordering::SeqCst));
    let mut lake = grown(300, 300);
    let changed = |before: &LakeBuilder, after: &LakeBuilder| -> BTreeMap<String, Vec<u8>> {
        let files = after.files.iter();
        let changed = files.filter(|(k, v)| before.files.get(*k) != Some(*v));
        changed
            .map(|(k, v)| (format!("lake/{k}"), v.clone()))
            .collect()
    };
    for (run, last, new) in [(1, 304, 4), (2, 310, 10)] {
        let mut next = grown(300, last);
        // An old version tagged as well: a ref that needs nothing read.
        next.tag(&format!("old-{run}"), 10 * run).refs_json();
        server.put_files("above", "", &changed(&lake, &next));
        lake = next;
        let said = pack(&t, url);
        assert!(said.contains(&format!(" {new} new were packed")), "{said}");
    }
    let said = pack(&t, url);
    assert!(said.contains("0 new were packed"), "{said}");
    assert!(!read.load(Ordering::SeqCst), "the base pack was downloaded");
    // A writer's version lands once the run has listed `versions/` (when it reads the claims).
    let mut next = grown(300, 315);
    next.tag("old-3", 30).refs_json();
    let mut later = next.clone();
    later.chain(316, 316);
    later.branch("main", 316).refs_json();
    server.put_files("above", "", &changed(&lake, &next));
    let late: Vec<(String, Vec<u8>)> = changed(&next, &later).into_iter().collect();
    let index = base.replace(".pack", ".claims/index");
    server.before_next_get("above", &index, move |objects| {
        for (k, v) in late {
            objects.insert(format!("above/{k}"), Arc::new(v));
        }
    });
    let said = pack(&t, url);
    assert!(said.contains("6 new were packed"), "{said}");
    // A tag the run planned to read is deleted before its clone reads it: Git refuses the
    // refspec, and the run clones the whole history instead.
    let mut tagged = later.clone();
    tagged.chain(317, 317);
    tagged.branch("main", 317).tag("gone", 317).refs_json();
    server.put_files("above", "", &changed(&later, &tagged));
    server.before_next_get("above", &index, move |objects| {
        objects.remove("above/lake/refs/tags/gone");
    });
    let said = pack(&t, url);
    assert!(said.contains(" 1 new were packed"), "{said}");
    let expected = read_one_by_one(&t, url);
    let (refs, _, stderr) = clone(&t, url, "above.git");
    same_refs(&expected, &refs);
    // The late version's folder was listed on its own: its record holds its ETags, and no
    // reader takes it for a version rewritten after it was packed.
    assert!(!stderr.contains("warning"), "{stderr}");
}
