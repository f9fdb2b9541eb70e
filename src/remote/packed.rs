//! The lake's own packs on a clone or a fetch ([`crate::lake_packs`]): `git-packs/list.json`
//! and the packs' records read beside the ref files, and the versions they hold taken once
//! checked, before the walk reads the others (on a fetch that knows the lake, only from packs
//! worth their download). The listing of every version a clone starts anyway keeps its ETags
//! for the check, so that `versions/` is listed once. Where the store cannot list (plain HTTP)
//! and the packs are not trusted, their records still name the versions to read: all at once,
//! each read and mapped as without packs, instead of a generation per round trip.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use super::fetch::Want;
use super::state::Remote;
use crate::history::ListingUnderWay;
use crate::lake::git_packs::{listed_files, VersionFileEtags};
use crate::lake::{listed_versions, Lake, VersionId};
use crate::lake_packs::download::has_in;
use crate::lake_packs::import::{import, read_records, Checks, ReadRecord, Taken, Trust};
use crate::lake_packs::verify::Signing;
use crate::mapping::ObjectId;
use crate::progress::Progress;
use crate::repo::ScratchRepo;
use crate::store::{Listed, StoreError};

/// `git-packs/list.json` being read, then the records of the packs it names, stopped if
/// dropped unneeded.
pub(super) struct PacksUnderWay {
    list: tokio::task::JoinHandle<Result<Option<EarlyPacks>, StoreError>>,
    tags: Arc<EarlyTags>,
    /// Whether the cache knew nothing of the lake (a clone): every pack is then taken.
    for_clone: bool,
}

/// What the early read found: the records of the packs not passed over, or why the list
/// names none that can be used.
enum EarlyPacks {
    Records(Vec<ReadRecord>),
    BadList(crate::lake_packs::FormatError),
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
    pub(super) fn keep(&self, parts: &mut [Listed]) {
        if self.wanted.load(Ordering::Acquire) {
            *self.found.lock() = Some(listed_files(parts));
        }
    }
}

/// The packs whose records a clone or fetch over plain HTTP read as the lake's index.
#[derive(Clone, Default)]
pub(super) struct IndexRecords(Arc<Mutex<Vec<String>>>);

/// A repository that knows part of the lake takes a pack only for this many versions it
/// lacks at least, and only where they are a quarter of the pack's at least: below that, the
/// download, `index-pack` and the listing cost more than reading the versions does.
const WORTH_A_PACK: usize = 32;

impl Remote {
    /// Where the store cannot list (plain HTTP), the versions the lake's pack records name, as
    /// a listing would give them: the walk reads at once those it lacks. Only their IDs are
    /// taken (each version is read and mapped as without packs, and a named version the lake
    /// lacks is passed over as a listed one in progress is); versions no record names (newer
    /// than the last `pack`) are found by the walk as before. A list or record that cannot be
    /// read names nothing. Where the lake is known (a fetch), only the records of packs no
    /// clone or fetch read before are read: a fetch after a long absence reads what was
    /// packed since at once, one of a few new versions reads only `git-packs/list.json` more.
    pub(super) fn versions_of_records(
        &self,
        for_push: bool,
    ) -> Option<(ListingUnderWay, IndexRecords)> {
        let lake = &self.lake;
        let index = !lake.can_list() && !lake.is_local() && !self.trust_packs;
        // A shallow listing reads the packs' claims first, and the records only without them.
        let claims_first = self.shallow_listing || self.claims_first;
        if for_push || !index || !self.packs_allowed || (claims_first && !self.claims_tried) {
            return None;
        }
        let read_before = match self.knows_nothing() {
            true => Default::default(),
            false => self.cache.as_ref()?.weighed_packs(),
        };
        let lake = self.lake.clone();
        let index = IndexRecords::default();
        let read = index.clone();
        let listing = ListingUnderWay(tokio::spawn(async move {
            let Ok(Some(list)) = lake.pack_list().await else {
                return Ok(Vec::new());
            };
            let names = crate::lake_packs::parse_list(&list.bytes).unwrap_or_default();
            let names: Vec<String> = names
                .into_iter()
                .filter(|n| !read_before.contains(n))
                .collect();
            let records = read_records(&lake, names).await;
            let mut ids = Vec::new();
            for (name, record) in records {
                let Ok(record) = record else { continue };
                read.0.lock().push(name);
                ids.extend(record.versions.into_iter().map(|v| v.id));
            }
            ids.sort();
            ids.dedup();
            Ok(ids.into_iter().map(|v| (v, None)).collect())
        }));
        Some((listing, index))
    }

    /// Remembers the records read as the lake's index ([`Remote::versions_of_records`]) once
    /// the walk that used them is done, so that no later fetch reads them again.
    pub(super) fn remember_index(&self, index: IndexRecords) {
        let names = std::mem::take(&mut *index.0.lock());
        if let (Some(cache), false) = (&self.cache, names.is_empty()) {
            cache.weigh_packs(names);
        }
    }

