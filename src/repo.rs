//! The local Git repository the helper works for (Git gives it as `GIT_DIR`): which objects it
//! has, its per-remote configuration, and writing fetched objects into it as one pack.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::mapping::ObjectId;
use crate::pack::PackWriter;

#[derive(Debug, thiserror::Error)]
pub enum RepoError {
    #[error("cannot open the Git repository at {path}: {message}")]
    Open { path: PathBuf, message: String },
    #[error("this repository uses {0} object IDs, but lakes map to SHA-1 commits")]
    Sha256(String),
    #[error("cannot write fetched objects into {path}: {message}")]
    Write { path: PathBuf, message: String },
}

/// The local repository, opened from `GIT_DIR`.
pub struct Repo {
    repo: gix::Repository,
}

impl Repo {
    /// Opens the repository in `GIT_DIR`, if Git gave one (`git ls-remote` outside a repository
    /// does not).
    pub fn from_env() -> Result<Option<Repo>, RepoError> {
        let Some(dir) = std::env::var_os("GIT_DIR") else {
            return Ok(None);
        };
        Repo::open(Path::new(&dir)).map(Some)
    }

    pub fn open(dir: &Path) -> Result<Repo, RepoError> {
        let mut repo = match gix::open(dir) {
            Ok(r) => r,
            Err(e) => {
                // gix here reads SHA-1 repositories only: say why a SHA-256 one cannot be used.
                let format =
                    crate::git::Git::in_repo(dir, ["rev-parse", "--show-object-format"]).value();
                return Err(match format.as_deref() {
                    Some(f) if !f.is_empty() && f != "sha1" => RepoError::Sha256(f.to_string()),
                    _ => RepoError::Open {
                        path: dir.to_path_buf(),
                        message: e.to_string(),
                    },
                });
            }
        };
        // A missing object would make the object database rescan its packs on every lookup;
        // the helper asks about thousands of missing objects, and only it adds packs meanwhile.
        repo.objects.refresh_never();
        Ok(Repo { repo })
    }

    pub fn git_dir(&self) -> &Path {
        self.repo.git_dir()
    }

    /// Refuses repositories whose objects are not SHA-1.
    pub fn check_sha1(&self) -> Result<(), RepoError> {
        match self.repo.object_hash() {
            gix::hash::Kind::Sha1 => Ok(()),
            other => Err(RepoError::Sha256(other.to_string())),
        }
    }

    /// Whether the repository holds no object at all (a fresh clone): then no object needs
    /// looking up, which on a large history spares a probe of the loose objects per version.
    pub fn is_empty(&self) -> bool {
        let objects = self.repo.objects.store_ref().path().to_path_buf();
        if objects.join("info/alternates").exists() {
            return false;
        }
        let any = |dir: &Path, keep: &dyn Fn(&str) -> bool| {
            std::fs::read_dir(dir).is_ok_and(|entries| {
                entries
                    .flatten()
                    .any(|e| keep(&e.file_name().to_string_lossy()))
            })
        };
        let is_pack_index = |n: &str| n.ends_with(".idx");
        let is_loose_dir = |n: &str| n.len() == 2 && n.bytes().all(|b| b.is_ascii_hexdigit());
        !any(&objects.join("pack"), &is_pack_index)
            && !std::fs::read_dir(&objects).is_ok_and(|entries| {
                entries.flatten().any(|e| {
                    is_loose_dir(&e.file_name().to_string_lossy())
                        && any(&e.path(), &|_: &str| true)
                })
            })
    }

    pub fn has(&self, id: &ObjectId) -> bool {
        self.repo.has_object(gix::ObjectId::from(*id))
    }

    /// The object a push source names: a full ref name (symbolic refs followed, tags not
    /// peeled) or a hex object ID.
    pub fn resolve(&self, src: &str) -> Option<ObjectId> {
        if let Some(id) = ObjectId::from_hex(src) {
            return Some(id);
        }
        if let Ok(mut r) = self.repo.find_reference(src) {
            if let Ok(id) = r.follow_to_object() {
                return ObjectId::try_from(id.as_ref()).ok();
            }
        }
        // Git passes any expression the user pushed (`main~1`): let Git itself parse it.
        let args = ["rev-parse", "--verify", "--quiet", "--end-of-options"];
        let out = crate::git::Git::in_repo(self.git_dir(), args)
            .arg(src)
            .value()?;
        ObjectId::from_hex(&out)
    }

