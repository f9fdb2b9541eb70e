//! A lake opened as a remote: its cache (loaded, lent, saved), the session's pack, how
//! versions are read, and the warnings gathered on the way.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use super::error::RemoteError;
use super::pack_claims::{EarlyClaims, PackClaims};
use crate::cache::{Cache, Preload};
use crate::history::{BuiltVersion, Reading};
use crate::lake::{Lake, VersionId};
use crate::mapping::ObjectId;
use crate::reading::Times;
use crate::repo::Repo;
use crate::session_pack::PackSink;
use crate::signatures::Policy;

/// A lake opened as a remote of (maybe) a local repository.
pub(crate) struct Remote {
    pub(super) lake: Lake,
    pub(super) repo: Option<Repo>,
    pub(super) cache: Option<Cache>,
    /// The cache's commits file, being read while the first round trip is under way.
    preload: Option<Preload>,
    /// When set, a fetch brings only versions signed by a trusted key.
    pub(super) require_signatures: Option<Policy>,
    /// The pack this session's reads write objects into, installed by `fetch`.
    pub(super) sink: Option<Arc<PackSink>>,
    /// The user trusts the lake's packs where nothing can check them (`fdlTrustPacks`).
    pub(super) trust_packs: bool,
    /// The lake's packs may be read at all (`fdlUsePacks`, on unless turned off).
    pub(super) packs_allowed: bool,
    /// The lake's packs this session installed into the repository and took versions from,
    /// with the commits taken, where every parent of one was taken too (a closed history).
    pub(super) installed_packs: Vec<String>,
    pub(super) taken_closed: HashSet<ObjectId>,
    /// A shallow fetch follows: the listing reads no lake's packs and writes no objects.
    pub(super) shallow_listing: bool,
    /// Where readings leave each version's commit time (for `--shallow-since`).
    pub(super) times: Option<Times>,
    /// What the lake's packs claimed for a shallow fetch's listing, for its boundary.
    pub(super) pack_claims: Option<PackClaims>,
    /// A shallow listing looked at the claims (its records' index may then be read).
    pub(super) claims_tried: bool,
    /// A listing no fetch can follow (outside any repository) takes the refs' commits from the
    /// packs' claims first, as a shallow fetch's listing does ([`Remote::note_listing_only`]).
    pub(super) claims_first: bool,
    /// The packs' claims indexes, being read while the refs are (for a listing on claims).
    pub(super) claims_under_way: Option<tokio::task::JoinHandle<EarlyClaims>>,
    /// Commits this session's shallow fetches installed (Git's tag backfill fetches again).
    pub(super) shallow_fetched: HashSet<ObjectId>,
}

/// A cache being saved on a blocking thread ([`Remote::remember_written_refs`]).
pub(crate) struct Saving(Option<tokio::task::JoinHandle<Cache>>);

impl Saving {
    /// The cache, once saved (`None` if none was lent).
    pub(crate) async fn done(self) -> Option<Cache> {
        self.0?.await.ok()
    }
}

impl Drop for Remote {
    fn drop(&mut self) {
        self.end();
    }
}

impl Remote {
    /// Keeps the objects read for a listing that no fetch took, for the next fetch. Done when
    /// the remote is dropped, or before a cloud session ends without dropping it: whatever
    /// must happen when a remote goes away belongs here, not in `drop`.
    pub(crate) fn end(&mut self) {
        let writer = self.sink.take().and_then(|s| s.take());
        if let (Some(w), Some(_), Some(cache)) = (writer, &self.repo, &self.cache) {
            match cache.made_kept_packs_dir() {
                Some(dir) => {
                    let _ = crate::kept_packs::keep(w, &dir);
                }
                // Its repository is gone (a clone Git gave up): the unfinished pack goes.
                None => drop(w),
            }
        }
    }
}

impl Remote {
    pub(crate) fn new(lake: Lake, repo: Option<Repo>) -> Remote {
        Remote::with_cache(lake, repo, None, None)
    }

    /// The lake this remote reads and writes.
    pub(crate) fn lake(&self) -> &Lake {
        &self.lake
    }

    /// The local repository, if the remote has one.
    pub(crate) fn repo(&self) -> Option<&Repo> {
        self.repo.as_ref()
    }

