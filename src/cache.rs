//! The cache under the repository's git dir, an accelerator only: deleting it changes no
//! result. It remembers each version's commit and parents (versions are immutable, so what was
//! computed once holds forever), and each ref file's ETag with the version it held, so that a
//! ref unchanged since the last listing is not read again. The refs are remembered by the
//! lake's URL alone (an ETag names a file's content, whatever lake holds it): the helper needs
//! their names before `fdl.json` is read, to list the refs in the same round trip.
//!
//! The file of refs also holds the commit of each version the refs held (the tips), so that a
//! listing whose refs are all known answers without reading the commits file, whose size
//! grows with history: a no-op fetch costs O(refs), not O(versions).
//!
//! Every line carries its own checksum: a damaged line is ignored (and counted, so the caller
//! can say so), never trusted. A checksum does not catch an edit: a commit read from here is
//! checked against the repository before it is used (`vouch.rs`). New versions
//! are appended; the file is rewritten only when it was missing or unreadable.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use sha1::{Digest, Sha1};

use crate::lake::VersionId;
use crate::mapping::ObjectId;

const HEADER: &str =
    "# git-remote-fdl cache v3, mapping v1: <version> <commit> [<parent>...] <crc32>";
const REFS_HEADER: &str =
    "# git-remote-fdl refs v2: <etag> <version> <ref> | @tip <version> <commit> <crc32>";

/// The cache of one lake in one repository.
pub struct Cache {
    dir: PathBuf,
    refs_path: PathBuf,
    /// `fdl.json`'s `id` of the lake this cache is of (empty: the lake has none).
    lake_id: String,
    /// Whether the commits file was read into `entries` and `parents` ([`Cache::load_commits`]).
    loaded: bool,
    pub entries: HashMap<VersionId, ObjectId>,
    pub parents: HashMap<VersionId, Vec<VersionId>>,
    /// Lines not yet written, each with its checksum (one buffer: a first clone adds a
    /// hundred thousand), and whether the file must be written whole (it was missing, damaged
    /// or of an older format), in which case nothing is kept here.
    pending: String,
    rewrite: bool,
    /// Each ref's ETag in the last listing, with the version it held.
    pub refs: HashMap<String, (String, VersionId)>,
    /// The commit of each version the refs held at the last listing (kept in the file of refs).
    pub tips: HashMap<VersionId, ObjectId>,
    refs_changed: bool,
    /// Lines dropped on loading because their checksum failed.
    pub damaged: usize,
}

/// What the commits file holds, read apart from the [`Cache`] it belongs to (on a blocking
/// thread, while the first round trip is under way).
pub struct Commits {
    entries: HashMap<VersionId, ObjectId>,
    parents: HashMap<VersionId, Vec<VersionId>>,
    rewrite: bool,
    damaged: usize,
}

impl Commits {
    /// Reads the commits file at `path`. Gives up (with what it read, to be thrown away) once
    /// `cancel` is set.
    fn load(path: &Path, cancel: &AtomicBool) -> Commits {
        // About a hundred bytes a line: room for all of them at once, not by doubling.
        let usable = std::fs::metadata(path)
            .ok()
            .filter(|m| m.is_file() && m.len() <= CACHE_FILE_LIMIT);
        let lines = usable.map_or(0, |m| m.len() / 100) as usize;
        let mut out = Commits {
            entries: HashMap::with_capacity(lines),
            parents: HashMap::with_capacity(lines),
            rewrite: true,
            damaged: 0,
        };
        let mut seen = 0usize;
        let damaged = checked_lines(path, HEADER, |line| {
            seen += 1;
            if seen.is_multiple_of(4096) && cancel.load(Ordering::Relaxed) {
                return false;
            }
            out.take_line(line);
            true
        });
        if let Some(damaged) = damaged {
            // A damaged file is written whole again, without the lines that failed.
            out.rewrite = damaged > 0;
            out.damaged = damaged;
        }
        out
    }

    fn take_line(&mut self, line: &str) {
        let mut parts = line.split(' ');
        let (Some(v), Some(c)) = (parts.next(), parts.next()) else {
            return;
        };
        let (Ok(v), Some(c)) = (VersionId::parse(v), ObjectId::from_hex(c)) else {
            return;
        };
        let parents: Result<Vec<VersionId>, _> = parts.map(VersionId::parse).collect();
        let Ok(parents) = parents else { return };
        self.entries.insert(v.clone(), c);
        self.parents.insert(v, parents);
    }
}

/// The commits file of a cache being read on a blocking thread. Dropped unused (every ref
/// was known from the file of refs), it stops reading within a few thousand lines, so the
/// session ends without waiting for it.
pub struct Preload {
    handle: Option<tokio::task::JoinHandle<Commits>>,
    cancel: Arc<AtomicBool>,
}

