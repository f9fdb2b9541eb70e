//! `list` and `list for-push`: HEAD and the refs read, and the commit of every ref computed
//! (from the cache where it vouches for them, else by reading and building versions).

use std::collections::HashMap;

use super::claims_listing::ByClaims;
use super::error::RemoteError;
use super::listing::Listing;
use super::packed::{every_version, EarlyTags, IndexRecords, PacksUnderWay};
use super::state::Remote;
use crate::history::{self, Known, Reading};
use crate::lake::{self, LakeError, VersionId};
use crate::mapping::ObjectId;
use crate::progress::Progress;
use crate::store::{StoreError, Token, Versioned};
use crate::vouch::{objects_in, rewritten, Seen, Vetted};

/// What resolving the tips gave.
struct Resolution {
    resolved: history::Resolved,
    /// The tips' commits the cache gave.
    tips_known: Vec<(VersionId, ObjectId)>,
    nothing_known: bool,
    /// The records a listing read as the index after all, where the claims did not reach.
    late_index: Option<IndexRecords>,
}

impl Resolution {
    /// What was built, the tips' commits the cache gave, and whether it knew nothing; the
    /// records read as the index (`index`, or those read after all) remembered.
    fn taken(
        self,
        remote: &Remote,
        index: Option<IndexRecords>,
    ) -> (history::Resolved, Vec<(VersionId, ObjectId)>, bool) {
        if let Some(index) = index.or(self.late_index) {
            remote.remember_index(index);
        }
        (self.resolved, self.tips_known, self.nothing_known)
    }
}

/// What a listing read: HEAD and the refs, and for a push what its writes are conditional on.
struct ReadRefs {
    head: String,
    refs: Vec<(String, VersionId)>,
    /// For a push, each ref file's token, in the order of `refs` (sorted by name then).
    tokens: Vec<Token>,
    /// For a push, `refs.json` as read (`Some(None)`: there was none).
    refs_json: Option<Option<Versioned>>,
    /// Whether `refs.json` was read before the refs, rather than beside them.
    refs_json_first: bool,
}

impl Remote {
    /// Reads HEAD and the refs, and computes the commit of every ref.
    pub(crate) async fn list(&mut self, progress: &dyn Progress) -> Result<Listing, RemoteError> {
        self.list_with(progress, false, false).await
    }

    /// [`Remote::list`] for a session that may fetch next: what a listing that knew nothing
    /// (a clone) built goes into the cache only when [`Remote::remember_listing`] is called,
    /// once the fetch has completed its pack. The cache's copy of every version (13 MB at
    /// 100,000) is then never held beside the pack's table of objects (14 MB), the largest
    /// things a clone holds.
    pub(crate) async fn list_for_fetch(
        &mut self,
        progress: &dyn Progress,
    ) -> Result<Listing, RemoteError> {
        self.list_with(progress, false, true).await
    }

    /// Puts what `listing` built into the cache, if [`Remote::list_for_fetch`] left it out.
    pub(crate) fn remember_listing(&mut self, listing: &mut Listing) {
        if std::mem::take(&mut listing.unremembered) {
            self.remember(&listing.commits, &listing.built);
        }
    }

    /// `list for-push`: also the ref files' tokens, and `refs.json` (read beside the refs, or
    /// before them: a later rewrite of `refs.json` is conditional on it).
    pub(crate) async fn list_for_push(
        &mut self,
        progress: &dyn Progress,
    ) -> Result<Listing, RemoteError> {
        self.list_with(progress, true, false).await
    }

