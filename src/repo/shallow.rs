//! `$GIT_DIR/shallow`, the commits whose parents a shallow repository lacks: read, and
//! replaced as Git's `shallow.c` replaces it (`shallow.lock` created exclusively, one commit
//! ID a line in sorted order, renamed into place; removed when no commit is left shallow).

use std::collections::HashSet;
use std::io::Write;
use std::path::{Path, PathBuf};

use super::RepoError;
use crate::mapping::ObjectId;

/// Whether the repository is shallow.
pub(crate) fn exists(git_dir: &Path) -> bool {
    git_dir.join("shallow").exists()
}

/// The repository's shallow commits (none when it is complete). A line that is not a commit
/// ID is passed over, as Git passes over it.
pub(crate) fn read(git_dir: &Path) -> HashSet<ObjectId> {
    let Ok(text) = std::fs::read_to_string(git_dir.join("shallow")) else {
        return HashSet::new();
    };
    text.lines()
        .filter_map(|l| ObjectId::from_hex(l.trim()))
        .collect()
}

/// Replaces the shallow file with `commits`, or removes it when there are none.
pub(crate) fn write(git_dir: &Path, commits: &HashSet<ObjectId>) -> Result<(), RepoError> {
    let path = git_dir.join("shallow");
    let lock = git_dir.join("shallow.lock");
    let error = |path: &PathBuf, source| RepoError::Shallow {
        path: path.clone(),
        source,
    };
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&lock)
        .map_err(|e| error(&lock, e))?;
    let written = (|| {
        if commits.is_empty() {
            return match std::fs::remove_file(&path) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(error(&path, e)),
                _ => Ok(()),
            };
        }
        let mut lines: Vec<String> = commits.iter().map(|c| c.to_hex()).collect();
        lines.sort();
        let mut text = lines.join("\n");
        text.push('\n');
        file.write_all(text.as_bytes())
            .and_then(|_| file.sync_all())
            .map_err(|e| error(&lock, e))?;
        std::fs::rename(&lock, &path).map_err(|e| error(&path, e))
    })();
    if written.is_err() || commits.is_empty() {
        let _ = std::fs::remove_file(&lock);
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(byte: u8) -> ObjectId {
        ObjectId::from_hex(&format!("{byte:02x}").repeat(20)).unwrap()
    }

    #[test]
    fn written_sorted_read_back_and_removed_when_empty() {
        let dir = tempfile::tempdir().unwrap();
        let commits = HashSet::from([id(0xbb), id(0xaa)]);
        write(dir.path(), &commits).unwrap();
        let text = std::fs::read_to_string(dir.path().join("shallow")).unwrap();
        assert_eq!(text, format!("{}\n{}\n", "aa".repeat(20), "bb".repeat(20)));
        assert_eq!(read(dir.path()), commits);
        write(dir.path(), &HashSet::new()).unwrap();
        assert!(!dir.path().join("shallow").exists());
        assert!(!dir.path().join("shallow.lock").exists());
    }

    #[test]
    fn a_held_lock_is_an_error_that_names_it() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("shallow.lock"), "").unwrap();
        let e = write(dir.path(), &HashSet::from([id(1)])).unwrap_err();
        assert!(matches!(e, RepoError::Shallow { ref path, .. } if path.ends_with("shallow.lock")));
        assert!(
            dir.path().join("shallow.lock").exists(),
            "another's lock is left"
        );
    }
}
