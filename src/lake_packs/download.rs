//! A lake's pack in the repository: downloaded into a temporary file in `objects/pack/`,
//! indexed (`index_pack.rs`: the pack's checksum checked and every object hashed, as Git's own
//! `index-pack` does), then renamed into place under the name its checksum gives; or removed
//! again.

use std::path::{Path, PathBuf};

use crate::repo::{Repo, RepoError};

/// A temporary file in `objects/pack/` to download a lake's pack into, removed (with the index
/// and reverse index written beside it) if a signal ends the helper.
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
        pack_dir: repo.pack_dir(),
    }
}

/// Why a downloaded pack was not installed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum InstallError {
    #[error("the pack cannot be indexed: {0}")]
    Refused(#[from] super::index_pack::IndexError),
    #[error("cannot install it in {}: {source}", dir.display())]
    CannotRename {
        dir: PathBuf,
        source: std::io::Error,
    },
}

/// Installs downloaded packs into one repository's `objects/pack` ([`installer`]).
pub(crate) struct PackInstaller {
    pack_dir: PathBuf,
}

impl PackInstaller {
    /// Indexes a downloaded pack (`index_pack.rs`: its checksum checked, every object hashed,
    /// a thin or damaged pack refused), then renames pack and index into place as
    /// `pack-<checksum>`, whose name it returns. The temporary files go either way.
    pub(crate) fn install(&self, tmp: &Path) -> Result<String, InstallError> {
        let (idx, rev) = (tmp.with_extension("idx"), tmp.with_extension("rev"));
        let largest = super::verify::LARGEST_OBJECT;
        let installed = match super::index_pack::index(tmp, &idx, largest) {
            Err(e) => Err(InstallError::Refused(e)),
            Ok(hex) => {
                let name = format!("pack-{hex}");
                let pack_dir = &self.pack_dir;
                // Git never sees an index without its pack: the index goes last.
                std::fs::rename(&rev, pack_dir.join(format!("{name}.rev")))
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
