//! Requests in flight on a cloud store, fewer while it throttles: a store that answers "slow
//! down" (503 SlowDown, 429) halves how many requests the helper keeps in flight, and the
//! request is tried again after a pause; each run of successes lets one more request in again,
//! up to the configured concurrency. A throttled read is slowed, not failed.

use std::sync::Mutex;
use std::time::Duration;

use tokio::sync::{Semaphore, SemaphorePermit};

/// How many times one request is tried again after the store throttled it (beyond the retries
/// of the HTTP client itself); the pauses grow from 200 ms to 5 s, so at most about 30 s.
pub const THROTTLE_RETRIES: u32 = 8;

#[derive(Debug)]
pub struct Gate {
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
pub struct Pass<'a> {
    gate: &'a Gate,
    permit: Option<SemaphorePermit<'a>>,
}

impl Gate {
    pub fn new(max: usize) -> Gate {
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
    pub async fn enter(&self) -> Pass<'_> {
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
    pub fn limit(&self) -> usize {
        self.state.lock().expect("gate lock").limit
    }
}

impl Pass<'_> {
    /// The request succeeded: after as many successes as the limit, one more may be in flight.
    pub fn succeeded(self) {
        let mut s = self.gate.state.lock().expect("gate lock");
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
    pub fn throttled(self) {
        let mut s = self.gate.state.lock().expect("gate lock");
        let lower = (s.limit / 2).max(1);
        s.debt += s.limit - lower;
        s.limit = lower;
        s.successes = 0;
    }
}

impl Drop for Pass<'_> {
    fn drop(&mut self) {
        let mut s = self.gate.state.lock().expect("gate lock");
        if let Some(p) = self.permit.take() {
            if s.debt > 0 {
                s.debt -= 1;
                p.forget();
            }
        }
    }
}

/// Whether an error from the store means "slow down".
pub fn is_throttling(e: &object_store::Error) -> bool {
    let text = e.to_string();
    [
        "503",
        "SlowDown",
        "429",
        "Too Many Requests",
        "Throttl",
        "RequestLimitExceeded",
    ]
    .iter()
    .any(|m| text.contains(m))
}

/// The pauses before trying a throttled request again: from 100 ms doubling up to 5 s, with
/// jitter so that the requests throttled together do not all come back together.
pub fn backoff() -> crate::backoff::Backoff {
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
