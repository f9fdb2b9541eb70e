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

/// The run over a clone of the whole history, which holds the commits `present` of those the
/// records claim (every record merged when `merge_all`): the newest usable packs merged while
/// they break a factor-2 progression.
pub(super) fn run_whole(
    repo: &Path,
    name: &str,
    records: &[Claimed],
    present: &HashSet<ObjectId>,
    (kept, merge_all): (&[String], bool),
) -> Result<Run, GitStepError> {
    let (packed, usable, warnings) = usable_records(name, records, present, &|_| true);
    let commits_of = |merged: &HashSet<String>| -> Vec<ObjectId> {
        let unmerged = usable.iter().filter(|(p, _)| !merged.contains(p));
        unmerged.flat_map(|(_, c)| c.iter().copied()).collect()
    };
    let merged: HashSet<String> = match merge_all {
        true => kept.iter().cloned().collect(),
        false => {
            let new = new_versions(repo, &commits_of(&HashSet::new()))?;
            let sizes: Vec<_> = usable.iter().map(|(p, c)| (p.clone(), c.len())).collect();
            ahead::geometric_merge(&sizes, new.len())
        }
    };
    let excluded = match merge_all {
        true => Vec::new(),
        false => commits_of(&merged),
    };
    let new = new_versions(repo, &excluded)?;
    Ok(Run {
        excluded,
        new,
        merged,
        packed,
        warnings,
    })
}

/// The run planned ahead over a clone of the history above the packs it keeps, which holds
/// the commits `present`: the records of the packs the plan merges are checked against it,
/// the packs merged are those the versions the clone reaches call for (at most the plan's:
/// the plan counted versions no ref reaches too), and the commits of every other pack the
/// clone holds (its shallow boundary and below) are left out.
pub(super) fn run_above(
    repo: &Path,
    name: &str,
    records: &[Claimed],
    present: &HashSet<ObjectId>,
    ahead: &ahead::Ahead,
) -> Result<Run, GitStepError> {
    let planned = |pack: &str| ahead.merged.contains(pack);
    let (packed, usable, warnings) = usable_records(name, records, present, &planned);
    let held_besides = |merged: &dyn Fn(&str) -> bool| -> Vec<ObjectId> {
        let kept = usable.iter().filter(|(p, _)| !merged(p));
        let commits = kept.flat_map(|(_, c)| c.iter().copied());
        commits.filter(|c| present.contains(c)).collect()
    };
    let reached = new_versions(repo, &held_besides(&|_| false))?.len();
    let sizes: Vec<_> = usable.iter().map(|(p, c)| (p.clone(), c.len())).collect();
    let merged: HashSet<String> = ahead::geometric_merge(&sizes, reached)
        .into_iter()
        .filter(|p| planned(p))
        .collect();
    let excluded = held_besides(&|p| merged.contains(p));
    let new = new_versions(repo, &excluded)?;
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
