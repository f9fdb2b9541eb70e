//! The wrapper that traces every request a backend is asked, and its outcome, one line each
//! (`GIT_REMOTE_FDL_DEBUG=1`).

use bytes::Bytes;

use crate::store::backend::Below;
use crate::store::backend::Listed;
use crate::store::backend::{Backend, Got, Paged, Range, Sink};
use crate::store::budget::Budget;
use crate::store::condition::{Token, Versioned, WriteError, WriteMode};
use crate::store::error::StoreError;

/// A backend whose requests are traced.
#[derive(Debug)]
pub(crate) struct Traced {
    inner: Box<dyn Backend>,
}

impl Traced {
    pub(in crate::store) fn new(inner: Box<dyn Backend>) -> Traced {
        Traced { inner }
    }
}

fn log(what: std::fmt::Arguments) {
    crate::trace::line(&format!("store: {what}"));
}

/// A read's outcome in words.
fn read_outcome<T>(rel: &str, result: &Result<Option<T>, StoreError>, said: impl Fn(&T) -> String) {
    match result {
        Ok(Some(got)) => log(format_args!("GET {rel} -> {}", said(got))),
        Ok(None) => log(format_args!("GET {rel} -> not found")),
        Err(e) => log(format_args!("GET {rel} -> error: {e}")),
    }
}

#[async_trait::async_trait]
impl Backend for Traced {
    async fn head(&self, rel: &str) -> Result<Option<Token>, StoreError> {
        let result = self.inner.head(rel).await;
        let found = result.as_ref().map(Option::is_some);
        log(format_args!("HEAD {rel} -> {found:?}"));
        result
    }

    async fn get(&self, rel: &str, limit: u64, budget: &Budget) -> Result<Option<Got>, StoreError> {
        let result = self.inner.get(rel, limit, budget).await;
        read_outcome(rel, &result, |g| format!("{} bytes", g.bytes.len()));
        result
    }

    async fn get_versioned(
        &self,
        rel: &str,
        limit: u64,
        budget: &Budget,
    ) -> Result<Option<Versioned>, StoreError> {
        let result = self.inner.get_versioned(rel, limit, budget).await;
        read_outcome(rel, &result, |v| {
            format!("{} bytes, version {:?}", v.bytes.len(), v.token.e_tag)
        });
        result
    }

    async fn download(
        &self,
        rel: &str,
        limit: u64,
        sink: &mut Sink<'_>,
    ) -> Result<bool, StoreError> {
        let mut total = 0u64;
        let mut counting = |chunk: &[u8]| {
            total += chunk.len() as u64;
            sink(chunk)
        };
        let result = self.inner.download(rel, limit, &mut counting).await;
        match &result {
            Ok(true) => log(format_args!("GET {rel} (streamed) -> {total} bytes")),
            Ok(false) => log(format_args!("GET {rel} (streamed) -> not found")),
            Err(e) => log(format_args!("GET {rel} (streamed) -> error: {e}")),
        }
        result
    }

    async fn list(&self, prefix: &str, range: Range<'_>) -> Result<Paged<Listed>, StoreError> {
        let result = self.inner.list(prefix, range).await;
        let (after, until) = (range.after, range.until);
        match &result {
            Ok(listed) => log(format_args!(
                "LIST {prefix} ({after:?}..={until:?}) -> {} files{}",
                listed.found.files.len(),
                if listed.found.more { ", more" } else { "" }
            )),
            Err(e) => log(format_args!("LIST {prefix} ({after:?}..={until:?}) -> {e}")),
        }
        result
    }

    async fn list_dirs(&self, prefix: &str) -> Result<Paged<Below>, StoreError> {
        let result = self.inner.list_dirs(prefix).await;
        match &result {
            Ok(listed) => log(format_args!(
                "LIST {prefix} (folders) -> {} folders, {} files",
                listed.found.dirs.len(),
                listed.found.files.len()
            )),
            Err(e) => log(format_args!("LIST {prefix} (folders) -> {e}")),
        }
        result
    }

    async fn put(&self, rel: &str, bytes: Bytes, mode: &WriteMode) -> Result<Token, WriteError> {
        let result = self.inner.put(rel, bytes, mode).await;
        match &result {
            Ok(t) => log(format_args!(
                "PUT {rel} ({mode:?}) -> ok, version {:?}",
                t.e_tag
            )),
            Err(e) => log(format_args!("PUT {rel} ({mode:?}) -> {e}")),
        }
        result
    }

    async fn put_file(&self, rel: &str, file: &std::path::Path) -> Result<(), WriteError> {
        let result = self.inner.put_file(rel, file).await;
        match &result {
            Ok(()) => log(format_args!("PUT {rel} (a file, if absent) -> ok")),
            Err(e) => log(format_args!("PUT {rel} (a file, if absent) -> {e}")),
        }
        result
    }

    async fn delete(&self, rel: &str, expected: &Token) -> Result<(), WriteError> {
        let result = self.inner.delete(rel, expected).await;
        match &result {
            Ok(()) => log(format_args!("DELETE {rel} -> ok")),
            Err(e) => log(format_args!("DELETE {rel} -> {e}")),
        }
        result
    }

    async fn delete_all(&self, rels: &[String]) -> Result<(), StoreError> {
        let result = self.inner.delete_all(rels).await;
        match &result {
            Ok(()) => log(format_args!("DELETE {} files -> ok", rels.len())),
            Err(e) => log(format_args!("DELETE {} files -> {e}", rels.len())),
        }
        result
    }

    fn checks_before_delete(&self) -> bool {
        self.inner.checks_before_delete()
    }

    fn take_notes(&self) -> Vec<String> {
        self.inner.take_notes()
    }
}
