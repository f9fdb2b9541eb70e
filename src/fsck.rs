//! `git-remote-fdl fsck <lake>`: checks a lake as `git fsck` checks a repository. Every version
//! the refs reach is read again and mapped again; damage is reported, one line per problem,
//! and nothing stops at the first one.

use std::collections::{BTreeMap, HashMap, HashSet};

use futures::StreamExt;
use sha2::{Digest, Sha256};

use crate::cache::Cache;
use crate::lake::catalog::{expected_sha256, CatalogFormat};
use crate::lake::files::parse_refs_json;
use crate::lake::{Lake, LakeError, VersionData, VersionId};
use crate::mapping::{self, ObjectId};
use crate::progress::Progress;
use crate::repo::Repo;
use crate::store::StoreError;

/// Catalogs checked at once (each streams through a hash: memory stays small).
const CATALOGS_IN_FLIGHT: usize = 8;

/// What `fsck` found.
#[derive(Debug, Default)]
pub struct FsckReport {
    pub refs: usize,
    pub versions: usize,
    /// One line per problem, as `git fsck` words them (`error: ...`, `missing version ...`).
    pub problems: Vec<String>,
    /// Things worth knowing that are not damage.
    pub notes: Vec<String>,
}

/// The repository a lake was fetched into, and its cache of that lake's commits.
pub struct Fetched<'a> {
    pub repo: &'a Repo,
    pub cache: Option<Cache>,
}

/// Checks `lake`; `fetched` compares it with what a repository fetched from it before.
pub async fn fsck(
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
    let data = read_reachable(lake, &refs, progress).await?;
    report.versions = data.len();
    progress.finish("Reading versions", data.len() as u64, None);
    let commits = check_history(&refs, &data, &mut report);
    if let Some(f) = &fetched {
        check_against_repository(&refs, &commits, f, &mut report);
    }
    if catalogs {
        check_catalogs(lake, &data, &mut report, progress).await;
    }
    Ok(report)
}