    /// Where the lake is read from a cloud store that lists, or where the user trusts its
    /// packs (plain HTTP, a local folder), the list of packs is read while the ref files are,
    /// then the records of the packs it names (where the lake is known, only of those the
    /// repository has not installed and no fetch weighed before). Outside any repository, the
    /// packs are checked in a scratch repository of the user's cache, which keeps the commits
    /// they gave.
    pub(super) fn pack_list_early(&self, for_push: bool) -> Option<PacksUnderWay> {
        let lake = &self.lake;
        let checkable = lake.lists_etags() || self.trust_packs;
        let cache = self.cache.as_ref()?;
        if for_push
            || !checkable
            || !self.packs_allowed
            || self.shallow_listing
            || self.claims_first
        {
            return None;
        }
        let for_clone = self.knows_nothing();
        // Passed over: packs the repository holds, and packs weighed before.
        let (installed_in, weighed) = match for_clone {
            true => (None, Default::default()),
            false => (
                self.repo.as_ref().map(|r| r.pack_dir()),
                cache.weighed_packs(),
            ),
        };
        let lake = self.lake.clone();
        let tags = Arc::new(EarlyTags::default());
        let wanted = tags.clone();
        let list = tokio::spawn(async move {
            let Some(list) = lake.pack_list().await? else {
                return Ok(None);
            };
            let names = match crate::lake_packs::parse_list(&list.bytes) {
                Ok(names) => names,
                Err(e) => return Ok(Some(EarlyPacks::BadList(e))),
            };
            let installed = |n: &String| installed_in.as_ref().is_some_and(|d| has_in(d, n));
            let names: Vec<String> = names
                .into_iter()
                .filter(|n| !weighed.contains(n) && !installed(n))
                .collect();
            if !names.is_empty() {
                wanted.wanted.store(true, Ordering::Release);
            }
            Ok(Some(EarlyPacks::Records(read_records(&lake, names).await)))
        });
        Some(PacksUnderWay {
            list,
            tags,
            for_clone,
        })
    }

