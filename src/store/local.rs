//! A lake in a local folder: reads and listings confined to the folder, symlinks included.

use std::io::Read;
use std::path::{Path, PathBuf};

use super::StoreError;

/// A folder that holds a lake. Every path is checked to stay below `root` after symlinks.
#[derive(Debug, Clone)]
pub struct LocalDir {
    root: PathBuf,
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
        Ok(LocalDir { root })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The real path of `rel`, or `None` if nothing is there; an error if it leads outside.
    fn resolve(&self, rel: &str) -> Result<Option<PathBuf>, StoreError> {
        let joined = self.root.join(rel);
        match std::fs::canonicalize(&joined) {
            Ok(real) if real.starts_with(&self.root) => Ok(Some(real)),
            Ok(_) => Err(StoreError::OutsideRoot { path: rel.to_string() }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) if e.raw_os_error() == Some(20) => Ok(None), // ENOTDIR: a parent is a file
            Err(e) => Err(io_error(rel, e)),
        }
    }

    pub fn get(&self, rel: &str, limit: u64) -> Result<Option<Vec<u8>>, StoreError> {
        let Some(real) = self.resolve(rel)? else {
            return Ok(None);
        };
        let meta = std::fs::metadata(&real).map_err(|e| io_error(rel, e))?;
        if meta.is_dir() {
            return Err(StoreError::Failed {
                path: rel.to_string(),
                message: "is a folder, not a file".to_string(),
            });
        }
        if meta.len() > limit {
            return Err(StoreError::TooLarge { path: rel.to_string(), limit });
        }
        let mut buf = Vec::with_capacity(meta.len() as usize);
        let file = std::fs::File::open(&real).map_err(|e| io_error(rel, e))?;
        file.take(limit + 1).read_to_end(&mut buf).map_err(|e| io_error(rel, e))?;
        if buf.len() as u64 > limit {
            return Err(StoreError::TooLarge { path: rel.to_string(), limit });
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
                Err(e) if e.raw_os_error() == Some(20) => continue,
                Err(e) => return Err(io_error(&dir_rel, e)),
            };
            for entry in entries {
                let entry = entry.map_err(|e| io_error(&dir_rel, e))?;
                let Some(name) = entry.file_name().to_str().map(str::to_string) else {
                    continue; // not UTF-8: no lake path can name it
                };
                let rel = if dir_rel.is_empty() { name } else { format!("{dir_rel}/{name}") };
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

fn io_error(rel: &str, e: std::io::Error) -> StoreError {
    StoreError::Failed {
        path: rel.to_string(),
        message: e.to_string(),
    }
}
