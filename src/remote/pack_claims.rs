//! The commits the lake's packs claim for a few versions, read from their claims cut in
//! pieces ([`crate::lake_packs::claims`]): what a shallow clone's listing names the refs with,
//! and the parents of its boundary, without reading a record whole or a version below the
//! boundary. A pack whose claims are missing or malformed is passed over, said once.

use std::collections::{HashMap, HashSet};

use futures::StreamExt;

use crate::lake::{Lake, VersionId};
use crate::lake_packs::claims::{self, ClaimsIndex};
use crate::mapping::ObjectId;

/// Blocks of claims read at once.
const BLOCKS_IN_FLIGHT: usize = 64;

/// What the lake's packs claim, read as needed.
pub(crate) struct PackClaims {
    /// Each listed pack that has claims, with its index.
    packs: Vec<(String, ClaimsIndex)>,
    /// Claims read so far: each version's commit, and the pack that claims it.
    found: HashMap<VersionId, (ObjectId, usize)>,
    /// Blocks read, by pack and number.
    read: HashSet<(usize, usize)>,
}

impl PackClaims {
    /// The claims indexes of the packs `list.json` names (read side by side); `None` where
    /// there is no pack list.
    pub(crate) async fn open(lake: &Lake) -> Option<PackClaims> {
        let list = lake.pack_list().await.ok()??;
        let names = crate::lake_packs::parse_list(&list.bytes).ok()?;
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
}
