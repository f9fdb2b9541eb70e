//! The versions a walk read, by ID, in a table that gives its room back as versions are taken
//! out to be built: a clone holds a summary for every version until its commit is made.

use std::collections::HashMap;

use super::Summary;
use crate::lake::{LakeError, VersionId};

/// Tables the summaries are spread over. One table of 100,000 summaries is 20 MB, and a
/// table shrinks only by being copied whole into a smaller one (30 MB for that moment);
/// sixteen shrink one at a time, each a sixteenth of that.
const SHARDS: usize = 16;

type Read = Result<Summary, LakeError>;

/// How a table holds a [`Read`]: the error boxed, which makes an entry no larger than its
/// summary (88 bytes with its ID, not 120: 4 MB less for the tables of 100,000 versions).
type Held = Result<Summary, Box<LakeError>>;

/// Each version read (or why it could not be), by ID.
pub(crate) struct Summaries {
    shards: Vec<HashMap<VersionId, Held>>,
    len: usize,
}

impl Default for Summaries {
    fn default() -> Summaries {
        Summaries {
            shards: (0..SHARDS).map(|_| HashMap::new()).collect(),
            len: 0,
        }
    }
}

/// The shard of `id`: its bits mixed (a version ID's last bits are random in a UUIDv7, but a
/// lake's writer chooses them).
fn shard(id: &VersionId) -> usize {
    let x = id.as_u128();
    let folded = (x as u64) ^ ((x >> 64) as u64);
    (folded.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 60) as usize % SHARDS
}

impl Summaries {
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Room for `more` versions at once, spread as they will be (with a little to spare).
    pub(crate) fn reserve(&mut self, more: usize) {
        let each = more / SHARDS + more / (SHARDS * 16) + 16;
        for s in &mut self.shards {
            s.reserve(each);
        }
    }

    pub(crate) fn get(&self, id: &VersionId) -> Option<Result<&Summary, &LakeError>> {
        Some(self.shards[shard(id)].get(id)?.as_ref().map_err(|e| &**e))
    }

    pub(crate) fn get_mut(
        &mut self,
        id: &VersionId,
    ) -> Option<Result<&mut Summary, &mut LakeError>> {
        Some(
            self.shards[shard(id)]
                .get_mut(id)?
                .as_mut()
                .map_err(|e| &mut **e),
        )
    }

    pub(crate) fn contains_key(&self, id: &VersionId) -> bool {
        self.shards[shard(id)].contains_key(id)
    }

    pub(crate) fn insert(&mut self, id: VersionId, read: Read) -> Option<Read> {
        let old = self.shards[shard(&id)].insert(id, read.map_err(Box::new));
        self.len += usize::from(old.is_none());
        old.map(unboxed)
    }

    /// Takes a version out; its shard shrinks once it is half empty (halving each time moves
    /// each summary about once in all).
    pub(crate) fn remove(&mut self, id: &VersionId) -> Option<Read> {
        let table = &mut self.shards[shard(id)];
        let read = table.remove(id)?;
        self.len -= 1;
        if table.len() < table.capacity() / 2 {
            table.shrink_to_fit();
        }
        Some(unboxed(read))
    }

    /// Keeps the versions `keep` says to keep.
    pub(crate) fn retain(&mut self, mut keep: impl FnMut(&VersionId) -> bool) {
        for s in &mut self.shards {
            s.retain(|id, _| keep(id));
        }
        self.len = self.shards.iter().map(HashMap::len).sum();
    }

    /// Every version, in no order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&VersionId, Result<&Summary, &LakeError>)> {
        let each = self.shards.iter().flat_map(HashMap::iter);
        each.map(|(id, held)| (id, held.as_ref().map_err(|e| &**e)))
    }

    pub(crate) fn values(&self) -> impl Iterator<Item = Result<&Summary, &LakeError>> {
        self.iter().map(|(_, read)| read)
    }
}

fn unboxed(held: Held) -> Read {
    held.map_err(|e| *e)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_spread_over_every_shard_and_are_found_again() {
        let ids: Vec<VersionId> = (0..1000u64)
            .map(|n| {
                let text = format!("0190a000-0000-7000-8000-{n:012x}");
                VersionId::parse(&text).unwrap()
            })
            .collect();
        let mut used = [0usize; SHARDS];
        for id in &ids {
            used[shard(id)] += 1;
        }
        assert!(used.iter().all(|n| *n > 20), "{used:?}");
        let mut s = Summaries::default();
        for id in &ids {
            let gone = LakeError::MissingVersion {
                lake: "lake".into(),
                version: id.clone(),
                by: String::new(),
            };
            assert!(s.insert(id.clone(), Err(gone)).is_none());
        }
        assert_eq!(s.len(), 1000);
        assert!(ids.iter().all(|id| s.contains_key(id)));
        for id in &ids[..990] {
            assert!(s.remove(id).is_some());
        }
        assert_eq!(s.len(), 10);
        assert_eq!(s.iter().count(), 10);
        assert!(s.shards.iter().map(HashMap::capacity).sum::<usize>() < 200);
    }
}
