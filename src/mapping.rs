//! Mapping v1: the frozen, deterministic translation of an FDL version into a Git commit.
//!
//! Everything here is pure: bytes in, object bytes and IDs out. `docs/mapping.md` is the
//! contract this code implements; the golden tests in `t/` pin its output. Changing any byte
//! produced here changes every commit ID users have pinned: don't.

use bytes::Bytes;
use std::fmt;

use crate::lake::record::{Author, VersionRecord};
use crate::lake::VersionId;

/// The trailer that ties a commit back to its version.
pub(crate) const TRAILER_KEY: &str = "FDL-Version";

/// A SHA-1 object ID.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjectId(pub [u8; 20]);

impl ObjectId {
    pub fn from_hex(hex: &str) -> Option<ObjectId> {
        if hex.len() != 40 {
            return None;
        }
        let mut out = [0u8; 20];
        for (i, chunk) in hex.as_bytes().chunks(2).enumerate() {
            let s = std::str::from_utf8(chunk).ok()?;
            out[i] = u8::from_str_radix(s, 16).ok()?;
        }
        Some(ObjectId(out))
    }

    pub fn to_hex(self) -> String {
        let mut out = Vec::with_capacity(40);
        self.push_hex(&mut out);
        String::from_utf8(out).expect("hex digits are ASCII")
    }

    /// Appends the 40 lower-case hex digits.
    pub fn push_hex(&self, out: &mut Vec<u8>) {
        const DIGITS: &[u8; 16] = b"0123456789abcdef";
        for b in self.0 {
            out.push(DIGITS[(b >> 4) as usize]);
            out.push(DIGITS[(b & 0xf) as usize]);
        }
    }
}

impl From<ObjectId> for gix::ObjectId {
    fn from(id: ObjectId) -> gix::ObjectId {
        gix::ObjectId::Sha1(id.0)
    }
}

/// gix's object ID, if it is a SHA-1 (the only kind a lake maps to).
impl TryFrom<&gix::oid> for ObjectId {
    type Error = std::array::TryFromSliceError;
    fn try_from(id: &gix::oid) -> Result<ObjectId, Self::Error> {
        <[u8; 20]>::try_from(id.as_bytes()).map(ObjectId)
    }
}

impl fmt::Display for ObjectId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_hex())
    }
}

impl fmt::Debug for ObjectId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ObjectId({})", self.to_hex())
    }
}

/// The Git object kinds the mapping produces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Commit,
    Tree,
    Blob,
}

impl Kind {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Kind::Commit => "commit",
            Kind::Tree => "tree",
            Kind::Blob => "blob",
        }
    }
}

/// One Git object: its kind, its content, and the ID Git gives it.
#[derive(Clone, Debug)]
pub(crate) struct Object {
    pub kind: Kind,
    /// Shared bytes: a blob is the file as read, never copied.
    pub data: Bytes,
    pub id: ObjectId,
}

impl Object {
    pub(crate) fn new(kind: Kind, data: impl Into<Bytes>) -> Result<Object, Collision> {
        let data = data.into();
        let id = object_id(kind, &data)?;
        Ok(Object { kind, data, id })
    }
}

/// An object whose SHA-1 shows the marks of a collision attack: Git refuses it (its SHA-1 is
/// collision-detecting, sha1dc), so the mapping makes no commit of it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("its {kind} object is part of a SHA-1 collision attack, which Git refuses")]
pub(crate) struct Collision {
    pub kind: &'static str,
}

/// SHA-1 over `parts` in order, with Git's collision detection (gix's sha1dc): `None` where
/// the input shows the marks of a collision attack. Costs about 1.4x plain SHA-1.
fn checked_sha1(parts: &[&[u8]]) -> Option<[u8; 20]> {
    let mut h = gix::hash::hasher(gix::hash::Kind::Sha1);
    for part in parts {
        h.update(part);
    }
    let id = h.try_finalize().ok()?;
    id.as_bytes().try_into().ok()
}

/// Git's object ID: SHA-1 over `"<kind> <len>\0"` followed by the content.
pub(crate) fn object_id(kind: Kind, data: &[u8]) -> Result<ObjectId, Collision> {
    let header = format!("{} {}\0", kind.name(), data.len());
    checked_sha1(&[header.as_bytes(), data])
        .map(ObjectId)
        .ok_or(Collision { kind: kind.name() })
}