    /// An object's kind and content.
    pub fn object(&self, id: &ObjectId) -> Option<(gix::object::Kind, Vec<u8>)> {
        let oid = gix::ObjectId::from(*id);
        let obj = self.repo.try_find_object(oid).ok()??.detach();
        Some((obj.kind, obj.data))
    }

    /// An object's kind and size from its header, without inflating it.
    pub fn object_header(&self, id: &ObjectId) -> Option<(gix::object::Kind, u64)> {
        let oid = gix::ObjectId::from(*id);
        let header = self.repo.try_find_header(oid).ok()??;
        Some((header.kind(), header.size()))
    }

    /// The parents of a local commit (empty if it is not a commit or not here).
    pub fn parents(&self, id: &ObjectId) -> Vec<ObjectId> {
        match self.object(id) {
            Some((gix::object::Kind::Commit, data)) => commit_parents(&data),
            _ => Vec::new(),
        }
    }

    /// Whether `old` is `new` or one of its ancestors, walking the local commits.
    pub fn is_ancestor(&self, old: &ObjectId, new: &ObjectId) -> bool {
        crate::graph::reaches(vec![*new], old, |c| self.parents(c))
    }

    /// A configuration value, e.g. `remote.origin.fdlEndpoint`.
    pub fn config(&self, key: &str) -> Option<String> {
        self.repo
            .config_snapshot()
            .string(key)
            .map(|v| v.to_string())
    }

    /// A boolean as Git reads it (`true`, `yes`, `on`, `1`, a key without `=`, ...): `None`
    /// when unset, an error when the value is not a boolean.
    pub fn config_bool(&self, key: &str) -> Result<Option<bool>, String> {
        self.repo
            .config_snapshot()
            .try_boolean(key)
            .map_err(|e| e.to_string())
    }

    /// Every remote's URL as `(name, url)`, in the order of Git's configuration (a remote
    /// with several URLs once for each).
    pub fn remote_urls(&self) -> Vec<(String, String)> {
        let snapshot = self.repo.config_snapshot();
        let Some(sections) = snapshot.plumbing().sections_by_name("remote") else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for section in sections {
            let Some(name) = section.header().subsection_name() else {
                continue;
            };
            for url in section.values("url") {
                out.push((name.to_string(), url.to_string()));
            }
        }
        out
    }

    /// Every value of a multi-valued key.
    pub fn config_all(&self, key: &str) -> Vec<String> {
        self.repo
            .config_snapshot()
            .plumbing()
            .strings(key)
            .unwrap_or_default()
            .into_iter()
            .map(|v| v.to_string())
            .collect()
    }

    /// A pack file to write fetched objects into, as they are made: a temporary file in the
    /// repository's `objects/pack/`, removed unless [`Repo::install_pack`] takes it.
    pub fn pack_writer(&self) -> Result<PackWriter, RepoError> {
        let pack_dir = self.pack_dir();
        std::fs::create_dir_all(&pack_dir).map_err(|e| self.write_error(e))?;
        static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let tmp = pack_dir.join(temporary_name(&format!("pack{n}")));
        // Its name is unique to this process: left in the list once renamed, it names nothing.
        crate::cleanup::remove_on_signal(&tmp);
        PackWriter::create(&tmp).map_err(|e| self.write_error(e))
    }

