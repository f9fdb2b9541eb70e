//! The commits file of a cache read on a blocking thread while the first round trip is under
//! way, and let go unread when the file of refs knew every tip.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use super::commits::Commits;
use super::lake_cache::Cache;

/// The commits file of a cache being read on a blocking thread. Dropped unused (every ref
/// was known from the file of refs), it stops reading within a few thousand lines, so the
/// session ends without waiting for it.
pub(crate) struct Preload {
    handle: Option<tokio::task::JoinHandle<Commits>>,
    cancel: Arc<AtomicBool>,
}

impl Preload {
    /// Starts reading the commits file of `cache` (inside a tokio runtime).
    pub(crate) fn start(cache: &Cache) -> Preload {
        let (path, cancel) = (cache.path(), Arc::new(AtomicBool::new(false)));
        let flag = cancel.clone();
        let handle = tokio::task::spawn_blocking(move || Commits::load(&path, &flag));
        Preload {
            handle: Some(handle),
            cancel,
        }
    }

    /// What was read; `None` if the reading thread failed.
    pub(crate) async fn wait(mut self) -> Option<Commits> {
        self.handle.take()?.await.ok()
    }
}

impl Drop for Preload {
    fn drop(&mut self) {
        self.cancel.store(true, Ordering::Relaxed);
    }
}
