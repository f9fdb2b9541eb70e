//! Git's pack format (gitformat-pack(5)): fetched objects written whole (no deltas), each
//! compressed, to a file as they are made, then the version-2 index; ready to be renamed into a
//! repository's `objects/pack/` (`install.rs`). The helper keeps each object's ID and offset,
//! not its bytes.

use parking_lot::Mutex;
use std::fs::File;
use std::io::{BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use flate2::{Compress, FlushCompress, Status};
use sha1::{Digest, Sha1};

use crate::mapping::{Kind, ObjectId};

mod deflate;
mod install;
pub(crate) use deflate::SmallDeflate;
pub(crate) use install::{install, keep_path, write_keep, writer_in};

/// A pack's checksum (a SHA-1, as gix names one) in lower-case hex: the pack's name.
pub(crate) fn hex(checksum: &[u8]) -> String {
    gix::hash::oid::try_from_bytes(checksum)
        .expect("a pack's checksum is a SHA-1")
        .to_string()
}

/// Offsets from here on are 8 bytes in an index (the 4-byte table's high bit says so).
const LARGE_OFFSET: u64 = 0x8000_0000;

/// Objects at least this large are compressed straight into the file, under the writer's lock,
/// so that no second copy of them is held; smaller ones are compressed by the caller's thread.
const STREAM_FROM: usize = 1 << 20;

/// The largest buffer a thread keeps between the objects it encodes.
const KEPT_ENTRY_BUFFER: usize = 64 << 10;

/// Writes objects into a pack file as they come, each once.
pub(crate) struct PackWriter {
    file: BufWriter<File>,
    path: PathBuf,
    len: u64,
    /// Each object: its ID, its offset as the index writes it (below 2 GiB the offset, else
    /// the high bit and a place in `large`), and its CRC-32: 28 bytes, 400,000 of them in a
    /// clone of 100,000 versions.
    entries: Vec<(ObjectId, u32, u32)>,
    /// Offsets of 2 GiB and more, in the order their objects were written.
    large: Vec<u64>,
    /// The objects in the pack, as indexes into `entries` hashed by the ID's first bytes (a
    /// SHA-1 is spread evenly already): 5 bytes a slot, not the 21 of a set of IDs.
    seen: hashbrown::HashTable<u32>,
    z: Compress,
    /// The first write that failed: the pack is then unusable, and `finish` says why.
    failed: Option<std::io::Error>,
    done: bool,
}

/// A pack file complete on disk (count and checksum written), and its index beside it (also
/// on disk), both under their temporary names.
pub(crate) struct FinishedPack {
    pub path: PathBuf,
    pub index_path: PathBuf,
    pub checksum: [u8; 20],
    pub objects: usize,
}

/// Where the index of the pack at `pack` is written until it is renamed: `<pack>.idx`.
pub(crate) fn index_path_of(pack: &Path) -> PathBuf {
    let mut path = pack.as_os_str().to_owned();
    path.push(".idx");
    PathBuf::from(path)
}

impl PackWriter {
    /// Creates the pack file at `path` (which must not exist) and writes its header.
    pub(crate) fn create(path: &Path) -> std::io::Result<PackWriter> {
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(path)?;
        // The object count is filled in by `finish`.
        file.write_all(b"PACK\0\0\0\x02\0\0\0\0")?;
        Ok(PackWriter {
            file: BufWriter::with_capacity(1 << 20, file),
            path: path.to_path_buf(),
            len: 12,
            entries: Vec::new(),
            large: Vec::new(),
            seen: hashbrown::HashTable::new(),
            z: Compress::new(flate2::Compression::fast(), true),
            failed: None,
            done: false,
        })
    }

    /// Makes room for `more` objects at once: tables that grow by doubling hold the old and
    /// the new copy at the moment they grow, and leave the old one as a hole in the heap.
    pub(crate) fn reserve(&mut self, more: usize) {
        self.entries.reserve(more);
        let entries = &self.entries;
        self.seen
            .reserve(more, |&i| id_hash(&entries[i as usize].0));
    }

    pub(crate) fn contains(&self, id: &ObjectId) -> bool {
        let entries = &self.entries;
        self.seen
            .find(id_hash(id), |&i| entries[i as usize].0 == *id)
            .is_some()
    }

    /// Records the entry just pushed as the object `id`.
    fn add_seen(&mut self, id: &ObjectId) {
        let index = (self.entries.len() - 1) as u32;
        let entries = &self.entries;
        self.seen
            .insert_unique(id_hash(id), index, |&i| id_hash(&entries[i as usize].0));
    }

    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Appends an entry encoded by [`encode_entry`], unless the object is there already.
    pub(crate) fn append_encoded(&mut self, id: ObjectId, entry: &[u8]) {
        if self.failed.is_some() || self.contains(&id) {
            return;
        }
        let offset = self.len;
        match self.file.write_all(entry) {
            Ok(()) => {
                self.len += entry.len() as u64;
                let offset = self.offset_entry(offset);
                self.entries.push((id, offset, crc32fast::hash(entry)));
                self.add_seen(&id);
            }
            Err(e) => self.failed = Some(e),
        }
    }

    /// An offset as the index's table of 4-byte offsets holds it.
    fn offset_entry(&mut self, offset: u64) -> u32 {
        index_offset(offset, &mut self.large)
    }

    /// Compresses and appends `data` in pieces, never holding its compressed form whole.
    pub(crate) fn append(&mut self, kind: Kind, id: ObjectId, data: &[u8]) {
        if self.failed.is_some() || self.contains(&id) {
            return;
        }
        let offset = self.len;
        let mut crc = crc32fast::Hasher::new();
        let mut head = Vec::with_capacity(16);
        entry_header(kind, data.len(), &mut head);
        let written = (|| -> std::io::Result<u64> {
            self.file.write_all(&head)?;
            crc.update(&head);
            let mut n = head.len() as u64;
            let (file, z) = (&mut self.file, &mut self.z);
            deflate_with(z, data, |piece| {
                crc.update(piece);
                n += piece.len() as u64;
                file.write_all(piece)
            })?;
            Ok(n)
        })();
        match written {
            Ok(n) => {
                self.len += n;
                let offset = self.offset_entry(offset);
                self.entries.push((id, offset, crc.finalize()));
                self.add_seen(&id);
            }
            Err(e) => self.failed = Some(e),
        }
    }

    /// Writes the object count and the checksum (read back from the file: the count at its
    /// start was not known until now), and the index, to [`index_path_of`] the pack. The
    /// index goes straight to its file (a tenth of the pack's objects' table again, were it
    /// made in memory first: 11 MB at 400,000 objects).
    pub(crate) fn finish(mut self) -> std::io::Result<FinishedPack> {
        if let Some(e) = self.failed.take() {
            return Err(e);
        }
        let count = u32::try_from(self.entries.len())
            .map_err(|_| std::io::Error::other("more objects than a pack can hold"))?;
        self.file.flush()?;
        // Needed no more: room for the index's sorting.
        self.seen = hashbrown::HashTable::new();
        let index_path = index_path_of(&self.path);
        let index_file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&index_path)?;
        let mut index = Hashed::new(index_file);
        // The index (sorted IDs, CRCs, offsets: a tenth of a second at 300,000 objects) is
        // made while the pack is read back for its checksum, which only its end needs.
        let mut entries = std::mem::take(&mut self.entries);
        let large = std::mem::take(&mut self.large);
        let (checksum, written) = std::thread::scope(|scope| {
            let body = std::thread::Builder::new()
                .spawn_scoped(scope, || index_body(&mut entries, &large, &mut index));
            let checksum = self.complete(count);
            let written = body.map(|b| b.join().expect("making a pack index does not panic"));
            (checksum, written.ok())
        });
        let checksum = checksum.and_then(|c| {
            // No thread to be had (a process limit): made now.
            written.unwrap_or_else(|| index_body(&mut entries, &large, &mut index))?;
            index.close(&c)?;
            Ok(c)
        });
        let checksum = match checksum {
            Ok(c) => c,
            Err(e) => {
                let _ = std::fs::remove_file(&index_path);
                return Err(e);
            }
        };
        self.done = true;
        Ok(FinishedPack {
            path: self.path.clone(),
            index_path,
            checksum,
            objects: entries.len(),
        })
    }

    /// Writes the object count, then the checksum of everything before it, and flushes the
    /// pack to disk; returns the checksum.
    fn complete(&mut self, count: u32) -> std::io::Result<[u8; 20]> {
        let file = self.file.get_mut();
        file.seek(SeekFrom::Start(8))?;
        file.write_all(&count.to_be_bytes())?;
        file.seek(SeekFrom::Start(0))?;
        let mut sha = Sha1::new();
        let mut buf = vec![0u8; 1 << 20];
        let mut left = self.len;
        while left > 0 {
            let want = left.min(buf.len() as u64) as usize;
            let n = file.read(&mut buf[..want])?;
            if n == 0 {
                return Err(std::io::Error::other("the pack file shrank while written"));
            }
            sha.update(&buf[..n]);
            left -= n as u64;
        }
        let checksum: [u8; 20] = sha.finalize().into();
        file.seek(SeekFrom::Start(self.len))?;
        file.write_all(&checksum)?;
        file.sync_all()?;
        Ok(checksum)
    }
}

