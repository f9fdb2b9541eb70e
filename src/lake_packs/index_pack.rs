//! A downloaded lake's pack indexed in this process by gix's pack indexer, as `git index-pack`
//! would index it: every object inflated and hashed (SHA-1 with collision detection), the
//! pack's checksum checked, a thin pack refused, and the same version-2 index written. It
//! runs on every core, where Git's `index-pack` inflates and hashes a pack without deltas
//! (what `pack` writes) on one.

use std::io::{Read, Seek};
use std::path::Path;
use std::sync::atomic::AtomicBool;

use gix_pack::data::input;

/// Bytes of a pack's header (`PACK`, version, count) and of its trailing checksum.
const HEADER: u64 = 12;
const TRAILER: u64 = 20;
/// The fewest bytes a pack entry takes: a header byte and an empty zlib stream.
const SMALLEST_ENTRY: u64 = 9;
/// Bytes the indexer may allocate at once per object the pack's header counts (its table of
/// entries, about 72 bytes each, is reserved for half of them at a time).
const TABLE_BYTES_PER_OBJECT: u64 = 64;

/// Why a downloaded pack cannot be indexed, in words for a warning.
#[derive(Debug, thiserror::Error)]
pub(crate) enum IndexError {
    #[error("cannot read or write {}: {source}", path.display())]
    Io {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    #[error("it is not a pack: {0}")]
    NotAPack(&'static str),
    #[error("it has {0} bytes of junk after its checksum")]
    Junk(u64),
    #[error("it holds an object of {size} bytes, over the limit of {limit}")]
    OverLimit { size: u64, limit: u64 },
    #[error("{0}")]
    Refused(String),
}

/// Indexes pack `pack` into `idx` (a version-2 index, synced to the disk with the pack), where
/// no object is larger than `largest_object` bytes; returns the pack's checksum in hex.
pub(crate) fn index(pack: &Path, idx: &Path, largest_object: u64) -> Result<String, IndexError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| IndexError::Io { path, source }
    };
    let file = std::fs::File::open(pack).map_err(io(pack))?;
    let len = file.metadata().map_err(io(pack))?.len();
    let objects = objects_in(&file, len).map_err(io(pack))??;
    // A hostile header or entry cannot make the indexer allocate more than the pack's size
    // allows, nor inflate more than the lake allows for one file.
    let alloc_limit = largest_object.max(objects.saturating_mul(TABLE_BYTES_PER_OBJECT));
    let read = std::io::BufReader::with_capacity(1 << 20, file);
    let kind = gix::hash::Kind::Sha1;
    let entries = input::BytesToEntriesIter::new_from_header(
        read,
        input::Mode::Verify,
        input::EntryDataMode::Crc32,
        kind,
    )
    .map_err(|e| IndexError::Refused(e.to_string()))?;
    let version = entries.version();
    let mut entries = Measured {
        inner: entries,
        end: HEADER,
        limit: largest_object,
        over: None,
    };
    let mut out = std::io::BufWriter::with_capacity(1 << 20, create(idx).map_err(io(idx))?);
    let resolver = || {
        let data = gix_pack::data::File::at(pack, kind).map_err(std::io::Error::other)?;
        Ok((entry_of, data))
    };
    let outcome = gix_pack::index::write_data_iter_to_stream(
        gix_pack::index::Version::V2,
        resolver,
        &mut entries,
        None,
        &mut gix::progress::Discard,
        &mut out,
        &AtomicBool::new(false),
        kind,
        usize::try_from(alloc_limit).ok(),
        version,
    );
    if let Some(size) = entries.over {
        let limit = largest_object;
        return Err(IndexError::OverLimit { size, limit });
    }
    let outcome = outcome.map_err(|e| IndexError::Refused(e.to_string()))?;
    // Git would find the pack's checksum where the file ends, not where the entries end.
    let junk = len.saturating_sub(entries.end + TRAILER);
    if junk > 0 {
        return Err(IndexError::Junk(junk));
    }
    let synced = out.into_inner().map_err(|e| e.into_error());
    synced.and_then(|f| f.sync_all()).map_err(io(idx))?;
    let rev = idx.with_extension("rev");
    write_reverse_index(idx, &rev, &outcome.data_hash).map_err(io(&rev))?;
    std::fs::File::open(pack)
        .and_then(|f| f.sync_all())
        .map_err(io(pack))?;
    Ok(outcome.data_hash.to_hex().to_string())
}

