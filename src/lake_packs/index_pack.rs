//! A downloaded lake's pack indexed in this process, as `git index-pack` would index it: every
//! object inflated and hashed (SHA-1 with collision detection), the pack's checksum checked, a
//! thin pack refused, and the same version-2 index and reverse index written. A pack of whole
//! objects (what `pack` writes) is read once, in order, by gix's pack reader while threads
//! inflate and hash its objects, holding 28 bytes an object; a pack with deltas or tags goes to
//! gix's own indexer, which resolves deltas but maps the whole pack while it does.

use std::io::{Read, Seek};
use std::path::Path;
use std::sync::atomic::AtomicBool;

use gix_pack::data::input;
use parking_lot::Mutex;

use crate::mapping::{Kind, ObjectId};
use crate::session_pack::{index_offset, write_index};

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
    #[error("it holds a {0} that shows a SHA-1 collision attack")]
    Collision(&'static str),
    #[error("an object at offset {0} does not inflate to the size its header gives")]
    BadObject(u64),
    #[error("{0}")]
    Refused(String),
}

/// Indexes pack `pack` into `idx` (a version-2 index, synced to the disk with the pack, and
/// its reverse index beside it), where no object is larger than `largest_object` bytes;
/// returns the pack's checksum in hex.
pub(crate) fn index(pack: &Path, idx: &Path, largest_object: u64) -> Result<String, IndexError> {
    let file = std::fs::File::open(pack).map_err(io(pack))?;
    let len = file.metadata().map_err(io(pack))?.len();
    let objects = objects_in(&file, len).map_err(io(pack))??;
    let checksum = match index_whole(file, len, idx, largest_object)? {
        Some(checksum) => checksum,
        None => index_resolving(pack, len, objects, idx, largest_object)?,
    };
    std::fs::File::open(pack)
        .and_then(|f| f.sync_all())
        .map_err(io(pack))?;
    Ok(checksum.to_hex().to_string())
}

/// What makes an I/O error of `path` an [`IndexError`].
fn io(path: &Path) -> impl FnOnce(std::io::Error) -> IndexError {
    let path = path.to_path_buf();
    move |source| IndexError::Io { path, source }
}

/// Objects handed to a hashing thread at once: as many as fit in this many compressed bytes
/// (one at least), at most `BATCH`, so that what waits in the channel stays small.
const BATCH: usize = 256;
const BATCH_BYTES: usize = 1 << 20;

/// An object of the pack to inflate and hash: its kind, its compressed bytes, its size, and
/// its offset (as the index holds it) and CRC-32.
struct Job {
    kind: Kind,
    compressed: Vec<u8>,
    size: u64,
    at: u64,
    offset: u32,
    crc: u32,
}

/// An object indexed: its ID, offset as the index holds it, and CRC-32.
type Indexed = (ObjectId, u32, u32);