impl Drop for PackWriter {
    /// A pack never finished is of no use to anyone: it is removed.
    fn drop(&mut self) {
        if !self.done {
            let _ = std::fs::remove_file(&self.path);
            let _ = std::fs::remove_file(index_path_of(&self.path));
        }
    }
}

/// A [`PackWriter`] shared by the tasks that read versions, until it is taken to be finished.
pub(crate) struct PackSink {
    writer: Mutex<Option<PackWriter>>,
}

impl PackSink {
    pub(crate) fn new(writer: PackWriter) -> PackSink {
        PackSink {
            writer: Mutex::new(Some(writer)),
        }
    }

    fn with<T>(&self, f: impl FnOnce(&mut PackWriter) -> T) -> Option<T> {
        self.writer.lock().as_mut().map(f)
    }

    /// Adds an object (once). Small objects are compressed on the caller's thread first.
    /// See [`PackWriter::reserve`].
    pub(crate) fn reserve(&self, more: usize) {
        self.with(|w| w.reserve(more));
    }

    pub(crate) fn add(&self, kind: Kind, id: ObjectId, data: &[u8]) {
        if data.len() >= STREAM_FROM {
            self.with(|w| w.append(kind, id, data));
            return;
        }
        if self.with(|w| w.contains(&id)).unwrap_or(true) {
            return;
        }
        thread_local! {
            static ENTRY: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
        }
        // One buffer a thread, not an allocation an object; a large one is not kept.
        ENTRY.with(|entry| {
            let mut entry = entry.borrow_mut();
            entry.clear();
            encode_entry(kind, data, &mut entry);
            self.with(|w| w.append_encoded(id, &entry));
            if entry.capacity() > KEPT_ENTRY_BUFFER {
                *entry = Vec::new();
            }
        });
    }

