//! The listing before a shallow fetch from a lake with packs: each ref's commit as the packs
//! claim it ([`PackClaims`]), and the versions no pack holds read and built on top of those
//! claims, so that no version below the packs' newest is read. Where the claims cannot name
//! every ref, the listing reads the history as a full clone's does.

use std::collections::HashMap;

use super::error::RemoteError;
use super::pack_claims::{EarlyClaims, PackClaims};
use super::packed::every_version;
use super::state::Remote;
use crate::history::{self, Known, ListingUnderWay, Reading, Resolved, Summaries, Summary};
use crate::lake::VersionId;
use crate::mapping::ObjectId;
use crate::progress::Progress;

/// What a listing on the packs' claims gave.
pub(super) enum ByClaims {
    /// Every tip's commit, and the versions read above the packs.
    Named(Resolved),
    /// The claims do not name every tip; where the lake turned out to have no packs at all,
    /// the listing of every version, already under way.
    Not(Option<ListingUnderWay>),
}

/// The packs' claims as the commits of versions a walk need not read.
struct Claimed<'a>(&'a PackClaims);

impl Known for Claimed<'_> {
    fn commit(&self, v: &VersionId) -> Option<ObjectId> {
        self.0.commit(v)
    }

    fn newest(&self) -> Option<&VersionId> {
        self.0.newest()
    }
}

impl Remote {
    /// Starts reading the packs' claims indexes, for a listing outside any repository that
    /// remembers nothing (no tips either: a listing that knows them may need no claims): they
    /// come while the refs do.
    ///
    /// Where the lake turns out to have no packs at all, the listing of every version such a
    /// listing then needs starts at once, rather than once the refs are read.
    pub(super) fn open_claims_early(&mut self) {
        if self.claims_first && self.knows_nothing() {
            let lake = self.lake.clone();
            let newest = lake.newest_in_refs_json().filter(|_| lake.can_list());
            let list_all = move |lake| newest.map(|n| every_version(lake, n, None));
            let open = EarlyClaims::read(lake, list_all);
            self.claims_under_way = Some(tokio::spawn(open));
        }
    }

    /// The commits of `tips` by the packs' claims, with what was read above the packs; not on
    /// a folder, where the lake has no claims, or where they do not reach every tip.
    pub(super) async fn resolve_by_claims(
        &mut self,
        reading: &Reading,
        tips: &[(VersionId, String)],
        progress: &dyn Progress,
    ) -> Result<ByClaims, RemoteError> {
        self.claims_tried = true;
        let lake = &self.lake;
        if lake.is_local() || !self.packs_allowed {
            return Ok(ByClaims::Not(None));
        }
        let (opened, listing) = match self.claims_under_way.take() {
            Some(under_way) => under_way.await.unwrap_or_default().into_parts(),
            None => (PackClaims::open(lake).await, None),
        };
        let Some(mut claims) = opened else {
            return Ok(ByClaims::Not(listing));
        };
        let Some(newest) = claims.newest().cloned() else {
            return Ok(ByClaims::Not(None));
        };
        let notes = claims.look_up(lake, tips.iter().map(|(v, _)| v)).await;
        let unclaimed: Vec<(VersionId, String)> = tips
            .iter()
            .filter(|(v, _)| claims.commit(v).is_none())
            .cloned()
            .collect();
        let mut resolved = Resolved::default();
        if !unclaimed.is_empty() {
            let (read, below) =
                above_the_packs(lake, reading, &mut claims, &unclaimed, &newest, progress).await?;
            let reached = unclaimed.iter().all(|(v, _)| read.contains_key(v))
                && below.iter().all(|p| claims.commit(p).is_some());
            if !reached {
                self.say(notes);
                return Ok(ByClaims::Not(None));
            }
            let mut data = Summaries::default();
            for (v, s) in read {
                data.insert(v, Ok(s));
            }
            let named_by = HashMap::new();
            resolved =
                history::compute_commits(reading, &unclaimed, &Claimed(&claims), data, &named_by)?;
        }
        for (v, _) in tips {
            if let Some(c) = claims.commit(v) {
                resolved.commits.insert(v.clone(), c);
            }
        }
        self.say(notes);
        self.pack_claims = Some(claims);
        Ok(ByClaims::Named(resolved))
    }

    fn say(&self, notes: Vec<String>) {
        for note in notes {
            self.lake_warn(note);
        }
    }
}

/// Generations read above the packs where the store cannot list (plain HTTP), each one round
/// trip, before the listing gives up on the claims.
const HTTP_ROUNDS: usize = 8;

/// The versions no pack holds that `unclaimed` reach, read, and their parents the claims
/// name (looked up). Where the store lists: every version after the newest claimed, at
/// once; where it cannot: a generation at a time from the tips, down to claimed versions.
async fn above_the_packs(
    lake: &crate::lake::Lake,
    reading: &Reading,
    claims: &mut PackClaims,
    unclaimed: &[(VersionId, String)],
    newest: &VersionId,
    progress: &dyn Progress,
) -> Result<(HashMap<VersionId, Summary>, Vec<VersionId>), RemoteError> {
    let mut read = HashMap::new();
    let mut next: Vec<VersionId> = match lake.can_list() {
        true => (lake.list_versions(Some(newest), None).await?)
            .into_iter()
            .map(|(v, _)| v)
            .collect(),
        false => unclaimed.iter().map(|(v, _)| v.clone()).collect(),
    };
    let rounds = if lake.can_list() { 1 } else { HTTP_ROUNDS };
    for _ in 0..rounds {
        if next.is_empty() {
            break;
        }
        read.extend(history::read_versions(reading, next, progress).await?);
        let below: Vec<VersionId> = (read.values())
            .flat_map(|s| s.parents.iter())
            .filter(|p| !read.contains_key(*p) && claims.commit(p).is_none())
            .cloned()
            .collect();
        for note in claims.look_up(lake, below.iter()).await {
            lake.warn(note);
        }
        next = below
            .into_iter()
            .filter(|p| claims.commit(p).is_none())
            .collect();
        next.sort();
        next.dedup();
    }
    let below = (read.values())
        .flat_map(|s| s.parents.iter())
        .filter(|p| !read.contains_key(*p))
        .cloned()
        .collect();
    Ok((read, below))
}