impl Preload {
    /// Starts reading the commits file of `cache` (inside a tokio runtime).
    pub fn start(cache: &Cache) -> Preload {
        let (path, cancel) = (cache.path(), Arc::new(AtomicBool::new(false)));
        let flag = cancel.clone();
        let handle = tokio::task::spawn_blocking(move || Commits::load(&path, &flag));
        Preload {
            handle: Some(handle),
            cancel,
        }
    }

    /// What was read; `None` if the reading thread failed.
    pub async fn wait(mut self) -> Option<Commits> {
        self.handle.take()?.await.ok()
    }
}

impl Drop for Preload {
    fn drop(&mut self) {
        self.cancel.store(true, Ordering::Relaxed);
    }
}

impl Cache {
    /// The cache for the lake at `lake_url` (with `fdl.json`'s `id`, if any) in `git_dir`.
    pub fn load(git_dir: &Path, lake_url: &str, lake_id: Option<&str>) -> Cache {
        Cache::load_under(&git_dir.join("fdl"), lake_url, lake_id)
    }

    /// The cache for a lake in `root`, one folder a lake (keyed by its URL and `id`): a
    /// repository's `fdl/`, or the user's cache outside any repository ([`user_cache_root`]).
    pub fn load_under(root: &Path, lake_url: &str, lake_id: Option<&str>) -> Cache {
        let mut cache = Cache::open(root, lake_url, lake_id, remembered(root, lake_url));
        cache.load_commits();
        cache
    }

