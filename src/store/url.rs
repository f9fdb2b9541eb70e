//! Store addresses: which backend an address names, and how it is shown without secrets.

use std::fmt;
use std::path::PathBuf;

use url::Url;

use super::error::StoreError;
use crate::redact::redact;

/// The address of a lake's root.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StoreUrl {
    /// A local folder (a path, or `file://`).
    Local(PathBuf),
    /// `s3://<bucket>/<prefix>`.
    S3(Url),
    /// `gs://<bucket>/<prefix>`.
    Gcs(Url),
    /// `az://<container>/<prefix>` (and Azure's other spellings).
    Azure(Url),
    /// Plain HTTP(S): read-only, cannot list.
    Http(Url),
}

impl StoreUrl {
    /// Parses what follows `fdl::`. Relative paths are taken from `cwd`.
    pub fn parse(s: &str, cwd: &std::path::Path) -> Result<StoreUrl, StoreError> {
        crate::redact::register_url_secrets(s);
        let bad = |why: String| {
            StoreError::Config(format!("'{}' is not a lake address: {why}", redact(s)))
        };
        if s.is_empty() {
            return Err(bad("it is empty".into()));
        }
        let scheme = s.split_once("://").map(|(sc, _)| sc.to_ascii_lowercase());
        let Some(scheme) = scheme else {
            let p = PathBuf::from(s);
            return Ok(StoreUrl::Local(if p.is_absolute() {
                p
            } else {
                cwd.join(p)
            }));
        };
        let url = Url::parse(s).map_err(|e| bad(e.to_string()))?;
        match scheme.as_str() {
            "file" => file_path(s, &url)
                .map(StoreUrl::Local)
                .ok_or_else(|| bad("a file:// URL must name an absolute local path".into())),
            "s3" | "s3a" => Ok(StoreUrl::S3(url)),
            "gs" => Ok(StoreUrl::Gcs(url)),
            "az" | "azure" | "abfs" | "abfss" | "adl" => Ok(StoreUrl::Azure(url)),
            "http" | "https" => Ok(StoreUrl::Http(url)),
            other => Err(bad(format!(
                "unknown scheme '{other}' (use a path, file://, s3://, gs://, az:// or http(s)://)"
            ))),
        }
    }

    /// Only stores that can write on condition take pushes.
    /// The address as Git is given it again (after `fdl::`): unredacted, a folder's absolute
    /// path. Never for a message: [`StoreUrl`]'s `Display` hides secrets.
    pub fn as_address(&self) -> String {
        match self {
            StoreUrl::Local(p) => p.display().to_string(),
            StoreUrl::S3(u) | StoreUrl::Gcs(u) | StoreUrl::Azure(u) | StoreUrl::Http(u) => {
                u.as_str().to_string()
            }
        }
    }

    /// Whether the store can only be read (plain HTTP).
    pub fn is_read_only(&self) -> bool {
        matches!(self, StoreUrl::Http(_))
    }
}

/// A `file://` URL's path as written, percent-decoded. `Url` removes `..` segments as text
/// (`/d/link/../lake` becomes `/d/lake`); Git's own `file://` remotes and a plain path leave
/// them to the system, which follows `link` first. `Url` still checks the host and form.
fn file_path(s: &str, url: &Url) -> Option<PathBuf> {
    url.to_file_path().ok()?;
    let rest = s.get("file://".len()..)?;
    let path = &rest[rest.find('/')?..];
    let path = path.split(['?', '#']).next()?;
    let mut bytes = Vec::with_capacity(path.len());
    let mut raw = path.bytes();
    while let Some(b) = raw.next() {
        let hex = |b: Option<u8>| (b? as char).to_digit(16);
        let decoded = match b {
            b'%' => {
                let mut ahead = raw.clone();
                let pair = hex(ahead.next()).zip(hex(ahead.next()));
                pair.map(|(hi, lo)| {
                    raw = ahead;
                    (hi * 16 + lo) as u8
                })
            }
            _ => None,
        };
        bytes.push(decoded.unwrap_or(b));
    }
    let path: std::ffi::OsString = std::os::unix::ffi::OsStringExt::from_vec(bytes);
    Some(PathBuf::from(path))
}

impl fmt::Display for StoreUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreUrl::Local(p) => write!(f, "{}", p.display()),
            StoreUrl::S3(u) | StoreUrl::Gcs(u) | StoreUrl::Azure(u) | StoreUrl::Http(u) => {
                f.write_str(&redact(u.as_str()))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds() {
        let cwd = std::path::Path::new("/home/x");
        assert_eq!(
            StoreUrl::parse("lake", cwd).unwrap(),
            StoreUrl::Local("/home/x/lake".into())
        );
        assert_eq!(
            StoreUrl::parse("/abs", cwd).unwrap(),
            StoreUrl::Local("/abs".into())
        );
        assert_eq!(
            StoreUrl::parse("file:///abs/l", cwd).unwrap(),
            StoreUrl::Local("/abs/l".into())
        );
        // `..` is left to the system (which follows links first), as in a path.
        assert_eq!(
            StoreUrl::parse("file:///d/link/../lake", cwd).unwrap(),
            StoreUrl::Local("/d/link/../lake".into())
        );
        assert_eq!(
            StoreUrl::parse("file://localhost/a%20b/./c?x#y", cwd).unwrap(),
            StoreUrl::Local("/a b/./c".into())
        );
        assert!(StoreUrl::parse("file://elsewhere/x", cwd).is_err());
        assert!(matches!(
            StoreUrl::parse("s3://b/lake/", cwd).unwrap(),
            StoreUrl::S3(_)
        ));
        assert!(matches!(
            StoreUrl::parse("gs://b/lake/", cwd).unwrap(),
            StoreUrl::Gcs(_)
        ));
        assert!(matches!(
            StoreUrl::parse("az://c/lake/", cwd).unwrap(),
            StoreUrl::Azure(_)
        ));
        assert!(StoreUrl::parse("http://h/l/", cwd).unwrap().is_read_only());
        assert!(StoreUrl::parse("ftp://h/l", cwd).is_err());
    }
}
