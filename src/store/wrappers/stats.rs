//! Request counts, and the wrapper that counts every request a backend is asked.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use bytes::Bytes;

use crate::store::backend::Below;
use crate::store::backend::Listed;
use crate::store::backend::{Backend, Got, Paged, Range, Sink};
use crate::store::budget::Budget;
use crate::store::condition::{Token, Versioned, WriteError, WriteMode};
use crate::store::error::StoreError;

/// Request counts, for benchmarks and `GIT_REMOTE_FDL_DEBUG`.
#[derive(Debug, Default)]
pub struct Stats {
    pub get: AtomicU64,
    pub list: AtomicU64,
    pub put: AtomicU64,
    pub delete: AtomicU64,
}

impl Stats {
    pub fn summary(&self) -> String {
        format!(
            "get={} list={} put={} delete={}",
            self.get.load(Ordering::Relaxed),
            self.list.load(Ordering::Relaxed),
            self.put.load(Ordering::Relaxed),
            self.delete.load(Ordering::Relaxed)
        )
    }
}

/// A backend whose every request is counted in [`Stats`] (a listing: each page).
#[derive(Debug)]
pub(crate) struct Counted {
    inner: Box<dyn Backend>,
    stats: Arc<Stats>,
}

impl Counted {
    pub(in crate::store) fn new(inner: Box<dyn Backend>, stats: Arc<Stats>) -> Counted {
        Counted { inner, stats }
    }

    fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }
}

#[async_trait::async_trait]
impl Backend for Counted {
    async fn head(&self, rel: &str) -> Result<Option<Token>, StoreError> {
        Self::add(&self.stats.get, 1);
        self.inner.head(rel).await
    }

    async fn get(&self, rel: &str, limit: u64, budget: &Budget) -> Result<Option<Got>, StoreError> {
        Self::add(&self.stats.get, 1);
        self.inner.get(rel, limit, budget).await
    }

    async fn get_versioned(
        &self,
        rel: &str,
        limit: u64,
        budget: &Budget,
    ) -> Result<Option<Versioned>, StoreError> {
        Self::add(&self.stats.get, 1);
        self.inner.get_versioned(rel, limit, budget).await
    }

    async fn download(
        &self,
        rel: &str,
        limit: u64,
        sink: &mut Sink<'_>,
    ) -> Result<bool, StoreError> {
        Self::add(&self.stats.get, 1);
        self.inner.download(rel, limit, sink).await
    }

    async fn list(&self, prefix: &str, range: Range<'_>) -> Result<Paged<Listed>, StoreError> {
        let listed = self.inner.list(prefix, range).await?;
        Self::add(&self.stats.list, listed.requests);
        Ok(listed)
    }

    async fn list_dirs(&self, prefix: &str) -> Result<Paged<Below>, StoreError> {
        let listed = self.inner.list_dirs(prefix).await?;
        Self::add(&self.stats.list, listed.requests);
        Ok(listed)
    }

    async fn put(&self, rel: &str, bytes: Bytes, mode: &WriteMode) -> Result<Token, WriteError> {
        Self::add(&self.stats.put, 1);
        self.inner.put(rel, bytes, mode).await
    }

    async fn put_file(&self, rel: &str, file: &std::path::Path) -> Result<(), WriteError> {
        // Counted as one, whatever number of parts it went in.
        Self::add(&self.stats.put, 1);
        self.inner.put_file(rel, file).await
    }

    async fn delete(&self, rel: &str, expected: &Token) -> Result<(), WriteError> {
        Self::add(&self.stats.delete, 1);
        self.inner.delete(rel, expected).await
    }

    async fn delete_all(&self, rels: &[String]) -> Result<(), StoreError> {
        Self::add(&self.stats.delete, 1);
        self.inner.delete_all(rels).await
    }

    fn checks_before_delete(&self) -> bool {
        self.inner.checks_before_delete()
    }

    fn take_notes(&self) -> Vec<String> {
        self.inner.take_notes()
    }
}