/// Indexes pack `file` if it holds whole commits, trees and blobs only: each entry read in
/// order (gix's reader checks each entry's size, CRC-32 and the pack's checksum), inflated and
/// hashed on every core. `None`, with nothing written, where the pack holds a delta or a tag.
fn index_whole(
    file: std::fs::File,
    len: u64,
    idx: &Path,
    largest_object: u64,
) -> Result<Option<gix::ObjectId>, IndexError> {
    let read = std::io::BufReader::with_capacity(1 << 20, file);
    let mut entries = input::BytesToEntriesIter::new_from_header(
        read,
        input::Mode::Verify,
        input::EntryDataMode::KeepAndCrc32,
        gix::hash::Kind::Sha1,
    )
    .map_err(|e| IndexError::Refused(e.to_string()))?;
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(8));
    let (send, receive) = std::sync::mpsc::sync_channel::<Vec<Job>>(threads);
    // Held by the hashing threads alone: were they all gone, a send fails, never waits.
    let receive = std::sync::Arc::new(Mutex::new(receive));
    let mut large = Vec::new();
    let (fed, hashed) = std::thread::scope(|scope| {
        let spawn = |_| {
            let hasher = std::thread::Builder::new().name("fdl-index-pack".into());
            let receive = std::sync::Arc::clone(&receive);
            hasher.spawn_scoped(scope, move || hash_all(&receive)).ok()
        };
        let hashers: Vec<_> = (0..threads).filter_map(spawn).collect();
        drop(receive);
        let fed = match hashers.is_empty() {
            true => Err(IndexError::Refused("no thread to hash its objects".into())),
            false => feed(&mut entries, &send, &mut large, largest_object),
        };
        drop(send);
        let mut hashed: Result<Vec<Indexed>, IndexError> = Ok(Vec::new());
        for h in hashers {
            let got = h.join().unwrap_or_else(|_| {
                Err(IndexError::Refused(
                    "a thread hashing its objects failed".into(),
                ))
            });
            hashed = match (hashed, got) {
                (Ok(mut all), Ok(mut more)) => {
                    all.append(&mut more);
                    Ok(all)
                }
                (Err(e), _) | (_, Err(e)) => Err(e),
            };
        }
        (fed, hashed)
    });
    let Some((end, checksum)) = fed? else {
        return Ok(None);
    };
    let mut hashed = hashed?;
    junk_after(len, end)?;
    write_index(
        idx,
        &mut hashed,
        &large,
        &checksum.as_slice().try_into().expect("SHA-1"),
    )
    .and_then(read_only)
    .map_err(io(idx))?;
    let real = |code: u32| match code & 0x8000_0000 {
        0 => u64::from(code),
        _ => large[(code & 0x7fff_ffff) as usize],
    };
    let mut order: Vec<u32> = (0..hashed.len() as u32).collect();
    order.sort_unstable_by_key(|&i| real(hashed[i as usize].1));
    let rev = idx.with_extension("rev");
    write_reverse_index(order, &rev, &checksum).map_err(io(&rev))?;
    Ok(Some(checksum))
}

/// Hands the pack's entries to the hashing threads in batches; where the last ends and the
/// pack's checksum, or `None` at the first delta or tag.
fn feed(
    entries: &mut impl Iterator<Item = gix::error::Result<input::Entry>>,
    send: &std::sync::mpsc::SyncSender<Vec<Job>>,
    large: &mut Vec<u64>,
    largest_object: u64,
) -> Result<Option<(u64, gix::ObjectId)>, IndexError> {
    let (mut end, mut trailer) = (HEADER, None);
    let (mut batch, mut bytes) = (Vec::with_capacity(BATCH), 0);
    for entry in entries {
        let mut e = entry.map_err(|e| IndexError::Refused(e.to_string()))?;
        if e.decompressed_size > largest_object {
            let (size, limit) = (e.decompressed_size, largest_object);
            return Err(IndexError::OverLimit { size, limit });
        }
        use gix_pack::data::entry::Header;
        let kind = match e.header {
            Header::Commit => Kind::Commit,
            Header::Tree => Kind::Tree,
            Header::Blob => Kind::Blob,
            _ => return Ok(None),
        };
        end = e.pack_offset + u64::from(e.header_size) + e.compressed_size;
        trailer = e.trailer.or(trailer);
        let compressed = e.compressed.take().unwrap_or_default();
        bytes += compressed.len();
        batch.push(Job {
            kind,
            compressed,
            size: e.decompressed_size,
            at: e.pack_offset,
            offset: index_offset(e.pack_offset, large),
            crc: e.crc32.unwrap_or_default(),
        });
        if batch.len() == BATCH || bytes >= BATCH_BYTES {
            bytes = 0;
            if send.send(std::mem::take(&mut batch)).is_err() {
                return Err(IndexError::Refused("its objects' hashing stopped".into()));
            }
        }
    }
    if !batch.is_empty() && send.send(batch).is_err() {
        return Err(IndexError::Refused("its objects' hashing stopped".into()));
    }
    let trailer = trailer.ok_or(IndexError::NotAPack("it is cut short"))?;
    Ok(Some((end, trailer)))
}