/// The commit of a version made whole from its files (its blobs and tree made on the way).
/// `parents` are the commit IDs of the record's parents, in the record's order.
pub(crate) fn version_commit(
    id: &VersionId,
    record: &VersionRecord,
    dataset_json: Option<Bytes>,
    parents: &[ObjectId],
) -> Result<Object, Collision> {
    let version_blob = Object::new(Kind::Blob, record.raw.clone())?;
    let dataset_blob = dataset_json
        .map(|bytes| Object::new(Kind::Blob, bytes))
        .transpose()?;
    let tree = tree_object(dataset_blob.as_ref().map(|b| b.id), version_blob.id)?;
    commit_object(&tree.id, parents, &commit_tail(id, record))
}

/// A version's tree from its blobs' IDs: `dataset.json` (if the version has one) and
/// `version.json`.
pub(crate) fn tree_object(
    dataset_json: Option<ObjectId>,
    version_json: ObjectId,
) -> Result<Object, Collision> {
    let mut entries: Vec<(&str, ObjectId)> = Vec::with_capacity(2);
    if let Some(blob) = dataset_json {
        entries.push(("dataset.json", blob));
    }
    entries.push(("version.json", version_json));
    // "dataset.json" < "version.json" in Git's tree order, so entries are already sorted.
    let mut tree_data = Vec::new();
    for (name, oid) in &entries {
        tree_data.extend_from_slice(b"100644 ");
        tree_data.extend_from_slice(name.as_bytes());
        tree_data.push(0);
        tree_data.extend_from_slice(&oid.0);
    }
    Object::new(Kind::Tree, tree_data)
}

/// A version's commit from its tree, its parents' commits and [`commit_tail`].
pub(crate) fn commit_object(
    tree: &ObjectId,
    parents: &[ObjectId],
    tail: &[u8],
) -> Result<Object, Collision> {
    let mut data = Vec::with_capacity(46 + 48 * parents.len() + tail.len());
    for (word, id) in std::iter::once(("tree ", tree)).chain(parents.iter().map(|p| ("parent ", p)))
    {
        data.extend_from_slice(word.as_bytes());
        id.push_hex(&mut data);
        data.push(b'\n');
    }
    data.extend_from_slice(tail);
    Object::new(Kind::Commit, data)
}

/// What follows a commit's parent lines: author, committer and message. It depends on the
/// record alone, so it can be made when the record is read and the record let go.
pub(crate) fn commit_tail(id: &VersionId, record: &VersionRecord) -> Vec<u8> {
    let ident = identity(&record.author);
    let time = commit_time(id, record);
    let mut out = format!("author {ident} {time} +0000\n");
    out.push_str(&format!("committer {ident} {time} +0000\n"));
    out.push('\n');
    out.push_str(&message(id, record.message.as_deref().unwrap_or("")));
    out.into_bytes()
}

/// `Name <email>` with the characters Git cannot hold in an identity removed.
pub(crate) fn identity(author: &Author) -> String {
    let mut name = clean_ident_part(&author.name);
    if name.is_empty() {
        name = "unknown".to_string();
    }
    let email = clean_ident_part(&author.email);
    format!("{name} <{email}>")
}

fn clean_ident_part(s: &str) -> String {
    let kept: String = s
        .chars()
        .filter(|c| !matches!(c, '\0' | '\n' | '\r' | '<' | '>'))
        .collect();
    kept.trim_matches(|c| c == ' ' || c == '\t').to_string()
}

/// Seconds since the Unix epoch: the record's time, else the UUIDv7 timestamp, else 0.
pub(crate) fn commit_time(id: &VersionId, record: &VersionRecord) -> u64 {
    if let Some(t) = record.time {
        return t;
    }
    id.uuid_v7_seconds().unwrap_or(0)
}

/// The commit message: the record's message normalised, then the `FDL-Version` trailer.
pub(crate) fn message(id: &VersionId, raw: &str) -> String {
    let body = normalize_message(raw);
    if body.is_empty() {
        format!("Version {id}\n\n{TRAILER_KEY}: {id}\n")
    } else {
        format!("{body}\n\n{TRAILER_KEY}: {id}\n")
    }
}

/// CR LF and CR become LF, NUL is dropped, trailing blanks of each line are dropped, runs of
/// empty lines become one, and leading and trailing empty lines are dropped. No final newline.
pub(crate) fn normalize_message(raw: &str) -> String {
    let unified = raw
        .replace("\r\n", "\n")
        .replace('\r', "\n")
        .replace('\0', "");
    let mut lines: Vec<&str> = Vec::new();
    for line in unified.split('\n') {
        let line = line.trim_end_matches([' ', '\t']);
        if line.is_empty() && lines.last().is_none_or(|l| l.is_empty()) {
            continue;
        }
        lines.push(line);
    }
    while lines.last().is_some_and(|l| l.is_empty()) {
        lines.pop();
    }
    lines.join("\n")
}