    /// The cache with what the file of refs `remembered` ([`remembered`]), its commits file
    /// not read yet: [`Cache::load_commits`] or [`Cache::take_commits`] when they are needed.
    /// The file of refs is kept by URL alone: what it remembers of another lake once at that
    /// URL (another `id`), or of a lake it cannot name, is not taken.
    pub fn open(
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

    /// Whether the commits file was read.
    pub fn is_loaded(&self) -> bool {
        self.loaded
    }

    /// Reads the commits file, if not read yet.
    pub fn load_commits(&mut self) {
        if !self.loaded {
            self.take_commits(Commits::load(&self.path(), &AtomicBool::new(false)));
        }
    }

    /// Takes the commits file as a [`Preload`] read it.
    pub fn take_commits(&mut self, commits: Commits) {
        self.entries = commits.entries;
        self.parents = commits.parents;
        self.rewrite = commits.rewrite;
        self.damaged = commits.damaged;
        self.pending.clear();
        self.loaded = true;
    }

    /// The commit of `version` as far as known without reading the commits file: a tip.
    pub fn known_commit(&self, version: &VersionId) -> Option<ObjectId> {
        self.tips
            .get(version)
            .or_else(|| self.entries.get(version))
            .copied()
    }

    /// Whether this is the cache of the lake whose `fdl.json` has `lake_id`.
    pub fn is_of(&self, lake_id: Option<&str>) -> bool {
        self.lake_id == lake_id.unwrap_or("")
    }

    /// Makes room for `more` versions at once (a clone adds every version of the lake).
    pub fn reserve(&mut self, more: usize) {
        self.load_commits();
        self.entries.reserve(more);
        self.parents.reserve(more);
    }

    /// Adds versions with their commits and parents; written by [`Cache::save`].
    pub fn extend(
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
    pub fn path(&self) -> PathBuf {
        self.dir.join("commits")
    }

    /// Where packs of objects read but not fetched wait for the next fetch.
    pub fn kept_packs_dir(&self) -> PathBuf {
        self.dir.join("packs")
    }

    /// The indexes of the packs waiting there.
    pub fn kept_packs(&self) -> Vec<PathBuf> {
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
    pub fn set_refs(&mut self, refs: HashMap<String, (String, VersionId)>) {
        if refs != self.refs {
            self.refs = refs;
            self.refs_changed = true;
        }
    }

    /// Remembers the commit of each version the refs of a listing held.
    pub fn set_tips(&mut self, tips: HashMap<VersionId, ObjectId>) {
        if tips != self.tips {
            self.tips = tips;
            self.refs_changed = true;
        }
    }

    /// Remembers ref files written since the last listing: `(name, etag, version)`, and the
    /// version's commit where it is known.
    pub fn remember_refs(&mut self, written: Vec<(String, String, VersionId)>) {
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
    pub fn save(&mut self) {
        if (self.pending.is_empty() && !self.rewrite) && !self.refs_changed {
            return;
        }
        if std::fs::create_dir_all(&self.dir).is_err() {
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
        if self.refs_changed {
            let mut lines: Vec<String> = self
                .refs
                .iter()
                .map(|(name, (etag, v))| format!("{etag} {v} {name}"))
                .collect();
            lines.extend(self.tips.iter().map(|(v, c)| format!("{TIP_LINE} {v} {c}")));
            lines.sort();
            // The lake's id, so that the next session finds this cache before fdl.json.
            lines.push(format!("{ID_LINE} {}", self.lake_id));
            let lines = with_checksums(&lines);
            if std::fs::create_dir_all(root_of(&self.refs_path)).is_ok()
                && replace(&self.refs_path, REFS_HEADER, &lines)
            {
                self.refs_changed = false;
            }
        }
    }
}

/// A lake's name in a cache folder: 16 hex digits of the SHA-1 of `text`.
fn key(text: &str) -> String {
    let digest: [u8; 20] = Sha1::digest(text.as_bytes()).into();
    digest[..8].iter().map(|b| format!("{b:02x}")).collect()
}

/// Where the refs of the lake at `lake_url` are remembered, under a cache `root`.
fn refs_path(root: &Path, lake_url: &str) -> PathBuf {
    root.join(format!("{}.refs", key(&format!("{lake_url}\nrefs"))))
}

fn root_of(path: &Path) -> &Path {
    path.parent().unwrap_or(Path::new("."))
}

/// What the file of refs of a lake URL remembers.
#[derive(Default)]
pub struct Remembered {
    /// `name -> (etag, version)`.
    pub refs: HashMap<String, (String, VersionId)>,
    /// The commit of each version the refs held.
    pub tips: HashMap<VersionId, ObjectId>,
    /// `fdl.json`'s `id` when the file was written (`Some("")`: the lake had none).
    pub lake_id: Option<String>,
}

/// The line of the refs file that holds the lake's id (no ref line starts with it: an ETag
/// comes first).
const ID_LINE: &str = "@lake-id";

/// The lines of the refs file that hold a tip's commit.
const TIP_LINE: &str = "@tip";

/// The refs remembered in `path`, and the lake's id.
fn remembered_refs(path: &Path) -> Remembered {
    let mut out = Remembered::default();
    checked_lines(path, REFS_HEADER, |line| {
        if let Some(id) = line.strip_prefix(ID_LINE) {
            out.lake_id = Some(id.trim_start_matches(' ').to_string());
            return true;
        }
        if let Some(tip) = line.strip_prefix(TIP_LINE) {
            let mut parts = tip.trim_start_matches(' ').split(' ');
            if let (Some(v), Some(c)) = (parts.next(), parts.next()) {
                if let (Ok(v), Some(c)) = (VersionId::parse(v), ObjectId::from_hex(c)) {
                    out.tips.insert(v, c);
                }
            }
            return true;
        }
        let mut parts = line.splitn(3, ' ');
        if let (Some(etag), Some(v), Some(name)) = (parts.next(), parts.next(), parts.next()) {
            if let Ok(v) = VersionId::parse(v) {
                out.refs.insert(name.to_string(), (etag.to_string(), v));
            }
        }
        true
    });
    out
}

/// What the file of refs of the lake at `lake_url` under `root` remembers: where to split a
/// listing of the refs, and which cache to load, before `fdl.json` is read.
pub fn remembered(root: &Path, lake_url: &str) -> Remembered {
    remembered_refs(&refs_path(root, lake_url))
}

/// The names of the refs the file of refs of `lake_url` under `root` remembers, sorted: where
/// to split a listing of the refs. Quicker than [`remembered`] (nothing parsed, nothing kept),
/// so that the first requests leave sooner.
pub fn remembered_names(root: &Path, lake_url: &str) -> Vec<String> {
    let mut names = Vec::new();
    checked_lines(&refs_path(root, lake_url), REFS_HEADER, |line| {
        if let Some(name) = line
            .splitn(3, ' ')
            .nth(2)
            .filter(|_| !line.starts_with('@'))
        {
            names.push(name.to_string());
        }
        true
    });
    names.sort();
    names
}

/// Where caches are kept: the repository's `fdl/` folder, else the user's cache.
pub fn root_for(git_dir: Option<&Path>) -> Option<PathBuf> {
    match git_dir {
        Some(d) => Some(d.join("fdl")),
        None => user_cache_root(),
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

/// Appends one commits line, with its checksum, to `out`.
fn push_line(out: &mut String, v: &VersionId, c: &ObjectId, parents: &[VersionId]) {
    use std::fmt::Write as _;
    let start = out.len();
    let _ = write!(out, "{v} {c}");
    for p in parents {
        out.push(' ');
        out.push_str(&p.as_str());
    }
    let crc = crc32fast::hash(&out.as_bytes()[start..]);
    let _ = writeln!(out, " {crc:08x}");
}

/// Each line followed by a space and its CRC-32, one per line.
fn with_checksums(lines: &[String]) -> String {
    let mut out = String::with_capacity(lines.iter().map(|l| l.len() + 10).sum());
    for l in lines {
        out.push_str(&format!("{l} {:08x}\n", crc32fast::hash(l.as_bytes())));
    }
    out
}

/// Hands each line of a cache file whose header is `header` and whose checksum holds to
/// `each` (without its checksum), until `each` says stop; returns how many failed, `None`
/// when the file is missing or has another header. Lines are not copied: a fetch of a lake of
/// 100,000 versions reads them all.
fn checked_lines(path: &Path, header: &str, mut each: impl FnMut(&str) -> bool) -> Option<usize> {
    let text = String::from_utf8(read_cache_file(path)?).ok()?;
    let mut lines = text.lines();
    if lines.next() != Some(header) {
        return None;
    }
    let checked = |l: &'_ str| -> Option<()> {
        let (body, crc) = l.rsplit_once(' ')?;
        (u32::from_str_radix(crc, 16).ok()? == crc32fast::hash(body.as_bytes())).then_some(())
    };
    let mut damaged = 0;
    for line in lines {
        match checked(line) {
            Some(()) => {
                if !each(line.rsplit_once(' ').map_or(line, |(body, _)| body)) {
                    break;
                }
            }
            None => damaged += 1,
        }
    }
    Some(damaged)
}

/// A cache file larger than this is damaged (a commits file holds about a hundred bytes a
/// version, ten million versions in this much): it is passed over, as a missing one is.
const CACHE_FILE_LIMIT: u64 = 1 << 30;

/// The cache file at `path` if it is a regular file (a FIFO or a device put in its place is
/// neither waited on nor read without end), opened for appending with `append`.
fn open_regular(path: &Path, append: bool) -> Option<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    // Looked at before it is opened (opening some devices does something), and again after.
    if !std::fs::metadata(path).ok()?.is_file() {
        return None;
    }
    let file = std::fs::OpenOptions::new()
        .read(!append)
        .append(append)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .ok()?;
    file.metadata().ok()?.is_file().then_some(file)
}

/// The bytes of the cache file at `path`: `None` if it is missing, no regular file, or larger
/// than [`CACHE_FILE_LIMIT`]. A cache is only an accelerator: what it cannot give is computed
/// again, and the file written anew in its place.
pub fn read_cache_file(path: &Path) -> Option<Vec<u8>> {
    use std::io::Read;
    let file = open_regular(path, false)?;
    let len = file.metadata().ok()?.len();
    if len > CACHE_FILE_LIMIT {
        return None;
    }
    let mut bytes = Vec::with_capacity(len as usize);
    file.take(CACHE_FILE_LIMIT + 1)
        .read_to_end(&mut bytes)
        .ok()?;
    (bytes.len() as u64 <= CACHE_FILE_LIMIT).then_some(bytes)
}

/// Writes a whole cache file (lines with their checksums) through a temporary file renamed
/// into place.
fn replace(path: &Path, header: &str, lines: &str) -> bool {
    replace_with(path, header, |out| out.write_all(lines.as_bytes()))
}

/// Writes a cache file whose lines `write` gives, through a temporary file renamed into place
/// (readers see the old file or the new one). Not flushed to disk: after a crash a file cut
/// short fails its header or its lines' checksums, and is computed again, as a missing one is;
/// a push waits for no disk.
fn replace_with(
    path: &Path,
    header: &str,
    write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> bool {
    let tmp = path.with_extension(format!("tmp.{}", std::process::id()));
    let written = std::fs::File::create(&tmp).and_then(|f| {
        let mut out = std::io::BufWriter::with_capacity(256 << 10, f);
        out.write_all(header.as_bytes())?;
        out.write_all(b"\n")?;
        write(&mut out)?;
        out.flush()
    });
    if written.is_ok() && std::fs::rename(&tmp, path).is_ok() {
        return true;
    }
    let _ = std::fs::remove_file(&tmp);
    false
}

/// Where the helper keeps caches when it runs outside any repository (`git ls-remote fdl::...`,
/// `git-remote-fdl ls`): `$XDG_CACHE_HOME/git-remote-fdl`, else `~/.cache/git-remote-fdl`.
/// `None` when neither is known (a relative `XDG_CACHE_HOME` is ignored, as the XDG spec says).
pub fn user_cache_root() -> Option<PathBuf> {
    let absolute = |v: std::ffi::OsString| Some(PathBuf::from(v)).filter(|p| p.is_absolute());
    let base = std::env::var_os("XDG_CACHE_HOME")
        .and_then(absolute)
        .or_else(|| {
            std::env::var_os("HOME")
                .and_then(absolute)
                .map(|h| h.join(".cache"))
        })?;
    Some(base.join("git-remote-fdl"))
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
