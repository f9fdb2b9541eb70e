//! A lake in a local folder: reads and listings confined to the folder, symlinks included.

use std::collections::HashSet;
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::StoreError;

/// A folder that holds a lake. Every path is checked to stay below `root` after symlinks.
#[derive(Debug, Clone)]
pub struct LocalDir {
    root: PathBuf,
    /// Folders already seen to be real folders (not symlinks) below the root.
    checked: Arc<Mutex<HashSet<PathBuf>>>,
}

impl LocalDir {
    /// Opens `path`, which must be an existing folder.
    pub fn open(path: &Path) -> Result<LocalDir, StoreError> {
        let root = std::fs::canonicalize(path).map_err(|e| StoreError::Failed {
            path: String::new(),
            message: format!("cannot open folder {}: {e}", path.display()),
        })?;
        if !root.is_dir() {
            return Err(StoreError::Failed {
                path: String::new(),
                message: format!("{} is not a folder", path.display()),
            });
        }
        Ok(LocalDir {
            root,
            checked: Default::default(),
        })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The path of `rel`, or `None` if nothing is there; an error if it leads outside. Folders
    /// are checked with `lstat` once each; the file itself is opened without following a
    /// symlink. Only a symlink costs a full `canonicalize`.
    fn resolve(&self, rel: &str) -> Result<Option<PathBuf>, StoreError> {
        let parts: Vec<&str> = rel.split('/').filter(|p| !p.is_empty()).collect();
        let mut path = self.root.clone();
        for (i, part) in parts.iter().enumerate() {
            path.push(part);
            let is_last = i + 1 == parts.len();
            if !is_last && self.checked.lock().expect("lock").contains(&path) {
                continue;
            }
            match std::fs::symlink_metadata(&path) {
                Ok(m) if m.file_type().is_symlink() => return self.resolve_symlinked(rel),
                Ok(m) if m.is_dir() && !is_last => {
                    self.checked.lock().expect("lock").insert(path.clone());
                }
                Ok(_) => {}
                Err(e) if is_absent(&e) => return Ok(None),
                Err(e) => return Err(io_error(rel, e)),
            }
        }
        Ok(Some(path))
    }

    /// Opens the file at `rel` for reading, confined to the root.
    fn open_file(&self, rel: &str) -> Result<Option<std::fs::File>, StoreError> {
        if let Some((dir, _)) = rel.rsplit_once('/') {
            if self.resolve(dir)?.is_none() {
                return Ok(None);
            }
        }
        {
            // O_NOFOLLOW: a symlink as the last component fails with ELOOP instead of being followed.
            match std::fs::OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_NOFOLLOW)
                .open(self.root.join(rel))
            {
                Ok(f) => return Ok(Some(f)),
                Err(e) if is_absent(&e) => return Ok(None),
                Err(e) if e.raw_os_error() != Some(libc::ELOOP) => return Err(io_error(rel, e)),
                Err(_) => {}
            }
        }
        let Some(real) = self.resolve_symlinked(rel)? else {
            return Ok(None);
        };
        match std::fs::File::open(real) {
            Ok(f) => Ok(Some(f)),
            Err(e) if is_absent(&e) => Ok(None),
            Err(e) => Err(io_error(rel, e)),
        }
    }

    fn resolve_symlinked(&self, rel: &str) -> Result<Option<PathBuf>, StoreError> {
        match std::fs::canonicalize(self.root.join(rel)) {
            Ok(real) if real.starts_with(&self.root) => Ok(Some(real)),
            Ok(_) => Err(StoreError::OutsideRoot {
                path: rel.to_string(),
            }),
            Err(e) if is_absent(&e) => Ok(None),
            Err(e) => Err(io_error(rel, e)),
        }
    }

    pub fn get(&self, rel: &str, limit: u64) -> Result<Option<Vec<u8>>, StoreError> {
        let Some(file) = self.open_file(rel)? else {
            return Ok(None);
        };
        let meta = file.metadata().map_err(|e| io_error(rel, e))?;
        if meta.is_dir() {
            return Err(StoreError::Failed {
                path: rel.to_string(),
                message: "is a folder, not a file".to_string(),
            });
        }
        if meta.len() > limit {
            return Err(StoreError::TooLarge {
                path: rel.to_string(),
                limit,
            });
        }
        let mut buf = Vec::with_capacity(meta.len() as usize);
        file.take(limit + 1)
            .read_to_end(&mut buf)
            .map_err(|e| io_error(rel, e))?;
        if buf.len() as u64 > limit {
            return Err(StoreError::TooLarge {
                path: rel.to_string(),
                limit,
            });
        }
        Ok(Some(buf))
    }

    /// Every file below `prefix` (a folder path ending in `/`), as paths relative to the root.
    /// Symlinked folders are not followed; symlinked files are listed if they stay inside.
    pub fn list(&self, prefix: &str) -> Result<Vec<String>, StoreError> {
        let mut out = Vec::new();
        let mut stack = vec![prefix.trim_end_matches('/').to_string()];
        while let Some(dir_rel) = stack.pop() {
            let dir = self.root.join(&dir_rel);
            let entries = match std::fs::read_dir(&dir) {
                Ok(e) => e,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) if e.raw_os_error() == Some(libc::ENOTDIR) => continue,
                Err(e) => return Err(io_error(&dir_rel, e)),
            };
            for entry in entries {
                let entry = entry.map_err(|e| io_error(&dir_rel, e))?;
                let Some(name) = entry.file_name().to_str().map(str::to_string) else {
                    continue; // not UTF-8: no lake path can name it
                };
                let rel = if dir_rel.is_empty() {
                    name
                } else {
                    format!("{dir_rel}/{name}")
                };
                let ft = entry.file_type().map_err(|e| io_error(&rel, e))?;
                if ft.is_dir() {
                    stack.push(rel);
                } else if ft.is_file() {
                    out.push(rel);
                } else if ft.is_symlink() {
                    if let Ok(Some(real)) = self.resolve(&rel) {
                        if real.is_file() {
                            out.push(rel);
                        }
                    }
                }
            }
        }
        out.sort();
        Ok(out)
    }

    /// The names of the folders directly below `prefix`.
    pub fn list_dirs(&self, prefix: &str) -> Result<Vec<String>, StoreError> {
        let dir_rel = prefix.trim_end_matches('/');
        let entries = match std::fs::read_dir(self.root.join(dir_rel)) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(io_error(dir_rel, e)),
        };
        let mut out = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| io_error(dir_rel, e))?;
            if entry.file_type().map(|t| t.is_dir()).unwrap_or(false) {
                if let Some(name) = entry.file_name().to_str() {
                    out.push(name.to_string());
                }
            }
        }
        out.sort();
        Ok(out)
    }
}

/// Not there: missing, or a parent is a file (ENOTDIR).
fn is_absent(e: &std::io::Error) -> bool {
    e.kind() == std::io::ErrorKind::NotFound || e.raw_os_error() == Some(libc::ENOTDIR)
}

fn io_error(rel: &str, e: std::io::Error) -> StoreError {
    StoreError::Failed {
        path: rel.to_string(),
        message: e.to_string(),
    }
}
