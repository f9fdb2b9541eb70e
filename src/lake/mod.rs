//! The FDL layout on top of a store: `fdl.json`, `HEAD`, refs (listed or from `refs.json`) and
//! version records, each read with a size limit and validated before use.

pub mod catalog;
mod etags;
pub mod files;
pub mod names;
pub mod record;

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};

pub use files::FdlConfig;
pub use names::{check_ref_name, check_writable_ref, printable, VersionId};
pub use record::VersionRecord;

use std::collections::HashMap;

use crate::store::{Listed, Store, StoreError, Token, Versioned, WriteError, WriteMode};

/// Size limits: a hostile lake cannot make the helper read a huge file.
pub const SMALL_FILE_LIMIT: u64 = 1 << 20;
pub const REFS_JSON_LIMIT: u64 = 64 << 20;
pub const VERSION_JSON_LIMIT: u64 = 16 << 20;
pub const DATASET_JSON_LIMIT: u64 = 64 << 20;
/// Names a listing is split at: one range per this many names remembered, fewer than a
/// page holds (1000), so that each range takes one request even after some refs are added.
const LIST_SPLIT: usize = 900;

/// Refs (name, version and file token, sorted by name) and what to remember of their files:
/// `name -> (etag, version)`, `None` when that is what was remembered already.
pub type RefsSeen = (
    Vec<(String, VersionId, Token)>,
    Option<HashMap<String, (String, VersionId)>>,
);

/// A signature file larger than this is not read.
pub const SIGNATURE_LIMIT: u64 = 64 << 10;

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
            LakeError::Config { why, .. } if files::is_unknown_major(why) => {
                Some("upgrade git-remote-fdl, or ask the lake's owner which FDL version it uses")
            }
            LakeError::Config { .. } => Some(
                "fdl.json must be a JSON object with an \"fdl\" version; ask the lake's owner to repair it",
            ),
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

/// A writer's lock or temporary file: never a ref, not worth a warning.
fn is_writer_file(path: &str) -> bool {
    let last = path.rsplit('/').next().unwrap_or("");
    last.ends_with(".lock") || last.starts_with('.')
}

/// Refs a reader keeps, and those it leaves out, each with the kept ref in its way.
pub type Kept<T> = (Vec<(String, T)>, Vec<(String, String)>);

/// Git cannot hold a ref and refs below it (`a` and `a/b`), which an object store can. Of
/// refs sorted by name, keeps each one no kept ref is a folder of; returns the others, each
/// with the kept ref in its way.
pub fn without_conflicts<T>(refs: Vec<(String, T)>) -> Kept<T> {
    let mut kept_names = std::collections::HashSet::new();
    let (mut kept, mut dropped) = (Vec::new(), Vec::new());
    for (name, value) in refs {
        let in_the_way = name
            .match_indices('/')
            .map(|(i, _)| &name[..i])
            .find(|folder| kept_names.contains(*folder))
            .map(str::to_string);
        match in_the_way {
            Some(other) => dropped.push((name, other)),
            None => {
                kept_names.insert(name.clone());
                kept.push((name, value));
            }
        }
    }
    (kept, dropped)
}

/// A version's two mapped files.
#[derive(Clone, Debug)]
pub struct VersionData {
    pub record: VersionRecord,
    pub dataset: Option<Bytes>,
    /// Whether `dataset.json` was read (`dataset` is `None` both when it is absent and when it
    /// was not read yet).
    pub dataset_read: bool,
}

/// A ref file read: its name, version and token; `None` if it is gone.
type RefRead = Option<(String, VersionId, Token)>;

/// An opened lake; clones share the store and the warnings.
#[derive(Debug, Clone)]
pub struct Lake {
    pub store: Store,
    pub config: FdlConfig,
    warnings: Arc<Mutex<Vec<String>>>,
    read_ahead: Arc<Mutex<ReadAhead>>,
    /// Ref files passed over because they hold no version (see [`Lake::broken_refs`]).
    broken: Arc<Mutex<std::collections::BTreeSet<String>>>,
    /// The ETags of `fdl.json` and `refs.json` as read on opening: a ref file listed with one
    /// of them is on a store whose ETags name no content (`etags.rs`).
    other_tags: Vec<String>,
}

