//! A lake's pack in the repository: downloaded into a temporary file in `objects/pack/`,
//! indexed by Git's own `index-pack` (which checks the pack's checksum and hashes every
//! object), then renamed into place under the name its checksum gives; or removed again.

use std::path::{Path, PathBuf};

use crate::repo::{Repo, RepoError};

/// A temporary file in `objects/pack/` to download a lake's pack into, removed (with the index
/// and reverse index Git writes beside it) if a signal ends the helper.
pub(crate) fn download_path(repo: &Repo) -> Result<PathBuf, RepoError> {
    repo.temporary_pack_file("lake", ".pack", &["idx", "rev"])
}

/// Removes pack `name` (its index and reverse index first, so that Git never sees an index
/// without its pack); a part already gone is no error.
pub(crate) fn remove(repo: &Repo, name: &str) {
    let dir = repo.pack_dir();
    for ext in ["idx", "rev", "pack"] {
        let _ = std::fs::remove_file(dir.join(format!("{name}.{ext}")));
    }
}

/// Whether the repository holds pack `name` (pack and index).
pub(crate) fn has(repo: &Repo, name: &str) -> bool {
    has_in(&repo.pack_dir(), name)
}

/// Whether folder `objects/pack` `dir` holds pack `name` (pack and index).
pub(crate) fn has_in(dir: &Path, name: &str) -> bool {
    dir.join(format!("{name}.pack")).is_file() && dir.join(format!("{name}.idx")).is_file()
}

/// What installs downloaded packs into `repo`, owned, so that it can run on a blocking thread
/// of its own while other downloads go on.
pub(crate) fn installer(repo: &Repo) -> PackInstaller {
    PackInstaller {
        git_dir: repo.git_dir().to_path_buf(),
        pack_dir: repo.pack_dir(),
    }
}

/// Why a downloaded pack was not installed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum InstallError {
    #[error("cannot run git index-pack: {0}")]
    CannotRun(crate::git::GitError),
    #[error("git index-pack refused it: {0}")]
    Refused(String),
    #[error("cannot install it in {}: {source}", dir.display())]
    CannotRename {
        dir: PathBuf,
        source: std::io::Error,
    },
}

/// Installs downloaded packs into one repository's `objects/pack` ([`installer`]).
pub(crate) struct PackInstaller {
    git_dir: PathBuf,
    pack_dir: PathBuf,
}

impl PackInstaller {
    /// Indexes a downloaded pack with Git's own `index-pack`, which checks the pack's checksum
    /// and hashes every object (a thin or damaged pack is refused), then renames pack and index
    /// into place as `pack-<checksum>`, whose name it returns. The temporary files go either way.
    pub(crate) fn install(&self, tmp: &Path) -> Result<String, InstallError> {
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
            Err(e) => Err(InstallError::CannotRun(e)),
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
                    .map_err(|source| InstallError::CannotRename {
                        dir: pack_dir.clone(),
                        source,
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