    /// The records the early read gave of the packs to take: on a clone every pack, on a fetch
    /// that knows the lake those worth their download (the others weighed once for all).
    async fn records_to_take(&mut self, packs: &mut PacksUnderWay) -> Option<Vec<ReadRecord>> {
        let name = self.lake.name();
        let records = match (&mut packs.list).await {
            Ok(Ok(Some(EarlyPacks::Records(records)))) => records,
            Ok(Ok(None)) | Err(_) => return None,
            Ok(Ok(Some(EarlyPacks::BadList(e)))) => {
                self.lake_warn(format!("lake '{name}': {e}: its packs are not used"));
                return None;
            }
            Ok(Err(e)) => {
                self.lake_warn(format!(
                    "lake '{name}': cannot read git-packs/list.json ({e}); versions are read one by one"
                ));
                return None;
            }
        };
        let cache = self.cache.as_ref()?;
        let records = match packs.for_clone {
            true => records,
            false => {
                let (chosen, weighed) =
                    worth_their_download(records, |v| cache.known_commit(v).is_some());
                cache.weigh_packs(weighed);
                chosen
            }
        };
        Some(records).filter(|r| !r.is_empty())
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
        let Some(records) = self.records_to_take(&mut packs).await else {
            return;
        };
        let Some(cache) = self.cache.as_ref() else {
            return;
        };
        let name = self.lake.name();
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
            tags.found.lock().take()
        };
        let trust = match self.lake.lists_etags() {
            true => Trust::Listed(Box::pin(listed)),
            false => Trust::Trusted,
        };
        let newest = tips.iter().map(|(v, _)| v).max();
        let known = |v: &VersionId| cache.known_commit(v);
        let config = self.lake.config();
        let checks = Checks {
            known: &known,
            signatures: self.require_signatures.as_ref().map(|policy| Signing {
                policy,
                lake_signers: &config.signers,
            }),
        };
        let imported = import(&self.lake, repo, records, trust, newest, &checks, progress).await;
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
        self.hold_for_lock(imported.installed, &imported.verified);
        if let Some(cache) = self.cache.as_mut() {
            let taken = imported.verified.into_iter();
            cache.extend(taken.map(|t| (t.version, t.commit, t.parents)));
        }
    }

    /// Remembers for [`Remote::lock_installed_pack`] the packs an import installed and the
    /// commits it took, where every parent of a version taken was taken too; otherwise
    /// nothing. What an earlier import of this session left is replaced, never added to.
    fn hold_for_lock(&mut self, installed: Vec<String>, verified: &[Taken]) {
        let taken: HashSet<&VersionId> = verified.iter().map(|t| &t.version).collect();
        let closed = (verified.iter()).all(|t| t.parents.iter().all(|p| taken.contains(p)));
        (self.installed_packs, self.taken_closed) = match self.repo.is_some() && closed {
            true => (installed, verified.iter().map(|t| t.commit).collect()),
            false => Default::default(),
        };
    }

    /// Where a fetch wrote nothing (a clone that took every version from the lake's packs),
    /// the pack installed this session that holds every wanted commit, held by a `.keep` file
    /// for Git, which then skips its walk over the whole history (`check-connectivity`). Only
    /// if each wanted commit is one the session took, from a history closed under parents:
    /// each version taken was checked with its tree, blobs and parents, parents first.
    pub(super) fn lock_installed_pack(&self, wants: &[Want]) -> Option<PathBuf> {
        let repo = self.repo.as_ref()?;
        let wanted: Option<Vec<ObjectId>> =
            wants.iter().map(|w| ObjectId::from_hex(&w.oid)).collect();
        let wanted = wanted.filter(|w| w.iter().all(|c| self.taken_closed.contains(c)))?;
        let wanted: Vec<gix::ObjectId> = wanted.into_iter().map(gix::ObjectId::from).collect();
        let dir = repo.pack_dir();
        let holds_all = |name: &&String| {
            let idx = dir.join(format!("{name}.idx"));
            gix::odb::pack::index::File::at(&idx, gix::hash::Kind::Sha1)
                .is_ok_and(|index| wanted.iter().all(|oid| index.lookup(oid).is_some()))
        };
        let name = self.installed_packs.iter().find(holds_all)?;
        let keep = crate::session_pack::keep_path(&dir, name).ok()??;
        crate::session_pack::write_keep(&keep, false).ok()?;
        Some(keep)
    }

    /// Whether a fetch that read and mapped `versions` versions should suggest trusting the
    /// lake's packs (`fdlTrustPacks`): on a lake whose listing cannot check them (plain HTTP,
    /// a local folder), with packs neither trusted nor turned off, from
    /// [`SUGGEST_TRUST_AT`] versions on, where `git-packs/list.json` names a pack and
    /// `advice.fdlTrustPacks` is not false. Only then is the list read (one more read).
    pub(crate) async fn suggests_trusting_packs(&self, versions: usize) -> bool {
        let asked_not_to = |r: &crate::repo::Repo| {
            r.config_bool("advice.fdlTrustPacks")
                .is_ok_and(|b| b == Some(false))
        };
        if versions < crate::testhook::suggest_trusting_packs_at(SUGGEST_TRUST_AT)
            || self.trust_packs
            || !self.packs_allowed
            || self.lake.lists_etags()
            || self.repo.as_ref().is_none_or(asked_not_to)
        {
            return false;
        }
        let Ok(Some(list)) = self.lake.pack_list().await else {
            return false;
        };
        crate::lake_packs::parse_list(&list.bytes).is_ok_and(|names| !names.is_empty())
    }
}

/// From this many versions read one by one, a clone from a lake whose packs could not be
/// checked suggests trusting them: a folder lake of 100,000 versions took 7.3 s from a cold
/// disk, 2.1 s from its packs (DEVELOPMENT.md); below that either is quick.
const SUGGEST_TRUST_AT: usize = 100_000;

/// Splits the records read for a repository that knows part of the lake into the packs worth
/// their download (see [`WORTH_A_PACK`]; a record that cannot be used goes on, to be said) and
/// the names of the others, weighed once for all.
fn worth_their_download(
    records: Vec<ReadRecord>,
    known: impl Fn(&VersionId) -> bool,
) -> (Vec<ReadRecord>, Vec<String>) {
    let (mut chosen, mut weighed) = (Vec::new(), Vec::new());
    for (name, record) in records {
        let worth = match &record {
            Err(_) => true,
            Ok(r) => {
                let lacked = r.versions.iter().filter(|v| !known(&v.id)).count();
                lacked >= WORTH_A_PACK && lacked * 4 >= r.versions.len()
            }
        };
        match worth {
            true => chosen.push((name, record)),
            false => weighed.push(name),
        }
    }
    (chosen, weighed)
}

/// The listing of every version of `lake`, split up to `newest`, started now; the ETags it
/// shows kept for the lake's packs being read (`tags`).
pub(super) fn every_version(
    lake: Lake,
    newest: VersionId,
    tags: Option<Arc<EarlyTags>>,
) -> ListingUnderWay {
    ListingUnderWay(tokio::spawn(async move {
        let mut parts = lake.list_version_files(None, Some(&newest)).await?;
        if let Some(tags) = tags {
            tags.keep(&mut parts);
        }
        Ok(listed_versions(&parts, None))
    }))
}
