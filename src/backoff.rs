//! Waiting before trying again: exponential backoff with jitter, so that racing writers
//! spread out instead of colliding in step. Every retry loop of the helper uses this one.

use std::time::Duration;

/// Pauses that double from `first` up to `max`, each lengthened by up to `jitter`.
#[derive(Debug, Clone)]
pub(crate) struct Backoff {
    next: Duration,
    max: Duration,
    jitter: Duration,
}

impl Backoff {
    pub(crate) fn new(first: Duration, max: Duration) -> Backoff {
        Backoff {
            next: first,
            max,
            jitter: Duration::ZERO,
        }
    }

    /// Adds a random part of up to `jitter` to every pause.
    pub(crate) fn with_jitter(mut self, jitter: Duration) -> Backoff {
        self.jitter = jitter;
        self
    }

    /// The pause to take now; the next one will be twice as long (up to the maximum).
    pub(crate) fn next_pause(&mut self) -> Duration {
        let extra = match self.jitter.as_micros() as u64 {
            0 => Duration::ZERO,
            j => Duration::from_micros(fastrand::u64(..j)),
        };
        let pause = self.next + extra;
        self.next = (self.next * 2).min(self.max);
        pause
    }

    /// Sleeps for the next pause (async).
    pub(crate) async fn wait(&mut self) {
        tokio::time::sleep(self.next_pause()).await;
    }

    /// Sleeps for the next pause, blocking the thread (for code that runs on blocking threads).
    pub(crate) fn wait_blocking(&mut self) {
        std::thread::sleep(self.next_pause());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pauses_double_up_to_the_maximum_with_bounded_jitter() {
        let mut b = Backoff::new(Duration::from_millis(5), Duration::from_millis(20))
            .with_jitter(Duration::from_millis(1));
        let pauses: Vec<Duration> = (0..5).map(|_| b.next_pause()).collect();
        for (p, base) in pauses.iter().zip([5, 10, 20, 20, 20]) {
            let base = Duration::from_millis(base);
            assert!(*p >= base && *p < base + Duration::from_millis(1), "{p:?}");
        }
        let mut plain = Backoff::new(Duration::from_millis(100), Duration::from_secs(1));
        assert_eq!(plain.next_pause(), Duration::from_millis(100));
        assert_eq!(plain.next_pause(), Duration::from_millis(200));
    }
}