    /// Computes the commit of `version` (reading it and any ancestors not known yet).
    pub(crate) async fn commit_of(
        &mut self,
        version: &VersionId,
        named_by: &str,
    ) -> Result<ObjectId, RemoteError> {
        let objects = objects_in(self.repo.as_ref(), self.cache.as_ref());
        let tip = self
            .cache
            .as_ref()
            .and_then(|c| c.tips().get(version).copied());
        let vouched = |c: &ObjectId| {
            (objects.as_ref()).is_none_or(|o| o.vouch(version, c, None) == Seen::Holds)
        };
        if let Some(c) = tip.filter(vouched) {
            return Ok(c);
        }
        drop(objects);
        self.load_cache().await;
        let reading = self.reading(false)?;
        let tips = [(version.clone(), named_by.to_string())];
        let cache = self.cache.as_ref();
        let (empty, no_parents) = (HashMap::new(), HashMap::new());
        let known = cache.map_or(&empty, |c| c.commits());
        let parents = cache.map_or(&no_parents, |c| c.parents());
        let objects = objects_in(self.repo.as_ref(), cache);
        let vetted = Vetted::new(known, parents, objects.as_ref());
        let resolved = match vetted.commit(version) {
            Some(c) => Ok(history::Resolved {
                commits: HashMap::from([(version.clone(), c)]),
                ..Default::default()
            }),
            None => {
                let silent = crate::progress::Silent;
                history::resolve_listed(&reading, &tips, &vetted, &silent, None).await
            }
        };
        drop(vetted);
        drop(objects);
        let resolved = resolved?;
        self.remember(&resolved.commits, &resolved.built);
        Ok(resolved.commits[version])
    }

    /// HEAD and the refs; for a push also each ref file's token and `refs.json` (read before
    /// the refs).
    async fn read_refs(&mut self, for_push: bool) -> Result<ReadRefs, RemoteError> {
        let refs_json_first = !self.lake.has_ref_listing_ahead();
        let refs_json = match for_push {
            true => self.refs_json_for_push().await?,
            false => {
                self.lake.forget_read_ahead();
                None
            }
        };
        let (head, refs) = if for_push && !self.lake.etag_conditions() {
            let (head, refs) = futures::join!(self.lake.head(), self.lake.refs_versioned());
            (head?, refs?)
        } else {
            // Ref files whose ETag has not changed since the last listing are not read again
            // (for a push, the listing's ETag is the token its writes are conditional on).
            let empty = HashMap::new();
            let seen = self.cache.as_ref().map_or(&empty, |c| c.ref_files());
            let (head, refs) = futures::join!(self.lake.head(), self.lake.refs_remembered(seen));
            let lake::RefsSeen { refs, remember } = refs?;
            if let Some((cache, remember)) = self.cache.as_mut().zip(remember) {
                cache.set_refs(remember);
            }
            (head?, refs)
        };
        // Listing::token looks tokens up by a binary search of the refs.
        debug_assert!(
            refs.is_sorted_by(|a, b| a.0 < b.0),
            "refs are listed sorted"
        );
        let mut tokens = Vec::with_capacity(if for_push { refs.len() } else { 0 });
        let refs: Vec<(String, VersionId)> = refs
            .into_iter()
            .map(|(n, v, t)| {
                if for_push {
                    tokens.push(t);
                }
                (n, v)
            })
            .collect();
        // A push sees every ref file, so that it can delete one of a pair Git cannot hold; a
        // fetch lists only what Git can hold.
        let refs = match for_push {
            true => refs,
            false => self.lake.git_compatible(refs),
        };
        Ok(ReadRefs {
            head,
            refs,
            tokens,
            refs_json,
            refs_json_first,
        })
    }