/// Files read with `fdl.json`, each handed out once (a later read asks the store again).
#[derive(Debug, Default)]
struct ReadAhead {
    head: Option<Result<Option<Bytes>, StoreError>>,
    refs_json: Option<Result<Option<Versioned>, StoreError>>,
    /// The listing of `refs/heads/` and `refs/tags/`, made beside `fdl.json` by
    /// [`Lake::open_listing`].
    ref_listing: Option<Result<Listed, LakeError>>,
}

impl Lake {
    /// Opens a lake: reads and checks `fdl.json`.
    ///
    /// `HEAD` and `refs.json` are read alongside it: every listing needs `HEAD`, and a push (or
    /// a store that cannot list) `refs.json`, so neither costs a round trip of its own later.
    pub async fn open(store: Store) -> Result<Lake, LakeError> {
        Lake::open_with(store, None).await
    }

    /// Opens a lake and lists its refs in the same round trip, for a caller that lists them
    /// next (`git ls-remote`, fetch, push). The listing is split in ranges at `hints` (ref names
    /// seen before, sorted), so that many refs still take one round trip; it is handed out by
    /// the first ref listing, and thrown away if `fdl.json` says this is no lake.
    pub async fn open_listing(store: Store, hints: &[String]) -> Result<Lake, LakeError> {
        Lake::open_with(store, Some(hints)).await
    }

