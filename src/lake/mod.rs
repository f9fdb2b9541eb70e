//! The FDL layout on top of a store: `fdl.json`, `HEAD`, refs (listed or from `refs.json`) and
//! version records, each read with a size limit and validated before use. One file per
//! concern: errors, opening, reading refs, writing refs, versions; the small files' formats
//! in `small_files.rs`, names in `names.rs`, records in `record.rs`.

pub(crate) mod announced;
pub(crate) mod catalog;
mod error;
mod etags;
pub(crate) mod git_packs;
mod handle;
pub(crate) mod json;
pub(crate) mod names;
pub(crate) mod record;
mod ref_writes;
mod refs;
pub(crate) mod refs_json;
mod refs_render;
pub(crate) mod small_files;
mod versions;

pub(crate) use error::LakeError;
pub(crate) use etags::{content_md5, names_something};
pub(crate) use handle::Lake;
pub use names::check_ref_name;
pub(crate) use names::{check_writable_ref, printable, VersionId};
pub(crate) use record::VersionRecord;
pub(crate) use refs::RefsSeen;
pub(crate) use versions::listed_versions;

use crate::store::{Listed, Store, StoreError};

/// Size limits: a hostile lake cannot make the helper read a huge file.
pub(crate) const SMALL_FILE_LIMIT: u64 = 1 << 20;
pub(crate) const REFS_JSON_LIMIT: u64 = 64 << 20;
pub(crate) const VERSION_JSON_LIMIT: u64 = 16 << 20;
pub(crate) const DATASET_JSON_LIMIT: u64 = 64 << 20;
/// The list of the lake's packs (`git-packs/`), written last, on condition.
const PACK_LIST: &str = "git-packs/list.json";
/// A `git-packs/list.json` larger than this is not read: it names at most about 30 packs
/// (more are merged), some 50 bytes each.
const PACK_LIST_LIMIT: u64 = 64 << 10;
/// Names a listing is split at: one range per this many names remembered, fewer than a
/// page holds (1000), so that each range takes one request even after 20 refs are added to
/// it since (a listing of 50,000 refs in 52 requests; at 900, 56).
const LIST_SPLIT: usize = 980;

/// A signature file larger than this is not read.
pub const SIGNATURE_LIMIT: u64 = 64 << 10;
/// The version a key below `versions/` belongs to, if its folder is named by a version ID.
fn version_of_key(key: &str) -> Option<VersionId> {
    let folder = key.strip_prefix("versions/")?.split('/').next()?;
    VersionId::parse(folder)
        .ok()
        .filter(|v| v.as_str() == folder)
}

/// The first 16 hex digits of a version ID as a number (a UUIDv7's time and a little more).
fn id_number(id: &VersionId) -> u64 {
    let hex: String = id.as_str().chars().filter(|c| *c != '-').take(16).collect();
    u64::from_str_radix(&hex, 16).unwrap_or(0)
}

/// How many ranges at most a listing is split into.
const MAX_RANGES: u64 = 64;

use crate::store::LIST_PAGE;

/// Split points (ID prefixes, sorted) for listing the rest of `versions/` after `last`: as
/// many ranges as pages the rest should take, judging by the density of the first page
/// (`files` files from `first` to `last`), up to `newest` (the last range is open-ended).
fn range_splits(
    first: &VersionId,
    last: &VersionId,
    newest: Option<&VersionId>,
    files: usize,
) -> Vec<String> {
    let (lo, hi) = (id_number(first), id_number(last));
    let Some(top) = newest.map(id_number).filter(|t| *t > hi) else {
        return Vec::new();
    };
    let span = (hi - lo).max(1) as u128;
    let rest = ((top - hi) as u128 * files as u128 / span) as u64;
    let ranges = range_count(rest);
    (1..ranges)
        .map(|i| {
            let n = hi + ((top - hi) as u128 * i as u128 / ranges as u128) as u64;
            format!(
                "{:08x}-{:04x}-{:04x}",
                n >> 32,
                (n >> 16) & 0xffff,
                n & 0xffff
            )
        })
        .collect()
}

/// How many ranges to list about `rest` files in, side by side. While one page each will do
/// (up to [`MAX_RANGES`]), a page each, filled to four fifths (the estimate's margin). Beyond,
/// each range takes several pages in sequence, and a range costs whole pages: of 32 to 64
/// ranges, the count whose ranges fill their pages best (to 97%) wastes the fewest requests on
/// part-filled last pages (64 ranges of 4,677 files take 320 requests where 62 of 4,828 take
/// 310).
fn range_count(rest: u64) -> u64 {
    let page = LIST_PAGE as u64;
    let one_page_each = rest.div_ceil(page * 4 / 5);
    if one_page_each <= MAX_RANGES {
        return one_page_each.max(1);
    }
    let requests = |ranges: u64| ranges * (rest.div_ceil(ranges) * 100 / 97).div_ceil(page);
    // Never fewer than half the most ranges: at most twice the round trips.
    (MAX_RANGES / 2..=MAX_RANGES)
        .rev()
        .min_by_key(|r| requests(*r))
        .unwrap_or(MAX_RANGES)
}

/// Lists `refs/heads/` and `refs/tags/` side by side, each in ranges split at the names
/// `sorted` holds (one range per [`LIST_SPLIT`] of them), so that many refs cost one round trip.
async fn list_ref_folders(store: &Store, sorted: &[String]) -> Result<Listed, StoreError> {
    let listing = |prefix: &'static str| {
        let names: Vec<&str> = sorted
            .iter()
            .filter(|n| n.starts_with(prefix))
            .map(|n| n.as_str())
            .collect();
        let splits = crate::store::even_splits(&names, LIST_SPLIT);
        // Each range holds about as many names as when they were last listed.
        let expected = names.len() / (splits.len() + 1);
        store.list_split(prefix, splits, expected)
    };
    let (heads, tags) = futures::join!(listing("refs/heads/"), listing("refs/tags/"));
    Ok(crate::store::joined(vec![heads?, tags?]))
}

#[cfg(test)]
mod tests {
    use super::range_count;
    use super::refs::without_conflicts;

    #[test]
    fn a_long_listing_is_cut_into_ranges_that_fill_their_pages() {
        // A page each while that will do, filled to four fifths.
        assert_eq!(range_count(0), 1);
        assert_eq!(range_count(5_000), 7);
        assert_eq!(range_count(51_200), 64);
        // 100,000 versions of three files: 62 ranges of five pages, not 64 of five.
        assert_eq!(range_count(299_300), 62);
        let requests = |r: u64| r * (299_300u64.div_ceil(r) * 100 / 97).div_ceil(1000);
        assert_eq!(requests(62), 310);
        // Never more than 64 ranges, however long the listing.
        assert!(range_count(3_000_000) <= 64);
    }

    #[test]
    fn a_ref_and_refs_below_it_keep_the_shortest() {
        let refs: Vec<(String, u8)> = ["a", "a/b", "a/b/c", "ab", "b/c", "b/c/d", "b/e"]
            .iter()
            .map(|n| (format!("refs/heads/{n}"), 0))
            .collect();
        let (kept, dropped) = without_conflicts(refs);
        let kept: Vec<&str> = kept.iter().map(|(n, _)| &n[11..]).collect();
        assert_eq!(kept, ["a", "ab", "b/c", "b/e"]);
        assert_eq!(
            dropped,
            [
                ("refs/heads/a/b".to_string(), "refs/heads/a".to_string()),
                ("refs/heads/a/b/c".into(), "refs/heads/a".into()),
                ("refs/heads/b/c/d".into(), "refs/heads/b/c".into()),
            ]
        );
    }
}
