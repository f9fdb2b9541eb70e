//! `fetch`: the versions Git wants that the repository lacks, read and built into the
//! session's pack, checked (signatures, commits the repository read before), installed.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::convert::Infallible;

use super::error::RemoteError;
use super::listing::Listing;
use super::state::Remote;
use crate::cache::Cache;
use crate::graph::{parents_first, ParentsFirst};
use crate::history::{self, BuiltVersion, Known, Reading, Summary};
use crate::kept_packs::KeptPacks;
use crate::lake::{LakeError, VersionId};
use crate::mapping::ObjectId;
use crate::progress::Progress;
use crate::signatures::Verdict;
use crate::vouch::{LocalObjects, Vetted};

/// A commit Git asks for, and the ref it asked for it under.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Want {
    pub oid: String,
    pub name: String,
}

/// Versions a fetch built, with their commits.
type Computed = HashMap<VersionId, (ObjectId, BuiltVersion)>;

/// What a fetch wrote.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct FetchOutcome {
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
    /// Writes into the local repository every object the wanted commits need and it lacks.
    /// With `lock_pack`, a pack that holds all they reach is kept by a `.keep` file for Git,
    /// which can then skip its own walk over the objects (`check-connectivity`).
    pub(crate) async fn fetch(
        &mut self,
        listing: &mut Listing,
        wants: &[Want],
        lock_pack: bool,
        progress: &dyn Progress,
    ) -> Result<FetchOutcome, RemoteError> {
        let Some(repo) = &self.repo else {
            return Ok(FetchOutcome::default());
        };
        repo.check_sha1()?;
        let reading = self.reading(true)?;
        self.load_cache().await;
        let cache = self.cache.as_ref();
        let repo = self.repo.as_ref().expect("checked above");
        let (kept, dropped) = KeptPacks::read(repo, cache);
        for note in dropped {
            self.lake_warn(note);
        }
        let fetched = self
            .fetch_with(&reading, cache, &kept, listing, wants, progress)
            .await;
        let (outcome, computed) = fetched?;
        drop(reading);
        let writer = self.sink.take().and_then(|s| s.take());
        let repo = self.repo.as_ref().expect("checked above");
        // What an earlier `ls-remote` read is in the repository from now on.
        crate::kept_packs::install(repo, &kept.packs)?;
        let (n_objects, lock) = match writer {
            Some(w) if outcome.versions > 0 => {
                trace_step(&format!("fetch: completing a pack of {} objects", w.len()));
                crate::session_pack::install(repo, w, lock_pack && outcome.self_contained)?
            }
            // Nothing to write: the wants may all be in a lake's pack this session took.
            _ if lock_pack => (0, self.lock_installed_pack(wants)),
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
        kept: &KeptPacks,
        listing: &Listing,
        wants: &[Want],
        progress: &dyn Progress,
    ) -> Result<(FetchOutcome, Computed), RemoteError> {
        let repo = self.repo.as_ref().expect("a fetch has a repository");
        let (empty, no_parents) = (HashMap::new(), HashMap::new());
        let known = cache.map_or(&empty, |c| c.commits());
        let tips = self.wanted_versions(listing, wants, known)?;
        // What the cache remembers is checked before a commit is made on it or the walk stops
        // at it ([`crate::vouch`]): in the repository, or in the packs kept for it.
        let objects = LocalObjects::new(repo, &kept.packs);
        let parents = cache.map_or(&no_parents, |c| c.parents());
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
        kept: &KeptPacks,
        listing: &Listing,
        tips: &[(VersionId, String)],
        progress: &dyn Progress,
    ) -> Result<(Vec<VersionId>, bool, HashMap<VersionId, Summary>), RemoteError> {
        let repo = self.repo.as_ref().expect("a fetch has a repository");
        let no_parents = HashMap::new();
        let cached_parents = cache.map_or(&no_parents, |c| c.parents());
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
            .filter(|v| !listing.built.contains_key(*v) && !read.data.contains_key(v))
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
    pub(super) fn wanted_versions(
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
    pub(super) fn build_fresh(
        &self,
        reading: &Reading,
        order: &[VersionId],
        listing: &Listing,
        mut fresh: HashMap<VersionId, Summary>,
        known: &dyn Remembered,
    ) -> Result<HashMap<VersionId, (ObjectId, BuiltVersion)>, RemoteError> {
        let mut computed: HashMap<VersionId, (ObjectId, BuiltVersion)> = HashMap::new();
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

/// What a fetch takes from the cache for versions it does not build.
pub(super) trait Remembered {
    /// The commit a parent stands for.
    fn commit(&self, v: &VersionId) -> Option<ObjectId>;
    /// The commit `v` must map to when it is built.
    fn expected(&self, v: &VersionId) -> Option<ObjectId>;
}

impl Remembered for Vetted<'_> {
    fn commit(&self, v: &VersionId) -> Option<ObjectId> {
        Known::commit(self, v)
    }

    fn expected(&self, v: &VersionId) -> Option<ObjectId> {
        Vetted::expected(self, v)
    }
}

/// The versions the tips reach that are not in the repository, parents first (among
/// themselves), without recursion; and whether the walk met any version already there.
fn needed_in_order<'a>(
    tips: &[(VersionId, String)],
    in_repo: &dyn Fn(&VersionId) -> bool,
    parents_of: impl Fn(&VersionId) -> &'a [VersionId],
) -> (Vec<VersionId>, bool) {
    let mut needed = Needed {
        in_repo,
        parents_of,
        reached_existing: false,
        done: HashSet::new(),
        visiting: HashSet::new(),
        order: Vec::new(),
    };
    let Ok(()) = parents_first(tips.iter().map(|(v, _)| v.clone()), &mut needed);
    (needed.order, needed.reached_existing)
}

/// The walk of [`needed_in_order`].
struct Needed<'w, F> {
    in_repo: &'w dyn Fn(&VersionId) -> bool,
    parents_of: F,
    reached_existing: bool,
    done: HashSet<VersionId>,
    visiting: HashSet<VersionId>,
    order: Vec<VersionId>,
}

impl<'a, F: Fn(&VersionId) -> &'a [VersionId]> ParentsFirst for Needed<'_, F> {
    type Node = VersionId;
    type Error = Infallible;

    fn enter(&mut self, v: &VersionId) -> Result<Option<Vec<VersionId>>, Infallible> {
        if self.done.contains(v) {
            return Ok(None);
        }
        if (self.in_repo)(v) {
            self.reached_existing = true;
            return Ok(None);
        }
        if !self.visiting.insert(v.clone()) {
            return Ok(None); // a cycle: the commit check after building reports the damage
        }
        let parents = (self.parents_of)(v).iter().rev();
        Ok(Some(
            parents
                .filter(|p| !self.done.contains(*p))
                .cloned()
                .collect(),
        ))
    }

    fn leave(&mut self, v: VersionId) -> Result<(), Infallible> {
        if self.done.insert(v.clone()) {
            self.order.push(v);
        }
        Ok(())
    }
}

pub(super) fn trace_step(what: &str) {
    if crate::trace::enabled() {
        crate::trace::line(what);
    }
}

impl Remote {
    /// Fails unless every version in `versions` is signed by a trusted key (the verdicts were
    /// reached as the versions were read); reports the first failure (in history order) and a
    /// count.
    pub(super) fn check_signatures(
        &self,
        versions: &[VersionId],
        listing: &Listing,
        computed: &HashMap<VersionId, (ObjectId, BuiltVersion)>,
    ) -> Result<(), RemoteError> {
        let not_checked = Verdict::Unreadable("not checked (a bug in git-remote-fdl)".into());
        let mut failures = Vec::new();
        for v in versions {
            let built = listing.built.get(v).or(computed.get(v).map(|(_, b)| b));
            let verdict = built
                .and_then(|b| b.checked.as_deref().map(|c| &c.verdict))
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