    async fn list_with(
        &mut self,
        progress: &dyn Progress,
        for_push: bool,
        defer_remember: bool,
    ) -> Result<Listing, RemoteError> {
        self.note_what_follows(for_push);
        let packs = self.pack_list_early(for_push);
        let (listing, index) = self.listing_early(for_push, packs.as_ref());
        let ReadRefs {
            head,
            refs,
            tokens,
            refs_json,
            refs_json_first,
        } = self.read_refs(for_push).await?;
        self.warn_if_head_dangles(&head, &refs);
        // A push's listing writes no objects: no fetch follows it. A shallow fetch builds
        // what it keeps itself.
        let reading = self.reading(!for_push && !self.shallow_listing)?;
        // Tips known from the file of refs (a push's listing, a no-op fetch): nothing to read
        // or build, and the commits file (O(history)) is not read.
        if let Some(commits) = self.known_tips(&refs) {
            drop((listing, packs));
            self.remember(&commits, &HashMap::new());
            return Ok(Listing {
                head: Some(head),
                refs,
                commits,
                built: HashMap::new(),
                whole_history: None,
                tokens,
                refs_json,
                refs_json_first,
                for_push,
                unremembered: false,
            });
        }
        let tips: Vec<(VersionId, String)> = refs
            .iter()
            .map(|(n, v)| (v.clone(), format!("ref {n}")))
            .collect();
        let got = self.resolve_tips(&reading, &tips, progress, listing, packs);
        let (resolved, tips_known, nothing_known) = got.await?.taken(self, index);
        // The map of every version read, grown by a few tips rather than copied.
        let mut commits = resolved.commits;
        commits.extend(tips_known);
        if let Some(cache) = &mut self.cache {
            let tip_commits = tips
                .iter()
                .filter_map(|(v, _)| Some((v.clone(), *commits.get(v)?)));
            cache.set_tips(tip_commits.collect());
        }
        // A clone's listing waits for its fetch ([`Remote::list_for_fetch`]).
        let unremembered = defer_remember && nothing_known && !for_push && self.repo.is_some();
        if !unremembered {
            self.remember(&commits, &resolved.built);
        }
        Ok(Listing {
            head: Some(head),
            refs,
            commits,
            whole_history: (nothing_known && !for_push && !self.shallow_listing)
                .then_some(resolved.order),
            built: if for_push {
                HashMap::new()
            } else {
                resolved.built
            },
            tokens,
            refs_json,
            refs_json_first,
            for_push,
            unremembered,
        })
    }

    /// Warns when HEAD names a ref the lake does not have.
    fn warn_if_head_dangles(&self, head: &str, refs: &[(String, VersionId)]) {
        if !refs.iter().any(|(n, _)| *n == head) && !refs.is_empty() {
            self.lake_warn(format!(
                "lake '{}': HEAD names {head}, which does not exist",
                self.lake.name()
            ));
        }
    }

    /// What lists the versions to read, started before the refs are read: a listing of every
    /// version on a clone from a store that lists, or the packs' records where the store
    /// cannot list (with the records read, remembered once the walk is done).
    fn listing_early(
        &self,
        for_push: bool,
        packs: Option<&PacksUnderWay>,
    ) -> (Option<history::ListingUnderWay>, Option<IndexRecords>) {
        if let Some(listing) = self.list_everything_early(for_push, packs.map(|p| p.tags())) {
            return (Some(listing), None);
        }
        match self.versions_of_records(for_push) {
            Some((listing, records)) => (Some(listing), Some(records)),
            None => (None, None),
        }
    }

    /// Reads and builds what the tips reach that the cache does not vouch for ([`crate::vouch`]):
    /// what was built, the tips' commits the cache gave, and whether it knew nothing.
    async fn resolve_tips(
        &mut self,
        reading: &Reading,
        tips: &[(VersionId, String)],
        progress: &dyn Progress,
        listing: Option<history::ListingUnderWay>,
        packs: Option<PacksUnderWay>,
    ) -> Result<Resolution, RemoteError> {
        self.load_cache().await;
        let (mut listing, mut packs) = (listing, packs);
        let mut late_index = None;
        if self.shallow_listing || self.claims_first {
            let by_claims = self.resolve_by_claims(reading, tips, progress).await?;
            let early_listing = match by_claims {
                ByClaims::Not(early_listing) => early_listing,
                ByClaims::Named(mut resolved) => {
                    let nothing_known = self.cache.as_ref().is_none_or(|c| c.commits().is_empty());
                    if self.claims_first {
                        // Outside a repository nothing built on claims is remembered (no fetch
                        // follows): a later listing would take it as checked and walk below it.
                        resolved.built.clear();
                        resolved.order.clear();
                    }
                    return Ok(Resolution {
                        resolved,
                        tips_known: Vec::new(),
                        nothing_known,
                        late_index: None,
                    });
                }
            };
            // No claims reach the tips: outside a repository the packs, checked (a lake
            // without any has its listing under way already); for a shallow fetch the
            // records as the index, as for a full clone.
            if std::mem::take(&mut self.claims_first) {
                if early_listing.is_some() {
                    listing = early_listing;
                } else {
                    packs = self.pack_list_early(false);
                    (listing, late_index) = self.listing_early(false, packs.as_ref());
                }
            } else if let Some((records_listing, index)) = self.versions_of_records(false) {
                listing = Some(records_listing);
                late_index = Some(index);
            }
        }
        if let Some(packs) = packs {
            self.use_packs(packs, &mut listing, tips, progress).await;
        }
        let cache = self.cache.as_ref();
        let (empty, no_parents) = (HashMap::new(), HashMap::new());
        let known = cache.map_or(&empty, |c| c.commits());
        let parents = cache.map_or(&no_parents, |c| c.parents());
        let nothing_known = known.is_empty();
        // What the cache remembers is checked as the walk meets it.
        let objects = objects_in(self.repo.as_ref(), cache);
        let vetted = Vetted::new(known, parents, objects.as_ref());
        let resolved = history::resolve_listed(reading, tips, &vetted, progress, listing).await;
        let tips_known: Vec<(VersionId, ObjectId)> = tips
            .iter()
            .filter_map(|(v, _)| Some((v.clone(), vetted.commit(v)?)))
            .collect();
        let rewritten = resolved.as_ref().ok().and_then(|r| rewritten(r, &vetted));
        drop(vetted);
        drop(objects);
        let resolved = resolved?;
        if let Some((version, cached, computed)) = rewritten {
            return Err(self.cache_mismatch(version, cached, computed));
        }
        Ok(Resolution {
            resolved,
            tips_known,
            nothing_known,
            late_index,
        })
    }

