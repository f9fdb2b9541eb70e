//! The lake's own packs on a clone ([`crate::lake_packs`]): `git-packs/list.json` read beside the
//! ref files, and, if it names packs, the versions they hold taken once checked, before the
//! walk reads the others. The listing of every version a clone starts anyway keeps its ETags
//! for the check, so that `versions/` is listed once. Where the store cannot list (plain HTTP)
//! and the packs are not trusted, their records still name the versions to read: all at once,
//! each read and mapped as without packs, instead of a generation per round trip.

use std::collections::HashMap;

use futures::StreamExt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use super::state::Remote;
use crate::history::ListingUnderWay;
use crate::lake::git_packs::{listed_files, VersionFileEtags};
use crate::lake::VersionId;
use crate::lake_packs::import::{import, Trust};
use crate::progress::Progress;
use crate::repo::ScratchRepo;
use crate::store::{Listed, StoreError, Versioned};

/// `git-packs/list.json` being read, stopped if dropped unneeded.
pub(super) struct PacksUnderWay {
    list: tokio::task::JoinHandle<Result<Option<Versioned>, StoreError>>,
    tags: Arc<EarlyTags>,
}

impl PacksUnderWay {
    /// Where the early listing leaves its ETags.
    pub(super) fn tags(&self) -> Arc<EarlyTags> {
        self.tags.clone()
    }
}

impl Drop for PacksUnderWay {
    fn drop(&mut self) {
        self.list.abort();
    }
}

/// The ETags of `versions/` as the early listing saw them, kept only once the pack list turned
/// out to name packs (a lake without packs costs no memory for them).
#[derive(Default)]
pub(super) struct EarlyTags {
    wanted: AtomicBool,
    found: Mutex<Option<HashMap<VersionId, VersionFileEtags>>>,
}

impl EarlyTags {
    pub(super) fn keep(&self, parts: &[Listed]) {
        if self.wanted.load(Ordering::Acquire) {
            *self.found.lock().expect("tags lock") = Some(listed_files(parts));
        }
    }
}

/// Records read at once at most.
const RECORDS_IN_FLIGHT: usize = 32;

impl Remote {
    /// Where nothing is known of the lake (a clone) and the store cannot list, the versions
    /// the lake's pack records name, as a listing would give them: the walk reads them all at
    /// once. Only their IDs are taken (each version is read and mapped as without packs, and a
    /// named version the lake lacks is passed over as a listed one in progress is); versions
    /// no record names (newer than the last `pack`) are found by the walk as before. A list or
    /// record that cannot be read names nothing.
    pub(super) fn versions_of_records(&self, for_push: bool) -> Option<ListingUnderWay> {
        let lake = &self.lake;
        let index = !lake.can_list() && !lake.is_local() && !self.trust_packs;
        if for_push || !self.knows_nothing() || !index || !self.packs_allowed {
            return None;
        }
        let lake = self.lake.clone();
        Some(ListingUnderWay(tokio::spawn(async move {
            let Ok(Some(list)) = lake.pack_list().await else {
                return Ok(Vec::new());
            };
            let mut names = crate::lake_packs::parse_list(&list.bytes).unwrap_or_default();
            names.sort();
            names.dedup();
            let records = futures::stream::iter(names)
                .map(|name| {
                    let lake = lake.clone();
                    async move {
                        let raw = lake.pack_record(&name).await.ok()??;
                        crate::lake_packs::parse_record(&name, &raw).ok()
                    }
                })
                .buffer_unordered(RECORDS_IN_FLIGHT)
                .collect::<Vec<_>>()
                .await;
            let mut ids: Vec<VersionId> = records
                .into_iter()
                .flatten()
                .flat_map(|r| r.versions.into_iter().map(|v| v.id))
                .collect();
            ids.sort();
            ids.dedup();
            Ok(ids.into_iter().map(|v| (v, None)).collect())
        })))
    }

