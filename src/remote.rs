//! One lake as a Git remote: what `list` shows and what `fetch` writes, on top of the lake
//! reader, the mapping, the cache and the local repository.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};

use std::sync::Arc;

use crate::cache::{Cache, Preload};
use crate::history::{self, Built, Known, Reading, Summary};
use crate::lake::{Lake, LakeError, VersionId};
use crate::mapping::ObjectId;
use crate::pack::PackSink;
use crate::progress::Progress;
use crate::repo::{Repo, RepoError};
use crate::signatures::{Policy, Verdict};
use crate::store::{StoreError, Token, Versioned};
use crate::vouch::{objects_in, rewritten, Kept, Objects, Seen, Vetted};

#[derive(Debug, thiserror::Error)]
pub enum RemoteError {
    #[error(transparent)]
    Lake(#[from] LakeError),
    #[error(transparent)]
    Repo(#[from] RepoError),
    #[error(
        "lake '{lake}': Git asked for {}, which no ref of the lake holds",
        asked_for(oid, name)
    )]
    UnknownWant {
        lake: String,
        oid: String,
        name: String,
    },
    #[error("lake '{lake}': version {version} is not signed by a trusted key: {verdict}{more}")]
    Unsigned {
        lake: String,
        version: VersionId,
        verdict: Box<Verdict>,
        more: String,
    },
    #[error("lake '{lake}': version {version} was rewritten in the lake: it was commit {cached} when this repository read it, and would now be commit {computed}")]
    CacheMismatch {
        lake: String,
        version: VersionId,
        computed: ObjectId,
        cached: ObjectId,
        cache: String,
    },
}

/// `<oid> (<ref>)`, or the ID alone when Git asked for it by ID (`git fetch <lake> <id>`).
fn asked_for(oid: &str, name: &str) -> String {
    if name == oid {
        oid.to_string()
    } else {
        format!("{oid} ({name})")
    }
}

impl RemoteError {
    pub fn hint(&self) -> Option<String> {
        match self {
            RemoteError::Lake(e) => e.hint().map(str::to_string),
            RemoteError::Repo(RepoError::Sha256(_)) => {
                Some("clone the lake into a SHA-1 repository (the default)".to_string())
            }
            RemoteError::Unsigned { .. } => Some(
                "nothing was fetched; see every version's status with: git-remote-fdl verify <lake>".to_string(),
            ),
            RemoteError::CacheMismatch { cache, .. } => Some(format!(
                "versions are never rewritten: nothing was fetched; check the lake with \
                 'git-remote-fdl fsck <remote>' and ask its owner.\nTo accept the lake as it is \
                 now, remove {cache} and fetch again"
            )),
            _ => None,
        }
    }
}

/// What `list` found: refs, HEAD, and every version's commit it had to compute.
#[derive(Default)]
pub struct Listing {
    pub head: Option<String>,
    pub refs: Vec<(String, VersionId)>,
    pub commits: HashMap<VersionId, ObjectId>,
    built: HashMap<VersionId, Built>,
    /// Every version the refs reach, parents first, when `list` built them all (nothing was
    /// known before it): a fetch of every ref into an empty repository needs no walk.
    whole_history: Option<Vec<VersionId>>,
    /// For `list for-push`: each ref file's version token, for writes on condition, in the
    /// order of `refs` (sorted by name then).
    tokens: Vec<Token>,
    /// For `list for-push`: `refs.json` as read with the refs (`Some(None)`: there was none).
    pub refs_json: Option<Option<Versioned>>,
    /// `refs.json` was read before the refs were listed, rather than beside them.
    pub refs_json_first: bool,
    /// Made by `list for-push`: with the tokens and `refs.json` a push writes on condition.
    pub for_push: bool,
}

impl Listing {
    /// The version token of the ref file `name`, as a push's listing found it.
    pub fn token(&self, name: &str) -> Option<&Token> {
        let at = self
            .refs
            .binary_search_by(|(n, _)| n.as_str().cmp(name))
            .ok()?;
        self.tokens.get(at)
    }