/// The objects pack header counts, once it proves to be a pack's header whose count the
/// file's size can hold.
fn objects_in(mut file: &std::fs::File, len: u64) -> std::io::Result<Result<u64, IndexError>> {
    let mut header = [0u8; HEADER as usize];
    if len < HEADER + TRAILER {
        return Ok(Err(IndexError::NotAPack("it is cut short")));
    }
    file.read_exact(&mut header)?;
    file.rewind()?;
    let objects = u64::from(u32::from_be_bytes([
        header[8], header[9], header[10], header[11],
    ]));
    Ok(match &header[..4] == b"PACK" {
        false => Err(IndexError::NotAPack("no pack header")),
        true if objects == 0 => Err(IndexError::NotAPack("it holds no objects")),
        true if objects > (len - HEADER - TRAILER) / SMALLEST_ENTRY => Err(IndexError::NotAPack(
            "its header counts more objects than it holds",
        )),
        true => Ok(objects),
    })
}

/// Writes beside index `idx` the reverse index Git writes with it (`pack.writeReverseIndex`,
/// Git's `gitformat-pack(5)`): each object's position in the index, in the pack's order,
/// behind `RIDX`, version 1 and SHA-1's ID, then the pack's checksum and the file's own.
fn write_reverse_index(
    idx: &Path,
    rev: &Path,
    pack_checksum: &gix::ObjectId,
) -> std::io::Result<()> {
    let index =
        gix_pack::index::File::at(idx, gix::hash::Kind::Sha1).map_err(std::io::Error::other)?;
    let mut order: Vec<u32> = (0..index.num_objects()).collect();
    order.sort_unstable_by_key(|&i| index.pack_offset_at_index(i));
    let mut bytes = Vec::with_capacity(12 + order.len() * 4 + 40);
    bytes.extend_from_slice(b"RIDX");
    bytes.extend_from_slice(&1u32.to_be_bytes());
    bytes.extend_from_slice(&1u32.to_be_bytes());
    for i in order {
        bytes.extend_from_slice(&i.to_be_bytes());
    }
    bytes.extend_from_slice(pack_checksum.as_slice());
    let mut hasher = gix::hash::hasher(gix::hash::Kind::Sha1);
    hasher.update(&bytes);
    let own = hasher.try_finalize().map_err(std::io::Error::other)?;
    bytes.extend_from_slice(own.as_slice());
    let mut file = create(rev)?;
    std::io::Write::write_all(&mut file, &bytes)?;
    file.sync_all()
}

/// The bytes of a pack's entry, for the indexer.
fn entry_of(range: gix_pack::data::EntryRange, data: &gix_pack::data::File) -> Option<&[u8]> {
    data.entry_slice(range)
}

/// An index file, created (never an existing file followed) read-only, as Git makes it.
fn create(path: &Path) -> std::io::Result<std::fs::File> {
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)?;
    let mut read_only = file.metadata()?.permissions();
    read_only.set_readonly(true);
    file.set_permissions(read_only)?;
    Ok(file)
}

/// The pack's entries, noting where the last one read ends; cut short at the first whose
/// inflated size is over `limit` (noted in `over`), so that the indexer never holds it.
struct Measured<I> {
    inner: I,
    end: u64,
    limit: u64,
    over: Option<u64>,
}

impl<I: Iterator<Item = gix::error::Result<input::Entry>>> Iterator for Measured<I> {
    type Item = I::Item;

    fn next(&mut self) -> Option<Self::Item> {
        if self.over.is_some() {
            return None;
        }
        let next = self.inner.next();
        if let Some(Ok(e)) = &next {
            if e.decompressed_size > self.limit {
                self.over = Some(e.decompressed_size);
                return None;
            }
            self.end = e.pack_offset + u64::from(e.header_size) + e.compressed_size;
        }
        next
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.inner.size_hint()
    }
}
