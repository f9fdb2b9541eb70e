//! The small files at a lake's root: `fdl.json` and `HEAD`, and a ref file's value, parsed
//! tolerantly (`refs.json` is `refs_json.rs`).

use serde::de::{MapAccess, SeqAccess};

use super::json::{self, Excerpt, Items, Object, Read, Text, TextOrExcerpt, TextRead};

use super::names::{check_ref_name, printable, VersionId};

/// The major versions of the FDL specification this reader knows.
pub(crate) const KNOWN_MAJOR: &[u64] = &[0];

/// Why `fdl.json` cannot be used. Only a major version this helper does not know asks for an
/// upgrade, so it is told apart by its kind, not by its message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FdlJsonError {
    #[error("{0}")]
    Unreadable(String),
    #[error("fdl.json says FDL {version}, whose major version {major} this helper does not know")]
    UnknownMajor { version: String, major: u64 },
    #[error("fdl.json's data_dir '{data_dir}' {why}")]
    BadDataDir { data_dir: String, why: &'static str },
}

/// What makes `data_dir` no folder under the lake's root, if anything: a control character
/// (a newline would start a line of its own in the statements `catalog` prints), a leading
/// `/`, a scheme (`s3:`), or a `..` component (each points `DATA_PATH` outside the lake).
pub(crate) fn data_dir_problem(data_dir: &str) -> Option<&'static str> {
    let scheme = data_dir.split_once(':').is_some_and(|(s, _)| {
        !s.is_empty()
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
    });
    if data_dir.chars().any(char::is_control) {
        Some("holds a control character")
    } else if data_dir.starts_with('/') || data_dir.starts_with('\\') {
        Some("is absolute: it must be a folder relative to the lake's root")
    } else if scheme {
        Some("names a scheme: it must be a folder relative to the lake's root")
    } else if data_dir.split(['/', '\\']).any(|c| c == "..") {
        Some("leaves the lake's root ('..')")
    } else {
        None
    }
}

/// The parts of `fdl.json` the helper uses.
#[derive(Clone, Debug)]
pub(crate) struct FdlConfig {
    pub id: Option<String>,
    pub signers: Vec<String>,
    /// Where data files are, relative to the root, ending in `/` (default `data/`).
    pub data_dir: String,
}

impl FdlConfig {
    pub(crate) fn parse(raw: &[u8]) -> Result<FdlConfig, FdlJsonError> {
        let unreadable = |why: String| FdlJsonError::Unreadable(why);
        // Read typed: a field the helper does not read is skipped, not made a tree.
        let fields = json::read(raw, FdlRead)
            .map_err(|e| unreadable(format!("fdl.json is not valid JSON: {e}")))?
            .ok_or_else(|| unreadable("fdl.json is not a JSON object".to_string()))?;
        let fdl = match fields.fdl {
            Some(TextOrExcerpt::Str(s)) => s.trim().to_string(),
            Some(TextOrExcerpt::Other(n))
                if n.starts_with(|c: char| c == '-' || c.is_ascii_digit()) =>
            {
                n
            }
            _ => return Err(unreadable("fdl.json has no \"fdl\" version".to_string())),
        };
        let major: u64 = fdl
            .split('.')
            .next()
            .and_then(|m| m.parse().ok())
            .ok_or_else(|| {
                unreadable(format!(
                    "fdl.json's version '{}' is not a version number",
                    printable(&fdl)
                ))
            })?;
        if !KNOWN_MAJOR.contains(&major) {
            return Err(FdlJsonError::UnknownMajor {
                version: printable(&fdl).to_string(),
                major,
            });
        }
        let id = fields.id.and_then(Text::into_string);
        let signers = fields.signers.flatten().unwrap_or_default();
        let data_dir = match fields.data_dir.and_then(Text::into_string) {
            Some(d) if !d.is_empty() => format!("{}/", d.trim_end_matches('/')),
            _ => "data/".to_string(),
        };
        Ok(FdlConfig {
            id,
            signers,
            data_dir,
        })
    }
}

/// What `fdl.json` says of the fields the helper reads (each key's last value, as a
/// `serde_json::Value` keeps it); everything else is skipped. `None`: not an object.
#[derive(Default)]
struct FdlFields {
    fdl: Option<TextOrExcerpt>,
    id: Option<Text>,
    signers: Option<Option<Vec<String>>>,
    data_dir: Option<Text>,
}

struct FdlRead;

impl<'de> Read<'de> for FdlRead {
    type Out = Option<FdlFields>;
    fn other(self) -> Self::Out {
        None
    }
    fn object<A: MapAccess<'de>>(self, mut object: Object<A>) -> Result<Self::Out, A::Error> {
        let mut f = FdlFields::default();
        while let Some(k) = object.key()? {
            match k.as_str() {
                "fdl" => f.fdl = Some(object.value(Excerpt)?),
                "id" => f.id = Some(object.text()?),
                "data_dir" => f.data_dir = Some(object.text()?),
                "signers" => f.signers = Some(object.value(Signers)?),
                _ => object.skip_value()?,
            }
        }
        Ok(Some(f))
    }
}