    /// The commit of every ref's version, when the file of refs knows them all; the tips it
    /// remembers are then those of `refs` (fewer if a ref is gone).
    /// Each tip's commit is checked first ([`crate::vouch`]: in the repository, its trailer; the
    /// commits file, which knows its parents, is not read here); one that fails is forgotten.
    fn known_tips(&mut self, refs: &[(String, VersionId)]) -> Option<HashMap<VersionId, ObjectId>> {
        let objects = objects_in(self.repo.as_ref(), self.cache.as_ref());
        let cache = self.cache.as_mut()?;
        let mut commits = HashMap::with_capacity(refs.len());
        for (_, v) in refs {
            let c = *cache.tips().get(v)?;
            match objects
                .as_ref()
                .map_or(Seen::Holds, |o| o.vouch(v, &c, None))
            {
                Seen::Holds => {}
                Seen::Contradicted => {
                    cache.forget_tip(v);
                    return None;
                }
                // Read again, and checked against the commits file.
                Seen::Absent => return None,
            }
            commits.insert(v.clone(), c);
        }
        if commits.len() != cache.tips().len() {
            cache.set_tips(commits.clone());
        }
        Some(commits)
    }

    /// Where nothing is known of the lake (a clone), every version will be listed: the
    /// listing starts now, while the ref files are read, split up to the newest version
    /// `refs.json` names (a guess; without one, it waits for the tips).
    /// When the lake's packs are being read (`tags`), the ETags the listing shows are kept for
    /// them if the pack list named any by the time the listing is done.
    fn list_everything_early(
        &self,
        for_push: bool,
        tags: Option<std::sync::Arc<EarlyTags>>,
    ) -> Option<history::ListingUnderWay> {
        let lake = &self.lake;
        let knows_nothing = self.knows_nothing();
        let claims_first = self.shallow_listing || self.claims_first;
        if for_push || !knows_nothing || !lake.can_list() || lake.is_local() || claims_first {
            return None;
        }
        let newest = self.lake.newest_in_refs_json()?;
        Some(every_version(self.lake.clone(), newest, tags))
    }

    /// `refs.json` with its token, for a push to rewrite: `None` (left as it is) when it is
    /// larger than a push reads, so that the push still writes its refs.
    async fn refs_json_for_push(&self) -> Result<Option<Option<Versioned>>, RemoteError> {
        match self.lake.refs_json_versioned().await {
            Ok(read) => Ok(Some(read)),
            Err(LakeError::Store {
                source: e @ StoreError::TooLarge { .. },
                ..
            }) => {
                self.lake_warn(format!(
                    "lake '{}': {e}: this push writes the refs and leaves refs.json as it is \
                     (readers that cannot list the store go on seeing the refs it names)",
                    self.lake.name()
                ));
                Ok(None)
            }
            Err(e) => Err(e.into()),
        }
    }
}