    /// Each ref file as a push's listing found it, by name: its ETag and version (files listed
    /// without an ETag are left out).
    pub fn ref_files_seen(&self) -> HashMap<String, (String, VersionId)> {
        let with_tags = self
            .refs
            .iter()
            .zip(&self.tokens)
            .filter_map(|((n, v), t)| {
                let tag = t.e_tag.clone()?;
                Some((n.clone(), (tag, v.clone())))
            });
        with_tags.collect()
    }

    /// Every version `tips` reach, parents first, when `list` built them all and the tips are
    /// every ref's version (as a clone asks).
    fn whole_history_for(&self, tips: &[(VersionId, String)]) -> Option<&[VersionId]> {
        let whole = self.whole_history.as_ref()?;
        let wanted: HashSet<&VersionId> = tips.iter().map(|(v, _)| v).collect();
        let listed: HashSet<&VersionId> = self.refs.iter().map(|(_, v)| v).collect();
        (wanted == listed).then_some(&whole[..])
    }

    /// The branch HEAD names, when that branch exists: a HEAD naming a missing branch is left
    /// out, as Git's own servers do.
    pub fn listed_head(&self) -> Option<&str> {
        self.head
            .as_deref()
            .filter(|h| self.refs.iter().any(|(n, _)| n == h))
    }

    /// The version a listed commit stands for.
    pub fn version_of(&self, oid: &ObjectId) -> Option<&VersionId> {
        self.refs
            .iter()
            .map(|(_, v)| v)
            .find(|v| self.commits.get(*v) == Some(oid))
            // Git may ask for any commit it saw (`git fetch <lake> <commit>`), not only tips.
            .or_else(|| self.commits.iter().find(|(_, c)| *c == oid).map(|(v, _)| v))
    }
}

/// A commit Git asks for, and the ref it asked for it under.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Want {
    pub oid: String,
    pub name: String,
}

/// A lake opened as a remote of (maybe) a local repository.
pub struct Remote {
    pub lake: Lake,
    pub repo: Option<Repo>,
    cache: Option<Cache>,
    /// The cache's commits file, being read while the first round trip is under way.
    preload: Option<Preload>,
    warnings: std::sync::Mutex<Vec<String>>,
    /// When set, a fetch brings only versions signed by a trusted key.
    pub require_signatures: Option<Policy>,
    /// The pack this session's reads write objects into, installed by `fetch`.
    sink: Option<Arc<PackSink>>,
}

/// A cache being saved on a blocking thread ([`Remote::remember_written_refs`]).
pub struct Saving(Option<tokio::task::JoinHandle<Cache>>);

impl Saving {
    /// The cache, once saved (`None` if none was lent).
    pub async fn done(self) -> Option<Cache> {
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
    pub fn end(&mut self) {
        let writer = self.sink.take().and_then(|s| s.take());
        if let (Some(w), Some(repo), Some(cache)) = (writer, &self.repo, &self.cache) {
            let _ = repo.keep_pack(w, &cache.kept_packs_dir());
        }
    }
}

/// HEAD, the refs, their tokens (for a push, in the order of the refs, sorted by name then),
/// and `refs.json` (for a push) with whether it was read before the refs.
type ReadRefs = (
    String,
    Vec<(String, VersionId)>,
    Vec<Token>,
    (Option<Option<Versioned>>, bool),
);

/// Versions a fetch built, with their commits.
type Computed = HashMap<VersionId, (ObjectId, Built)>;

/// What a fetch wrote.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct FetchOutcome {
    pub versions: usize,
    pub objects: usize,
    /// Every object the wanted commits reach was written now (nothing was already there), so
    /// the repository is connected by construction.
    pub self_contained: bool,
    /// The `.keep` file that holds the self-contained pack for Git (`lock_pack`), which Git
    /// removes once its refs are updated.
    pub lock: Option<std::path::PathBuf>,
}