    /// The writer, to be finished; objects added afterwards are dropped.
    pub(crate) fn take(&self) -> Option<PackWriter> {
        self.writer.lock().take()
    }
}

/// An object's pack entry: type and size, then its zlib stream.
pub(crate) fn encode_entry(kind: Kind, data: &[u8], out: &mut Vec<u8>) {
    entry_header(kind, data.len(), out);
    thread_local! {
        static SMALL: std::cell::RefCell<SmallDeflate> = std::cell::RefCell::default();
        static Z: std::cell::RefCell<Compress> =
            std::cell::RefCell::new(Compress::new(flate2::Compression::fast(), true));
    }
    // Most objects of a lake are small: zlib would spend more on setting up each stream than
    // on compressing it.
    if data.len() <= deflate::SMALL_MAX {
        return SMALL.with(|z| z.borrow_mut().compress(data, out));
    }
    Z.with(|z| {
        deflate_with(&mut z.borrow_mut(), data, |piece| {
            out.extend_from_slice(piece);
            Ok(())
        })
        .expect("deflating into memory cannot fail")
    });
}

fn entry_header(kind: Kind, len: usize, out: &mut Vec<u8>) {
    let type_bits: u8 = match kind {
        Kind::Commit => 1,
        Kind::Tree => 2,
        Kind::Blob => 3,
    };
    let mut size = len as u64;
    let mut byte = (type_bits << 4) | (size & 0x0f) as u8;
    size >>= 4;
    while size > 0 {
        out.push(byte | 0x80);
        byte = (size & 0x7f) as u8;
        size >>= 7;
    }
    out.push(byte);
}

