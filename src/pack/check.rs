//! A pack and its index checked as files before they are trusted (a pack kept by an earlier
//! `ls-remote`, which a crash, a full disk or a hand may have damaged since): the index's own
//! checksum, the pack's checksum (named by the file, and held by the index), the object count,
//! and each object's bytes against the CRC-32 the index holds for it. What `git index-pack`
//! would refuse is refused here, before the pack is moved where Git reads it.

use std::io::Read;
use std::path::Path;

use sha1::{Digest, Sha1};

use crate::mapping::ObjectId;

/// An index larger than this is no index this helper wrote (28 bytes an object).
const INDEX_LIMIT: u64 = 1 << 30;

/// The object IDs of the pack whose index is at `idx` (`pack-<checksum>.idx`, the pack beside
/// it), once both are found whole and in agreement; else why not, in a few words.
pub fn check_kept(idx: &Path) -> Result<Vec<ObjectId>, String> {
    let index = read_index(idx)?;
    let (count, body) = index_layout(&index)?;
    let (rest, own) = index.split_at(index.len() - 20);
    if Sha1::digest(rest)[..] != own[..] {
        return Err("its index does not match its checksum".into());
    }
    let pack_sum = &index[index.len() - 40..index.len() - 20];
    let name = idx.file_stem().and_then(|s| s.to_str()).unwrap_or("");
    if name.strip_prefix("pack-") != Some(&super::hex(pack_sum)[..]) {
        return Err("its index is of another pack".into());
    }
    let ids = super::index_ids(&index).ok_or("its index is not a version-2 pack index")?;
    let crcs = &body[count * 20..count * 24];
    let offsets = object_offsets(&body[count * 24..], count)?;
    let mut spans: Vec<(u64, u32)> = offsets
        .into_iter()
        .zip(crcs.chunks(4))
        .map(|(o, c)| (o, u32::from_be_bytes(c.try_into().expect("4 bytes"))))
        .collect();
    spans.sort_unstable();
    check_pack(&idx.with_extension("pack"), count, pack_sum, &spans)?;
    Ok(ids)
}

fn read_index(idx: &Path) -> Result<Vec<u8>, String> {
    let file = std::fs::File::open(idx).map_err(|e| format!("its index cannot be read: {e}"))?;
    let meta = file.metadata().map_err(|e| e.to_string())?;
    if !meta.is_file() || meta.len() > INDEX_LIMIT {
        return Err("its index is not a regular file of an index's size".into());
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(INDEX_LIMIT)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("its index cannot be read: {e}"))?;
    Ok(bytes)
}

/// The object count of a version-2 index, and what follows its fan-out (IDs, CRCs, offsets,
/// large offsets, checksums), once its size is that of an index of that many objects.
fn index_layout(index: &[u8]) -> Result<(usize, &[u8]), String> {
    let bad = || "its index is not a version-2 pack index".to_string();
    if index.get(..8) != Some(&[0xff, b't', b'O', b'c', 0, 0, 0, 2][..]) {
        return Err(bad());
    }
    let last = index.get(8 + 255 * 4..8 + 256 * 4).ok_or_else(bad)?;
    let count = u32::from_be_bytes(last.try_into().expect("4 bytes")) as usize;
    let body = &index[8 + 1024..];
    let fixed = count * 28 + 40;
    if body.len() < fixed || !(body.len() - fixed).is_multiple_of(8) {
        return Err(bad());
    }
    Ok((count, body))
}

/// Each object's offset in the pack, in index order, from the 4-byte table and the 8-byte
/// table of large offsets after it.
fn object_offsets(tables: &[u8], count: usize) -> Result<Vec<u64>, String> {
    let (small, large) = tables.split_at(count * 4);
    let large = &large[..large.len() - 40];
    small
        .chunks(4)
        .map(|c| {
            let o = u32::from_be_bytes(c.try_into().expect("4 bytes"));
            if o & 0x8000_0000 == 0 {
                return Ok(u64::from(o));
            }
            let at = (o & 0x7fff_ffff) as usize * 8;
            let big = large
                .get(at..at + 8)
                .ok_or("its index points past its table")?;
            Ok(u64::from_be_bytes(big.try_into().expect("8 bytes")))
        })
        .collect()
}

/// Reads the pack once: its header, checksum and each object's CRC-32 (`spans`: the objects'
/// offsets, sorted, with their CRCs) against what the index says.
fn check_pack(pack: &Path, count: usize, sum: &[u8], spans: &[(u64, u32)]) -> Result<(), String> {
    let mut file = std::fs::File::open(pack).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => "its pack is missing".to_string(),
        _ => format!("its pack cannot be read: {e}"),
    })?;
    let len = file.metadata().map_err(|e| e.to_string())?.len();
    let end = len
        .checked_sub(20)
        .filter(|e| *e >= 12)
        .ok_or("its pack is cut short")?;
    if spans.first().is_some_and(|s| s.0 < 12) || spans.last().is_some_and(|s| s.0 >= end) {
        return Err("its index points outside its pack".into());
    }
    let mut sha = Sha1::new();
    let (mut at, mut next, mut crc) = (0u64, 0usize, crc32fast::Hasher::new());
    let mut header = Vec::with_capacity(12);
    let mut buf = vec![0u8; 1 << 20];
    let mut trailer = Vec::with_capacity(20);
    loop {
        let n = file
            .read(&mut buf)
            .map_err(|e| format!("its pack cannot be read: {e}"))?;
        if n == 0 {
            break;
        }
        let mut chunk = &buf[..n];
        while !chunk.is_empty() {
            if at >= end {
                trailer.extend_from_slice(chunk);
                break;
            }
            // Up to the next object's start, or the trailer.
            let stop = spans.get(next).map_or(end, |s| s.0).min(end);
            let take = if at < stop {
                ((stop - at) as usize).min(chunk.len())
            } else {
                0
            };
            if take == 0 {
                // An object starts here: the one before it is complete.
                let done = std::mem::take(&mut crc).finalize();
                if next > 0 && done != spans[next - 1].1 {
                    return Err("an object in its pack does not match its index".into());
                }
                next += 1;
                continue;
            }
            let (piece, rest) = chunk.split_at(take);
            sha.update(piece);
            if header.len() < 12 {
                header.extend_from_slice(&piece[..piece.len().min(12 - header.len())]);
            }
            if next > 0 {
                crc.update(piece);
            }
            at += take as u64;
            chunk = rest;
        }
    }
    if at != end || trailer.len() != 20 {
        return Err("its pack changed while it was read".into());
    }
    if next > 0 && crc.finalize() != spans[next - 1].1 {
        return Err("an object in its pack does not match its index".into());
    }
    let counted = header
        .get(8..12)
        .map(|c| u32::from_be_bytes(c.try_into().expect("4 bytes")));
    if header.get(..8) != Some(&b"PACK\0\0\0\x02"[..]) || counted != Some(count as u32) {
        return Err("its pack's header does not match its index".into());
    }
    let digest: [u8; 20] = sha.finalize().into();
    if digest[..] != trailer[..] || digest[..] != *sum {
        return Err("its pack does not match its checksum".into());
    }
    Ok(())
}
