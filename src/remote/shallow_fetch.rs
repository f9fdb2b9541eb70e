//! A shallow fetch (`--depth`, `--deepen`, `--shallow-since`, `--shallow-exclude`,
//! `--unshallow`): the versions Git's limit keeps ([`crate::shallow_plan`]) that the repository
//! lacks, read and built into the session's pack, and `$GIT_DIR/shallow` rewritten as Git's
//! own fetch rewrites it. A commit that stops being shallow is built again from the lake and
//! must be the one the repository holds.

use std::collections::{HashMap, HashSet};

use super::error::RemoteError;
use super::fetch::{trace_step, FetchOutcome, Remembered, Want};
use super::listing::Listing;
use super::pack_claims::PackClaims;
use super::state::Remote;
use crate::history::{self, BuiltVersion, Reading, Summary};
use crate::lake::{LakeError, VersionId};
use crate::mapping::ObjectId;
use crate::progress::Progress;
use crate::repo::{shallow as shallow_file, Repo};
use crate::shallow_plan::{self, Graph, Limit, PlanError};
use crate::vouch::{objects_in, Vetted};

/// How far a shallow fetch goes, with the refs to exclude named as Git named them.
pub(crate) type ShallowAsk = Limit<String>;

/// Rounds of reads of the versions whose parents or time no one knew, each reading every such
/// version the plan meets at once (a generation, down a line of history); after these, the
/// rest of what is unknown is read at once, as a full clone reads it (a deep `--deepen`, an
/// `--unshallow`).
const GENERATION_ROUNDS: usize = 3;

/// The lake's graph as the session knows it: what the listing built, what the cache
/// remembers, what was read for the plan, and each version's time where needed.
struct SessionGraph<'a> {
    repo: &'a Repo,
    /// Commits this session's fetches installed, which the repository's handle, never
    /// refreshed, does not see.
    fetched: &'a HashSet<ObjectId>,
    commits: &'a HashMap<VersionId, ObjectId>,
    cached_commits: &'a HashMap<VersionId, ObjectId>,
    built: &'a HashMap<VersionId, BuiltVersion>,
    cached: &'a HashMap<VersionId, Vec<VersionId>>,
    read: HashMap<VersionId, Box<[VersionId]>>,
    times: HashMap<VersionId, i64>,
    need_times: bool,
}

impl SessionGraph<'_> {
    /// Whether `v`'s time is known, or not needed.
    fn times_known(&self, v: &VersionId) -> bool {
        !self.need_times || self.times.contains_key(v)
    }
}

impl Graph<VersionId> for SessionGraph<'_> {
    fn parents(&self, v: &VersionId) -> Option<&[VersionId]> {
        (self.built.get(v).map(|b| &b.parents[..]))
            .or_else(|| self.cached.get(v).map(|p| &p[..]))
            .or_else(|| self.read.get(v).map(|p| &p[..]))
    }

    fn time(&self, v: &VersionId) -> Option<i64> {
        self.times.get(v).copied()
    }

    fn present(&self, v: &VersionId) -> bool {
        let c = self.commits.get(v).or_else(|| self.cached_commits.get(v));
        c.is_some_and(|c| self.fetched.contains(c) || self.repo.has(c))
    }
}

/// Commits the cache remembers or the lake's packs claim, taken as they are for parents below
/// the shallow boundary (no repository holds them to check against: Git takes its server's
/// word there too), and checked as every fetch checks them for a version built.
struct BelowBoundary<'a> {
    entries: &'a HashMap<VersionId, ObjectId>,
    claims: Option<&'a PackClaims>,
    vetted: &'a Vetted<'a>,
}

impl Remembered for BelowBoundary<'_> {
    fn commit(&self, v: &VersionId) -> Option<ObjectId> {
        let claimed = || self.claims.and_then(|c| c.commit(v));
        self.entries.get(v).copied().or_else(claimed)
    }

    fn expected(&self, v: &VersionId) -> Option<ObjectId> {
        self.vetted.expected(v)
    }
}

