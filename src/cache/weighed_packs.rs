//! The lake's packs a fetch weighed and did not take (what they held that the repository
//! lacked was too little to be worth their download), or whose records a clone or fetch over
//! plain HTTP read as the lake's index: remembered by name, so that a later fetch neither
//! reads their records again nor weighs them twice. A pack's name is its checksum, so what a
//! name held once it holds for ever; a name this file lacks costs one record's read, never a
//! wrong result.

use std::collections::HashSet;

use super::disk::{read_cache_file, replace};
use super::lake_cache::Cache;
use crate::lake::git_packs::is_pack_name;

/// The file's first line.
const HEADER: &str = "git-remote-fdl weighed packs 1";
/// The file, in the lake's folder of the cache.
const FILE: &str = "weighed-packs";

impl Cache {
    /// The packs weighed before and not taken.
    pub(crate) fn weighed_packs(&self) -> HashSet<String> {
        let Some(bytes) = self.made_dir().and_then(|d| read_cache_file(&d.join(FILE))) else {
            return HashSet::new();
        };
        let text = String::from_utf8_lossy(&bytes);
        let mut lines = text.lines();
        if lines.next() != Some(HEADER) {
            return HashSet::new();
        }
        lines
            .filter(|l| is_pack_name(l))
            .map(str::to_string)
            .collect()
    }

    /// Adds `names` to the packs weighed (written whole; a failure only costs a read later).
    pub(crate) fn weigh_packs(&self, names: impl IntoIterator<Item = String>) {
        let mut all = self.weighed_packs();
        let before = all.len();
        all.extend(names.into_iter().filter(|n| is_pack_name(n)));
        let Some(dir) = self.made_dir().filter(|_| all.len() > before) else {
            return;
        };
        let mut sorted: Vec<String> = all.into_iter().collect();
        sorted.sort();
        let mut lines = sorted.join("\n");
        lines.push('\n');
        replace(&dir.join(FILE), HEADER, &lines);
    }
}
