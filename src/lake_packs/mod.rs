//! Verified Git packs kept beside a lake (`git-packs/`), so that a cold clone downloads a few
//! packs instead of reading two files per version. The lake's maintainer writes them
//! (`make.rs`, `git-remote-fdl pack`); readers take from them only what they can check
//! (`verify.rs`): each version's commit recomputed from the pack's own blobs by mapping v1,
//! and those blobs matched against what the store lists now (`import.rs`). Nothing a pack says
//! can give a commit that reading the version would not give. The files' formats are here.

mod ahead;
pub(crate) mod claims;
pub(crate) mod download;
pub(crate) mod import;
pub(crate) mod index_pack;
pub(crate) mod make;
mod run;
pub(crate) mod verify;

use serde::de::{MapAccess, SeqAccess};

use crate::lake::git_packs::is_pack_name;
use crate::lake::json::{self, Excerpt, Items, Object, Read, Text, TextOrExcerpt, TextRead};
use crate::lake::VersionId;
use crate::mapping::ObjectId;

/// The format of `list.json` and of a pack's record this helper writes and reads.
pub(crate) const FORMAT: u64 = 1;

/// Packs merged into one when a run would leave more than this many (Git's bundle lists
/// merge at about 30).
pub(crate) const MERGE_AT: usize = 30;

/// One version as a pack's record holds it: its commit, and the ETags its mapped files had in
/// the listing made before they were read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PackedVersion {
    pub id: VersionId,
    pub commit: ObjectId,
    pub version_json: String,
    pub dataset_json: Option<String>,
    /// `version.json.sig` as listed and read when the version was packed (signed lakes).
    pub signature: Option<PackedSignature>,
}

/// A version's signature as a record holds it: the ETag its file was listed with, and its
/// text (an SSH signature is ASCII armour), read after that listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PackedSignature {
    pub etag: String,
    pub text: String,
}

/// A pack's record (`git-packs/<pack>.json`): the lake it was made from and its versions,
/// parents first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Record {
    pub lake: Option<String>,
    pub pack: String,
    pub versions: Vec<PackedVersion>,
    /// How many versions the record lists, before any are passed over as known: what bounds
    /// the size of its pack (`verify::pack_size_bound`).
    pub recorded: usize,
}

/// Why a file of `git-packs/` cannot be read.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub(crate) enum FormatError {
    #[error("{file} is not JSON: {why}")]
    NotJson { file: String, why: String },
    #[error("{file} has format {found}; this git-remote-fdl reads format {FORMAT}")]
    UnknownFormat { file: String, found: String },
    #[error("{file}: {why}")]
    Bad { file: String, why: String },
}

/// The packs `list.json` names, in order, each once (a name repeated would be fetched and
/// checked again for nothing).
pub(crate) fn parse_list(raw: &[u8]) -> Result<Vec<String>, FormatError> {
    let file = "git-packs/list.json";
    let top = parse_top(file, raw, ListSeed)?;
    let names = top.fields.ok_or(bad(file, "no \"packs\" list"))?;
    let names = names.ok_or(bad(file, "a pack's name is not pack-<40 hex digits>"))?;
    let mut seen = std::collections::HashSet::new();
    Ok(names
        .into_iter()
        .filter(|n| seen.insert(n.clone()))
        .collect())
}

/// A file of `git-packs/` read typed: its `format`, and what `seed` reads of its other keys;
/// whatever else it holds is skipped, not kept.
struct Top<T> {
    format: Option<TextOrExcerpt>,
    fields: T,
}

fn parse_top<S: Fields>(file: &str, raw: &[u8], seed: S) -> Result<Top<S::Value>, FormatError> {
    let top = json::read(raw, TopRead(seed)).map_err(|e| FormatError::NotJson {
        file: file.to_string(),
        why: e.to_string(),
    })?;
    let Some(top) = top else {
        return Err(FormatError::UnknownFormat {
            file: file.to_string(),
            found: "none".to_string(),
        });
    };
    match &top.format {
        Some(TextOrExcerpt::Other(n)) if *n == FORMAT.to_string() => Ok(top),
        found => Err(FormatError::UnknownFormat {
            file: file.to_string(),
            found: match found {
                None => "none".to_string(),
                Some(TextOrExcerpt::Null) => "null".to_string(),
                Some(TextOrExcerpt::Str(s)) => serde_json::to_string(s).unwrap_or_default(),
                Some(TextOrExcerpt::Other(json)) => crate::redact::excerpt(json, 80),
            },
        }),
    }
}

