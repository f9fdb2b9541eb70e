//! A pack's claims cut in pieces (`git-packs/<pack>.claims/`), so that a reader that needs
//! the commits of a few versions (a shallow clone: the tips, and the parents of its boundary)
//! reads a few small files instead of the whole record. `index` names the first version of
//! each block and the last version of all; block `<n>` holds [`PER_BLOCK`] lines
//! `<version id> <commit>`, sorted by version ID. What they say is what the record says (the
//! same run of `pack` writes both); a reader that finds them missing or malformed reads the
//! record instead, and a reader that does not know them never looks.

use crate::lake::VersionId;
use crate::mapping::ObjectId;

/// Lines in a block (the last may hold fewer): about 20 KB a block.
pub(crate) const PER_BLOCK: usize = 256;

/// The first line of an index.
const MAGIC: &str = "fdl-claims 1";

/// Bytes of a block's line: a version ID, a space, a commit ID, a newline.
const LINE: usize = 36 + 1 + 40 + 1;

/// Bytes of a whole block.
pub(crate) const BLOCK_BYTES: usize = PER_BLOCK * LINE;

/// What a pack's claims index says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ClaimsIndex {
    /// The first version of each block, in order.
    pub firsts: Vec<VersionId>,
    /// The last version of all (the newest, where IDs are UUIDv7).
    pub last: VersionId,
}

/// Why a claims file is not taken.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}: {why}")]
pub(crate) struct ClaimsError {
    pub file: String,
    pub why: String,
}

/// The index and the blocks of `claims` (any order).
pub(crate) fn render(claims: &[(VersionId, ObjectId)]) -> Option<(Vec<u8>, Vec<Vec<u8>>)> {
    let mut sorted: Vec<&(VersionId, ObjectId)> = claims.iter().collect();
    sorted.sort_by(|a, b| a.0.cmp(&b.0));
    sorted.dedup_by(|a, b| a.0 == b.0);
    let last = sorted.last()?;
    let mut index = format!("{MAGIC}\n{} {PER_BLOCK} {}\n", sorted.len(), last.0);
    let mut blocks = Vec::new();
    for chunk in sorted.chunks(PER_BLOCK) {
        index.push_str(&format!("{}\n", chunk[0].0));
        let mut block = String::with_capacity(chunk.len() * LINE);
        for (v, c) in chunk {
            block.push_str(&format!("{v} {}\n", c.to_hex()));
        }
        blocks.push(block.into_bytes());
    }
    Some((index.into_bytes(), blocks))
}

/// Reads an index.
pub(crate) fn parse_index(file: &str, raw: &[u8]) -> Result<ClaimsIndex, ClaimsError> {
    let bad = |why: &str| ClaimsError {
        file: file.to_string(),
        why: why.to_string(),
    };
    let text = std::str::from_utf8(raw).map_err(|_| bad("not UTF-8"))?;
    let mut lines = text.lines();
    if lines.next() != Some(MAGIC) {
        return Err(bad("not a claims index of format 1"));
    }
    let head = lines.next().ok_or_else(|| bad("no counts"))?;
    let mut words = head.split(' ');
    let count: usize =
        (words.next().and_then(|w| w.parse().ok())).ok_or_else(|| bad("no count"))?;
    let per: usize = (words.next().and_then(|w| w.parse().ok())).ok_or_else(|| bad("no size"))?;
    let last = (words.next().and_then(|w| VersionId::parse(w).ok()))
        .ok_or_else(|| bad("no last version"))?;
    if per != PER_BLOCK {
        return Err(bad("blocks of another size"));
    }
    let firsts: Vec<VersionId> = lines
        .map(|l| VersionId::parse(l).map_err(|_| bad("a line is not a version ID")))
        .collect::<Result<_, _>>()?;
    if firsts.len() != count.div_ceil(PER_BLOCK) || !firsts.is_sorted_by(|a, b| a < b) {
        return Err(bad("its blocks do not add up"));
    }
    if firsts.last().is_some_and(|f| *f > last) {
        return Err(bad("its last version comes before a block's first"));
    }
    Ok(ClaimsIndex { firsts, last })
}

impl ClaimsIndex {
    /// The block that holds `v`, if any can.
    pub(crate) fn block_of(&self, v: &VersionId) -> Option<usize> {
        if *v > self.last {
            return None;
        }
        match self.firsts.binary_search(v) {
            Ok(n) => Some(n),
            Err(0) => None,
            Err(n) => Some(n - 1),
        }
    }
}

/// Reads block `n` of `index`: its lines, each checked to fall in the block.
pub(crate) fn parse_block(
    file: &str,
    index: &ClaimsIndex,
    n: usize,
    raw: &[u8],
) -> Result<Vec<(VersionId, ObjectId)>, ClaimsError> {
    let bad = |why: &str| ClaimsError {
        file: file.to_string(),
        why: why.to_string(),
    };
    if !raw.len().is_multiple_of(LINE) || raw.len() / LINE > PER_BLOCK || raw.is_empty() {
        return Err(bad("not whole lines of claims"));
    }
    let text = std::str::from_utf8(raw).map_err(|_| bad("not UTF-8"))?;
    let mut out = Vec::with_capacity(raw.len() / LINE);
    for line in text.lines() {
        let (v, c) = line
            .split_once(' ')
            .ok_or_else(|| bad("a line has no commit"))?;
        let v = VersionId::parse(v).map_err(|_| bad("a line's version is not an ID"))?;
        let c = ObjectId::from_hex(c).ok_or_else(|| bad("a line's commit is not an ID"))?;
        out.push((v, c));
    }
    let first = &index.firsts[n];
    let next = index.firsts.get(n + 1);
    let in_block = out.first().map(|(v, _)| v) == Some(first)
        && out.is_sorted_by(|a, b| a.0 < b.0)
        && out
            .iter()
            .all(|(v, _)| next.is_none_or(|n| v < n) && *v <= index.last);
    match in_block {
        true => Ok(out),
        false => Err(bad("its versions are not the block's")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vid(n: usize) -> VersionId {
        VersionId::parse(&format!("00000000-0000-7000-8000-{n:012x}")).unwrap()
    }

    fn oid(n: usize) -> ObjectId {
        ObjectId::from_hex(&format!("{n:040x}")).unwrap()
    }

    #[test]
    fn claims_render_in_blocks_and_read_back_by_version() {
        let claims: Vec<_> = (0..600).rev().map(|n| (vid(n), oid(n))).collect();
        let (index, blocks) = render(&claims).unwrap();
        let index = parse_index("index", &index).unwrap();
        assert_eq!(blocks.len(), 3);
        assert_eq!(index.firsts, [vid(0), vid(256), vid(512)]);
        assert_eq!(index.block_of(&vid(300)), Some(1));
        assert_eq!(index.block_of(&vid(600)), None);
        let block = parse_block("1", &index, 1, &blocks[1]).unwrap();
        assert_eq!(block.len(), 256);
        assert!(block.contains(&(vid(300), oid(300))));
    }

    #[test]
    fn a_block_that_holds_another_block_s_versions_is_refused() {
        let claims: Vec<_> = (0..600).map(|n| (vid(n), oid(n))).collect();
        let (index, blocks) = render(&claims).unwrap();
        let index = parse_index("index", &index).unwrap();
        assert!(parse_block("0", &index, 1, &blocks[0]).is_err());
        assert!(parse_block("1", &index, 1, b"garbage").is_err());
        assert!(parse_index("index", b"fdl-claims 2\n").is_err());
    }
}