impl Remote {
    /// Fetches what `ask` keeps of the history below `wants`, and rewrites the repository's
    /// shallow commits.
    pub(crate) async fn fetch_shallow(
        &mut self,
        listing: &mut Listing,
        wants: &[Want],
        ask: &ShallowAsk,
        progress: &dyn Progress,
    ) -> Result<FetchOutcome, RemoteError> {
        let Some(repo) = &self.repo else {
            return Ok(FetchOutcome::default());
        };
        repo.check_sha1()?;
        self.load_cache().await;
        let plan = self.shallow_plan(listing, wants, ask, progress).await?;
        let repo = self.repo.as_ref().expect("checked above");
        let order = to_build(
            (repo, &self.shallow_fetched),
            listing,
            &plan,
            self.cache_commits(),
        );
        let unshallowed = &plan.unshallowed;
        trace_step(&format!("fetch: {} versions need objects", order.len()));
        let reading = self.reading(true)?;
        let fresh = history::read_versions(&reading, order.clone(), progress).await?;
        self.claim_parents(listing, &fresh).await;
        let repo = self.repo.as_ref().expect("checked above");
        let no_parents = HashMap::new();
        let entries = self.cache_commits();
        let parents = self.cache.as_ref().map_or(&no_parents, |c| c.parents());
        let objects = objects_in(Some(repo), self.cache.as_ref());
        let computed = {
            let vetted = Vetted::new(entries, parents, objects.as_ref());
            let remembered = BelowBoundary {
                entries,
                claims: self.pack_claims.as_ref(),
                vetted: &vetted,
            };
            let built = self.build_fresh(&reading, &order, listing, fresh, &remembered);
            built.map_err(|e| self.explain_mismatch(listing, unshallowed, e))?
        };
        drop(objects);
        drop(reading);
        for (v, had) in unshallowed {
            if let Some((now, _)) = computed.get(v).filter(|(c, _)| c != had) {
                return Err(self.boundary_denied(v, *had, *now));
            }
        }
        if self.require_signatures.is_some() {
            self.check_signatures(&order, listing, &computed)?;
        }
        let writer = self.sink.take().and_then(|s| s.take());
        let repo = self.repo.as_ref().expect("checked above");
        let objects = match writer {
            Some(w) if !order.is_empty() => crate::session_pack::install(repo, w, false)?.0,
            _ => 0,
        };
        self.write_shallow(&plan, &computed)?;
        if objects > 0 {
            progress.finish("Writing objects", objects as u64, Some(objects as u64));
        }
        self.shallow_fetched
            .extend(computed.values().map(|(c, _)| *c));
        let commits = computed.iter().map(|(v, (c, _))| (v.clone(), *c)).collect();
        let built = computed.into_iter().map(|(v, (_, b))| (v, b)).collect();
        self.remember(&commits, &built);
        Ok(FetchOutcome {
            versions: order.len(),
            objects,
            self_contained: false,
            lock: None,
        })
    }

    /// Rewrites `.git/shallow` with the plan's shallow commits, those only this fetch built
    /// named now; left as it is when nothing changes.
    fn write_shallow(
        &self,
        plan: &CommitPlan,
        computed: &HashMap<VersionId, (ObjectId, BuiltVersion)>,
    ) -> Result<(), RemoteError> {
        let repo = self.repo.as_ref().expect("a fetch has a repository");
        let mut shallow = plan.shallow.clone();
        for v in &plan.shallow_built {
            // Never a boundary left out: the repository would lack its parents unawares.
            let (c, _) = computed.get(v).ok_or_else(|| LakeError::MissingVersion {
                lake: self.lake.name(),
                version: v.clone(),
                by: "the shallow boundary".to_string(),
            })?;
            shallow.insert(*c);
        }
        if shallow != shallow_file::read(repo.git_dir()) {
            shallow_file::write(repo.git_dir(), &shallow)?;
        }
        Ok(())
    }

    /// Looks up what the packs claim for the parents of the versions `fresh` that nothing
    /// else names.
    async fn claim_parents(&mut self, listing: &Listing, fresh: &HashMap<VersionId, Summary>) {
        let entries = self.cache_commits();
        let named = |p: &VersionId| {
            fresh.contains_key(p) || listing.commits.contains_key(p) || entries.contains_key(p)
        };
        let parents: Vec<VersionId> = (fresh.values())
            .flat_map(|s| s.parents.iter())
            .filter(|p| !named(p))
            .cloned()
            .collect();
        let lake = self.lake.clone();
        let Some(claims) = self.pack_claims.as_mut().filter(|_| !parents.is_empty()) else {
            return;
        };
        for note in claims.look_up(&lake, parents.iter()).await {
            self.lake_warn(note);
        }
    }

