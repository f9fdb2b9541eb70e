//! The memory budget of a store's reads: bytes of files read and not yet let go.

use std::sync::Arc;

use bytes::Bytes;

/// The bytes of files read and not yet let go, across every read of a store: a fixed budget,
/// whatever the number and size of the files (docs/git-remote-fdl.md, LIMITS).
pub(crate) const MEMORY_BUDGET: u32 = 128 << 20;

/// A semaphore counting bytes: a read waits until its file's size fits in what is left.
#[derive(Debug, Clone)]
pub(crate) struct Budget {
    bytes: Arc<tokio::sync::Semaphore>,
    total: u32,
}

impl Budget {
    pub(crate) fn new(total: u32) -> Budget {
        Budget {
            bytes: Arc::new(tokio::sync::Semaphore::new(total as usize)),
            total,
        }
    }

    /// Waits for room for `size` bytes (a file larger than the whole budget takes all of it).
    pub(crate) async fn reserve(&self, size: u64) -> tokio::sync::OwnedSemaphorePermit {
        let n = size.min(u64::from(self.total)) as u32;
        self.bytes
            .clone()
            .acquire_many_owned(n)
            .await
            .expect("the budget's semaphore is never closed")
    }

    /// Room for `size` bytes if there is some now, without waiting.
    pub(crate) fn try_reserve(&self, size: u64) -> Option<tokio::sync::OwnedSemaphorePermit> {
        let n = size.min(u64::from(self.total)) as u32;
        self.bytes.clone().try_acquire_many_owned(n).ok()
    }
}

/// A file's bytes with their share of the budget, given back when this is dropped.
pub struct Held {
    pub bytes: Bytes,
    _room: tokio::sync::OwnedSemaphorePermit,
}

impl Held {
    pub(crate) fn new(bytes: Bytes, room: tokio::sync::OwnedSemaphorePermit) -> Held {
        Held { bytes, _room: room }
    }
}