/// Compresses `data` as one zlib stream, handing the output to `emit` a piece at a time.
fn deflate_with(
    z: &mut Compress,
    data: &[u8],
    mut emit: impl FnMut(&[u8]) -> std::io::Result<()>,
) -> std::io::Result<()> {
    z.reset();
    let mut input = data;
    let mut out = Vec::with_capacity((data.len() / 2 + 64).min(256 << 10));
    loop {
        out.clear();
        let before_in = z.total_in();
        let status = z
            .compress_vec(input, &mut out, FlushCompress::Finish)
            .map_err(std::io::Error::other)?;
        input = &input[(z.total_in() - before_in) as usize..];
        emit(&out)?;
        if status == Status::StreamEnd {
            return Ok(());
        }
    }
}

/// The version-2 pack index (gitformat-pack(5)): fan-out, sorted IDs, CRC-32s, offsets, then
/// the pack's checksum and the index's own.
/// A hash of an object ID for the table of objects seen: its first eight bytes.
fn id_hash(id: &ObjectId) -> u64 {
    let mut first = [0u8; 8];
    first.copy_from_slice(&id.0[..8]);
    u64::from_le_bytes(first)
}

/// A file written through a buffer, hashed as it goes (an index's trailer is the SHA-1 of
/// everything before it).
struct Hashed {
    out: BufWriter<File>,
    sha: Sha1,
}

impl Hashed {
    fn new(file: File) -> Hashed {
        Hashed {
            out: BufWriter::with_capacity(1 << 20, file),
            sha: Sha1::new(),
        }
    }

    fn write_all(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.sha.update(bytes);
        self.out.write_all(bytes)
    }

    /// Ends an index: the pack's checksum, then the index's own, flushed and synced to disk.
    fn close(mut self, pack_checksum: &[u8; 20]) -> std::io::Result<File> {
        self.write_all(pack_checksum)?;
        let digest: [u8; 20] = self.sha.clone().finalize().into();
        self.write_all(&digest)?;
        let file = self.out.into_inner().map_err(|e| e.into_error())?;
        file.sync_all()?;
        Ok(file)
    }
}

/// Offset `offset` as a version-2 index's table of 4-byte offsets holds it: itself below
/// 2 GiB, else the high bit and its place in `large`, where it is added.
pub(crate) fn index_offset(offset: u64, large: &mut Vec<u64>) -> u32 {
    if offset < LARGE_OFFSET {
        return offset as u32;
    }
    large.push(offset);
    LARGE_OFFSET as u32 | (large.len() - 1) as u32
}

/// Writes to a new file `path` the version-2 index of a pack whose checksum is `checksum`:
/// `entries` (ID, [`index_offset`], CRC-32; sorted here by ID) and `large`; synced to disk.
pub(crate) fn write_index(
    path: &Path,
    entries: &mut [(ObjectId, u32, u32)],
    large: &[u64],
    checksum: &[u8; 20],
) -> std::io::Result<File> {
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)?;
    let mut index = Hashed::new(file);
    index_body(entries, large, &mut index)?;
    index.close(checksum)
}