    /// Makes a fetch bring only versions signed by a key `policy` trusts (none: any version).
    pub(crate) fn require_signatures(&mut self, policy: Option<Policy>) {
        self.require_signatures = policy;
    }

    /// Whether the cache knows nothing of the lake (no ref files, no tips): a clone, or a
    /// first fetch.
    pub(super) fn knows_nothing(&self) -> bool {
        self.cache
            .as_ref()
            .is_none_or(|c| c.ref_files().is_empty() && c.tips().is_empty())
    }

    /// Takes the lake's packs on a store that cannot list (plain HTTP), where only their
    /// commits can be checked, not that their blobs are still the lake's files.
    pub(crate) fn trust_packs(&mut self, trusted: bool) {
        self.trust_packs = trusted;
    }

    /// Reads the lake's packs where they help (`true`, the default), or never (`fdlUsePacks`
    /// off: every version read from its files).
    pub(crate) fn allow_packs(&mut self, allowed: bool) {
        self.packs_allowed = allowed;
    }

    /// Makes the next listing one for a shallow fetch: it computes commit IDs only (the fetch
    /// builds what it keeps), and with `times` keeps each version's commit time.
    pub(crate) fn prepare_shallow(&mut self, times: bool) {
        self.shallow_listing = true;
        if times && self.times.is_none() {
            self.times = Some(Times::default());
        }
    }

    /// A listing for a fetch into a shallow repository is one for a shallow fetch: no objects
    /// from below its boundary.
    fn note_shallow_repo(&mut self, for_push: bool) {
        let repo = self.repo.as_ref();
        if !for_push && repo.is_some_and(|r| crate::repo::shallow::exists(r.git_dir())) {
            self.shallow_listing = true;
        }
    }

    /// What may follow the next listing, which decides how it is read: a shallow fetch, or
    /// nothing at all.
    pub(super) fn note_what_follows(&mut self, for_push: bool) {
        self.note_shallow_repo(for_push);
        self.note_listing_only(for_push);
        self.open_claims_early();
    }

    /// Outside any repository a listing is all there is (`git ls-remote`, `git-remote-fdl ls`):
    /// where nothing remembered names the commits, it takes the refs' commits from the lake's
    /// packs' claims, as a shallow clone's listing does, rather than downloading and checking
    /// every pack (at 1,000,000 versions, 1.5 GB). Not where signatures are required: every
    /// version a listing names is then read and checked.
    fn note_listing_only(&mut self, for_push: bool) {
        let remembered = self.cache.as_ref().is_some_and(Cache::remembers_commits);
        self.claims_first = !for_push
            && self.repo.is_none()
            && self.packs_allowed
            && self.require_signatures.is_none()
            && !self.lake.is_local()
            && !remembered;
    }

    /// Whether the next fetch must be a shallow one ([`Remote::fetch_shallow`]), Git having
    /// asked for no limit: the repository is shallow.
    pub(crate) fn fetches_shallow(&self) -> bool {
        self.shallow_listing
    }

    /// A remote with the lake's cache `opened` already, its commits file maybe being read by
    /// `preload` (the whole cache is loaded here when `None`).
    pub(crate) fn with_cache(
        lake: Lake,
        repo: Option<Repo>,
        opened: Option<Cache>,
        preload: Option<Preload>,
    ) -> Remote {
        // Outside a repository, the user's cache: a second `git ls-remote` of a lake reads only
        // the refs and what is new.
        let (url, id) = (lake.name(), lake.config().id.clone());
        let root = crate::cache::root_for(repo.as_ref().map(|r| r.git_dir()));
        let git_dir = repo.as_ref().map(|r| r.git_dir());
        let cache = opened.or_else(|| {
            root.map(|root| Cache::load_under(&root, &url, id.as_deref()).inside(git_dir))
        });
        let remote = Remote {
            lake,
            repo,
            cache,
            preload,
            require_signatures: None,
            sink: None,
            trust_packs: false,
            packs_allowed: true,
            installed_packs: Vec::new(),
            taken_closed: HashSet::new(),
            shallow_listing: false,
            times: None,
            pack_claims: None,
            claims_tried: false,
            claims_first: false,
            claims_under_way: None,
            shallow_fetched: HashSet::new(),
        };
        remote.warn_if_damaged();
        remote
    }

