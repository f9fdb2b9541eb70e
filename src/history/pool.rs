//! Reads run side by side: a few tasks, each with its share of the store's requests in flight,
//! take items from one queue that may be fed while they run, so that what a result names is
//! read in the same stream instead of a round trip later.

use std::collections::VecDeque;
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::{Mutex, MutexGuard};
use std::task::{Poll, Waker};
use std::time::Duration;

use tokio::time::Instant;

use futures::{FutureExt, Stream, StreamExt};
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};

/// Results a reading task hands over at once while more are ready.
const SEND_BATCH: usize = 64;

/// How long a task holds results while more may come: far below a store's round trip, above
/// the gaps between a fast store's answers.
const LINGER: Duration = Duration::from_millis(1);

/// Tasks that read side by side, so that parsing and hashing (and a folder's reads, which are
/// synchronous) use every core.
const WORKERS: usize = 4;

/// Items being read; results come in completion order, in batches.
pub(super) struct ReadPool<I, T> {
    queue: Arc<Mutex<Queue<I>>>,
    results: UnboundedReceiver<Vec<T>>,
    /// Items fed whose results have not come yet.
    waiting: usize,
    closed: bool,
}

/// The items not yet taken, shared by the tasks: whichever has room takes the next, so no
/// task idles while another holds a backlog. A lock per item, never contended for long; a
/// task finding it empty leaves its waker, woken by the next feed (not tokio's channel,
/// whose budget would stop a task reading a folder, always ready, every 128 items).
struct Queue<I> {
    items: VecDeque<I>,
    closed: bool,
    sleeping: Vec<Waker>,
}

fn lock<I>(queue: &Mutex<Queue<I>>) -> MutexGuard<'_, Queue<I>> {
    // A task that panicked holding it left the queue whole: a push or pop does not unwind.
    queue.lock()
}

impl<I: Send + 'static, T: Send + 'static> ReadPool<I, T> {
    /// Starts the tasks: `read(context, item)` for each item fed, `in_flight` reads at once in
    /// all (each read may make several requests: the caller divides).
    pub(super) fn start<C, F, Fut>(context: C, in_flight: usize, read: F) -> Self
    where
        C: Send + Sync + 'static,
        F: Fn(Arc<C>, I) -> Fut + Clone + Send + Sync + 'static,
        Fut: Future<Output = T> + Send,
    {
        let (tx, results) = unbounded_channel();
        // Shared, not cloned for each read: a reading's clone copies the lake's URL and options.
        let context = Arc::new(context);
        let share = in_flight.div_ceil(WORKERS).max(1);
        let queue = Arc::new(Mutex::new(Queue {
            items: VecDeque::new(),
            closed: false,
            sleeping: Vec::new(),
        }));
        for _ in 0..WORKERS {
            let (queue, context, tx, read) =
                (queue.clone(), context.clone(), tx.clone(), read.clone());
            tokio::spawn(async move {
                // Items taken, against results given: what is in flight.
                let taken = Arc::new(AtomicUsize::new(0));
                let reads = items_of(queue, taken.clone())
                    .map(|item| read(context.clone(), item))
                    .buffer_unordered(share);
                hand_over(reads, &taken, share, &tx).await;
            });
        }
        ReadPool {
            queue,
            results,
            waiting: 0,
            closed: false,
        }
    }

    /// Queues `items` to be read, in order.
    pub(super) fn feed(&mut self, items: Vec<I>) {
        if self.closed || items.is_empty() {
            return;
        }
        self.waiting += items.len();
        let mut q = lock(&self.queue);
        q.items.extend(items);
        let sleeping = std::mem::take(&mut q.sleeping);
        drop(q);
        sleeping.into_iter().for_each(Waker::wake);
    }

    /// No more items come: the tasks end once the queue is read.
    pub(super) fn close(&mut self) {
        self.closed = true;
        let mut q = lock(&self.queue);
        q.closed = true;
        let sleeping = std::mem::take(&mut q.sleeping);
        drop(q);
        sleeping.into_iter().for_each(Waker::wake);
    }

    /// Items fed whose results have not come yet.
    pub(super) fn waiting(&self) -> usize {
        self.waiting
    }

    /// The next results; `None` once closed and every result has come.
    pub(super) async fn next(&mut self) -> Option<Vec<T>> {
        if self.waiting == 0 && self.closed {
            return None;
        }
        let batch = self.results.recv().await?;
        self.waiting -= batch.len();
        Some(batch)
    }
}

