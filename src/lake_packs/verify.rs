//! Whether a version a pack's record names may be taken from the pack: its commit is what
//! mapping v1 makes of the pack's own blobs and of its parents' verified commits, and those
//! blobs are what the store holds now (the listing's ETag of each mapped file is the one
//! recorded when the pack was made; where an ETag is a content MD5, the blob's MD5 is it).

use std::collections::HashMap;

use md5::{Digest, Md5};

use super::PackedVersion;
use crate::lake::git_packs::VersionFileEtags;
use crate::lake::{content_md5, VersionId, VersionRecord};
use crate::lake::{DATASET_JSON_LIMIT, SIGNATURE_LIMIT, VERSION_JSON_LIMIT};
use crate::mapping::{self, ObjectId};
use crate::signatures::{self, Policy, Subject};

/// Where a pack's objects are read (the repository, once the pack is installed).
pub(crate) trait InstalledObjects {
    fn get(&self, id: &ObjectId) -> Option<(gix::object::Kind, Vec<u8>)>;
    /// An object's kind and size, from its header: a pack's object is inflated only once its
    /// size is known to fit.
    fn header(&self, id: &ObjectId) -> Option<(gix::object::Kind, u64)>;
}

impl InstalledObjects for crate::repo::Repo {
    fn get(&self, id: &ObjectId) -> Option<(gix::object::Kind, Vec<u8>)> {
        self.object(id)
    }
    fn header(&self, id: &ObjectId) -> Option<(gix::object::Kind, u64)> {
        self.object_header(id)
    }
}

/// Why a packed version cannot be taken from its pack (said in a warning, after the version).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Unverified {
    #[error("it is not in the lake now")]
    NotInLake,
    #[error("it was rewritten after it was packed")]
    Rewritten,
    #[error("the pack lacks its {0}")]
    Lacks(String),
    #[error("its {what} is over the limit ({size} bytes)")]
    OverLimit { what: String, size: u64 },
    #[error("its commit names no tree")]
    NoTree,
    #[error("its tree is not a version's")]
    NotAVersionTree,
    #[error("its dataset.json is not the lake's")]
    OtherDataset,
    #[error("its blobs are not the lake's files (MD5)")]
    OtherBlobs,
    #[error("{0}")]
    BadRecord(String),
    #[error("its parent {0} is not verified")]
    ParentFailed(VersionId),
    #[error("{0}")]
    Mapping(String),
    #[error("its commit is not what mapping v1 makes of its files")]
    OtherCommit,
    #[error("the repository cannot be read: {0}")]
    Repository(String),
    #[error("it was not checked")]
    NotChecked,
    #[error("its record holds no signature")]
    NoSignature,
    #[error("its signature was replaced or removed after it was packed")]
    SignatureChanged,
    #[error("its signature does not hold: {0}")]
    Signature(String),
}

/// A version's commit: its message is at most a `version.json`, the rest a few lines.
const COMMIT_LIMIT: u64 = VERSION_JSON_LIMIT + (64 << 10);
/// A version's tree: two entries.
const TREE_LIMIT: u64 = 1 << 10;
/// The largest object an honest pack holds: a version's commit, tree or files at their limits.
pub(super) const LARGEST_OBJECT: u64 = max(
    max(COMMIT_LIMIT, TREE_LIMIT),
    max(VERSION_JSON_LIMIT, DATASET_JSON_LIMIT),
);

const fn max(a: u64, b: u64) -> u64 {
    if a > b {
        a
    } else {
        b
    }
}

/// The most bytes an honest pack of `versions` versions can hold: each version's commit, tree
/// and two blobs at the limits above, stored without compression (zlib then adds 5 bytes a
/// 64 KiB block, counted as 1%) behind an entry's header, and the pack's own header and
/// trailer. A server that says a pack is larger is not believed, and the download stops.
pub(crate) fn pack_size_bound(versions: usize) -> u64 {
    let objects = COMMIT_LIMIT + TREE_LIMIT + VERSION_JSON_LIMIT + DATASET_JSON_LIMIT;
    let per_version = objects + objects / 100 + 4 * 64;
    (versions as u64)
        .saturating_mul(per_version)
        .saturating_add(32)
}

