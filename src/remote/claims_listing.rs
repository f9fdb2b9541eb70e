//! The listing before a shallow fetch from a lake with packs: each ref's commit as the packs
//! claim it ([`PackClaims`]), and the versions no pack holds read and built on top of those
//! claims, so that no version below the packs' newest is read. Where the claims cannot name
//! every ref, the listing reads the history as a full clone's does.

use std::collections::HashMap;

use super::error::RemoteError;
use super::pack_claims::PackClaims;
use super::state::Remote;
use crate::history::{self, Known, Reading, Resolved, Summaries};
use crate::lake::VersionId;
use crate::mapping::ObjectId;
use crate::progress::Progress;

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
    /// The commits of `tips` by the packs' claims, with what was read above the packs; `None`
    /// where the store cannot list, the lake has no claims, or they do not reach every tip.
    pub(super) async fn resolve_by_claims(
        &mut self,
        reading: &Reading,
        tips: &[(VersionId, String)],
        progress: &dyn Progress,
    ) -> Result<Option<Resolved>, RemoteError> {
        let lake = &self.lake;
        if !lake.can_list() || lake.is_local() || !self.packs_allowed {
            return Ok(None);
        }
        let Some(mut claims) = PackClaims::open(lake).await else {
            return Ok(None);
        };
        let Some(newest) = claims.newest().cloned() else {
            return Ok(None);
        };
        let mut notes = claims.look_up(lake, tips.iter().map(|(v, _)| v)).await;
        let unclaimed: Vec<(VersionId, String)> = tips
            .iter()
            .filter(|(v, _)| claims.commit(v).is_none())
            .cloned()
            .collect();
        let mut resolved = Resolved::default();
        if !unclaimed.is_empty() {
            // What no pack holds: the versions after the newest any pack claims.
            let listed = lake.list_versions(Some(&newest), None).await?;
            let ids: Vec<VersionId> = listed.into_iter().map(|(v, _)| v).collect();
            let read = history::read_versions(reading, ids, progress).await?;
            let below: Vec<VersionId> = (read.values())
                .flat_map(|s| s.parents.iter())
                .filter(|p| !read.contains_key(*p))
                .cloned()
                .collect();
            notes.extend(claims.look_up(lake, below.iter()).await);
            let reached = unclaimed.iter().all(|(v, _)| read.contains_key(v))
                && below.iter().all(|p| claims.commit(p).is_some());
            if !reached {
                self.say(notes);
                return Ok(None);
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
        Ok(Some(resolved))
    }

    fn say(&self, notes: Vec<String>) {
        for note in notes {
            self.lake_warn(note);
        }
    }
}
