//! Whether a store's ETags name the content of ref files, so that a ref file listed with the
//! ETag it had last time need not be read again. S3 and its kin give an ETag that changes with
//! the content, but some S3-compatible servers give an empty one (`""`), or one ETag for every
//! object: taken at their word, such ETags hide a branch that moved. An ETag is not trusted
//! when it is empty, when a file that is no ref file (`fdl.json`, `refs.json`) has it too, or
//! when ref files with it held different versions; then every ref file is read, and no ETag is
//! remembered.

use std::collections::HashMap;

use md5::{Digest, Md5};

use super::small_files::render_ref_value;
use super::VersionId;

/// Whether a listed ETag proves that a ref file holds `version`: it is the content MD5 (S3's
/// and GCS's ETag of an object uploaded in one part) of the file as this helper writes it, or
/// of the bare ID. A proof, not a guess: no other content of a ref file has that MD5 (finding
/// one is a preimage attack). Any other ETag (a multipart upload's, Azure's, a weak one) proves
/// nothing, and the file is read.
pub(super) fn proves(tag: &str, version: &VersionId) -> bool {
    let Some(want) = content_md5(tag) else {
        return false;
    };
    let written = render_ref_value(version);
    let bare = &written[..written.len() - 1];
    Md5::digest(&written)[..] == want || Md5::digest(bare)[..] == want
}

/// The MD5 an ETag stands for, where it is one: 32 hexadecimal digits, quoted or not (S3's
/// ETag of a single-part upload, GCS's); `None` for any other ETag (a multipart upload's
/// `-<parts>`, Azure's opaque ones). A store whose ETags are 32 digits but no MD5 only makes a
/// comparison fail, and the file is read.
pub(crate) fn content_md5(tag: &str) -> Option<[u8; 16]> {
    let hex = tag.trim_matches('"');
    if hex.len() != 32 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let mut out = [0u8; 16];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(out)
}

/// Whether `tag` can name anything: not empty, nor the empty quoted string (weak or not).
pub(crate) fn names_something(tag: &str) -> bool {
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
    fn only_a_32_digit_etag_is_an_md5() {
        let md5 = "d41d8cd98f00b204e9800998ecf8427e";
        assert!(content_md5(&format!("\"{md5}\"")).is_some());
        assert!(
            content_md5(md5).is_some(),
            "RGW 16 and some proxies give it unquoted"
        );
        assert!(content_md5(&format!("\"{md5}-2\"")).is_none());
        assert!(content_md5("0x8DC1234").is_none());
        assert!(content_md5("\"+41d8cd98f00b204e9800998ecf8427e\"").is_none());
    }

    #[test]
    fn only_the_md5_of_the_ref_files_content_proves_a_claim() {
        let v = vid(7);
        let md5 = |b: &[u8]| {
            let hex: String = Md5::digest(b).iter().map(|b| format!("{b:02x}")).collect();
            format!("\"{hex}\"")
        };
        assert!(proves(&md5(format!("{v}\n").as_bytes()), &v));
        assert!(proves(&md5(v.to_string().as_bytes()), &v));
        assert!(!proves(&md5(format!("{}\n", vid(8)).as_bytes()), &v));
        assert!(!proves(&md5(format!(" {v}\n").as_bytes()), &v));
        let multipart = format!(
            "{}-2\"",
            md5(format!("{v}\n").as_bytes()).trim_end_matches('"')
        );
        assert!(!proves(&multipart, &v));
        let weak = format!("W/{}", md5(format!("{v}\n").as_bytes()));
        assert!(!proves(&weak, &v));
        assert!(!proves("\"0x8DC5F2A1B3C4D5E\"", &v));
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
