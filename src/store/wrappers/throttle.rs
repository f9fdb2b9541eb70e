//! Requests in flight on a store, fewer while it throttles: every request (GET, HEAD, LIST,
//! PUT, DELETE) passes the gate ([`Gated`], a wrapper around any backend); a store that
//! answers "slow down" (503 SlowDown, 429) halves how many requests the helper keeps in flight,
//! and a read is tried again after a pause; each run of successes lets one more request in
//! again, up to the configured concurrency. A throttled read is slowed, not failed. And never
//! more in flight than the open files this process may have leave room for.

use std::future::Future;
use std::sync::Arc;

use parking_lot::Mutex;
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::{Semaphore, SemaphorePermit};

use crate::store::backend::Below;
use crate::store::backend::Listed;
use crate::store::backend::{Backend, Got, Paged, Range, Sink};
use crate::store::budget::Budget;
use crate::store::condition::{Token, Versioned, WriteError, WriteMode};
use crate::store::error::StoreError;

/// How many times one request is tried again after the store throttled it (beyond the retries
/// of the HTTP client itself); the pauses grow from 200 ms to 5 s, so at most about 30 s.
pub(crate) const THROTTLE_RETRIES: u32 = 8;

#[derive(Debug)]
pub(crate) struct Gate {
    permits: Semaphore,
    max: usize,
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    limit: usize,
    /// Permits to take out of use as they come back, after the limit was lowered.
    debt: usize,
    successes: usize,
}

/// One request's place among those in flight.
pub(crate) struct Pass<'a> {
    gate: &'a Gate,
    permit: Option<SemaphorePermit<'a>>,
}

impl Gate {
    pub(crate) fn new(max: usize) -> Gate {
        Gate {
            permits: Semaphore::new(max),
            max,
            state: Mutex::new(State {
                limit: max,
                debt: 0,
                successes: 0,
            }),
        }
    }

    /// Waits for a place among the requests in flight.
    pub(crate) async fn enter(&self) -> Pass<'_> {
        let permit = self
            .permits
            .acquire()
            .await
            .expect("the gate's semaphore is never closed");
        Pass {
            gate: self,
            permit: Some(permit),
        }
    }

    /// How many requests may be in flight now.
    #[cfg(test)]
    fn limit(&self) -> usize {
        self.state.lock().limit
    }
}

impl Pass<'_> {
    /// The request succeeded: after as many successes as the limit, one more may be in flight.
    pub(crate) fn succeeded(self) {
        let mut s = self.gate.state.lock();
        s.successes += 1;
        if s.successes >= s.limit && s.limit < self.gate.max {
            s.successes = 0;
            s.limit += 1;
            if s.debt > 0 {
                s.debt -= 1;
            } else {
                self.gate.permits.add_permits(1);
            }
        }
    }

    /// The store throttled the request: half as many in flight from now on.
    pub(crate) fn throttled(self) {
        let mut s = self.gate.state.lock();
        let lower = (s.limit / 2).max(1);
        s.debt += s.limit - lower;
        s.limit = lower;
        s.successes = 0;
    }
}

impl Drop for Pass<'_> {
    fn drop(&mut self) {
        let mut s = self.gate.state.lock();
        if let Some(p) = self.permit.take() {
            if s.debt > 0 {
                s.debt -= 1;
                p.forget();
            }
        }
    }
}

/// Files the helper keeps open beside its requests in flight (Git's pipes, the pack being
/// written and its index, the cache, the spill file, the runtime's own), at most half the limit.
const FILES_KEPT: u64 = 64;

/// How many requests may be in flight within the open files this process may have: the limit
/// (raised once to the hard limit) less what the rest of the helper keeps open.
pub(crate) fn open_files_room() -> usize {
    static ROOM: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *ROOM.get_or_init(|| match crate::process::raise_open_files_limit() {
        None => crate::store::options::MAX_CONCURRENCY,
        Some(limit) => {
            let room = limit.saturating_sub(FILES_KEPT.min(limit / 2));
            usize::try_from(room)
                .unwrap_or(crate::store::options::MAX_CONCURRENCY)
                .max(1)
        }
    })
}

/// A backend whose every request waits for its place at the gate, and whose reads the store
/// throttled are tried again after a pause (writes are not: their callers read back).
#[derive(Debug)]
pub(crate) struct Gated {
    inner: Box<dyn Backend>,
    gate: Arc<Gate>,
}

impl Gated {
    pub(crate) fn new(inner: Box<dyn Backend>, gate: Arc<Gate>) -> Gated {
        Gated { inner, gate }
    }

