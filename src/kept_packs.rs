//! Packs an `ls-remote` kept: the objects a listing inside a repository read but no fetch
//! took, kept under the repository's cache (`$GIT_DIR/fdl/<lake>/packs/`) for the next fetch.
//! Written whole before they are named; read in place while they wait (a listing may need a
//! commit from one); checked by Git's own `index-pack --verify` before a fetch counts on them,
//! or removed; then moved into `objects/pack/`.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use crate::cache::Cache;
use crate::mapping::ObjectId;
use crate::repo::{write_error, Repo, RepoError};
use crate::session_pack::{hex, PackWriter};

/// Completes a pack of objects no fetch took, and keeps it in `dir` (pack and index) for the
/// next fetch ([`install`]): `git ls-remote` reads the versions a fetch would, and need not
/// make the fetch read them again.
pub(crate) fn keep(writer: PackWriter, dir: &Path) -> Result<(), RepoError> {
    if writer.is_empty() {
        return Ok(());
    }
    let pack = writer.finish().map_err(|e| write_error(dir, e))?;
    let name = format!("pack-{}", hex(&pack.checksum));
    // On disk before it is named (the pack was synced as it was finished), and the folder
    // after: a crash leaves a whole pack or none, never a name for half of one. A kept pack
    // is checked again before a fetch installs it ([`KeptPacks::read`]).
    let kept = (|| -> std::io::Result<()> {
        std::fs::rename(&pack.path, dir.join(format!("{name}.pack")))?;
        std::fs::rename(&pack.index_path, dir.join(format!("{name}.idx")))?;
        std::fs::File::open(dir)?.sync_all()
    })();
    if kept.is_err() {
        let _ = std::fs::remove_file(&pack.path);
        let _ = std::fs::remove_file(&pack.index_path);
    }
    kept.map_err(|e| write_error(dir, e))
}

/// Moves kept packs into the repository's `objects/pack/` (each pack, then its index).
pub(crate) fn install(repo: &Repo, packs: &[PathBuf]) -> Result<(), RepoError> {
    let pack_dir = repo.pack_dir();
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
        moved.map_err(|e| write_error(&pack_dir, e))?;
    }
    Ok(())
}

/// Packs of objects an earlier session read but did not fetch (`git ls-remote` in this
/// repository), and the objects they hold; theirs alone while this is held ([`lock`]).
#[derive(Default)]
pub(crate) struct KeptPacks {
    pub packs: Vec<PathBuf>,
    pub ids: HashSet<ObjectId>,
    held: Option<std::fs::File>,
}

impl KeptPacks {
    /// The packs kept in `cache` that Git finds whole and in agreement with their index; any
    /// other is removed (what it held is read again from the lake), with a warning for each.
    /// None while another fetch of this repository holds them: it checks them and moves them
    /// into `objects/pack/`, and what they hold is read again from the lake.
    pub(crate) fn read(repo: &Repo, cache: Option<&Cache>) -> (KeptPacks, Vec<String>) {
        let mut kept = KeptPacks::default();
        let mut dropped = Vec::new();
        kept.held = cache.and_then(|c| lock(&c.kept_packs_dir()));
        let Some(cache) = cache.filter(|_| kept.held.is_some()) else {
            return (kept, dropped);
        };
        for idx in cache.kept_packs() {
            match check(repo, &idx) {
                Ok(ids) => {
                    kept.ids.extend(ids);
                    kept.packs.push(idx);
                }
                Err(why) => {
                    let pack = idx.with_extension("pack");
                    let _ = std::fs::remove_file(&pack);
                    let _ = std::fs::remove_file(&idx);
                    dropped.push(format!(
                        "removed {}, kept by an earlier listing: {why}; what it held is read \
                         again from the lake",
                        pack.display()
                    ));
                }
            }
        }
        (kept, dropped)
    }
}

/// The kept packs in `dir` taken for this process alone: an exclusive `flock(2)` on the file
/// `<dir>.lock` beside it, which the kernel lets go when the process ends, however it ends.
/// `None` when another process holds it, or where no lock can be had (no folder, so no packs;
/// no locks on its file system): two fetches that both took a pack would each check it and
/// move it into place, and one would find it gone, or removed by the other's failed check.
fn lock(dir: &Path) -> Option<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    if !dir.is_dir() {
        return None;
    }
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(dir.with_extension("lock"))
        .ok()?;
    let regular = file.metadata().ok()?.is_file();
    let locked = rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive);
    (regular && locked.is_ok()).then_some(file)
}

/// Why a kept pack is not used.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Unsound {
    #[error("its index is of another pack")]
    Misnamed,
    #[error("git index-pack --verify refused it: {0}")]
    Refused(#[from] crate::git::GitError),
    #[error("its index cannot be read: {0}")]
    Index(String),
}

/// The object IDs of the kept pack whose index is `idx` (`pack-<checksum>.idx`, the pack beside
/// it), once Git's `index-pack --verify` finds the pack whole and its index in agreement (the
/// pack's checksum, each object hashed, the index made again and compared).
fn check(repo: &Repo, idx: &Path) -> Result<Vec<ObjectId>, Unsound> {
    let pack = idx.with_extension("pack");
    let index = gix::odb::pack::index::File::at(idx, gix::hash::Kind::Sha1)
        .map_err(|e| Unsound::Index(e.to_string()))?;
    let name = idx.file_stem().and_then(|s| s.to_str()).unwrap_or("");
    if name.strip_prefix("pack-") != Some(&index.pack_checksum().to_hex().to_string()[..]) {
        return Err(Unsound::Misnamed);
    }
    crate::git::Git::in_repo(repo.git_dir(), ["index-pack", "--verify"])
        .arg(&pack)
        .run()?;
    let ids = index.iter().map(|e| ObjectId::try_from(e.oid.as_ref()));
    ids.collect::<Result<_, _>>()
        .map_err(|_| Unsound::Index("it names an object ID that is not SHA-1".into()))
}

/// The objects of packs kept by an earlier `ls-remote` (([`keep`])), read where they
/// wait (a listing may need a commit from them before any fetch installs them).
#[derive(Default)]
pub(crate) struct KeptObjects {
    packs: Vec<(gix::odb::pack::index::File, gix::odb::pack::data::File)>,
}

impl KeptObjects {
    /// The packs whose indexes are `indexes` (those that cannot be opened are passed over).
    pub(crate) fn open(indexes: &[PathBuf]) -> KeptObjects {
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
    pub(crate) fn commit(&self, id: &ObjectId) -> Option<Vec<u8>> {
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

#[cfg(test)]
mod tests {
    #[test]
    fn kept_packs_are_held_by_one_fetch_at_a_time() {
        let dir = tempfile::tempdir().unwrap();
        let packs = dir.path().join("packs");
        assert!(super::lock(&packs).is_none(), "no folder, nothing to hold");
        std::fs::create_dir(&packs).unwrap();
        let held = super::lock(&packs).expect("the lock");
        // Another open file, as another process's: refused while the first is held.
        assert!(super::lock(&packs).is_none());
        drop(held);
        assert!(super::lock(&packs).is_some());
    }
}