    /// A shallow commit of the repository that its version, built on its parents read now,
    /// denies.
    fn boundary_denied(
        &self,
        version: &VersionId,
        had: ObjectId,
        computed: ObjectId,
    ) -> RemoteError {
        RemoteError::BoundaryDenied {
            lake: self.lake.name(),
            version: version.clone(),
            had,
            computed,
        }
    }

    /// A version whose files map to another commit than expected, said for what it is: a
    /// shallow commit whose parents' IDs were wrong, or a pack's claim that is refused, naming
    /// the pack.
    fn explain_mismatch(
        &self,
        listing: &Listing,
        unshallowed: &HashMap<VersionId, ObjectId>,
        e: RemoteError,
    ) -> RemoteError {
        let RemoteError::CacheMismatch {
            version,
            computed,
            cached,
            ..
        } = &e
        else {
            return e;
        };
        if unshallowed.get(version) == Some(cached) {
            return self.boundary_denied(version, *cached, *computed);
        }
        let claims = self.pack_claims.as_ref();
        let claimed = claims.and_then(|c| Some((c.pack_of(version)?, c.commit(version)?)));
        match claimed {
            Some((pack, claimed))
                if claimed == *cached && listing.commits.get(version) == Some(cached) =>
            {
                RemoteError::ClaimRefused {
                    lake: self.lake.name(),
                    pack: pack.to_string(),
                    version: version.clone(),
                    claimed,
                    computed: *computed,
                }
            }
            _ => e,
        }
    }

    /// The cache's commits, as remembered.
    fn cache_commits(&self) -> &HashMap<VersionId, ObjectId> {
        static EMPTY: std::sync::OnceLock<HashMap<VersionId, ObjectId>> =
            std::sync::OnceLock::new();
        match &self.cache {
            Some(c) => c.commits(),
            None => EMPTY.get_or_init(HashMap::new),
        }
    }

    /// The versions the repository is to hold and its new shallow commits.
    async fn shallow_plan(
        &mut self,
        listing: &Listing,
        wants: &[Want],
        ask: &ShallowAsk,
        progress: &dyn Progress,
    ) -> Result<CommitPlan, RemoteError> {
        let repo = self.repo.as_ref().expect("a fetch has a repository");
        let entries = self.cache_commits();
        let tips = self.wanted_versions(listing, wants, entries)?;
        let tips: Vec<VersionId> = tips.into_iter().map(|(v, _)| v).collect();
        let old_commits = shallow_file::read(repo.git_dir());
        let commit_of = |v: &VersionId| listing.commits.get(v).or_else(|| entries.get(v)).copied();
        let mut version_of: HashMap<ObjectId, VersionId> = HashMap::new();
        for (v, c) in listing.commits.iter().chain(entries.iter()) {
            if old_commits.contains(c) {
                version_of.insert(*c, v.clone());
            }
        }
        let old: HashSet<VersionId> = version_of.values().cloned().collect();
        let limit = self.limit(listing, ask)?;
        let no_parents = HashMap::new();
        let mut graph = SessionGraph {
            repo,
            fetched: &self.shallow_fetched,
            commits: &listing.commits,
            cached_commits: entries,
            built: &listing.built,
            cached: self.cache.as_ref().map_or(&no_parents, |c| c.parents()),
            read: HashMap::new(),
            times: HashMap::new(),
            need_times: matches!(limit, Limit::Selected { since: Some(_), .. }),
        };
        if graph.need_times {
            graph.times = self.known_times(repo, listing, entries);
        }
        let mut rounds = 0;
        let plan = loop {
            match shallow_plan::plan(&graph, &tips, &old, &limit) {
                Ok(plan) => break plan,
                Err(PlanError::NothingSelected) => {
                    return Err(RemoteError::NothingSelected {
                        lake: self.lake.name(),
                    })
                }
                Err(PlanError::Unknown(v)) if rounds <= GENERATION_ROUNDS => {
                    rounds += 1;
                    let unknown = unknown_below(&graph, &tips, &old, &v, graph.need_times);
                    let whole = rounds > GENERATION_ROUNDS;
                    self.read_for_plan(&mut graph, unknown, whole, progress)
                        .await?;
                }
                Err(PlanError::Unknown(v)) => {
                    return Err(RemoteError::Lake(LakeError::MissingVersion {
                        lake: self.lake.name(),
                        version: v,
                        by: "the shallow boundary".to_string(),
                    }))
                }
            }
        };
        Ok(commit_plan(
            plan,
            &version_of,
            commit_of,
            &old_commits,
            *ask == Limit::Everything,
        ))
    }