    /// Completes a pack and makes Git see it: the pack renamed into place first, then its
    /// index, each complete on disk before its rename. With `locked`, a `.keep` file is made
    /// beside it before Git can see it (as `git index-pack --keep` does), for Git to remove
    /// once the fetch is over. Returns how many objects it holds, and the `.keep` file.
    pub fn install_pack(
        &self,
        writer: PackWriter,
        locked: bool,
    ) -> Result<(usize, Option<PathBuf>), RepoError> {
        if writer.is_empty() {
            return Ok((0, None)); // dropping the writer removes its file
        }
        crate::testhook::stop_at(crate::testhook::Point::WritingPack);
        let pack = writer.finish().map_err(|e| self.write_error(e))?;
        let pack_dir = self.pack_dir();
        let name = format!("pack-{}", crate::pack::hex(&pack.checksum));
        let tmp_idx = pack_dir.join(temporary_name(&format!("{name}.idx")));
        crate::cleanup::remove_on_signal(&tmp_idx);
        let keep = locked.then(|| std::path::absolute(pack_dir.join(format!("{name}.keep"))));
        let keep = keep.transpose().map_err(|e| self.write_error(e))?;
        // Git reads the path back from a protocol line and removes that file: a path that
        // line cannot carry exactly (not UTF-8, or a line break in it) is not handed over.
        let keep = keep.filter(|k| k.to_str().is_some_and(|t| !t.contains(['\n', '\r'])));
        let installed = (|| -> std::io::Result<()> {
            let mut f = std::fs::File::create(&tmp_idx)?;
            f.write_all(&pack.index)?;
            f.sync_all()?;
            if let Some(keep) = &keep {
                let why = format!("git-remote-fdl {} on {}\n", std::process::id(), host_tag());
                std::fs::write(keep, why)?;
            }
            std::fs::rename(&pack.path, pack_dir.join(format!("{name}.pack")))?;
            std::fs::rename(&tmp_idx, pack_dir.join(format!("{name}.idx")))
        })();
        if let Err(e) = installed {
            for leftover in [Some(&pack.path), Some(&tmp_idx), keep.as_ref()]
                .into_iter()
                .flatten()
            {
                let _ = std::fs::remove_file(leftover);
            }
            return Err(self.write_error(e));
        }
        Ok((pack.objects, keep))
    }

    /// Completes a pack of objects no fetch took, and keeps it in `dir` (pack and index) for
    /// the next fetch ([`Repo::install_kept`]): `git ls-remote` reads the versions a fetch
    /// would, and need not make the fetch read them again.
    pub fn keep_pack(&self, writer: PackWriter, dir: &Path) -> Result<(), RepoError> {
        if writer.is_empty() {
            return Ok(());
        }
        let pack = writer.finish().map_err(|e| self.write_error(e))?;
        let name = format!("pack-{}", crate::pack::hex(&pack.checksum));
        // On disk before it is named (the pack was synced as it was finished), and the folder
        // after: a crash leaves a whole pack or none, never a name for half of one. A kept pack
        // is checked again before a fetch installs it (`pack::check_kept`).
        let kept = (|| -> std::io::Result<()> {
            let tmp = dir.join(format!("tmp_{name}.idx"));
            let mut f = std::fs::File::create(&tmp)?;
            f.write_all(&pack.index)?;
            f.sync_all()?;
            std::fs::rename(&pack.path, dir.join(format!("{name}.pack")))?;
            std::fs::rename(&tmp, dir.join(format!("{name}.idx")))?;
            std::fs::File::open(dir)?.sync_all()
        })();
        if kept.is_err() {
            let _ = std::fs::remove_file(&pack.path);
        }
        kept.map_err(|e| self.write_error(e))
    }

    /// Moves packs kept by [`Repo::keep_pack`] into the object store (each pack, then its
    /// index). Returns how many objects they hold.
    pub fn install_kept(&self, packs: &[PathBuf]) -> Result<(), RepoError> {
        let pack_dir = self.pack_dir();
        for idx in packs {
            let (Some(name), Some(from)) = (idx.file_stem(), idx.parent()) else {
                continue;
            };
            let name = name.to_string_lossy();
            let moved = std::fs::rename(
                from.join(format!("{name}.pack")),
                pack_dir.join(format!("{name}.pack")),
            )
            .and_then(|()| std::fs::rename(idx, pack_dir.join(format!("{name}.idx"))));
            moved.map_err(|e| self.write_error(e))?;
        }
        Ok(())
    }

    /// Removes temporary pack files a killed fetch left (this host, a process that no longer
    /// exists); returns a note for each.
    pub fn remove_killed_fetch_temporaries(&self) -> Vec<String> {
        remove_stale_temporaries(&self.pack_dir())
    }

    /// Removes pack `name` (its index and reverse index first, so that Git never sees an
    /// index without its pack); a part already gone is no error.
    pub fn remove_pack(&self, name: &str) {
        let dir = self.pack_dir();
        for ext in ["idx", "rev", "pack"] {
            let _ = std::fs::remove_file(dir.join(format!("{name}.{ext}")));
        }
    }

    /// Whether the repository holds pack `name` (pack and index).
    pub fn has_pack(&self, name: &str) -> bool {
        let dir = self.pack_dir();
        dir.join(format!("{name}.pack")).is_file() && dir.join(format!("{name}.idx")).is_file()
    }

