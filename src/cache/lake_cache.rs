//! The cache of one lake in one repository: commits known, refs and tips remembered, what is
//! pending, and saving it.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

use super::commits::{Commits, HEADER};
use super::disk::{make_dir, open_regular, replace_with};
use super::lines::push_line;
use super::refs_file::{key, refs_path, remembered, write_refs_file, Remembered};
use crate::lake::VersionId;
use crate::mapping::ObjectId;

/// The cache of one lake in one repository.
pub(crate) struct Cache {
    dir: PathBuf,
    refs_path: PathBuf,
    /// The repository's `$GIT_DIR` the cache is kept in, which it never makes
    /// ([`super::disk::make_dir`]); `None` for the user's cache.
    anchor: Option<PathBuf>,
    /// `fdl.json`'s `id` of the lake this cache is of (empty: the lake has none).
    lake_id: String,
    /// Whether the commits file was read into `entries` and `parents` ([`Cache::load_commits`]).
    loaded: bool,
    entries: HashMap<VersionId, ObjectId>,
    parents: HashMap<VersionId, Vec<VersionId>>,
    /// Lines not yet written, each with its checksum (one buffer: a first clone adds a
    /// hundred thousand), and whether the file must be written whole (it was missing, damaged
    /// or of an older format), in which case nothing is kept here.
    pending: String,
    rewrite: bool,
    /// Each ref's ETag in the last listing, with the version it held.
    refs: HashMap<String, (String, VersionId)>,
    /// The commit of each version the refs held at the last listing (kept in the file of refs).
    tips: HashMap<VersionId, ObjectId>,
    refs_changed: bool,
    /// Lines dropped on loading because their checksum failed.
    damaged: usize,
}

impl Cache {
    /// The cache for the lake at `lake_url` (with `fdl.json`'s `id`, if any) in `git_dir`.
    pub(crate) fn load(git_dir: &Path, lake_url: &str, lake_id: Option<&str>) -> Cache {
        Cache::load_under(&git_dir.join("fdl"), lake_url, lake_id).inside(Some(git_dir))
    }

    /// The cache kept in the repository at `git_dir` (`None`: the user's): written only while
    /// that `$GIT_DIR` exists.
    pub(crate) fn inside(mut self, git_dir: Option<&Path>) -> Cache {
        self.anchor = git_dir.map(Path::to_path_buf);
        self
    }

    /// The cache for a lake in `root`, one folder a lake (keyed by its URL and `id`): a
    /// repository's `fdl/`, or the user's cache outside any repository ([`user_cache_root`](super::disk::user_cache_root)).
    pub(crate) fn load_under(root: &Path, lake_url: &str, lake_id: Option<&str>) -> Cache {
        let mut cache = Cache::open(root, lake_url, lake_id, remembered(root, lake_url));
        cache.load_commits();
        cache
    }

    /// The cache with what the file of refs `remembered` ([`remembered`]), its commits file
    /// not read yet: [`Cache::load_commits`] or [`Cache::take_commits`] when they are needed.
    /// The file of refs is kept by URL alone: what it remembers of another lake once at that
    /// URL (another `id`), or of a lake it cannot name, is not taken.
    pub(crate) fn open(
        root: &Path,
        lake_url: &str,
        lake_id: Option<&str>,
        mut remembered: Remembered,
    ) -> Cache {
        if remembered.lake_id.as_deref() != Some(lake_id.unwrap_or("")) {
            remembered.refs.clear();
            remembered.tips.clear();
        }
        Cache {
            dir: root.join(key(&format!("{lake_url}\n{}", lake_id.unwrap_or("")))),
            refs_path: refs_path(root, lake_url),
            anchor: None,
            lake_id: lake_id.unwrap_or("").to_string(),
            loaded: false,
            entries: HashMap::new(),
            parents: HashMap::new(),
            pending: String::new(),
            // Known once the commits file is read: nothing is written whole before.
            rewrite: false,
            refs: remembered.refs,
            tips: remembered.tips,
            refs_changed: false,
            damaged: 0,
        }
    }

