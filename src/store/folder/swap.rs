//! Conditional writes in a folder lake: compare and swap under a lock file (`lock.rs`), the new
//! content renamed into place. A failed write leaves nothing behind: no folder it made, no
//! temporary file. Every error is definite: a folder knows whether a rename happened.

use std::path::{Path, PathBuf};

use crate::store::error::StoreError;

use crate::store::folder::confined::token_of_digest;
use crate::store::folder::confined::{io_error, is_absent, not_a_file, LocalDir};
use crate::store::folder::lock::{self, Acquired, LockGuard};
use crate::testhook;

/// What a conditional write in a folder expects to find.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Expect {
    Absent,
    /// Whatever the file holds, or nothing (a delete of a file only this helper writes).
    Any,
    /// The token ([`crate::store::folder::confined::file_token`]) of the file last read.
    Token(String),
}

/// Why a conditional write in a folder did not happen.
#[derive(Debug)]
pub(crate) enum LocalWriteError {
    /// The file exists (for a create) or holds something else (for an update or delete).
    Mismatch,
    Store(StoreError),
}

impl From<StoreError> for LocalWriteError {
    fn from(e: StoreError) -> Self {
        LocalWriteError::Store(e)
    }
}

/// The largest file a conditional write compares (refs.json is the largest written).
const WRITE_READ_LIMIT: u64 = 64 << 20;

/// Linux's limits: bytes in one name, and in a whole path.
const NAME_MAX: usize = 255;
const PATH_MAX: usize = 4095;
/// What a write adds to a file's name: `.<name>.tmp-<pid>-<nanos>`.
const TMP_EXTRA: usize = 27;

/// The most empty folders removed to make room for a file.
const EMPTY_FOLDERS_REMOVED: usize = 10_000;

impl LocalDir {
    /// Writes `bytes` to `rel` if what is there matches `expect`: compare and swap, under an
    /// exclusively created `<rel>.lock`, with the new content renamed into place so readers
    /// see the old file or the new one, never a part. Returns the new token. Folders this
    /// write made are removed again when it fails.
    pub(crate) fn put(
        &self,
        rel: &str,
        bytes: &[u8],
        expect: &Expect,
    ) -> Result<String, LocalWriteError> {
        self.put_from(rel, &mut &bytes[..], expect)
    }

    /// [`LocalDir::put`] of what `source` reads, copied a piece at a time (a large file is
    /// never held in memory).
    pub(crate) fn put_from(
        &self,
        rel: &str,
        source: &mut dyn std::io::Read,
        expect: &Expect,
    ) -> Result<String, LocalWriteError> {
        self.check_length(rel)?;
        let mut made = Vec::new();
        let result = self.put_locked(rel, source, expect, &mut made);
        if result.is_err() {
            remove_folders(&made);
        }
        result
    }