    /// A temporary file in `objects/pack/` to download a lake's pack into, removed if a signal
    /// ends the helper.
    pub fn downloaded_pack_path(&self) -> Result<PathBuf, RepoError> {
        let pack_dir = self.pack_dir();
        std::fs::create_dir_all(&pack_dir).map_err(|e| self.write_error(e))?;
        static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let tmp = pack_dir.join(temporary_name(&format!("lake{n}.pack")));
        crate::cleanup::remove_on_signal(&tmp);
        crate::cleanup::remove_on_signal(&tmp.with_extension("idx"));
        crate::cleanup::remove_on_signal(&tmp.with_extension("rev"));
        Ok(tmp)
    }

    /// What installs downloaded packs into this repository, owned, so that it can run on a
    /// blocking thread of its own while other downloads go on.
    pub fn pack_installer(&self) -> PackInstaller {
        PackInstaller {
            git_dir: self.git_dir().to_path_buf(),
            pack_dir: self.pack_dir(),
        }
    }

    fn pack_dir(&self) -> PathBuf {
        self.repo.objects.store_ref().path().join("pack")
    }

    fn write_error(&self, e: std::io::Error) -> RepoError {
        RepoError::Write {
            path: self.pack_dir(),
            message: e.to_string(),
        }
    }
}

/// The objects of packs kept by an earlier `ls-remote` ([`Repo::keep_pack`]), read where they
/// wait (a listing may need a commit from them before any fetch installs them).
#[derive(Default)]
pub struct KeptObjects {
    packs: Vec<(gix::odb::pack::index::File, gix::odb::pack::data::File)>,
}

impl KeptObjects {
    /// The packs whose indexes are `indexes` (those that cannot be opened are passed over).
    pub fn open(indexes: &[PathBuf]) -> KeptObjects {
        let sha1 = gix::hash::Kind::Sha1;
        let packs = indexes.iter().filter_map(|idx| {
            let index = gix::odb::pack::index::File::at(idx, sha1).ok()?;
            let data = gix::odb::pack::data::File::at(idx.with_extension("pack"), sha1).ok()?;
            Some((index, data))
        });
        KeptObjects {
            packs: packs.collect(),
        }
    }

    /// The content of the commit `id`, if a kept pack holds it whole (the helper writes no
    /// deltas) and it hashes to `id`.
    pub fn commit(&self, id: &ObjectId) -> Option<Vec<u8>> {
        let oid = gix::ObjectId::from(*id);
        for (index, data) in &self.packs {
            let Some(at) = index.lookup(oid) else {
                continue;
            };
            let entry = data.entry(index.pack_offset_at_index(at)).ok()?;
            let mut out = Vec::new();
            let mut inflate = gix::zlib::Inflate::default();
            let mut cache = gix::odb::pack::cache::Never;
            let outcome = data
                .decode_entry(entry, &mut out, &mut inflate, &|_, _| Ok(None), &mut cache)
                .ok()?;
            let is_commit = outcome.kind == gix::object::Kind::Commit;
            let sound =
                crate::mapping::object_id(crate::mapping::Kind::Commit, &out).ok() == Some(*id);
            return (is_commit && sound).then_some(out);
        }
        None
    }
}

/// This host's name as it goes into a file name: letters, digits, `-` and `.` only.
fn host_tag() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    host.trim()
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.'))
        .take(64)
        .collect()
}

/// `tmp_fdl_<pid>_<host>_<what>`: `tmp_` as Git's own temporary files (git gc removes old
/// ones); whose they are after it, so that a later fetch can tell one a killed fetch left.
fn temporary_name(what: &str) -> String {
    format!("tmp_fdl_{}_{}_{what}", std::process::id(), host_tag())
}

/// Removes `tmp_fdl_<pid>_<host>_*` files of this host whose process no longer exists: a
/// fetch killed while writing. Git's own temporary files are left to Git.
fn remove_stale_temporaries(pack_dir: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(pack_dir) else {
        return Vec::new();
    };
    let host = host_tag();
    let mut notes = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        let Some(pid) = stale_pid(name, &host) else {
            continue;
        };
        if std::fs::remove_file(entry.path()).is_ok() {
            notes.push(format!(
                "removed {}, left by a fetch (pid {pid}) that was killed while writing",
                entry.path().display()
            ));
        }
    }
    notes
}