    fn warn_if_damaged(&self) {
        if let Some(c) = self.cache.as_ref().filter(|c| c.damaged() > 0) {
            self.lake_warn(format!(
                "the commit cache {} had {} damaged entr{}: not trusted, computed again from the lake",
                c.path().display(),
                c.damaged(),
                if c.damaged() == 1 { "y" } else { "ies" }
            ));
        }
    }

    /// Reads the cache's commits file, if it was not read yet (taking what the preload read).
    pub(super) async fn load_cache(&mut self) {
        let Some(cache) = self.cache.as_mut().filter(|c| !c.is_loaded()) else {
            return;
        };
        match self.preload.take() {
            Some(preload) => match preload.wait().await {
                Some(commits) => cache.take_commits(commits),
                None => cache.load_commits(),
            },
            None => cache.load_commits(),
        }
        self.warn_if_damaged();
    }

    /// How this remote reads versions: into the session's pack when `into_pack` (and there is
    /// a repository), checking signatures when the remote requires them.
    pub(super) fn reading(&mut self, into_pack: bool) -> Result<Reading, RemoteError> {
        if into_pack && self.sink.is_none() {
            if let Some(repo) = &self.repo {
                let notes = repo.remove_killed_fetch_temporaries();
                self.sink = Some(Arc::new(PackSink::new(crate::session_pack::writer_in(
                    repo,
                )?)));
                for note in notes {
                    self.lake_warn(note);
                }
            }
        }
        let check = self.require_signatures.clone().map(Arc::new);
        Ok(Reading::new(self.lake.clone())
            .with_sink(self.sink.clone().filter(|_| into_pack))
            .with_check(check)
            .with_times(self.times.clone()))
    }

    /// Adds versions read to the cache, and saves it.
    pub(super) fn remember(
        &mut self,
        commits: &HashMap<VersionId, ObjectId>,
        built: &HashMap<VersionId, BuiltVersion>,
    ) {
        if let Some(cache) = &mut self.cache {
            if built.is_empty() {
                cache.save();
                return;
            }
            cache.reserve(built.len());
            cache.extend(
                built
                    .iter()
                    .filter_map(|(v, b)| Some((v.clone(), *commits.get(v)?, b.parents.to_vec()))),
            );
            cache.save();
        }
    }

    /// Remembers ref files this process wrote (`name`, ETag, version), so that a listing that
    /// finds them unchanged need not read them back. The cache is lent to a blocking thread
    /// that saves it while the push's last round trip is under way; [`Remote::take_back`]
    /// takes it back.
    pub(crate) fn remember_written_refs(
        &mut self,
        written: Vec<(String, String, VersionId)>,
    ) -> Saving {
        let Some(mut cache) = self.cache.take_if(|_| !written.is_empty()) else {
            return Saving(None);
        };
        Saving(Some(tokio::task::spawn_blocking(move || {
            cache.remember_refs(written);
            cache.save();
            cache
        })))
    }

    /// The cache back from [`Remote::remember_written_refs`], once saved.
    pub(crate) fn take_back(&mut self, saved: Option<Cache>) {
        if saved.is_some() {
            self.cache = saved;
        }
    }

    /// A version that maps to another commit than the one this repository read.
    pub(super) fn cache_mismatch(
        &self,
        version: VersionId,
        cached: ObjectId,
        computed: ObjectId,
    ) -> RemoteError {
        let dir = self.repo.as_ref().map(|r| r.git_dir().join("fdl"));
        RemoteError::CacheMismatch {
            lake: self.lake.name(),
            version,
            computed,
            cached,
            cache: dir.unwrap_or_default().display().to_string(),
        }
    }

    /// A warning about the lake, gathered with the lake's own (one sink, in order).
    pub(super) fn lake_warn(&self, msg: String) {
        self.lake.warn(msg);
    }

    /// Warnings gathered so far, for the caller to show on stderr.
    pub(crate) fn take_warnings(&self) -> Vec<String> {
        self.lake.take_warnings()
    }
}
