//! The local Git repository the helper works for (Git gives it as `GIT_DIR`): which objects it
//! has, its per-remote configuration, and writing fetched objects into it as one pack.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

use flate2::write::ZlibEncoder;
use sha1::{Digest, Sha1};

use crate::mapping::{Kind, Object, ObjectId};

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
        let repo = gix::open_opts(dir, gix::open::Options::isolated().strict_config(false))
            .or_else(|_| gix::open(dir))
            .map_err(|e| RepoError::Open {
                path: dir.to_path_buf(),
                message: e.to_string(),
            })?;
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

    /// A configuration value, e.g. `remote.origin.fdlEndpoint`.
    pub fn config(&self, key: &str) -> Option<String> {
        self.repo.config_snapshot().string(key).map(|v| v.to_string())
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

    /// Writes `objects` as one pack (with its index) into the repository's object store.
    pub fn write_pack(&self, objects: &[Object]) -> Result<(), RepoError> {
        if objects.is_empty() {
            return Ok(());
        }
        let pack_dir = self.repo.objects.store_ref().path().join("pack");
        let err = |message: String| RepoError::Write {
            path: pack_dir.clone(),
            message,
        };
        std::fs::create_dir_all(&pack_dir).map_err(|e| err(e.to_string()))?;
        let pack = encode_pack(objects).map_err(|e| err(e.to_string()))?;
        let mut reader = std::io::BufReader::new(&pack[..]);
        let interrupt = AtomicBool::new(false);
        gix::odb::pack::Bundle::write_to_directory(
            &mut reader,
            Some(&pack_dir),
            &mut gix::progress::Discard,
            &interrupt,
            None::<gix::objs::find::Never>,
            gix::hash::Kind::Sha1,
            Default::default(),
        )
        .map_err(|e| err(e.to_string()))?;
        Ok(())
    }
}

/// A version-2 pack holding `objects` whole (no deltas): header, entries, SHA-1 trailer.
pub fn encode_pack(objects: &[Object]) -> std::io::Result<Vec<u8>> {
    let mut out = Vec::new();
    out.extend_from_slice(b"PACK");
    out.extend_from_slice(&2u32.to_be_bytes());
    out.extend_from_slice(&(objects.len() as u32).to_be_bytes());
    for obj in objects {
        let type_bits: u8 = match obj.kind {
            Kind::Commit => 1,
            Kind::Tree => 2,
            Kind::Blob => 3,
        };
        let mut size = obj.data.len() as u64;
        let mut byte = (type_bits << 4) | (size & 0x0f) as u8;
        size >>= 4;
        while size > 0 {
            out.push(byte | 0x80);
            byte = (size & 0x7f) as u8;
            size >>= 7;
        }
        out.push(byte);
        let mut z = ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
        z.write_all(&obj.data)?;
        out.extend_from_slice(&z.finish()?);
    }
    let digest: [u8; 20] = Sha1::digest(&out).into();
    out.extend_from_slice(&digest);
    Ok(out)
}
