//! A listing split into ranges listed side by side: a cloud store answers a page of 1,000
//! keys a round trip, so a folder of many thousand keys, cut at known keys into even ranges,
//! costs one round trip rather than one a page, and the pages are parsed on several workers.
//! What the keys are (which to split at) is the caller's to know.

use std::sync::Arc;

use super::backend::{Backend, Range};
use super::error::{stopped, StoreError};
use crate::store::backend::Listed;

/// Where to split a listing of `keys` (sorted): in as few ranges as hold `per_range` keys
/// each, of even sizes, so that their answers are parsed side by side in the same time.
pub fn even_splits<'a>(keys: &[&'a str], per_range: usize) -> Vec<&'a str> {
    let ranges = keys.len().div_ceil(per_range.max(1)).max(1);
    (1..ranges)
        .map(|i| keys[i * keys.len() / ranges - 1])
        .collect()
}

/// Lists `prefix` in ranges split at `splits` (sorted paths; each ends a range), side by
/// side, each expected to hold about `expected` paths; the ranges joined, in order.
pub(super) async fn list_split(
    backend: &Arc<dyn Backend>,
    prefix: &str,
    splits: Vec<&str>,
    expected: usize,
) -> Result<Listed, StoreError> {
    let mut bounds: Vec<Option<&str>> = vec![None];
    bounds.extend(splits.into_iter().map(Some));
    bounds.push(None);
    // Each range is a task of its own: its answer is parsed on a worker, beside the others'.
    let ranges =
        bounds.windows(2).map(|w| {
            let (backend, at, prefix) = (backend.clone(), prefix.to_string(), prefix.to_string());
            let (after, until) = (w[0].map(str::to_string), w[1].map(str::to_string));
            let range = async move {
                let range = Range {
                    after: after.as_deref(),
                    until: until.as_deref(),
                    max: None,
                    expected: Some(expected),
                };
                Ok(backend.list(&prefix, range).await?.found)
            };
            async move {
                (tokio::spawn(range).await).unwrap_or_else(|e| Err(stopped(&at, "listing", e)))
            }
        });
    let mut all = joined(futures::future::try_join_all(ranges).await?);
    all.dedup();
    Ok(all)
}

/// Listings of consecutive ranges as one, in order.
pub(crate) fn joined(parts: Vec<Listed>) -> Listed {
    let mut all = Listed::default();
    for part in parts {
        all.append(part);
    }
    all
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_joined_keep_their_order_and_every_etag() {
        let part = |names: &[&str]| {
            let mut part = Listed::default();
            for n in names {
                part.push(n.to_string(), Some(format!("\"{n}\"")));
            }
            part
        };
        let mut all = joined(vec![
            part(&["a"]),
            part(&["b", "c", "d"]),
            part(&["d", "e", "f"]),
        ]);
        all.dedup();
        assert_eq!(all.files, ["a", "b", "c", "d", "e", "f"]);
        assert_eq!(all.e_tags_by_path().len(), 6);
        assert_eq!(all.e_tag_of("a"), Some("\"a\""));
        assert_eq!(all.e_tag(3), Some("\"d\""));
        assert_eq!(all.e_tag_of("f"), Some("\"f\""));
    }

    #[test]
    fn a_listing_without_etags_joined_to_one_with_them_keeps_each_in_its_place() {
        let mut tagged = Listed::default();
        tagged.push("b".into(), Some("\"b\"".into()));
        let mut plain = Listed::default();
        plain.files.push("a".into());
        let all = joined(vec![plain, tagged]);
        assert_eq!(all.files, ["a", "b"]);
        assert_eq!(all.e_tag(0), None);
        assert_eq!(all.e_tag(1), Some("\"b\""));
    }

    #[test]
    fn even_splits_cut_into_ranges_of_at_most_the_size_asked() {
        let keys: Vec<String> = (0..2000).map(|i| format!("k{i:05}")).collect();
        let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
        assert!(even_splits(&keys[..900], 900).is_empty());
        assert_eq!(even_splits(&keys[..901], 900), [keys[449]]);
        let splits = even_splits(&keys, 900);
        assert_eq!(splits, [keys[665], keys[1332]]);
    }
}
