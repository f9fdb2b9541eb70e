//! The FDL layout on top of a store: `fdl.json`, `HEAD`, refs (listed or from `refs.json`) and
//! version records, each read with a size limit and validated before use.

pub mod files;
pub mod names;
pub mod record;

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};

pub use files::FdlConfig;
pub use names::{check_ref_name, check_writable_ref, printable, VersionId};
pub use record::VersionRecord;

use crate::store::{Store, StoreError, Token, Versioned, WriteError, WriteMode};

/// Size limits: a hostile lake cannot make the helper read a huge file.
pub const SMALL_FILE_LIMIT: u64 = 1 << 20;
pub const REFS_JSON_LIMIT: u64 = 64 << 20;
pub const VERSION_JSON_LIMIT: u64 = 16 << 20;
pub const DATASET_JSON_LIMIT: u64 = 64 << 20;
/// A signature file larger than this is not read.
pub const SIGNATURE_LIMIT: u64 = 64 << 10;
/// Independent reads in flight at once.
pub const CONCURRENCY: usize = 48;

/// What is wrong with a lake, naming the lake and the ref or version at fault.
#[derive(Debug, thiserror::Error)]
pub enum LakeError {
    #[error("'{lake}' is not an FDL lake: it has no fdl.json")]
    NotALake { lake: String },
    #[error("lake '{lake}': {why}")]
    Config { lake: String, why: String },
    #[error("lake '{lake}': {source}")]
    Store { lake: String, source: StoreError },
    #[error("lake '{lake}': ref {name}: {why}")]
    BadRef {
        lake: String,
        name: String,
        why: String,
    },
    #[error("lake '{lake}': {why}")]
    BadHead { lake: String, why: String },
    /// A store that cannot list (plain HTTP) shows its refs only through `refs.json`: without
    /// it, the refs are unknown, which is not the same as none (a `fetch --prune` would delete
    /// every remote-tracking branch).
    #[error(
        "lake '{lake}' has no refs.json, and this store cannot list refs/: its refs are unknown"
    )]
    NoRefsJson { lake: String },
    #[error("lake '{lake}': refs.json: {why}")]
    BadRefsJson { lake: String, why: String },
    #[error("lake '{lake}': version {version}: {why}")]
    BadVersion {
        lake: String,
        version: VersionId,
        why: String,
    },
    #[error("lake '{lake}': version {version}, named by {by}, does not exist (no versions/{version}/version.json)")]
    MissingVersion {
        lake: String,
        version: VersionId,
        by: String,
    },
    #[error("lake '{lake}': the parents of version {version} lead back to itself (a cycle)")]
    Cycle { lake: String, version: VersionId },
}

impl LakeError {
    /// What the user can do about it, Git-style (`hint:` lines).
    pub fn hint(&self) -> Option<&'static str> {
        match self {
            LakeError::NotALake { .. } => Some(
                "check the address: it must name the folder that holds fdl.json, HEAD and refs/",
            ),
            LakeError::Config { .. } => {
                Some("upgrade git-remote-fdl, or ask the lake's owner which FDL version it uses")
            }
            LakeError::BadRef { .. } | LakeError::BadHead { .. } => {
                Some("a writer left this file broken; fix or remove it in the lake")
            }
            LakeError::NoRefsJson { .. } | LakeError::BadRefsJson { .. } => Some(
                "over plain HTTP the refs are read from refs.json, which any push to the lake \
                 rewrites; or read the lake through its store address (s3://, gs://, az:// or a \
                 folder), which lists refs/",
            ),
            LakeError::MissingVersion { .. }
            | LakeError::BadVersion { .. }
            | LakeError::Cycle { .. } => {
                Some("the lake's history is damaged here; ask its owner to repair it")
            }
            LakeError::Store { .. } => None,
        }
    }
}

/// An opened lake; clones share the store and the warnings.
#[derive(Debug, Clone)]
pub struct Lake {
    pub store: Store,
    pub config: FdlConfig,
    warnings: Arc<Mutex<Vec<String>>>,
}