/// `signers`: its strings, if it is a list.
struct Signers;

impl<'de> Read<'de> for Signers {
    type Out = Option<Vec<String>>;
    fn other(self) -> Self::Out {
        None
    }
    fn array<A: SeqAccess<'de>>(self, mut items: Items<A>) -> Result<Self::Out, A::Error> {
        let mut out = Vec::new();
        while let Some(t) = items.next(TextRead::CHECKED)? {
            out.extend(t.into_string());
        }
        Ok(Some(out))
    }
}

/// Why `HEAD` or a ref file holds no ref or version (what it holds, made printable).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum SmallFileError {
    #[error("HEAD is not UTF-8 text")]
    HeadNotText,
    #[error("HEAD holds '{0}', not 'ref: refs/heads/<name>'")]
    HeadNotARef(String),
    #[error("HEAD names '{0}', which is not a branch")]
    HeadNotABranch(String),
    #[error("its content is not UTF-8 text")]
    RefNotText,
    #[error("it holds '{0}', which is not a version ID")]
    RefNotAVersion(String),
}

/// `HEAD`'s content: `ref: refs/heads/<name>`, blanks around it allowed.
pub(crate) fn parse_head(raw: &[u8]) -> Result<String, SmallFileError> {
    let text = std::str::from_utf8(raw).map_err(|_| SmallFileError::HeadNotText)?;
    let target = text
        .trim()
        .strip_prefix("ref:")
        .map(str::trim)
        .ok_or_else(|| SmallFileError::HeadNotARef(printable(text.trim())))?;
    if !target.starts_with("refs/heads/") || check_ref_name(target).is_err() {
        return Err(SmallFileError::HeadNotABranch(printable(target)));
    }
    Ok(target.to_string())
}

/// A ref file's content: a version ID, blanks around it allowed.
pub(crate) fn parse_ref_value(raw: &[u8]) -> Result<VersionId, SmallFileError> {
    let text = std::str::from_utf8(raw).map_err(|_| SmallFileError::RefNotText)?;
    VersionId::parse(text.trim())
        .map_err(|_| SmallFileError::RefNotAVersion(printable(text.trim())))
}

/// What a ref file holds: the version ID and a newline.
pub(crate) fn render_ref_value(version: &VersionId) -> Vec<u8> {
    format!("{version}\n").into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fdl_versions() {
        assert!(FdlConfig::parse(br#"{"fdl":"0.1","x":1}"#).is_ok());
        assert!(FdlConfig::parse(br#"{"fdl":"1.0"}"#)
            .unwrap_err()
            .to_string()
            .contains("major version 1"));
        assert!(FdlConfig::parse(br#"{"id":"x"}"#).is_err());
        assert!(FdlConfig::parse(b"nope").is_err());
        // Read typed: unknown fields skipped but checked, a repeated key's last value counts.
        let c = FdlConfig::parse(br#"{"x": [[0, {"y": 1e400}]], "fdl": 0, "fdl": 0.2, "signers": ["a", 1, "b"], "data_dir": "d//"}"#).unwrap();
        assert_eq!(c.data_dir.as_str(), "d/");
        for bad in [
            "d\nCOPY/",
            "/etc/",
            "s3://other/",
            "file:/x/",
            "../up/",
            "a/../../b/",
        ] {
            assert!(data_dir_problem(bad).is_some(), "{bad:?}");
        }
        for good in ["data/", "my data/2026/", "a..b/", "data/x:y/"] {
            assert!(data_dir_problem(good).is_none(), "{good:?}");
        }
        assert_eq!(c.signers, ["a", "b"]);
        assert!(FdlConfig::parse(br#"{"fdl": "0.1", "x": "\ud800"}"#).is_err());
        assert!(FdlConfig::parse(br#"{"fdl": true}"#).is_err());
        assert!(FdlConfig::parse(br#"[{"fdl": "0.1"}]"#).is_err());
    }

    #[test]
    fn head_and_refs() {
        assert_eq!(
            parse_head(b"ref: refs/heads/main\n").unwrap(),
            "refs/heads/main"
        );
        assert_eq!(
            parse_head(b"  ref:refs/heads/a/b  ").unwrap(),
            "refs/heads/a/b"
        );
        assert!(parse_head(b"0190f3a2-7b4c-7d2e-8f10-123456789abc").is_err());
        assert!(parse_head(b"ref: refs/heads/../../x").is_err());
        assert!(parse_ref_value(b" 0190f3a2-7b4c-7d2e-8f10-123456789abc \n").is_ok());
        assert!(parse_ref_value(b"../x").is_err());
    }
}