    /// A read (`what` on `rel`, for the trace), tried again while the store throttles it.
    async fn read<'a, T, F>(
        &'a self,
        what: &str,
        rel: &str,
        op: impl Fn() -> F + Send + Sync,
    ) -> Result<T, StoreError>
    where
        F: Future<Output = Result<T, StoreError>> + Send + 'a,
    {
        let mut attempt = 0;
        let mut backoff = backoff();
        loop {
            let pass = self.gate.enter().await;
            match op().await {
                Ok(v) => {
                    pass.succeeded();
                    return Ok(v);
                }
                Err(e @ StoreError::Throttled { .. }) => {
                    pass.throttled();
                    if attempt >= THROTTLE_RETRIES {
                        return Err(e);
                    }
                    if crate::trace::enabled() {
                        crate::trace::line(&format!(
                            "store: {what} {rel} -> throttled, trying again"
                        ));
                    }
                    backoff.wait().await;
                    attempt += 1;
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// A write: once, in its place at the gate, which it lowers if the store throttled it.
    async fn write<T>(
        &self,
        op: impl Future<Output = Result<T, WriteError>> + Send,
    ) -> Result<T, WriteError> {
        let pass = self.gate.enter().await;
        let result = op.await;
        match &result {
            Ok(_) => pass.succeeded(),
            Err(WriteError::Store(StoreError::Throttled { .. })) => pass.throttled(),
            Err(_) => {}
        }
        result
    }
}

#[async_trait::async_trait]
impl Backend for Gated {
    async fn head(&self, rel: &str) -> Result<Option<Token>, StoreError> {
        self.read("HEAD", rel, || self.inner.head(rel)).await
    }

    async fn get(&self, rel: &str, limit: u64, budget: &Budget) -> Result<Option<Got>, StoreError> {
        self.read("GET", rel, || self.inner.get(rel, limit, budget))
            .await
    }

    async fn get_versioned(
        &self,
        rel: &str,
        limit: u64,
        budget: &Budget,
    ) -> Result<Option<Versioned>, StoreError> {
        self.read("GET", rel, || self.inner.get_versioned(rel, limit, budget))
            .await
    }

    async fn download(
        &self,
        rel: &str,
        limit: u64,
        sink: &mut Sink<'_>,
    ) -> Result<bool, StoreError> {
        let pass = self.gate.enter().await;
        let result = self.inner.download(rel, limit, sink).await;
        if result.is_ok() {
            pass.succeeded();
        }
        result
    }

    async fn list(&self, prefix: &str, range: Range<'_>) -> Result<Paged<Listed>, StoreError> {
        self.read("LIST", prefix, || self.inner.list(prefix, range))
            .await
    }

    async fn list_dirs(&self, prefix: &str) -> Result<Paged<Below>, StoreError> {
        self.read("LIST", prefix, || self.inner.list_dirs(prefix))
            .await
    }

    async fn put(&self, rel: &str, bytes: Bytes, mode: &WriteMode) -> Result<Token, WriteError> {
        self.write(self.inner.put(rel, bytes, mode)).await
    }

    async fn put_file(&self, rel: &str, file: &std::path::Path) -> Result<(), WriteError> {
        self.write(self.inner.put_file(rel, file)).await
    }

    async fn delete(&self, rel: &str, expected: &Token) -> Result<(), WriteError> {
        self.write(self.inner.delete(rel, expected)).await
    }

    async fn delete_all(&self, rels: &[String]) -> Result<(), StoreError> {
        let pass = self.gate.enter().await;
        let result = self.inner.delete_all(rels).await;
        match &result {
            Ok(_) => pass.succeeded(),
            Err(StoreError::Throttled { .. }) => pass.throttled(),
            Err(_) => {}
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

/// How many times a request the store throttled is sent in all by [`until_unthrottled`]: GCS's
/// quota (one write a second to one object) answers a second write within the second 429.
const THROTTLED_TRIES: usize = 8;

/// `request`, sent again after the throttling pause ([`backoff`]) while `throttled` says its
/// error is the store's "slow down" (a throttled request did nothing), [`THROTTLED_TRIES`]
/// times in all.
pub(crate) async fn until_unthrottled<T, E, F>(
    mut request: impl FnMut() -> F,
    throttled: impl Fn(&E) -> bool,
) -> Result<T, E>
where
    F: Future<Output = Result<T, E>>,
{
    let mut pause = backoff();
    for _ in 1..THROTTLED_TRIES {
        match request().await {
            Err(e) if throttled(&e) => pause.wait().await,
            done => return done,
        }
    }
    request().await
}

/// The pauses before trying a throttled request again: from 100 ms doubling up to 5 s, with
/// jitter so that the requests throttled together do not all come back together.
pub(crate) fn backoff() -> crate::backoff::Backoff {
    crate::backoff::Backoff::new(Duration::from_millis(100), Duration::from_secs(5))
        .with_jitter(Duration::from_millis(100))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn throttling_halves_the_limit_and_successes_raise_it() {
        let gate = Gate::new(8);
        gate.enter().await.throttled();
        assert_eq!(gate.limit(), 4);
        // Four places are still taken out of use as passes come back.
        for _ in 0..4 {
            drop(gate.enter().await);
        }
        assert_eq!(gate.permits.available_permits(), 4);
        for _ in 0..4 {
            gate.enter().await.succeeded();
        }
        assert_eq!(gate.limit(), 5);
        assert_eq!(gate.permits.available_permits(), 5);
    }
}