async fn check_head(
    lake: &Lake,
    refs: &[(String, VersionId)],
    report: &mut FsckReport,
) -> Result<(), LakeError> {
    let head = lake.head().await?;
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
    if !lake.store.can_list() {
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
    let files: BTreeMap<&str, &str> = refs.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
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

/// Reads every version the refs reach, with its `dataset.json`. Where the store can list, all
/// records are read at once and the reachable ones' datasets after; else a generation at a
/// time. Versions that cannot be read are kept as errors, for the report.
async fn read_reachable(
    lake: &Lake,
    refs: &[(String, VersionId)],
    progress: &dyn Progress,
) -> Result<HashMap<VersionId, Result<VersionData, LakeError>>, LakeError> {
    let tips: Vec<VersionId> = refs.iter().map(|(_, v)| v.clone()).collect();
    let mut data = HashMap::new();
    if lake.store.can_list() {
        let all = lake.version_ids().await?;
        read_into(lake, all, false, &mut data, progress).await;
        let reachable: Vec<VersionId> = reachable_from(&tips, &data).into_iter().collect();
        data.retain(|v, _| reachable.contains(v));
        let missing_datasets: Vec<VersionId> = reachable
            .iter()
            .filter(|v| matches!(data.get(*v), Some(Ok(d)) if !d.dataset_read))
            .cloned()
            .collect();
        let mut reads = futures::stream::iter(missing_datasets)
            .map(|v| async move { (v.clone(), lake.read_dataset(&v).await) })
            .buffer_unordered(lake.store.concurrency());
        while let Some((v, r)) = reads.next().await {
            if let Some(Ok(d)) = data.get_mut(&v) {
                match r {
                    Ok(ds) => {
                        d.dataset = ds;
                        d.dataset_read = true;
                    }
                    Err(e) => {
                        data.insert(v, Err(e));
                    }
                }
            }
        }
    } else {
        let mut frontier = tips;
        while !frontier.is_empty() {
            read_into(lake, frontier, true, &mut data, progress).await;
            frontier = reachable_from(&[], &data)
                .into_iter()
                .filter(|v| !data.contains_key(v))
                .collect();
        }
    }
    Ok(data)
}

/// Reads `ids` concurrently into `data` (a missing record reads as `Ok(None)`: not inserted).
async fn read_into(
    lake: &Lake,
    ids: Vec<VersionId>,
    with_dataset: bool,
    data: &mut HashMap<VersionId, Result<VersionData, LakeError>>,
    progress: &dyn Progress,
) {
    let mut reads = futures::stream::iter(ids)
        .map(|v| async move { (v.clone(), lake.read_version_with(&v, with_dataset).await) })
        .buffer_unordered(lake.store.concurrency());
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
        progress.update("Reading versions", data.len() as u64, None);
    }
}

/// `tips` and every version read that they reach (plus, with no tips, the parents of
/// everything read): versions not read are included, so that callers see them missing.
fn reachable_from(
    tips: &[VersionId],
    data: &HashMap<VersionId, Result<VersionData, LakeError>>,
) -> HashSet<VersionId> {
    let mut stack: Vec<VersionId> = if tips.is_empty() {
        data.values()
            .filter_map(|d| d.as_ref().ok())
            .flat_map(|d| d.record.parents.iter().cloned())
            .collect()
    } else {
        tips.to_vec()
    };
    let mut seen = HashSet::new();
    while let Some(v) = stack.pop() {
        if !seen.insert(v.clone()) {
            continue;
        }
        if let Some(Ok(d)) = data.get(&v) {
            stack.extend(d.record.parents.iter().cloned());
        }
    }
    seen
}

/// A version's commit and tree, as mapping v1 makes them now.
#[derive(Debug, Clone, Copy)]
struct Mapped {
    commit: ObjectId,
    tree: ObjectId,
}

/// Reports unreadable and missing versions and cycles; returns the commit of every version
/// whose whole history could be mapped.
fn check_history(
    refs: &[(String, VersionId)],
    data: &HashMap<VersionId, Result<VersionData, LakeError>>,
    report: &mut FsckReport,
) -> HashMap<VersionId, Mapped> {
    let mut named_by: BTreeMap<VersionId, String> = BTreeMap::new();
    for (name, v) in refs {
        named_by
            .entry(v.clone())
            .or_insert_with(|| format!("ref {name}"));
    }
    for (id, d) in data {
        for p in d.iter().flat_map(|d| d.record.parents.iter()) {
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
    for (_, tip) in refs {
        map_history(tip, data, &mut commits, &mut broken, report);
    }
    commits
}

/// Maps `tip` and its history, parents first, without recursion. A version whose history
/// holds a missing or unreadable version, or a cycle, gets no commit.
fn map_history(
    tip: &VersionId,
    data: &HashMap<VersionId, Result<VersionData, LakeError>>,
    commits: &mut HashMap<VersionId, Mapped>,
    broken: &mut HashSet<VersionId>,
    report: &mut FsckReport,
) {
    let mut visiting = HashSet::new();
    let mut stack = vec![(tip.clone(), false)];
    while let Some((v, expanded)) = stack.pop() {
        if commits.contains_key(&v) || broken.contains(&v) {
            continue;
        }
        let Some(Ok(d)) = data.get(&v) else {
            broken.insert(v);
            continue;
        };
        if expanded {
            visiting.remove(&v);
            let parents: Option<Vec<ObjectId>> = d
                .record
                .parents
                .iter()
                .map(|p| commits.get(p).map(|m| m.commit))
                .collect();
            match parents {
                Some(parents) => {
                    let objects =
                        mapping::version_objects(&v, &d.record, d.dataset.clone(), &parents);
                    let mapped = Mapped {
                        commit: objects.commit.id,
                        tree: objects.tree.id,
                    };
                    commits.insert(v, mapped);
                }
                None => {
                    broken.insert(v);
                }
            }
            continue;
        }
        if !visiting.insert(v.clone()) {
            report.problems.push(format!(
                "error: the parents of version {v} lead back to itself (a cycle)"
            ));
            broken.insert(v);
            continue;
        }
        stack.push((v.clone(), true));
        stack.extend(d.record.parents.iter().map(|p| (p.clone(), false)));
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
    let cached = fetched.cache.as_ref().map(|c| &c.entries);
    let mut versions: Vec<&VersionId> = commits.keys().collect();
    versions.sort();
    let mut through_parents = 0;
    for v in versions {
        let now = commits[v];
        let Some(before) = cached.and_then(|c| c.get(v)).copied() else {
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
    data: &HashMap<VersionId, Result<VersionData, LakeError>>,
    report: &mut FsckReport,
    progress: &dyn Progress,
) {
    let mut versions: Vec<(&VersionId, String)> = Vec::new();
    for (v, d) in data {
        let Ok(d) = d else { continue };
        match expected_sha256(&d.record, &CatalogFormat::Default) {
            Some(sha) => versions.push((v, sha)),
            None => report.notes.push(format!(
                "version {v} gives no sha256 for its catalog: not checked"
            )),
        }
    }
    versions.sort();
    let total = versions.len() as u64;
    let mut checks = futures::stream::iter(versions)
        .map(|(v, expected)| async move { (v, expected, catalog_sha256(lake, v).await) })
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