/// What a file reads of its keys other than `format`.
trait Fields {
    type Value: Default;
    /// Reads the value of `key` into `into` if it is one this file reads; else skips it.
    fn field<'de, A: MapAccess<'de>>(
        &self,
        key: &str,
        into: &mut Self::Value,
        object: &mut Object<A>,
    ) -> Result<(), A::Error>;
}

struct TopRead<S>(S);

impl<'de, S: Fields> Read<'de> for TopRead<S> {
    type Out = Option<Top<S::Value>>;
    fn other(self) -> Self::Out {
        None
    }
    fn object<A: MapAccess<'de>>(self, mut object: Object<A>) -> Result<Self::Out, A::Error> {
        let mut top = Top {
            format: None,
            fields: S::Value::default(),
        };
        while let Some(k) = object.key()? {
            match k.as_str() {
                "format" => top.format = Some(object.value(Excerpt)?),
                _ => self.0.field(&k, &mut top.fields, &mut object)?,
            }
        }
        Ok(Some(top))
    }
}

/// `list.json`'s `packs`: `None` if not a list, a list with `None` if a name is not a pack's.
struct ListSeed;

impl Fields for ListSeed {
    type Value = Option<Option<Vec<String>>>;
    fn field<'de, A: MapAccess<'de>>(
        &self,
        key: &str,
        into: &mut Self::Value,
        object: &mut Object<A>,
    ) -> Result<(), A::Error> {
        match key {
            "packs" => {
                let names = ListOf(
                    || TextRead::CHECKED,
                    |t: Text| t.into_string().filter(|n| is_pack_name(n)),
                );
                *into = object.value(names)?;
            }
            _ => object.skip_value()?,
        }
        Ok(())
    }
}

/// A list each item of which the reader `.0()` makes reads and `.1` takes (`None`: a bad item,
/// and the list is bad); `None` for anything that is not a list.
struct ListOf<R, F>(R, F);

impl<'de, I: Read<'de>, R: Fn() -> I, U, F: Fn(I::Out) -> Option<U>> Read<'de> for ListOf<R, F> {
    type Out = Option<Option<Vec<U>>>;
    fn other(self) -> Self::Out {
        None
    }
    fn array<A: SeqAccess<'de>>(self, mut items: Items<A>) -> Result<Self::Out, A::Error> {
        let mut out = Some(Vec::new());
        while let Some(item) = items.next((self.0)())? {
            match (&mut out, (self.1)(item)) {
                (Some(list), Some(u)) => list.push(u),
                _ => out = None,
            }
        }
        Ok(Some(out))
    }
}

/// `list.json` naming `packs`.
pub(crate) fn render_list(packs: &[String]) -> Vec<u8> {
    let list = ListOut {
        format: FORMAT,
        packs,
    };
    let mut out = serde_json::to_vec_pretty(&list).expect("a list renders");
    out.push(b'\n');
    out
}

/// A pack's record as written: streamed from the record (serde's derive), never made a tree,
/// however many versions it holds.
pub(crate) fn render_record(record: &Record) -> Vec<u8> {
    let out = RecordOut {
        format: FORMAT,
        lake: record.lake.as_deref(),
        pack: &record.pack,
        versions: record.versions.iter().map(VersionOut::of).collect(),
    };
    let mut bytes = serde_json::to_vec(&out).expect("a record renders");
    bytes.push(b'\n');
    bytes
}

/// `list.json` as written, keys in this order.
#[derive(serde::Serialize)]
struct ListOut<'a> {
    format: u64,
    packs: &'a [String],
}

/// A pack's record as written, keys in this order.
#[derive(serde::Serialize)]
struct RecordOut<'a> {
    format: u64,
    lake: Option<&'a str>,
    pack: &'a str,
    versions: Vec<VersionOut<'a>>,
}

/// One version of a record as written.
#[derive(serde::Serialize)]
struct VersionOut<'a> {
    id: String,
    commit: String,
    #[serde(rename = "version.json")]
    version_json: &'a str,
    #[serde(rename = "dataset.json", skip_serializing_if = "Option::is_none")]
    dataset_json: Option<&'a str>,
    #[serde(rename = "version.json.sig", skip_serializing_if = "Option::is_none")]
    signature_etag: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    signature: Option<&'a str>,
}

