//! Cache files on disk: read only when regular and not too large, written whole through a
//! temporary file renamed into place; where caches are kept.

use std::io::Write;
use std::path::{Path, PathBuf};

/// Where caches are kept: the repository's `fdl/` folder, else the user's cache.
pub(crate) fn root_for(git_dir: Option<&Path>) -> Option<PathBuf> {
    match git_dir {
        Some(d) => Some(d.join("fdl")),
        None => user_cache_root(),
    }
}

/// Makes `dir` and the folders between it and `anchor`, never `anchor` itself: a repository's
/// cache is made only inside its `$GIT_DIR`, which Git removes when a clone fails while the
/// helper may still be ending (each folder is made on its own, so a gone `$GIT_DIR` is never
/// made again). Without an anchor (the user's cache), every missing folder is made.
pub(crate) fn make_dir(dir: &Path, anchor: Option<&Path>) -> bool {
    let Some(anchor) = anchor else {
        return std::fs::create_dir_all(dir).is_ok();
    };
    let Ok(below) = dir.strip_prefix(anchor) else {
        return false;
    };
    let mut at = anchor.to_path_buf();
    for part in below.components() {
        at.push(part);
        match std::fs::create_dir(&at) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(_) => return false,
        }
    }
    at.is_dir()
}

/// A cache file larger than this is damaged (a commits file holds about a hundred bytes a
/// version, ten million versions in this much): it is passed over, as a missing one is.
pub(super) const CACHE_FILE_LIMIT: u64 = 1 << 30;

/// The cache file at `path` if it is a regular file (a FIFO or a device put in its place is
/// neither waited on nor read without end), opened for appending with `append`.
pub(super) fn open_regular(path: &Path, append: bool) -> Option<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    // Looked at before it is opened (opening some devices does something), and again after.
    if !std::fs::metadata(path).ok()?.is_file() {
        return None;
    }
    let file = std::fs::OpenOptions::new()
        .read(!append)
        .append(append)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .ok()?;
    file.metadata().ok()?.is_file().then_some(file)
}

/// The bytes of the cache file at `path`: `None` if it is missing, no regular file, or larger
/// than [`CACHE_FILE_LIMIT`]. A cache is only an accelerator: what it cannot give is computed
/// again, and the file written anew in its place.
pub(crate) fn read_cache_file(path: &Path) -> Option<Vec<u8>> {
    use std::io::Read;
    let file = open_regular(path, false)?;
    let len = file.metadata().ok()?.len();
    if len > CACHE_FILE_LIMIT {
        return None;
    }
    let mut bytes = Vec::with_capacity(len as usize);
    file.take(CACHE_FILE_LIMIT + 1)
        .read_to_end(&mut bytes)
        .ok()?;
    (bytes.len() as u64 <= CACHE_FILE_LIMIT).then_some(bytes)
}

/// Writes a whole cache file (lines with their checksums) through a temporary file renamed
/// into place.
pub(super) fn replace(path: &Path, header: &str, lines: &str) -> bool {
    replace_with(path, header, |out| out.write_all(lines.as_bytes()))
}

/// Writes a cache file whose lines `write` gives, through a temporary file renamed into place
/// (readers see the old file or the new one). Not flushed to disk: after a crash a file cut
/// short fails its header or its lines' checksums, and is computed again, as a missing one is;
/// a push waits for no disk.
pub(super) fn replace_with(
    path: &Path,
    header: &str,
    write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> bool {
    let tmp = path.with_extension(format!("tmp.{}", std::process::id()));
    let written = std::fs::File::create(&tmp).and_then(|f| {
        let mut out = std::io::BufWriter::with_capacity(256 << 10, f);
        out.write_all(header.as_bytes())?;
        out.write_all(b"\n")?;
        write(&mut out)?;
        out.flush()
    });
    if written.is_ok() && std::fs::rename(&tmp, path).is_ok() {
        return true;
    }
    let _ = std::fs::remove_file(&tmp);
    false
}

/// Where the helper keeps caches when it runs outside any repository (`git ls-remote fdl::...`,
/// `git-remote-fdl ls`): `$XDG_CACHE_HOME/git-remote-fdl`, else `~/.cache/git-remote-fdl`.
/// `None` when neither is known (a relative `XDG_CACHE_HOME` is ignored, as the XDG spec says).
pub(crate) fn user_cache_root() -> Option<PathBuf> {
    let absolute = |v: std::ffi::OsString| Some(PathBuf::from(v)).filter(|p| p.is_absolute());
    let base = std::env::var_os("XDG_CACHE_HOME")
        .and_then(absolute)
        .or_else(|| {
            std::env::var_os("HOME")
                .and_then(absolute)
                .map(|h| h.join(".cache"))
        })?;
    Some(base.join("git-remote-fdl"))
}
