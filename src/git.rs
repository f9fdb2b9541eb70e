//! The one way the helper runs Git: stdin closed unless given, stdout and stderr captured, what
//! Git said redacted before anyone shows it, and, for a command in another repository, Git's
//! local repository variables cleared (as Git's own `prepare_other_repo_env` does), so that the
//! caller's repository never leaks into it.

use std::ffi::OsStr;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

/// What `git rev-parse --local-env-vars` lists (Git 2.39 to 2.47), less the configuration
/// given on the command line (`GIT_CONFIG_PARAMETERS`, `GIT_CONFIG_COUNT`), which Git keeps
/// for another repository too.
const LOCAL_REPO_VARS: [&str; 13] = [
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_CONFIG",
    "GIT_OBJECT_DIRECTORY",
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_IMPLICIT_WORK_TREE",
    "GIT_GRAFT_FILE",
    "GIT_INDEX_FILE",
    "GIT_NO_REPLACE_OBJECTS",
    "GIT_REPLACE_REF_BASE",
    "GIT_PREFIX",
    "GIT_SHALLOW_FILE",
    "GIT_COMMON_DIR",
];

/// Why a Git command gave nothing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum GitError {
    #[error("cannot run git: {0}")]
    CannotRun(String),
    /// Git failed; what it said on stderr, redacted and made one line.
    #[error("{0}")]
    Failed(String),
}

/// A Git command being put together.
pub(crate) struct Git {
    cmd: Command,
    stdin: Option<Vec<u8>>,
}

impl Git {
    /// `git <args>` where the helper runs (its repository, if Git started it in one).
    pub(crate) fn new<I, S>(args: I) -> Git
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let mut cmd = Command::new("git");
        cmd.args(args);
        crate::testhook::keep_signal_delay_to_this_process(&mut cmd);
        Git { cmd, stdin: None }
    }

    /// `git <args>` with none of the caller's repository variables (`git init <dir>`).
    pub(crate) fn elsewhere<I, S>(args: I) -> Git
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let mut git = Git::new(args);
        for var in LOCAL_REPO_VARS {
            git.cmd.env_remove(var);
        }
        git
    }

    /// `git <args>` in the repository `git_dir` (`GIT_DIR`), none of the caller's repository
    /// variables kept.
    pub(crate) fn in_repo<I, S>(git_dir: &Path, args: I) -> Git
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        Git::elsewhere(args).env("GIT_DIR", git_dir)
    }

    pub(crate) fn arg(mut self, arg: impl AsRef<OsStr>) -> Git {
        self.cmd.arg(arg);
        self
    }

    pub(crate) fn env(mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Git {
        self.cmd.env(key, value);
        self
    }

    /// Bytes for Git's standard input (otherwise it is closed).
    pub(crate) fn stdin(mut self, bytes: Vec<u8>) -> Git {
        self.stdin = Some(bytes);
        self
    }

    /// This executable's folder first on `PATH`, so that a Git run from here finds this very
    /// helper for `fdl::` addresses.
    pub(crate) fn with_this_helper(mut self) -> Git {
        let dir = std::env::current_exe()
            .ok()
            .and_then(|e| e.parent().map(Path::to_path_buf));
        if let Some(dir) = dir {
            let path = std::env::var_os("PATH").unwrap_or_default();
            let paths = std::iter::once(dir).chain(std::env::split_paths(&path));
            if let Ok(joined) = std::env::join_paths(paths) {
                self.cmd.env("PATH", joined);
            }
        }
        self
    }

    /// Runs it to the end: its status and output, whatever the status.
    pub(crate) fn output(mut self) -> Result<Output, GitError> {
        let piped = |yes: bool| if yes { Stdio::piped() } else { Stdio::null() };
        self.cmd
            .stdin(piped(self.stdin.is_some()))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let cannot = |e: std::io::Error| GitError::CannotRun(e.to_string());
        let mut child = self.cmd.spawn().map_err(cannot)?;
        // Written on a thread of its own: Git may fill its output before it reads all of stdin.
        let feeder = self.stdin.take().and_then(|bytes| {
            let mut pipe = child.stdin.take()?;
            Some(std::thread::spawn(move || pipe.write_all(&bytes)))
        });
        let out = child.wait_with_output().map_err(cannot)?;
        if let Some(f) = feeder {
            let _ = f.join();
        }
        crate::cleanup::yield_to_signal(&out.status);
        Ok(out)
    }

    /// Runs it (stdin closed) as [`Git::run`] does, handing what it writes to stderr to
    /// `relay` a line at a time as it comes (Git's progress lines end in a carriage return,
    /// kept), redacted: the caller decides where it goes. What it said last is kept for the
    /// error.
    pub(crate) fn run_relaying(
        mut self,
        relay: &(dyn Fn(&str) + Sync),
    ) -> Result<String, GitError> {
        self.cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let cannot = |e: std::io::Error| GitError::CannotRun(e.to_string());
        let mut child = self.cmd.spawn().map_err(cannot)?;
        let mut stdout = child.stdout.take().expect("piped");
        // Read on a thread of its own: Git may fill one pipe while the other is read.
        let reader = std::thread::spawn(move || {
            let mut out = Vec::new();
            std::io::Read::read_to_end(&mut stdout, &mut out).map(|_| out)
        });
        let mut said = Vec::new();
        let mut line = Vec::new();
        if let Some(mut stderr) = child.stderr.take() {
            let mut buf = [0u8; 8192];
            while let Ok(n @ 1..) = std::io::Read::read(&mut stderr, &mut buf) {
                for &b in &buf[..n] {
                    if b != b'\r' && b != b'\n' {
                        line.push(b);
                        continue;
                    }
                    let text = crate::redact::for_terminal(&String::from_utf8_lossy(&line));
                    relay(&format!("{text}{}", b as char));
                    line.clear();
                }
                said.extend_from_slice(&buf[..n]);
                // Only the end is kept: a failure's words come last.
                if said.len() > 64 << 10 {
                    said.drain(..said.len() - (32 << 10));
                }
            }
        }
        if !line.is_empty() {
            relay(&crate::redact::for_terminal(&String::from_utf8_lossy(
                &line,
            )));
        }
        let status = child.wait().map_err(cannot)?;
        crate::cleanup::yield_to_signal(&status);
        let stdout = reader.join().ok().and_then(Result::ok).unwrap_or_default();
        match status.success() {
            true => Ok(String::from_utf8_lossy(&stdout).into_owned()),
            false => Err(GitError::Failed(crate::redact::for_terminal(
                String::from_utf8_lossy(&said).trim(),
            ))),
        }
    }

    /// Runs it: its standard output, or what it said on failing.
    pub(crate) fn run(self) -> Result<String, GitError> {
        let out = self.output()?;
        match out.status.success() {
            true => Ok(String::from_utf8_lossy(&out.stdout).into_owned()),
            false => Err(GitError::Failed(crate::redact::for_terminal(
                String::from_utf8_lossy(&out.stderr).trim(),
            ))),
        }
    }

    /// Runs it: its standard output trimmed, if it succeeded and said something.
    pub(crate) fn value(self) -> Option<String> {
        let v = self.run().ok()?.trim().to_string();
        (!v.is_empty()).then_some(v)
    }
}