    /// The limit on versions: refs to exclude found among the lake's refs as Git's
    /// `upload-pack` finds them (`v1` is `refs/tags/v1` or `refs/heads/v1`, not both).
    fn limit(&self, listing: &Listing, ask: &ShallowAsk) -> Result<Limit<VersionId>, RemoteError> {
        Ok(match ask {
            Limit::Plain => Limit::Plain,
            Limit::Depth(d) => Limit::Depth(*d),
            Limit::Deepen(d) => Limit::Deepen(*d),
            Limit::Everything => Limit::Everything,
            Limit::Selected { since, excluded } => {
                let mut versions = Vec::new();
                for name in excluded {
                    let rules = [
                        name.clone(),
                        format!("refs/{name}"),
                        format!("refs/tags/{name}"),
                        format!("refs/heads/{name}"),
                    ];
                    let found: Vec<&VersionId> = rules
                        .iter()
                        .filter(|r| r.starts_with("refs/"))
                        .filter_map(|r| listing.refs.iter().find(|(n, _)| n == r))
                        .map(|(_, v)| v)
                        .collect();
                    if found.len() != 1 {
                        return Err(RemoteError::ExcludedRef {
                            lake: self.lake.name(),
                            name: name.clone(),
                            matches: found.len(),
                        });
                    }
                    versions.push(found[0].clone());
                }
                Limit::Selected {
                    since: *since,
                    excluded: versions,
                }
            }
        })
    }

    /// The commit times this session knows: the repository's commits, and what readings saw.
    fn known_times(
        &self,
        repo: &Repo,
        listing: &Listing,
        entries: &HashMap<VersionId, ObjectId>,
    ) -> HashMap<VersionId, i64> {
        let mut times = HashMap::new();
        for (v, c) in listing.commits.iter().chain(entries.iter()) {
            let seen = self.times.as_ref().and_then(|t| t.get(v));
            let time = seen.or_else(|| repo.object(c).and_then(|(_, data)| committer_time(&data)));
            if let Some(t) = time {
                times.insert(v.clone(), t as i64);
            }
        }
        times
    }

    /// Reads `unknown` all at once, for their parents and times.
    /// Reads `unknown` (with `whole`, and everything below them no one knows) all at once,
    /// for their parents and times.
    async fn read_for_plan(
        &self,
        graph: &mut SessionGraph<'_>,
        unknown: Vec<VersionId>,
        whole: bool,
        progress: &dyn Progress,
    ) -> Result<(), RemoteError> {
        let times = self.times.clone().unwrap_or_default();
        let reading = Reading::new(self.lake.clone()).with_times(Some(times.clone()));
        let mut parents: Vec<(VersionId, Box<[VersionId]>)> = Vec::new();
        if whole {
            let starts: Vec<(VersionId, String)> = (unknown.iter())
                .map(|v| (v.clone(), "the shallow boundary".to_string()))
                .collect();
            let known = |v: &VersionId| graph.parents(v).filter(|_| graph.times_known(v));
            let walk = history::Walk {
                reading: &reading,
                stop: &|_| false,
                walked: &known,
                newest_known: None,
                progress,
            };
            let mut read = walk.read(&starts).await?;
            let ids: Vec<VersionId> = read.data.iter().map(|(v, _)| v.clone()).collect();
            for v in ids {
                match read.data.remove(&v) {
                    Some(Ok(s)) => parents.push((v, s.parents)),
                    Some(Err(e)) => return Err(e.into()),
                    None => {}
                }
            }
        } else {
            let read = history::read_versions(&reading, unknown, progress).await?;
            parents.extend(read.into_iter().map(|(v, s)| (v, s.parents)));
        }
        for (v, p) in parents {
            if let Some(t) = times.get(&v) {
                graph.times.insert(v.clone(), t as i64);
            }
            graph.read.insert(v, p);
        }
        Ok(())
    }
}

