//! The local Git repository the helper works for (Git gives it as `GIT_DIR`): which objects it
//! has, its per-remote configuration, and writing fetched objects into it as one pack.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::mapping::{Object, ObjectId};
use crate::pack::encode_pack;

#[derive(Debug, thiserror::Error)]
pub enum RepoError {
    #[error("cannot open the Git repository at {path}: {message}")]
    Open { path: PathBuf, message: String },
    #[error("this repository uses {0} object IDs, but lakes map to SHA-1 commits")]
    Sha256(String),
    #[error("cannot write fetched objects into {path}: {message}")]
    Write { path: PathBuf, message: String },
}

/// The local repository, opened from `GIT_DIR`.
pub struct Repo {
    repo: gix::Repository,
}

impl Repo {
    /// Opens the repository in `GIT_DIR`, if Git gave one (`git ls-remote` outside a repository
    /// does not).
    pub fn from_env() -> Result<Option<Repo>, RepoError> {
        let Some(dir) = std::env::var_os("GIT_DIR") else {
            return Ok(None);
        };
        Repo::open(Path::new(&dir)).map(Some)
    }

    pub fn open(dir: &Path) -> Result<Repo, RepoError> {
        let mut repo = match gix::open(dir) {
            Ok(r) => r,
            Err(e) => {
                // gix here reads SHA-1 repositories only: say why a SHA-256 one cannot be used.
                let format = std::process::Command::new("git")
                    .args(["rev-parse", "--show-object-format"])
                    .env("GIT_DIR", dir)
                    .output()
                    .ok()
                    .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
                return Err(match format.as_deref() {
                    Some(f) if !f.is_empty() && f != "sha1" => RepoError::Sha256(f.to_string()),
                    _ => RepoError::Open {
                        path: dir.to_path_buf(),
                        message: e.to_string(),
                    },
                });
            }
        };
        // A missing object would make the object database rescan its packs on every lookup;
        // the helper asks about thousands of missing objects, and only it adds packs meanwhile.
        repo.objects.refresh_never();
        Ok(Repo { repo })
    }

    pub fn git_dir(&self) -> &Path {
        self.repo.git_dir()
    }

    /// Refuses repositories whose objects are not SHA-1.
    pub fn check_sha1(&self) -> Result<(), RepoError> {
        match self.repo.object_hash() {
            gix::hash::Kind::Sha1 => Ok(()),
            other => Err(RepoError::Sha256(other.to_string())),
        }
    }

    pub fn has(&self, id: &ObjectId) -> bool {
        gix::ObjectId::try_from(&id.0[..])
            .map(|oid| self.repo.has_object(oid))
            .unwrap_or(false)
    }

