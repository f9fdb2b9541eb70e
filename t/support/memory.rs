//! Memory as the helper measures it: its peak resident memory, recorded at exit by its test
//! hook (`GIT_REMOTE_FDL_TEST_PEAK_FILE`), the budget the manual promises, and a large record.

use super::TestEnv;

/// Runs `git` and returns whether it succeeded, the helper's peak resident memory (KiB, as
/// the helper reads it from /proc at exit: a process forked from this large test binary would
/// count the binary's pages), and git's stderr.
pub fn helper_peak_rss(t: &TestEnv, cwd: &str, args: &[&str]) -> (bool, u64, String) {
    peak_rss_of(t, "git", cwd, args)
}

/// As [`helper_peak_rss`], for any program that runs the helper (the helper itself included).
pub fn peak_rss_of(t: &TestEnv, program: &str, cwd: &str, args: &[&str]) -> (bool, u64, String) {
    let file = t.path(&format!("peak-{}", args[0]));
    let _ = std::fs::remove_file(&file);
    let out = t
        .command(program, cwd, args)
        .env("GIT_REMOTE_FDL_TEST_PEAK_FILE", &file)
        .output()
        .unwrap();
    let peaks = std::fs::read_to_string(&file).unwrap_or_default();
    let peak = peaks.lines().filter_map(|l| l.parse::<u64>().ok()).max();
    let peak = peak.expect("the helper recorded its peak memory");
    (
        out.status.success(),
        peak,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A JSON array of zeros about `bytes` long: what a writer's unknown field may hold, and, with
/// serde_json's `arbitrary_precision`, about 130 bytes a `0` once parsed into a tree.
pub fn zeros(bytes: usize) -> String {
    let mut out = String::with_capacity(bytes + 2);
    out.push('[');
    while out.len() + 2 < bytes {
        out.push_str("0,");
    }
    out.push_str("0]");
    out
}

/// What the manual promises: file contents in flight under 128 MiB, whatever the lake holds.
pub const BUDGET_KIB: u64 = 128 << 10;
