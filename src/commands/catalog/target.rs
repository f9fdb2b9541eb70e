//! Where `catalog -o` writes. A file is written beside its path and renamed into place once
//! verified; what cannot be replaced by a file (a character device such as `/dev/null`, a
//! FIFO, standard output) is written into as the bytes come, and told of a bad digest after.

use std::fs::File;
use std::io::Write;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};

use crate::fatal::{io_reason, Fatal};

/// What `-o` names.
pub(super) enum Target {
    /// A regular file, or nothing yet: written to a temporary file, then renamed.
    File(PathBuf),
    /// A device, a FIFO or an open descriptor (`/dev/stdout`): written into, never replaced.
    Stream(PathBuf),
}

impl Target {
    pub(super) fn of(path: &Path) -> Result<Target, Fatal> {
        let Ok(meta) = std::fs::metadata(path) else {
            return Ok(Target::File(path.to_path_buf()));
        };
        let kind = meta.file_type();
        if kind.is_char_device() || kind.is_fifo() || (kind.is_file() && names_a_descriptor(path)) {
            return Ok(Target::Stream(path.to_path_buf()));
        }
        if kind.is_block_device() || kind.is_socket() {
            return Err(Fatal::with_hint(
                format!(
                    "refusing to write the catalog into {}: it is a {}",
                    path.display(),
                    if kind.is_socket() {
                        "socket"
                    } else {
                        "block device"
                    }
                ),
                "name a file, a FIFO or a character device with -o; nothing was written",
            ));
        }
        Ok(Target::File(path.to_path_buf()))
    }

    /// Whether the bytes go to a device or a pipe (there is then no file to attach).
    pub(super) fn is_stream(&self) -> bool {
        matches!(self, Target::Stream(_))
    }

    /// Opens the output: a temporary file beside a file's path, or the device or FIFO itself
    /// (which waits for a reader, as a shell's redirection does).
    pub(super) fn open(&self) -> Result<Output, Fatal> {
        let (sink, path) = match self {
            Target::File(path) => {
                let tmp = temporary_beside(path);
                let file = std::fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .open(&tmp)
                    .map_err(|e| cannot_write(path, &e))?;
                crate::cleanup::remove_on_signal(&tmp);
                (Sink::Temporary { file, tmp }, path)
            }
            Target::Stream(path) => {
                // Appending: a file behind `/dev/stdout` opened by `>>` keeps what it holds
                // (one opened by `>` is empty, and is written from its start all the same).
                let file = std::fs::OpenOptions::new()
                    .append(true)
                    .open(path)
                    .map_err(|e| cannot_write(path, &e))?;
                (Sink::Stream(Box::new(file)), path)
            }
        };
        Ok(Output {
            sink,
            path: path.clone(),
            sent: 0,
        })
    }
}

/// An open output, and how many bytes it received.
pub(super) struct Output {
    sink: Sink,
    path: PathBuf,
    sent: u64,
}

enum Sink {
    Temporary { file: File, tmp: PathBuf },
    Stream(Box<dyn Write + Send>),
}

impl Output {
    pub(super) fn write_all(&mut self, chunk: &[u8]) -> std::io::Result<()> {
        match &mut self.sink {
            Sink::Temporary { file, .. } => file.write_all(chunk)?,
            Sink::Stream(w) => w.write_all(chunk)?,
        }
        self.sent += chunk.len() as u64;
        Ok(())
    }

    /// The output failed: it is named, not the lake; a stream says what it already received.
    pub(super) fn write_error(&self, e: &std::io::Error) -> Fatal {
        let f = cannot_write(&self.path, e);
        match matches!(self.sink, Sink::Stream(_)) && self.sent > 0 {
            true => f.instead_hint(self.what_was_written()),
            false => f,
        }
    }

    /// For a hint once the digest is found wrong: what the output holds.
    pub(super) fn what_was_written(&self) -> String {
        match self.sink {
            Sink::Temporary { .. } => "nothing was written".to_string(),
            Sink::Stream(_) => format!(
                "{} already received {} unverified byte{}: do not use them",
                self.path.display(),
                self.sent,
                if self.sent == 1 { "" } else { "s" }
            ),
        }
    }

    /// Completes the output once the download is over: a verified file is made durable and
    /// renamed into place, anything else removed; a stream is flushed.
    pub(super) fn finish<T>(self, result: Result<T, Fatal>) -> Result<T, Fatal> {
        match self.sink {
            Sink::Temporary { file, tmp } => {
                let done = result.and_then(|got| {
                    file.sync_all()
                        .and_then(|()| std::fs::rename(&tmp, &self.path))
                        .map_err(|e| cannot_write(&self.path, &e))?;
                    Ok(got)
                });
                if done.is_err() {
                    let _ = std::fs::remove_file(&tmp);
                }
                crate::cleanup::forget(&tmp);
                done
            }
            Sink::Stream(mut w) => {
                let got = result?;
                w.flush().map_err(|e| cannot_write(&self.path, &e))?;
                Ok(got)
            }
        }
    }
}

fn cannot_write(path: &Path, e: &std::io::Error) -> Fatal {
    Fatal::new(format!("cannot write {}: {}", path.display(), io_reason(e)))
}

/// `.<name>.tmp-<pid>` in the folder of `path`.
fn temporary_beside(path: &Path) -> PathBuf {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default();
    dir.join(format!(".{name}.tmp-{}", std::process::id()))
}

/// Whether `path` leads (through links) to an open descriptor, `/dev/stdout` or `/dev/fd/N`
/// (links into `/proc/<pid>/fd/`): the file behind it is written into, never replaced.
fn names_a_descriptor(path: &Path) -> bool {
    let mut at = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    for _ in 0..8 {
        if at.starts_with("/proc") || at.starts_with("/dev/fd") {
            return true;
        }
        let Ok(link) = std::fs::read_link(&at) else {
            return false;
        };
        at = match at.parent() {
            Some(dir) => dir.join(link),
            None => link,
        };
    }
    false
}
