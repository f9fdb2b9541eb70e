//! A lake in a local folder: reads and listings confined to the folder, symlinks included.
//! Conditional writes are in `swap.rs`, their locks in `lock.rs`.

use std::collections::HashSet;
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::store::backend::{Below, Listed};
use crate::store::error::StoreError;

/// A folder that holds a lake. Every path is checked to stay below `root` after symlinks.
#[derive(Debug, Clone)]
pub(crate) struct LocalDir {
    pub(in crate::store) root: PathBuf,
    /// Folders already seen to be real folders (not symlinks) below the root.
    checked: Arc<Mutex<HashSet<PathBuf>>>,
    /// The root, open, for reads the kernel confines to it (Linux); `None` elsewhere.
    beneath: Option<Arc<beneath::Root>>,
    /// What writes repaired on their own (a stale lock removed), for the caller to show.
    pub(in crate::store) notes: Arc<Mutex<Vec<String>>>,
}

impl LocalDir {
    /// Opens `path`, which must be an existing folder.
    pub(crate) fn open(path: &Path) -> Result<LocalDir, StoreError> {
        let hint = Some(
            "a folder lake is named by the folder that holds its fdl.json, HEAD and refs/: \
             check the path"
                .to_string(),
        );
        let root = std::fs::canonicalize(path).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => StoreError::Setup {
                message: "there is no such folder".into(),
                hint: hint.clone(),
            },
            _ => StoreError::Failed {
                path: String::new(),
                message: format!("cannot open folder {}: {e}", path.display()),
            },
        })?;
        if !root.is_dir() {
            return Err(StoreError::Setup {
                message: format!("{} is a file, not a folder", path.display()),
                hint,
            });
        }
        Ok(LocalDir {
            beneath: beneath::Root::open(&root).map(Arc::new),
            root,
            checked: Default::default(),
            notes: Default::default(),
        })
    }

    /// The path of `rel`, or `None` if nothing is there; an error if it leads outside. Folders
    /// are checked with `lstat` once each; the file itself is opened without following a
    /// symlink. Only a symlink costs a full `canonicalize`.
    pub(in crate::store) fn resolve(&self, rel: &str) -> Result<Option<PathBuf>, StoreError> {
        let parts: Vec<&str> = rel.split('/').filter(|p| !p.is_empty()).collect();
        let mut path = self.root.clone();
        for (i, part) in parts.iter().enumerate() {
            path.push(part);
            let is_last = i + 1 == parts.len();
            if !is_last && self.checked.lock().contains(&path) {
                continue;
            }
            match std::fs::symlink_metadata(&path) {
                Ok(m) if m.file_type().is_symlink() => {
                    // An error names the symlink, not the path asked for below it.
                    return self.resolve_symlinked(rel).map_err(|e| match e {
                        StoreError::OutsideRoot { .. } => StoreError::OutsideRoot {
                            path: parts[..=i].join("/"),
                        },
                        other => other,
                    });
                }
                Ok(m) if m.is_dir() && !is_last => {
                    self.checked.lock().insert(path.clone());
                }
                Ok(_) => {}
                Err(e) if is_absent(&e) => return Ok(None),
                Err(e) => return Err(io_error(rel, e)),
            }
        }
        Ok(Some(path))
    }

    /// Opens the regular file at `rel` for reading, confined to the root. Never blocks: a FIFO
    /// or a device is refused before it is read, and a symlink is followed only inside the root.
    fn open_file(
        &self,
        rel: &str,
    ) -> Result<Option<(std::fs::File, std::fs::Metadata)>, StoreError> {
        // One call when the kernel can keep the path below the root itself; whatever it
        // refuses (a symlink that leaves, an absolute one) is looked at below, step by step.
        match self.beneath.as_ref().and_then(|root| root.file(rel)) {
            Some(Ok(file)) => return checked_file(rel, file).map(Some),
            Some(Err(e)) if is_absent(&e) => return Ok(None),
            Some(Err(e)) => return Err(io_error(rel, e)),
            None => {}
        }
        if let Some((dir, _)) = rel.rsplit_once('/') {
            if self.resolve(dir)?.is_none() {
                return Ok(None);
            }
        }
        let path = self.root.join(rel);
        let open = |p: &Path, flags: i32| {
            std::fs::OpenOptions::new()
                .read(true)
                // O_NONBLOCK: opening a FIFO must not wait for a writer; what was opened is
                // checked with fstat below, before anything is read.
                .custom_flags(flags | libc::O_NONBLOCK | libc::O_NOCTTY)
                .open(p)
        };
        // O_NOFOLLOW: a symlink as the last component fails with ELOOP instead of being followed.
        let file = match open(&path, libc::O_NOFOLLOW) {
            Ok(f) => f,
            Err(e) if is_absent(&e) => return Ok(None),
            Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
                let Some(real) = self.resolve_symlinked(rel)? else {
                    return Ok(None);
                };
                match open(&real, 0) {
                    Ok(f) => f,
                    Err(e) if is_absent(&e) => return Ok(None),
                    Err(e) => return Err(io_error(rel, e)),
                }
            }
            Err(e) => return Err(io_error(rel, e)),
        };
        // Checked again on the open file: what was looked at may have been swapped.
        checked_file(rel, file).map(Some)
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

    /// Whether `rel` is a regular file inside the root (a folder or nothing is not).
    pub(crate) fn is_file(&self, rel: &str) -> Result<bool, StoreError> {
        match self.resolve(rel)? {
            Some(path) => Ok(std::fs::metadata(path).is_ok_and(|m| m.is_file())),
            None => Ok(false),
        }
    }

    /// Notes gathered by writes so far.
    pub(crate) fn take_notes(&self) -> Vec<String> {
        std::mem::take(&mut *self.notes.lock())
    }

    /// The file's content with its version token ([`file_token`]).
    pub(crate) fn get_versioned(
        &self,
        rel: &str,
        limit: u64,
    ) -> Result<Option<(Vec<u8>, String)>, StoreError> {
        Ok(self.read(rel, limit)?.map(|(bytes, meta)| {
            let token = file_token(&meta, &bytes);
            (bytes, token)
        }))
    }

    /// Opens the regular file at `rel` for [`OpenFile::read_all`], its size known first and
    /// refused over `limit`.
    pub(crate) fn open_for_read(
        &self,
        rel: &str,
        limit: u64,
    ) -> Result<Option<OpenFile>, StoreError> {
        self.open_file(rel)?
            .map(|(file, meta)| OpenFile::within(file, meta.len(), rel, limit))
            .transpose()
    }

    fn read(
        &self,
        rel: &str,
        limit: u64,
    ) -> Result<Option<(Vec<u8>, std::fs::Metadata)>, StoreError> {
        let Some((file, meta)) = self.open_file(rel)? else {
            return Ok(None);
        };
        let bytes = OpenFile::within(file, meta.len(), rel, limit)?.read_all(rel, limit)?;
        Ok(Some((bytes, meta)))
    }

    /// Every file below `prefix` (a folder path ending in `/`), as paths relative to the root,
    /// and what was passed over, with why. Symlinked folders are not followed; symlinked files
    /// are listed if they stay inside.
    pub(crate) fn list(&self, prefix: &str) -> Result<Listed, StoreError> {
        let mut out = Listed::default();
        let start = prefix.trim_end_matches('/').to_string();
        // The prefix itself may be a symlink: follow it only if it stays inside the root.
        let Some(start_dir) = self.resolve(&start)? else {
            return Ok(out);
        };
        let mut stack = vec![(start_dir, start)];
        while let Some((dir, dir_rel)) = stack.pop() {
            let entries = match std::fs::read_dir(&dir) {
                Ok(e) => e,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) if e.raw_os_error() == Some(libc::ENOTDIR) => continue,
                Err(e) => return Err(io_error(&dir_rel, e)),
            };
            let join = |name: &str| match dir_rel.as_str() {
                "" => name.to_string(),
                d => format!("{d}/{name}"),
            };
            for entry in entries {
                let entry = entry.map_err(|e| io_error(&dir_rel, e))?;
                let Some(name) = entry.file_name().to_str().map(str::to_string) else {
                    let shown = entry.file_name().to_string_lossy().into_owned();
                    out.skip(
                        join(&shown),
                        "its name is not UTF-8, so no lake path can name it",
                    );
                    continue;
                };
                let rel = join(&name);
                let ft = entry.file_type().map_err(|e| io_error(&rel, e))?;
                if ft.is_dir() {
                    stack.push((entry.path(), rel));
                } else if ft.is_file() {
                    out.files.push(rel);
                } else if ft.is_symlink() {
                    match self.resolve_symlinked(&rel) {
                        Ok(Some(real)) if real.is_file() => out.files.push(rel),
                        Ok(Some(real)) if real.is_dir() => out.skip(
                            format!("{rel}/"),
                            "a symlink to a folder, which is not followed: refs under it are not read",
                        ),
                        Ok(Some(_)) => out.skip(rel, NOT_A_FILE),
                        Ok(None) => out.skip(rel, "a symlink to nothing"),
                        Err(StoreError::OutsideRoot { .. }) => {
                            out.skip(rel, "a symlink that leads outside the lake's root")
                        }
                        Err(e) => return Err(e),
                    }
                } else {
                    out.skip(rel, NOT_A_FILE);
                }
            }
        }
        out.files.sort();
        out.skipped.sort();
        Ok(out)
    }

    /// The names of the folders directly below `prefix`.
    pub(crate) fn list_dirs(&self, prefix: &str) -> Result<Below, StoreError> {
        let dir_rel = prefix.trim_end_matches('/');
        let Some(dir) = self.resolve(dir_rel)? else {
            return Ok(Below::default());
        };
        let entries = match std::fs::read_dir(dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Below::default()),
            Err(e) => return Err(io_error(dir_rel, e)),
        };
        let mut out = Below::default();
        for entry in entries {
            let entry = entry.map_err(|e| io_error(dir_rel, e))?;
            let Some(name) = entry.file_name().to_str().map(str::to_string) else {
                continue;
            };
            match entry.file_type() {
                Ok(t) if t.is_dir() => out.dirs.push(name),
                Ok(t) if t.is_file() => out.files.push(name),
                _ => {}
            }
        }
        out.dirs.sort();
        out.files.sort();
        Ok(out)
    }
}

