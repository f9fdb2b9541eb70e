//! Verified Git packs kept beside a lake (`git-packs/`), so that a cold clone downloads a few
//! packs instead of reading two files per version. The lake's maintainer writes them
//! (`make.rs`, `git-remote-fdl pack`); readers take from them only what they can check
//! (`verify.rs`): each version's commit recomputed from the pack's own blobs by mapping v1,
//! and those blobs matched against what the store lists now (`import.rs`). Nothing a pack says
//! can give a commit that reading the version would not give. The files' formats are here.

pub mod import;
pub mod make;
pub mod verify;

use crate::lake::VersionId;
use crate::mapping::ObjectId;

/// The format of `list.json` and of a pack's record this helper writes and reads.
pub const FORMAT: u64 = 1;

/// Packs merged into one when a run would leave more than this many (Git's bundle lists
/// merge at about 30).
pub const MERGE_AT: usize = 30;

/// One version as a pack's record holds it: its commit, and the ETags its mapped files had in
/// the listing made before they were read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PackedVersion {
    pub id: VersionId,
    pub commit: ObjectId,
    pub version_json: String,
    pub dataset_json: Option<String>,
}

/// A pack's record (`git-packs/<pack>.json`): the lake it was made from and its versions,
/// parents first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    pub lake: Option<String>,
    pub pack: String,
    pub versions: Vec<PackedVersion>,
}

/// Why a file of `git-packs/` cannot be read.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum FormatError {
    #[error("{file} is not JSON: {why}")]
    NotJson { file: String, why: String },
    #[error("{file} has format {found}; this git-remote-fdl reads format {FORMAT}")]
    UnknownFormat { file: String, found: String },
    #[error("{file}: {why}")]
    Bad { file: String, why: String },
}

/// The packs `list.json` names, in order.
pub fn parse_list(raw: &[u8]) -> Result<Vec<String>, FormatError> {
    let file = "git-packs/list.json";
    let v = parse_json(file, raw)?;
    let packs = v
        .get("packs")
        .and_then(|p| p.as_array())
        .ok_or(bad(file, "no \"packs\" list"))?;
    packs
        .iter()
        .map(|p| match p.as_str() {
            Some(n) if crate::lake::git_packs::is_pack_name(n) => Ok(n.to_string()),
            _ => Err(bad(file, "a pack's name is not pack-<40 hex digits>")),
        })
        .collect()
}

/// `list.json` naming `packs`.
pub fn render_list(packs: &[String]) -> Vec<u8> {
    let v = serde_json::json!({ "format": FORMAT, "packs": packs });
    let mut out = serde_json::to_vec_pretty(&v).expect("a list renders");
    out.push(b'\n');
    out
}

/// A pack's record; `name` is the pack's, which the record must name too.
pub fn parse_record(name: &str, raw: &[u8]) -> Result<Record, FormatError> {
    let file = format!("git-packs/{name}.json");
    let v = parse_json(&file, raw)?;
    if v.get("pack").and_then(|p| p.as_str()) != Some(name) {
        return Err(bad(&file, "it is the record of another pack"));
    }
    let lake = v.get("lake").and_then(|l| l.as_str()).map(str::to_string);
    let list = v.get("versions").and_then(|p| p.as_array());
    let list = list.ok_or(bad(&file, "no \"versions\" list"))?;
    let mut versions = Vec::with_capacity(list.len());
    for entry in list {
        let text = |key: &str| entry.get(key).and_then(|t| t.as_str());
        let id = text("id").and_then(|t| VersionId::parse(t).ok());
        let commit = text("commit").and_then(ObjectId::from_hex);
        let (Some(id), Some(commit), Some(version_json)) = (id, commit, text("version.json"))
        else {
            return Err(bad(
                &file,
                "a version lacks its id, commit or version.json ETag",
            ));
        };
        versions.push(PackedVersion {
            id,
            commit,
            version_json: version_json.to_string(),
            dataset_json: text("dataset.json").map(str::to_string),
        });
    }
    Ok(Record {
        lake: lake.clone(),
        pack: name.to_string(),
        versions,
    })
}

/// A pack's record as written.
pub fn render_record(record: &Record) -> Vec<u8> {
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
    let v = serde_json::json!({
        "format": FORMAT,
        "lake": record.lake,
        "pack": record.pack,
        "versions": versions,
    });
    let mut out = serde_json::to_vec(&v).expect("a record renders");
    out.push(b'\n');
    out
}

fn parse_json(file: &str, raw: &[u8]) -> Result<serde_json::Value, FormatError> {
    let v: serde_json::Value = serde_json::from_slice(raw).map_err(|e| FormatError::NotJson {
        file: file.to_string(),
        why: e.to_string(),
    })?;
    match v.get("format") {
        Some(f) if f.as_u64() == Some(FORMAT) => Ok(v),
        found => Err(FormatError::UnknownFormat {
            file: file.to_string(),
            found: found.map_or("none".to_string(), |f| f.to_string()),
        }),
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
            }],
        };
        let raw = render_record(&record);
        assert_eq!(parse_record(&record.pack, &raw), Ok(record.clone()));
        let other = format!("pack-{}", "b".repeat(40));
        assert!(parse_record(&other, &raw).is_err(), "another pack's record");
        let list = render_list(std::slice::from_ref(&record.pack));
        assert_eq!(parse_list(&list), Ok(vec![record.pack.clone()]));
        let future = br#"{"format": 2, "packs": []}"#;
        assert!(matches!(
            parse_list(future),
            Err(FormatError::UnknownFormat { .. })
        ));
    }
}
