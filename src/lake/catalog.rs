//! A version's catalog (`ducklake.duckdb`, or `catalogs/<format>.duckdb`) and the digest its
//! record gives for it: the one file a reader needs to open the version's data.

use serde::de::MapAccess;

use super::json::{self, At, Object, Read, Text, TextRead};

use super::{Lake, LakeError, VersionId, VersionRecord};

/// The largest catalog the helper downloads (a catalog holds metadata, not data).
pub(crate) const CATALOG_LIMIT: u64 = 16 << 30;

/// A format name no catalog can have (printable).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("'{0}' is not a DuckLake format name (such as 1.0)")]
pub(crate) struct NotAFormat(String);

/// Which catalog of a version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum CatalogFormat {
    /// `ducklake.duckdb`, the catalog every version has.
    Default,
    /// `catalogs/<format>.duckdb`, the catalog in another DuckLake format (e.g. `1.0`).
    Other(String),
}

impl CatalogFormat {
    /// A format name given by a user: it becomes part of a path, so only `[0-9A-Za-z._-]`, and
    /// not `.` or `..`.
    pub(crate) fn parse(name: &str) -> Result<CatalogFormat, NotAFormat> {
        let ok = !name.is_empty()
            && name != "."
            && name != ".."
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
        if ok {
            Ok(CatalogFormat::Other(name.to_string()))
        } else {
            Err(NotAFormat(super::printable(name)))
        }
    }

    /// The catalog's path below the version's folder.
    pub(crate) fn file(&self) -> String {
        match self {
            CatalogFormat::Default => "ducklake.duckdb".to_string(),
            CatalogFormat::Other(f) => format!("catalogs/{f}.duckdb"),
        }
    }
}

/// The sha256 (lower-case hex) the record gives for a catalog: `sha256` for the default one;
/// for another format, `catalogs.<format>` as a digest or as an object with a `sha256`
/// (docs/format-assumptions.md).
pub(crate) fn expected_sha256(record: &VersionRecord, format: &CatalogFormat) -> Option<String> {
    let digest = match format {
        CatalogFormat::Default => record.sha256.clone()?,
        CatalogFormat::Other(f) => {
            // Read typed: the record's other fields are skipped, not made a tree.
            let read = At {
                key: "catalogs",
                read: At {
                    key: f,
                    read: Digest,
                },
            };
            json::read(&record.raw, read).ok()????
        }
    };
    parse_digest(&digest)
}

/// A format's digest in `catalogs`: a string, or an object's `sha256` string.
#[derive(Clone, Copy)]
struct Digest;

impl<'de> Read<'de> for Digest {
    type Out = Option<String>;
    fn other(self) -> Option<String> {
        None
    }
    fn string(self, s: &str) -> Option<String> {
        Some(s.to_string())
    }
    fn object<A: MapAccess<'de>>(self, object: Object<A>) -> Result<Option<String>, A::Error> {
        let sha256 = At {
            key: "sha256",
            read: TextRead::CHECKED,
        };
        Ok(sha256.object(object)?.and_then(Text::into_string))
    }
}

/// A sha256 as a record gives it, in lower case: 64 hex digits, either case, blanks around
/// them trimmed (a tolerant reader); anything else (a prefix, a digit short) is no digest.
pub(crate) fn parse_digest(given: &str) -> Option<String> {
    let digest = given.trim().to_ascii_lowercase();
    (digest.len() == 64 && digest.bytes().all(|b| b.is_ascii_hexdigit())).then_some(digest)
}

impl Lake {
    /// Streams a version's catalog into `sink`; `false` if the version has no such catalog.
    pub(crate) async fn download_catalog(
        &self,
        id: &VersionId,
        format: &CatalogFormat,
        sink: &mut (dyn FnMut(&[u8]) -> std::io::Result<()> + Send),
    ) -> Result<bool, LakeError> {
        let path = format!("versions/{id}/{}", format.file());
        self.store
            .download(&path, CATALOG_LIMIT, sink)
            .await
            .map_err(|source| LakeError::Store {
                lake: self.name(),
                source,
            })
    }

    /// Where the lake's data files are, as an address DuckDB can read (`DATA_PATH`); refused
    /// when `fdl.json`'s `data_dir` is no folder under the lake's root.
    pub(crate) fn data_path(&self) -> Result<String, LakeError> {
        let data_dir = &self.config.data_dir;
        if let Some(why) = super::small_files::data_dir_problem(data_dir) {
            return Err(LakeError::Config {
                lake: self.name(),
                why: super::small_files::FdlJsonError::BadDataDir {
                    data_dir: super::printable(data_dir),
                    why,
                },
            });
        }
        let root = self.store.url().to_string();
        let root = if root.ends_with('/') {
            root
        } else {
            format!("{root}/")
        };
        Ok(format!("{root}{data_dir}"))
    }

    /// What a query engine needs to read the data files where the helper reads the lake.
    pub(crate) fn data_access(&self) -> crate::store::access::DataAccess {
        self.store.data_access()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_formats_digest_is_read_typed_the_rest_skipped() {
        let d = "ab".repeat(32);
        let other = CatalogFormat::Other("1.0".into());
        let digest = |raw: String| {
            let record = VersionRecord::parse(raw.into_bytes()).unwrap();
            expected_sha256(&record, &other)
        };
        let big = format!("[{}0]", "0,".repeat(1000));
        assert_eq!(
            digest(format!(
                r#"{{"x": {big}, "catalogs": {{"0.9": 1, "1.0": "{d}"}}}}"#
            )),
            Some(d.clone())
        );
        assert_eq!(
            digest(format!(
                r#"{{"catalogs": {{"1.0": {{"sha256": 5, "sha256": "{d}"}}}}}}"#
            )),
            Some(d.clone())
        );
        // The last of a repeated key, as a tree keeps it.
        assert_eq!(
            digest(format!(
                r#"{{"catalogs": {{"1.0": "{d}"}}, "catalogs": 7}}"#
            )),
            None
        );
        assert_eq!(digest(r#"{"catalogs": {"1.0": [1]}}"#.into()), None);
    }
}