    fn put_locked(
        &self,
        rel: &str,
        source: &mut dyn std::io::Read,
        expect: &Expect,
        made: &mut Vec<PathBuf>,
    ) -> Result<String, LocalWriteError> {
        let (path, _lock) = self.lock(rel, true, made)?;
        self.check(rel, expect)?;
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("file");
        let tmp = path.with_file_name(format!(".{name}.tmp-{}-{}", std::process::id(), nanos()));
        let mut hashed = Hashing::new(source);
        let written = (|| -> std::io::Result<std::fs::Metadata> {
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&tmp)?;
            std::io::copy(&mut hashed, &mut f)?;
            f.sync_all()?;
            let meta = f.metadata()?;
            if rel == "refs.json" {
                testhook::stop_at(testhook::Point::WritingRefsJson);
            }
            std::fs::rename(&tmp, &path)?;
            Ok(meta)
        })();
        match written {
            Ok(meta) => Ok(token_of_digest(&meta, hashed.digest())),
            Err(e) => {
                let _ = std::fs::remove_file(&tmp);
                // A racing writer made a folder here meanwhile.
                if matches!(e.raw_os_error(), Some(libc::EISDIR | libc::ENOTEMPTY)) {
                    return Err(StoreError::Failed {
                        path: rel.to_string(),
                        message: "is a folder, not a file".into(),
                    }
                    .into());
                }
                Err(io_error(rel, e).into())
            }
        }
    }

    /// Deletes `rel` if it holds what `expect` says, under the same lock as [`LocalDir::put`].
    /// Empty folders left behind below `refs/` are removed, as Git does.
    pub(crate) fn delete(&self, rel: &str, expect: &Expect) -> Result<(), LocalWriteError> {
        let mut made = Vec::new();
        let locked = self.lock(rel, false, &mut made);
        let (path, lock) = match locked {
            Ok(l) => l,
            Err(e) => {
                remove_folders(&made);
                return Err(e.into());
            }
        };
        if let Err(e) = self.check(rel, expect) {
            drop(lock);
            remove_folders(&made);
            return Err(e);
        }
        match std::fs::remove_file(&path) {
            Ok(()) => {}
            Err(e) if is_absent(&e) => {}
            Err(e) => return Err(io_error(rel, e).into()),
        }
        drop(lock);
        let mut dir = path.parent().map(Path::to_path_buf);
        while let Some(d) = dir {
            if d == self.root.join("refs/heads")
                || d == self.root.join("refs/tags")
                || !d.starts_with(&self.root)
                || d == self.root
            {
                break;
            }
            if std::fs::remove_dir(&d).is_err() {
                break;
            }
            dir = d.parent().map(Path::to_path_buf);
        }
        Ok(())
    }

    fn check(&self, rel: &str, expect: &Expect) -> Result<(), LocalWriteError> {
        let current = self.get_versioned(rel, WRITE_READ_LIMIT)?;
        let matches = match (expect, &current) {
            (Expect::Absent, None) | (Expect::Any, _) => true,
            (Expect::Token(t), Some((_, token))) => t == token,
            _ => false,
        };
        if matches {
            Ok(())
        } else {
            Err(LocalWriteError::Mismatch)
        }
    }

    /// Refuses, before anything is made, a path this file system cannot hold (with the lock
    /// and temporary names a write adds).
    fn check_length(&self, rel: &str) -> Result<(), StoreError> {
        let longest = rel.split('/').map(str::len).max().unwrap_or(0);
        let room = PATH_MAX.saturating_sub(self.root.as_os_str().len() + 1 + TMP_EXTRA);
        if longest + TMP_EXTRA <= NAME_MAX && rel.len() <= room {
            return Ok(());
        }
        let shown: String = rel.chars().take(60).collect();
        Err(StoreError::Failed {
            path: if shown.len() < rel.len() {
                format!("{shown}…")
            } else {
                shown
            },
            message: format!(
                "too long for this folder's file system ({} bytes, {longest} in one name; at most \
                 {room}, and {} in one name)",
                rel.len(),
                NAME_MAX - TMP_EXTRA
            ),
        })
    }

    /// Makes the folders of `rel` and takes `<rel>.lock`; again if a racing delete removed a
    /// folder in between. Temporary files of a killed write of `rel` are removed under the
    /// lock: every write makes its temporary file while it holds the lock.
    fn lock(
        &self,
        rel: &str,
        for_put: bool,
        made: &mut Vec<PathBuf>,
    ) -> Result<(PathBuf, LockGuard), StoreError> {
        for _ in 0..8 {
            let path = self.prepare_parent(rel, for_put, made)?;
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("file");
            let lock_path = path.with_file_name(format!("{name}.lock"));
            match lock::acquire(&lock_path)? {
                Acquired::Held(guard, note) => {
                    self.note(note);
                    self.remove_stale_temporaries(rel, &path);
                    return Ok((path, guard));
                }
                Acquired::FolderGone => continue,
            }
        }
        Err(StoreError::Failed {
            path: rel.to_string(),
            message: "its folder keeps disappearing (another writer removes it)".into(),
        })
    }

    fn note(&self, note: Option<String>) {
        if let Some(n) = note {
            self.notes.lock().push(n);
        }
    }

    fn remove_stale_temporaries(&self, rel: &str, path: &Path) {
        let (Some(dir), Some(name)) = (path.parent(), path.file_name().and_then(|n| n.to_str()))
        else {
            return;
        };
        let prefix = format!(".{name}.tmp-");
        // Staged locks (of any lock in this folder) are made by writers that do not hold the
        // lock yet: only old ones, or those of dead processes, are left over.
        let staged = crate::store::folder::lock::STAGED_PREFIX;
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        let removed = entries
            .flatten()
            .filter(|e| {
                e.file_name().to_str().is_some_and(|n| {
                    n.starts_with(&prefix)
                        || (n.starts_with(staged)
                            && crate::store::folder::lock::is_left_over(&e.path()))
                })
            })
            .filter(|e| std::fs::remove_file(e.path()).is_ok())
            .count();
        if removed > 0 {
            self.note(Some(format!(
                "removed {removed} temporary file(s) left by a killed write of {rel}"
            )));
        }
    }

    /// Creates the folders above `rel`, one level at a time, each checked before the next is
    /// made, so that nothing is ever created outside the root; records those it made. For a
    /// put, a tree of empty folders where the file goes is removed, as Git does.
    fn prepare_parent(
        &self,
        rel: &str,
        for_put: bool,
        made: &mut Vec<PathBuf>,
    ) -> Result<PathBuf, StoreError> {
        let parts: Vec<&str> = rel.split('/').filter(|p| !p.is_empty()).collect();
        let mut dir = self.root.clone();
        for part in &parts[..parts.len().saturating_sub(1)] {
            dir.push(part);
            match std::fs::symlink_metadata(&dir) {
                Ok(m) if m.is_dir() => {}
                Ok(m) if m.file_type().is_symlink() => {
                    let real = std::fs::canonicalize(&dir).map_err(|e| io_error(rel, e))?;
                    if !real.starts_with(&self.root) || !real.is_dir() {
                        return Err(StoreError::OutsideRoot {
                            path: rel.to_string(),
                        });
                    }
                    dir = real;
                }
                Ok(_) => {
                    return Err(StoreError::Failed {
                        path: rel.to_string(),
                        message: format!(
                            "a file stands where the folder {part}/ of this path should be"
                        ),
                    })
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    match std::fs::create_dir(&dir) {
                        Ok(()) => made.push(dir.clone()),
                        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && dir.is_dir() => {
                        }
                        Err(e) => return Err(io_error(rel, e)),
                    }
                }
                Err(e) => return Err(io_error(rel, e)),
            }
        }
        let path = dir.join(parts.last().copied().unwrap_or(""));
        match std::fs::symlink_metadata(&path) {
            // Never written through, wherever it leads: a write on condition is of the file the
            // listing saw, and a link makes that two files.
            Ok(m) if m.file_type().is_symlink() => Err(StoreError::Failed {
                path: rel.to_string(),
                message: "it is a symlink, which writes never go through (wherever it leads); \
                          replace it with the file itself"
                    .into(),
            }),
            Ok(m) if m.is_dir() && for_put && remove_empty_tree(&path) => Ok(path),
            Ok(m) if !m.is_file() => Err(not_a_file(rel, &m)),
            _ => Ok(path),
        }
    }
}

