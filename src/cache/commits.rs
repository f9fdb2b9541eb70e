//! The commits file: each version's commit and parents, one checked line a version.

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use super::disk::CACHE_FILE_LIMIT;
use super::lines::checked_lines;
use crate::lake::VersionId;
use crate::mapping::ObjectId;

pub(super) const HEADER: &str =
    "# git-remote-fdl cache v3, mapping v1: <version> <commit> [<parent>...] <crc32>";

/// What the commits file holds, read apart from the [`Cache`](super::lake_cache::Cache) it belongs to (on a blocking
/// thread, while the first round trip is under way).
pub(crate) struct Commits {
    pub(super) entries: HashMap<VersionId, ObjectId>,
    pub(super) parents: HashMap<VersionId, Vec<VersionId>>,
    pub(super) rewrite: bool,
    pub(super) damaged: usize,
}

impl Commits {
    /// Reads the commits file at `path`. Gives up (with what it read, to be thrown away) once
    /// `cancel` is set.
    pub(super) fn load(path: &Path, cancel: &AtomicBool) -> Commits {
        // About a hundred bytes a line: room for all of them at once, not by doubling.
        let usable = std::fs::metadata(path)
            .ok()
            .filter(|m| m.is_file() && m.len() <= CACHE_FILE_LIMIT);
        let lines = usable.map_or(0, |m| m.len() / 100) as usize;
        let mut out = Commits {
            entries: HashMap::with_capacity(lines),
            parents: HashMap::with_capacity(lines),
            rewrite: true,
            damaged: 0,
        };
        let mut seen = 0usize;
        let damaged = checked_lines(path, HEADER, |line| {
            seen += 1;
            if seen.is_multiple_of(4096) && cancel.load(Ordering::Relaxed) {
                return false;
            }
            out.take_line(line);
            true
        });
        if let Some(damaged) = damaged {
            // A damaged file is written whole again, without the lines that failed.
            out.rewrite = damaged > 0;
            out.damaged = damaged;
        }
        out
    }

    fn take_line(&mut self, line: &str) {
        let mut parts = line.split(' ');
        let (Some(v), Some(c)) = (parts.next(), parts.next()) else {
            return;
        };
        let (Ok(v), Some(c)) = (VersionId::parse(v), ObjectId::from_hex(c)) else {
            return;
        };
        let parents: Result<Vec<VersionId>, _> = parts.map(VersionId::parse).collect();
        let Ok(parents) = parents else { return };
        self.entries.insert(v.clone(), c);
        self.parents.insert(v, parents);
    }
}
