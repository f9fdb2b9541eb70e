//! Whether a commit the cache remembers may stand for its version, checked before a ref or a
//! new commit is made from it. A cache line's CRC catches damage, not an edit: inside a
//! repository a remembered commit is taken only if the repository (or a pack an `ls-remote`
//! kept for it) holds it, its `FDL-Version` trailer names that version, and, where the cache
//! knows the version's parents, its parents are the commits remembered for them. Otherwise the
//! version is read again from the lake. Each version is looked at once, and only those a
//! listing or a fetch reaches (tips, and the known versions new ones descend from). Outside a
//! repository there is nothing to check against (the manual says so).

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::PathBuf;

use crate::history::Known;
use crate::lake::VersionId;
use crate::mapping::ObjectId;
use crate::repo::{KeptObjects, Repo};

/// Where remembered commits are looked for: the repository, and the packs kept for it.
pub struct Objects<'a> {
    repo: &'a Repo,
    kept: KeptObjects,
}

impl<'a> Objects<'a> {
    /// The objects of `repo` and of the packs whose indexes are `kept`.
    pub fn new(repo: &'a Repo, kept: &[PathBuf]) -> Objects<'a> {
        Objects {
            repo,
            kept: KeptObjects::open(kept),
        }
    }

    /// Whether `c` is a commit here whose trailer names `v` and, when `parents` is given,
    /// whose parents are those.
    pub fn vouch(&self, v: &VersionId, c: &ObjectId, parents: Option<&[ObjectId]>) -> bool {
        let data = match self.repo.object(c) {
            Some((kind, data)) if kind == "commit" => Some(data),
            Some(_) => None,
            None => self.kept.commit(c),
        };
        let Some(data) = data else { return false };
        let message = crate::mapping::commit_message(&data);
        let names = message.and_then(crate::mapping::version_of_message);
        names.as_ref() == Some(v) && parents.is_none_or(|p| crate::repo::commit_parents(&data) == p)
    }
}

/// The cache's commits as a walk looks them up ([`Known`]), each checked against `objects`
/// the first time (none when there is no repository: then they are taken as they are).
pub struct Vetted<'a> {
    entries: &'a HashMap<VersionId, ObjectId>,
    parents: &'a HashMap<VersionId, Vec<VersionId>>,
    objects: Option<&'a Objects<'a>>,
    seen: RefCell<HashMap<VersionId, bool>>,
}

impl<'a> Vetted<'a> {
    pub fn new(
        entries: &'a HashMap<VersionId, ObjectId>,
        parents: &'a HashMap<VersionId, Vec<VersionId>>,
        objects: Option<&'a Objects<'a>>,
    ) -> Vetted<'a> {
        Vetted {
            entries,
            parents,
            objects,
            seen: RefCell::new(HashMap::new()),
        }
    }

    /// Whether the remembered commit `c` of `v` holds; its parents must be the commits
    /// remembered for the parents the cache remembers (all of them known).
    fn holds(&self, v: &VersionId, c: &ObjectId) -> bool {
        let Some(objects) = self.objects else {
            return true;
        };
        if let Some(&held) = self.seen.borrow().get(v) {
            return held;
        }
        let parents: Option<Vec<ObjectId>> = self
            .parents
            .get(v)
            .and_then(|ps| ps.iter().map(|p| self.entries.get(p).copied()).collect());
        let held = parents.is_some_and(|ps| objects.vouch(v, c, Some(&ps)));
        self.seen.borrow_mut().insert(v.clone(), held);
        held
    }
}

impl Known for Vetted<'_> {
    fn commit(&self, v: &VersionId) -> Option<ObjectId> {
        let c = self.entries.get(v)?;
        self.holds(v, c).then_some(*c)
    }

    fn newest(&self) -> Option<&VersionId> {
        self.entries.keys().max()
    }
}
