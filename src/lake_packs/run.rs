//! What a run of `pack` packs, read off its clone of the history: the versions no kept pack
//! holds (parents first), the packs it merges, and the records set aside because the clone
//! does not hold what they claim.

use std::collections::HashSet;
use std::path::Path;

use super::ahead::{self, Claimed};
use crate::git::{Git, GitError};
use crate::lake::VersionId;
use crate::mapping::ObjectId;

/// Why a step of Git in the clone gave nothing to pack.
#[derive(Debug, thiserror::Error)]
pub(crate) enum GitStepError {
    #[error(transparent)]
    Git(#[from] GitError),
    #[error("'{0}' is not a commit ID")]
    NotACommit(String),
    #[error("commit {0} names no version")]
    NoVersion(String),
}

/// The commits the refs reach that `excluded` do not, parents first, with their versions.
fn new_versions(
    repo: &Path,
    excluded: &[ObjectId],
) -> Result<Vec<(ObjectId, VersionId)>, GitStepError> {
    let log = Git::in_repo(
        repo,
        [
            "log",
            "--all",
            "--topo-order",
            "--reverse",
            "--stdin",
            "--format=%H %(trailers:key=FDL-Version,valueonly,separator=%x20)",
        ],
    );
    let out = log.stdin(exclusions(excluded)).run()?;
    let mut found = Vec::new();
    for line in out.lines() {
        let (commit, version) = line.split_once(' ').unwrap_or((line, ""));
        let commit = ObjectId::from_hex(commit)
            .ok_or_else(|| GitStepError::NotACommit(crate::redact::for_terminal(line)))?;
        let version = VersionId::parse(version.trim())
            .map_err(|_| GitStepError::NoVersion(crate::redact::for_terminal(line)))?;
        found.push((commit, version));
    }
    Ok(found)
}

/// What a run packs: the commits its pack leaves out (those of the packs it keeps), its new
/// versions (parents first), the packs it merges, every version packed before, and a warning
/// for each record set aside.
pub(super) struct Run {
    pub excluded: Vec<ObjectId>,
    pub new: Vec<(ObjectId, VersionId)>,
    pub merged: HashSet<String>,
    pub packed: HashSet<VersionId>,
    pub warnings: Vec<String>,
}

/// How much of the history a run's clone holds: all of it, every listed pack merged or not
/// (`merge_all`); or the history above the packs it keeps, as [`ahead::plan`] planned it.
pub(super) enum Scope<'a> {
    Whole { kept: &'a [String], merge_all: bool },
    Above(&'a ahead::Ahead),
}

/// The run over a clone that holds the commits `present` of those the records claim. The
/// records of the packs it may merge (all of them, or those the plan merges) are checked
/// against the clone; the newest usable packs are merged while they break a factor-2
/// progression, counted by the new versions the clone reaches (above the packs, at most the
/// plan's merge: the plan counted versions no ref reaches too); the commits of every other
/// pack the clone holds (above the packs: its shallow boundary and below) are left out.
pub(super) fn run(
    repo: &Path,
    name: &str,
    records: &[Claimed],
    present: &HashSet<ObjectId>,
    scope: Scope,
) -> Result<Run, GitStepError> {
    let may_merge = |pack: &str| match &scope {
        Scope::Whole { .. } => true,
        Scope::Above(ahead) => ahead.merged.contains(pack),
    };
    let (packed, usable, warnings) = usable_records(name, records, present, &may_merge);
    if let Scope::Whole {
        kept,
        merge_all: true,
    } = scope
    {
        return Ok(Run {
            excluded: Vec::new(),
            new: new_versions(repo, &[])?,
            merged: kept.iter().cloned().collect(),
            packed,
            warnings,
        });
    }
    let held_besides = |merged: &HashSet<String>| -> Vec<ObjectId> {
        let kept = usable.iter().filter(|(p, _)| !merged.contains(p));
        let commits = kept.flat_map(|(_, c)| c.iter().copied());
        commits.filter(|c| present.contains(c)).collect()
    };
    let mut excluded = held_besides(&HashSet::new());
    let mut new = new_versions(repo, &excluded)?;
    let sizes: Vec<_> = usable.iter().map(|(p, c)| (p.clone(), c.len())).collect();
    let merged: HashSet<String> = ahead::geometric_merge(&sizes, new.len())
        .into_iter()
        .filter(|p| may_merge(p))
        .collect();
    if !merged.is_empty() {
        excluded = held_besides(&merged);
        new = new_versions(repo, &excluded)?;
    }
    Ok(Run {
        excluded,
        new,
        merged,
        packed,
        warnings,
    })
}

/// What the usable records hold: each version packed, and each usable pack with its commits.
type Usable = (
    HashSet<VersionId>,
    Vec<(String, Vec<ObjectId>)>,
    Vec<String>,
);

/// The versions and commits of the records (in the order of `records`) whose every commit
/// the clone holds (`present`), of those `checked` names, and a warning for each other one: a
/// record naming a commit the clone lacks (its version rewritten and its pack gone, the record
/// damaged) is of no use to readers either, and its versions are packed again.
fn usable_records(
    name: &str,
    records: &[Claimed],
    present: &HashSet<ObjectId>,
    checked: &dyn Fn(&str) -> bool,
) -> Usable {
    let mut warnings = Vec::new();
    let (mut packed, mut commits) = (HashSet::new(), Vec::new());
    for (pack, versions) in records {
        let lacking = versions.iter().find(|(_, c)| !present.contains(c));
        match lacking.filter(|_| checked(pack)) {
            Some((version, commit)) => warnings.push(format!(
                "lake '{name}': git-packs/{pack}: its record names commit {} for version {version}, which the lake's versions do not make; they are packed again",
                commit.to_hex()
            )),
            None => {
                packed.extend(versions.iter().map(|(v, _)| v.clone()));
                commits.push((pack.clone(), versions.iter().map(|(_, c)| *c).collect()));
            }
        }
    }
    (packed, commits, warnings)
}

/// Every commit the clone at `repo` holds (a clone above the packs kept holds few).
pub(super) fn all_commits(repo: &Path) -> Result<HashSet<ObjectId>, GitError> {
    let out = Git::in_repo(repo, ["rev-list", "--all"]).run()?;
    Ok(out.lines().filter_map(ObjectId::from_hex).collect())
}

/// Which of `commits` the clone at `repo` holds as commits (`git cat-file --batch-check`).
pub(super) fn present_commits(
    repo: &Path,
    commits: &[ObjectId],
) -> Result<HashSet<ObjectId>, GitError> {
    if commits.is_empty() {
        return Ok(HashSet::new());
    }
    let mut stdin = Vec::with_capacity(41 * commits.len());
    for c in commits {
        c.push_hex(&mut stdin);
        stdin.push(b'\n');
    }
    let check = Git::in_repo(
        repo,
        ["cat-file", "--batch-check=%(objectname) %(objecttype)"],
    );
    let out = check.stdin(stdin).run()?;
    Ok(out
        .lines()
        .filter_map(|l| l.strip_suffix(" commit"))
        .filter_map(ObjectId::from_hex)
        .collect())
}

pub(super) fn exclusions(excluded: &[ObjectId]) -> Vec<u8> {
    let mut stdin = Vec::with_capacity(42 * excluded.len());
    for c in excluded {
        stdin.push(b'^');
        c.push_hex(&mut stdin);
        stdin.push(b'\n');
    }
    stdin
}