/// The version a commit message names in its last line, if any: the way back from a commit.
pub(crate) fn version_of_message(message: &str) -> Option<VersionId> {
    let last = message.trim_end_matches('\n').rsplit('\n').next()?;
    let value = last.strip_prefix(TRAILER_KEY)?.strip_prefix(": ")?;
    VersionId::parse(value).ok()
}

/// The message of a raw commit object (everything after the first empty line).
pub(crate) fn commit_message(commit: &[u8]) -> Option<&str> {
    let text = std::str::from_utf8(commit).ok()?;
    text.split_once("\n\n").map(|(_, m)| m)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vid(s: &str) -> VersionId {
        VersionId::parse(s).unwrap()
    }

    #[test]
    fn empty_blob_has_gits_id() {
        assert_eq!(
            object_id(Kind::Blob, b"").unwrap().to_hex(),
            "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"
        );
    }

    #[test]
    fn message_normalisation() {
        assert_eq!(
            normalize_message("\r\n\nHello  \r\n\r\n\r\nworld\t\n\n"),
            "Hello\n\nworld"
        );
        assert_eq!(normalize_message("  \n \n"), "");
        assert_eq!(normalize_message("a\0b"), "ab");
    }

    #[test]
    fn trailer_round_trips() {
        let id = vid("0190f3a2-7b4c-7d2e-8f10-123456789abc");
        let m = message(&id, "Load\n\nSigned-off-by: x");
        assert!(m.ends_with("\n\nFDL-Version: 0190f3a2-7b4c-7d2e-8f10-123456789abc\n"));
        assert_eq!(version_of_message(&m), Some(id.clone()));
        assert_eq!(
            message(&id, "").lines().next(),
            Some("Version 0190f3a2-7b4c-7d2e-8f10-123456789abc")
        );
        assert_eq!(version_of_message("no trailer"), None);
    }

    /// The way back reads only the last line, exactly: upper-case hex is read (lower-cased),
    /// any other difference is no trailer (docs/mapping.md, "The message").
    #[test]
    fn trailer_is_read_back_strictly() {
        let id = vid("0190f3a2-7b4c-7d2e-8f10-123456789abc");
        let upper = "m\n\nFDL-Version: 0190F3A2-7B4C-7D2E-8F10-123456789ABC\n\n\n";
        assert_eq!(version_of_message(upper), Some(id));
        for not in [
            "m\n\nFDL-Version:  0190f3a2-7b4c-7d2e-8f10-123456789abc\n",
            "m\n\nFDL-Version: 0190f3a2-7b4c-7d2e-8f10-123456789abc \n",
            "m\n\nFDL-Version: 0190f3a2-7b4c-7d2e-8f10-123456789abc\r\n",
            "m\n\nfdl-version: 0190f3a2-7b4c-7d2e-8f10-123456789abc\n",
            "m\n\nFDL-Version: 0190f3a2-7b4c-7d2e-8f10-123456789abc\nx\n",
        ] {
            assert_eq!(version_of_message(not), None, "{not:?}");
        }
    }

    #[test]
    fn identities_lose_what_git_cannot_hold() {
        let a = Author {
            name: " Zoë <x>\n ".into(),
            email: "z@example.org>".into(),
        };
        assert_eq!(identity(&a), "Zoë x <z@example.org>");
        let empty = Author {
            name: "".into(),
            email: "".into(),
        };
        assert_eq!(identity(&empty), "unknown <>");
    }

    #[test]
    fn hex_round_trip() {
        let id = object_id(Kind::Blob, b"x").unwrap();
        assert_eq!(ObjectId::from_hex(&id.to_hex()), Some(id));
        assert_eq!(ObjectId::from_hex("zz"), None);
    }

    /// SHAttered's two prefixes share a plain SHA-1; the hasher of every object ID sees the
    /// attack in each, as Git's sha1dc does (t/fixtures/sha1-collision/README.md).
    #[test]
    fn the_shattered_collision_is_detected() {
        let one = include_bytes!("../t/fixtures/sha1-collision/shattered-1-prefix.bin");
        let two = include_bytes!("../t/fixtures/sha1-collision/shattered-2-prefix.bin");
        assert_ne!(&one[..], &two[..]);
        assert_eq!(checked_sha1(&[&one[..]]), None);
        assert_eq!(checked_sha1(&[&two[..]]), None);
        // The same bytes after a byte more are no collision: an ordinary ID.
        assert!(checked_sha1(&[b"x", &one[..]]).is_some());
        // `printf x | git hash-object --stdin`.
        assert_eq!(
            checked_sha1(&[b"blob 1\0x"]).map(|d| ObjectId(d).to_hex()),
            Some("c1b0730e0133447badcfd47fd144e254807b06e1".into())
        );
    }
}