/// A file opened for reading, with its size as `fstat` gave it.
pub(crate) struct OpenFile {
    file: std::fs::File,
    len: u64,
}

impl OpenFile {
    /// The file `fstat` gave `len` bytes for, refused if that is more than `limit`.
    fn within(
        file: std::fs::File,
        len: u64,
        rel: &str,
        limit: u64,
    ) -> Result<OpenFile, StoreError> {
        match len > limit {
            true => Err(StoreError::TooLarge {
                path: rel.to_string(),
                limit,
            }),
            false => Ok(OpenFile { file, len }),
        }
    }

    pub(crate) fn len(&self) -> u64 {
        self.len
    }

    /// Reads the whole file in as few reads as it takes. Lake files are written whole and
    /// renamed into place, so an open file does not grow; more than `limit` bytes is refused.
    pub(crate) fn read_all(mut self, rel: &str, limit: u64) -> Result<Vec<u8>, StoreError> {
        let mut buf = vec![0u8; self.len.min(limit) as usize];
        let mut filled = 0;
        while filled < buf.len() {
            match self
                .file
                .read(&mut buf[filled..])
                .map_err(|e| io_error(rel, e))?
            {
                0 => break,
                n => filled += n,
            }
        }
        buf.truncate(filled);
        Ok(buf)
    }
}

