//! Git's pack format (gitformat-pack(5)): fetched objects encoded whole, as one version-2 pack
//! and its version-2 index, ready to be renamed into a repository's `objects/pack/`.

use flate2::{Compress, FlushCompress, Status};
use sha1::{Digest, Sha1};

use crate::mapping::{Kind, Object, ObjectId};

/// Lower-case hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
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
    fn gix_reads_the_pack_and_index_back() {
        let big: Vec<u8> = (0..100_000u32).flat_map(|i| i.to_le_bytes()).collect();
        let objects = vec![
            Object::new(Kind::Blob, &b""[..]),
            Object::new(Kind::Blob, &b"small"[..]),
            Object::new(Kind::Blob, big.clone()),
            Object::new(Kind::Tree, &b""[..]),
        ];
        let pack = encode_pack(&objects).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let name = format!("pack-{}", hex(&pack.checksum));
        let idx_path = dir.path().join(format!("{name}.idx"));
        let pack_path = dir.path().join(format!("{name}.pack"));
        std::fs::write(&idx_path, pack.index()).unwrap();
        std::fs::write(&pack_path, &pack.data).unwrap();
        let index = gix::odb::pack::index::File::at(&idx_path, gix::hash::Kind::Sha1).unwrap();
        assert_eq!(index.num_objects(), objects.len() as u32);
        let data = gix::odb::pack::data::File::at(&pack_path, gix::hash::Kind::Sha1).unwrap();
        assert_eq!(data.num_objects(), objects.len() as u32);
        for o in &objects {
            let oid = gix::ObjectId::try_from(&o.id.0[..]).unwrap();
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
