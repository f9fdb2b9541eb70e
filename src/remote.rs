//! One lake as a Git remote: what `list` shows and what `fetch` writes, on top of the lake
//! reader, the mapping, the cache and the local repository.

use std::collections::{HashMap, HashSet};

use crate::cache::Cache;
use crate::history::{self, Built};
use crate::lake::{Lake, LakeError, VersionData, VersionId};
use crate::mapping::{self, Object, ObjectId};
use crate::progress::Progress;
use crate::repo::{Repo, RepoError};
use crate::signatures::{self, Policy, Subject, Verdict};
use crate::store::{Token, Versioned};

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
    /// For `list for-push`: each ref file's version token, for writes on condition.
    pub tokens: HashMap<String, Token>,
    /// For `list for-push`: `refs.json` as read before the refs (`Some(None)`: there was none).
    pub refs_json: Option<Option<Versioned>>,
}

impl Listing {
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
    warnings: std::sync::Mutex<Vec<String>>,
    /// When set, a fetch brings only versions signed by a trusted key.
    pub require_signatures: Option<Policy>,
}

/// What a fetch wrote.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct FetchOutcome {
    pub versions: usize,
    pub objects: usize,
    /// Every object the wanted commits reach was written now (nothing was already there), so
    /// the repository is connected by construction.
    pub self_contained: bool,
}

impl Remote {
    pub fn new(lake: Lake, repo: Option<Repo>) -> Remote {
        let cache = repo
            .as_ref()
            .map(|r| Cache::load(r.git_dir(), &lake.name(), lake.config.id.as_deref()));
        let remote = Remote {
            lake,
            repo,
            cache,
            warnings: Default::default(),
            require_signatures: None,
        };
        if let Some(c) = remote.cache.as_ref().filter(|c| c.damaged > 0) {
            remote.lake_warn(format!(
                "the commit cache {} had {} damaged entr{}: not trusted, computed again from the lake",
                c.path().display(),
                c.damaged,
                if c.damaged == 1 { "y" } else { "ies" }
            ));
        }
        remote
    }

    fn known(&self) -> HashMap<VersionId, ObjectId> {
        self.cache
            .as_ref()
            .map(|c| c.entries.clone())
            .unwrap_or_default()
    }

    /// Reads HEAD and the refs, and computes the commit of every ref.
    pub async fn list(&mut self, progress: &dyn Progress) -> Result<Listing, RemoteError> {
        self.list_with(progress, false).await
    }

    /// `list for-push`: also the ref files' tokens, and `refs.json` read before the refs (a
    /// later rewrite of `refs.json` is conditional on it, which keeps it equal to the ref files).
    pub async fn list_for_push(&mut self, progress: &dyn Progress) -> Result<Listing, RemoteError> {
        self.list_with(progress, true).await
    }

    /// Computes the commit of `version` (reading it and any ancestors not known yet).
    pub async fn commit_of(
        &mut self,
        version: &VersionId,
        named_by: &str,
    ) -> Result<ObjectId, RemoteError> {
        // A push asks this once per ref: look the version up before copying the cache.
        if let Some(c) = self.cache.as_ref().and_then(|c| c.entries.get(version)) {
            return Ok(*c);
        }
        let known = self.known();
        let resolved = history::resolve(
            &self.lake,
            &[(version.clone(), named_by.to_string())],
            &known,
            &crate::progress::Silent,
        )
        .await?;
        if let Some(cache) = &mut self.cache {
            cache.extend(resolved.commits.iter().map(|(v, c)| (v.clone(), *c)));
            cache.save();
        }
        Ok(resolved.commits[version])
    }

