//! The commits the lake's packs claim for a few versions, read from their claims cut in
//! pieces ([`crate::lake_packs::claims`]): what a shallow clone's listing names the refs with,
//! and the parents of its boundary, without reading a record whole or a version below the
//! boundary. A pack whose claims are missing or malformed is passed over, said once.

use std::collections::{HashMap, HashSet};

use futures::StreamExt;

use crate::history::ListingUnderWay;
use crate::lake::{Lake, VersionId};
use crate::lake_packs::claims::{self, ClaimsIndex};
use crate::mapping::ObjectId;

/// Blocks of claims read at once.
const BLOCKS_IN_FLIGHT: usize = 64;

/// About the bytes of a version's entry in a pack's record (its ID, commit, two ETags and the
/// JSON around them; a signed version's is larger).
const RECORD_BYTES_A_VERSION: usize = 220;

/// The parts a whole file is read in, at first (`store/cloud/parts.rs`).
const PART_BYTES: usize = 8 << 20;

/// The largest record read whole instead of its blocks.
const RECORD_AT_MOST: usize = 64 << 20;

/// Whether reading a pack's record whole takes fewer requests than reading `blocks` of its
/// claims, for at most four times their bytes (many refs spread over a long history: 1,000
/// tags over 100,000 versions want 390 blocks, or a record of about 20 MB in 3 parts).
fn record_is_cheaper(index: &ClaimsIndex, blocks: usize) -> bool {
    let bytes = index.firsts.len() * claims::PER_BLOCK * RECORD_BYTES_A_VERSION;
    blocks > bytes.div_ceil(PART_BYTES) + 1
        && bytes <= 4 * blocks * claims::BLOCK_BYTES
        && bytes <= RECORD_AT_MOST
}

/// What the lake's packs claim, read as needed.
pub(crate) struct PackClaims {
    /// Each listed pack that has claims, with its index.
    packs: Vec<(String, ClaimsIndex)>,
    /// Claims read so far: each version's commit, and the pack that claims it.
    found: HashMap<VersionId, (ObjectId, usize)>,
    /// Blocks read, by pack and number.
    read: HashSet<(usize, usize)>,
}

/// The packs' claims, read while a listing's refs are: or where the lake has no pack list,
/// the listing of every version, started as soon as that is known.
#[derive(Default)]
pub(crate) struct EarlyClaims {
    claims: Option<PackClaims>,
    listing: Option<ListingUnderWay>,
}

impl EarlyClaims {
    /// Reads `git-packs/list.json` and the claims indexes it names; without a list, what
    /// `list_all` starts instead.
    pub(crate) async fn read(
        lake: Lake,
        list_all: impl FnOnce(Lake) -> Option<ListingUnderWay>,
    ) -> EarlyClaims {
        match lake.pack_list().await {
            Ok(Some(list)) => EarlyClaims {
                claims: PackClaims::of_list(&lake, &list.bytes).await,
                listing: None,
            },
            Ok(None) => EarlyClaims {
                claims: None,
                listing: list_all(lake),
            },
            Err(_) => EarlyClaims::default(),
        }
    }

    /// The claims, and the listing started where there were none.
    pub(crate) fn into_parts(self) -> (Option<PackClaims>, Option<ListingUnderWay>) {
        (self.claims, self.listing)
    }
}

impl PackClaims {
    /// The claims indexes of the packs `list.json` names (read side by side); `None` where
    /// there is no pack list.
    pub(crate) async fn open(lake: &Lake) -> Option<PackClaims> {
        let list = lake.pack_list().await.ok()??;
        PackClaims::of_list(lake, &list.bytes).await
    }

    /// The claims indexes of the packs `list` (`git-packs/list.json`, as read) names.
    pub(crate) async fn of_list(lake: &Lake, list: &[u8]) -> Option<PackClaims> {
        let names = crate::lake_packs::parse_list(list).ok()?;
        let reads = names.into_iter().map(|name| async move {
            let index = lake.claims_index(&name).await.ok().flatten();
            let file = format!("git-packs/{name}.claims/index");
            let index = index.and_then(|raw| claims::parse_index(&file, &raw).ok());
            (name, index)
        });
        let indexes: Vec<_> = futures::stream::iter(reads)
            .buffered(BLOCKS_IN_FLIGHT)
            .collect()
            .await;
        // A pack without claims (written before them, or damaged) is read as before.
        let packs = (indexes.into_iter())
            .filter_map(|(name, index)| Some((name, index?)))
            .collect();
        Some(PackClaims {
            packs,
            found: HashMap::new(),
            read: HashSet::new(),
        })
    }

    /// The newest version any pack claims (versions after it are in no pack, where IDs are
    /// UUIDv7).
    pub(crate) fn newest(&self) -> Option<&VersionId> {
        self.packs.iter().map(|(_, i)| &i.last).max()
    }

