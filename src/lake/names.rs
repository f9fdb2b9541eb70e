//! Names that become paths in a lake: version IDs and ref names, validated so that none can
//! escape the lake's root or name something the layout does not allow.

use std::fmt;

use gix::bstr::ByteSlice;

/// A version ID: a UUID, shown and used as a path segment in its canonical lower-case
/// hyphenated form. Held as its 16 bytes (a fetch keeps several per version), whose order is
/// the order of that form (lower-case hex sorts as the bytes it spells).
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct VersionId(uuid::Uuid);

/// A text that is not a version ID.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("'{shown}' is not a version ID (a UUID)")]
pub struct BadVersionId {
    /// The text, made printable.
    shown: String,
}

impl VersionId {
    /// Parses a version ID. Upper-case hex is accepted and lower-cased (paths are lower case);
    /// anything but the 36-character hyphenated form is refused (uuid's parser alone would take
    /// braces, URNs and the form without hyphens too).
    pub fn parse(s: &str) -> Result<VersionId, BadVersionId> {
        let bytes = s.as_bytes();
        let shape_ok = bytes.len() == 36
            && bytes.iter().enumerate().all(|(i, b)| match i {
                8 | 13 | 18 | 23 => *b == b'-',
                _ => b.is_ascii_hexdigit(),
            });
        match uuid::Uuid::try_parse_ascii(bytes) {
            Ok(id) if shape_ok => Ok(VersionId(id)),
            _ => Err(BadVersionId {
                shown: printable(s),
            }),
        }
    }

    /// The canonical form, on the stack: it derefs to `&str`.
    pub fn as_str(&self) -> VersionText {
        let mut text = [0u8; 36];
        self.0.hyphenated().encode_lower(&mut text);
        VersionText(text)
    }

    /// The ID as a number (to spread IDs over tables).
    pub(crate) fn as_u128(&self) -> u128 {
        self.0.as_u128()
    }

    /// Seconds since the epoch held by a UUIDv7 (its first 48 bits are milliseconds).
    pub fn uuid_v7_seconds(&self) -> Option<u64> {
        if self.0.get_version_num() != 7 {
            return None;
        }
        Some(self.0.get_timestamp()?.to_unix().0)
    }
}

/// A version ID's canonical text (36 ASCII bytes), made by [`VersionId::as_str`].
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct VersionText([u8; 36]);

impl std::ops::Deref for VersionText {
    type Target = str;

    fn deref(&self) -> &str {
        std::str::from_utf8(&self.0).expect("uuid writes ASCII")
    }
}

impl PartialEq<str> for VersionText {
    fn eq(&self, other: &str) -> bool {
        **self == *other
    }
}

impl PartialEq<&str> for VersionText {
    fn eq(&self, other: &&str) -> bool {
        **self == **other
    }
}

impl PartialEq<String> for VersionText {
    fn eq(&self, other: &String) -> bool {
        **self == **other
    }
}

impl PartialEq<&String> for VersionText {
    fn eq(&self, other: &&String) -> bool {
        **self == ***other
    }
}

impl PartialEq<VersionText> for String {
    fn eq(&self, other: &VersionText) -> bool {
        **self == **other
    }
}

impl PartialEq<VersionText> for &String {
    fn eq(&self, other: &VersionText) -> bool {
        ***self == **other
    }
}

impl PartialEq<VersionText> for &str {
    fn eq(&self, other: &VersionText) -> bool {
        **self == **other
    }
}

impl fmt::Display for VersionText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self)
    }
}

impl fmt::Debug for VersionText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

impl fmt::Display for VersionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.as_str())
    }
}

impl fmt::Debug for VersionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "VersionId({})", self.as_str())
    }
}

pub(crate) use crate::redact::printable;

/// Why a ref name is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RefNameProblem {
    NotHeadOrTag,
    Invalid(&'static str),
    UpperCase,
}

impl std::error::Error for RefNameProblem {}

impl fmt::Display for RefNameProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RefNameProblem::NotHeadOrTag => {
                f.write_str("only refs/heads/* and refs/tags/* exist in a lake")
            }
            RefNameProblem::Invalid(why) => write!(f, "not a valid ref name: {why}"),
            RefNameProblem::UpperCase => f.write_str(
                "lake paths are lower case, so ref names cannot hold upper-case letters",
            ),
        }
    }
}

/// Checks a full ref name (`refs/heads/...` or `refs/tags/...`) against Git's ref-name rules
/// (git-check-ref-format(1)). Upper case is allowed here: readers tolerate it, writers refuse
/// it with [`check_writable_ref`].
pub fn check_ref_name(full: &str) -> Result<(), RefNameProblem> {
    let rest = full
        .strip_prefix("refs/heads/")
        .or_else(|| full.strip_prefix("refs/tags/"))
        .ok_or(RefNameProblem::NotHeadOrTag)?;
    if rest.is_empty() {
        return Err(RefNameProblem::Invalid("the name is empty"));
    }
    // The rest is Git's own rule set (git-check-ref-format(1)), as gitoxide implements it.
    match gix::validate::reference::name(full.as_bytes().as_bstr()) {
        Ok(_) => Ok(()),
        Err(e) => Err(RefNameProblem::Invalid(describe(&e))),
    }
}

