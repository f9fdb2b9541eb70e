//! `git-remote-fdl fsck <lake>`: checks a lake as `git fsck` checks a repository. Every version
//! the refs reach is read again and mapped again; damage is reported, one line per problem,
//! and nothing stops at the first one.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::convert::Infallible;

use futures::StreamExt;
use sha2::{Digest, Sha256};

use crate::cache::Cache;
use crate::fatal::Fatal;
use crate::graph::{parents_first, ParentsFirst};
use crate::lake::catalog::{parse_digest, CatalogFormat};
use crate::lake::refs_json::parse_refs_json;
use crate::lake::{Lake, LakeError, VersionId};
use crate::mapping::{self, ObjectId};
use crate::progress::Progress;
use crate::reading::Reading;
use crate::repo::Repo;
use crate::store::StoreError;

use super::named::open_named;

/// Catalogs checked at once (each streams through a hash: memory stays small).
const CATALOGS_IN_FLIGHT: usize = 8;

/// What `fsck` found.
#[derive(Debug, Default)]
pub struct FsckReport {
    /// The refs checked.
    pub refs: usize,
    /// The versions they reach, each read and mapped again.
    pub versions: usize,
    /// One line per problem, as `git fsck` words them (`error: ...`, `missing version ...`).
    pub problems: Vec<String>,
    /// Things worth knowing that are not damage.
    pub notes: Vec<String>,
}

/// The repository a lake was fetched into, and its cache of that lake's commits.
pub(crate) struct Fetched<'a> {
    repo: &'a Repo,
    /// The remote's name: its remote-tracking branches are what it fetched last.
    remote: &'a str,
    cache: Option<Cache>,
}

impl<'a> Fetched<'a> {
    /// The repository, the remote's name in it, and the cache of the lake's commits there.
    pub(crate) fn new(repo: &'a Repo, remote: &'a str, cache: Option<Cache>) -> Fetched<'a> {
        Fetched {
            repo,
            remote,
            cache,
        }
    }
}

/// Checks `lake`; `fetched` compares it with what a repository fetched from it before.
async fn check_lake(
    lake: &Lake,
    fetched: Option<Fetched<'_>>,
    catalogs: bool,
    progress: &dyn Progress,
) -> Result<FsckReport, LakeError> {
    let mut report = FsckReport::default();
    let refs = match lake.refs().await {
        Ok(refs) => refs,
        // A broken ref file stops the listing: say so, as a problem of the lake.
        Err(e @ LakeError::BadRef { .. }) => {
            report.problems.push(format!("error: {e}"));
            return Ok(report);
        }
        Err(e) => return Err(e),
    };
    report.refs = refs.len();
    for w in lake.take_warnings() {
        report.problems.push(format!("error: {w}"));
    }
    check_head(lake, &refs, &mut report).await?;
    check_refs_json(lake, &refs, &mut report).await?;
    let mut reading = Reading::new(lake.clone());
    if catalogs {
        reading = reading.with_digests();
    }
    let data = read_reachable(&reading, &refs, progress).await?;
    report.versions = data.len();
    progress.finish(
        "Reading versions",
        data.len() as u64,
        Some(data.len() as u64),
    );
    let digests: Vec<(VersionId, Option<Box<str>>)> = data
        .iter()
        .filter_map(|(v, d)| {
            let extra = d.as_ref().ok()?.extra.as_ref();
            Some((v.clone(), extra.and_then(|e| e.sha256.clone())))
        })
        .collect();
    let commits = check_history(&reading, &refs, data, &mut report);
    if let Some(f) = &fetched {
        check_against_repository(&refs, &commits, f, &mut report);
    }
    if catalogs {
        check_catalogs(lake, digests, &mut report, progress).await;
    }
    Ok(report)
}

async fn check_head(
    lake: &Lake,
    refs: &[(String, VersionId)],
    report: &mut FsckReport,
) -> Result<(), LakeError> {
    let head = match lake.head().await {
        Ok(head) => head,
        // A HEAD that names no branch is a problem of the lake; the check goes on.
        Err(e @ LakeError::BadHead { .. }) => {
            report.problems.push(format!("error: {e}"));
            return Ok(());
        }
        Err(e) => return Err(e),
    };
    if !refs.is_empty() && !refs.iter().any(|(n, _)| *n == head) {
        report
            .problems
            .push(format!("error: HEAD names {head}, which does not exist"));
    }
    Ok(())
}