impl Remote {
    pub fn new(lake: Lake, repo: Option<Repo>) -> Remote {
        Remote::with_cache(lake, repo, None, None)
    }

    /// A remote with the lake's cache `opened` already, its commits file maybe being read by
    /// `preload` (the whole cache is loaded here when `None`).
    pub fn with_cache(
        lake: Lake,
        repo: Option<Repo>,
        opened: Option<Cache>,
        preload: Option<Preload>,
    ) -> Remote {
        // Outside a repository, the user's cache: a second `git ls-remote` of a lake reads only
        // the refs and what is new.
        let (url, id) = (lake.name(), lake.config.id.clone());
        let root = crate::cache::root_for(repo.as_ref().map(|r| r.git_dir()));
        let cache =
            opened.or_else(|| root.map(|root| Cache::load_under(&root, &url, id.as_deref())));
        let remote = Remote {
            lake,
            repo,
            cache,
            preload,
            warnings: Default::default(),
            require_signatures: None,
            sink: None,
        };
        remote.warn_if_damaged();
        remote
    }

    fn warn_if_damaged(&self) {
        if let Some(c) = self.cache.as_ref().filter(|c| c.damaged > 0) {
            self.lake_warn(format!(
                "the commit cache {} had {} damaged entr{}: not trusted, computed again from the lake",
                c.path().display(),
                c.damaged,
                if c.damaged == 1 { "y" } else { "ies" }
            ));
        }
    }

