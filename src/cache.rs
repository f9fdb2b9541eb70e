//! The version→commit cache under the repository's git dir. It only saves reads: versions are
//! immutable, so a commit ID computed once holds forever; deleting the cache changes no result.
//! Each entry carries a checksum: an entry damaged or edited by hand is dropped and computed
//! again from the lake, never trusted.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use sha1::{Digest, Sha1};

use crate::lake::VersionId;
use crate::mapping::ObjectId;

const HEADER: &str = "# git-remote-fdl cache v2, mapping v1: <version> <commit> <check>";

/// An entry's check: the start of the SHA-1 of the entry, so that an edited line is noticed.
fn check(version: &VersionId, commit: &ObjectId) -> String {
    let d: [u8; 20] = Sha1::digest(format!("fdl-cache v2\n{version} {commit}").as_bytes()).into();
    d[..8].iter().map(|b| format!("{b:02x}")).collect()
}

/// The cache file of one lake in one repository.
pub struct Cache {
    path: PathBuf,
    pub entries: HashMap<VersionId, ObjectId>,
    loaded: usize,
    /// Entries dropped on loading because their check failed.
    pub damaged: usize,
}

impl Cache {
    /// The cache for the lake at `lake_url` (with `fdl.json`'s `id`, if any) in `git_dir`.
    pub fn load(git_dir: &Path, lake_url: &str, lake_id: Option<&str>) -> Cache {
        let key: [u8; 20] =
            Sha1::digest(format!("{lake_url}\n{}", lake_id.unwrap_or("")).as_bytes()).into();
        let key: String = key[..8].iter().map(|b| format!("{b:02x}")).collect();
        let path = git_dir.join("fdl").join(key).join("commits");
        let mut entries = HashMap::new();
        let mut damaged = 0;
        if let Ok(text) = std::fs::read_to_string(&path) {
            if text.lines().next() == Some(HEADER) {
                for line in text.lines().skip(1) {
                    match parse_entry(line) {
                        Some((v, c)) => {
                            entries.insert(v, c);
                        }
                        None => damaged += 1,
                    }
                }
            }
        }
        let loaded = if damaged > 0 {
            usize::MAX
        } else {
            entries.len()
        };
        Cache {
            path,
            entries,
            loaded,
            damaged,
        }
    }

    /// The cache file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Adds entries; they are written by [`Cache::save`].
    pub fn extend(&mut self, more: impl IntoIterator<Item = (VersionId, ObjectId)>) {
        self.entries.extend(more);
    }

    /// Writes the cache if it grew: to a temporary file, then renamed over the old one, so a
    /// reader never sees half a file. Failure to write is not an error: it is only a cache.
    pub fn save(&self) {
        if self.entries.len() == self.loaded {
            return;
        }
        let Some(dir) = self.path.parent() else {
            return;
        };
        if std::fs::create_dir_all(dir).is_err() {
            return;
        }
        let mut lines: Vec<String> = self
            .entries
            .iter()
            .map(|(v, c)| format!("{v} {c} {}\n", check(v, c)))
            .collect();
        lines.sort();
        let tmp = dir.join(format!("commits.tmp.{}", std::process::id()));
        let written = std::fs::File::create(&tmp).and_then(|mut f| {
            f.write_all(HEADER.as_bytes())?;
            f.write_all(b"\n")?;
            f.write_all(lines.concat().as_bytes())?;
            f.sync_all()
        });
        if written.is_ok() {
            let _ = std::fs::rename(&tmp, &self.path);
        } else {
            let _ = std::fs::remove_file(&tmp);
        }
    }
}

/// One `<version> <commit> <check>` line, if its check holds.
fn parse_entry(line: &str) -> Option<(VersionId, ObjectId)> {
    let mut parts = line.split(' ');
    let (v, c, k) = (parts.next()?, parts.next()?, parts.next()?);
    let (v, c) = (VersionId::parse(v).ok()?, ObjectId::from_hex(c)?);
    (parts.next().is_none() && v.as_str() == line.split(' ').next()? && k == check(&v, &c))
        .then_some((v, c))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_round_trip_and_edited_ones_are_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let v = VersionId::parse("0190f3a2-7b4c-7d2e-8f10-000000000001").unwrap();
        let w = VersionId::parse("0190f3a2-7b4c-7d2e-8f10-000000000002").unwrap();
        let c = ObjectId::from_hex("4907f83cdf8ecbac004b5ade6627e72728bff17b").unwrap();
        let mut cache = Cache::load(dir.path(), "lake", None);
        cache.extend([(v.clone(), c), (w.clone(), c)]);
        cache.save();
        let again = Cache::load(dir.path(), "lake", None);
        assert_eq!((again.entries.len(), again.damaged), (2, 0));
        let text = std::fs::read_to_string(again.path()).unwrap();
        let edited = text.replacen("4907f83c", "00000000", 1);
        std::fs::write(again.path(), edited).unwrap();
        let damaged = Cache::load(dir.path(), "lake", None);
        assert_eq!((damaged.entries.len(), damaged.damaged), (1, 1));
    }
}
