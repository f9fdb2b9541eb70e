//! Whether a commit the cache remembers may stand for its version, checked before a ref or a
//! new commit is made from it. A cache line's CRC catches damage, not an edit: inside a
//! repository a remembered commit is taken only if the repository (or a pack an `ls-remote`
//! kept for it) holds it, its `FDL-Version` trailer names that version, and, where the cache
//! knows the version's parents, its parents are the commits remembered for them. Otherwise the
//! version is read again from the lake: a commit found that says otherwise is an edit, and
//! forgotten; one found nowhere (objects pruned, a kept pack removed) is what the repository
//! read once, and the version read again must map to it (a rewrite in the lake stops the
//! fetch). Each version is looked at once, and only those a listing or a fetch reaches (tips,
//! and the known versions new ones descend from). Outside a repository there is nothing to
//! check against (the manual says so).

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::PathBuf;

use crate::cache::Cache;

use crate::history::{Known, Resolved};
use crate::kept_packs::KeptObjects;
use crate::lake::VersionId;
use crate::mapping::ObjectId;
use crate::repo::Repo;

/// Where remembered commits are looked for: the repository, and the packs kept for it.
pub(crate) struct LocalObjects<'a> {
    repo: &'a Repo,
    kept: KeptObjects,
}

impl<'a> LocalObjects<'a> {
    /// The objects of `repo` and of the packs whose indexes are `kept`.
    pub(crate) fn new(repo: &'a Repo, kept: &[PathBuf]) -> LocalObjects<'a> {
        LocalObjects {
            repo,
            kept: KeptObjects::open(kept),
        }
    }

    /// What the objects say of `c` as the commit of `v` (with those parents, when given).
    pub(crate) fn vouch(&self, v: &VersionId, c: &ObjectId, parents: Option<&[ObjectId]>) -> Seen {
        let data = match self.repo.object(c) {
            Some((gix::object::Kind::Commit, data)) => data,
            Some(_) => return Seen::Contradicted,
            None => match self.kept.commit(c) {
                Some(data) => data,
                None => return Seen::Absent,
            },
        };
        let message = crate::mapping::commit_message(&data);
        let names = message.and_then(crate::mapping::version_of_message);
        let holds = names.as_ref() == Some(v)
            && parents.is_none_or(|p| crate::repo::commit_parents(&data) == p);
        match holds {
            true => Seen::Holds,
            false => Seen::Contradicted,
        }
    }
}

/// What the objects say of a remembered commit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Seen {
    /// It is there, and names the version (with the parents expected).
    Holds,
    /// It is there and says otherwise (another version, other parents, no commit): an edit.
    Contradicted,
    /// It is nowhere to be looked at, or its parents cannot be checked.
    Absent,
}

/// The cache's commits as a walk looks them up ([`Known`]), each checked against `objects`
/// the first time (none when there is no repository: then they are taken as they are).
pub(crate) struct Vetted<'a> {
    entries: &'a HashMap<VersionId, ObjectId>,
    parents: &'a HashMap<VersionId, Vec<VersionId>>,
    objects: Option<&'a LocalObjects<'a>>,
    seen: RefCell<HashMap<VersionId, Seen>>,
}

impl<'a> Vetted<'a> {
    pub(crate) fn new(
        entries: &'a HashMap<VersionId, ObjectId>,
        parents: &'a HashMap<VersionId, Vec<VersionId>>,
        objects: Option<&'a LocalObjects<'a>>,
    ) -> Vetted<'a> {
        Vetted {
            entries,
            parents,
            objects,
            seen: RefCell::new(HashMap::new()),
        }
    }

    /// What the objects say of the remembered commit `c` of `v`: its parents must be the
    /// commits remembered for the parents the cache remembers.
    fn seen(&self, v: &VersionId, c: &ObjectId) -> Seen {
        let Some(objects) = self.objects else {
            return Seen::Holds;
        };
        if let Some(&seen) = self.seen.borrow().get(v) {
            return seen;
        }
        let parents: Option<Vec<ObjectId>> = self
            .parents
            .get(v)
            .and_then(|ps| ps.iter().map(|p| self.entries.get(p).copied()).collect());
        let seen = match parents {
            Some(ps) => objects.vouch(v, c, Some(&ps)),
            // A parent's line was lost: the version is read again, and must map to `c`.
            None => match objects.vouch(v, c, None) {
                Seen::Holds => Seen::Absent,
                other => other,
            },
        };
        self.seen.borrow_mut().insert(v.clone(), seen);
        seen
    }

    /// The commit `v` must map to when it is read again: the one remembered, unless the
    /// objects contradict it (an edit is no record of what the repository read).
    pub(crate) fn expected(&self, v: &VersionId) -> Option<ObjectId> {
        let c = self.entries.get(v)?;
        (self.seen(v, c) != Seen::Contradicted).then_some(*c)
    }
}

impl Known for Vetted<'_> {
    fn commit(&self, v: &VersionId) -> Option<ObjectId> {
        let c = self.entries.get(v)?;
        (self.seen(v, c) == Seen::Holds).then_some(*c)
    }

    fn newest(&self) -> Option<&VersionId> {
        self.entries.keys().max()
    }
}

/// A version a listing read again (its remembered commit found nowhere to check) that maps to
/// another commit than the one remembered: `(version, remembered, computed)`.
pub(crate) fn rewritten(
    resolved: &Resolved,
    vetted: &Vetted,
) -> Option<(VersionId, ObjectId, ObjectId)> {
    resolved.order.iter().find_map(|v| {
        let (cached, computed) = (vetted.expected(v)?, *resolved.commits.get(v)?);
        (cached != computed).then(|| (v.clone(), cached, computed))
    })
}

/// Where remembered commits are checked: the repository, and the packs kept
/// in `cache`; `None` outside a repository.
pub(crate) fn objects_in<'a>(
    repo: Option<&'a Repo>,
    cache: Option<&Cache>,
) -> Option<LocalObjects<'a>> {
    let kept = cache.map(Cache::kept_packs).unwrap_or_default();
    repo.map(|r| LocalObjects::new(r, &kept))
}
