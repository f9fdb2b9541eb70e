//! Test support: real `git` in an isolated environment (none of the caller's variables, no
//! system or user config, a temporary HOME, fixed dates) with the built helper first on PATH,
//! plus lake writers and servers.

pub mod azurite;
pub mod clouds;
pub mod faults;
pub mod folder_object_store;
pub mod gcs;
pub mod http;
pub mod lake;
pub mod memory;
pub mod moto;
pub mod nginx;
pub mod recorder;
pub mod rgw;
pub mod run;
pub mod s3lite;
pub mod seaweedfs;
pub mod servers;
pub mod signing;
pub mod wire;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

#[allow(unused_imports)]
pub use lake::{branched_lake, lake, vid, LakeBuilder};
#[allow(unused_imports)]
pub use run::{helper, text, HELPER};

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
        // Where the caller wants temporary files, the one setting passed on.
        let tmpdir = std::env::var("TMPDIR").ok();
        let env = env
            .into_iter()
            .chain(tmpdir.map(|t| ("TMPDIR".to_string(), t)))
            .collect();
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

    /// A command run in `cwd` (relative to the test folder) with exactly the variables of
    /// `self.env`: none of the caller's (credentials, config, locale, `GIT_DIR`...) leaks in.
    pub fn command(&self, program: &str, cwd: &str, args: &[&str]) -> Command {
        let mut c = Command::new(self.resolve(program));
        c.args(args)
            .current_dir(self.path(cwd))
            .stdin(Stdio::null())
            .env_clear()
            .envs(self.env.iter().map(|(k, v)| (k, v)));
        c
    }

    /// `program` found on this environment's PATH. Spawned by a bare name under a PATH of its
    /// own, a child is made by fork() rather than posix_spawn(): in a process holding thousands
    /// of server threads (the benchmarks') that alone took 20 ms a command.
    fn resolve(&self, program: &str) -> PathBuf {
        if program.contains('/') {
            return PathBuf::from(program);
        }
        let path = self.env.iter().find(|(k, _)| k == "PATH").map(|(_, v)| v);
        path.into_iter()
            .flat_map(|p| std::env::split_paths(p).collect::<Vec<_>>())
            .map(|dir| dir.join(program))
            .find(|candidate| is_executable(candidate))
            .unwrap_or_else(|| PathBuf::from(program))
    }

    /// `git <args>` in `cwd` with the helper's trace on (`GIT_REMOTE_FDL_DEBUG`), which must
    /// succeed: its stdout, and its stderr with the trace (see [`requests_traced`]).
    pub fn traced(&self, cwd: &str, args: &[&str]) -> (String, String) {
        let out = self
            .command("git", cwd, args)
            .env("GIT_REMOTE_FDL_DEBUG", "1")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "git {args:?}: {stderr}");
        (String::from_utf8_lossy(&out.stdout).into_owned(), stderr)
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

/// Where a test lake lives: the same scenarios run against a folder and each cloud's emulator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Where {
    Local,
    S3,
    Gcs,
    Azure,
    /// S3 on SeaweedFS, the second S3-compatible server (`seaweedfs.rs`).
    SeaweedFs,
    /// S3 on Ceph RGW, started by `make test-ceph` only (`rgw.rs`).
    Rgw,
}

impl Where {
    /// Every store the suite runs on its own (Ceph RGW needs `make test-ceph`).
    pub const EVERY_STORE: [Where; 5] = [
        Where::Local,
        Where::S3,
        Where::Gcs,
        Where::Azure,
        Where::SeaweedFs,
    ];
}

/// A lake written for a test, with a way to look at its files directly.
pub struct LakeAt {
    pub url: String,
    pub place: Where,
    pub dir: PathBuf,
    pub bucket: String,
    pub prefix: String,
}

static BUCKETS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

impl TestEnv {
    /// Writes `lake` to a folder or to a fresh S3 bucket (setting this environment up to reach
    /// it) and returns where it is.
    pub fn lake_at(&mut self, place: Where, name: &str, lake: &LakeBuilder) -> LakeAt {
        match place {
            Where::Local => {
                let url = self.local_lake(name, lake);
                LakeAt {
                    url,
                    place,
                    dir: self.path(name),
                    bucket: String::new(),
                    prefix: String::new(),
                }
            }
            cloud => {
                let c = clouds::cloud(cloud).unwrap();
                let n = BUCKETS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let bucket = format!(
                    "b{}-{n}-{}",
                    std::process::id(),
                    name.replace(['/', '_'], "-")
                );
                c.create_bucket(&bucket);
                let prefix = format!("{name}/");
                clouds::put_files(&*c.store(&bucket), &prefix, &lake.files);
                for (k, v) in c.env() {
                    self.set(&k, &v);
                }
                LakeAt {
                    url: format!("fdl::{}://{bucket}/{prefix}", c.scheme()),
                    place,
                    dir: PathBuf::new(),
                    bucket,
                    prefix,
                }
            }
        }
    }
}

impl LakeAt {
    pub fn read(&self, rel: &str) -> Option<String> {
        match self.place {
            Where::Local => std::fs::read_to_string(self.dir.join(rel)).ok(),
            cloud => clouds::get(
                &*clouds::cloud(cloud).unwrap().store(&self.bucket),
                &format!("{}{rel}", self.prefix),
            )
            .map(|b| String::from_utf8(b).unwrap()),
        }
    }

