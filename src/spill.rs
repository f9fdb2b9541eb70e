//! Bytes kept on disk instead of in memory: an unnamed temporary file that large pieces (a
//! huge commit message, say) are appended to and read back from, so that what the helper holds
//! per version stays small whatever a lake's files hold.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::Mutex;

/// Where a piece was put.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Spilled {
    offset: u64,
    len: usize,
}

/// The spill file, made on first use; gone when the process ends (it has no name).
#[derive(Default)]
pub(crate) struct Spill {
    file: Mutex<Option<(File, u64)>>,
}

impl Spill {
    /// Appends `bytes`; `None` if no temporary file can be written (then keep them in memory).
    pub(crate) fn put(&self, bytes: &[u8]) -> Option<Spilled> {
        let mut guard = self.file.lock().expect("spill lock");
        if guard.is_none() {
            // Unnamed in the temporary folder (`TMPDIR`): nothing to remove, whatever ends the process.
            *guard = Some((tempfile::tempfile().ok()?, 0));
        }
        let (file, end) = guard.as_mut()?;
        file.write_all_at(bytes, *end).ok()?;
        let at = Spilled {
            offset: *end,
            len: bytes.len(),
        };
        *end += bytes.len() as u64;
        Some(at)
    }

    /// Reads a piece back.
    pub(crate) fn get(&self, at: Spilled) -> std::io::Result<Vec<u8>> {
        let guard = self.file.lock().expect("spill lock");
        let (file, _) = guard
            .as_ref()
            .ok_or_else(|| std::io::Error::other("nothing was spilled"))?;
        let mut buf = vec![0u8; at.len];
        file.read_exact_at(&mut buf, at.offset)?;
        Ok(buf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_come_back() {
        let s = Spill::default();
        let a = s.put(b"hello").unwrap();
        let big = vec![7u8; 100_000];
        let b = s.put(&big).unwrap();
        assert_eq!(s.get(a).unwrap(), b"hello");
        assert_eq!(s.get(b).unwrap(), big);
    }
}
