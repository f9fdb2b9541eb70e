//! Temporary files this process made, removed if a signal ends it (Ctrl-C, a hang-up, a
//! kill), as Git and gix-tempfile remove theirs. The signals are caught (tokio's `signal`) only
//! once a file is registered, so a command that writes nothing keeps the default actions.
//! SIGPIPE needs nothing: Rust ignores it, so a closed pipe is a write error, and the error's
//! path removes the file as any failure does.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Once, OnceLock};

use parking_lot::{Condvar, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::watch;

static FILES: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());
static LISTENING: Once = Once::new();
/// A signal was caught: the process is ending as that signal says.
static CAUGHT: AtomicBool = AtomicBool::new(false);

/// How long a child's death by a signal waits for the same signal to reach this process.
const SIGNAL_GRACE: Duration = Duration::from_secs(5);

/// Uploads in parts under way, which a signal aborts before the process ends.
static UPLOADS: Mutex<usize> = Mutex::new(0);
static UPLOADS_ENDED: Condvar = Condvar::new();
static SIGNALLED: OnceLock<watch::Sender<bool>> = OnceLock::new();
/// How long a signal's handler waits for the uploads to be aborted (one request each).
const ABORT_GRACE: Duration = Duration::from_secs(10);

fn signalled() -> &'static watch::Sender<bool> {
    SIGNALLED.get_or_init(|| watch::channel(false).0)
}

/// An upload in parts under way (S3 bills the parts of an upload neither completed nor
/// aborted, until a lifecycle rule removes them): while this is held, a signal's handler tells
/// it ([`AbortOnSignal::signalled`]) and waits up to 10 s for it to be dropped, the upload
/// aborted, before the process exits.
pub(crate) struct AbortOnSignal(watch::Receiver<bool>);

pub(crate) fn abort_on_signal() -> AbortOnSignal {
    LISTENING.call_once(listen);
    *UPLOADS.lock() += 1;
    AbortOnSignal(signalled().subscribe())
}

impl AbortOnSignal {
    /// Returns once a signal is ending the process.
    pub(crate) async fn signalled(&mut self) {
        let _ = self.0.wait_for(|s| *s).await;
    }
}

impl Drop for AbortOnSignal {
    fn drop(&mut self) {
        *UPLOADS.lock() -= 1;
        UPLOADS_ENDED.notify_all();
    }
}

/// Once a caught signal is being handled, never returns: the handler ends the process with
/// 128 + the signal, and what this thread would do next (report an error, exit 128) must not
/// come first. Returns at once when no signal was caught.
pub(crate) fn wait_for_the_signal_to_end_the_process() {
    if CAUGHT.load(Ordering::SeqCst) {
        loop {
            std::thread::park();
        }
    }
}

/// Tells every upload under way to abort, and waits (at most [`ABORT_GRACE`]) until they have.
fn abort_uploads() {
    signalled().send_replace(true);
    let until = Instant::now() + ABORT_GRACE;
    let mut under_way = UPLOADS.lock();
    while *under_way > 0 {
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return;
        }
        UPLOADS_ENDED.wait_for(&mut under_way, left);
    }
}

/// `path` (a file, or a folder with all it holds) is removed if a signal ends the process
/// before [`forget`] is called for it.
pub(crate) fn remove_on_signal(path: &Path) {
    LISTENING.call_once(listen);
    FILES.lock().push(path.to_path_buf());
}

/// `path` was renamed into place or removed: a signal no longer concerns it.
pub(crate) fn forget(path: &Path) {
    FILES.lock().retain(|f| f != path);
}

/// Catches SIGINT, SIGTERM and SIGHUP from now on (the handlers are in place when this
/// returns); a thread of its own waits for them, removes the files and exits as a process
/// the signal ended (128 + its number). If the handlers cannot be set, the defaults stay.
fn listen() {
    let (ready, set) = std::sync::mpsc::channel();
    let spawned = std::thread::Builder::new()
        .name("fdl-signals".into())
        .spawn(move || {
            let number = wait_for_signal(&ready);
            CAUGHT.store(true, Ordering::SeqCst);
            crate::testhook::delay_signal_handling();
            abort_uploads();
            remove_all();
            std::process::exit(128 + number);
        });
    if spawned.is_ok() {
        let _ = set.recv();
    }
}

/// A child (Git) that `status` says a signal ended (Ctrl-C reaches the whole process group,
/// and Git dies of it or exits 128 + its number): while this process catches signals, the
/// same signal is given up to 5 s to be seen here, and then never returns, its handler
/// ending the process with 128 + the signal. So the signal, not the child's failure, decides
/// the exit status, however loaded the machine. Returns at once otherwise.
pub(crate) fn yield_to_signal(status: &std::process::ExitStatus) {
    use std::os::unix::process::ExitStatusExt;
    let ours = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];
    let by_signal = status.signal().is_some_and(|s| ours.contains(&s))
        || status
            .code()
            .is_some_and(|c| ours.iter().any(|s| c == 128 + s));
    if !by_signal || !LISTENING.is_completed() {
        return;
    }
    let until = Instant::now() + SIGNAL_GRACE;
    while Instant::now() < until {
        wait_for_the_signal_to_end_the_process();
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Sets the handlers, says so on `ready` (also when they cannot be set, and then never
/// returns), and waits for the first of the signals; returns its number.
fn wait_for_signal(ready: &std::sync::mpsc::Sender<()>) -> i32 {
    use tokio::signal::unix::{signal, SignalKind};
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build();
    let caught = runtime.as_ref().ok().and_then(|runtime| {
        let _entered = runtime.enter();
        [
            (SignalKind::interrupt(), libc::SIGINT),
            (SignalKind::terminate(), libc::SIGTERM),
            (SignalKind::hangup(), libc::SIGHUP),
        ]
        .into_iter()
        .map(|(kind, number)| signal(kind).map(|s| (s, number)))
        .collect::<Result<Vec<_>, _>>()
        .ok()
    });
    let _ = ready.send(());
    let (Ok(runtime), Some(mut caught)) = (runtime, caught) else {
        // Nothing to wait for: the thread parks for good, leaving the process to its defaults.
        loop {
            std::thread::park();
        }
    };
    runtime.block_on(async {
        let waits = caught.iter_mut().map(|(s, n)| {
            let n = *n;
            Box::pin(async move {
                s.recv().await;
                n
            })
        });
        futures::future::select_all(waits).await.0
    })
}

fn remove_all() {
    let files = FILES.lock().clone();
    for f in files {
        // A folder (the packer's temporary clone) goes whole; a file alone.
        match std::fs::symlink_metadata(&f).map(|m| m.is_dir()) {
            Ok(true) => drop(std::fs::remove_dir_all(f)),
            _ => drop(std::fs::remove_file(f)),
        }
    }
}
