//! Lock files of a folder lake (`<file>.lock`): taken by exclusive creation, described safely
//! when another writer holds one, and removed when their writer provably died.
//!
//! A lock file is untrusted input: it is never followed through a symlink, never opened when
//! it is not a regular file (a FIFO would block, a device never end), and only a short prefix
//! of it is read and shown, on one line.

use std::io::{ErrorKind, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::backoff::Backoff;
use crate::store::error::StoreError;

/// How long a writer waits for another's lock before giving up (locks are held for
/// milliseconds).
const LOCK_WAIT: Duration = Duration::from_secs(10);

/// A lock held longer than this by a process that may still exist is reported at once.
const OLD_LOCK_SECS: u64 = 60;

/// The most of a lock file that is read, and shown.
const HOLDER_READ: u64 = 256;
const HOLDER_SHOWN: usize = 120;

/// A lock this process holds; the file is removed when it is dropped.
pub(in crate::store) struct LockGuard(PathBuf);

impl Drop for LockGuard {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// The outcome of taking a lock.
pub(in crate::store) enum Acquired {
    /// Held; with a note when a stale lock was removed first.
    Held(LockGuard, Option<String>),
    /// The lock's folder is gone (a racing delete removed it): prepare it again.
    FolderGone,
}

/// Takes `lock` (an absolute path), waiting a little for a live writer that holds it. A lock
/// whose writer provably died (same host, no such process) is removed first, under a second
/// lock so that two writers cannot both remove locks.
pub(in crate::store) fn acquire(lock: &Path) -> Result<Acquired, StoreError> {
    let start = Instant::now();
    let mut backoff = Backoff::new(Duration::from_millis(1), Duration::from_millis(50))
        .with_jitter(Duration::from_millis(1));
    let mut note = None;
    loop {
        match create(lock) {
            Ok(guard) => return Ok(Acquired::Held(guard, note)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Acquired::FolderGone),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(locked(lock, format!("it cannot be created: {e}"))),
        }
        match read_lock(lock) {
            LockFile::Gone => {}
            LockFile::Foreign(what) => {
                return Err(locked(
                    lock,
                    format!("it is {what}, which no writer of this helper makes"),
                ))
            }
            LockFile::Held(holder) if holder.is_dead() => {
                if break_stale(lock, &holder) {
                    note = Some(format!(
                        "removed {}, a lock left by {}, a process that no longer exists",
                        file_name(lock),
                        holder.text
                    ));
                    continue;
                }
                if start.elapsed() > LOCK_WAIT {
                    return Err(locked(
                        lock,
                        format!(
                            "held by {}, a process that no longer exists; another writer was \
                             removing it, or was killed doing so (then remove {} too)",
                            holder.text,
                            breaker_of(lock).display()
                        ),
                    ));
                }
            }
            LockFile::Held(holder) => {
                if let Some(age) = holder.age().filter(|a| *a > OLD_LOCK_SECS) {
                    return Err(locked(
                        lock,
                        format!(
                            "held by {}, for {age} s: probably left by a push that crashed",
                            holder.text
                        ),
                    ));
                }
                if start.elapsed() > LOCK_WAIT {
                    return Err(locked(lock, format!("held by {}", holder.text)));
                }
            }
        }
        if start.elapsed() > LOCK_WAIT {
            return Err(locked(lock, "another writer keeps taking it".into()));
        }
        backoff.wait_blocking();
    }
}

fn locked(lock: &Path, holder: String) -> StoreError {
    StoreError::Locked {
        path: lock.display().to_string(),
        holder,
    }
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Creates `path` exclusively, naming this writer in it. The lock appears whole: written
/// under a hidden name of its own first, then linked into place (which fails if the lock
/// exists), so that a writer killed in between never leaves an empty lock that names no one,
/// which no later writer could tell from a live one. Where the folder has no hard links, the
/// lock is created in place and written.
fn create(path: &Path) -> std::io::Result<LockGuard> {
    let holder = format!(
        "pid {} on {} since {}\n",
        std::process::id(),
        crate::process::host_name(),
        unix_now()
    );
    let staged = staged_name(path);
    match stage(&staged, &holder) {
        Ok(()) => {
            crate::testhook::stop_at(crate::testhook::Point::TakingLock);
            let linked = std::fs::hard_link(&staged, path);
            let _ = std::fs::remove_file(&staged);
            match linked {
                Ok(()) => return Ok(LockGuard(path.to_path_buf())),
                Err(e) if matches!(e.kind(), ErrorKind::AlreadyExists | ErrorKind::NotFound) => {
                    return Err(e)
                }
                Err(_) => {}
            }
        }
        Err(e) if e.kind() == ErrorKind::NotFound => return Err(e),
        Err(_) => {}
    }
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)?;
    let guard = LockGuard(path.to_path_buf());
    let _ = std::io::Write::write_all(&mut f, holder.as_bytes());
    Ok(guard)
}

/// The prefix of the names locks are staged under: hidden, so never read as a ref, and short
/// whatever the ref's name (a name of the lock's own length plus more could exceed what the
/// file system allows, where the lock itself fits).
pub(in crate::store) const STAGED_PREFIX: &str = ".lock-staged-";

/// A name no other attempt uses, on any host sharing the folder: this process's id, the time
/// and a count (tasks of one process may race for the same lock).
fn staged_name(lock: &Path) -> PathBuf {
    static ATTEMPT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = ATTEMPT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let pid = std::process::id();
    lock.with_file_name(format!("{STAGED_PREFIX}{pid}-{nanos}-{n}"))
}

/// Whether the staged lock at `path` is left over: a staged lock lives for the time of one
/// link, so one older than [`OLD_LOCK_SECS`] is (even empty, as a writer killed before it
/// wrote leaves it), and so is one that names a process of this host that no longer exists.
pub(in crate::store) fn is_left_over(path: &Path) -> bool {
    let old = std::fs::symlink_metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.elapsed().ok())
        .is_some_and(|age| age.as_secs() > OLD_LOCK_SECS);
    old || matches!(read_lock(path), LockFile::Held(holder) if holder.is_dead())
}

/// Writes `holder` to the new file `staged` (no link is followed).
fn stage(staged: &Path, holder: &str) -> std::io::Result<()> {
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(staged)?;
    let written = std::io::Write::write_all(&mut f, holder.as_bytes());
    if written.is_err() {
        let _ = std::fs::remove_file(staged);
    }
    written
}

/// How many breakers deep a stale lock is recovered: `.<lock>.break` left by a writer killed
/// while breaking, and the one above it.
const BREAK_DEPTH: usize = 2;

/// Removes a lock whose writer is dead, if it still is the lock `seen` describes. Only the
/// writer that holds `.<lock>.break` may remove it: of two writers that saw the same stale
/// lock, the second finds the first one's new lock (alive) and leaves it. A `.break` left by
/// a writer killed while breaking is itself a stale lock, recovered the same way.
fn break_stale(lock: &Path, seen: &Holder) -> bool {
    break_stale_at(lock, seen, 0)
}

fn break_stale_at(lock: &Path, seen: &Holder, depth: usize) -> bool {
    let breaker = breaker_of(lock);
    let _breaking = match create(&breaker) {
        Ok(guard) => guard,
        Err(e) if e.kind() == ErrorKind::AlreadyExists && depth < BREAK_DEPTH => {
            let recovered = match read_lock(&breaker) {
                LockFile::Held(dead) if dead.is_dead() => {
                    break_stale_at(&breaker, &dead, depth + 1)
                }
                _ => false,
            };
            match recovered.then(|| create(&breaker)) {
                Some(Ok(guard)) => guard,
                _ => return false,
            }
        }
        Err(_) => return false,
    };
    match read_lock(lock) {
        LockFile::Held(now) if now.text == seen.text && now.is_dead() => {
            std::fs::remove_file(lock).is_ok()
        }
        _ => false,
    }
}

/// The second lock, taken to remove a stale one: hidden, so never read as a ref.
fn breaker_of(lock: &Path) -> PathBuf {
    lock.with_file_name(format!(".{}.break", file_name(lock)))
}

/// What a lock file is.
enum LockFile {
    Gone,
    /// Not a regular file: a symlink, a FIFO, a device, a folder.
    Foreign(&'static str),
    Held(Holder),
}

/// Who holds a lock, as its file says (`pid <n> on <host> since <unix time>`).
struct Holder {
    /// The file's first line, sanitized, for messages.
    text: String,
    pid: Option<i32>,
    host: String,
    since: Option<u64>,
}

impl Holder {
    fn parse(raw: &[u8]) -> Holder {
        let line = raw.split(|b| *b == b'\n').next().unwrap_or_default();
        let line = String::from_utf8_lossy(line);
        let mut words = line.split_whitespace();
        let (pid, host, since) = match (
            words.next(),
            words.next(),
            words.next(),
            words.next(),
            words.next(),
            words.next(),
        ) {
            (Some("pid"), Some(pid), Some("on"), Some(host), Some("since"), Some(t)) => {
                (pid.parse().ok(), host.to_string(), t.parse().ok())
            }
            _ => (None, String::new(), None),
        };
        let text = match sanitize(&line) {
            t if t.is_empty() => "an unknown writer".to_string(),
            t => t,
        };
        Holder {
            text,
            pid,
            host,
            since,
        }
    }

    /// Provably gone: a process of this host that no longer exists.
    fn is_dead(&self) -> bool {
        match self.pid {
            Some(pid) if self.host == crate::process::host_name() => crate::process::is_gone(pid),
            _ => false,
        }
    }

    fn age(&self) -> Option<u64> {
        self.since.map(|t| unix_now().saturating_sub(t))
    }
}

/// Reads a lock file without following a symlink, without blocking, and at most a short
/// prefix of it.
fn read_lock(path: &Path) -> LockFile {
    let kind = match std::fs::symlink_metadata(path) {
        Ok(m) => m.file_type(),
        Err(_) => return LockFile::Gone,
    };
    if let Some(what) = foreign(&kind) {
        return LockFile::Foreign(what);
    }
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path);
    let file = match file {
        Ok(f) => f,
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => return LockFile::Foreign("a symlink"),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return LockFile::Gone,
        Err(_) => return LockFile::Held(Holder::parse(b"")),
    };
    // Swapped since the lstat above: look again at what was opened.
    match file.metadata() {
        Ok(m) => {
            if let Some(what) = foreign(&m.file_type()) {
                return LockFile::Foreign(what);
            }
        }
        Err(_) => return LockFile::Held(Holder::parse(b"")),
    }
    let modified = file.metadata().and_then(|m| m.modified()).ok();
    let mut raw = Vec::new();
    let _ = file.take(HOLDER_READ).read_to_end(&mut raw);
    let mut holder = Holder::parse(&raw);
    // A lock that names no time (empty: its writer was killed before it wrote, by a writer
    // before this one) is as old as its file.
    if holder.since.is_none() {
        holder.since = modified
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map(|d| d.as_secs());
    }
    LockFile::Held(holder)
}

fn foreign(kind: &std::fs::FileType) -> Option<&'static str> {
    use std::os::unix::fs::FileTypeExt;
    if kind.is_file() {
        None
    } else if kind.is_symlink() {
        Some("a symlink")
    } else if kind.is_dir() {
        Some("a folder")
    } else if kind.is_fifo() {
        Some("a FIFO")
    } else if kind.is_socket() {
        Some("a socket")
    } else {
        Some("a device")
    }
}

