//! A small lake writer for tests, following the FDL layout page: it builds a lake in memory
//! and writes it to a folder or an S3 bucket. It is deliberately independent of the helper's
//! own reader, so tests check the helper against the layout, not against itself.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{json, Value};
use sha2::{Digest, Sha256};

/// 2026-01-01T00:00:00Z in milliseconds: version `n` is made `n` seconds later.
const BASE_MS: u64 = 1_767_225_600_000;

/// A UUIDv7-shaped version ID for version number `n`, with its time in the first 48 bits.
pub fn vid(n: u64) -> String {
    let ms = BASE_MS + n * 1000;
    format!("{:08x}-{:04x}-7000-8000-{:012x}", ms >> 16, ms & 0xffff, n)
}

#[derive(Clone, Debug)]
pub struct LakeBuilder {
    pub files: BTreeMap<String, Vec<u8>>,
}

impl Default for LakeBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl LakeBuilder {
    pub fn new() -> LakeBuilder {
        let mut files = BTreeMap::new();
        files.insert(
            "fdl.json".to_string(),
            serde_json::to_vec_pretty(&json!({
                "fdl": "0.1",
                "id": "5f0c8a52-6d3e-4f8e-9b1a-2c7d4e9f0a13",
                "data_dir": "data/",
                "catalog_formats": [{"ducklake": "1.1"}]
            }))
            .unwrap(),
        );
        files.insert("HEAD".to_string(), b"ref: refs/heads/main\n".to_vec());
        LakeBuilder { files }
    }

    pub fn put(&mut self, path: &str, bytes: impl Into<Vec<u8>>) -> &mut Self {
        self.files.insert(path.to_string(), bytes.into());
        self
    }

    pub fn remove(&mut self, path: &str) -> &mut Self {
        self.files.remove(path);
        self
    }

    /// Adds version `n` with the given parents (version numbers), as a writer would: data
    /// file, catalog, dataset.json, then version.json last.
    pub fn version(&mut self, n: u64, parents: &[u64], message: &str) -> String {
        self.version_by(n, parents, message, json!("Ada Lovelace <ada@example.org>"))
    }

    pub fn version_by(&mut self, n: u64, parents: &[u64], message: &str, author: Value) -> String {
        let id = vid(n);
        let parents: Vec<String> = parents.iter().map(|p| vid(*p)).collect();
        let record = json!({
            "parents": parents,
            "author": author,
            "message": message,
            "created_at": chrono_like(n),
            "sha256": self.catalog(&id, n),
        });
        self.record(&id, serde_json::to_vec_pretty(&record).unwrap());
        id
    }

    /// Writes the catalog and data of a version; returns the catalog's sha256.
    fn catalog(&mut self, id: &str, n: u64) -> String {
        let catalog = format!("test catalog of version {n}\n").into_bytes();
        let sha = hex(&Sha256::digest(&catalog));
        self.put(&format!("versions/{id}/ducklake.duckdb"), catalog);
        self.put(
            &format!("versions/{id}/dataset.json"),
            serde_json::to_vec_pretty(
                &json!({"tables": [{"schema": "main", "name": "sales", "rows": n * 10}]}),
            )
            .unwrap(),
        );
        self.put(
            &format!(
                "data/main/sales/ducklake-{:08x}-0000-4000-8000-{:012x}.parquet",
                n, n
            ),
            format!("parquet bytes {n}").into_bytes(),
        );
        sha
    }

    /// Writes `version.json` with exactly these bytes.
    pub fn record(&mut self, id: &str, bytes: Vec<u8>) -> &mut Self {
        self.put(&format!("versions/{id}/version.json"), bytes)
    }

    /// A linear history of versions `first..=last`, each the parent of the next.
    pub fn chain(&mut self, first: u64, last: u64) -> String {
        let mut id = String::new();
        for n in first..=last {
            let parents: Vec<u64> = if n == first && first == 1 {
                vec![]
            } else {
                vec![n - 1]
            };
            id = self.version(n, &parents, &format!("Load batch {n}"));
        }
        id
    }

    pub fn set_ref(&mut self, name: &str, id: &str) -> &mut Self {
        self.put(name, format!("{id}\n").into_bytes())
    }

    pub fn branch(&mut self, name: &str, n: u64) -> &mut Self {
        self.set_ref(&format!("refs/heads/{name}"), &vid(n))
    }

    pub fn tag(&mut self, name: &str, n: u64) -> &mut Self {
        self.set_ref(&format!("refs/tags/{name}"), &vid(n))
    }

    /// Writes `refs.json` from the ref files, as a writer does after each ref update.
    pub fn refs_json(&mut self) -> &mut Self {
        let mut map = serde_json::Map::new();
        for (path, bytes) in &self.files {
            if path.starts_with("refs/heads/") || path.starts_with("refs/tags/") {
                map.insert(
                    path.clone(),
                    Value::String(String::from_utf8(bytes.clone()).unwrap().trim().to_string()),
                );
            }
        }
        let bytes = serde_json::to_vec_pretty(&Value::Object(map)).unwrap();
        self.put("refs.json", bytes)
    }

    /// How many of the lake's files lie below `prefix` (`versions/`, `refs/`): what a listing
    /// of it pages through.
    #[allow(dead_code)] // The benchmarks' (benches/*.rs), which share this support; no test's.
    pub fn files_under(&self, prefix: &str) -> u64 {
        self.files.keys().filter(|k| k.starts_with(prefix)).count() as u64
    }

    pub fn write_dir(&self, dir: &Path) {
        for (path, bytes) in &self.files {
            let p = dir.join(path);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, bytes).unwrap();
        }
    }

    /// Uploads every file under `prefix` of an S3 bucket.
    pub fn write_s3(&self, s3: &super::moto::Moto, bucket: &str, prefix: &str) {
        s3.put_files(bucket, prefix, &self.files);
    }
}

fn chrono_like(n: u64) -> String {
    // 2026-01-01T00:00:00Z plus n seconds, written without a date library (January only).
    assert!(n < 31 * 86400, "test versions fit in January");
    let day = 1 + n / 86400;
    format!(
        "2026-01-{day:02}T{:02}:{:02}:{:02}Z",
        (n / 3600) % 24,
        (n / 60) % 60,
        n % 60
    )
}

/// The lake most tests start from: versions `1..=last` in a chain, `main` at `last`, the tag
/// `v1` at version `v1`, `refs.json` written.
pub fn lake(last: u64, v1: u64) -> LakeBuilder {
    let mut l = LakeBuilder::new();
    l.chain(1, last);
    l.branch("main", last).tag("v1", v1);
    l.refs_json();
    l
}

/// [`lake`] with a side branch: versions 1..=4, version 5 off 2, `main` at 4, `feature/x` at
/// 5, `v1` at 2.
pub fn branched_lake() -> LakeBuilder {
    let mut l = lake(4, 2);
    l.version(5, &[2], "side work");
    l.branch("feature/x", 5);
    l.refs_json();
    l
}

pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