impl<'a> VersionOut<'a> {
    fn of(p: &'a PackedVersion) -> VersionOut<'a> {
        VersionOut {
            id: p.id.to_string(),
            commit: p.commit.to_hex(),
            version_json: &p.version_json,
            dataset_json: p.dataset_json.as_deref(),
            signature_etag: p.signature.as_ref().map(|s| s.etag.as_str()),
            signature: p.signature.as_ref().map(|s| s.text.as_str()),
        }
    }
}

/// A pack's record; `name` is the pack's, which the record must name too.
pub(crate) fn parse_record(name: &str, raw: &[u8]) -> Result<Record, FormatError> {
    let file = format!("git-packs/{name}.json");
    let top = parse_top(&file, raw, RecordSeed)?.fields;
    if top.pack.as_ref().and_then(Text::as_str) != Some(name) {
        return Err(bad(&file, "it is the record of another pack"));
    }
    let versions = top.versions.ok_or(bad(&file, "no \"versions\" list"))?;
    let versions = versions.ok_or(bad(
        &file,
        "a version lacks its id, commit or version.json ETag",
    ))?;
    Ok(Record {
        lake: top.lake.and_then(Text::into_string),
        pack: name.to_string(),
        recorded: versions.len(),
        versions,
    })
}

/// What a record's reader keeps of it.
#[derive(Default)]
struct RecordFields {
    pack: Option<Text>,
    lake: Option<Text>,
    versions: Option<Option<Vec<PackedVersion>>>,
}

struct RecordSeed;

impl Fields for RecordSeed {
    type Value = RecordFields;
    fn field<'de, A: MapAccess<'de>>(
        &self,
        key: &str,
        into: &mut RecordFields,
        object: &mut Object<A>,
    ) -> Result<(), A::Error> {
        match key {
            "pack" => into.pack = Some(object.text()?),
            "lake" => into.lake = Some(object.text()?),
            "versions" => into.versions = object.value(ListOf(|| EntryRead, |e| e))?,
            _ => object.skip_value()?,
        }
        Ok(())
    }
}

/// One version of a record; `None` if it lacks its id, commit or `version.json` ETag, or is
/// not an object.
struct EntryRead;

impl<'de> Read<'de> for EntryRead {
    type Out = Option<PackedVersion>;
    fn other(self) -> Self::Out {
        None
    }
    fn object<A: MapAccess<'de>>(self, mut object: Object<A>) -> Result<Self::Out, A::Error> {
        let (mut id, mut commit, mut version_json, mut dataset_json) = (None, None, None, None);
        let (mut sig_etag, mut sig) = (None, None);
        while let Some(k) = object.key()? {
            let slot = match k.as_str() {
                "id" => &mut id,
                "commit" => &mut commit,
                "version.json" => &mut version_json,
                "dataset.json" => &mut dataset_json,
                "version.json.sig" => &mut sig_etag,
                "signature" => &mut sig,
                _ => {
                    object.skip_value()?;
                    continue;
                }
            };
            *slot = object.text()?.into_string();
        }
        let id = id.and_then(|t| VersionId::parse(&t).ok());
        let commit = commit.and_then(|c| ObjectId::from_hex(&c));
        Ok(match (id, commit, version_json) {
            (Some(id), Some(commit), Some(version_json)) => Some(PackedVersion {
                id,
                commit,
                version_json,
                dataset_json,
                // Half a signature is none: the version is then read and checked.
                signature: sig_etag
                    .zip(sig)
                    .map(|(etag, text)| PackedSignature { etag, text }),
            }),
            _ => None,
        })
    }
}