    /// Reads the cache's commits file, if it was not read yet (taking what the preload read).
    async fn load_cache(&mut self) {
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
    fn reading(&mut self, into_pack: bool) -> Result<Reading, RemoteError> {
        if into_pack && self.sink.is_none() {
            if let Some(repo) = &self.repo {
                let notes = repo.remove_killed_fetch_temporaries();
                self.sink = Some(Arc::new(PackSink::new(repo.pack_writer()?)));
                for note in notes {
                    self.lake_warn(note);
                }
            }
        }
        let check = self.require_signatures.clone().map(Arc::new);
        Ok(Reading::new(self.lake.clone())
            .with_sink(self.sink.clone().filter(|_| into_pack))
            .with_check(check))
    }

    /// Reads HEAD and the refs, and computes the commit of every ref.
    pub async fn list(&mut self, progress: &dyn Progress) -> Result<Listing, RemoteError> {
        self.list_with(progress, false).await
    }

    /// `list for-push`: also the ref files' tokens, and `refs.json` (read beside the refs, or
    /// before them: a later rewrite of `refs.json` is conditional on it).
    pub async fn list_for_push(&mut self, progress: &dyn Progress) -> Result<Listing, RemoteError> {
        self.list_with(progress, true).await
    }

    /// Computes the commit of `version` (reading it and any ancestors not known yet).
    pub async fn commit_of(
        &mut self,
        version: &VersionId,
        named_by: &str,
    ) -> Result<ObjectId, RemoteError> {
        let objects = objects_in(self.repo.as_ref(), self.cache.as_ref());
        let tip = self
            .cache
            .as_ref()
            .and_then(|c| c.tips.get(version).copied());
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
        // The cache is lent to the walk (not copied), and put back whatever happens.
        let cache = self.cache.take();
        let (empty, no_parents) = (HashMap::new(), HashMap::new());
        let known = cache.as_ref().map_or(&empty, |c| &c.entries);
        let parents = cache.as_ref().map_or(&no_parents, |c| &c.parents);
        let objects = objects_in(self.repo.as_ref(), cache.as_ref());
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
        self.cache = cache;
        let resolved = resolved?;
        self.remember(&resolved.commits, &resolved.built);
        Ok(resolved.commits[version])
    }

    /// Adds versions read to the cache, and saves it.
    fn remember(
        &mut self,
        commits: &HashMap<VersionId, ObjectId>,
        built: &HashMap<VersionId, Built>,
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
                    .filter_map(|(v, b)| Some((v.clone(), *commits.get(v)?, b.parents.clone()))),
            );
            cache.save();
        }
    }

    /// Remembers ref files this process wrote (`name`, ETag, version), so that a listing that
    /// finds them unchanged need not read them back. The cache is lent to a blocking thread
    /// that saves it while the push's last round trip is under way; [`Remote::take_back`]
    /// takes it back.
    pub fn remember_written_refs(&mut self, written: Vec<(String, String, VersionId)>) -> Saving {
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
    pub fn take_back(&mut self, saved: Option<Cache>) {
        if saved.is_some() {
            self.cache = saved;
        }
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
        let (head, refs) = if for_push && !self.lake.store.etag_conditions() {
            let (head, refs) = futures::join!(self.lake.head(), self.lake.refs_versioned());
            (head?, refs?)
        } else {
            // Ref files whose ETag has not changed since the last listing are not read again
            // (for a push, the listing's ETag is the token its writes are conditional on).
            let empty = HashMap::new();
            let seen = self.cache.as_ref().map_or(&empty, |c| &c.refs);
            let (head, refs) = futures::join!(self.lake.head(), self.lake.refs_remembered(seen));
            let (refs, remember) = refs?;
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
        Ok((head, refs, tokens, (refs_json, refs_json_first)))
    }

    async fn list_with(
        &mut self,
        progress: &dyn Progress,
        for_push: bool,
    ) -> Result<Listing, RemoteError> {
        let listing = self.list_everything_early(for_push);
        let (head, refs, tokens, (refs_json, refs_json_first)) = self.read_refs(for_push).await?;
        if !refs.iter().any(|(n, _)| *n == head) && !refs.is_empty() {
            self.lake_warn(format!(
                "lake '{}': HEAD names {head}, which does not exist",
                self.lake.name()
            ));
        }
        // A push's listing writes no objects: no fetch follows it.
        let reading = self.reading(!for_push)?;
        // Tips known from the file of refs (a push's listing, a no-op fetch): nothing to read
        // or build, and the commits file (O(history)) is not read.
        if let Some(commits) = self.known_tips(&refs) {
            drop(listing);
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
            });
        }
        let tips: Vec<(VersionId, String)> = refs
            .iter()
            .map(|(n, v)| (v.clone(), format!("ref {n}")))
            .collect();
        let (resolved, tips_known, nothing_known) = self
            .resolve_tips(&reading, &tips, progress, listing)
            .await?;
        // The map of every version read, grown by a few tips rather than copied.
        let mut commits = resolved.commits;
        commits.extend(tips_known);
        if let Some(cache) = &mut self.cache {
            let tip_commits = tips
                .iter()
                .filter_map(|(v, _)| Some((v.clone(), *commits.get(v)?)));
            cache.set_tips(tip_commits.collect());
        }
        self.remember(&commits, &resolved.built);
        Ok(Listing {
            head: Some(head),
            refs,
            commits,
            whole_history: (nothing_known && !for_push).then_some(resolved.order),
            built: if for_push {
                HashMap::new()
            } else {
                resolved.built
            },
            tokens,
            refs_json,
            refs_json_first,
            for_push,
        })
    }

    /// Reads and builds what the tips reach that the cache does not vouch for ([`crate::vouch`]):
    /// what was built, the tips' commits the cache gave, and whether it knew nothing.
    async fn resolve_tips(
        &mut self,
        reading: &Reading,
        tips: &[(VersionId, String)],
        progress: &dyn Progress,
        listing: Option<history::ListingUnderWay>,
    ) -> Result<(history::Resolved, Vec<(VersionId, ObjectId)>, bool), RemoteError> {
        self.load_cache().await;
        let cache = self.cache.take();
        let (empty, no_parents) = (HashMap::new(), HashMap::new());
        let known = cache.as_ref().map_or(&empty, |c| &c.entries);
        let parents = cache.as_ref().map_or(&no_parents, |c| &c.parents);
        let nothing_known = known.is_empty();
        // What the cache remembers is checked as the walk meets it.
        let objects = objects_in(self.repo.as_ref(), cache.as_ref());
        let vetted = Vetted::new(known, parents, objects.as_ref());
        let resolved = history::resolve_listed(reading, tips, &vetted, progress, listing).await;
        let tips_known: Vec<(VersionId, ObjectId)> = tips
            .iter()
            .filter_map(|(v, _)| Some((v.clone(), vetted.commit(v)?)))
            .collect();
        let rewritten = resolved.as_ref().ok().and_then(|r| rewritten(r, &vetted));
        drop(vetted);
        drop(objects);
        self.cache = cache;
        let resolved = resolved?;
        if let Some((version, cached, computed)) = rewritten {
            return Err(self.cache_mismatch(version, cached, computed));
        }
        Ok((resolved, tips_known, nothing_known))
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
            let c = *cache.tips.get(v)?;
            match objects
                .as_ref()
                .map_or(Seen::Holds, |o| o.vouch(v, &c, None))
            {
                Seen::Holds => {}
                Seen::Contradicted => {
                    cache.tips.remove(v);
                    return None;
                }
                // Read again, and checked against the commits file.
                Seen::Absent => return None,
            }
            commits.insert(v.clone(), c);
        }
        if commits.len() != cache.tips.len() {
            cache.set_tips(commits.clone());
        }
        Some(commits)
    }

    /// Where nothing is known of the lake (a clone), every version will be listed: the
    /// listing starts now, while the ref files are read, split up to the newest version
    /// `refs.json` names (a guess; without one, it waits for the tips).
    fn list_everything_early(&self, for_push: bool) -> Option<history::ListingUnderWay> {
        let store = &self.lake.store;
        let knows_nothing = self
            .cache
            .as_ref()
            .is_none_or(|c| c.refs.is_empty() && c.tips.is_empty());
        if for_push || !knows_nothing || !store.can_list() || store.is_local() {
            return None;
        }
        let newest = self.lake.newest_in_refs_json()?;
        let lake = self.lake.clone();
        Some(history::ListingUnderWay(tokio::spawn(async move {
            lake.list_versions(None, Some(&newest)).await
        })))
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

    /// A version that maps to another commit than the one this repository read.
    fn cache_mismatch(
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

    fn lake_warn(&self, msg: String) {
        self.warnings.lock().expect("warnings lock").push(msg);
    }

    /// Warnings gathered so far, for the caller to show on stderr.
    pub fn take_warnings(&self) -> Vec<String> {
        let mut w = self.lake.take_warnings();
        w.append(&mut self.warnings.lock().expect("warnings lock"));
        w
    }

    /// Writes into the local repository every object the wanted commits need and it lacks.
    /// With `lock_pack`, a pack that holds all they reach is kept by a `.keep` file for Git,
    /// which can then skip its own walk over the objects (`check-connectivity`).
    pub async fn fetch(
        &mut self,
        listing: &mut Listing,
        wants: &[Want],
        lock_pack: bool,
        progress: &dyn Progress,
    ) -> Result<FetchOutcome, RemoteError> {
        match &self.repo {
            Some(repo) => repo.check_sha1()?,
            None => return Ok(FetchOutcome::default()),
        }
        let reading = self.reading(true)?;
        self.load_cache().await;
        let cache = self.cache.take();
        let (kept, dropped) = Kept::read(cache.as_ref());
        for note in dropped {
            self.lake_warn(note);
        }
        let fetched = self
            .fetch_with(&reading, cache.as_ref(), &kept, listing, wants, progress)
            .await;
        self.cache = cache;
        let (outcome, computed) = fetched?;
        drop(reading);
        let writer = self.sink.take().and_then(|s| s.take());
        let repo = self.repo.as_ref().expect("checked above");
        // What an earlier `ls-remote` read is in the repository from now on.
        repo.install_kept(&kept.packs)?;
        let (n_objects, lock) = match writer {
            Some(w) if outcome.versions > 0 => {
                trace_step(&format!("fetch: completing a pack of {} objects", w.len()));
                repo.install_pack(w, lock_pack && outcome.self_contained)?
            }
            _ => (0, None),
        };
        trace_step("fetch: pack written");
        if n_objects > 0 {
            progress.finish("Writing objects", n_objects as u64, Some(n_objects as u64));
        }
        let commits = computed.iter().map(|(v, (c, _))| (v.clone(), *c)).collect();
        let built = computed.into_iter().map(|(v, (_, b))| (v, b)).collect();
        self.remember(&commits, &built);
        Ok(FetchOutcome {
            objects: n_objects,
            lock,
            ..outcome
        })
    }

    /// What a fetch reads and builds: the versions the wants need, into the session's pack.
    async fn fetch_with(
        &self,
        reading: &Reading,
        cache: Option<&Cache>,
        kept: &Kept,
        listing: &Listing,
        wants: &[Want],
        progress: &dyn Progress,
    ) -> Result<(FetchOutcome, Computed), RemoteError> {
        let repo = self.repo.as_ref().expect("a fetch has a repository");
        let (empty, no_parents) = (HashMap::new(), HashMap::new());
        let known = cache.map_or(&empty, |c| &c.entries);
        let tips = self.wanted_versions(listing, wants, known)?;
        // What the cache remembers is checked before a commit is made on it or the walk stops
        // at it ([`crate::vouch`]): in the repository, or in the packs kept for it.
        let objects = Objects::new(repo, &kept.packs);
        let parents = cache.map_or(&no_parents, |c| &c.parents);
        let vetted = Vetted::new(known, parents, Some(&objects));
        // A clone: what `list` built is what is needed, already in order.
        let (order, reached_existing, fresh) = match listing.whole_history_for(&tips) {
            Some(order) if repo.is_empty() && kept.packs.is_empty() => {
                (Cow::Borrowed(order), false, HashMap::new())
            }
            _ => {
                let (order, reached_existing, fresh) = self
                    .walk_for_fetch(reading, (cache, &vetted), kept, listing, &tips, progress)
                    .await?;
                (Cow::Owned(order), reached_existing, fresh)
            }
        };
        trace_step(&format!("fetch: {} versions need objects", order.len()));
        let computed = self.build_fresh(reading, &order, listing, fresh, &vetted)?;
        if self.require_signatures.is_some() {
            self.check_signatures(&order, listing, &computed)?;
        }
        let outcome = FetchOutcome {
            versions: order.len(),
            objects: 0,
            // Objects kept from an earlier session are not vouched for: Git checks them.
            self_contained: !reached_existing && kept.packs.is_empty(),
            lock: None,
        };
        Ok((outcome, computed))
    }

    /// The versions the wants need that the repository lacks, parents first, whether the walk
    /// met the repository's history, and those `list` did not build, read.
    async fn walk_for_fetch(
        &self,
        reading: &Reading,
        (cache, known): (Option<&Cache>, &dyn Known),
        kept: &Kept,
        listing: &Listing,
        tips: &[(VersionId, String)],
        progress: &dyn Progress,
    ) -> Result<(Vec<VersionId>, bool, HashMap<VersionId, Summary>), RemoteError> {
        let repo = self.repo.as_ref().expect("a fetch has a repository");
        let no_parents = HashMap::new();
        let cached_parents = cache.map_or(&no_parents, |c| &c.parents);
        let commit_of = |v: &VersionId| listing.commits.get(v).copied().or_else(|| known.commit(v));
        // Walk down from the wants, stopping at commits the repository already has; parents
        // known from `list` or the cache are walked through without a request.
        let empty = repo.is_empty();
        let in_repo = |v: &VersionId| {
            commit_of(v).is_some_and(|c| kept.ids.contains(&c) || (!empty && repo.has(&c)))
        };
        let walked = |v: &VersionId| -> Option<&[VersionId]> {
            match listing.built.get(v) {
                Some(b) => Some(&b.parents),
                None => cached_parents.get(v).map(|p| &p[..]),
            }
        };
        let walk = history::Walk {
            reading,
            stop: &in_repo,
            walked: &walked,
            newest_known: known.newest(),
            progress,
        };
        let mut read = walk.read(tips).await?;
        let parents_of = |v: &VersionId| -> &[VersionId] {
            match (walked(v), read.data.get(v)) {
                (Some(p), _) => p,
                (None, Some(Ok(d))) => &d.parents,
                _ => &[],
            }
        };
        let (order, reached_existing) = needed_in_order(tips, &in_repo, parents_of);
        // Versions whose parents the cache knew were walked, not read: read them all now.
        let unread: Vec<VersionId> = order
            .iter()
            .filter(|v| !listing.built.contains_key(*v) && !read.data.contains_key(*v))
            .cloned()
            .collect();
        let mut unread = history::read_versions(reading, unread, progress).await?;
        let mut fresh = HashMap::new();
        for v in order.iter().filter(|v| !listing.built.contains_key(*v)) {
            let d = match (read.data.remove(v), unread.remove(v)) {
                (Some(Ok(d)), _) | (None, Some(d)) => d,
                (Some(Err(e)), _) => return Err(e.into()),
                (None, None) => {
                    return Err(RemoteError::Lake(LakeError::MissingVersion {
                        lake: self.lake.name(),
                        version: v.clone(),
                        by: read.named_by.get(v).cloned().unwrap_or_default(),
                    }))
                }
            };
            fresh.insert(v.clone(), d);
        }
        Ok((order, reached_existing, fresh))
    }

    /// The version each wanted commit stands for.
    fn wanted_versions(
        &self,
        listing: &Listing,
        wants: &[Want],
        known: &HashMap<VersionId, ObjectId>,
    ) -> Result<Vec<(VersionId, String)>, RemoteError> {
        let mut by_commit: HashMap<ObjectId, &VersionId> = HashMap::new();
        let refs = listing.refs.iter().map(|(_, v)| v);
        let refs = refs.filter_map(|v| Some((*listing.commits.get(v)?, v)));
        // Git may ask for any commit it saw (`git fetch <lake> <commit>`), not only tips; every
        // commit known is mapped only then (a clone of 100,000 versions asks for its refs).
        let wanted = |by_commit: &HashMap<ObjectId, &VersionId>| {
            (wants.iter())
                .all(|w| ObjectId::from_hex(&w.oid).is_some_and(|o| by_commit.contains_key(&o)))
        };
        by_commit.extend(refs.clone());
        if !wanted(&by_commit) {
            by_commit.clear();
            for (v, c) in known.iter().chain(listing.commits.iter()) {
                by_commit.insert(*c, v);
            }
            by_commit.extend(refs);
        }
        let mut tips = Vec::with_capacity(wants.len());
        for w in wants {
            let v = ObjectId::from_hex(&w.oid).and_then(|o| by_commit.get(&o).copied());
            let Some(v) = v else {
                return Err(RemoteError::UnknownWant {
                    lake: self.lake.name(),
                    oid: w.oid.clone(),
                    name: w.name.clone(),
                });
            };
            tips.push((v.clone(), format!("ref {}", w.name)));
        }
        Ok(tips)
    }

    /// Makes the objects (into the session's pack) of the versions of `order` (parents first)
    /// that `list` did not build, each checked against the commit the listing or the cache
    /// expects. Returns their commits.
    fn build_fresh(
        &self,
        reading: &Reading,
        order: &[VersionId],
        listing: &Listing,
        mut fresh: HashMap<VersionId, Summary>,
        known: &Vetted,
    ) -> Result<HashMap<VersionId, (ObjectId, Built)>, RemoteError> {
        let mut computed: HashMap<VersionId, (ObjectId, Built)> = HashMap::new();
        if fresh.is_empty() {
            return Ok(computed);
        }
        reading.build_in_order(|in_order| {
            for v in order {
                let Some(d) = fresh.remove(v) else { continue };
                let mut parents = Vec::with_capacity(d.parents.len());
                for p in &d.parents {
                    let c = computed
                        .get(p)
                        .map(|(c, _)| c)
                        .or_else(|| listing.commits.get(p))
                        .copied()
                        .or_else(|| known.commit(p));
                    parents.push(c.ok_or_else(|| LakeError::MissingVersion {
                        lake: self.lake.name(),
                        version: p.clone(),
                        by: format!("version {v}"),
                    })?);
                }
                let (commit, built) = in_order.build(v, d, &parents)?;
                let expected = listing
                    .commits
                    .get(v)
                    .copied()
                    .or_else(|| known.expected(v));
                if let Some(expected) = expected.filter(|e| *e != commit) {
                    return Err(self.cache_mismatch(v.clone(), expected, commit));
                }
                computed.insert(v.clone(), (commit, built));
            }
            Ok(())
        })?;
        Ok(computed)
    }
}

/// The versions the tips reach that are not in the repository, parents first (among
/// themselves), without recursion; and whether the walk met any version already there.
fn needed_in_order<'a>(
    tips: &[(VersionId, String)],
    in_repo: &dyn Fn(&VersionId) -> bool,
    parents_of: impl Fn(&VersionId) -> &'a [VersionId],
) -> (Vec<VersionId>, bool) {
    let mut reached_existing = false;
    let mut done: HashSet<VersionId> = HashSet::new();
    let mut visiting: HashSet<VersionId> = HashSet::new();
    let mut out = Vec::new();
    for (tip, _) in tips {
        let mut stack = vec![(tip.clone(), false)];
        while let Some((v, expanded)) = stack.pop() {
            if done.contains(&v) {
                continue;
            }
            if expanded {
                done.insert(v.clone());
                out.push(v);
                continue;
            }
            if in_repo(&v) {
                reached_existing = true;
                continue;
            }
            if !visiting.insert(v.clone()) {
                continue; // a cycle: the commit check after building reports the damage
            }
            stack.push((v.clone(), true));
            for p in parents_of(&v) {
                if !done.contains(p) {
                    stack.push((p.clone(), false));
                }
            }
        }
    }
    (out, reached_existing)
}