impl Lake {
    /// Opens a lake: reads and checks `fdl.json`.
    pub async fn open(store: Store) -> Result<Lake, LakeError> {
        let lake = store.url().to_string();
        let raw = store
            .get("fdl.json", SMALL_FILE_LIMIT)
            .await
            .map_err(|source| LakeError::Store {
                lake: lake.clone(),
                source,
            })?
            .ok_or_else(|| LakeError::NotALake { lake: lake.clone() })?;
        let config = FdlConfig::parse(&raw).map_err(|why| LakeError::Config { lake, why })?;
        Ok(Lake {
            store,
            config,
            warnings: Default::default(),
        })
    }

    pub fn name(&self) -> String {
        self.store.url().to_string()
    }

    fn store_err(&self, source: StoreError) -> LakeError {
        LakeError::Store {
            lake: self.name(),
            source,
        }
    }

    fn warn(&self, msg: String) {
        self.warnings.lock().expect("warnings lock").push(msg);
    }

    /// Warnings gathered so far, for the caller to show.
    pub fn take_warnings(&self) -> Vec<String> {
        std::mem::take(&mut *self.warnings.lock().expect("warnings lock"))
    }

    /// The branch `HEAD` names. A lake without `HEAD` is read as if it said `refs/heads/main`.
    pub async fn head(&self) -> Result<String, LakeError> {
        match self
            .store
            .get("HEAD", SMALL_FILE_LIMIT)
            .await
            .map_err(|e| self.store_err(e))?
        {
            None => Ok("refs/heads/main".to_string()),
            Some(raw) => files::parse_head(&raw).map_err(|why| LakeError::BadHead {
                lake: self.name(),
                why,
            }),
        }
    }

    /// Every branch and tag with the version it holds, sorted by name. Read from the ref files
    /// where the store lists, else from `refs.json`. `refs/requests/` and other refs are skipped.
    pub async fn refs(&self) -> Result<Vec<(String, VersionId)>, LakeError> {
        let mut out = if self.store.can_list() {
            self.refs_from_files().await?
        } else {
            self.refs_from_json().await?
        };
        out.sort();
        Ok(out)
    }

    async fn refs_from_files(&self) -> Result<Vec<(String, VersionId)>, LakeError> {
        Ok(self
            .refs_versioned()
            .await?
            .into_iter()
            .map(|(n, v, _)| (n, v))
            .collect())
    }

    /// Every branch and tag from the ref files, with each file's version token (for pushes).
    pub async fn refs_versioned(&self) -> Result<Vec<(String, VersionId, Token)>, LakeError> {
        let listed = match self.store.list("refs/").await {
            Ok(f) => f,
            // A stray key elsewhere under refs/ (the host's requests, say) must not hide the
            // branches and tags: list those two folders on their own.
            Err(StoreError::InvalidKey { .. }) => {
                let (heads, tags) = futures::join!(
                    self.store.list("refs/heads/"),
                    self.store.list("refs/tags/")
                );
                let mut all = heads.map_err(|e| self.store_err(e))?;
                let tags = tags.map_err(|e| self.store_err(e))?;
                all.files.extend(tags.files);
                all.skipped.extend(tags.skipped);
                all
            }
            Err(e) => return Err(self.store_err(e)),
        };
        let is_ref = |f: &str| f.starts_with("refs/heads/") || f.starts_with("refs/tags/");
        // A writer's lock or temporary file: never a ref, not worth a warning.
        let is_scratch = |f: &str| {
            let last = f.rsplit('/').next().unwrap_or("");
            last.ends_with(".lock") || last.starts_with('.')
        };
        for (path, why) in &listed.skipped {
            if is_ref(path) && !is_scratch(path) {
                self.warn(format!(
                    "lake '{}': ignoring {}: {why}",
                    self.name(),
                    printable(path)
                ));
            }
        }
        let mut names = Vec::new();
        for f in listed.files {
            if !is_ref(&f) || is_scratch(&f) {
                continue;
            }
            match check_ref_name(&f) {
                Ok(()) => names.push(f),
                Err(why) => self.warn(format!(
                    "lake '{}': ignoring {}: {why}",
                    self.name(),
                    printable(&f)
                )),
            }
        }
        let mut out: Vec<(String, VersionId, Token)> = futures::stream::iter(names)
            .map(|name| async move {
                let got = self
                    .store
                    .get_versioned(&name, SMALL_FILE_LIMIT)
                    .await
                    .map_err(|e| self.store_err(e))?;
                // Deleted between the listing and the read: it is gone, as a racing reader sees it.
                let Some(got) = got else { return Ok(None) };
                let id = files::parse_ref_value(&got.bytes).map_err(|why| LakeError::BadRef {
                    lake: self.name(),
                    name: name.clone(),
                    why,
                })?;
                Ok(Some((name, id, got.token)))
            })
            .buffer_unordered(CONCURRENCY)
            .try_filter_map(|x| async move { Ok(x) })
            .try_collect()
            .await?;
        out.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(out)
    }