    /// Each version's commit, as far as the commits file was read.
    pub(crate) fn commits(&self) -> &HashMap<VersionId, ObjectId> {
        &self.entries
    }

    /// Each version's parents, as far as the commits file was read.
    pub(crate) fn parents(&self) -> &HashMap<VersionId, Vec<VersionId>> {
        &self.parents
    }

    /// Each ref file's ETag in the last listing, with the version it held.
    pub(crate) fn ref_files(&self) -> &HashMap<String, (String, VersionId)> {
        &self.refs
    }

    /// The commit of each version the refs held at the last listing.
    pub(crate) fn tips(&self) -> &HashMap<VersionId, ObjectId> {
        &self.tips
    }

    /// Forgets a tip's commit that the repository contradicts.
    pub(crate) fn forget_tip(&mut self, version: &VersionId) {
        self.tips.remove(version);
    }

    /// Lines dropped on loading because their checksum failed.
    pub(crate) fn damaged(&self) -> usize {
        self.damaged
    }

    /// Whether the commits file was read.
    pub(crate) fn is_loaded(&self) -> bool {
        self.loaded
    }

    /// Whether the cache remembers any version's commit, without reading the commits file: a
    /// file holding more than its header does.
    pub(crate) fn remembers_commits(&self) -> bool {
        match self.loaded {
            true => !self.entries.is_empty(),
            false => {
                std::fs::metadata(self.path()).is_ok_and(|m| m.len() > HEADER.len() as u64 + 1)
            }
        }
    }

    /// Reads the commits file, if not read yet.
    pub(crate) fn load_commits(&mut self) {
        if !self.loaded {
            self.take_commits(Commits::load(&self.path(), &AtomicBool::new(false)));
        }
    }

    /// Takes the commits file as a [`Preload`](super::preload::Preload) read it.
    pub(crate) fn take_commits(&mut self, commits: Commits) {
        self.entries = commits.entries;
        self.parents = commits.parents;
        self.rewrite = commits.rewrite;
        self.damaged = commits.damaged;
        self.pending.clear();
        self.loaded = true;
    }

    /// The commit of `version` as far as known without reading the commits file: a tip.
    pub(crate) fn known_commit(&self, version: &VersionId) -> Option<ObjectId> {
        self.tips
            .get(version)
            .or_else(|| self.entries.get(version))
            .copied()
    }

    /// Whether this is the cache of the lake whose `fdl.json` has `lake_id`.
    pub(crate) fn is_of(&self, lake_id: Option<&str>) -> bool {
        self.lake_id == lake_id.unwrap_or("")
    }

    /// Makes room for `more` versions at once (a clone adds every version of the lake).
    pub(crate) fn reserve(&mut self, more: usize) {
        self.load_commits();
        self.entries.reserve(more);
        self.parents.reserve(more);
    }

    /// Adds versions with their commits and parents; written by [`Cache::save`].
    pub(crate) fn extend(
        &mut self,
        more: impl IntoIterator<Item = (VersionId, ObjectId, Vec<VersionId>)>,
    ) {
        // Appending needs to know whether the file is usable (or is written whole).
        self.load_commits();
        for (v, c, parents) in more {
            if self.entries.get(&v) == Some(&c) {
                continue;
            }
            if !self.rewrite {
                push_line(&mut self.pending, &v, &c, &parents);
            }
            self.entries.insert(v.clone(), c);
            self.parents.insert(v, parents);
        }
    }

    /// The file of versions and commits (for messages).
    pub(crate) fn path(&self) -> PathBuf {
        self.dir.join("commits")
    }

    /// Where packs of objects read but not fetched wait for the next fetch.
    pub(crate) fn kept_packs_dir(&self) -> PathBuf {
        self.dir.join("packs")
    }

    /// [`Cache::kept_packs_dir`], made if missing; `None` if it cannot be (its `$GIT_DIR` is
    /// gone: nothing is kept for a repository that is no more).
    pub(crate) fn made_kept_packs_dir(&self) -> Option<PathBuf> {
        let dir = self.kept_packs_dir();
        make_dir(&dir, self.anchor.as_deref()).then_some(dir)
    }