    /// The commit a pack claims for `v`, once looked up.
    pub(crate) fn commit(&self, v: &VersionId) -> Option<ObjectId> {
        self.found.get(v).map(|(c, _)| *c)
    }

    /// The pack that claims `v`.
    pub(crate) fn pack_of(&self, v: &VersionId) -> Option<&str> {
        let (_, p) = self.found.get(v)?;
        Some(&self.packs[*p].0)
    }

    /// Reads the blocks that may hold `ids`' claims, all at once. A block that cannot be read
    /// or taken passes its pack over; its text is returned to be said.
    pub(crate) async fn look_up<'a>(
        &mut self,
        lake: &Lake,
        ids: impl IntoIterator<Item = &'a VersionId>,
    ) -> Vec<String> {
        let mut wanted: HashSet<(usize, usize)> = HashSet::new();
        for v in ids {
            if self.found.contains_key(v) {
                continue;
            }
            for (p, (_, index)) in self.packs.iter().enumerate() {
                if let Some(b) = index.block_of(v).filter(|b| !self.read.contains(&(p, *b))) {
                    wanted.insert((p, b));
                }
            }
        }
        self.read_records_instead(lake, &mut wanted).await;
        let reads = wanted.into_iter().map(|(p, b)| {
            let name = self.packs[p].0.clone();
            async move { (p, b, lake.claims_block(&name, b).await) }
        });
        let blocks: Vec<_> = futures::stream::iter(reads)
            .buffer_unordered(BLOCKS_IN_FLIGHT)
            .collect()
            .await;
        let mut notes = Vec::new();
        for (p, b, got) in blocks {
            self.read.insert((p, b));
            let (name, index) = &self.packs[p];
            let file = format!("git-packs/{name}.claims/{b}");
            let taken = match got {
                Ok(Some(raw)) => {
                    claims::parse_block(&file, index, b, &raw).map_err(|e| e.to_string())
                }
                Ok(None) => Err(format!("{file} is missing")),
                Err(e) => Err(e.to_string()),
            };
            match taken {
                Ok(lines) => {
                    for (v, c) in lines {
                        self.found.entry(v).or_insert((c, p));
                    }
                }
                Err(why) => notes.push(format!(
                    "lake '{}': {why}: its versions are read from the lake instead",
                    lake.name()
                )),
            }
        }
        notes
    }

    /// Reads whole the records of the packs of which so many `wanted` blocks are wanted that
    /// the record costs fewer requests ([`record_is_cheaper`]), and takes their blocks out of
    /// `wanted`. A record that cannot be read or taken leaves its blocks to be read.
    async fn read_records_instead(&mut self, lake: &Lake, wanted: &mut HashSet<(usize, usize)>) {
        let mut blocks: HashMap<usize, usize> = HashMap::new();
        for (p, _) in wanted.iter() {
            *blocks.entry(*p).or_default() += 1;
        }
        let whole = (blocks.into_iter())
            .filter(|(p, n)| record_is_cheaper(&self.packs[*p].1, *n))
            .map(|(p, _)| {
                let name = self.packs[p].0.clone();
                async move { (p, lake.pack_record(&name).await) }
            });
        let records: Vec<_> = futures::stream::iter(whole)
            .buffer_unordered(BLOCKS_IN_FLIGHT)
            .collect()
            .await;
        for (p, got) in records {
            let name = &self.packs[p].0;
            let Some(record) = (got.ok().flatten())
                .and_then(|raw| crate::lake_packs::parse_record(name, &raw).ok())
            else {
                continue;
            };
            for v in record.versions {
                self.found.entry(v.id).or_insert((v.commit, p));
            }
            for b in 0..self.packs[p].1.firsts.len() {
                self.read.insert((p, b));
            }
            wanted.retain(|(q, _)| *q != p);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn index_of(blocks: usize) -> ClaimsIndex {
        let id = |n: usize| VersionId::parse(&format!("019b76da-0000-7000-8000-{n:012}")).unwrap();
        ClaimsIndex {
            firsts: (0..blocks).map(|b| id(b * claims::PER_BLOCK)).collect(),
            last: id(blocks * claims::PER_BLOCK - 1),
        }
    }

    #[test]
    fn a_record_is_read_whole_only_where_it_saves_requests_for_not_many_more_bytes() {
        // 100,000 versions (391 blocks, a record of about 21 MB in 3 parts).
        let pack = index_of(391);
        assert!(record_is_cheaper(&pack, 390), "1,000 tags over the history");
        assert!(!record_is_cheaper(&pack, 4), "a few refs: their blocks");
        assert!(
            !record_is_cheaper(&pack, 50),
            "21 MB for 50 blocks of 20 KB"
        );
        // 1,000,000 versions: a record of about 215 MB is never read for its claims.
        assert!(!record_is_cheaper(&index_of(3907), 3907));
        // A small pack: one part, so more than two blocks wanted.
        assert!(record_is_cheaper(&index_of(4), 3));
        assert!(!record_is_cheaper(&index_of(4), 2));
    }
}
