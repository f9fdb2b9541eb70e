//! A listing split into ranges listed side by side: a cloud store answers a page of 1,000
//! keys a round trip, so a folder of many thousand keys, cut at known keys into even ranges,
//! costs one round trip rather than one a page, and the pages are parsed on several workers.
//! What the keys are (which to split at) is the caller's to know.

use std::collections::HashMap;
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
    all.files.dedup();
    Ok(all)
}

/// Listings of consecutive ranges as one, in order. The largest map of ETags is kept and
/// the others added to it: most keys are in one folder.
pub(crate) fn joined(mut parts: Vec<Listed>) -> Listed {
    let largest = (0..parts.len()).max_by_key(|&i| parts[i].e_tags.len());
    let mut all = Listed {
        e_tags: largest.map_or_else(HashMap::new, |i| std::mem::take(&mut parts[i].e_tags)),
        ..Listed::default()
    };
    for part in parts {
        all.files.extend(part.files);
        all.skipped.extend(part.skipped);
        all.e_tags.extend(part.e_tags);
    }
    all
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_joined_keep_their_order_and_every_etag() {
        let part = |names: &[&str]| Listed {
            files: names.iter().map(|n| n.to_string()).collect(),
            e_tags: names
                .iter()
                .map(|n| (n.to_string(), format!("\"{n}\"")))
                .collect(),
            ..Listed::default()
        };
        let all = joined(vec![
            part(&["a"]),
            part(&["b", "c", "d"]),
            part(&["e", "f"]),
        ]);
        assert_eq!(all.files, ["a", "b", "c", "d", "e", "f"]);
        assert_eq!(all.e_tags.len(), 6);
        assert_eq!(all.e_tags["a"], "\"a\"");
        assert_eq!(all.e_tags["f"], "\"f\"");
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