/// The file opened for `rel` with its metadata, if it is a regular file.
fn checked_file(
    rel: &str,
    file: std::fs::File,
) -> Result<(std::fs::File, std::fs::Metadata), StoreError> {
    let meta = file.metadata().map_err(|e| io_error(rel, e))?;
    if !meta.is_file() {
        return Err(not_a_file(rel, &meta));
    }
    Ok((file, meta))
}

/// Reads confined by the kernel: `openat2(2)` with `RESOLVE_BENEATH` from the open root
/// resolves a path in one call and fails, rather than leave the root, on any `..` or symlink
/// that would lead out of it. A version read is then one call where checking each folder
/// with `lstat` took three.
#[cfg(target_os = "linux")]
mod beneath {
    use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

    use rustix::fs::{Mode, OFlags, ResolveFlags};
    use rustix::io::Errno;

    /// Set once the kernel turned `openat2` down as unknown (before Linux 5.6, or a sandbox
    /// that filters it): every read then takes the checks of `LocalDir::open_file`.
    static UNSUPPORTED: AtomicBool = AtomicBool::new(false);

    #[derive(Debug)]
    pub(in crate::store) struct Root(std::os::fd::OwnedFd);

    impl Root {
        pub(in crate::store) fn open(root: &std::path::Path) -> Option<Root> {
            let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
            rustix::fs::open(root, flags, Mode::empty()).ok().map(Root)
        }