/// Where the store can list, `refs.json` must equal the ref files.
async fn check_refs_json(
    lake: &Lake,
    refs: &[(String, VersionId)],
    report: &mut FsckReport,
) -> Result<(), LakeError> {
    if !lake.can_list() {
        return Ok(());
    }
    let read = match lake.refs_json_versioned().await {
        // Too large to read is a problem of the lake like any other, not the end of the check.
        Err(LakeError::Store {
            source: e @ StoreError::TooLarge { .. },
            ..
        }) => {
            report.problems.push(format!("error: {e}"));
            return Ok(());
        }
        read => read?,
    };
    let Some(raw) = read else {
        if !refs.is_empty() {
            report
                .problems
                .push("error: refs.json is missing (readers that cannot list see no refs)".into());
        }
        return Ok(());
    };
    let listed: BTreeMap<String, String> = match parse_refs_json(&raw.bytes) {
        Ok(pairs) => pairs
            .into_iter()
            .filter(|(n, _)| n.starts_with("refs/heads/") || n.starts_with("refs/tags/"))
            .map(|(n, v)| (n, v.trim().to_ascii_lowercase()))
            .collect(),
        Err(why) => {
            report.problems.push(format!("error: refs.json: {why}"));
            return Ok(());
        }
    };
    let files: BTreeMap<&str, _> = refs.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
    for (name, file) in &files {
        match listed.get(*name) {
            None => report.problems.push(format!(
                "error: refs.json lacks {name} (its ref file holds {file})"
            )),
            Some(v) if v != file => report.problems.push(format!(
                "error: refs.json says {name} holds {v}, but its ref file holds {file}"
            )),
            Some(_) => {}
        }
    }
    // A broken ref file is reported as such (a warning made a problem above).
    let broken = lake.broken_refs();
    let unlisted = |n: &&String| !files.contains_key(n.as_str()) && !broken.contains(n);
    for name in listed.keys().filter(unlisted) {
        report.problems.push(format!(
            "error: refs.json lists {name}, which has no ref file"
        ));
    }
    Ok(())
}

/// What fsck keeps of each version read: what a fetch keeps (parents, object IDs, where its
/// commit's text waits on disk), or why it could not be read. Records are read within
/// the store's memory budget and let go, so memory does not grow with their size.
type Read = crate::history::Summaries;

/// Reads every version the refs reach, with its `dataset.json`. Where the store can list, all
/// records are read at once and the reachable ones' datasets after; else a generation at a
/// time. Versions that cannot be read are kept as errors, for the report.
async fn read_reachable(
    reading: &Reading,
    refs: &[(String, VersionId)],
    progress: &dyn Progress,
) -> Result<Read, LakeError> {
    let lake = reading.lake();
    let tips: Vec<VersionId> = refs.iter().map(|(_, v)| v.clone()).collect();
    let mut data = Read::default();
    if lake.can_list() {
        let all = lake.version_ids().await?;
        read_into(reading, all, false, true, &mut data, progress).await;
        let reachable = reachable_from(&tips, &data);
        data.retain(|v| reachable.contains(v));
        let missing_datasets: Vec<(VersionId, ObjectId)> = data
            .iter()
            .filter_map(|(v, d)| match d {
                Ok(s) => Some((v.clone(), s.awaiting_dataset()?)),
                Err(_) => None,
            })
            .collect();
        let mut reads = futures::stream::iter(missing_datasets)
            .map(|(v, blob)| async move {
                let r = reading.dataset_and_tree(&v, blob).await;
                (v, r)
            })
            .buffer_unordered(lake.concurrency());
        while let Some((v, r)) = reads.next().await {
            match r {
                Ok(read) => {
                    if let Some(Ok(s)) = data.get_mut(&v) {
                        s.add_dataset(read);
                    }
                }
                Err(e) => {
                    data.insert(v, Err(e));
                }
            }
        }
    } else {
        let mut frontier = tips;
        while !frontier.is_empty() {
            read_into(reading, frontier, true, false, &mut data, progress).await;
            frontier = reachable_from(&[], &data)
                .into_iter()
                .filter(|v| !data.contains_key(v))
                .collect();
        }
    }
    Ok(data)
}

