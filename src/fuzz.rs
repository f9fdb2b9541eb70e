//! Entry points for `cargo fuzz` (`fuzz/`, `make fuzz`): each parser of hostile input, and the
//! small DEFLATE encoder, fed raw bytes. Each must return, whatever the bytes, without a panic;
//! nothing in the helper calls them.

use std::io::Read;

use bytes::Bytes;

use crate::lake::record::VersionRecord;
use crate::lake::VersionId;

/// Lines from Git, as the helper's loop reads them, and `option` lines as it sets them.
pub fn protocol(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let mut parser = crate::protocol::Parser::default();
    let mut options = crate::protocol::Options::default();
    for line in text.split('\n') {
        let _ = parser.feed(line);
        if let Some((name, value)) = line.strip_prefix("option ").and_then(|o| o.split_once(' ')) {
            let _ = options.set(name, value, true);
        }
        let _ = crate::protocol::unquote(line);
    }
}

/// A `version.json`, and mapping v1 on it when it is readable.
pub fn record(data: &[u8]) {
    let Ok(record) = VersionRecord::parse(Bytes::copy_from_slice(data)) else {
        return;
    };
    let id = VersionId::parse("0190f3a2-7b4c-7d2e-8f10-000000000001").expect("a version ID");
    let _ = crate::mapping::version_commit(&id, &record, None, &[]);
}

/// A `refs.json` as a reader reads it, and as a push rewrites it.
pub fn refs_json(data: &[u8]) {
    let _ = crate::lake::refs_json::parse_refs_json(data);
    let id = VersionId::parse("0190f3a2-7b4c-7d2e-8f10-000000000001").expect("a version ID");
    let _ = crate::lake::refs_json::render_refs_json(Some(data), &[("refs/heads/main".into(), id)]);
}

/// `git-packs/list.json` and a pack's record.
pub fn pack_formats(data: &[u8]) {
    let _ = crate::lake_packs::parse_list(data);
    let _ = crate::lake_packs::parse_record("pack-0123456789abcdef0123456789abcdef01234567", data);
}

/// A lake's pack as a clone indexes one it downloaded: whole objects on the helper's own road,
/// a pack with deltas or tags by gix's indexer (files in a temporary folder, removed after).
pub fn lake_pack(data: &[u8]) {
    let Ok(dir) = tempfile::tempdir() else {
        return;
    };
    let pack = dir.path().join("fuzzed.pack");
    if std::fs::write(&pack, data).is_ok() {
        let idx = dir.path().join("fuzzed.idx");
        let _ = crate::lake_packs::index_pack::index(&pack, &idx, 1 << 20);
    }
}

/// Text on its way to the terminal: redacted, escaped, cut.
pub fn redact(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let _ = crate::redact::redact(&text);
    let _ = crate::redact::sanitize(&text);
    let _ = crate::redact::for_terminal(&text);
    let cut = data.first().map_or(0, |b| usize::from(*b));
    let _ = crate::redact::excerpt(&text, cut);
}

/// Streams cut from `data` compressed one after the other by one encoder (its table is never
/// cleared), each inflated back by zlib: the same bytes, or a panic.
pub fn deflate_round_trip(data: &[u8]) {
    let mut encoder = crate::session_pack::SmallDeflate::default();
    let mut rest = data;
    while !rest.is_empty() {
        let take = (usize::from(rest[0]) * 97 + 1).min(rest.len());
        let (piece, after) = rest.split_at(take);
        rest = after;
        let mut out = Vec::new();
        encoder.compress(piece, &mut out);
        let mut back = Vec::new();
        flate2::read::ZlibDecoder::new(&out[..])
            .read_to_end(&mut back)
            .expect("a stream the encoder wrote inflates");
        assert_eq!(back, piece, "a stream inflates to its input");
    }
}

/// The zlib streams of `objects`, one each, as the session's pack writes objects up to 32 KiB:
/// their total size. For `benches/hand_written.rs`, which sets it beside zlib-rs.
pub fn deflate_small(objects: &[Vec<u8>]) -> usize {
    let mut encoder = crate::session_pack::SmallDeflate::default();
    let mut out = Vec::new();
    let mut total = 0;
    for object in objects {
        out.clear();
        encoder.compress(object, &mut out);
        total += out.len();
    }
    total
}