/// One line of printable text, control characters escaped, cut to a readable length.
fn sanitize(line: &str) -> String {
    crate::redact::sanitize(&crate::redact::excerpt(line.trim(), HOLDER_SHOWN))
}

fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holders_are_parsed_and_shown_on_one_safe_line() {
        let h = Holder::parse(b"pid 12 on box since 34\nsecond line");
        assert_eq!(
            (h.pid, h.host.as_str(), h.since),
            (Some(12), "box", Some(34))
        );
        assert_eq!(h.text, "pid 12 on box since 34");
        let hostile = Holder::parse(b"\x1b]0;title\x07 pid x");
        assert!(
            !hostile.text.contains('\x1b') && hostile.pid.is_none(),
            "{}",
            hostile.text
        );
        let long = Holder::parse(&[b'a'; 300]);
        assert_eq!(long.text.chars().count(), HOLDER_SHOWN + 1);
        assert_eq!(Holder::parse(b"").text, "an unknown writer");
    }

    #[test]
    fn this_process_is_alive_and_a_finished_child_is_dead() {
        let me = format!(
            "pid {} on {} since 1",
            std::process::id(),
            crate::process::host_name()
        );
        assert!(!Holder::parse(me.as_bytes()).is_dead());
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        let gone = format!("pid {pid} on {} since 1", crate::process::host_name());
        assert!(Holder::parse(gone.as_bytes()).is_dead());
        let elsewhere = format!("pid {pid} on another-host since 1");
        assert!(!Holder::parse(elsewhere.as_bytes()).is_dead());
    }
}