        /// The regular file or other node at `rel`, opened for reading without blocking (a
        /// FIFO's open does not wait for a writer; the caller checks what it is). `None` when
        /// the kernel would not resolve it here: the caller looks at it step by step.
        pub(in crate::store) fn file(&self, rel: &str) -> Option<std::io::Result<std::fs::File>> {
            if UNSUPPORTED.load(Relaxed) {
                return None;
            }
            let flags = OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC;
            let resolve = ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS;
            match rustix::fs::openat2(&self.0, rel, flags, Mode::empty(), resolve) {
                Ok(fd) => Some(Ok(std::fs::File::from(fd))),
                // Leaving the root, an absolute symlink, too many links, a race with a rename.
                Err(Errno::XDEV | Errno::LOOP | Errno::AGAIN) => None,
                Err(Errno::NOSYS | Errno::INVAL | Errno::TOOBIG | Errno::PERM) => {
                    UNSUPPORTED.store(true, Relaxed);
                    None
                }
                Err(e) => Some(Err(e.into())),
            }
        }
    }
}

/// Elsewhere every read takes the checks of `LocalDir::open_file`.
#[cfg(not(target_os = "linux"))]
mod beneath {
    #[derive(Debug)]
    pub struct Root;

    impl Root {
        pub fn open(_: &std::path::Path) -> Option<Root> {
            None
        }

        pub fn file(&self, _: &str) -> Option<std::io::Result<std::fs::File>> {
            None
        }
    }
}

const NOT_A_FILE: &str = "not a regular file (a FIFO, socket or device)";

pub(in crate::store) fn not_a_file(rel: &str, meta: &std::fs::Metadata) -> StoreError {
    let what = if meta.is_dir() {
        "a folder"
    } else {
        "not a regular file (a FIFO, socket or device)"
    };
    StoreError::Failed {
        path: rel.to_string(),
        message: format!("is {what}, not a file"),
    }
}

/// Not there: missing, a parent is a file (ENOTDIR), or a path too long to exist.
pub(in crate::store) fn is_absent(e: &std::io::Error) -> bool {
    e.kind() == std::io::ErrorKind::NotFound
        || matches!(e.raw_os_error(), Some(libc::ENOTDIR | libc::ENAMETOOLONG))
}

/// A folder's version token: the file's inode and modification time with its content's
/// SHA-1. Every write renames a new file into place, so a file rewritten with the same bytes
/// (A, then B, then A again) still gets a new token, as an ETag or a generation would.
pub(crate) fn file_token(meta: &std::fs::Metadata, bytes: &[u8]) -> String {
    use sha1::Digest;
    token_of_digest(meta, sha1::Sha1::digest(bytes).into())
}

/// [`file_token`] of a file whose content's SHA-1 is `d`.
pub(crate) fn token_of_digest(meta: &std::fs::Metadata, d: [u8; 20]) -> String {
    use std::os::unix::fs::MetadataExt;
    let hex: String = d.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "{}.{}.{}:{hex}",
        meta.ino(),
        meta.mtime(),
        meta.mtime_nsec()
    )
}

pub(in crate::store) fn io_error(rel: &str, e: std::io::Error) -> StoreError {
    StoreError::Failed {
        path: rel.to_string(),
        message: e.to_string(),
    }
}

impl LocalDir {
    /// Opens the regular file at `rel` for a streamed read, confined to the root like every
    /// read; `None` if there is none.
    pub(crate) fn open_read(&self, rel: &str) -> Result<Option<std::fs::File>, StoreError> {
        Ok(self.open_file(rel)?.map(|(file, _)| file))
    }
}
