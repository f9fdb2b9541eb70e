//! The local Git repository the helper works for (Git gives it as `GIT_DIR`): which objects it
//! has and its configuration (Git's own, through gix). The packs written into it are each in a
//! room of their own: the session's (`session_pack`), those an `ls-remote` kept (`kept_packs`)
//! and the lake's (`lake_packs`); the temporary files they start as are `temporary.rs`; a
//! repository of the helper's own where Git gave none is `scratch.rs`.

mod command_line;
mod scratch;
pub(crate) mod shallow;
mod temporary;
pub use command_line::Bogus;
pub(crate) use scratch::ScratchRepo;
pub(crate) use temporary::{temporary_name, write_error};

/// Whether `GIT_CONFIG_PARAMETERS` (Git's `-c`), if set, is in one of Git's forms: where it is
/// not, Git stops before anything is read, and so must the helper.
pub fn check_command_line() -> Result<(), Bogus> {
    command_line::check()
}

use std::path::{Path, PathBuf};

use crate::mapping::ObjectId;

#[derive(Debug, thiserror::Error)]
pub enum RepoError {
    #[error("cannot open the Git repository at {path}: {message}")]
    Open { path: PathBuf, message: String },
    #[error("this repository uses {0} object IDs, but lakes map to SHA-1 commits")]
    Sha256(String),
    #[error("cannot write the shallow commits to {}: {source}", path.display())]
    Shallow {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot write fetched objects into {}: {source}", path.display())]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// The local repository, opened from `GIT_DIR`.
pub(crate) struct Repo {
    repo: gix::Repository,
}

impl Repo {
    /// Opens the repository in `GIT_DIR`, if Git gave one (`git ls-remote` outside a repository
    /// does not).
    pub(crate) fn from_env() -> Result<Option<Repo>, RepoError> {
        let Some(dir) = std::env::var_os("GIT_DIR") else {
            return Ok(None);
        };
        Repo::open(Path::new(&dir)).map(Some)
    }

    pub(crate) fn open(dir: &Path) -> Result<Repo, RepoError> {
        // What `git -c` gave reaches the configuration as Git's own command line would.
        let options = gix::open::Options::default().cli_overrides(command_line::overrides());
        let mut repo = match gix::open_opts(dir, options) {
            Ok(r) => r,
            Err(e) => {
                // gix here reads SHA-1 repositories only: say why a SHA-256 one cannot be used.
                let format =
                    crate::git::Git::in_repo(dir, ["rev-parse", "--show-object-format"]).value();
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

    pub(crate) fn git_dir(&self) -> &Path {
        self.repo.git_dir()
    }

    /// Refuses repositories whose objects are not SHA-1.
    pub(crate) fn check_sha1(&self) -> Result<(), RepoError> {
        match self.repo.object_hash() {
            gix::hash::Kind::Sha1 => Ok(()),
            other => Err(RepoError::Sha256(other.to_string())),
        }
    }

    /// Whether the repository holds no object at all (a fresh clone): then no object needs
    /// looking up, which on a large history spares a probe of the loose objects per version.
    pub(crate) fn is_empty(&self) -> bool {
        let objects = self.repo.objects.store_ref().path().to_path_buf();
        if objects.join("info/alternates").exists() {
            return false;
        }
        let any = |dir: &Path, keep: &dyn Fn(&str) -> bool| {
            std::fs::read_dir(dir).is_ok_and(|entries| {
                entries
                    .flatten()
                    .any(|e| keep(&e.file_name().to_string_lossy()))
            })
        };
        let is_pack_index = |n: &str| n.ends_with(".idx");
        let is_loose_dir = |n: &str| n.len() == 2 && n.bytes().all(|b| b.is_ascii_hexdigit());
        !any(&objects.join("pack"), &is_pack_index)
            && !std::fs::read_dir(&objects).is_ok_and(|entries| {
                entries.flatten().any(|e| {
                    is_loose_dir(&e.file_name().to_string_lossy())
                        && any(&e.path(), &|_: &str| true)
                })
            })
    }

    pub(crate) fn has(&self, id: &ObjectId) -> bool {
        self.repo.has_object(gix::ObjectId::from(*id))
    }

    /// The object a push source names: a full ref name (symbolic refs followed, tags not
    /// peeled) or a hex object ID.
    pub(crate) fn resolve(&self, src: &str) -> Option<ObjectId> {
        if let Some(id) = ObjectId::from_hex(src) {
            return Some(id);
        }
        if let Ok(mut r) = self.repo.find_reference(src) {
            if let Ok(id) = r.follow_to_object() {
                return ObjectId::try_from(id.as_ref()).ok();
            }
        }
        // Git passes any expression the user pushed (`main~1`): let Git itself parse it.
        let args = ["rev-parse", "--verify", "--quiet", "--end-of-options"];
        let out = crate::git::Git::in_repo(self.git_dir(), args)
            .arg(src)
            .value()?;
        ObjectId::from_hex(&out)
    }

    /// An object's kind and content.
    pub(crate) fn object(&self, id: &ObjectId) -> Option<(gix::object::Kind, Vec<u8>)> {
        let oid = gix::ObjectId::from(*id);
        let obj = self.repo.try_find_object(oid).ok()??.detach();
        Some((obj.kind, obj.data))
    }

    /// An object's kind and size from its header, without inflating it.
    pub(crate) fn object_header(&self, id: &ObjectId) -> Option<(gix::object::Kind, u64)> {
        let oid = gix::ObjectId::from(*id);
        let header = self.repo.try_find_header(oid).ok()??;
        Some((header.kind(), header.size()))
    }

    /// The parents of a local commit (empty if it is not a commit or not here).
    pub(crate) fn parents(&self, id: &ObjectId) -> Vec<ObjectId> {
        match self.object(id) {
            Some((gix::object::Kind::Commit, data)) => commit_parents(&data),
            _ => Vec::new(),
        }
    }

    /// Whether `old` is `new` or one of its ancestors, walking the local commits.
    pub(crate) fn is_ancestor(&self, old: &ObjectId, new: &ObjectId) -> bool {
        crate::graph::reaches(vec![*new], old, |c| self.parents(c))
    }

    /// A configuration value, e.g. `remote.origin.fdlEndpoint`.
    pub(crate) fn config(&self, key: &str) -> Option<String> {
        self.repo
            .config_snapshot()
            .string(key)
            .map(|v| v.to_string())
    }

    /// A boolean as Git reads it (`true`, `yes`, `on`, `1`, a key without `=`, ...): `None`
    /// when unset, an error when the value is not a boolean.
    pub(crate) fn config_bool(&self, key: &str) -> Result<Option<bool>, gix::Error> {
        self.repo.config_snapshot().try_boolean(key)
    }

    /// Every remote's URL as `(name, url)`, in the order of Git's configuration (a remote
    /// with several URLs once for each).
    pub(crate) fn remote_urls(&self) -> Vec<(String, String)> {
        let snapshot = self.repo.config_snapshot();
        let Some(sections) = snapshot.plumbing().sections_by_name("remote") else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for section in sections {
            let Some(name) = section.header().subsection_name() else {
                continue;
            };
            for url in section.values("url") {
                out.push((name.to_string(), url.to_string()));
            }
        }
        out
    }

    /// Every value of a multi-valued key.
    pub(crate) fn config_all(&self, key: &str) -> Vec<String> {
        self.repo
            .config_snapshot()
            .plumbing()
            .strings(key)
            .unwrap_or_default()
            .into_iter()
            .map(|v| v.to_string())
            .collect()
    }

    /// `objects/pack/`, where Git reads packs.
    pub(crate) fn pack_dir(&self) -> PathBuf {
        self.repo.objects.store_ref().path().join("pack")
    }
}

/// The parents of a raw commit object, as gix's commit parser reads them (up to where a
/// malformed commit stops making sense).
pub(crate) fn commit_parents(data: &[u8]) -> Vec<ObjectId> {
    gix::objs::CommitRefIter::from_bytes(data, gix::hash::Kind::Sha1)
        .parent_ids()
        .filter_map(|id| ObjectId::try_from(id.as_ref()).ok())
        .collect()
}

/// A value of the user's and the system's Git configuration, for a command run outside any
/// repository (inside one, [`Repo::config`] reads them with the repository's own).
pub(crate) fn global_config(key: &str) -> Option<String> {
    if let Some(given) = command_line::value(key) {
        return given;
    }
    let file = gix::config::File::from_globals().ok()?;
    file.string(key).map(|v| v.to_string())
}

/// A boolean of the user's and the system's Git configuration, read as [`Repo::config_bool`]
/// reads one, for a command run outside any repository.
pub(crate) fn global_config_bool(key: &str) -> Result<Option<bool>, NotABoolean> {
    match command_line::value(key) {
        Some(None) => return Ok(Some(true)),
        Some(Some(v)) => return git_bool(&v).map(Some),
        None => {}
    }
    let Ok(file) = gix::config::File::from_globals() else {
        return Ok(None);
    };
    file.boolean(key).map_err(|_| NotABoolean)
}

/// A boolean as Git reads one (`git_parse_maybe_bool`): true, yes, on, false, no, off, the
/// empty string, or an integer (true unless 0).
fn git_bool(v: &str) -> Result<bool, NotABoolean> {
    match v.to_ascii_lowercase().as_str() {
        "true" | "yes" | "on" => Ok(true),
        "false" | "no" | "off" | "" => Ok(false),
        n => n.parse::<i64>().map(|n| n != 0).map_err(|_| NotABoolean),
    }
}

/// A configuration value that is not a boolean.
#[derive(Debug)]
pub(crate) struct NotABoolean;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parents_are_read_from_a_commit_as_git_writes_it() {
        let (a, b) = (ObjectId([0xaa; 20]), ObjectId([0x0b; 20]));
        let tail = b"author A <a@example.org> 0 +0000\ncommitter A <a@example.org> 0 +0000\n\n\
                     parent 0123456789012345678901234567890123456789 is text, not a header\n";
        let merge = crate::mapping::commit_object(&ObjectId([1; 20]), &[a, b], tail).unwrap();
        assert_eq!(commit_parents(&merge.data), vec![a, b]);
        let root = crate::mapping::commit_object(&ObjectId([1; 20]), &[], tail).unwrap();
        assert_eq!(commit_parents(&root.data), Vec::<ObjectId>::new());
        assert_eq!(commit_parents(b"not a commit"), Vec::<ObjectId>::new());
    }
}