fn bad(file: &str, why: &str) -> FormatError {
    FormatError::Bad {
        file: file.to_string(),
        why: why.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The derived writer gives the bytes the earlier tree-built writer gave (`pack` of this
    /// version and readers of the last agree on every file).
    #[test]
    fn records_and_lists_are_written_byte_for_byte_as_before() {
        let version = |n: u8, dataset: Option<&str>| PackedVersion {
            id: VersionId::parse(&format!("0190f3a2-7b4c-7d2e-8f10-0000000000{n:02x}")).unwrap(),
            commit: ObjectId([n; 20]),
            version_json: format!("\"etag-{n}\""),
            dataset_json: dataset.map(str::to_string),
            signature: None,
        };
        for lake in [Some("lake \"1\"\n"), None] {
            let record = Record {
                lake: lake.map(str::to_string),
                pack: format!("pack-{}", "a".repeat(40)),
                versions: vec![version(1, None), version(2, Some("\"d-2\""))],
                recorded: 2,
            };
            let versions: Vec<serde_json::Value> = record
                .versions
                .iter()
                .map(|p| {
                    let mut o = serde_json::Map::new();
                    o.insert("id".into(), p.id.to_string().into());
                    o.insert("commit".into(), p.commit.to_hex().into());
                    o.insert("version.json".into(), p.version_json.clone().into());
                    if let Some(d) = &p.dataset_json {
                        o.insert("dataset.json".into(), d.clone().into());
                    }
                    serde_json::Value::Object(o)
                })
                .collect();
            let tree = serde_json::json!({
                "format": FORMAT, "lake": record.lake, "pack": record.pack, "versions": versions,
            });
            let mut before = serde_json::to_vec(&tree).unwrap();
            before.push(b'\n');
            assert_eq!(render_record(&record), before);
        }
        let packs = vec![
            format!("pack-{}", "b".repeat(40)),
            format!("pack-{}", "c".repeat(40)),
        ];
        let tree = serde_json::json!({ "format": FORMAT, "packs": packs });
        let mut before = serde_json::to_vec_pretty(&tree).unwrap();
        before.push(b'\n');
        assert_eq!(render_list(&packs), before);
    }

    #[test]
    fn a_record_reads_back_as_written() {
        let record = Record {
            lake: Some("lake-1".into()),
            pack: format!("pack-{}", "a".repeat(40)),
            versions: vec![PackedVersion {
                id: VersionId::parse("0190f3a2-7b4c-7d2e-8f10-000000000001").unwrap(),
                commit: ObjectId([7; 20]),
                version_json: "\"e1\"".into(),
                dataset_json: None,
                signature: Some(PackedSignature {
                    etag: "\"s1\"".into(),
                    text: "-----BEGIN SSH SIGNATURE-----\nU1NIU0lH\n-----END SSH SIGNATURE-----\n"
                        .into(),
                }),
            }],
            recorded: 1,
        };
        let raw = render_record(&record);
        assert_eq!(parse_record(&record.pack, &raw), Ok(record.clone()));
        let other = format!("pack-{}", "b".repeat(40));
        assert!(parse_record(&other, &raw).is_err(), "another pack's record");
        let list = render_list(std::slice::from_ref(&record.pack));
        assert_eq!(parse_list(&list), Ok(vec![record.pack.clone()]));
        // Unknown fields are skipped; a name repeated is one pack.
        let (a, b) = (record.pack.clone(), format!("pack-{}", "c".repeat(40)));
        let list =
            format!(r#"{{"x": [[0, {{"y": "z"}}]], "format": 1, "packs": ["{a}", "{b}", "{a}"]}}"#);
        assert_eq!(parse_list(list.as_bytes()), Ok(vec![a.clone(), b.clone()]));
        let named =
            |packs: &str| parse_list(format!(r#"{{"format": 1, "packs": {packs}}}"#).as_bytes());
        assert!(matches!(named("[1]"), Err(FormatError::Bad { .. })));
        assert!(matches!(named("\"x\""), Err(FormatError::Bad { .. })));
        assert!(matches!(
            named("[\"pack-1\"]"),
            Err(FormatError::Bad { .. })
        ));
        assert!(matches!(
            named("[\"\\ud800\"]"),
            Err(FormatError::NotJson { .. })
        ));
        let found = |raw: &str| match parse_list(raw.as_bytes()) {
            Err(FormatError::UnknownFormat { found, .. }) => found,
            other => panic!("{other:?}"),
        };
        assert_eq!(found(r#"{"format": "1", "packs": []}"#), r#""1""#);
        assert_eq!(found(r#"{"format": 1.0, "packs": []}"#), "1.0");
        assert_eq!(found(r#"{"packs": []}"#), "none");
        assert_eq!(found(r#"[]"#), "none");
        let mut padded = String::from_utf8(raw.clone()).unwrap();
        padded.insert_str(1, r#""writer": {"stats": [1, 2, 3]}, "#);
        assert_eq!(
            parse_record(&record.pack, padded.as_bytes()),
            Ok(record.clone())
        );
        let entry_without_id = padded.replace("\"id\"", "\"ID\"");
        assert!(matches!(
            parse_record(&record.pack, entry_without_id.as_bytes()),
            Err(FormatError::Bad { .. })
        ));
        let future = br#"{"format": 2, "packs": []}"#;
        assert!(matches!(
            parse_list(future),
            Err(FormatError::UnknownFormat { .. })
        ));
    }

    /// An object of `git-packs/` whose first key is serde_json's number token is read as a
    /// `serde_json::Value` reads it (a number, refused when its text is none), as every JSON
    /// file of the lake is; `refs.json` alone keeps reading it as any object.
    #[test]
    fn a_number_token_first_is_read_as_a_value_reads_it() {
        let name = "pack-0123456789abcdef0123456789abcdef01234567";
        for raw in [
            r#"{"$serde_json::private::Number": "x", "format": 1}"#,
            r#"{"$serde_json::private::Number": "1", "format": 1}"#,
        ] {
            let tree = serde_json::from_str::<serde_json::Value>(raw).is_err();
            let ours = matches!(
                parse_record(name, raw.as_bytes()),
                Err(FormatError::NotJson { .. })
            );
            assert!(tree && ours, "{raw}");
        }
    }
}