    /// Where nothing is known of the lake (a clone, a first `ls-remote`) and it is read from a
    /// store that lists (or whose packs the user trusts), the list of packs is read while the
    /// ref files are. Outside any repository, the packs are checked in a scratch repository
    /// of the user's cache, which keeps the commits they gave.
    pub(super) fn pack_list_early(&self, for_push: bool) -> Option<PacksUnderWay> {
        let lake = &self.lake;
        let knows_nothing = self.knows_nothing();
        let checkable = lake.can_list() || self.trust_packs;
        let readable = checkable && !lake.is_local() && self.require_signatures.is_none();
        let somewhere = self.repo.is_some() || self.cache.is_some();
        if for_push || !knows_nothing || !readable || !somewhere || !self.packs_allowed {
            return None;
        }
        let lake = self.lake.clone();
        let tags = Arc::new(EarlyTags::default());
        let wanted = tags.clone();
        let list = tokio::spawn(async move {
            let list = lake.pack_list().await;
            if let Ok(Some(l)) = &list {
                let names = crate::lake_packs::parse_list(&l.bytes);
                if names.is_ok_and(|n| !n.is_empty()) {
                    wanted.wanted.store(true, Ordering::Release);
                }
            }
            list
        });
        Some(PacksUnderWay { list, tags })
    }

    /// Takes from the lake's packs the versions they hold that check out: installed in the
    /// repository and remembered as known, so that the walk reads only the others. A pack that
    /// cannot be used is said once, and changes nothing. The early `listing` is waited for
    /// while the packs download (its ETags are the check's), and handed back done.
    pub(super) async fn use_packs(
        &mut self,
        mut packs: PacksUnderWay,
        listing: &mut Option<ListingUnderWay>,
        tips: &[(VersionId, String)],
        progress: &dyn Progress,
    ) {
        let list = match (&mut packs.list).await {
            Ok(Ok(Some(list))) => list,
            Ok(Ok(None)) | Err(_) => return,
            Ok(Err(e)) => {
                let name = self.lake.name();
                return self.lake_warn(format!(
                    "lake '{name}': cannot read git-packs/list.json ({e}); versions are read one by one"
                ));
            }
        };
        let Some(cache) = self.cache.as_ref() else {
            return;
        };
        // Outside any repository, the packs are checked in a repository of the helper's own,
        // removed once their commits are in the cache.
        let scratch;
        let repo = match self.repo.as_ref() {
            Some(repo) => repo,
            None => match cache.made_dir().map(|d| ScratchRepo::make(&d)) {
                Some(Ok(made)) => {
                    scratch = made;
                    scratch.repo()
                }
                Some(Err(e)) => {
                    let name = self.lake.name();
                    return self.lake_warn(format!(
                        "lake '{name}': cannot check its packs: {e}; versions are read one by one"
                    ));
                }
                None => return,
            },
        };
        // The listing is waited for while the packs download.
        let tags = packs.tags.clone();
        let listed = async move {
            let mut under_way = listing.take()?;
            let done = (&mut under_way.0).await.ok()?;
            *listing = Some(ListingUnderWay(tokio::spawn(async move { done })));
            tags.found.lock().expect("tags lock").take()
        };
        let trust = match self.lake.can_list() {
            true => Trust::Listed(Box::pin(listed)),
            false => Trust::Trusted,
        };
        let newest = tips.iter().map(|(v, _)| v).max();
        let known = |v: &VersionId| cache.known_commit(v);
        let imported = import(
            &self.lake,
            repo,
            &list.bytes,
            trust,
            newest,
            &known,
            progress,
        )
        .await;
        for w in imported.warnings {
            self.lake_warn(w);
        }
        // The objects they hold are looked up next (the tips vouched for): by a handle that
        // sees the packs installed since the session's was opened.
        if let Some(Ok(fresh)) = self
            .repo
            .as_ref()
            .map(|r| crate::repo::Repo::open(r.git_dir()))
        {
            self.repo = Some(fresh);
        }
        if let Some(cache) = self.cache.as_mut() {
            let taken = imported.verified.into_iter();
            cache.extend(taken.map(|t| (t.version, t.commit, t.parents)));
        }
    }
}
