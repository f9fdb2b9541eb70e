//! `refs.json` as a push meets it and rewrites it: read with its token, and rendered from the
//! refs it must name, in the shape the lake's file has.

use std::collections::HashMap;

use bytes::Bytes;

use crate::lake::refs_json::{parse_refs_json, render_refs_json};
use crate::lake::{check_ref_name, Lake, VersionId};
use crate::store::Token;

/// `refs.json` as read before the refs are listed again (`None`: there is none).
pub(super) type Current = Option<(Bytes, Token)>;

/// `refs.json` with its token, read now: beside the ref writes when the first attempt cannot
/// come from the listing, since a write on this token needs only that the refs are listed
/// after it, which they are once the writes are over. `None` if the read failed.
pub(super) async fn read_current(lake: &Lake) -> Option<Current> {
    let current = lake.refs_json_versioned().await.ok()?;
    Some(current.map(|v| (v.bytes, v.token)))
}

/// The `refs.json` that names `refs` (those Git can hold), keeping `current`'s other entries,
/// and the entries of `broken` ref files as they are (a ref file that holds no version is no
/// reason to drop what refs.json last said of it).
pub(super) fn render(
    current: Option<&[u8]>,
    mut refs: HashMap<String, VersionId>,
    broken: &[String],
) -> Bytes {
    if let (false, Some(Ok(named))) = (broken.is_empty(), current.map(parse_refs_json)) {
        for (name, v) in named {
            if broken.contains(&name) && !refs.contains_key(&name) {
                if let Ok(v) = VersionId::parse(v.trim()) {
                    refs.insert(name, v);
                }
            }
        }
    }
    let mut pairs: Vec<(String, VersionId)> = refs
        .into_iter()
        .filter(|(n, _)| check_ref_name(n).is_ok())
        .collect();
    pairs.sort();
    Bytes::from(render_refs_json(current, &pairs))
}
