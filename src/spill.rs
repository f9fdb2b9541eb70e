//! Bytes kept on disk instead of in memory: an unnamed temporary file that pieces (every
//! commit's text, waiting for its parents' commits) are appended to and read back from, so
//! that what the helper holds per version stays small whatever a lake's files hold.

use parking_lot::Mutex;
use std::fs::File;
use std::os::unix::fs::FileExt;

/// Where a piece was put.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Spilled {
    offset: u64,
    len: usize,
}

/// Bytes written and read a block at a time: pieces are small (a commit's text, a few hundred
/// bytes), many (one a version), and read back in about the order they were put.
const BLOCK: usize = 64 << 10;

/// The spill file, made on first use; gone when the process ends (it has no name).
#[derive(Default)]
pub(crate) struct Spill {
    file: Mutex<Option<Open>>,
}

struct Open {
    file: File,
    /// Bytes in the file, and the pieces put after them, not yet written.
    written: u64,
    pending: Vec<u8>,
    /// The last block read, from this offset.
    window: (u64, Vec<u8>),
}

impl Spill {
    /// Appends `bytes`; `None` if no temporary file can be written (then keep them in memory).
    pub(crate) fn put(&self, bytes: &[u8]) -> Option<Spilled> {
        let mut guard = self.file.lock();
        if guard.is_none() {
            // Unnamed in the temporary folder (`TMPDIR`): nothing to remove, whatever ends the process.
            *guard = Some(Open {
                file: tempfile::tempfile().ok()?,
                written: 0,
                pending: Vec::with_capacity(BLOCK),
                window: (0, Vec::new()),
            });
        }
        let open = guard.as_mut()?;
        let at = Spilled {
            offset: open.written + open.pending.len() as u64,
            len: bytes.len(),
        };
        if open.pending.len() + bytes.len() > BLOCK {
            open.flush().ok()?;
        }
        if bytes.len() >= BLOCK {
            open.file.write_all_at(bytes, open.written).ok()?;
            open.written += bytes.len() as u64;
        } else {
            open.pending.extend_from_slice(bytes);
        }
        Some(at)
    }

    /// Reads a piece back.
    pub(crate) fn get(&self, at: Spilled) -> std::io::Result<Vec<u8>> {
        let mut guard = self.file.lock();
        let open = guard
            .as_mut()
            .ok_or_else(|| std::io::Error::other("nothing was spilled"))?;
        let end = at.offset + at.len as u64;
        if at.offset >= open.written {
            let from = (at.offset - open.written) as usize;
            return Ok(open.pending[from..from + at.len].to_vec());
        }
        if at.len >= BLOCK || end > open.written {
            // Large, or partly still pending: read whole (flushed first).
            open.flush()?;
            let mut buf = vec![0u8; at.len];
            open.file.read_exact_at(&mut buf, at.offset)?;
            return Ok(buf);
        }
        let (start, block) = &open.window;
        if at.offset < *start || end > start + block.len() as u64 {
            let len = BLOCK.min((open.written - at.offset) as usize);
            let mut block = vec![0u8; len];
            open.file.read_exact_at(&mut block, at.offset)?;
            open.window = (at.offset, block);
        }
        let from = (at.offset - open.window.0) as usize;
        Ok(open.window.1[from..from + at.len].to_vec())
    }
}

impl Open {
    fn flush(&mut self) -> std::io::Result<()> {
        self.file.write_all_at(&self.pending, self.written)?;
        self.written += self.pending.len() as u64;
        self.pending.clear();
        Ok(())
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

    #[test]
    fn many_small_pieces_come_back_in_any_order_from_file_window_and_buffer() {
        let s = Spill::default();
        let pieces: Vec<Vec<u8>> = (0..5000u32)
            .map(|i| (0..(i % 300)).map(|j| (i + j) as u8).collect())
            .collect();
        let at: Vec<Spilled> = pieces.iter().map(|p| s.put(p).unwrap()).collect();
        // In order (through the read window), backwards, and the last (still buffered).
        for (a, p) in at.iter().zip(&pieces) {
            assert_eq!(&s.get(*a).unwrap(), p);
        }
        for (a, p) in at.iter().zip(&pieces).rev() {
            assert_eq!(&s.get(*a).unwrap(), p);
        }
        let big = vec![9u8; 3 * BLOCK];
        let b = s.put(&big).unwrap();
        let c = s.put(b"after").unwrap();
        assert_eq!(s.get(b).unwrap(), big);
        assert_eq!(s.get(c).unwrap(), b"after");
        assert_eq!(&s.get(at[17]).unwrap(), &pieces[17]);
    }
}