/// Inflates and hashes the objects the feeder sends, until it stops; after a failure the
/// rest is taken and dropped, so that the feeder never waits on a full channel.
fn hash_all(
    receive: &Mutex<std::sync::mpsc::Receiver<Vec<Job>>>,
) -> Result<Vec<Indexed>, IndexError> {
    let mut out = Vec::new();
    let mut failed = None;
    let mut inflate = flate2::Decompress::new(true);
    let mut data = Vec::new();
    loop {
        let batch = receive.lock().recv();
        let Ok(batch) = batch else { break };
        if failed.is_some() {
            continue;
        }
        for job in batch {
            match hash(job, &mut inflate, &mut data) {
                Ok(indexed) => out.push(indexed),
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            }
        }
    }
    failed.map_or(Ok(out), Err)
}

/// One object inflated (exactly to its size, the whole stream) and hashed.
fn hash(
    job: Job,
    inflate: &mut flate2::Decompress,
    data: &mut Vec<u8>,
) -> Result<Indexed, IndexError> {
    let bad = IndexError::BadObject(job.at);
    let size = usize::try_from(job.size).map_err(|_| IndexError::BadObject(job.at))?;
    data.clear();
    data.reserve_exact(size);
    inflate.reset(true);
    let status = inflate.decompress_vec(&job.compressed, data, flate2::FlushDecompress::Finish);
    let whole = matches!(status, Ok(flate2::Status::StreamEnd))
        && data.len() == size
        && inflate.total_in() == job.compressed.len() as u64;
    if !whole {
        return Err(bad);
    }
    let id =
        crate::mapping::object_id(job.kind, data).map_err(|c| IndexError::Collision(c.kind))?;
    Ok((id, job.offset, job.crc))
}

/// Git finds a pack's checksum where its file ends: nothing may follow the entries' end
/// `end` but the checksum.
fn junk_after(len: u64, end: u64) -> Result<(), IndexError> {
    match len.saturating_sub(end + TRAILER) {
        0 => Ok(()),
        junk => Err(IndexError::Junk(junk)),
    }
}

/// Indexes pack `pack` with gix's own indexer, which resolves deltas (on every core, the pack
/// mapped whole while it does); its checksum.
fn index_resolving(
    pack: &Path,
    len: u64,
    objects: u64,
    idx: &Path,
    largest_object: u64,
) -> Result<gix::ObjectId, IndexError> {
    let file = std::fs::File::open(pack).map_err(io(pack))?;
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
    junk_after(len, entries.end)?;
    let synced = out.into_inner().map_err(|e| e.into_error());
    synced.and_then(|f| f.sync_all()).map_err(io(idx))?;
    let index = gix_pack::index::File::at(idx, gix::hash::Kind::Sha1)
        .map_err(|e| IndexError::Refused(e.to_string()))?;
    let mut order: Vec<u32> = (0..index.num_objects()).collect();
    order.sort_unstable_by_key(|&i| index.pack_offset_at_index(i));
    drop(index);
    let rev = idx.with_extension("rev");
    write_reverse_index(order, &rev, &outcome.data_hash).map_err(io(&rev))?;
    Ok(outcome.data_hash)
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

/// Writes to `rev` the reverse index Git writes beside an index (`pack.writeReverseIndex`,
/// Git's `gitformat-pack(5)`): each object's position in the index (`order`), in the pack's order,
/// behind `RIDX`, version 1 and SHA-1's ID, then the pack's checksum and the file's own.
fn write_reverse_index(
    order: Vec<u32>,
    rev: &Path,
    pack_checksum: &gix::ObjectId,
) -> std::io::Result<()> {
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
    read_only(file)
}

/// `file`, made read-only, as Git makes a pack's index.
fn read_only(file: std::fs::File) -> std::io::Result<std::fs::File> {
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