    async fn refs_from_json(&self) -> Result<Vec<(String, VersionId)>, LakeError> {
        let raw = self
            .store
            .get("refs.json", REFS_JSON_LIMIT)
            .await
            .map_err(|e| LakeError::BadRefsJson {
                lake: self.name(),
                why: match e {
                    StoreError::Failed { message, .. } => format!("cannot be read: {message}"),
                    other => format!("cannot be read: {other}"),
                },
            })?;
        let Some(raw) = raw else {
            return Err(LakeError::NoRefsJson { lake: self.name() });
        };
        let pairs = files::parse_refs_json(&raw).map_err(|why| LakeError::BadRefsJson {
            lake: self.name(),
            why,
        })?;
        let mut out = Vec::new();
        for (name, value) in pairs {
            if !(name.starts_with("refs/heads/") || name.starts_with("refs/tags/")) {
                continue;
            }
            if let Err(why) = check_ref_name(&name) {
                self.warn(format!(
                    "lake '{}': refs.json: ignoring {}: {why}",
                    self.name(),
                    printable(&name)
                ));
                continue;
            }
            let id = VersionId::parse(value.trim()).map_err(|why| LakeError::BadRef {
                lake: self.name(),
                name: format!("{name} (in refs.json)"),
                why,
            })?;
            out.push((name, id));
        }
        Ok(out)
    }

    /// `refs.json` as it is now, with its version token; `None` if there is none.
    pub async fn refs_json_versioned(&self) -> Result<Option<Versioned>, LakeError> {
        self.store
            .get_versioned("refs.json", REFS_JSON_LIMIT)
            .await
            .map_err(|e| self.store_err(e))
    }

    /// Writes the ref file `name` (a full ref name, which is its path) to hold `version`, on
    /// condition; returns the file's new token.
    pub async fn write_ref(
        &self,
        name: &str,
        version: &VersionId,
        mode: &WriteMode,
    ) -> Result<Token, WriteError> {
        let bytes = Bytes::from(files::render_ref_value(version));
        self.store.put(name, bytes, mode).await
    }

    /// Deletes the ref file `name` if it is still at `expected`.
    pub async fn delete_ref(&self, name: &str, expected: &Token) -> Result<(), WriteError> {
        self.store.delete(name, expected).await
    }

    /// One ref file as it is now: `None` if there is none; else its version (`None` if the file
    /// holds no version ID) and its token.
    pub async fn read_ref(
        &self,
        name: &str,
    ) -> Result<Option<(Option<VersionId>, Token)>, StoreError> {
        let got = self.store.get_versioned(name, SMALL_FILE_LIMIT).await?;
        Ok(got.map(|v| (files::parse_ref_value(&v.bytes).ok(), v.token)))
    }

    /// Writes `refs.json` on condition.
    pub async fn write_refs_json(
        &self,
        bytes: Bytes,
        mode: &WriteMode,
    ) -> Result<Token, WriteError> {
        self.store.put("refs.json", bytes, mode).await
    }

    /// The IDs of every folder under `versions/` (complete or not). Folders whose names are not
    /// version IDs are ignored.
    pub async fn version_ids(&self) -> Result<Vec<VersionId>, LakeError> {
        let dirs = self
            .store
            .list_dirs("versions/")
            .await
            .map_err(|e| self.store_err(e))?;
        Ok(dirs
            .iter()
            .filter_map(|d| VersionId::parse(d).ok().filter(|v| v.as_str() == d))
            .collect())
    }
}
