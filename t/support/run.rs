//! Running the helper in a test: its own commands, a protocol session on its stdin, any
//! command under a deadline, waiting for a condition, and a helper stopped at a crash point.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use super::TestEnv;

/// The built helper.
pub const HELPER: &str = env!("CARGO_BIN_EXE_git-remote-fdl");

/// Bytes a process printed, as text (lossy, so that a test can always show what it got).
pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// `git-remote-fdl <args>` in `cwd`, to completion.
pub fn helper(t: &TestEnv, cwd: &str, args: &[&str]) -> Output {
    t.command(HELPER, cwd, args).output().unwrap()
}

/// `git-remote-fdl pack <url>`, which must succeed; what it said on stderr.
pub fn pack(t: &TestEnv, url: &str) -> String {
    let out = helper(t, ".", &["pack", url]);
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "pack {url}: {stderr}");
    stderr
}

/// Runs the helper as Git would (`git-remote-fdl <remote> <url>`), with `input` on stdin.
pub fn helper_session(t: &TestEnv, cwd: &str, args: &[&str], input: &[u8]) -> Output {
    helper_session_in(t, cwd, args, input, &[])
}

/// As [`helper_session`], with these variables set too.
pub fn helper_session_in(
    t: &TestEnv,
    cwd: &str,
    args: &[&str],
    input: &[u8],
    env: &[(&str, &str)],
) -> Output {
    let mut c = t.command(HELPER, cwd, args);
    c.envs(env.iter().copied());
    c.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = c.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_vec();
    // The helper may stop reading early (that is the point of some tests).
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let out = child.wait_with_output().unwrap();
    let _ = writer.join();
    out
}

/// Runs a command, killing it and failing the test if it takes longer than `limit` (a
/// deadline against a hang, never a measure: keep it generous).
pub fn run_within(mut cmd: Command, limit: Duration) -> Output {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > limit {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "still running after {limit:?}; stderr so far:\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

/// Polls `done` until it holds; fails the test, saying what never happened, after `limit` (a
/// deadline against a hang: keep it generous).
pub fn wait_until(limit: Duration, what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !done() {
        assert!(Instant::now() < deadline, "{what}: not after {limit:?}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Waits (polling) for a helper stopped at a crash point (`src/testhook.rs`) to write its pid
/// to `pid_file`, and gives it.
pub fn pid_at_crash_point(pid_file: &Path) -> i32 {
    let mut pid = None;
    wait_until(
        Duration::from_secs(60),
        "the helper never reached the crash point",
        || {
            pid = std::fs::read_to_string(pid_file)
                .ok()
                .and_then(|p| p.trim().parse::<i32>().ok());
            pid.is_some()
        },
    );
    pid.unwrap()
}

/// Waits for the helper to stop at its crash point, then sends it `signal`.
pub fn signal_at_crash_point(pid_file: &Path, signal: i32) {
    let pid = pid_at_crash_point(pid_file);
    assert_eq!(unsafe { libc::kill(pid, signal) }, 0);
}

/// Waits for a helper stopped at a crash point to write its pid, then kills it.
pub fn kill_at_crash_point(pid_file: &Path) {
    signal_at_crash_point(pid_file, libc::SIGKILL);
}

/// Runs git in `cwd` with the crash point `var` set, kills the helper there, and checks that
/// git failed.
pub fn killed_at(t: &TestEnv, cwd: &str, args: &[&str], var: &str) {
    let pid_file = t.path("helper.pid");
    let _ = std::fs::remove_file(&pid_file);
    let mut git = t
        .command("git", cwd, args)
        .env(var, &pid_file)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    kill_at_crash_point(&pid_file);
    assert!(!git.wait().unwrap().success());
}

/// The names in the test folder's `dir` that `keep` keeps: what a killed writer left there.
pub fn names_in(t: &TestEnv, dir: &str, keep: impl Fn(&str) -> bool) -> Vec<String> {
    std::fs::read_dir(t.path(dir))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| keep(n))
        .collect()
}

/// Files opened in one folder, as the kernel reports them (inotify): a test sees that another
/// process reached a point (read a lock, say) without sleeping and hoping it did.
pub struct OpenWatch {
    fd: i32,
}

impl OpenWatch {
    /// Starts watching `dir` for files opened in it.
    pub fn new(dir: &Path) -> OpenWatch {
        use std::os::unix::ffi::OsStrExt;
        let fd = unsafe { libc::inotify_init1(libc::IN_CLOEXEC | libc::IN_NONBLOCK) };
        assert!(fd >= 0, "inotify: {}", std::io::Error::last_os_error());
        let path = std::ffi::CString::new(dir.as_os_str().as_bytes()).unwrap();
        let wd = unsafe { libc::inotify_add_watch(fd, path.as_ptr(), libc::IN_OPEN) };
        assert!(
            wd >= 0,
            "inotify {dir:?}: {}",
            std::io::Error::last_os_error()
        );
        OpenWatch { fd }
    }

    /// The names of the files opened in the folder since the last call (or the start).
    pub fn opened(&self) -> Vec<String> {
        let mut names = Vec::new();
        let mut buf = [0u8; 4096];
        loop {
            let n = unsafe { libc::read(self.fd, buf.as_mut_ptr().cast(), buf.len()) };
            if n <= 0 {
                return names;
            }
            let mut at = 0;
            while at + 16 <= n as usize {
                let len = u32::from_ne_bytes(buf[at + 12..at + 16].try_into().unwrap()) as usize;
                let raw = &buf[at + 16..at + 16 + len];
                let name = raw.split(|b| *b == 0).next().unwrap_or_default();
                names.push(String::from_utf8_lossy(name).into_owned());
                at += 16 + len;
            }
        }
    }

    /// How many times `name` was opened in the folder since the last call: how often a
    /// process tried a lock, say.
    pub fn opens_of(&self, name: &str) -> usize {
        self.opened().iter().filter(|n| *n == name).count()
    }

    /// Waits until some process opens `name` in the folder; fails the test after `limit`.
    pub fn wait_for_open(&self, name: &str, limit: Duration) {
        let mut seen = false;
        wait_until(limit, &format!("nothing opened {name}"), || {
            seen |= self.opened().iter().any(|n| n == name);
            seen
        });
    }
}

impl Drop for OpenWatch {
    fn drop(&mut self) {
        unsafe { libc::close(self.fd) };
    }
}