/// Reads `ids` concurrently into `data` (a missing record reads as `Ok(None)`: not inserted).
/// `listed`: `ids` are every version, so the progress has a total.
async fn read_into(
    reading: &Reading,
    ids: Vec<VersionId>,
    with_dataset: bool,
    listed: bool,
    data: &mut Read,
    progress: &dyn Progress,
) {
    let total = listed.then(|| (data.len() + ids.len()) as u64);
    let mut reads = futures::stream::iter(ids)
        .map(|v| async move {
            let r = reading.version(&v, with_dataset).await;
            (v, r)
        })
        .buffer_unordered(reading.lake().concurrency());
    while let Some((v, r)) = reads.next().await {
        match r {
            Ok(Some(d)) => {
                data.insert(v, Ok(d));
            }
            Ok(None) => {}
            Err(e) => {
                data.insert(v, Err(e));
            }
        }
        progress.update("Reading versions", data.len() as u64, total);
    }
}

/// `tips` and every version read that they reach (plus, with no tips, the parents of
/// everything read): versions not read are included, so that callers see them missing.
fn reachable_from(tips: &[VersionId], data: &Read) -> HashSet<VersionId> {
    let starts: Vec<VersionId> = if tips.is_empty() {
        data.values()
            .filter_map(Result::ok)
            .flat_map(|d| d.parents.iter().cloned())
            .collect()
    } else {
        tips.to_vec()
    };
    crate::graph::reachable(starts, |v| match data.get(v) {
        Some(Ok(d)) => d.parents.to_vec(),
        _ => Vec::new(),
    })
}

/// A version's commit and tree, as mapping v1 makes them now.
#[derive(Debug, Clone, Copy)]
struct Mapped {
    commit: ObjectId,
    tree: ObjectId,
}

/// Reports unreadable and missing versions and cycles; returns the commit of every version
/// whose whole history could be mapped. The summaries are used up as their commits are made.
fn check_history(
    reading: &Reading,
    refs: &[(String, VersionId)],
    mut data: Read,
    report: &mut FsckReport,
) -> HashMap<VersionId, Mapped> {
    let mut named_by: BTreeMap<VersionId, String> = BTreeMap::new();
    for (name, v) in refs {
        named_by
            .entry(v.clone())
            .or_insert_with(|| format!("ref {name}"));
    }
    for (id, d) in data.iter() {
        for p in d.iter().flat_map(|d| d.parents.iter()) {
            named_by
                .entry(p.clone())
                .or_insert_with(|| format!("version {id}"));
        }
    }
    for (v, by) in &named_by {
        match data.get(v) {
            None => report
                .problems
                .push(format!("missing version {v} (named by {by})")),
            Some(Err(e)) => report.problems.push(format!("error: {e}")),
            Some(Ok(_)) => {}
        }
    }
    let mut commits = HashMap::new();
    let mut broken = HashSet::new();
    reading.build_in_order(|in_order| {
        let mut walk = HistoryWalk {
            in_order,
            data: &mut data,
            commits: &mut commits,
            broken: &mut broken,
            visiting: HashSet::new(),
            report,
        };
        for (_, tip) in refs {
            walk.visiting.clear();
            let Ok(()) = parents_first([tip.clone()], &mut walk);
        }
    });
    commits
}

/// Commits made parents first, from the summaries read. A version whose history holds a
/// missing or unreadable version, or a cycle, gets no commit.
struct HistoryWalk<'a, 'r> {
    in_order: &'a mut crate::reading::InOrder<'r>,
    data: &'a mut Read,
    commits: &'a mut HashMap<VersionId, Mapped>,
    broken: &'a mut HashSet<VersionId>,
    /// Versions whose parents are being walked, from the tip being walked.
    visiting: HashSet<VersionId>,
    report: &'a mut FsckReport,
}

impl ParentsFirst for HistoryWalk<'_, '_> {
    type Node = VersionId;
    type Error = Infallible;

    fn enter(&mut self, v: &VersionId) -> Result<Option<Vec<VersionId>>, Infallible> {
        if self.commits.contains_key(v) || self.broken.contains(v) {
            return Ok(None);
        }
        let Some(Ok(d)) = self.data.get(v) else {
            self.broken.insert(v.clone());
            return Ok(None);
        };
        if !self.visiting.insert(v.clone()) {
            self.report.problems.push(format!(
                "error: the parents of version {v} lead back to itself (a cycle)"
            ));
            self.broken.insert(v.clone());
            return Ok(None);
        }
        Ok(Some(d.parents.iter().rev().cloned().collect()))
    }

    fn leave(&mut self, v: VersionId) -> Result<(), Infallible> {
        if self.commits.contains_key(&v) || self.broken.contains(&v) {
            return Ok(());
        }
        if !matches!(self.data.get(&v), Some(Ok(_))) {
            self.broken.insert(v);
            return Ok(());
        }
        self.visiting.remove(&v);
        self.build(v);
        Ok(())
    }
}