/// The pid in a temporary pack file this helper names, if it is of `host` and dead.
fn stale_pid(name: &str, host: &str) -> Option<i32> {
    let rest = name.strip_prefix("tmp_fdl_")?;
    let mut parts = rest.splitn(3, '_');
    let (pid, file_host, _what) = (parts.next()?, parts.next()?, parts.next()?);
    if file_host != host {
        return None;
    }
    let pid: i32 = pid.parse().ok().filter(|p| *p > 0)?;
    crate::process::is_gone(pid).then_some(pid)
}

/// The parents of a raw commit object, as gix's commit parser reads them (up to where a
/// malformed commit stops making sense).
pub fn commit_parents(data: &[u8]) -> Vec<ObjectId> {
    gix::objs::CommitRefIter::from_bytes(data, gix::hash::Kind::Sha1)
        .parent_ids()
        .filter_map(|id| ObjectId::try_from(id.as_ref()).ok())
        .collect()
}

/// A value of the user's and the system's Git configuration, for a command run outside any
/// repository (inside one, [`Repo::config`] reads them with the repository's own).
pub fn global_config(key: &str) -> Option<String> {
    let file = gix::config::File::from_globals().ok()?;
    file.string(key).map(|v| v.to_string())
}

/// Why a downloaded pack was not installed.
#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    #[error("cannot run git index-pack: {0}")]
    CannotRun(String),
    #[error("git index-pack refused it: {0}")]
    Refused(String),
    #[error("cannot install it in {}: {why}", dir.display())]
    CannotRename { dir: PathBuf, why: String },
}

/// Installs downloaded packs into one repository's `objects/pack` (`Repo::pack_installer`).
pub struct PackInstaller {
    git_dir: PathBuf,
    pack_dir: PathBuf,
}

impl PackInstaller {
    /// Indexes a downloaded pack with Git's own `index-pack`, which checks the pack's checksum
    /// and hashes every object (a thin or damaged pack is refused), then renames pack and index
    /// into place as `pack-<checksum>`, whose name it returns. The temporary files go either way.
    pub fn install(&self, tmp: &Path) -> Result<String, InstallError> {
        let idx = tmp.with_extension("idx");
        // Git 2.41 and later write a reverse index beside `-o` (pack.writeReverseIndex): it is
        // named with the pack, as Git's own fetch keeps it, or removed.
        let rev = tmp.with_extension("rev");
        crate::cleanup::remove_on_signal(&rev);
        let out = crate::git::Git::in_repo(&self.git_dir, ["index-pack", "-o"])
            .arg(&idx)
            .arg(tmp)
            .output();
        let installed = match out {
            Err(e) => Err(InstallError::CannotRun(e.to_string())),
            Ok(out) if !out.status.success() => Err(InstallError::Refused(
                String::from_utf8_lossy(&out.stderr).trim().to_string(),
            )),
            Ok(out) => {
                let hex = String::from_utf8_lossy(&out.stdout).trim().to_string();
                let name = format!("pack-{hex}");
                let pack_dir = &self.pack_dir;
                let rev_kept = match rev.is_file() {
                    true => std::fs::rename(&rev, pack_dir.join(format!("{name}.rev"))),
                    false => Ok(()),
                };
                rev_kept
                    .and_then(|()| std::fs::rename(tmp, pack_dir.join(format!("{name}.pack"))))
                    .and_then(|()| std::fs::rename(&idx, pack_dir.join(format!("{name}.idx"))))
                    .map(|()| name)
                    .map_err(|e| InstallError::CannotRename {
                        dir: pack_dir.clone(),
                        why: e.to_string(),
                    })
            }
        };
        for left in [tmp, idx.as_path(), rev.as_path()] {
            let _ = std::fs::remove_file(left);
            crate::cleanup::forget(left);
        }
        installed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parents_are_read_from_a_commit_as_git_writes_it() {
        let (a, b) = (ObjectId([0xaa; 20]), ObjectId([0x0b; 20]));
        let tail = b"author A <a@example.org> 0 +0000\ncommitter A <a@example.org> 0 +0000\n\n\
                     parent 0123456789012345678901234567890123456789 is text, not a header\n";
        let merge = crate::mapping::commit_object(&ObjectId([1; 20]), &[a, b], tail).unwrap();
        assert_eq!(commit_parents(&merge.data), vec![a, b]);
        let root = crate::mapping::commit_object(&ObjectId([1; 20]), &[], tail).unwrap();
        assert_eq!(commit_parents(&root.data), Vec::<ObjectId>::new());
        assert_eq!(commit_parents(b"not a commit"), Vec::<ObjectId>::new());
    }
}