    async fn open_with(store: Store, hints: Option<&[String]>) -> Result<Lake, LakeError> {
        let lake = store.url().to_string();
        // A folder lists its refs in one cheap walk when asked; a store that cannot list
        // reads refs.json, which is read here anyway.
        let hints = hints.filter(|_| store.can_list() && !store.is_local());
        let listing = async {
            match hints {
                Some(hints) => Some(list_ref_folders(&store, hints).await),
                None => None,
            }
        };
        // The listing first: its ranges' answers take longest to parse.
        let (ref_listing, raw, head, refs_json) = futures::join!(
            listing,
            store.get_versioned("fdl.json", SMALL_FILE_LIMIT),
            store.get("HEAD", SMALL_FILE_LIMIT),
            store.get_versioned("refs.json", REFS_JSON_LIMIT)
        );
        let raw = raw
            .map_err(|source| LakeError::Store {
                lake: lake.clone(),
                source,
            })?
            .ok_or_else(|| LakeError::NotALake { lake: lake.clone() })?;
        let lake_name = lake.clone();
        let config = FdlConfig::parse(&raw.bytes).map_err(|why| LakeError::Config { lake, why })?;
        let refs_json_tag = refs_json.as_ref().ok().and_then(|r| r.as_ref());
        let other_tags = [Some(&raw), refs_json_tag]
            .into_iter()
            .flatten()
            .filter_map(|v| v.token.e_tag.clone())
            .filter(|t| etags::names_something(t))
            .collect();
        Ok(Lake {
            store,
            config,
            warnings: Default::default(),
            broken: Default::default(),
            other_tags,
            read_ahead: Arc::new(Mutex::new(ReadAhead {
                head: Some(head),
                refs_json: Some(refs_json),
                ref_listing: ref_listing.map(|l| {
                    l.map_err(|source| LakeError::Store {
                        lake: lake_name.clone(),
                        source,
                    })
                }),
            })),
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

    /// Warnings gathered so far, with what the store repaired, for the caller to show.
    pub fn take_warnings(&self) -> Vec<String> {
        let mut out = std::mem::take(&mut *self.warnings.lock().expect("warnings lock"));
        let name = self.name();
        out.extend(
            self.store
                .take_notes()
                .into_iter()
                .map(|n| format!("lake '{name}': {n}")),
        );
        out
    }

    /// The branch `HEAD` names. A lake without `HEAD` is read as if it said `refs/heads/main`.
    pub async fn head(&self) -> Result<String, LakeError> {
        let ahead = self.read_ahead.lock().expect("read-ahead lock").head.take();
        let raw = match ahead {
            Some(r) => r,
            None => self.store.get("HEAD", SMALL_FILE_LIMIT).await,
        };
        match raw.map_err(|e| self.store_err(e))? {
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
        let out = if self.store.can_list() {
            self.refs_from_files().await?
        } else {
            self.refs_from_json().await?
        };
        Ok(self.git_compatible(out))
    }

    /// Refs sorted by name, without those Git cannot hold beside another (`a` and `a/b`: the
    /// shortest is kept), each left out named in a warning.
    pub fn git_compatible<T>(&self, mut refs: Vec<(String, T)>) -> Vec<(String, T)> {
        refs.sort_by(|a, b| a.0.cmp(&b.0));
        let (kept, dropped) = without_conflicts(refs);
        for (name, kept_instead) in dropped {
            self.warn(format!(
                "lake '{}': {} and {} cannot both be refs in Git; showing {} only \
                 (remove one of them from the lake)",
                self.name(),
                printable(&kept_instead),
                printable(&name),
                printable(&kept_instead)
            ));
        }
        kept
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
        Ok(self.read_ref_files(&HashMap::new()).await?.0)
    }

    /// Every branch and tag, reading only the ref files whose ETag in the listing differs from
    /// what `known` remembers (`name -> (etag, version)`); returns the refs and what to
    /// remember next time. Stores that give no ETags read every ref file.
    pub async fn refs_remembered(
        &self,
        known: &HashMap<String, (String, VersionId)>,
    ) -> Result<RefsSeen, LakeError> {
        if !self.store.can_list() {
            let refs = self.refs().await?;
            let refs = refs.into_iter().map(|(n, v)| (n, v, Token::default()));
            return Ok((refs.collect(), Some(HashMap::new())));
        }
        self.read_ref_files(known).await
    }

    /// The ref files listed, each read unless `known` holds its listed ETag (a file deleted
    /// between the listing and its read is gone, as a racing reader sees it).
    async fn read_ref_files(
        &self,
        known: &HashMap<String, (String, VersionId)>,
    ) -> Result<RefsSeen, LakeError> {
        let (names, mut e_tags) = self.ref_names(known).await?;
        // ETags that name no content are no ETags: every ref file is read, none remembered.
        e_tags.retain(|_, t| etags::names_something(t));
        let trusted = etags::trusted(&e_tags, known, &self.other_tags);
        let nothing = HashMap::new();
        let known = if trusted { known } else { &nothing };
        // Refs unchanged since they were last read are taken as remembered, without a future
        // each: a lake of a thousand tags mostly holds those.
        let mut unchanged = Vec::with_capacity(names.len());
        let mut to_read = Vec::new();
        for name in names {
            let listed = e_tags.remove(&name);
            match (known.get(&name), listed) {
                (Some((tag, v)), Some(listed)) if *tag == listed => {
                    let token = Token {
                        e_tag: Some(listed),
                        version: None,
                    };
                    unchanged.push((name, v.clone(), token));
                }
                _ => to_read.push(name),
            }
        }
        // Each read is a task of its own: a thousand answers are handled on every worker, not
        // all on the one running this listing.
        let reads = to_read.into_iter().map(|name| {
            let lake = self.clone();
            let path = name.clone();
            let read = tokio::spawn(async move { lake.read_ref_file(name).await });
            async move {
                let read = read.await.unwrap_or_else(|e| {
                    Err(self.store_err(crate::store::stopped(&path, "read", e)))
                });
                self.pass_over_broken(read)
            }
        });
        let read: Vec<_> = futures::stream::iter(reads)
            .buffer_unordered(self.store.concurrency())
            .try_filter_map(|x| async move { Ok(x) })
            .try_collect()
            .await?;
        let none_read = read.is_empty();
        let mut refs = unchanged;
        refs.extend(read);
        refs.sort_by(|a, b| a.0.cmp(&b.0));
        // Every ref remembered, none changed (most listings), each listed once: nothing new
        // to remember.
        let as_known =
            none_read && refs.len() == known.len() && refs.windows(2).all(|w| w[0].0 < w[1].0);
        let remember = (!as_known).then(|| {
            let with_tags = refs.iter().filter_map(|(name, v, token)| {
                let tag = token.e_tag.clone().filter(|t| etags::names_something(t))?;
                Some((name.clone(), (tag, v.clone())))
            });
            let remember: HashMap<String, (String, VersionId)> = with_tags.collect();
            let each = etags::one_version_each(remember.values().map(|(t, v)| (t, v)));
            match trusted && each {
                true => remember,
                false => HashMap::new(),
            }
        });
        Ok((refs, remember))
    }

    /// A ref file that holds no version (garbage, or more than a ref file can be) is passed
    /// over with a warning, as Git passes over a broken ref: one bad file does not stop every
    /// reader and pusher of the lake. Its name is remembered ([`Lake::broken_refs`]).
    fn pass_over_broken(&self, read: Result<RefRead, LakeError>) -> Result<RefRead, LakeError> {
        let (name, why) = match read {
            Err(LakeError::BadRef { name, why, .. }) => (name, why),
            Err(LakeError::Store {
                source: StoreError::TooLarge { path, limit },
                ..
            }) => (
                path,
                format!("larger than the {limit}-byte limit for a ref file"),
            ),
            other => return other,
        };
        // Once a session: refs.json's retries list the refs again.
        let first = self
            .broken
            .lock()
            .expect("broken lock")
            .insert(name.clone());
        if first {
            self.warn(format!(
                "lake '{}': ignoring broken ref {}: {why}",
                self.name(),
                printable(&name)
            ));
        }
        Ok(None)
    }

    /// The ref files passed over so far because they hold no version, sorted.
    pub fn broken_refs(&self) -> Vec<String> {
        let broken = self.broken.lock().expect("broken lock");
        broken.iter().cloned().collect()
    }

    /// One ref file's version and token; `None` if it is gone.
    async fn read_ref_file(&self, name: String) -> Result<RefRead, LakeError> {
        let got = self
            .store
            .get_versioned(&name, SMALL_FILE_LIMIT)
            .await
            .map_err(|e| self.store_err(e))?;
        let Some(got) = got else { return Ok(None) };
        let id = files::parse_ref_value(&got.bytes).map_err(|why| LakeError::BadRef {
            lake: self.name(),
            name: name.clone(),
            why,
        })?;
        Ok(Some((name, id, got.token)))
    }

    /// The names of the ref files under `refs/heads/` and `refs/tags/`, with their ETags;
    /// warns about entries passed over. Both folders are listed side by side, each in ranges
    /// split at the names `known` holds, so that many refs cost one round trip.
    async fn ref_names(
        &self,
        known: &HashMap<String, (String, VersionId)>,
    ) -> Result<(Vec<String>, HashMap<String, String>), LakeError> {
        let ahead = self
            .read_ahead
            .lock()
            .expect("read-ahead lock")
            .ref_listing
            .take();
        let listed = match ahead {
            Some(listed) => listed?,
            // One walk of a folder is cheap, and sees a symlinked refs/heads or refs/tags as an
            // entry to name in a warning rather than a path to refuse.
            None if self.store.is_local() => self
                .store
                .list("refs/")
                .await
                .map_err(|e| self.store_err(e))?,
            None => {
                let mut sorted: Vec<String> = known.keys().cloned().collect();
                sorted.sort();
                list_ref_folders(&self.store, &sorted)
                    .await
                    .map_err(|e| self.store_err(e))?
            }
        };
        let is_ref = |f: &str| f.starts_with("refs/heads/") || f.starts_with("refs/tags/");
        for (path, why) in &listed.skipped {
            if is_ref(path) && !is_writer_file(path) {
                self.warn(format!(
                    "lake '{}': ignoring {}: {why}",
                    self.name(),
                    printable(path)
                ));
            }
        }
        let mut names = Vec::new();
        for f in listed.files {
            if !is_ref(&f) || is_writer_file(&f) {
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
        Ok((names, listed.e_tags))
    }

    async fn refs_from_json(&self) -> Result<Vec<(String, VersionId)>, LakeError> {
        let raw = self
            .refs_json_raw()
            .await
            .map(|v| v.map(|v| v.bytes))
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
                why: why.to_string(),
            })?;
            out.push((name, id));
        }
        Ok(out)
    }

    /// `refs.json` as it is now, with its version token; `None` if there is none.
    pub async fn refs_json_versioned(&self) -> Result<Option<Versioned>, LakeError> {
        self.refs_json_raw().await.map_err(|e| self.store_err(e))
    }

    /// Whether the refs were listed beside `fdl.json` ([`Lake::open_listing`]) and not handed
    /// out yet.
    pub fn has_ref_listing_ahead(&self) -> bool {
        let ahead = self.read_ahead.lock().expect("read-ahead lock");
        ahead.ref_listing.is_some()
    }

    /// The newest version `refs.json` (as read with `fdl.json`) names: a guess at the newest
    /// tip before the ref files are read, for splitting a listing of `versions/`.
    pub fn newest_in_refs_json(&self) -> Option<VersionId> {
        let ahead = self.read_ahead.lock().expect("read-ahead lock");
        let Some(Ok(Some(raw))) = &ahead.refs_json else {
            return None;
        };
        let refs = files::parse_refs_json(&raw.bytes).ok()?;
        refs.iter()
            .filter_map(|(_, v)| VersionId::parse(v).ok())
            .max()
    }

    /// Lets go of `refs.json` read with `fdl.json`, when no push will use it.
    pub fn forget_read_ahead(&self) {
        self.read_ahead.lock().expect("read-ahead lock").refs_json = None;
    }

    /// `refs.json` as read with `fdl.json` the first time, from the store afterwards.
    async fn refs_json_raw(&self) -> Result<Option<Versioned>, StoreError> {
        let ahead = self
            .read_ahead
            .lock()
            .expect("read-ahead lock")
            .refs_json
            .take();
        match ahead {
            Some(r) => r,
            None => self.store.get_versioned("refs.json", REFS_JSON_LIMIT).await,
        }
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

    /// A ref that cannot exist beside `name` in a Git repository, the first found: a ref named
    /// like one of `name`'s folders (`refs/heads/a` for `refs/heads/a/b`), or one below
    /// `name/`. Object stores hold both; a folder lake cannot.
    pub async fn conflicting_ref(&self, name: &str) -> Result<Option<String>, StoreError> {
        let parts: Vec<&str> = name.split('/').collect();
        // refs/heads/<folder>/...: the folders below refs/heads/ and refs/tags/.
        let folders: Vec<String> = (3..parts.len()).map(|i| parts[..i].join("/")).collect();
        let found: Vec<bool> = futures::stream::iter(&folders)
            .map(|f| self.store.is_file(f))
            .buffered(self.store.concurrency())
            .try_collect()
            .await?;
        if let Some(i) = found.iter().position(|f| *f) {
            return Ok(Some(folders[i].clone()));
        }
        let below = self.store.list(&format!("{name}/")).await?;
        Ok(below
            .files
            .into_iter()
            .find(|f| !is_writer_file(f) && check_ref_name(f).is_ok()))
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

    /// Reads a version's record and `dataset.json` concurrently. `None` if it has no record.
    pub async fn read_version(&self, id: &VersionId) -> Result<Option<VersionData>, LakeError> {
        self.read_version_with(id, true).await
    }

    /// Reads a version's record, and its `dataset.json` too if `with_dataset`.
    pub async fn read_version_with(
        &self,
        id: &VersionId,
        with_dataset: bool,
    ) -> Result<Option<VersionData>, LakeError> {
        let record_path = format!("versions/{id}/version.json");
        let (record, dataset) =
            futures::join!(self.store.get(&record_path, VERSION_JSON_LIMIT), async {
                match with_dataset {
                    true => self.read_dataset(id).await,
                    false => Ok(None),
                }
            });
        let Some(raw) = record.map_err(|e| self.store_err(e))? else {
            return Ok(None);
        };
        let dataset = dataset?;
        let record = VersionRecord::parse(raw).map_err(|why| LakeError::BadVersion {
            lake: self.name(),
            version: id.clone(),
            why: why.to_string(),
        })?;
        Ok(Some(VersionData {
            record,
            dataset,
            dataset_read: with_dataset,
        }))
    }

    /// A version's `dataset.json`, if it has one.
    pub async fn read_dataset(&self, id: &VersionId) -> Result<Option<Bytes>, LakeError> {
        self.store
            .get(&format!("versions/{id}/dataset.json"), DATASET_JSON_LIMIT)
            .await
            .map_err(|e| self.store_err(e))
    }

    /// The versions under `versions/` (after `after`, if given) that have a record, and for
    /// each whether it has a `dataset.json` (`None` where the store lists folders only). A
    /// cloud store is listed a first page, then, when there is more, in ranges side by side:
    /// version IDs are mostly time-ordered UUIDs, so the ranges split the IDs between the
    /// first page's last and `newest` evenly, as many as the first page's density suggests.
    pub async fn list_versions(
        &self,
        after: Option<&VersionId>,
        newest: Option<&VersionId>,
    ) -> Result<Vec<(VersionId, Option<bool>)>, LakeError> {
        if self.store.is_local() {
            let ids = self.version_ids().await?;
            return Ok(ids
                .into_iter()
                .filter(|v| after.is_none_or(|a| v > a))
                .map(|v| (v, None))
                .collect());
        }
        let start = after.map(|a| format!("versions/{a}"));
        let first = self
            .store
            .list_range("versions/", start.as_deref(), None, Some(LIST_PAGE), None)
            .await
            .map_err(|e| self.store_err(e))?;
        let mut found = VersionFiles::default();
        if !first.more {
            found.add(&first.files);
            return Ok(found.complete(after));
        }
        let ids: Vec<VersionId> = first
            .files
            .iter()
            .filter_map(|f| version_of_key(f))
            .collect();
        let mut bounds: Vec<Option<String>> = match (ids.first(), ids.last()) {
            (Some(first_id), Some(last_id)) => {
                // The first page's last version may be cut in two: the ranges list it again.
                found.add(
                    first
                        .files
                        .iter()
                        .filter(|f| version_of_key(f).as_ref() != Some(last_id)),
                );
                let splits = range_splits(first_id, last_id, newest, first.files.len());
                let mut b = vec![Some(format!("versions/{last_id}"))];
                b.extend(splits.into_iter().map(|s| Some(format!("versions/{s}"))));
                b
            }
            _ => vec![first.files.last().cloned()],
        };
        bounds.push(None);
        let ranges = bounds.windows(2).map(|w| {
            let (after, until) = (w[0].clone(), w[1].clone());
            async move {
                self.store
                    .list_range("versions/", after.as_deref(), until.as_deref(), None, None)
                    .await
            }
        });
        let parts = futures::future::try_join_all(ranges)
            .await
            .map_err(|e| self.store_err(e))?;
        for part in parts {
            found.add(&part.files);
        }
        Ok(found.complete(after))
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

/// Files seen in a listing of `versions/`, by version.
#[derive(Default)]
struct VersionFiles {
    /// Per version: has `version.json`, has `dataset.json`.
    seen: std::collections::BTreeMap<VersionId, (bool, bool)>,
}

impl VersionFiles {
    fn add<'a>(&mut self, keys: impl IntoIterator<Item = &'a String>) {
        for key in keys {
            let Some(id) = version_of_key(key) else {
                continue;
            };
            let file = key.rsplit('/').next().unwrap_or("");
            let depth = key.matches('/').count();
            let entry = self.seen.entry(id).or_default();
            match file {
                "version.json" if depth == 2 => entry.0 = true,
                "dataset.json" if depth == 2 => entry.1 = true,
                _ => {}
            }
        }
    }

    /// Versions with a record (others are being written), after `after`.
    fn complete(self, after: Option<&VersionId>) -> Vec<(VersionId, Option<bool>)> {
        self.seen
            .into_iter()
            .filter(|(v, (record, _))| *record && after.is_none_or(|a| v > a))
            .map(|(v, (_, dataset))| (v, Some(dataset)))
            .collect()
    }
}

/// The version a key below `versions/` belongs to, if its folder is named by a version ID.
fn version_of_key(key: &str) -> Option<VersionId> {
    let folder = key.strip_prefix("versions/")?.split('/').next()?;
    VersionId::parse(folder)
        .ok()
        .filter(|v| v.as_str() == folder)
}

/// The first 16 hex digits of a version ID as a number (a UUIDv7's time and a little more).
fn id_number(id: &VersionId) -> u64 {
    let hex: String = id.as_str().chars().filter(|c| *c != '-').take(16).collect();
    u64::from_str_radix(&hex, 16).unwrap_or(0)
}

/// How many ranges at most a listing is split into.
const MAX_RANGES: u64 = 64;

/// Files a cloud listing returns a request.
const LIST_PAGE: usize = 1000;

/// Split points (ID prefixes, sorted) for listing the rest of `versions/` after `last`: as
/// many ranges as pages the rest should take, judging by the density of the first page
/// (`files` files from `first` to `last`), up to `newest` (the last range is open-ended).
fn range_splits(
    first: &VersionId,
    last: &VersionId,
    newest: Option<&VersionId>,
    files: usize,
) -> Vec<String> {
    let (lo, hi) = (id_number(first), id_number(last));
    let Some(top) = newest.map(id_number).filter(|t| *t > hi) else {
        return Vec::new();
    };
    let span = (hi - lo).max(1) as u128;
    let rest = ((top - hi) as u128 * files as u128 / span) as u64;
    let ranges = rest.div_ceil(LIST_PAGE as u64 * 4 / 5).clamp(1, MAX_RANGES);
    (1..ranges)
        .map(|i| {
            let n = hi + ((top - hi) as u128 * i as u128 / ranges as u128) as u64;
            format!(
                "{:08x}-{:04x}-{:04x}",
                n >> 32,
                (n >> 16) & 0xffff,
                n & 0xffff
            )
        })
        .collect()
}

/// Lists `refs/heads/` and `refs/tags/` side by side, each in ranges split at the names
/// `sorted` holds (one range per [`LIST_SPLIT`] of them), so that many refs cost one round trip.
async fn list_ref_folders(store: &Store, sorted: &[String]) -> Result<Listed, StoreError> {
    let listing = |prefix: &'static str| {
        let names: Vec<&str> = sorted
            .iter()
            .filter(|n| n.starts_with(prefix))
            .map(|n| n.as_str())
            .collect();
        let splits = crate::store::even_splits(&names, LIST_SPLIT);
        // Each range holds about as many names as when they were last listed.
        let expected = names.len() / (splits.len() + 1);
        store.list_split(prefix, splits, expected)
    };
    let (heads, tags) = futures::join!(listing("refs/heads/"), listing("refs/tags/"));
    Ok(crate::store::joined(vec![heads?, tags?]))
}

#[cfg(test)]
mod tests {
    use super::without_conflicts;

    #[test]
    fn a_ref_and_refs_below_it_keep_the_shortest() {
        let refs: Vec<(String, u8)> = ["a", "a/b", "a/b/c", "ab", "b/c", "b/c/d", "b/e"]
            .iter()
            .map(|n| (format!("refs/heads/{n}"), 0))
            .collect();
        let (kept, dropped) = without_conflicts(refs);
        let kept: Vec<&str> = kept.iter().map(|(n, _)| &n[11..]).collect();
        assert_eq!(kept, ["a", "ab", "b/c", "b/e"]);
        assert_eq!(
            dropped,
            [
                ("refs/heads/a/b".to_string(), "refs/heads/a".to_string()),
                ("refs/heads/a/b/c".into(), "refs/heads/a".into()),
                ("refs/heads/b/c/d".into(), "refs/heads/b/c".into()),
            ]
        );
    }
}
