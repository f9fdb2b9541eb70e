//! The local Git repository the helper works for (Git gives it as `GIT_DIR`): which objects it
//! has, its per-remote configuration, and writing fetched objects into it as one pack.

use std::io::Write;
use std::path::{Path, PathBuf};

use flate2::{Compress, FlushCompress, Status};
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
        let name = format!("pack-{}", hex(&pack.checksum));
        let tmp = |ext: &str| pack_dir.join(format!("tmp_{name}_{}.{ext}", std::process::id()));
        let write = |ext: &str, bytes: &[u8]| -> std::io::Result<()> {
            let path = tmp(ext);
            let mut f = std::fs::File::create(&path)?;
            f.write_all(bytes)?;
            f.sync_all()?;
            std::fs::rename(&path, pack_dir.join(format!("{name}.{ext}")))
        };
        write("pack", &pack.data).map_err(|e| err(e.to_string()))?;
        write("idx", &pack.index()).map_err(|e| err(e.to_string()))?;
        Ok(())
    }
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

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// An encoded pack and what its index needs: each object's ID, offset and CRC-32.
pub struct EncodedPack {
    pub data: Vec<u8>,
    pub checksum: [u8; 20],
    entries: Vec<(ObjectId, u64, u32)>,
}

impl EncodedPack {
    /// The version-2 pack index (gitformat-pack(5)): fan-out, sorted IDs, CRC-32s, offsets,
    /// then the pack's checksum and the index's own.
    pub fn index(&self) -> Vec<u8> {
        let mut entries = self.entries.clone();
        entries.sort_by_key(|e| e.0);
        let mut out = Vec::with_capacity(8 + 1024 + entries.len() * 28 + 40);
        out.extend_from_slice(&[0xff, b't', b'O', b'c', 0, 0, 0, 2]);
        let mut fanout = [0u32; 256];
        for (id, _, _) in &entries {
            fanout[id.0[0] as usize] += 1;
        }
        let mut running = 0u32;
        for count in fanout {
            running += count;
            out.extend_from_slice(&running.to_be_bytes());
        }
        for (id, _, _) in &entries {
            out.extend_from_slice(&id.0);
        }
        for (_, _, crc) in &entries {
            out.extend_from_slice(&crc.to_be_bytes());
        }
        let mut large = Vec::new();
        for (_, offset, _) in &entries {
            if *offset < 0x8000_0000 {
                out.extend_from_slice(&(*offset as u32).to_be_bytes());
            } else {
                out.extend_from_slice(&(0x8000_0000 | large.len() as u32).to_be_bytes());
                large.push(*offset);
            }
        }
        for offset in large {
            out.extend_from_slice(&offset.to_be_bytes());
        }
        out.extend_from_slice(&self.checksum);
        let digest: [u8; 20] = Sha1::digest(&out).into();
        out.extend_from_slice(&digest);
        out
    }
}

/// A version-2 pack holding `objects` whole (no deltas): header, entries, SHA-1 trailer.
pub fn encode_pack(objects: &[Object]) -> std::io::Result<EncodedPack> {
    let mut entries = Vec::with_capacity(objects.len());
    // One compressor, reset for each large object; small ones are stored uncompressed, since
    // resetting a compressor costs more than compressing a few hundred bytes saves.
    let mut z = Compress::new(flate2::Compression::fast(), true);
    let mut out = Vec::new();
    out.extend_from_slice(b"PACK");
    out.extend_from_slice(&2u32.to_be_bytes());
    out.extend_from_slice(&(objects.len() as u32).to_be_bytes());
    for obj in objects {
        let offset = out.len();
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
        if obj.data.len() < COMPRESS_FROM {
            zlib_stored(&obj.data, &mut out);
        } else {
            deflate(&mut z, &obj.data, &mut out)?;
        }
        entries.push((obj.id, offset as u64, crc32fast::hash(&out[offset..])));
    }
    let checksum: [u8; 20] = Sha1::digest(&out).into();
    out.extend_from_slice(&checksum);
    Ok(EncodedPack {
        data: out,
        checksum,
        entries,
    })
}

/// Objects smaller than this go into the pack uncompressed (zlib "stored" blocks).
const COMPRESS_FROM: usize = 4096;

/// Appends a zlib stream of stored (uncompressed) deflate blocks holding `data` (RFC 1950/1951).
fn zlib_stored(data: &[u8], out: &mut Vec<u8>) {
    out.extend_from_slice(&[0x78, 0x01]);
    let mut chunks = data.chunks(65535).peekable();
    if chunks.peek().is_none() {
        out.extend_from_slice(&[1, 0, 0, 0xff, 0xff]);
    }
    while let Some(chunk) = chunks.next() {
        out.push(u8::from(chunks.peek().is_none()));
        let len = chunk.len() as u16;
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(&(!len).to_le_bytes());
        out.extend_from_slice(chunk);
    }
    out.extend_from_slice(&adler32(data).to_be_bytes());
}

fn adler32(data: &[u8]) -> u32 {
    let (mut a, mut b) = (1u32, 0u32);
    for chunk in data.chunks(5552) {
        for &byte in chunk {
            a += byte as u32;
            b += a;
        }
        a %= 65521;
        b %= 65521;
    }
    (b << 16) | a
}

/// Appends the zlib stream of `data` to `out`.
fn deflate(z: &mut Compress, data: &[u8], out: &mut Vec<u8>) -> std::io::Result<()> {
    z.reset();
    let mut input = data;
    loop {
        out.reserve(input.len() / 2 + 64);
        let before_in = z.total_in();
        let status = z
            .compress_vec(input, out, FlushCompress::Finish)
            .map_err(std::io::Error::other)?;
        input = &input[(z.total_in() - before_in) as usize..];
        if status == Status::StreamEnd {
            return Ok(());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn stored_and_deflated_streams_inflate_back() {
        for len in [0usize, 1, 300, 65535, 65536, 200_000] {
            let data: Vec<u8> = (0..len).map(|i| (i * 7 % 251) as u8).collect();
            let mut out = Vec::new();
            zlib_stored(&data, &mut out);
            let mut back = Vec::new();
            flate2::read::ZlibDecoder::new(&out[..])
                .read_to_end(&mut back)
                .unwrap();
            assert_eq!(back, data, "stored, {len} bytes");
            let mut z = Compress::new(flate2::Compression::fast(), true);
            let mut out = Vec::new();
            deflate(&mut z, &data, &mut out).unwrap();
            let mut back = Vec::new();
            flate2::read::ZlibDecoder::new(&out[..])
                .read_to_end(&mut back)
                .unwrap();
            assert_eq!(back, data, "deflated, {len} bytes");
        }
    }
}