fn trace_step(what: &str) {
    if crate::trace::enabled() {
        crate::trace::line(what);
    }
}

impl Remote {
    /// Fails unless every version in `versions` is signed by a trusted key (the verdicts were
    /// reached as the versions were read); reports the first failure (in history order) and a
    /// count.
    fn check_signatures(
        &self,
        versions: &[VersionId],
        listing: &Listing,
        computed: &HashMap<VersionId, (ObjectId, Built)>,
    ) -> Result<(), RemoteError> {
        let not_checked = Verdict::Unreadable("not checked (a bug in git-remote-fdl)".into());
        let mut failures = Vec::new();
        for v in versions {
            let built = listing.built.get(v).or(computed.get(v).map(|(_, b)| b));
            let verdict = built
                .and_then(|b| b.verdict.as_deref())
                .unwrap_or(&not_checked);
            if !verdict.is_good() {
                failures.push((v.clone(), verdict.clone()));
            }
        }
        let Some((version, verdict)) = failures.first().cloned() else {
            return Ok(());
        };
        let more = match failures.len() {
            1 => String::new(),
            n => format!(
                " (and {} more version{})",
                n - 1,
                if n == 2 { "" } else { "s" }
            ),
        };
        Err(RemoteError::Unsigned {
            lake: self.lake.name(),
            version,
            verdict: Box::new(verdict),
            more,
        })
    }
}
