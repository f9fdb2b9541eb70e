//! Which stores the store check found to honour conditional writes, and when: one small file
//! per store (endpoint and bucket or container) in the user's cache, `stores/<key>`, so that
//! every repository and lake in one bucket shares the answer. Only a passed check is kept:
//! a store that failed is checked again on the next write (it may have been upgraded).

use std::path::PathBuf;

use super::disk::{replace, user_cache_root};
use super::lines::{checked_lines, with_checksums};
use super::refs_file::key;

const HEADER: &str = "# git-remote-fdl store check v1: <store> | @at <unix seconds> | @unquoted";

/// What the cache remembers of one store's check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StoreChecked {
    /// When it passed, in seconds since the epoch.
    pub at: u64,
    /// The store takes `If-Match` only with unquoted ETags (Ceph RGW 16).
    pub unquoted_if_match: bool,
}

fn path_of(store: &str) -> Option<PathBuf> {
    Some(
        user_cache_root()?
            .join("stores")
            .join(key(&format!("{store}\ncheck"))),
    )
}

/// The check that passed for `store` (as [`crate::store::Store::check_key`] names it), if the
/// cache remembers one.
pub(crate) fn store_checked(store: &str) -> Option<StoreChecked> {
    let path = path_of(store)?;
    let (mut named, mut at, mut unquoted) = (false, None, false);
    checked_lines(&path, HEADER, |line| {
        if let Some(t) = line.strip_prefix("@at ") {
            at = t.parse::<u64>().ok();
        } else if line == "@unquoted" {
            unquoted = true;
        } else {
            named = line == store;
        }
        true
    })?;
    Some(StoreChecked {
        at: at.filter(|_| named)?,
        unquoted_if_match: unquoted,
    })
}

/// Remembers that `store` passed the check (`false` when the cache cannot be written: the
/// next write checks again).
pub(crate) fn remember_store_checked(store: &str, checked: &StoreChecked) -> bool {
    let Some(path) = path_of(store) else {
        return false;
    };
    if let Some(dir) = path.parent() {
        if std::fs::create_dir_all(dir).is_err() {
            return false;
        }
    }
    let mut lines = vec![store.to_string(), format!("@at {}", checked.at)];
    if checked.unquoted_if_match {
        lines.push("@unquoted".into());
    }
    replace(&path, HEADER, &with_checksums(&lines))
}

/// Forgets `store`'s check (a store that failed it now).
pub(crate) fn forget_store_checked(store: &str) {
    if let Some(path) = path_of(store) {
        let _ = std::fs::remove_file(path);
    }
}