    /// The object a push source names: a full ref name (symbolic refs followed, tags not
    /// peeled) or a hex object ID.
    pub fn resolve(&self, src: &str) -> Option<ObjectId> {
        if let Some(id) = ObjectId::from_hex(src) {
            return Some(id);
        }
        if let Ok(mut r) = self.repo.find_reference(src) {
            if let Ok(id) = r.follow_to_object() {
                return ObjectId::from_hex(&id.to_string());
            }
        }
        // Git passes any expression the user pushed (`main~1`): let Git itself parse it.
        let out = std::process::Command::new("git")
            .args(["rev-parse", "--verify", "--quiet", "--end-of-options"])
            .arg(src)
            .env("GIT_DIR", self.git_dir())
            .stdin(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .output()
            .ok()?;
        ObjectId::from_hex(String::from_utf8_lossy(&out.stdout).trim())
    }

    /// An object's kind (`commit`, `tag`, `tree`, `blob`) and content.
    pub fn object(&self, id: &ObjectId) -> Option<(String, Vec<u8>)> {
        let oid = gix::ObjectId::try_from(&id.0[..]).ok()?;
        let obj = self.repo.try_find_object(oid).ok()??;
        Some((obj.kind.to_string(), obj.data.clone()))
    }

    /// The parents of a local commit (empty if it is not a commit or not here).
    pub fn parents(&self, id: &ObjectId) -> Vec<ObjectId> {
        match self.object(id) {
            Some((kind, data)) if kind == "commit" => commit_parents(&data),
            _ => Vec::new(),
        }
    }

    /// Whether `old` is `new` or one of its ancestors, walking the local commits.
    pub fn is_ancestor(&self, old: &ObjectId, new: &ObjectId) -> bool {
        let mut seen = std::collections::HashSet::new();
        let mut stack = vec![*new];
        while let Some(c) = stack.pop() {
            if c == *old {
                return true;
            }
            if seen.insert(c) {
                stack.extend(self.parents(&c));
            }
        }
        false
    }

    /// A configuration value, e.g. `remote.origin.fdlEndpoint`.
    pub fn config(&self, key: &str) -> Option<String> {
        self.repo
            .config_snapshot()
            .string(key)
            .map(|v| v.to_string())
    }

    /// A boolean as Git reads it (`true`, `yes`, `on`, `1`, a key without `=`, ...): `None`
    /// when unset, an error when the value is not a boolean.
    pub fn config_bool(&self, key: &str) -> Result<Option<bool>, String> {
        self.repo
            .config_snapshot()
            .try_boolean(key)
            .map_err(|e| e.to_string())
    }

    /// Every value of a multi-valued key.
    pub fn config_all(&self, key: &str) -> Vec<String> {
        self.repo
            .config_snapshot()
            .plumbing()
            .strings(key)
            .unwrap_or_default()
            .into_iter()
            .map(|v| v.to_string())
            .collect()
    }

    /// Writes `objects` as one pack, with its index, into the repository's object store: the
    /// pack first, then the index that makes Git see it, each renamed into place when complete.
    /// Temporary files a killed fetch left (this host, a process that no longer exists) are
    /// removed first; returns a note for each.
    pub fn write_pack(&self, objects: &[Object]) -> Result<Vec<String>, RepoError> {
        let pack_dir = self.repo.objects.store_ref().path().join("pack");
        let notes = remove_stale_temporaries(&pack_dir);
        if objects.is_empty() {
            return Ok(notes);
        }
        let err = |message: String| RepoError::Write {
            path: pack_dir.clone(),
            message,
        };
        std::fs::create_dir_all(&pack_dir).map_err(|e| err(e.to_string()))?;
        let pack = encode_pack(objects).map_err(|e| err(e.to_string()))?;
        let name = format!("pack-{}", crate::pack::hex(&pack.checksum));
        // tmp_ as Git's own temporary files (git gc removes old ones); whose they are after it.
        let tmp = |ext: &str| {
            pack_dir.join(format!(
                "tmp_{name}_{}_{}.{ext}",
                std::process::id(),
                host_tag()
            ))
        };
        let write = |ext: &str, bytes: &[u8]| -> std::io::Result<()> {
            let path = tmp(ext);
            let mut f = std::fs::File::create(&path)?;
            let result = (|| {
                if ext == "pack" {
                    f.write_all(&bytes[..bytes.len() / 2])?;
                    f.sync_all()?;
                    crate::testhook::stop_at(crate::testhook::Point::WritingPack);
                    f.write_all(&bytes[bytes.len() / 2..])?;
                } else {
                    f.write_all(bytes)?;
                }
                f.sync_all()?;
                std::fs::rename(&path, pack_dir.join(format!("{name}.{ext}")))
            })();
            if result.is_err() {
                let _ = std::fs::remove_file(&path);
            }
            result
        };
        write("pack", &pack.data).map_err(|e| err(e.to_string()))?;
        write("idx", &pack.index()).map_err(|e| err(e.to_string()))?;
        Ok(notes)
    }
}

/// This host's name as it goes into a file name: letters, digits, `-` and `.` only.
fn host_tag() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    host.trim()
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.'))
        .take(64)
        .collect()
}

/// Removes `tmp_pack-<sha1>_<pid>_<host>.{pack,idx}` files of this host whose process no
/// longer exists: a fetch killed while writing. Git's own temporary files are left to Git.
fn remove_stale_temporaries(pack_dir: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(pack_dir) else {
        return Vec::new();
    };
    let host = host_tag();
    let mut notes = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        let Some(pid) = stale_pid(name, &host) else {
            continue;
        };
        if std::fs::remove_file(entry.path()).is_ok() {
            notes.push(format!(
                "removed {}, left by a fetch (pid {pid}) that was killed while writing",
                entry.path().display()
            ));
        }
    }
    notes
}

/// The pid in a temporary pack file this helper names, if it is of `host` and dead.
fn stale_pid(name: &str, host: &str) -> Option<i32> {
    let rest = name.strip_prefix("tmp_pack-")?;
    let stem = rest
        .strip_suffix(".pack")
        .or_else(|| rest.strip_suffix(".idx"))?;
    let mut parts = stem.splitn(3, '_');
    let (hash, pid, file_host) = (parts.next()?, parts.next()?, parts.next()?);
    if hash.len() != 40 || !hash.bytes().all(|b| b.is_ascii_hexdigit()) || file_host != host {
        return None;
    }
    let pid: i32 = pid.parse().ok().filter(|p| *p > 0)?;
    crate::process::is_gone(pid).then_some(pid)
}

/// The `parent` lines of a raw commit object.
pub fn commit_parents(data: &[u8]) -> Vec<ObjectId> {
    let text = String::from_utf8_lossy(data);
    text.lines()
        .take_while(|l| !l.is_empty())
        .filter_map(|l| l.strip_prefix("parent "))
        .filter_map(ObjectId::from_hex)
        .collect()
}
