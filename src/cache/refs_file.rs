//! The file of refs, kept by a lake's URL alone: each ref file's ETag and version, the tips'
//! commits and the lake's id, read before the first request to split the ref listing.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use sha1::{Digest, Sha1};

use super::disk::replace;
use super::lines::{checked_lines, with_checksums};
use crate::lake::VersionId;
use crate::mapping::ObjectId;

const REFS_HEADER: &str =
    "# git-remote-fdl refs v2: <etag> <version> <ref> | @tip <version> <commit> <crc32>";

/// A lake's name in a cache folder: 16 hex digits of the SHA-1 of `text`.
pub(super) fn key(text: &str) -> String {
    let digest: [u8; 20] = Sha1::digest(text.as_bytes()).into();
    digest[..8].iter().map(|b| format!("{b:02x}")).collect()
}

/// Where the refs of the lake at `lake_url` are remembered, under a cache `root`.
pub(super) fn refs_path(root: &Path, lake_url: &str) -> PathBuf {
    root.join(format!("{}.refs", key(&format!("{lake_url}\nrefs"))))
}

/// What the file of refs of a lake URL remembers.
#[derive(Default)]
pub(crate) struct Remembered {
    /// `name -> (etag, version)`.
    pub refs: HashMap<String, (String, VersionId)>,
    /// The commit of each version the refs held.
    pub tips: HashMap<VersionId, ObjectId>,
    /// `fdl.json`'s `id` when the file was written (`Some("")`: the lake had none).
    pub lake_id: Option<String>,
}

/// The line of the refs file that holds the lake's id (no ref line starts with it: an ETag
/// comes first).
const ID_LINE: &str = "@lake-id";

/// The lines of the refs file that hold a tip's commit.
const TIP_LINE: &str = "@tip";

/// The refs remembered in `path`, and the lake's id.
fn remembered_refs(path: &Path) -> Remembered {
    let mut out = Remembered::default();
    checked_lines(path, REFS_HEADER, |line| {
        if let Some(id) = line.strip_prefix(ID_LINE) {
            out.lake_id = Some(id.trim_start_matches(' ').to_string());
            return true;
        }
        if let Some(tip) = line.strip_prefix(TIP_LINE) {
            let mut parts = tip.trim_start_matches(' ').split(' ');
            if let (Some(v), Some(c)) = (parts.next(), parts.next()) {
                if let (Ok(v), Some(c)) = (VersionId::parse(v), ObjectId::from_hex(c)) {
                    out.tips.insert(v, c);
                }
            }
            return true;
        }
        let mut parts = line.splitn(3, ' ');
        if let (Some(etag), Some(v), Some(name)) = (parts.next(), parts.next(), parts.next()) {
            if let Ok(v) = VersionId::parse(v) {
                out.refs.insert(name.to_string(), (etag.to_string(), v));
            }
        }
        true
    });
    out
}

/// What the file of refs of the lake at `lake_url` under `root` remembers: where to split a
/// listing of the refs, and which cache to load, before `fdl.json` is read.
pub(crate) fn remembered(root: &Path, lake_url: &str) -> Remembered {
    remembered_refs(&refs_path(root, lake_url))
}

/// The names of the refs the file of refs of `lake_url` under `root` remembers, sorted: where
/// to split a listing of the refs. Quicker than [`remembered`] (nothing parsed, nothing kept),
/// so that the first requests leave sooner.
pub(crate) fn remembered_names(root: &Path, lake_url: &str) -> Vec<String> {
    let mut names = Vec::new();
    checked_lines(&refs_path(root, lake_url), REFS_HEADER, |line| {
        if let Some(name) = line
            .splitn(3, ' ')
            .nth(2)
            .filter(|_| !line.starts_with('@'))
        {
            names.push(name.to_string());
        }
        true
    });
    names.sort();
    names
}

/// Writes the file of refs whole: each ref's ETag and version, each tip's commit, and the
/// lake's id, so that the next session finds its cache before `fdl.json`.
pub(super) fn write_refs_file(
    path: &Path,
    refs: &HashMap<String, (String, VersionId)>,
    tips: &HashMap<VersionId, ObjectId>,
    lake_id: &str,
) -> bool {
    let mut lines: Vec<String> = refs
        .iter()
        .map(|(name, (etag, v))| format!("{etag} {v} {name}"))
        .collect();
    lines.extend(tips.iter().map(|(v, c)| format!("{TIP_LINE} {v} {c}")));
    lines.sort();
    lines.push(format!("{ID_LINE} {lake_id}"));
    let lines = with_checksums(&lines);
    replace(path, REFS_HEADER, &lines)
}