    /// The lake's folder of the cache, made if missing (`None` if it cannot be): where a
    /// listing outside any repository checks the lake's packs ([`crate::repo::ScratchRepo`]).
    pub(crate) fn made_dir(&self) -> Option<PathBuf> {
        make_dir(&self.dir, self.anchor.as_deref()).then(|| self.dir.clone())
    }

    /// The indexes of the packs waiting there.
    pub(crate) fn kept_packs(&self) -> Vec<PathBuf> {
        let Ok(entries) = std::fs::read_dir(self.kept_packs_dir()) else {
            return Vec::new();
        };
        let mut out: Vec<PathBuf> = entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
                name.starts_with("pack-") && name.ends_with(".idx")
            })
            .collect();
        out.sort();
        out
    }

    /// Remembers the refs of a listing: `(name, etag, version)`.
    pub(crate) fn set_refs(&mut self, refs: HashMap<String, (String, VersionId)>) {
        if refs != self.refs {
            self.refs = refs;
            self.refs_changed = true;
        }
    }

    /// Remembers the commit of each version the refs of a listing held.
    pub(crate) fn set_tips(&mut self, tips: HashMap<VersionId, ObjectId>) {
        if tips != self.tips {
            self.tips = tips;
            self.refs_changed = true;
        }
    }

    /// Remembers ref files written since the last listing: `(name, etag, version)`, and the
    /// version's commit where it is known.
    pub(crate) fn remember_refs(&mut self, written: Vec<(String, String, VersionId)>) {
        for (name, e_tag, v) in written {
            if let Some(c) = self.known_commit(&v) {
                self.tips.insert(v.clone(), c);
            }
            self.refs.insert(name, (e_tag, v));
            self.refs_changed = true;
        }
    }

    /// Writes what changed. New versions are appended; a missing or unusable file is written
    /// whole, to a temporary file renamed into place. Failure to write is not an error: it is
    /// only a cache.
    pub(crate) fn save(&mut self) {
        if (self.pending.is_empty() && !self.rewrite) && !self.refs_changed {
            return;
        }
        if !make_dir(&self.dir, self.anchor.as_deref()) {
            return;
        }
        if self.rewrite {
            if self.write_whole() {
                self.rewrite = false;
                self.pending.clear();
            }
        } else if !self.pending.is_empty() {
            let appended = open_regular(&self.dir.join("commits"), true)
                .and_then(|mut f| f.write_all(self.pending.as_bytes()).ok());
            if appended.is_some() {
                self.pending.clear();
            }
        }
        let refs_dir = self.refs_path.parent().unwrap_or(Path::new("."));
        if self.refs_changed
            && make_dir(refs_dir, self.anchor.as_deref())
            && write_refs_file(&self.refs_path, &self.refs, &self.tips, &self.lake_id)
        {
            self.refs_changed = false;
        }
    }
}