/// A version-2 index of `entries` (sorted here) up to its trailer: the pack's checksum, then
/// its own.
fn index_body(
    entries: &mut [(ObjectId, u32, u32)],
    large: &[u64],
    out: &mut Hashed,
) -> std::io::Result<()> {
    // IDs are unique and spread evenly: their first eight bytes nearly always decide.
    let prefix = |id: &ObjectId| u64::from_be_bytes(id.0[..8].try_into().expect("8 bytes"));
    entries.sort_unstable_by(|a, b| prefix(&a.0).cmp(&prefix(&b.0)).then(a.0.cmp(&b.0)));
    out.write_all(&[0xff, b't', b'O', b'c', 0, 0, 0, 2])?;
    let mut fanout = [0u32; 256];
    for (id, _, _) in entries.iter() {
        fanout[id.0[0] as usize] += 1;
    }
    let mut running = 0u32;
    for count in fanout {
        running += count;
        out.write_all(&running.to_be_bytes())?;
    }
    for (id, _, _) in entries.iter() {
        out.write_all(&id.0)?;
    }
    for (_, _, crc) in entries.iter() {
        out.write_all(&crc.to_be_bytes())?;
    }
    // The 8-byte offsets follow in the order of the objects that point at them.
    let mut in_order = Vec::new();
    for (_, offset, _) in entries.iter() {
        if u64::from(*offset) < LARGE_OFFSET {
            out.write_all(&offset.to_be_bytes())?;
        } else {
            let at = (*offset & !(LARGE_OFFSET as u32)) as usize;
            out.write_all(&(LARGE_OFFSET as u32 | in_order.len() as u32).to_be_bytes())?;
            in_order.push(large[at]);
        }
    }
    for offset in in_order {
        out.write_all(&offset.to_be_bytes())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mapping::Object;
    use std::io::Read;

    #[test]
    fn offsets_of_2_gib_and_more_are_read_back_by_gix_from_the_index() {
        let dir = tempfile::tempdir().unwrap();
        let id = |n: u8| ObjectId([n; 20]);
        let offsets = [12u64, LARGE_OFFSET + 5, 99, 5 << 32, LARGE_OFFSET - 1];
        let large: Vec<u64> = offsets
            .iter()
            .copied()
            .filter(|o| *o >= LARGE_OFFSET)
            .collect();
        // Written in the order 5, 4, 3, 2, 1: the index sorts them, large ones too.
        let mut entries: Vec<(ObjectId, u32, u32)> = Vec::new();
        let mut k = 0;
        for (n, offset) in offsets.iter().enumerate() {
            let stored = if *offset < LARGE_OFFSET {
                *offset as u32
            } else {
                k += 1;
                LARGE_OFFSET as u32 | (k - 1)
            };
            entries.push((id(5 - n as u8), stored, n as u32));
        }
        let path = dir.path().join("x.idx");
        let mut out = Hashed::new(File::create(&path).unwrap());
        index_body(&mut entries, &large, &mut out).unwrap();
        out.write_all(&[0u8; 20]).unwrap();
        let digest: [u8; 20] = out.sha.clone().finalize().into();
        out.write_all(&digest).unwrap();
        drop(out.out.into_inner().unwrap());
        let index = gix::odb::pack::index::File::at(&path, gix::hash::Kind::Sha1).unwrap();
        for e in index.iter() {
            let n = 5 - e.oid.as_bytes()[0] as usize;
            assert_eq!(e.pack_offset, offsets[n], "object {n}");
        }
        assert_eq!(index.iter().count(), offsets.len());
    }

    #[test]
    fn objects_whose_ids_share_their_first_bytes_are_told_apart() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = PackWriter::create(&dir.path().join("tmp.pack")).unwrap();
        w.reserve(3);
        let id = |last: u8| {
            let mut b = [7u8; 20];
            b[19] = last;
            ObjectId(b)
        };
        for last in 0..1000u16 {
            w.append_encoded(id((last % 250) as u8), b"entry");
        }
        assert_eq!(w.len(), 250);
        assert!(w.contains(&id(249)) && !w.contains(&ObjectId([7u8; 20].map(|b| b + 1))));
    }

    #[test]
    fn gix_reads_the_pack_and_index_back() {
        let big: Vec<u8> = (0..1_000_000u32).flat_map(|i| i.to_le_bytes()).collect();
        let objects = vec![
            Object::new(Kind::Blob, &b""[..]).unwrap(),
            Object::new(Kind::Blob, &b"small"[..]).unwrap(),
            Object::new(Kind::Blob, big.clone()).unwrap(),
            Object::new(Kind::Tree, &b""[..]).unwrap(),
        ];
        let dir = tempfile::tempdir().unwrap();
        let tmp = dir.path().join("tmp.pack");
        let sink = PackSink::new(PackWriter::create(&tmp).unwrap());
        for o in objects.iter().chain(&objects) {
            sink.add(o.kind, o.id, &o.data);
        }
        let pack = sink.take().unwrap().finish().unwrap();
        assert_eq!(pack.objects, objects.len());
        let name = format!("pack-{}", hex(&pack.checksum));
        let idx_path = dir.path().join(format!("{name}.idx"));
        let pack_path = dir.path().join(format!("{name}.pack"));
        std::fs::rename(&pack.index_path, &idx_path).unwrap();
        std::fs::rename(&pack.path, &pack_path).unwrap();
        let index = gix::odb::pack::index::File::at(&idx_path, gix::hash::Kind::Sha1).unwrap();
        assert_eq!(index.num_objects(), objects.len() as u32);
        let mut listed: Vec<ObjectId> = index
            .iter()
            .map(|e| ObjectId::try_from(e.oid.as_ref()).unwrap())
            .collect();
        let mut ids: Vec<ObjectId> = objects.iter().map(|o| o.id).collect();
        listed.sort();
        ids.sort();
        assert_eq!(listed, ids);
        let data = gix::odb::pack::data::File::at(&pack_path, gix::hash::Kind::Sha1).unwrap();
        assert_eq!(data.num_objects(), objects.len() as u32);
        data.verify_checksum(&mut gix::progress::Discard, &Default::default())
            .unwrap();
        for o in &objects {
            let oid = gix::ObjectId::from(o.id);
            let at = index.lookup(oid).expect("every object is in the index");
            let offset = index.pack_offset_at_index(at);
            let entry = data.entry(offset).unwrap();
            let mut out = Vec::new();
            let mut cache = gix::odb::pack::cache::Never;
            let mut inflate = gix::zlib::Inflate::default();
            let outcome = data
                .decode_entry(entry, &mut out, &mut inflate, &|_, _| Ok(None), &mut cache)
                .unwrap();
            assert_eq!(outcome.kind.as_bytes(), o.kind.name().as_bytes());
            assert_eq!(out, &o.data[..]);
        }
        // The index's own checksums verify.
        let interrupt = std::sync::atomic::AtomicBool::new(false);
        index
            .verify_checksum(&mut gix::progress::Discard, &interrupt)
            .unwrap();
    }

    #[test]
    fn an_unfinished_pack_is_removed() {
        let dir = tempfile::tempdir().unwrap();
        let tmp = dir.path().join("tmp.pack");
        let w = PackWriter::create(&tmp).unwrap();
        assert!(tmp.exists());
        drop(w);
        assert!(!tmp.exists());
    }

    #[test]
    fn entries_inflate_back() {
        for len in [0usize, 1, 300, 65535, 65536, 200_000] {
            let data: Vec<u8> = (0..len).map(|i| (i * 7 % 251) as u8).collect();
            let mut out = Vec::new();
            encode_entry(Kind::Blob, &data, &mut out);
            let mut head = Vec::new();
            entry_header(Kind::Blob, len, &mut head);
            assert_eq!(&out[..head.len()], &head[..]);
            let mut back = Vec::new();
            flate2::read::ZlibDecoder::new(&out[head.len()..])
                .read_to_end(&mut back)
                .unwrap();
            assert_eq!(back, data, "{len} bytes");
        }
    }
}