/// Object `id` of `kind`, read only if its header says it is at most `limit` bytes (the limit
/// the lake's reader applies to the same file); the error says why not, naming it `what`.
fn read(
    objects: &dyn InstalledObjects,
    id: &ObjectId,
    kind: gix::object::Kind,
    limit: u64,
    what: &str,
) -> Result<Vec<u8>, Unverified> {
    let over = |size: u64| Unverified::OverLimit {
        what: what.to_string(),
        size,
    };
    match objects.header(id) {
        Some((k, size)) if k == kind && size > limit => return Err(over(size)),
        Some((k, _)) if k == kind => {}
        _ => return Err(Unverified::Lacks(what.to_string())),
    }
    match objects.get(id) {
        Some((k, data)) if k == kind && data.len() as u64 <= limit => Ok(data),
        Some((k, data)) if k == kind => Err(over(data.len() as u64)),
        _ => Err(Unverified::Lacks(what.to_string())),
    }
}

/// What a check holds against: the store's listing of `versions/` (`None`: packs the user
/// trusts where nothing can check them: plain HTTP, a local folder), and the commits already
/// known of versions a pack's versions descend from.
pub(crate) struct Against<'a> {
    pub listed: Option<&'a HashMap<VersionId, VersionFileEtags>>,
    pub known: &'a (dyn Fn(&VersionId) -> Option<ObjectId> + Sync),
    pub signatures: Option<Signing<'a>>,
}

/// The signatures a reader requires (`fdlRequireSignatures`): the keys it trusts, and the
/// lake's own list of signers (only named in messages, never trusted).
#[derive(Clone, Copy)]
pub(crate) struct Signing<'a> {
    pub policy: &'a Policy,
    pub lake_signers: &'a [String],
}

/// The parents of a version whose commit was verified.
pub(crate) type Parents = Vec<VersionId>;

/// Checks `packed`, its parents' commits taken from `verified` (what the records claim, which
/// the caller holds to) or else known; on success returns its parents. The error says why, for
/// a warning.
pub(crate) fn verify(
    packed: &PackedVersion,
    objects: &dyn InstalledObjects,
    against: &Against,
    verified: &HashMap<VersionId, ObjectId>,
) -> Result<Parents, Unverified> {
    let listed = match against.listed {
        Some(listing) => Some(listed_as_packed(packed, listing)?),
        None => None,
    };
    use gix::object::Kind;
    let what = format!("commit {}", packed.commit.to_hex());
    let commit = read(objects, &packed.commit, Kind::Commit, COMMIT_LIMIT, &what)?;
    let tree_id = tree_of(&commit).ok_or(Unverified::NoTree)?;
    let tree = read(objects, &tree_id, Kind::Tree, TREE_LIMIT, "tree")?;
    let (version_blob, dataset_blob) = blobs_of(&tree).ok_or(Unverified::NotAVersionTree)?;
    let blob = |id: ObjectId, limit: u64, name: &str| read(objects, &id, Kind::Blob, limit, name);
    let record_bytes = blob(version_blob, VERSION_JSON_LIMIT, "version.json")?;
    let dataset = match dataset_blob {
        Some(id) => Some(blob(id, DATASET_JSON_LIMIT, "dataset.json")?),
        None => None,
    };
    // The tree must say what the listing says: a dataset.json, or none.
    if listed.is_some() && dataset.is_some() != packed.dataset_json.is_some() {
        return Err(Unverified::OtherDataset);
    }
    if let Some(files) = listed {
        let md5_holds = |tag: &Option<String>, data: &[u8]| {
            tag.as_deref()
                .and_then(content_md5)
                .is_none_or(|want| Md5::digest(data)[..] == want)
        };
        let dataset_holds = |d: &Vec<u8>| md5_holds(&files.dataset_json, d);
        if !md5_holds(&files.version_json, &record_bytes)
            || !dataset.as_ref().is_none_or(dataset_holds)
        {
            return Err(Unverified::OtherBlobs);
        }
    }
    let signed = against.signatures.map(|_| record_bytes.clone());
    let record =
        VersionRecord::parse(record_bytes).map_err(|e| Unverified::BadRecord(e.to_string()))?;
    if let (Some(signing), Some(raw)) = (against.signatures, signed) {
        signed_as_packed(packed, listed, &raw, &record, signing)?;
    }
    let mut parent_commits = Vec::with_capacity(record.parents.len());
    for p in &record.parents {
        let c = verified.get(p).copied().or_else(|| (against.known)(p));
        parent_commits.push(c.ok_or_else(|| Unverified::ParentFailed(p.clone()))?);
    }
    let made = mapping::version_commit(
        &packed.id,
        &record,
        dataset.map(Into::into),
        &parent_commits,
    )
    .map_err(|e| Unverified::Mapping(e.to_string()))?;
    match made.id == packed.commit {
        true => Ok(record.parents),
        false => Err(Unverified::OtherCommit),
    }
}

