//! The small files at a lake's root: `fdl.json` and `HEAD`, and a ref file's value, parsed
//! tolerantly (`refs.json` is `refs_json.rs`).

use serde_json::Value;

use super::names::{check_ref_name, printable, VersionId};

/// The major versions of the FDL specification this reader knows.
pub const KNOWN_MAJOR: &[u64] = &[0];

/// Why `fdl.json` cannot be used. Only a major version this helper does not know asks for an
/// upgrade, so it is told apart by its kind, not by its message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error("{0}")]
    Unreadable(String),
    #[error("fdl.json says FDL {version}, whose major version {major} this helper does not know")]
    UnknownMajor { version: String, major: u64 },
}

/// The parts of `fdl.json` the helper uses.
#[derive(Clone, Debug)]
pub struct FdlConfig {
    pub fdl: String,
    pub id: Option<String>,
    pub signers: Vec<String>,
    /// Where data files are, relative to the root, ending in `/` (default `data/`).
    pub data_dir: String,
}

impl FdlConfig {
    pub fn parse(raw: &[u8]) -> Result<FdlConfig, ConfigError> {
        let unreadable = |why: String| ConfigError::Unreadable(why);
        let value: Value = serde_json::from_slice(raw)
            .map_err(|e| unreadable(format!("fdl.json is not valid JSON: {e}")))?;
        let obj = value
            .as_object()
            .ok_or_else(|| unreadable("fdl.json is not a JSON object".to_string()))?;
        let fdl = match obj.get("fdl") {
            Some(Value::String(s)) => s.trim().to_string(),
            Some(Value::Number(n)) => n.to_string(),
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
            return Err(ConfigError::UnknownMajor {
                version: printable(&fdl).to_string(),
                major,
            });
        }
        let id = obj.get("id").and_then(Value::as_str).map(str::to_string);
        let signers = obj
            .get("signers")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default();
        let data_dir = match obj.get("data_dir").and_then(Value::as_str) {
            Some(d) if !d.is_empty() => format!("{}/", d.trim_end_matches('/')),
            _ => "data/".to_string(),
        };
        Ok(FdlConfig {
            fdl,
            id,
            signers,
            data_dir,
        })
    }
}

/// `HEAD`'s content: `ref: refs/heads/<name>`, blanks around it allowed.
pub fn parse_head(raw: &[u8]) -> Result<String, String> {
    let text = std::str::from_utf8(raw).map_err(|_| "HEAD is not UTF-8 text".to_string())?;
    let target = text
        .trim()
        .strip_prefix("ref:")
        .map(str::trim)
        .ok_or_else(|| {
            format!(
                "HEAD holds '{}', not 'ref: refs/heads/<name>'",
                printable(text.trim())
            )
        })?;
    if !target.starts_with("refs/heads/") || check_ref_name(target).is_err() {
        return Err(format!(
            "HEAD names '{}', which is not a branch",
            printable(target)
        ));
    }
    Ok(target.to_string())
}

/// A ref file's content: a version ID, blanks around it allowed.
pub fn parse_ref_value(raw: &[u8]) -> Result<VersionId, String> {
    let text = std::str::from_utf8(raw).map_err(|_| "its content is not UTF-8 text".to_string())?;
    VersionId::parse(text.trim()).map_err(|_| {
        format!(
            "it holds '{}', which is not a version ID",
            printable(text.trim())
        )
    })
}

/// What a ref file holds: the version ID and a newline.
pub fn render_ref_value(version: &VersionId) -> Vec<u8> {
    format!("{version}\n").into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fdl_versions() {
        assert_eq!(
            FdlConfig::parse(br#"{"fdl":"0.1","x":1}"#).unwrap().fdl,
            "0.1"
        );
        assert!(FdlConfig::parse(br#"{"fdl":"1.0"}"#)
            .unwrap_err()
            .to_string()
            .contains("major version 1"));
        assert!(FdlConfig::parse(br#"{"id":"x"}"#).is_err());
        assert!(FdlConfig::parse(b"nope").is_err());
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