/// What a shallow fetch works out: versions to hold, commits to leave shallow, and each old
/// shallow commit that no longer is, by version.
struct CommitPlan {
    holds: Vec<VersionId>,
    shallow: HashSet<ObjectId>,
    /// Shallow versions whose commits are known only once this fetch builds them.
    shallow_built: Vec<VersionId>,
    unshallowed: HashMap<VersionId, ObjectId>,
}

/// The plan in commits: the shallow commits known now (the old ones by the shallow file's own
/// IDs), the boundary versions only the fetch will name, and each old shallow commit that no
/// longer is. Commits of no version of this lake stay shallow, unless `everything` was asked.
fn commit_plan(
    plan: shallow_plan::Plan<VersionId>,
    version_of: &HashMap<ObjectId, VersionId>,
    commit_of: impl Fn(&VersionId) -> Option<ObjectId>,
    old_commits: &HashSet<ObjectId>,
    everything: bool,
) -> CommitPlan {
    let old_commit: HashMap<&VersionId, ObjectId> =
        version_of.iter().map(|(c, v)| (v, *c)).collect();
    let mut shallow: HashSet<ObjectId> = HashSet::new();
    // A boundary version nothing names yet (above the claims) is named once built.
    let mut shallow_built = Vec::new();
    for v in &plan.shallow {
        match old_commit.get(v).copied().or_else(|| commit_of(v)) {
            Some(c) => drop(shallow.insert(c)),
            None => shallow_built.push(v.clone()),
        }
    }
    if !everything {
        shallow.extend(old_commits.iter().filter(|c| !version_of.contains_key(*c)));
    }
    let unshallowed = (old_commit.iter())
        .filter(|(v, _)| !plan.shallow.contains(**v))
        .map(|(v, c)| ((*v).clone(), *c))
        .collect();
    CommitPlan {
        holds: plan.holds,
        shallow,
        shallow_built,
        unshallowed,
    }
}

/// The versions to build, parents first: those the repository lacks, and those whose commit
/// stops being shallow (built again, so that what the repository took on trust is checked).
fn to_build(
    (repo, fetched): (&Repo, &HashSet<ObjectId>),
    listing: &Listing,
    plan: &CommitPlan,
    entries: &HashMap<VersionId, ObjectId>,
) -> Vec<VersionId> {
    let lacking = |v: &VersionId| {
        let c = listing.commits.get(v).or_else(|| entries.get(v));
        c.is_none_or(|c| !fetched.contains(c) && !repo.has(c))
    };
    (plan.holds.iter())
        .filter(|v| plan.unshallowed.contains_key(*v) || lacking(v))
        .cloned()
        .collect()
}

/// Every version the walk from `tips` (and the old shallow ones) meets whose parents, or
/// time where `since` needs it, are not known, `first` among them.
fn unknown_below(
    graph: &SessionGraph<'_>,
    tips: &[VersionId],
    old: &HashSet<VersionId>,
    first: &VersionId,
    since: bool,
) -> Vec<VersionId> {
    let mut unknown = vec![first.clone()];
    let mut seen: HashSet<&VersionId> = HashSet::from([first]);
    let mut stack: Vec<&VersionId> = tips.iter().chain(old.iter()).collect();
    while let Some(v) = stack.pop() {
        if !seen.insert(v) {
            continue;
        }
        match graph.parents(v) {
            Some(ps) => {
                if since && graph.time(v).is_none() {
                    unknown.push(v.clone());
                }
                stack.extend(ps.iter());
            }
            None => unknown.push(v.clone()),
        }
    }
    unknown
}

/// The committer time of a commit's bytes.
fn committer_time(data: &[u8]) -> Option<u64> {
    let text = std::str::from_utf8(data).ok()?;
    let line = text.lines().find(|l| l.starts_with("committer "))?;
    let mut words = line.rsplit(' ');
    let _zone = words.next()?;
    words.next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::committer_time;

    #[test]
    fn the_committer_time_is_read_from_a_commit() {
        let commit = b"tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904\nauthor A <a> 5 +0000\ncommitter A <a> 1700000000 +0000\n\nm\n";
        assert_eq!(committer_time(commit), Some(1_700_000_000));
        assert_eq!(committer_time(b"tree x\n\nm\n"), None);
    }
}
