//! Test support: real `git` in an isolated environment (no system or user config, a temporary
//! HOME, fixed dates) with the built helper first on PATH, plus lake writers and servers.

#![allow(dead_code)]

pub mod http;
pub mod lake;
pub mod moto;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

#[allow(unused_imports)]
pub use lake::{vid, LakeBuilder};

pub struct TestEnv {
    pub dir: tempfile::TempDir,
    pub env: Vec<(String, String)>,
}

impl Default for TestEnv {
    fn default() -> Self {
        Self::new()
    }
}

impl TestEnv {
    pub fn new() -> TestEnv {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::write(
            home.join(".gitconfig"),
            "[init]\n\tdefaultBranch = main\n[advice]\n\tdetachedHead = false\n",
        )
        .unwrap();
        let helper_dir = Path::new(env!("CARGO_BIN_EXE_git-remote-fdl"))
            .parent()
            .unwrap()
            .to_path_buf();
        let path = format!(
            "{}:{}",
            helper_dir.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let env = vec![
            ("PATH".to_string(), path),
            ("HOME".to_string(), home.display().to_string()),
            (
                "XDG_CONFIG_HOME".to_string(),
                home.join(".config").display().to_string(),
            ),
            ("GIT_CONFIG_NOSYSTEM".to_string(), "1".to_string()),
            ("GIT_AUTHOR_NAME".to_string(), "Test".to_string()),
            (
                "GIT_AUTHOR_EMAIL".to_string(),
                "test@example.org".to_string(),
            ),
            ("GIT_COMMITTER_NAME".to_string(), "Test".to_string()),
            (
                "GIT_COMMITTER_EMAIL".to_string(),
                "test@example.org".to_string(),
            ),
            (
                "GIT_AUTHOR_DATE".to_string(),
                "2026-01-01T00:00:00Z".to_string(),
            ),
            (
                "GIT_COMMITTER_DATE".to_string(),
                "2026-01-01T00:00:00Z".to_string(),
            ),
            ("GIT_TERMINAL_PROMPT".to_string(), "0".to_string()),
            ("LC_ALL".to_string(), "C.UTF-8".to_string()),
        ];
        TestEnv { dir, env }
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    pub fn set(&mut self, key: &str, value: &str) -> &mut Self {
        self.env.retain(|(k, _)| k != key);
        self.env.push((key.to_string(), value.to_string()));
        self
    }

    /// A command with the isolated environment, run in `cwd` (relative to the test folder).
    pub fn command(&self, program: &str, cwd: &str, args: &[&str]) -> Command {
        let mut c = Command::new(program);
        c.args(args)
            .current_dir(self.path(cwd))
            .stdin(Stdio::null());
        for (k, _) in std::env::vars() {
            if k.starts_with("GIT_")
                || k.starts_with("AWS_")
                || k.starts_with("GOOGLE_")
                || k.starts_with("AZURE_")
            {
                c.env_remove(&k);
            }
        }
        for (k, v) in &self.env {
            c.env(k, v);
        }
        c
    }

    pub fn git(&self, cwd: &str, args: &[&str]) -> Output {
        self.command("git", cwd, args).output().unwrap()
    }

    /// Runs git and insists it succeeds; returns stdout.
    pub fn ok(&self, cwd: &str, args: &[&str]) -> String {
        let out = self.git(cwd, args);
        assert!(
            out.status.success(),
            "git {args:?} failed ({}):\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    /// Runs git and insists it fails; returns stderr.
    pub fn fails(&self, cwd: &str, args: &[&str]) -> String {
        let out = self.git(cwd, args);
        assert!(
            !out.status.success(),
            "git {args:?} should have failed; stdout:\n{}",
            String::from_utf8_lossy(&out.stdout)
        );
        String::from_utf8(out.stderr).unwrap()
    }

    /// Writes a lake into the test folder and returns its `fdl::` address.
    pub fn local_lake(&self, name: &str, lake: &LakeBuilder) -> String {
        let dir = self.path(name);
        lake.write_dir(&dir);
        format!("fdl::{}", dir.display())
    }
}

/// `git ls-remote` output as `(oid, ref)` pairs.
pub fn parse_ls_remote(out: &str) -> Vec<(String, String)> {
    out.lines()
        .filter_map(|l| l.split_once('\t'))
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}
