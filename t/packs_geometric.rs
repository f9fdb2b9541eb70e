//! Issue 48: `pack` run after every write keeps its packs geometrically (factor 2), as Git's
//! geometric repacking does: a run merges only the newest packs that hold fewer than twice the
//! versions of what is newer, so the base pack is never rewritten by small runs and the list
//! stays about log2(runs) long. A clone through the packs still maps every version as read
//! one by one.

use crate::packs::{clone, listed_packs, pack, read_one_by_one, same_refs};
use crate::packs_fetch::{grow_to, grown};
use crate::support::{TestEnv, Where};

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
