//! The version→commit cache under the repository's git dir. It only saves reads: versions are
//! immutable, so a commit ID computed once holds forever; deleting the cache changes no result.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use sha1::{Digest, Sha1};

use crate::lake::VersionId;
use crate::mapping::ObjectId;

const HEADER: &str = "# git-remote-fdl cache v1, mapping v1: <version> <commit>";

/// The cache file of one lake in one repository.
pub struct Cache {
    path: PathBuf,
    pub entries: HashMap<VersionId, ObjectId>,
    loaded: usize,
}

impl Cache {
    /// The cache for the lake at `lake_url` (with `fdl.json`'s `id`, if any) in `git_dir`.
    pub fn load(git_dir: &Path, lake_url: &str, lake_id: Option<&str>) -> Cache {
        let key: [u8; 20] =
            Sha1::digest(format!("{lake_url}\n{}", lake_id.unwrap_or("")).as_bytes()).into();
        let key: String = key[..8].iter().map(|b| format!("{b:02x}")).collect();
        let path = git_dir.join("fdl").join(key).join("commits");
        let mut entries = HashMap::new();
        if let Ok(text) = std::fs::read_to_string(&path) {
            if text.lines().next() == Some(HEADER) {
                for line in text.lines().skip(1) {
                    let Some((v, c)) = line.split_once(' ') else {
                        continue;
                    };
                    if let (Ok(v), Some(c)) = (VersionId::parse(v), ObjectId::from_hex(c)) {
                        entries.insert(v, c);
                    }
                }
            }
        }
        let loaded = entries.len();
        Cache {
            path,
            entries,
            loaded,
        }
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
            .map(|(v, c)| format!("{v} {c}\n"))
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
