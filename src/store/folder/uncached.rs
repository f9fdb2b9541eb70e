//! A folder's reads when its files are not in the page cache: many at once on blocking
//! threads, as a disk serves them best; cached files are read where they are asked for, since
//! a hop to another thread would cost more than the read.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use parking_lot::Mutex;
use tokio::sync::OwnedSemaphorePermit;

use super::confined::{LocalDir, OpenFile};
use crate::store::budget::Budget;
use crate::store::error::{failed, StoreError};

/// Counted reads between two decisions of where reads go.
const WINDOW: u32 = 32;

/// The share of counted reads that went to the disk above which reads go to blocking threads:
/// a hop there costs a read about 12 microseconds of CPU, and lets its wait on the disk (about
/// 100) overlap many others'. Below it, a lake mostly cached gains less than the hops cost.
const TO_THREADS_PERCENT: u32 = 15;

/// A read here is counted once in so many: counting costs two system calls, a fifth of a
/// cached read's time. A read on a blocking thread is always counted.
const COUNT_ONE_IN: u32 = 16;

/// Where reads go, decided anew every [`WINDOW`] counted reads from how many went to the disk.
#[derive(Debug, Default)]
pub(super) struct DiskWaits {
    /// Every read on a thread, whatever the window says (a test's road).
    forced: bool,
    on_threads: AtomicBool,
    /// Reads asked for here so far: one in [`COUNT_ONE_IN`] is counted.
    asked_here: AtomicU32,
    window: Mutex<Window>,
}

#[derive(Debug, Default)]
struct Window {
    counted: u32,
    to_disk: u32,
}

impl DiskWaits {
    pub(super) fn new() -> DiskWaits {
        DiskWaits {
            forced: crate::testhook::folder_reads_on_threads(),
            ..DiskWaits::default()
        }
    }

    pub(super) fn reads_wait(&self) -> bool {
        self.forced || self.on_threads.load(Ordering::Relaxed)
    }

    /// Whether to count the disk's blocks around the next read here.
    fn counts_next(&self) -> bool {
        self.asked_here
            .fetch_add(1, Ordering::Relaxed)
            .is_multiple_of(COUNT_ONE_IN)
    }

    pub(super) fn saw(&self, disk_read: bool) {
        let mut window = self.window.lock();
        window.counted += 1;
        window.to_disk += u32::from(disk_read);
        if window.counted == WINDOW {
            let waits = window.to_disk * 100 > TO_THREADS_PERCENT * WINDOW;
            self.on_threads.store(waits, Ordering::Relaxed);
            *window = Window::default();
        }
    }
}

/// A read asked of the folder: a file, the most it may hold, the budget it is held in.
#[derive(Clone, Copy)]
pub(super) struct Asked<'a> {
    pub(super) dir: &'a LocalDir,
    pub(super) rel: &'a str,
    pub(super) limit: u64,
    pub(super) budget: &'a Budget,
}

/// Reads a file here, or on a blocking thread while reads wait on the disk.
pub(super) async fn read(waits: &DiskWaits, asked: Asked<'_>) -> Result<Option<Whole>, StoreError> {
    match waits.reads_wait() {
        false => read_here(waits, asked).await,
        true => read_on_thread(waits, asked).await,
    }
}

/// A whole file with its share of the budget.
pub(super) struct Whole {
    pub(super) bytes: Vec<u8>,
    pub(super) room: OwnedSemaphorePermit,
}

/// Reads `rel` here; once in [`COUNT_ONE_IN`], tells `waits` whether it went to the disk.
async fn read_here(waits: &DiskWaits, asked: Asked<'_>) -> Result<Option<Whole>, StoreError> {
    let (rel, limit) = (asked.rel, asked.limit);
    let before = waits.counts_next().then(blocks_read);
    let went_to_disk = |before: Option<i64>| before.is_some_and(|b| blocks_read() > b);
    let Some(file) = asked.dir.open_for_read(rel, limit)? else {
        if before.is_some() {
            waits.saw(went_to_disk(before));
        }
        return Ok(None);
    };
    // Counted on this thread: the task may go on on another after the budget's wait.
    let opening = went_to_disk(before);
    let room = asked.budget.reserve(file.len()).await;
    let before = before.map(|_| blocks_read());
    let bytes = file.read_all(rel, limit)?;
    if before.is_some() {
        waits.saw(opening || went_to_disk(before));
    }
    Ok(Some(Whole { bytes, room }))
}

/// Reads `rel` on a blocking thread: opened and, if the budget has room at once, read there
/// too; otherwise read on a second hop once it has.
async fn read_on_thread(waits: &DiskWaits, asked: Asked<'_>) -> Result<Option<Whole>, StoreError> {
    let Asked {
        dir,
        rel,
        limit,
        budget,
    } = asked;
    enum Opened {
        Read(Whole),
        Waiting(OpenFile),
    }
    let (dir, owned, room_now) = (dir.clone(), rel.to_string(), budget.clone());
    let (opened, disk_read) = tokio::task::spawn_blocking(move || {
        let before = blocks_read();
        let result = dir.open_for_read(&owned, limit).and_then(|file| {
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
    fn reads_go_to_threads_while_enough_of_them_go_to_the_disk() {
        let waits = DiskWaits::default();
        let window = |to_disk: u32| {
            for i in 0..WINDOW {
                waits.saw(i < to_disk);
            }
            waits.reads_wait()
        };
        assert!(!waits.reads_wait());
        assert!(window(WINDOW));
        assert!(window(WINDOW / 4));
        assert!(!window(WINDOW / 8));
        assert!(!window(0));
        // Decided once a window is full, not before.
        for _ in 0..WINDOW - 1 {
            waits.saw(true);
        }
        assert!(!waits.reads_wait());
        waits.saw(true);
        assert!(waits.reads_wait());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn both_roads_read_the_same_and_refuse_the_same() {
        let (_root, dir) = lake_with(&[("small", 100), ("large", 3000)]);
        let waits = DiskWaits::default();
        for on_thread in [false, true] {
            let read = |rel: &'static str, limit: u64, budget: Budget| {
                let (dir, waits) = (&dir, &waits);
                async move {
                    let asked = Asked {
                        dir,
                        rel,
                        limit,
                        budget: &budget,
                    };
                    match on_thread {
                        false => read_here(waits, asked).await,
                        true => read_on_thread(waits, asked).await,
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
                    let asked = Asked {
                        dir: &dir,
                        rel: "large",
                        limit: 5000,
                        budget: &budget,
                    };
                    let read = match on_thread {
                        false => read_here(&waits, asked).await,
                        true => read_on_thread(&waits, asked).await,
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
