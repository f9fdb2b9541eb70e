//! Temporary files in `objects/pack/` (a pack being fetched or downloaded, an index being
//! written), named so that a later fetch can tell one a killed fetch left, and remove it.

use std::path::{Path, PathBuf};

use super::{Repo, RepoError};

impl Repo {
    /// A new temporary file name in `objects/pack/` (the folder made if missing), `<what><n>`
    /// and `ext`, removed if a signal ends the helper; with each extension of `also`, the same
    /// name with that extension too (the index and reverse index Git writes beside a pack).
    pub(crate) fn temporary_pack_file(
        &self,
        what: &str,
        ext: &str,
        also: &[&str],
    ) -> Result<PathBuf, RepoError> {
        let pack_dir = self.pack_dir();
        std::fs::create_dir_all(&pack_dir).map_err(|e| write_error(&pack_dir, e))?;
        static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let tmp = pack_dir.join(temporary_name(&format!("{what}{n}{ext}")));
        // Its name is unique to this process: left in the list once renamed, it names nothing.
        crate::cleanup::remove_on_signal(&tmp);
        for ext in also {
            crate::cleanup::remove_on_signal(&tmp.with_extension(ext));
        }
        Ok(tmp)
    }

    /// Removes temporary pack files a killed fetch left (this host, a process that no longer
    /// exists); returns a note for each.
    pub(crate) fn remove_killed_fetch_temporaries(&self) -> Vec<String> {
        remove_stale_temporaries(&self.pack_dir())
    }
}

/// The error of a write under `path`.
pub(crate) fn write_error(path: &Path, source: std::io::Error) -> RepoError {
    RepoError::Write {
        path: path.to_path_buf(),
        source,
    }
}

/// `tmp_fdl_<pid>_<host>_<what>`: `tmp_` as Git's own temporary files (git gc removes old
/// ones); whose they are after it, so that a later fetch can tell one a killed fetch left.
pub(crate) fn temporary_name(what: &str) -> String {
    format!(
        "tmp_fdl_{}_{}_{what}",
        std::process::id(),
        crate::process::host_tag()
    )
}

/// Removes `tmp_fdl_<pid>_<host>_*` files of this host whose process no longer exists: a
/// fetch killed while writing (and folders: a scratch repository, [`super::ScratchRepo`]). Git's
/// own temporary files are left to Git.
pub(super) fn remove_stale_temporaries(pack_dir: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(pack_dir) else {
        return Vec::new();
    };
    let host = crate::process::host_tag();
    let mut notes = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        let Some(pid) = stale_pid(name, &host) else {
            continue;
        };
        let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
        let removed = match is_dir {
            true => std::fs::remove_dir_all(entry.path()),
            false => std::fs::remove_file(entry.path()),
        };
        if removed.is_ok() {
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