/// The version's signature as the record holds it is the store's now (its listed ETag, and
/// the text's MD5 where the ETag is one), and a key the reader trusts made it over the packed
/// `version.json` (`raw`), as reading the version would check it.
fn signed_as_packed(
    packed: &PackedVersion,
    listed: Option<&VersionFileEtags>,
    raw: &[u8],
    record: &VersionRecord,
    signing: Signing,
) -> Result<(), Unverified> {
    let sig = packed.signature.as_ref().ok_or(Unverified::NoSignature)?;
    if let Some(files) = listed {
        let same = files.signature.as_deref() == Some(sig.etag.as_str())
            && crate::lake::names_something(&sig.etag);
        let md5_holds =
            content_md5(&sig.etag).is_none_or(|want| Md5::digest(sig.text.as_bytes())[..] == want);
        if !same || !md5_holds {
            return Err(Unverified::SignatureChanged);
        }
    }
    if sig.text.len() as u64 > SIGNATURE_LIMIT {
        return Err(Unverified::OverLimit {
            what: "version.json.sig".into(),
            size: sig.text.len() as u64,
        });
    }
    let subject = Subject {
        record: raw,
        signature: Some(sig.text.as_bytes()),
        principal: &record.author.email,
        time: mapping::commit_time(&packed.id, record),
    };
    let verdict = signatures::verify(
        &subject,
        &signing.policy.trusted,
        &signing.policy.namespace,
        signing.lake_signers,
    );
    match verdict.is_good() {
        true => Ok(()),
        false => Err(Unverified::Signature(verdict.to_string())),
    }
}

/// The version's files as the store lists them now, if they are those the pack was made from.
fn listed_as_packed<'a>(
    packed: &PackedVersion,
    listing: &'a HashMap<VersionId, VersionFileEtags>,
) -> Result<&'a VersionFileEtags, Unverified> {
    let files = listing.get(&packed.id).ok_or(Unverified::NotInLake)?;
    let same = |now: &Option<String>, then: Option<&String>| match (now, then) {
        (Some(now), Some(then)) => now == then && crate::lake::names_something(now),
        (None, None) => true,
        _ => false,
    };
    match same(&files.version_json, Some(&packed.version_json))
        && same(&files.dataset_json, packed.dataset_json.as_ref())
    {
        true => Ok(files),
        false => Err(Unverified::Rewritten),
    }
}

/// The tree a raw commit names.
fn tree_of(commit: &[u8]) -> Option<ObjectId> {
    let line = commit.strip_prefix(b"tree ")?.get(..40)?;
    ObjectId::from_hex(std::str::from_utf8(line).ok()?)
}

/// The blobs of a version's tree: `version.json` and, if there, `dataset.json`; `None` for a
/// tree that holds anything else.
fn blobs_of(tree: &[u8]) -> Option<(ObjectId, Option<ObjectId>)> {
    let (mut version, mut dataset) = (None, None);
    for entry in gix::objs::TreeRefIter::from_bytes(tree, gix::hash::Kind::Sha1) {
        let entry = entry.ok()?;
        let id = ObjectId::try_from(entry.oid).ok()?;
        match entry.filename.as_ref() as &[u8] {
            b"version.json" => version = Some(id),
            b"dataset.json" => dataset = Some(id),
            _ => return None,
        }
    }
    Some((version?, dataset))
}