    async fn list_with(
        &mut self,
        progress: &dyn Progress,
        for_push: bool,
    ) -> Result<Listing, RemoteError> {
        let mut tokens = HashMap::new();
        let mut refs_json = None;
        let (head, refs) = if for_push {
            refs_json = Some(self.lake.refs_json_versioned().await?);
            let (head, refs) = futures::join!(self.lake.head(), self.lake.refs_versioned());
            let refs = refs?
                .into_iter()
                .map(|(n, v, t)| {
                    tokens.insert(n.clone(), t);
                    (n, v)
                })
                .collect();
            (head?, refs)
        } else {
            let (head, refs) = futures::join!(self.lake.head(), self.lake.refs());
            (head?, refs?)
        };
        if !refs.iter().any(|(n, _)| *n == head) && !refs.is_empty() {
            self.lake_warn(format!(
                "lake '{}': HEAD names {head}, which does not exist",
                self.lake.name()
            ));
        }
        let tips: Vec<(VersionId, String)> = refs
            .iter()
            .map(|(n, v)| (v.clone(), format!("ref {n}")))
            .collect();
        let known = self.known();
        let resolved = history::resolve(&self.lake, &tips, &known, progress).await?;
        let mut commits = resolved.commits;
        for (v, _) in &tips {
            if let Some(c) = known.get(v) {
                commits.insert(v.clone(), *c);
            }
        }
        if let Some(cache) = &mut self.cache {
            cache.extend(commits.iter().map(|(v, c)| (v.clone(), *c)));
            cache.save();
        }
        Ok(Listing {
            head: Some(head),
            refs,
            commits,
            built: resolved.built,
            tokens,
            refs_json,
        })
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
    pub async fn fetch(
        &mut self,
        listing: &mut Listing,
        wants: &[Want],
        progress: &dyn Progress,
    ) -> Result<FetchOutcome, RemoteError> {
        let Some(repo) = &self.repo else {
            return Ok(FetchOutcome::default());
        };
        repo.check_sha1()?;
        let known = self.known();
        let commit_of = |v: &VersionId| listing.commits.get(v).or_else(|| known.get(v)).copied();
        let tips = self.wanted_versions(listing, wants, &known)?;
        // Walk down from the wants, stopping at commits the repository already has; versions
        // `list` built are gone through without reading them again.
        let in_repo = |v: &VersionId| commit_of(v).is_some_and(|c| repo.has(&c));
        let walked: HashMap<VersionId, Vec<VersionId>> = listing
            .built
            .iter()
            .map(|(v, b)| (v.clone(), b.parents.clone()))
            .collect();
        let walk = history::Walk {
            lake: &self.lake,
            stop: &in_repo,
            walked: &walked,
            known: known.len(),
            progress,
        };
        let read = walk.read(&tips).await?;
        let parents_of = |v: &VersionId| -> &[VersionId] {
            match (walked.get(v), read.data.get(v)) {
                (Some(p), _) => p,
                (None, Some(Ok(d))) => &d.record.parents,
                _ => &[],
            }
        };
        let (order, reached_existing) = needed_in_order(&tips, &in_repo, parents_of);
        trace_step(&format!("fetch: {} versions need objects", order.len()));
        let read_data = self.take_read(&order, &walked, read)?;
        if let Some(policy) = &self.require_signatures {
            self.check_signatures(policy, &order, listing, &read_data)
                .await?;
        }
        let (objects, computed) = self.build_objects(&order, listing, &read_data, &known)?;
        let n_objects = objects.len();
        trace_step(&format!("fetch: writing {n_objects} objects as a pack"));
        for note in repo.write_pack(&objects)? {
            self.lake_warn(note);
        }
        trace_step("fetch: pack written");
        if n_objects > 0 {
            progress.finish("Writing objects", n_objects as u64, Some(n_objects as u64));
        }
        if let Some(cache) = &mut self.cache {
            cache.extend(computed);
            cache.save();
        }
        Ok(FetchOutcome {
            versions: order.len(),
            objects: n_objects,
            self_contained: !reached_existing,
        })
    }

    /// The data of every version of `order` that was read (not walked through): a version that
    /// could not be read fails the fetch.
    fn take_read(
        &self,
        order: &[VersionId],
        walked: &HashMap<VersionId, Vec<VersionId>>,
        mut read: history::WalkRead,
    ) -> Result<HashMap<VersionId, VersionData>, RemoteError> {
        let mut read_data = HashMap::with_capacity(order.len());
        for v in order.iter().filter(|v| !walked.contains_key(*v)) {
            let d = match read.data.remove(v) {
                Some(Ok(d)) => d,
                Some(Err(e)) => return Err(e.into()),
                None => {
                    return Err(RemoteError::Lake(LakeError::MissingVersion {
                        lake: self.lake.name(),
                        version: v.clone(),
                        by: read.named_by.get(v).cloned().unwrap_or_default(),
                    }))
                }
            };
            read_data.insert(v.clone(), d);
        }
        Ok(read_data)
    }

    /// The version each wanted commit stands for.
    fn wanted_versions(
        &self,
        listing: &Listing,
        wants: &[Want],
        known: &HashMap<VersionId, ObjectId>,
    ) -> Result<Vec<(VersionId, String)>, RemoteError> {
        let mut tips = Vec::with_capacity(wants.len());
        for w in wants {
            let oid = ObjectId::from_hex(&w.oid);
            let v = oid.and_then(|o| {
                listing
                    .version_of(&o)
                    .or_else(|| known.iter().find(|(_, c)| **c == o).map(|(v, _)| v))
                    .cloned()
            });
            let Some(v) = v else {
                return Err(RemoteError::UnknownWant {
                    lake: self.lake.name(),
                    oid: w.oid.clone(),
                    name: w.name.clone(),
                });
            };
            tips.push((v, format!("ref {}", w.name)));
        }
        Ok(tips)
    }

    /// The Git objects of `order` (parents first): built by `list` or from what was read, and
    /// each checked against the commit the listing or the cache expects. Also returns the
    /// commits computed here.
    fn build_objects(
        &self,
        order: &[VersionId],
        listing: &mut Listing,
        read_data: &HashMap<VersionId, VersionData>,
        known: &HashMap<VersionId, ObjectId>,
    ) -> Result<(Vec<Object>, HashMap<VersionId, ObjectId>), RemoteError> {
        let mut objects: Vec<Object> = Vec::new();
        let mut emitted: HashSet<ObjectId> = HashSet::new();
        let mut computed: HashMap<VersionId, ObjectId> = HashMap::new();
        for v in order {
            let expected = listing.commits.get(v).or_else(|| known.get(v)).copied();
            // Once written, a version's objects are in the repository: no need to keep them.
            let vo = match listing.built.remove(v) {
                Some(b) => b.objects,
                None => {
                    let d = &read_data[v];
                    let mut parents = Vec::with_capacity(d.record.parents.len());
                    for p in &d.record.parents {
                        let c = computed
                            .get(p)
                            .or_else(|| listing.commits.get(p))
                            .or_else(|| known.get(p))
                            .copied();
                        parents.push(c.ok_or_else(|| LakeError::MissingVersion {
                            lake: self.lake.name(),
                            version: p.clone(),
                            by: format!("version {v}"),
                        })?);
                    }
                    let vo = mapping::version_objects(v, &d.record, d.dataset.clone(), &parents);
                    if let Some(expected) = expected.filter(|e| *e != vo.commit.id) {
                        return Err(RemoteError::CacheMismatch {
                            lake: self.lake.name(),
                            version: v.clone(),
                            computed: vo.commit.id,
                            cached: expected,
                            cache: self
                                .cache
                                .as_ref()
                                .map(|c| c.path().display().to_string())
                                .unwrap_or_default(),
                        });
                    }
                    computed.insert(v.clone(), vo.commit.id);
                    vo
                }
            };
            for o in vo.blobs.into_iter().chain([vo.tree, vo.commit]) {
                if emitted.insert(o.id) {
                    objects.push(o);
                }
            }
        }
        Ok((objects, computed))
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
    /// Fails unless every version in `versions` is signed by a trusted key. Reads each
    /// `version.json.sig` concurrently; reports the first failure (in history order) and a count.
    async fn check_signatures(
        &self,
        policy: &Policy,
        versions: &[VersionId],
        listing: &Listing,
        read_data: &HashMap<VersionId, VersionData>,
    ) -> Result<(), RemoteError> {
        let lake = &self.lake;
        let sigs = lake.read_signatures(versions.iter().cloned()).await?;
        let mut failures = Vec::new();
        for v in versions {
            let sig = sigs[v].as_deref();
            let (record, email, time): (&[u8], &str, u64) = match listing.built.get(v) {
                Some(b) => (b.record(), &b.author_email, b.time),
                None => {
                    let d = &read_data[v];
                    (
                        &d.record.raw,
                        &d.record.author.email,
                        mapping::commit_time(v, &d.record),
                    )
                }
            };
            let subject = Subject {
                record,
                signature: sig,
                principal: email,
                time,
            };
            let verdict = signatures::verify(
                &subject,
                &policy.trusted,
                &policy.namespace,
                &lake.config.signers,
            );
            if !verdict.is_good() {
                failures.push((v.clone(), verdict));
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
            lake: lake.name(),
            version,
            verdict: Box::new(verdict),
            more,
        })
    }
}
