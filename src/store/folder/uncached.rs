//! A folder's reads when its files are not in the page cache: many at once on blocking
//! threads, as a disk serves them best; cached files are read where they are asked for, since
//! a hop to another thread would cost more than the read.

use std::sync::atomic::{AtomicU32, Ordering};

use tokio::sync::OwnedSemaphorePermit;

use super::confined::{LocalDir, OpenFile};
use crate::store::budget::Budget;
use crate::store::error::{failed, StoreError};

/// Reads that go to blocking threads after one that waited on the disk: a cold lake's reads
/// wait in runs.
const STAY_ON_THREADS: u32 = 1024;

/// Whether reads have been waiting on the disk lately.
#[derive(Debug, Default)]
pub(super) struct DiskWaits {
    /// Reads still to send to blocking threads; each read from the cache takes one off, one
    /// that waited on the disk starts the count again.
    on_threads: AtomicU32,
}

impl DiskWaits {
    pub(super) fn reads_wait(&self) -> bool {
        self.on_threads.load(Ordering::Relaxed) > 0
    }

    pub(super) fn saw(&self, disk_read: bool) {
        if disk_read {
            self.on_threads.store(STAY_ON_THREADS, Ordering::Relaxed);
        } else {
            let _ = self
                .on_threads
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1));
        }
    }
}

/// A whole file with its share of the budget.
pub(super) struct Whole {
    pub(super) bytes: Vec<u8>,
    pub(super) room: OwnedSemaphorePermit,
}

/// Reads `rel` here, timing the system calls for `waits`.
pub(super) async fn read_here(
    dir: &LocalDir,
    waits: &DiskWaits,
    rel: &str,
    limit: u64,
    budget: &Budget,
) -> Result<Option<Whole>, StoreError> {
    let before = blocks_read();
    let Some(file) = opened(dir.open_for_read(rel), rel, limit)? else {
        waits.saw(blocks_read() > before);
        return Ok(None);
    };
    // Counted on this thread: the task may go on on another after the budget's wait.
    let opening = blocks_read() > before;
    let room = budget.reserve(file.len()).await;
    let before = blocks_read();
    let bytes = file.read_all(rel, limit)?;
    waits.saw(opening || blocks_read() > before);
    Ok(Some(Whole { bytes, room }))
}

/// Reads `rel` on a blocking thread: opened and, if the budget has room at once, read there
/// too; otherwise read on a second hop once it has.
pub(super) async fn read_on_thread(
    dir: &LocalDir,
    waits: &DiskWaits,
    rel: &str,
    limit: u64,
    budget: &Budget,
) -> Result<Option<Whole>, StoreError> {
    enum Opened {
        Read(Whole),
        Waiting(OpenFile),
    }
    let (dir, owned, room_now) = (dir.clone(), rel.to_string(), budget.clone());
    let (opened, disk_read) = tokio::task::spawn_blocking(move || {
        let before = blocks_read();
        let result = opened(dir.open_for_read(&owned), &owned, limit).and_then(|file| {
            let Some(file) = file else { return Ok(None) };
            match room_now.try_reserve(file.len()) {
                Some(room) => Ok(Some(Opened::Read(Whole {
                    bytes: file.read_all(&owned, limit)?,
                    room,
                }))),
                None => Ok(Some(Opened::Waiting(file))),
            }
        });
        (result, blocks_read() > before)
    })
    .await
    .map_err(|e| failed(rel, e))?;
    waits.saw(disk_read);
    match opened? {
        None => Ok(None),
        Some(Opened::Read(whole)) => Ok(Some(whole)),
        Some(Opened::Waiting(file)) => {
            let room = budget.reserve(file.len()).await;
            let owned = rel.to_string();
            let bytes = tokio::task::spawn_blocking(move || file.read_all(&owned, limit))
                .await
                .map_err(|e| failed(rel, e))??;
            Ok(Some(Whole { bytes, room }))
        }
    }
}

/// The file opened, refused if larger than `limit`.
fn opened(
    file: Result<Option<OpenFile>, StoreError>,
    rel: &str,
    limit: u64,
) -> Result<Option<OpenFile>, StoreError> {
    match file? {
        Some(f) if f.len() > limit => Err(StoreError::TooLarge {
            path: rel.to_string(),
            limit,
        }),
        other => Ok(other),
    }
}

/// The blocks this thread has had read from a disk so far (Linux counts every read it sends
/// to a device, a folder's or an inode's included; a read from the page cache sends none).
#[cfg(target_os = "linux")]
fn blocks_read() -> i64 {
    use nix::sys::resource::{getrusage, UsageWho};
    getrusage(UsageWho::RUSAGE_THREAD).map_or(0, |u| u.block_reads())
}

/// Elsewhere no thread's count is at hand: every read stays where it is asked for.
#[cfg(not(target_os = "linux"))]
fn blocks_read() -> i64 {
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lake_with(files: &[(&str, usize)]) -> (tempfile::TempDir, LocalDir) {
        let root = tempfile::tempdir().unwrap();
        for (name, size) in files {
            std::fs::write(root.path().join(name), vec![b'x'; *size]).unwrap();
        }
        let dir = LocalDir::open(root.path()).unwrap();
        (root, dir)
    }

    #[test]
    fn a_read_from_the_disk_sends_reads_to_threads_until_enough_come_from_the_cache() {
        let waits = DiskWaits::default();
        assert!(!waits.reads_wait());
        waits.saw(true);
        for _ in 0..STAY_ON_THREADS - 1 {
            waits.saw(false);
        }
        assert!(waits.reads_wait());
        waits.saw(true);
        for _ in 0..STAY_ON_THREADS {
            waits.saw(false);
        }
        assert!(!waits.reads_wait());
        waits.saw(false);
        assert!(!waits.reads_wait());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn both_roads_read_the_same_and_refuse_the_same() {
        let (_root, dir) = lake_with(&[("small", 100), ("large", 3000)]);
        let waits = DiskWaits::default();
        for on_thread in [false, true] {
            let read = |rel: &'static str, limit: u64, budget: Budget| {
                let (dir, waits) = (&dir, &waits);
                async move {
                    match on_thread {
                        false => read_here(dir, waits, rel, limit, &budget).await,
                        true => read_on_thread(dir, waits, rel, limit, &budget).await,
                    }
                }
            };
            let small = read("small", 1000, Budget::new(1 << 20)).await.unwrap();
            assert_eq!(small.unwrap().bytes, vec![b'x'; 100]);
            assert!(read("absent", 1000, Budget::new(1 << 20))
                .await
                .unwrap()
                .is_none());
            let too_large = read("large", 1000, Budget::new(1 << 20)).await;
            assert!(matches!(
                too_large,
                Err(StoreError::TooLarge { limit: 1000, .. })
            ));
            // No room at first: the file is read once the held bytes are let go.
            let budget = Budget::new(4000);
            let held = budget.reserve(3500).await;
            let waiting = tokio::spawn({
                let (dir, budget) = (dir.clone(), budget.clone());
                async move {
                    let waits = DiskWaits::default();
                    let read = match on_thread {
                        false => read_here(&dir, &waits, "large", 5000, &budget).await,
                        true => read_on_thread(&dir, &waits, "large", 5000, &budget).await,
                    };
                    read.unwrap().unwrap().bytes.len()
                }
            });
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            assert!(!waiting.is_finished(), "read beyond the budget");
            drop(held);
            assert_eq!(waiting.await.unwrap(), 3000);
        }
    }
}
