//! The session's pack in the repository: the temporary file in `objects/pack/` that fetched
//! objects stream into, completed with its index and renamed into place, and held by a `.keep`
//! file for Git when the fetch asks for one.

use std::path::{Path, PathBuf};

use super::{hex, PackWriter};
use crate::repo::{write_error, Repo, RepoError};

/// A pack file to write fetched objects into, as they are made: a temporary file in the
/// repository's `objects/pack/`, removed unless [`install`] takes it.
pub(crate) fn writer_in(repo: &Repo) -> Result<PackWriter, RepoError> {
    let tmp = repo.temporary_pack_file("pack", "", &[])?;
    crate::cleanup::remove_on_signal(&super::index_path_of(&tmp));
    PackWriter::create(&tmp).map_err(|e| write_error(&tmp, e))
}

/// Completes a pack and makes Git see it: the pack renamed into place first, then its index,
/// each complete on disk before its rename. With `locked`, a `.keep` file is made beside it
/// before Git can see it (as `git index-pack --keep` does), for Git to remove once the fetch
/// is over. Returns how many objects it holds, and the `.keep` file.
pub(crate) fn install(
    repo: &Repo,
    writer: PackWriter,
    locked: bool,
) -> Result<(usize, Option<PathBuf>), RepoError> {
    if writer.is_empty() {
        return Ok((0, None)); // dropping the writer removes its file
    }
    crate::testhook::stop_at(crate::testhook::Point::WritingPack);
    let pack_dir = repo.pack_dir();
    let pack = writer.finish().map_err(|e| write_error(&pack_dir, e))?;
    let name = format!("pack-{}", hex(&pack.checksum));
    let tmp_idx = pack.index_path.clone();
    let keep = locked.then(|| keep_path(&pack_dir, &name));
    let keep = keep
        .transpose()
        .map_err(|e| write_error(&pack_dir, e))?
        .flatten();
    let installed = (|| -> std::io::Result<()> {
        if let Some(keep) = &keep {
            write_keep(keep, true)?;
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
        return Err(write_error(&pack_dir, e));
    }
    Ok((pack.objects, keep))
}

/// The `.keep` file of pack `name` for Git: none where the protocol line Git reads it back
/// from (and removes that file) cannot carry its path exactly (not UTF-8, or a line break).
pub(crate) fn keep_path(pack_dir: &Path, name: &str) -> std::io::Result<Option<PathBuf>> {
    let keep = std::path::absolute(pack_dir.join(format!("{name}.keep")))?;
    Ok(Some(keep).filter(|k| k.to_str().is_some_and(|t| !t.contains(['\n', '\r']))))
}

/// Writes a `.keep` file saying who holds the pack, as `git index-pack --keep` does. Without
/// `replace`, never over one already there: Git removes the file it is handed, which would
/// then be another's (a pack installed before this session).
pub(crate) fn write_keep(keep: &Path, replace: bool) -> std::io::Result<()> {
    use std::io::Write;
    let host = crate::process::host_tag();
    let why = format!("git-remote-fdl {} on {host}\n", std::process::id());
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .create(replace)
        .create_new(!replace)
        .open(keep)?;
    file.write_all(why.as_bytes())
}
