//! The line format of cache files: a header line, then lines each ending in its CRC-32, a
//! damaged line counted and passed over.

use std::path::Path;

use super::disk::read_cache_file;
use crate::lake::VersionId;
use crate::mapping::ObjectId;

/// Appends one commits line, with its checksum, to `out`.
pub(super) fn push_line(out: &mut String, v: &VersionId, c: &ObjectId, parents: &[VersionId]) {
    use std::fmt::Write as _;
    let start = out.len();
    let _ = write!(out, "{v} {c}");
    for p in parents {
        out.push(' ');
        out.push_str(&p.as_str());
    }
    let crc = crc32fast::hash(&out.as_bytes()[start..]);
    let _ = writeln!(out, " {crc:08x}");
}

/// Each line followed by a space and its CRC-32, one per line.
pub(super) fn with_checksums(lines: &[String]) -> String {
    let mut out = String::with_capacity(lines.iter().map(|l| l.len() + 10).sum());
    for l in lines {
        out.push_str(&format!("{l} {:08x}\n", crc32fast::hash(l.as_bytes())));
    }
    out
}

/// Hands each line of a cache file whose header is `header` and whose checksum holds to
/// `each` (without its checksum), until `each` says stop; returns how many failed, `None`
/// when the file is missing or has another header. Lines are not copied: a fetch of a lake of
/// 100,000 versions reads them all.
pub(super) fn checked_lines(
    path: &Path,
    header: &str,
    mut each: impl FnMut(&str) -> bool,
) -> Option<usize> {
    let text = String::from_utf8(read_cache_file(path)?).ok()?;
    let mut lines = text.lines();
    if lines.next() != Some(header) {
        return None;
    }
    let checked = |l: &'_ str| -> Option<()> {
        let (body, crc) = l.rsplit_once(' ')?;
        (u32::from_str_radix(crc, 16).ok()? == crc32fast::hash(body.as_bytes())).then_some(())
    };
    let mut damaged = 0;
    for line in lines {
        match checked(line) {
            Some(()) => {
                if !each(line.rsplit_once(' ').map_or(line, |(body, _)| body)) {
                    break;
                }
            }
            None => damaged += 1,
        }
    }
    Some(damaged)
}