    /// Writes a file directly, as another writer would.
    pub fn write(&self, rel: &str, content: &str) {
        self.write_bytes(rel, content.as_bytes())
    }

    /// Writes a file of any bytes (a pack) directly, as another writer would.
    pub fn write_bytes(&self, rel: &str, content: &[u8]) {
        match self.place {
            Where::Local => {
                let p = self.dir.join(rel);
                std::fs::create_dir_all(p.parent().unwrap()).unwrap();
                std::fs::write(p, content).unwrap();
            }
            cloud => {
                let mut files = std::collections::BTreeMap::new();
                files.insert(rel.to_string(), content.to_vec());
                let store = clouds::cloud(cloud).unwrap().store(&self.bucket);
                clouds::put_files(&*store, &self.prefix, &files);
            }
        }
    }

    /// Every branch and tag file with its (trimmed) content.
    pub fn ref_files(&self) -> std::collections::BTreeMap<String, String> {
        let names = self.files_below("refs");
        names
            .into_iter()
            .filter(|n| n.starts_with("refs/heads/") || n.starts_with("refs/tags/"))
            .map(|n| {
                let v = self.read(&n).unwrap_or_default().trim().to_string();
                (n, v)
            })
            .collect()
    }

    /// Every file below the folder `folder` of the lake, by its path in the lake.
    pub fn files_below(&self, folder: &str) -> Vec<String> {
        match self.place {
            Where::Local => {
                let mut out = Vec::new();
                let mut stack = vec![self.dir.join(folder)];
                while let Some(d) = stack.pop() {
                    for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
                        if e.file_type().unwrap().is_dir() {
                            stack.push(e.path());
                        } else {
                            out.push(
                                e.path()
                                    .strip_prefix(&self.dir)
                                    .unwrap()
                                    .display()
                                    .to_string(),
                            );
                        }
                    }
                }
                out
            }
            cloud => clouds::list(
                &*clouds::cloud(cloud).unwrap().store(&self.bucket),
                &format!("{}{folder}", self.prefix),
            )
            .into_iter()
            .map(|p| p.strip_prefix(&self.prefix).unwrap().to_string())
            .collect(),
        }
    }

    /// `refs.json` as a map.
    pub fn refs_json(&self) -> std::collections::BTreeMap<String, String> {
        let text = self.read("refs.json").unwrap_or_else(|| "{}".into());
        let v: serde_json::Map<String, serde_json::Value> = serde_json::from_str(&text).unwrap();
        v.into_iter()
            .map(|(k, v)| (k, v.as_str().unwrap().to_string()))
            .collect()
    }
}

/// What `make test` installs (an emulator's Python, Azurite, DuckDB), by the variable that names
/// it. Without it the run ends here, at the first test that needs it, with one line saying what
/// to do, rather than a page of panics from every test that needed it.
pub fn installed(var: &str) -> String {
    match std::env::var(var) {
        Ok(path) if Path::new(&path).exists() => path,
        found => {
            let why = match found {
                Ok(path) => format!("{var}={path} does not exist"),
                Err(_) => format!("{var} is not set"),
            };
            // Straight to stderr: the test harness captures what `eprintln!` prints.
            let line = format!(
                "error: {why}; run the tests with `make test`, which installs the emulators \
                 under target/ and sets it\n"
            );
            let _ = std::io::Write::write_all(&mut std::io::stderr(), line.as_bytes());
            std::process::exit(1)
        }
    }
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// `git ls-remote` output as `(oid, ref)` pairs.
pub fn parse_ls_remote(out: &str) -> Vec<(String, String)> {
    out.lines()
        .filter_map(|l| l.split_once('\t'))
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

/// Copies a folder tree (a lake, or a repository to try twice from the same state).
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// The requests a helper traced with `GIT_REMOTE_FDL_DEBUG` made, from its last count.
pub fn requests_traced(stderr: &str) -> u64 {
    let counts = stderr
        .lines()
        .rev()
        .find_map(|l| l.split_once("requests so far: ").map(|(_, c)| c))
        .unwrap_or_else(|| panic!("no request counts: {stderr}"));
    counts
        .split(' ')
        .filter_map(|kv| kv.split_once('=')?.1.parse::<u64>().ok())
        .sum()
}

/// The median of a benchmark's timings (of an even number, the upper middle one).
#[allow(dead_code)] // The benchmarks' (benches/*.rs), which share this support; no test's.
pub fn median(mut times: Vec<f64>) -> f64 {
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
}

/// A benchmark's runs, `<versions>x<ms>,...` (`2000x0,2000x30`), as pairs.
#[allow(dead_code)] // The benchmarks' (benches/*.rs), which share this support; no test's.
pub fn pairs(list: &str) -> Vec<(u64, u64)> {
    let pair = |run: &str| {
        let (v, d) = run.split_once('x').expect("<versions>x<ms>");
        (v.trim().parse().unwrap(), d.trim().parse().unwrap())
    };
    list.split(',')
        .filter(|r| !r.is_empty())
        .map(pair)
        .collect()
}
