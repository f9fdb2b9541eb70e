//! Whether a store's ETags name the content of ref files, so that a ref file listed with the
//! ETag it had last time need not be read again. S3 and its kin give an ETag that changes with
//! the content, but some S3-compatible servers give an empty one (`""`), or one ETag for every
//! object: taken at their word, such ETags hide a branch that moved. An ETag is not trusted
//! when it is empty, when a file that is no ref file (`fdl.json`, `refs.json`) has it too, or
//! when ref files with it held different versions; then every ref file is read, and no ETag is
//! remembered.

use std::collections::HashMap;

use super::VersionId;

/// Whether `tag` can name anything: not empty, nor the empty quoted string (weak or not).
pub fn names_something(tag: &str) -> bool {
    let tag = tag.strip_prefix("W/").unwrap_or(tag);
    !matches!(tag, "" | "\"\"")
}

/// Whether the ETags of a ref listing (`listed`, by name) and those remembered of earlier
/// listings (`known`: name -> ETag and the version it held) may stand for the ref files'
/// contents, given the ETags of files that are no ref file (`others`).
pub(super) fn trusted(
    listed: &HashMap<String, String>,
    known: &HashMap<String, (String, VersionId)>,
    others: &[String],
) -> bool {
    let remembered = known.values().map(|(tag, v)| (tag, v));
    !listed.values().any(|t| others.contains(t)) && one_version_each(remembered)
}

/// Whether no ETag stands for two different versions among `(ETag, version)` pairs.
pub(super) fn one_version_each<'a>(
    pairs: impl Iterator<Item = (&'a String, &'a VersionId)>,
) -> bool {
    let mut seen: HashMap<&String, &VersionId> = HashMap::new();
    for (tag, v) in pairs {
        if *seen.entry(tag).or_insert(v) != v {
            return false;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vid(n: u32) -> VersionId {
        VersionId::parse(&format!("0190f3a2-7b4c-7d2e-8f10-{n:012x}")).unwrap()
    }

    #[test]
    fn etags_that_name_nothing_or_everything_are_not_trusted() {
        assert!(!names_something("\"\"") && !names_something("") && !names_something("W/\"\""));
        assert!(names_something("\"abc\""));
        let s = |x: &str| x.to_string();
        let listed = HashMap::from([(s("refs/heads/main"), s("\"x\""))]);
        let known = HashMap::from([
            (s("refs/heads/main"), (s("\"x\""), vid(3))),
            (s("refs/tags/v1"), (s("\"x\""), vid(3))),
        ]);
        // Two refs at one version share an ETag on any store: trusted.
        assert!(trusted(&listed, &known, &[s("\"f\"")]));
        // fdl.json has the ETag of a ref file: it names no content.
        assert!(!trusted(&listed, &known, &[s("\"x\"")]));
        let mut moved = known.clone();
        moved.insert(s("refs/tags/v1"), (s("\"x\""), vid(1)));
        assert!(!trusted(&listed, &moved, &[]));
    }
}