/// The items a task takes from `queue`, each counted in `taken`; ends once the queue is closed
/// and empty.
fn items_of<I>(queue: Arc<Mutex<Queue<I>>>, taken: Arc<AtomicUsize>) -> impl Stream<Item = I> {
    futures::stream::poll_fn(move |cx| {
        let mut q = lock(&queue);
        if let Some(item) = q.items.pop_front() {
            taken.fetch_add(1, Ordering::Relaxed);
            return Poll::Ready(Some(item));
        }
        if q.closed {
            return Poll::Ready(None);
        }
        if !q.sleeping.iter().any(|w| w.will_wake(cx.waker())) {
            q.sleeping.push(cx.waker().clone());
        }
        Poll::Pending
    })
}

/// Sends the results of `reads` to `tx` in batches, until `reads` ends or nobody receives.
async fn hand_over<T>(
    reads: impl Stream<Item = T>,
    taken: &AtomicUsize,
    share: usize,
    tx: &UnboundedSender<Vec<T>>,
) {
    let mut reads = std::pin::pin!(reads);
    let (mut batch, mut given) = (Vec::with_capacity(SEND_BATCH), 0);
    let mut held_since = Instant::now();
    loop {
        // Results go out in batches: a wake-up of the receiver per result costs more than a
        // folder's read (a clone over HTTP at 0 ms took 5% longer). Before this task waits, it
        // sends what it holds if nothing is in flight (the receiver may be waiting for it
        // before it feeds more) or if it holds as many as it reads at once (about a round
        // trip's worth); otherwise once it has held one for `LINGER`, so that a result is never
        // held for the round trip of reads started after it (what it names waits on it).
        let next = match reads.next().now_or_never() {
            Some(next) => next,
            None => {
                let idle = taken.load(Ordering::Relaxed) == given;
                if ((idle && !batch.is_empty()) || batch.len() >= share)
                    && tx.send(std::mem::take(&mut batch)).is_err()
                {
                    return;
                }
                if batch.is_empty() {
                    reads.next().await
                } else {
                    tokio::select! {
                        biased;
                        next = reads.next() => next,
                        () = tokio::time::sleep_until(held_since + LINGER) => {
                            if tx.send(std::mem::take(&mut batch)).is_err() {
                                return;
                            }
                            reads.next().await
                        }
                    }
                }
            }
        };
        let Some(result) = next else { break };
        given += 1;
        if batch.is_empty() {
            held_since = Instant::now();
        }
        batch.push(result);
        if batch.len() == SEND_BATCH && tx.send(std::mem::take(&mut batch)).is_err() {
            return;
        }
    }
    let _ = tx.send(batch);
}

/// Dropped before its end (an error): what is queued is not read, and the tasks end.
impl<I, T> Drop for ReadPool<I, T> {
    fn drop(&mut self) {
        let mut q = lock(&self.queue);
        q.items.clear();
        q.closed = true;
        let sleeping = std::mem::take(&mut q.sleeping);
        drop(q);
        sleeping.into_iter().for_each(Waker::wake);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_pool_dropped_early_reads_nothing_more_of_its_queue() {
        let reads = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counted = reads.clone();
        let mut pool = ReadPool::start(counted, 4, |counted, n: u32| async move {
            counted.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            n
        });
        pool.feed((0..1000).collect());
        let first = pool.next().await;
        drop(pool);
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        assert!(first.is_some());
        assert!(reads.load(std::sync::atomic::Ordering::Relaxed) < 20);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn items_fed_while_it_runs_are_read_and_every_result_comes_once() {
        let mut pool = ReadPool::start((), 8, |_, n: u32| async move { n * 2 });
        pool.feed((0..100).collect());
        let mut got = Vec::new();
        let mut fed_more = false;
        while let Some(batch) = pool.next().await {
            got.extend(batch);
            if !fed_more {
                fed_more = true;
                pool.feed(vec![100]);
                pool.feed((101..150).collect());
            }
            if pool.waiting() == 0 {
                pool.close();
            }
        }
        got.sort();
        assert_eq!(got, (0..150).map(|n| n * 2).collect::<Vec<_>>());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_result_is_not_held_while_reads_taken_after_it_are_in_flight() {
        // What a result names is fed as soon as it comes: holding it for the slow reads the
        // same task took after it would cost a round trip.
        let mut pool = ReadPool::start((), 64, |_, slow: bool| async move {
            if slow {
                tokio::time::sleep(std::time::Duration::from_secs(5)).await;
            }
            slow
        });
        let started = std::time::Instant::now();
        pool.feed(std::iter::once(false).chain([true; 60]).collect());
        let first = pool.next().await.unwrap();
        assert_eq!(first, vec![false]);
        assert!(started.elapsed() < std::time::Duration::from_secs(2));
    }

    #[tokio::test]
    async fn a_closed_pool_with_nothing_fed_ends_at_once() {
        let mut pool = ReadPool::start((), 8, |_, n: u32| async move { n });
        pool.close();
        assert!(pool.next().await.is_none());
    }
}