/// Git's reason for refusing a ref name, in a few words.
fn describe(e: &gix::validate::reference::name::Error) -> &'static str {
    use gix::validate::reference::name::Error as E;
    match e {
        E::InvalidByte { .. } => "it contains a space, a control character or one of ~^:?*[\\",
        E::RepeatedSlash => "it contains '//'",
        E::RepeatedDot => "it contains '..'",
        E::LockFileSuffix => "a component ends with '.lock'",
        E::ReflogPortion => "it contains '@{'",
        E::Asterisk => "it contains '*'",
        E::StartsWithDot => "a component starts with '.'",
        E::EndsWithDot => "it ends with '.'",
        E::EndsWithSlash => "it ends with '/'",
        E::Empty => "a component is empty",
        _ => "Git does not allow this name",
    }
}

/// [`check_ref_name`] plus the layout's rule that paths are lower case.
pub(crate) fn check_writable_ref(full: &str) -> Result<(), RefNameProblem> {
    check_ref_name(full)?;
    if full.chars().any(|c| c.is_uppercase()) {
        return Err(RefNameProblem::UpperCase);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_ids() {
        let v = VersionId::parse("0190F3A2-7B4C-7D2E-8F10-123456789ABC").unwrap();
        assert_eq!(v.as_str(), "0190f3a2-7b4c-7d2e-8f10-123456789abc");
        assert_eq!(v.uuid_v7_seconds(), Some(0x0190f3a27b4c / 1000));
        for bad in [
            "",
            "../../etc",
            "0190f3a27b4c7d2e8f10123456789abc",
            "0190f3a2-7b4c-7d2e-8f10-123456789ab/",
            "/190f3a2-7b4c-7d2e-8f10-123456789abc",
        ] {
            assert!(VersionId::parse(bad).is_err(), "{bad}");
        }
        let v4 = VersionId::parse("5f0c8a52-6d3e-4f8e-9b1a-2c7d4e9f0a13").unwrap();
        assert_eq!(v4.uuid_v7_seconds(), None);
        // Forms uuid's own parser takes, refused as before.
        for other_form in [
            "{0190f3a2-7b4c-7d2e-8f10-123456789abc}",
            "urn:uuid:0190f3a2-7b4c-7d2e-8f10-123456789abc",
            "0190f3a27b4c7d2e8f10123456789abc",
            "0190f3a2-7b4c-7d2e-8f10-123456789abc ",
            " 0190f3a2-7b4c-7d2e-8f10-123456789ab",
            "0190f3a2-7b4c-7d2e-8f10+123456789abc",
            "0190f3a2-7b4c-7d2e-8f1-0123456789abc",
            "g190f3a2-7b4c-7d2e-8f10-123456789abc",
        ] {
            assert!(VersionId::parse(other_form).is_err(), "{other_form}");
        }
    }

    #[test]
    fn version_ids_sort_as_their_text() {
        let mut rng = fastrand::Rng::with_seed(7);
        let hex = b"0123456789abcdefABCDEF";
        let texts: Vec<String> = (0..2_000)
            .map(|_| {
                (0..36)
                    .map(|i| match i {
                        8 | 13 | 18 | 23 => '-',
                        _ => hex[rng.usize(..hex.len())] as char,
                    })
                    .collect()
            })
            .collect();
        let mut ids: Vec<VersionId> = texts.iter().map(|t| VersionId::parse(t).unwrap()).collect();
        let mut lower: Vec<String> = texts.iter().map(|t| t.to_ascii_lowercase()).collect();
        for (id, text) in ids.iter().zip(&lower) {
            assert_eq!(id.as_str(), text.as_str());
            assert_eq!(id.to_string(), *text);
        }
        ids.sort();
        lower.sort();
        let sorted: Vec<String> = ids.iter().map(VersionId::to_string).collect();
        assert_eq!(sorted, lower);
        assert_eq!(std::mem::size_of::<VersionId>(), 16);
    }

    #[test]
    fn ref_names() {
        assert!(check_ref_name("refs/heads/main").is_ok());
        assert!(check_ref_name("refs/heads/team/a-b_c").is_ok());
        assert!(check_ref_name("refs/tags/v2026.11").is_ok());
        assert_eq!(
            check_ref_name("refs/notes/x"),
            Err(RefNameProblem::NotHeadOrTag)
        );
        for bad in [
            "refs/heads/",
            "refs/heads/a..b",
            "refs/heads/.x",
            "refs/heads/x.lock",
            "refs/heads/a b",
            "refs/heads/a//b",
            "refs/heads/x/",
            "refs/heads/a@{1}",
            "refs/heads/a*",
            "refs/heads/a.",
        ] {
            assert!(check_ref_name(bad).is_err(), "{bad}");
        }
        // As git check-ref-format: '@' alone is refused only as a whole ref name.
        assert!(check_ref_name("refs/heads/@").is_ok());
        assert!(check_ref_name("refs/heads/Main").is_ok());
        assert_eq!(
            check_writable_ref("refs/heads/Main"),
            Err(RefNameProblem::UpperCase)
        );
    }
}