impl HistoryWalk<'_, '_> {
    /// Makes the commit of `v`, whose parents were all looked at: none if one has none.
    fn build(&mut self, v: VersionId) {
        let Some(Ok(s)) = self.data.remove(&v) else {
            self.broken.insert(v);
            return;
        };
        let parents: Option<Vec<ObjectId>> = (s.parents.iter())
            .map(|p| self.commits.get(p).map(|m| m.commit))
            .collect();
        let (Some(parents), Some(tree)) = (parents, s.tree()) else {
            self.broken.insert(v);
            return;
        };
        match self.in_order.build(&v, s, &parents) {
            Ok((commit, _)) => {
                self.commits.insert(v, Mapped { commit, tree });
            }
            Err(e) => {
                self.report.problems.push(format!("error: {e}"));
                self.broken.insert(v);
            }
        }
    }
}

/// Versions rewritten since the repository fetched them, and tags that moved.
fn check_against_repository(
    refs: &[(String, VersionId)],
    commits: &HashMap<VersionId, Mapped>,
    fetched: &Fetched<'_>,
    report: &mut FsckReport,
) {
    let repo = fetched.repo;
    let cached = fetched.cache.as_ref().map(|c| c.commits());
    // What the repository fetched: the cache's commits, and the remote-tracking branches'
    // (the cache is kept per lake id, so a lake replaced at the same address has none).
    let mut before: HashMap<&VersionId, ObjectId> = HashMap::new();
    if let Some(c) = cached {
        for v in commits.keys() {
            if let Some(commit) = c.get(v) {
                before.insert(v, *commit);
            }
        }
    }
    // A remote-tracking branch or a fetched tag is what the repository holds: it counts over
    // the cache.
    for (name, _) in refs {
        let local = match name.strip_prefix("refs/heads/") {
            Some(branch) => format!("refs/remotes/{}/{branch}", fetched.remote),
            None => name.clone(),
        };
        let Some(local) = repo.resolve(&local) else {
            continue;
        };
        if let Some((v, _)) = fetched_commit(repo, &local) {
            if let Some((key, _)) = commits.get_key_value(&v) {
                before.insert(key, local);
            }
        }
    }
    let mut versions: Vec<&VersionId> = commits.keys().collect();
    versions.sort();
    let mut through_parents = 0;
    for v in versions {
        let now = commits[v];
        let Some(before) = before.get(v).copied() else {
            continue;
        };
        if before == now.commit {
            continue;
        }
        // Only a commit the repository holds, and that names this version, is evidence.
        let Some((version, tree)) = fetched_commit(repo, &before) else {
            continue;
        };
        if version != *v {
            continue;
        }
        if tree == now.tree {
            // Its own files are as fetched: a version it descends from was rewritten.
            through_parents += 1;
            continue;
        }
        report.problems.push(format!(
            "error: version {v} was rewritten in the lake: the repository holds commit {before} for it, the lake now gives {}",
            now.commit
        ));
    }
    if through_parents > 0 {
        report.notes.push(format!(
            "{through_parents} more version(s) get new commits only because versions they descend from were rewritten"
        ));
    }
    check_tags(refs, commits, repo, report);
    report.notes.extend(shallow_note(repo, commits));
}

/// In a shallow repository, what it holds of the versions checked, and that the rest lie
/// below its boundary: read from the lake, not from the repository.
fn shallow_note(repo: &Repo, commits: &HashMap<VersionId, Mapped>) -> Option<String> {
    let boundary = crate::repo::shallow::read(repo.git_dir());
    if boundary.is_empty() {
        return None;
    }
    let held = commits.values().filter(|m| repo.has(&m.commit)).count();
    Some(format!(
        "this repository is shallow ({} shallow commit{}): it holds {held} of the {} versions checked; the other {} lie below its boundary and were checked in the lake only",
        boundary.len(),
        if boundary.len() == 1 { "" } else { "s" },
        commits.len(),
        commits.len() - held
    ))
}

/// The version a commit of the repository names, and its tree.
fn fetched_commit(repo: &Repo, commit: &ObjectId) -> Option<(VersionId, ObjectId)> {
    let (_, data) = repo.object(commit)?;
    let version = mapping::commit_message(&data).and_then(mapping::version_of_message)?;
    let text = std::str::from_utf8(&data).ok()?;
    let tree = ObjectId::from_hex(text.lines().next()?.strip_prefix("tree ")?)?;
    Some((version, tree))
}

