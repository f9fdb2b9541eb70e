//! Crash points for the test suite: a test sets a variable naming a file, the helper writes
//! its pid there and waits to be killed at that point. Compiled only into debug builds (what
//! `cargo build` and `cargo test` make); release builds (`cargo install`, `make install`) have
//! no crash point and do not read these variables.

/// Where a test may stop the helper.
#[derive(Debug, Clone, Copy)]
pub enum Point {
    /// A push, after its ref writes and before `refs.json`.
    BeforeRefsJson,
    /// A push, in a folder lake, holding `refs.json.lock` with the new content in a temporary
    /// file not yet renamed into place.
    WritingRefsJson,
    /// A fetch, with half of the pack written to its temporary file.
    WritingPack,
    /// A push, in a folder lake, with a lock written under its hidden name, not yet linked
    /// into place.
    TakingLock,
    /// A `pack`, with its temporary clone of the lake made.
    PackCloned,
    /// A `pack`'s upload in parts, its first part sent: the caller waits there for a signal
    /// ([`reached`]), its runtime running, so that the signal can abort the upload.
    UploadingParts,
}

/// Stops here if the test asked for this point: writes the pid to the file the variable
/// names (only if that file does not exist yet, so nothing is ever overwritten), then sleeps.
#[cfg(debug_assertions)]
pub fn stop_at(point: Point) {
    if reached(point) {
        std::thread::sleep(std::time::Duration::from_secs(60));
    }
}

/// Whether the test asked for this point, its pid now written as [`stop_at`] writes it: the
/// caller waits there in its own way.
#[cfg(debug_assertions)]
pub fn reached(point: Point) -> bool {
    let var = match point {
        Point::BeforeRefsJson => "GIT_REMOTE_FDL_TEST_STOP_BEFORE_REFS_JSON",
        Point::WritingRefsJson => "GIT_REMOTE_FDL_TEST_STOP_WRITING_REFS_JSON",
        Point::WritingPack => "GIT_REMOTE_FDL_TEST_STOP_WRITING_PACK",
        Point::TakingLock => "GIT_REMOTE_FDL_TEST_STOP_TAKING_LOCK",
        Point::PackCloned => "GIT_REMOTE_FDL_TEST_STOP_PACK_CLONED",
        Point::UploadingParts => "GIT_REMOTE_FDL_TEST_STOP_UPLOADING_PARTS",
    };
    let Some(path) = std::env::var_os(var) else {
        return false;
    };
    let created = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path);
    let Ok(mut f) = created else {
        return false;
    };
    let _ = std::io::Write::write_all(&mut f, std::process::id().to_string().as_bytes());
    true
}

/// Release builds: no crash point.
#[cfg(not(debug_assertions))]
#[inline(always)]
pub fn stop_at(_point: Point) {}

/// Release builds: no crash point.
#[cfg(not(debug_assertions))]
#[inline(always)]
pub fn reached(_point: Point) -> bool {
    false
}

/// For the folder tests: `GIT_REMOTE_FDL_TEST_FOLDER_READS_ON_THREADS` set sends every read of
/// a folder lake to a blocking thread, as reads that wait on a disk go, whatever is cached.
#[cfg(debug_assertions)]
pub fn folder_reads_on_threads() -> bool {
    std::env::var_os("GIT_REMOTE_FDL_TEST_FOLDER_READS_ON_THREADS").is_some()
}

/// Release builds: reads go where the disk sends them.
#[cfg(not(debug_assertions))]
#[inline(always)]
pub fn folder_reads_on_threads() -> bool {
    false
}

/// For the packs tests: `GIT_REMOTE_FDL_TEST_SUGGEST_TRUST_AT` lowers how many versions a
/// fetch reads one by one before it suggests trusting the lake's packs.
#[cfg(debug_assertions)]
pub fn suggest_trusting_packs_at(default: usize) -> usize {
    std::env::var("GIT_REMOTE_FDL_TEST_SUGGEST_TRUST_AT")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(default)
}

/// Release builds: the helper's own threshold.
#[cfg(not(debug_assertions))]
#[inline(always)]
pub fn suggest_trusting_packs_at(default: usize) -> usize {
    default
}

/// For the signal tests: the thread that handles a caught signal waits the milliseconds that
/// `GIT_REMOTE_FDL_TEST_SIGNAL_DELAY_MS` gives before it acts, as a loaded machine delays it.
#[cfg(debug_assertions)]
pub fn delay_signal_handling() {
    let delay = std::env::var("GIT_REMOTE_FDL_TEST_SIGNAL_DELAY_MS")
        .ok()
        .and_then(|ms| ms.parse().ok());
    if let Some(ms) = delay {
        std::thread::sleep(std::time::Duration::from_millis(ms));
    }
}

/// Release builds: no delay.
#[cfg(not(debug_assertions))]
#[inline(always)]
pub fn delay_signal_handling() {}

/// The delay above is the process's the test started, not its children's (the helper that
/// Git runs for `pack`'s inner clone catches the same Ctrl-C).
#[cfg(debug_assertions)]
pub fn keep_signal_delay_to_this_process(child: &mut std::process::Command) {
    child.env_remove("GIT_REMOTE_FDL_TEST_SIGNAL_DELAY_MS");
}

/// Release builds: no delay to keep.
#[cfg(not(debug_assertions))]
#[inline(always)]
pub fn keep_signal_delay_to_this_process(_child: &mut std::process::Command) {}

/// For the memory tests: appends this process's peak resident memory (`VmHWM`, in KiB) to the
/// file `GIT_REMOTE_FDL_TEST_PEAK_FILE` names. Measured by the helper itself, because a
/// process forked from a large test harness would count the harness's pages as its own.
#[cfg(debug_assertions)]
pub fn record_peak_memory() {
    let Some(path) = std::env::var_os("GIT_REMOTE_FDL_TEST_PEAK_FILE") else {
        return;
    };
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let Some(kib) = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
    else {
        return;
    };
    let file = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(path);
    if let Ok(mut f) = file {
        let _ = std::io::Write::write_all(&mut f, format!("{kib}\n").as_bytes());
    }
}

/// Release builds: nothing to record.
#[cfg(not(debug_assertions))]
#[inline(always)]
pub fn record_peak_memory() {}