impl Cache {
    /// Writes the commits file whole, sorted, line by line through a buffer (no copy of the
    /// whole file in memory), to a temporary file renamed into place.
    fn write_whole(&self) -> bool {
        let mut sorted: Vec<&VersionId> = self.entries.keys().collect();
        sorted.sort();
        let path = self.dir.join("commits");
        let mut line = String::new();
        replace_with(&path, HEADER, |out| {
            for v in sorted {
                line.clear();
                let parents = self.parents.get(v).map_or(&[][..], |p| &p[..]);
                push_line(&mut line, v, &self.entries[v], parents);
                out.write_all(line.as_bytes())?;
            }
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vid(n: u32) -> VersionId {
        VersionId::parse(&format!("0190f3a2-7b4c-7d2e-8f10-{n:012x}")).unwrap()
    }

    #[test]
    fn entries_survive_and_damage_is_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let c1 = ObjectId([1; 20]);
        let mut c = Cache::load(dir.path(), "lake", None);
        c.extend([
            (vid(1), c1, vec![]),
            (vid(2), ObjectId([2; 20]), vec![vid(1)]),
        ]);
        c.save();
        let mut c = Cache::load(dir.path(), "lake", None);
        assert_eq!(c.entries.len(), 2);
        assert_eq!(c.parents[&vid(2)], vec![vid(1)]);
        c.extend([(vid(3), ObjectId([3; 20]), vec![vid(2)])]);
        let mut refs = HashMap::new();
        refs.insert("refs/heads/main".to_string(), ("\"e\"".to_string(), vid(3)));
        c.set_refs(refs.clone());
        c.save();
        let path = c.dir.join("commits");
        let text = std::fs::read_to_string(&path).unwrap();
        // A flipped digit in a commit: that line is dropped, not trusted.
        let damaged = text.replacen("01010101", "01010111", 1);
        std::fs::write(&path, damaged).unwrap();
        let c = Cache::load(dir.path(), "lake", None);
        assert_eq!((c.entries.len(), c.damaged), (2, 1));
        assert!(!c.entries.contains_key(&vid(1)));
        assert_eq!(c.refs, refs);
    }

    #[test]
    fn the_refs_file_names_the_lake_so_its_cache_is_found_before_fdl_json() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("fdl");
        assert!(remembered(&root, "s3://b/lake/").lake_id.is_none());
        let mut c = Cache::load_under(&root, "s3://b/lake/", Some("id-1"));
        c.extend([(vid(1), ObjectId([1; 20]), vec![])]);
        let mut refs = HashMap::new();
        refs.insert("refs/heads/main".to_string(), ("\"e\"".to_string(), vid(1)));
        c.set_refs(refs.clone());
        c.save();
        let r = remembered(&root, "s3://b/lake/");
        assert_eq!((r.refs, r.lake_id.as_deref()), (refs, Some("id-1")));
        let c = Cache::load_under(&root, "s3://b/lake/", Some("id-1"));
        assert!(c.is_of(Some("id-1")) && !c.is_of(Some("id-2")) && !c.is_of(None));
        assert_eq!(c.entries.len(), 1);
        // Another URL remembers nothing; a lake without an id is remembered as such.
        assert!(remembered(&root, "s3://b/other/").refs.is_empty());
        let mut c = Cache::load_under(&root, "s3://b/other/", None);
        c.set_refs(HashMap::from([(
            "refs/tags/v1".to_string(),
            ("\"f\"".to_string(), vid(1)),
        )]));
        c.save();
        assert_eq!(
            remembered(&root, "s3://b/other/").lake_id.as_deref(),
            Some("")
        );
        assert!(c.is_of(None));
    }

    #[test]
    fn tips_are_remembered_and_an_unread_commits_file_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("fdl");
        let mut c = Cache::load_under(&root, "s3://b/lake/", Some("id-1"));
        c.extend([(vid(1), ObjectId([1; 20]), vec![])]);
        c.set_refs(HashMap::from([(
            "refs/heads/main".to_string(),
            ("\"e\"".to_string(), vid(1)),
        )]));
        c.set_tips(HashMap::from([(vid(1), ObjectId([1; 20]))]));
        c.save();
        let r = remembered(&root, "s3://b/lake/");
        assert_eq!(r.tips, HashMap::from([(vid(1), ObjectId([1; 20]))]));
        // Opened, not read: saving changed refs leaves the commits file as it was.
        let mut c = Cache::open(&root, "s3://b/lake/", Some("id-1"), r);
        assert!(!c.is_loaded() && c.entries.is_empty());
        assert_eq!(c.known_commit(&vid(1)), Some(ObjectId([1; 20])));
        c.set_tips(HashMap::new());
        c.save();
        // Adding versions reads the file first, so it is appended to, not replaced.
        c.extend([(vid(2), ObjectId([2; 20]), vec![vid(1)])]);
        c.save();
        let c = Cache::load_under(&root, "s3://b/lake/", Some("id-1"));
        assert_eq!((c.entries.len(), c.damaged), (2, 0));
        assert!(c.tips.is_empty());
    }
}