/// Removes folders a failed write made, deepest first; one that holds something stays.
fn remove_folders(made: &[PathBuf]) {
    for dir in made.iter().rev() {
        if std::fs::remove_dir(dir).is_err() {
            break;
        }
    }
}

/// Removes `dir` if it holds nothing but empty folders; whether it is gone.
fn remove_empty_tree(dir: &Path) -> bool {
    let mut order = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        if order.len() >= EMPTY_FOLDERS_REMOVED {
            return false;
        }
        let Ok(entries) = std::fs::read_dir(&d) else {
            return false;
        };
        for entry in entries {
            match entry.and_then(|e| Ok((e.file_type()?, e.path()))) {
                Ok((t, p)) if t.is_dir() => stack.push(p),
                _ => return false,
            }
        }
        order.push(d);
    }
    order.iter().rev().all(|d| std::fs::remove_dir(d).is_ok())
}

fn nanos() -> u32 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0)
}

/// A reader that hashes what passes through it (SHA-1, for the folder's version token).
struct Hashing<'a> {
    inner: &'a mut dyn std::io::Read,
    sha1: sha1::Sha1,
}

impl<'a> Hashing<'a> {
    fn new(inner: &'a mut dyn std::io::Read) -> Hashing<'a> {
        use sha1::Digest;
        Hashing {
            inner,
            sha1: sha1::Sha1::new(),
        }
    }

    fn digest(self) -> [u8; 20] {
        use sha1::Digest;
        self.sha1.finalize().into()
    }
}

impl std::io::Read for Hashing<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        use sha1::Digest;
        let n = self.inner.read(buf)?;
        self.sha1.update(&buf[..n]);
        Ok(n)
    }
}