/// Tags fetched into the repository that the lake now has at another version.
fn check_tags(
    refs: &[(String, VersionId)],
    commits: &HashMap<VersionId, Mapped>,
    repo: &Repo,
    report: &mut FsckReport,
) {
    for (name, v) in refs.iter().filter(|(n, _)| n.starts_with("refs/tags/")) {
        let Some(local) = repo.resolve(name) else {
            continue;
        };
        let Some(now) = commits.get(v) else { continue };
        let local_version = fetched_commit(repo, &local).map(|(version, _)| version);
        if local != now.commit && local_version.as_ref() != Some(v) {
            report.problems.push(format!(
                "error: tag {name} moved since it was fetched: the repository has {local} ({}), the lake's tag now holds version {v} ({})",
                local_version
                    .map(|l| format!("version {l}"))
                    .unwrap_or_else(|| "not a lake version".into()),
                now.commit
            ));
        }
    }
}

/// With `--catalogs`: each catalog's bytes against its record's `sha256`.
async fn check_catalogs(
    lake: &Lake,
    digests: Vec<(VersionId, Option<Box<str>>)>,
    report: &mut FsckReport,
    progress: &dyn Progress,
) {
    let mut versions: Vec<(VersionId, String)> = Vec::new();
    let mut not_digests = Vec::new();
    for (v, given) in digests {
        match given.as_deref().map(|g| (g, parse_digest(g))) {
            Some((_, Some(sha))) => versions.push((v, sha)),
            Some((g, None)) => not_digests.push(format!(
                "error: version {v}: version.json's sha256 '{}' is not a digest (64 hex digits): its catalog cannot be checked",
                crate::redact::for_terminal(g)
            )),
            None => report.notes.push(format!(
                "version {v} gives no sha256 for its catalog: not checked"
            )),
        }
    }
    not_digests.sort();
    report.problems.extend(not_digests);
    versions.sort();
    let total = versions.len() as u64;
    let mut checks = futures::stream::iter(versions)
        .map(|(v, expected)| async move {
            let got = catalog_sha256(lake, &v).await;
            (v, expected, got)
        })
        .buffer_unordered(CATALOGS_IN_FLIGHT);
    let mut done = 0;
    let mut found = Vec::new();
    while let Some((v, expected, got)) = checks.next().await {
        done += 1;
        progress.update("Checking catalogs", done, Some(total));
        match got {
            Ok(Some(got)) if got == expected => {}
            Ok(Some(got)) => found.push(format!(
                "error: version {v}: ducklake.duckdb has sha256 {got}, but version.json says {expected}"
            )),
            Ok(None) => found.push(format!("error: version {v}: ducklake.duckdb is missing")),
            Err(e) => found.push(format!("error: {e}")),
        }
    }
    if total > 0 {
        progress.finish("Checking catalogs", done, Some(total));
    }
    found.sort();
    report.problems.extend(found);
}

async fn catalog_sha256(lake: &Lake, v: &VersionId) -> Result<Option<String>, LakeError> {
    let mut hasher = Sha256::new();
    let found = lake
        .download_catalog(v, &CatalogFormat::Default, &mut |chunk| {
            hasher.update(chunk);
            Ok(())
        })
        .await?;
    Ok(found.then(|| {
        hasher
            .finalize()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }))
}
/// `git-remote-fdl fsck <lake | remote>`: a remote's fetched commits are compared with the
/// lake's.
pub async fn fsck(
    lake: &str,
    catalogs: bool,
    progress: &dyn crate::progress::Progress,
) -> Result<FsckReport, Fatal> {
    let named = open_named(lake).await?;
    let fetched = match (&named.repo, &named.remote) {
        (Some(repo), Some(remote)) => Some(Fetched::new(
            repo,
            remote,
            Some(crate::cache::Cache::load(
                repo.git_dir(),
                &named.lake.name(),
                named.lake.config().id.as_deref(),
            )),
        )),
        _ => None,
    };
    let mut report = check_lake(&named.lake, fetched, catalogs, progress).await?;
    if named.remote.is_none() {
        let note = match named.repo {
            Some(_) => {
                "this repository has no remote for this lake: versions rewritten and tags \
                        moved since a fetch cannot be seen without one"
            }
            None => {
                "outside a repository, versions rewritten and tags moved since a fetch \
                     cannot be seen"
            }
        };
        report.notes.push(format!(
            "{note} (run 'git-remote-fdl fsck <remote>' in a clone of the lake)"
        ));
    }
    Ok(report)
}
