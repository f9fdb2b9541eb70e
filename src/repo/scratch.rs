//! A bare repository of the helper's own, where a lake's packs are indexed and checked when Git
//! gave none (`git ls-remote` outside any repository): made in the user's cache folder of the
//! lake, removed when dropped (or by a signal), and one a killed helper left is removed by the
//! next one.

use std::path::{Path, PathBuf};

use super::{temporary_name, write_error, Repo, RepoError};

/// The scratch repository, removed with all it holds when dropped.
pub(crate) struct ScratchRepo {
    repo: Option<Repo>,
    dir: PathBuf,
}

impl ScratchRepo {
    /// A new bare repository in `parent` (which exists), named as the helper's temporary files
    /// are (`tmp_fdl_<pid>_<host>_check`); those of this host's dead processes go first.
    pub(crate) fn make(parent: &Path) -> Result<ScratchRepo, RepoError> {
        super::temporary::remove_stale_temporaries(parent);
        let dir = parent.join(temporary_name("check.git"));
        crate::cleanup::remove_on_signal(&dir);
        // Made before it is a repository: dropped, it is removed whatever failed below.
        let mut scratch = ScratchRepo { repo: None, dir };
        let made = crate::git::Git::elsewhere(["init", "-q", "--bare", "--template="])
            .arg(&scratch.dir)
            .run();
        if let Err(e) = made {
            let why = std::io::Error::other(e.to_string());
            return Err(write_error(&scratch.dir, why));
        }
        scratch.repo = Some(Repo::open(&scratch.dir)?);
        Ok(scratch)
    }

    /// The repository.
    pub(crate) fn repo(&self) -> &Repo {
        self.repo.as_ref().expect("made in `make`")
    }
}

impl Drop for ScratchRepo {
    fn drop(&mut self) {
        self.repo = None;
        let _ = std::fs::remove_dir_all(&self.dir);
        crate::cleanup::forget(&self.dir);
    }
}
