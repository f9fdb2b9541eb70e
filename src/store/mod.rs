//! Where a lake lives: opening a store from a URL and options, and the few operations the helper
//! needs from it (read with a size limit, list, and later conditional writes), each counted and
//! optionally traced.

pub mod access;
mod aws;
mod azure;
mod delete;
mod diagnose;
pub mod local;
pub mod local_write;
mod lock;
mod pages;
mod s3_list;
pub mod throttle;
pub mod url;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};
use object_store::path::Path as StorePath;
use object_store::{ObjectStore, ObjectStoreExt};

pub use self::url::StoreUrl;
use crate::redact::redact;
pub use local::Listed;
use local::LocalDir;
use local_write::{Expect, LocalWriteError};

/// What went wrong talking to a store. Messages name the path at fault (relative to the lake).
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{path}: larger than the {limit}-byte limit for this file")]
    TooLarge { path: String, limit: u64 },
    #[error("{path}: leads outside the lake's root (a symlink?)")]
    OutsideRoot { path: String },
    #[error("{}", at_path(path, message))]
    Failed { path: String, message: String },
    /// A request the store refused or could not make, in words, with what to do.
    #[error("{}", at_path(path, message))]
    Request {
        path: String,
        message: String,
        hint: Option<String>,
    },
    #[error("{path} exists: another writer holds this lock ({holder})")]
    Locked { path: String, holder: String },
    #[error("{path}: the store lists a key no lake path can be ({message})")]
    InvalidKey { path: String, message: String },
    #[error("{0}")]
    Config(String),
    /// A store that cannot be set up as configured, with the variable or key to change.
    #[error("{message}")]
    Setup {
        message: String,
        hint: Option<String>,
    },
    #[error("{path}: this store cannot write on condition: {message}")]
    NoConditionalWrites { path: String, message: String },
}

impl StoreError {
    /// What to do about it, Git-style.
    pub fn hint(&self) -> Option<String> {
        match self {
            StoreError::Locked { path, .. } => Some(format!(
                "if no push to this lake is running, remove the lock file and push again: rm '{path}'"
            )),
            StoreError::NoConditionalWrites { .. } => Some(
                "pushes need a store that writes on condition (S3, GCS, Azure, a local folder)".into(),
            ),
            StoreError::Request { hint, .. } | StoreError::Setup { hint, .. } => hint.clone(),
            _ => None,
        }
    }
}

/// A store's version of an object, for writing on condition.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Token {
    pub e_tag: Option<String>,
    pub version: Option<String>,
}

/// A file's content with its version token.
#[derive(Debug, Clone)]
pub struct Versioned {
    pub bytes: Bytes,
    pub token: Token,
}

/// The condition of a write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WriteMode {
    /// Only if nothing is there.
    Create,
    /// Only if the object is still at this version.
    Update(Token),
}

/// Why a conditional write did not happen.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// The condition failed: something was there (create) or it changed (update, delete).
    #[error("changed since it was read")]
    Conflict,
    /// The store refused the write and is sure nothing changed (a local folder always knows).
    #[error(transparent)]
    Refused(StoreError),
    /// The request failed: the write may or may not have happened.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Request counts, for benchmarks and `GIT_REMOTE_FDL_DEBUG`.
#[derive(Debug, Default)]
pub struct Stats {
    pub get: AtomicU64,
    pub list: AtomicU64,
    pub put: AtomicU64,
    pub delete: AtomicU64,
}

impl Stats {
    pub fn summary(&self) -> String {
        format!(
            "get={} list={} put={} delete={}",
            self.get.load(Ordering::Relaxed),
            self.list.load(Ordering::Relaxed),
            self.put.load(Ordering::Relaxed),
            self.delete.load(Ordering::Relaxed)
        )
    }
}

#[derive(Debug, Clone)]
enum Backend {
    Remote(Arc<dyn ObjectStore>, StorePath),
    Local(LocalDir),
}

/// An opened store, rooted at the lake's root.
#[derive(Debug, Clone)]
pub struct Store {
    backend: Backend,
    /// How a cloud store deletes on condition.
    deleter: Option<delete::Deleter>,
    /// How a cloud store lists a bounded range in pages of about its size.
    pages: Option<pages::Pages>,
    url: StoreUrl,
    /// The remote's store options, for [`Store::data_access`].
    options: Vec<(String, String)>,
    pub stats: Arc<Stats>,
    trace: bool,
    budget: Budget,
    concurrency: usize,
    gate: Arc<throttle::Gate>,
}

/// A range of a listing: see [`Store::list_range`].
struct Range<'a> {
    after: Option<&'a str>,
    until: Option<&'a str>,
    max: Option<usize>,
    expected: Option<usize>,
}

/// The store option (`remote.<name>.fdlConcurrency` in Git's configuration) that sets how many
/// requests are in flight at once.
pub const CONCURRENCY_OPTION: &str = "fdl_concurrency";

/// Requests in flight at once on a cloud store unless configured: a round trip there costs
/// tens of milliseconds, so only many at once make reading thousands of files quick.
pub const DEFAULT_CONCURRENCY: usize = 256;

/// Reads in flight at once in a local folder (they are synchronous: this only spreads them).
const LOCAL_CONCURRENCY: usize = 48;

/// The most requests a configuration may put in flight.
pub const MAX_CONCURRENCY: usize = 4096;

/// The bytes of files read and not yet let go, across every read of a store: a fixed budget,
/// whatever the number and size of the files (docs/git-remote-fdl.md, LIMITS).
pub const MEMORY_BUDGET: u32 = 128 << 20;

/// A semaphore counting bytes: a read waits until its file's size fits in what is left.
#[derive(Debug, Clone)]
pub struct Budget {
    bytes: Arc<tokio::sync::Semaphore>,
    total: u32,
}

impl Budget {
    pub fn new(total: u32) -> Budget {
        Budget {
            bytes: Arc::new(tokio::sync::Semaphore::new(total as usize)),
            total,
        }
    }

    /// Waits for room for `size` bytes (a file larger than the whole budget takes all of it).
    pub async fn reserve(&self, size: u64) -> tokio::sync::OwnedSemaphorePermit {
        let n = size.min(u64::from(self.total)) as u32;
        self.bytes
            .clone()
            .acquire_many_owned(n)
            .await
            .expect("the budget's semaphore is never closed")
    }
}

/// A file's bytes with their share of the budget, given back when this is dropped.
pub struct Held {
    pub bytes: Bytes,
    _room: tokio::sync::OwnedSemaphorePermit,
}

/// The longest key S3, GCS and Azure all accept, in bytes: a longer write is refused before
/// it is sent, so that its refusal is definite.
const MAX_KEY: usize = 1024;

/// How many objects a listing page holds on the cloud stores (S3, GCS and Azure alike).
const LIST_PAGE: u64 = 1000;

impl Store {
    /// Opens the store a URL names, with object_store configuration `options` (`key`, `value`)
    /// added to what the environment gives.
    pub fn open(url: &StoreUrl, options: &[(String, String)]) -> Result<Store, StoreError> {
        let (own, options): (Vec<_>, Vec<_>) = options
            .iter()
            .cloned()
            .partition(|(k, _)| k == CONCURRENCY_OPTION);
        let concurrency = concurrency_of(url, &own)?.min(throttle::open_files_room());
        let (backend, deleter, pages) = match url {
            // A folder uses no store option, but one no store knows is a typo all the same.
            StoreUrl::Local(path) => {
                if let Some((k, _)) = options.iter().find(|(k, _)| !url::is_known_option(k)) {
                    return Err(StoreError::Config(format!(
                        "unknown store option '{k}' (a folder lake uses none)"
                    )));
                }
                (Backend::Local(LocalDir::open(path)?), None, None)
            }
            _ => {
                let (store, prefix, deleter, pages) = url::build_remote(url, &options)?;
                (Backend::Remote(store, prefix), deleter, pages)
            }
        };
        Ok(Store {
            backend,
            deleter,
            pages,
            url: url.clone(),
            options,
            stats: Arc::new(Stats::default()),
            trace: crate::trace::enabled(),
            budget: Budget::new(MEMORY_BUDGET),
            concurrency,
            gate: Arc::new(throttle::Gate::new(concurrency)),
        })
    }

    /// How many requests to keep in flight at once.
    pub fn concurrency(&self) -> usize {
        self.concurrency
    }

    pub fn url(&self) -> &StoreUrl {
        &self.url
    }

    /// What another program needs to read this store's files as the helper does.
    pub fn data_access(&self) -> access::DataAccess {
        access::describe(&self.url, &self.options)
    }

    /// A folder on this machine: requests cost microseconds, not round trips.
    pub fn is_local(&self) -> bool {
        matches!(self.backend, Backend::Local(_))
    }

    /// Whether a write on condition can name an object's version by the ETag a listing gives
    /// (S3 and Azure compare ETags; GCS compares generations, which listings do not give).
    pub fn etag_conditions(&self) -> bool {
        matches!(self.url, StoreUrl::S3(_) | StoreUrl::Azure(_))
    }

    /// Plain HTTP cannot list: readers use `refs.json` there.
    pub fn can_list(&self) -> bool {
        !matches!(self.url, StoreUrl::Http(_))
    }

    /// Whether a file and a folder of the same name cannot both exist (a local folder): the
    /// store itself then refuses `refs/heads/a` beside `refs/heads/a/b`. Object stores allow it.
    pub fn paths_are_folders(&self) -> bool {
        matches!(self.backend, Backend::Local(_))
    }

    /// Stored notes about what the store repaired on its own (a stale lock it removed).
    pub fn take_notes(&self) -> Vec<String> {
        match &self.backend {
            Backend::Local(dir) => dir.take_notes(),
            Backend::Remote(..) => Vec::new(),
        }
    }

    /// Whether `rel` is a file (a folder or nothing is not).
    pub async fn is_file(&self, rel: &str) -> Result<bool, StoreError> {
        check_rel(rel)?;
        self.stats.get.fetch_add(1, Ordering::Relaxed);
        let result = match &self.backend {
            Backend::Local(dir) => dir.is_file(rel),
            Backend::Remote(store, prefix) => {
                let path = Self::remote_path(prefix, rel)?;
                match store.head(&path).await {
                    Ok(_) => Ok(true),
                    Err(object_store::Error::NotFound { .. }) => Ok(false),
                    Err(e) => Err(failed(rel, e)),
                }
            }
        };
        self.log(format_args!("HEAD {rel} -> {result:?}"));
        result
    }

    fn log(&self, what: std::fmt::Arguments) {
        if self.trace {
            crate::trace::line(&format!("store: {what}"));
        }
    }

    /// The key of `rel` below the root, taken as it is (not percent-encoded), exactly as a
    /// listing returns keys: a ref named `a#b` or `café` is the key `.../a#b`, `.../café`.
    fn remote_path(prefix: &StorePath, rel: &str) -> Result<StorePath, StoreError> {
        let rel = rel.trim_end_matches('/');
        let raw = match (prefix.as_ref(), rel) {
            (p, "") => p.to_string(),
            ("", r) => r.to_string(),
            (p, r) => format!("{p}/{r}"),
        };
        StorePath::parse(&raw).map_err(|e| StoreError::Failed {
            path: rel.to_string(),
            message: format!("not a valid key: {e}"),
        })
    }

    /// Reads a whole file, `None` when there is none; refuses files over `limit` bytes.
    pub async fn get(&self, rel: &str, limit: u64) -> Result<Option<Bytes>, StoreError> {
        Ok(self.get_held(rel, limit).await?.map(|h| h.bytes))
    }

    /// Like [`Store::get`], holding the file's size in the memory budget until the result is
    /// dropped: the read waits for room before it reads the file's content.
    pub async fn get_held(&self, rel: &str, limit: u64) -> Result<Option<Held>, StoreError> {
        check_rel(rel)?;
        self.stats.get.fetch_add(1, Ordering::Relaxed);
        let too_large = || StoreError::TooLarge {
            path: rel.to_string(),
            limit,
        };
        let result = match &self.backend {
            // A local read takes microseconds: handing it to a blocking thread would cost more.
            Backend::Local(dir) => match dir.open_for_read(rel)? {
                None => Ok(None),
                Some(f) if f.len() > limit => Err(too_large()),
                Some(f) => {
                    let room = self.budget.reserve(f.len()).await;
                    f.read_all(rel, limit).map(|bytes| {
                        Some(Held {
                            bytes: Bytes::from(bytes),
                            _room: room,
                        })
                    })
                }
            },
            Backend::Remote(store, prefix) => {
                let path = Self::remote_path(prefix, rel)?;
                self.remote_get(store, &path, rel, limit)
                    .await
                    .map(|got| got.map(|(bytes, _, room)| Held { bytes, _room: room }))
            }
        };
        match &result {
            Ok(Some(h)) => self.log(format_args!("GET {rel} -> {} bytes", h.bytes.len())),
            Ok(None) => self.log(format_args!("GET {rel} -> not found")),
            Err(e) => self.log(format_args!("GET {rel} -> error: {e}")),
        }
        result
    }

    /// A GET on a cloud store: within the requests in flight the store allows (tried again,
    /// after a pause, when it throttles) and the memory budget; the content, its token, and
    /// its share of the budget.
    async fn remote_get(
        &self,
        store: &Arc<dyn ObjectStore>,
        path: &StorePath,
        rel: &str,
        limit: u64,
    ) -> Result<Option<(Bytes, Token, tokio::sync::OwnedSemaphorePermit)>, StoreError> {
        let mut attempt = 0;
        let mut backoff = throttle::backoff();
        loop {
            let pass = self.gate.enter().await;
            let res = match store.get(path).await {
                Err(e) if self.is_absent(&e) => return Ok(None),
                Err(e) if throttle::is_throttling(&e) && attempt < throttle::THROTTLE_RETRIES => {
                    pass.throttled();
                    self.log(format_args!("GET {rel} -> throttled, trying again"));
                    backoff.wait().await;
                    attempt += 1;
                    continue;
                }
                Err(e) => return Err(self.request_failed(rel, &e)),
                Ok(res) => res,
            };
            if res.meta.size > limit {
                return Err(StoreError::TooLarge {
                    path: rel.to_string(),
                    limit,
                });
            }
            let token = Token {
                e_tag: res.meta.e_tag.clone(),
                version: res.meta.version.clone(),
            };
            let room = self.budget.reserve(res.meta.size).await;
            let size = res.meta.size;
            let bytes = self
                .read_limited(rel, res.into_stream(), size, limit)
                .await?;
            pass.succeeded();
            return Ok(Some((bytes, token, room)));
        }
    }

    /// Every file below the folder `prefix` (ending in `/`), relative to the root, and the
    /// entries a local folder passed over (FIFOs, symlinks leading out, names not UTF-8).
    pub async fn list(&self, prefix: &str) -> Result<Listed, StoreError> {
        self.list_range(prefix, None, None, None, None).await
    }

    /// The files below `prefix` whose paths are after `after` and up to `until` included
    /// (relative paths, compared as strings), in order, at most `max` of them (then `more` is set: the
    /// rest is to be listed after the last one). A cloud store lists a page of 1000 files a
    /// request, so ranges listed side by side cost one round trip for many pages. `expected`:
    /// about how many files the range holds, so that a cloud store is asked for a little more
    /// than that a request rather than for a page going past `until`.
    pub async fn list_range(
        &self,
        prefix: &str,
        after: Option<&str>,
        until: Option<&str>,
        max: Option<usize>,
        expected: Option<usize>,
    ) -> Result<Listed, StoreError> {
        check_rel(prefix)?;
        let in_range = |f: &str| after.is_none_or(|a| f > a) && until.is_none_or(|u| f <= u);
        let out = match &self.backend {
            Backend::Local(dir) => {
                self.stats.list.fetch_add(1, Ordering::Relaxed);
                let dir = dir.clone();
                let p = prefix.to_string();
                let mut listed = tokio::task::spawn_blocking(move || dir.list(&p))
                    .await
                    .map_err(|e| failed(prefix, e))??;
                listed.files.retain(|f| in_range(f));
                listed
            }
            Backend::Remote(store, root) => {
                let range = Range {
                    after,
                    until,
                    max,
                    expected,
                };
                self.list_remote(store, root, prefix, range).await?
            }
        };
        self.log(format_args!(
            "LIST {prefix} ({after:?}..={until:?}) -> {} files{}",
            out.files.len(),
            if out.more { ", more" } else { "" }
        ));
        Ok(out)
    }

    async fn list_remote(
        &self,
        store: &Arc<dyn ObjectStore>,
        root: &StorePath,
        prefix: &str,
        range: Range<'_>,
    ) -> Result<Listed, StoreError> {
        let Range {
            after,
            until,
            max,
            expected,
        } = range;
        let path = Self::remote_path(root, prefix)?;
        let offset = after.map(|a| Self::remote_path(root, a)).transpose()?;
        // A range that ends before the listing does, of about known size: pages of a quarter
        // more than that (a page of the store's size would mostly be past its end).
        let page = expected
            .filter(|_| until.is_some())
            .map(|e| (e + e / 4 + 16).min(LIST_PAGE as usize));
        // Pages read without object_store's parser are worth it for a listing of any size.
        let page = page.or_else(|| {
            let fast = self.pages.as_ref().is_some_and(|p| p.is_fast());
            fast.then_some(LIST_PAGE as usize)
        });
        let requests = Arc::new(AtomicU64::new(0));
        let mut listing = self.listing(store, &path, offset.as_ref(), page, &requests);
        let mut out = Listed::default();
        let mut seen = 0u64;
        while let Some(item) = listing.next().await {
            let (location, e_tag) = match item {
                Ok(m) => m,
                // A key no lake path can be (an empty segment, a control character) spoils
                // the whole page it is on: say so, never drop a page silently.
                Err(e @ object_store::Error::InvalidPath { .. }) => {
                    return Err(StoreError::InvalidKey {
                        path: prefix.to_string(),
                        message: redact(&e.to_string()),
                    })
                }
                Err(e) => return Err(self.request_failed(prefix, &e)),
            };
            seen += 1;
            let Some(rel) = strip_root(root, &location) else {
                continue;
            };
            if until.is_some_and(|u| rel.as_str() > u) {
                break;
            }
            // Some stores answer from the start whatever the offset (Azurite, fake-gcs-server):
            // what comes before the range is not in it.
            if after.is_some_and(|a| rel.as_str() <= a) {
                continue;
            }
            if let Some(tag) = e_tag {
                out.e_tags.insert(rel.clone(), tag);
            }
            out.files.push(rel);
            if max.is_some_and(|m| out.files.len() >= m) {
                out.more = true;
                break;
            }
        }
        let pages = match requests.load(Ordering::Relaxed) {
            0 => seen.div_ceil(LIST_PAGE).max(1),
            paged => paged,
        };
        self.stats.list.fetch_add(pages, Ordering::Relaxed);
        Ok(out)
    }

    /// The entries below `path` after `offset`, with their ETags: in pages of `page` where
    /// the store lists in pages of a chosen size, else as object_store lists.
    fn listing(
        &self,
        store: &Arc<dyn ObjectStore>,
        path: &StorePath,
        offset: Option<&StorePath>,
        page: Option<usize>,
        requests: &Arc<AtomicU64>,
    ) -> futures::stream::BoxStream<'static, object_store::Result<(StorePath, Option<String>)>>
    {
        match (page, &self.pages) {
            (Some(page), Some(pages)) => pages.list(
                format!("{path}/"),
                offset.map(|o| o.to_string()),
                page,
                requests.clone(),
            ),
            _ => match offset {
                Some(o) => store.list_with_offset(Some(path), o),
                None => store.list(Some(path)),
            }
            .map_ok(|m| (m.location, m.e_tag))
            .boxed(),
        }
    }

    /// The names of the folders directly below `prefix` (ending in `/`).
    pub async fn list_dirs(&self, prefix: &str) -> Result<Vec<String>, StoreError> {
        check_rel(prefix)?;
        let out = match &self.backend {
            Backend::Local(dir) => {
                self.stats.list.fetch_add(1, Ordering::Relaxed);
                let dir = dir.clone();
                let p = prefix.to_string();
                tokio::task::spawn_blocking(move || dir.list_dirs(&p))
                    .await
                    .map_err(|e| failed(prefix, e))??
            }
            Backend::Remote(store, root) => {
                let path = Self::remote_path(root, prefix)?;
                let res = store
                    .list_with_delimiter(Some(&path))
                    .await
                    .map_err(|e| self.request_failed(prefix, &e))?;
                let n = (res.common_prefixes.len() + res.objects.len()) as u64;
                self.stats
                    .list
                    .fetch_add(n.div_ceil(LIST_PAGE).max(1), Ordering::Relaxed);
                res.common_prefixes
                    .iter()
                    .filter_map(|p| p.filename().map(str::to_string))
                    .collect()
            }
        };
        self.log(format_args!(
            "LIST {prefix} (folders) -> {} folders",
            out.len()
        ));
        Ok(out)
    }
}

impl Store {
    /// Like [`Store::get`], with the version token a conditional write needs.
    pub async fn get_versioned(
        &self,
        rel: &str,
        limit: u64,
    ) -> Result<Option<Versioned>, StoreError> {
        check_rel(rel)?;
        match &self.backend {
            Backend::Local(dir) => {
                self.stats.get.fetch_add(1, Ordering::Relaxed);
                Ok(dir
                    .get_versioned(rel, limit)?
                    .map(|(bytes, token)| Versioned {
                        token: Token {
                            e_tag: Some(token),
                            version: None,
                        },
                        bytes: Bytes::from(bytes),
                    }))
            }
            Backend::Remote(store, prefix) => {
                self.stats.get.fetch_add(1, Ordering::Relaxed);
                let path = Self::remote_path(prefix, rel)?;
                let result = self
                    .remote_get(store, &path, rel, limit)
                    .await
                    .map(|got| got.map(|(bytes, token, _)| Versioned { bytes, token }));
                match &result {
                    Ok(Some(v)) => self.log(format_args!(
                        "GET {rel} -> {} bytes, version {:?}",
                        v.bytes.len(),
                        v.token.e_tag
                    )),
                    Ok(None) => self.log(format_args!("GET {rel} -> not found")),
                    Err(e) => self.log(format_args!("GET {rel} -> error: {e}")),
                }
                result
            }
        }
    }

    /// Writes `bytes` to `rel` on condition; returns the new version token.
    pub async fn put(
        &self,
        rel: &str,
        bytes: Bytes,
        mode: &WriteMode,
    ) -> Result<Token, WriteError> {
        check_rel(rel).map_err(WriteError::Refused)?;
        self.stats.put.fetch_add(1, Ordering::Relaxed);
        let result = match &self.backend {
            Backend::Local(dir) => {
                let expect = match mode {
                    WriteMode::Create => Expect::Absent,
                    WriteMode::Update(t) => Expect::Token(t.e_tag.clone().unwrap_or_default()),
                };
                let dir = dir.clone();
                let rel_owned = rel.to_string();
                tokio::task::spawn_blocking(move || dir.put(&rel_owned, &bytes, &expect))
                    .await
                    .map_err(|e| WriteError::Store(failed(rel, e)))?
                    .map(|t| Token {
                        e_tag: Some(t),
                        version: None,
                    })
                    .map_err(local_write_error)
            }
            Backend::Remote(store, prefix) => {
                let path = Self::remote_path(prefix, rel).map_err(WriteError::Refused)?;
                check_key_length(rel, &path).map_err(WriteError::Refused)?;
                let put_mode = match mode {
                    WriteMode::Create => object_store::PutMode::Create,
                    WriteMode::Update(t) => {
                        object_store::PutMode::Update(object_store::UpdateVersion {
                            e_tag: t.e_tag.clone(),
                            version: t.version.clone(),
                        })
                    }
                };
                let opts = object_store::PutOptions {
                    mode: put_mode,
                    ..Default::default()
                };
                match store
                    .put_opts(&path, object_store::PutPayload::from(bytes), opts)
                    .await
                {
                    Ok(r) => Ok(Token {
                        e_tag: r.e_tag,
                        version: r.version,
                    }),
                    Err(
                        object_store::Error::AlreadyExists { .. }
                        | object_store::Error::Precondition { .. },
                    ) => Err(WriteError::Conflict),
                    Err(
                        e @ (object_store::Error::NotImplemented { .. }
                        | object_store::Error::NotSupported { .. }),
                    ) => Err(WriteError::Refused(StoreError::NoConditionalWrites {
                        path: rel.to_string(),
                        message: redact(&e.to_string()),
                    })),
                    Err(e) => Err(WriteError::Store(self.request_failed(rel, &e))),
                }
            }
        };
        match &result {
            Ok(t) => self.log(format_args!(
                "PUT {rel} ({mode:?}) -> ok, version {:?}",
                t.e_tag
            )),
            Err(e) => self.log(format_args!("PUT {rel} ({mode:?}) -> {e}")),
        }
        result
    }

    /// Deletes `rel` if it is still at version `expected`. Local folders check and delete under
    /// a lock. Cloud stores check the version first (a cheap conflict), then delete on condition
    /// (S3 and Azure `If-Match`, GCS generation match); a store that ignores the condition on
    /// DELETE leaves a window of one request in which a racing update can be lost
    /// (docs/git-remote-fdl.md says which).
    pub async fn delete(&self, rel: &str, expected: &Token) -> Result<(), WriteError> {
        check_rel(rel).map_err(WriteError::Refused)?;
        self.stats.delete.fetch_add(1, Ordering::Relaxed);
        let result = match &self.backend {
            Backend::Local(dir) => {
                let expect = Expect::Token(expected.e_tag.clone().unwrap_or_default());
                let dir = dir.clone();
                let rel_owned = rel.to_string();
                tokio::task::spawn_blocking(move || dir.delete(&rel_owned, &expect))
                    .await
                    .map_err(|e| WriteError::Store(failed(rel, e)))?
                    .map_err(local_write_error)
            }
            Backend::Remote(store, prefix) => {
                let path = Self::remote_path(prefix, rel).map_err(WriteError::Refused)?;
                self.stats.get.fetch_add(1, Ordering::Relaxed);
                match store.head(&path).await {
                    Err(e) if self.is_absent(&e) => Err(WriteError::Conflict),
                    // Nothing was deleted yet.
                    Err(e) => Err(WriteError::Refused(self.request_failed(rel, &e))),
                    Ok(meta) if meta.e_tag != expected.e_tag => Err(WriteError::Conflict),
                    Ok(_) => self.delete_on_condition(store, &path, rel, expected).await,
                }
            }
        };
        match &result {
            Ok(()) => self.log(format_args!("DELETE {rel} -> ok")),
            Err(e) => self.log(format_args!("DELETE {rel} -> {e}")),
        }
        result
    }

    /// A test's view of [`Store::delete`] without its first check: the conditional request alone.
    #[doc(hidden)]
    pub async fn delete_on_condition_only(
        &self,
        rel: &str,
        expected: &Token,
    ) -> Result<(), WriteError> {
        check_rel(rel)?;
        match &self.backend {
            Backend::Remote(store, prefix) => {
                let path = Self::remote_path(prefix, rel)?;
                self.delete_on_condition(store, &path, rel, expected).await
            }
            Backend::Local(_) => self.delete(rel, expected).await,
        }
    }

    async fn delete_on_condition(
        &self,
        store: &Arc<dyn ObjectStore>,
        path: &StorePath,
        rel: &str,
        expected: &Token,
    ) -> Result<(), WriteError> {
        let Some(deleter) = &self.deleter else {
            return store
                .delete(path)
                .await
                .map_err(|e| WriteError::Store(failed(rel, e)));
        };
        match deleter.delete(path, expected).await {
            delete::Outcome::Deleted => Ok(()),
            delete::Outcome::Conflict => Err(WriteError::Conflict),
            delete::Outcome::Failed(message) => Err(WriteError::Store(StoreError::Failed {
                path: rel.to_string(),
                message,
            })),
            // A request it cannot sign (S3 without signatures): the version was just checked,
            // so delete as before, with the documented window.
            delete::Outcome::Unsupported(why) => {
                self.log(format_args!(
                    "DELETE {rel}: cannot delete on condition ({why}); deleting after the check"
                ));
                store
                    .delete(path)
                    .await
                    .map_err(|e| WriteError::Store(failed(rel, e)))
            }
        }
    }
}

impl Store {
    /// Streams a whole file into `sink`, a chunk at a time, so that memory stays bounded
    /// whatever its size; `false` when there is no such file. Refuses files over `limit` bytes.
    pub async fn download(
        &self,
        rel: &str,
        limit: u64,
        sink: &mut (dyn FnMut(&[u8]) -> std::io::Result<()> + Send),
    ) -> Result<bool, StoreError> {
        check_rel(rel)?;
        self.stats.get.fetch_add(1, Ordering::Relaxed);
        let mut total = 0u64;
        let mut take = |chunk: &[u8]| -> Result<(), StoreError> {
            total += chunk.len() as u64;
            if total > limit {
                return Err(StoreError::TooLarge {
                    path: rel.to_string(),
                    limit,
                });
            }
            sink(chunk).map_err(|e| failed(rel, e))
        };
        match &self.backend {
            Backend::Local(dir) => {
                let Some(mut file) = dir.open_read(rel)? else {
                    return Ok(false);
                };
                let mut buf = vec![0u8; 1 << 20];
                loop {
                    let n = std::io::Read::read(&mut file, &mut buf).map_err(|e| failed(rel, e))?;
                    if n == 0 {
                        break;
                    }
                    take(&buf[..n])?;
                }
            }
            Backend::Remote(store, prefix) => {
                let path = Self::remote_path(prefix, rel)?;
                let mut stream = match store.get(&path).await {
                    Err(object_store::Error::NotFound { .. }) => return Ok(false),
                    Err(e) => return Err(failed(rel, e)),
                    Ok(res) => res.into_stream(),
                };
                while let Some(chunk) = stream.try_next().await.map_err(|e| failed(rel, e))? {
                    take(&chunk)?;
                }
            }
        }
        self.log(format_args!("GET {rel} (streamed) -> {total} bytes"));
        Ok(true)
    }
}

/// A folder's writes are local system calls: when one fails, the folder knows nothing changed.
fn local_write_error(e: LocalWriteError) -> WriteError {
    match e {
        LocalWriteError::Mismatch => WriteError::Conflict,
        LocalWriteError::Store(s) => WriteError::Refused(s),
    }
}

fn check_key_length(rel: &str, path: &StorePath) -> Result<(), StoreError> {
    let len = path.as_ref().len();
    if len <= MAX_KEY {
        return Ok(());
    }
    Err(StoreError::Failed {
        path: rel.chars().take(60).chain("…".chars()).collect(),
        message: format!("too long: its key is {len} bytes, and object stores allow {MAX_KEY}"),
    })
}

fn strip_root(root: &StorePath, location: &StorePath) -> Option<String> {
    // A path is its parts joined by `/`: below the root is what follows `<root>/`, copied
    // once (a listing of a thousand refs strips a thousand keys).
    let (root, location) = (root.as_ref(), location.as_ref());
    if root.is_empty() {
        return Some(location.to_string());
    }
    match location.strip_prefix(root)? {
        "" => Some(String::new()),
        rest => rest.strip_prefix('/').map(str::to_string),
    }
}

/// Refuses a relative path that could leave the root. Callers build paths from validated
/// names; this is the last line of defence.
fn check_rel(rel: &str) -> Result<(), StoreError> {
    let bad = rel.starts_with('/')
        || rel.contains('\\')
        || rel.contains('\0')
        || rel
            .trim_end_matches('/')
            .split('/')
            .any(|s| s.is_empty() && !rel.is_empty() || s == "." || s == "..");
    if bad {
        return Err(StoreError::OutsideRoot {
            path: rel.to_string(),
        });
    }
    Ok(())
}

/// A task that read or listed `path` and stopped before it answered (`what`: "read",
/// "listing"): the runtime went away, or the task panicked.
pub(crate) fn stopped(path: &str, what: &str, e: tokio::task::JoinError) -> StoreError {
    StoreError::Failed {
        path: path.to_string(),
        message: format!("{what} stopped: {e}"),
    }
}

fn failed(rel: &str, e: impl std::fmt::Display) -> StoreError {
    StoreError::Failed {
        path: rel.to_string(),
        message: redact(&e.to_string()),
    }
}

/// Requests in flight for a store at `url`: the default for its kind, or the configured
/// `fdlConcurrency` (1 to [`MAX_CONCURRENCY`]).
fn concurrency_of(url: &StoreUrl, own: &[(String, String)]) -> Result<usize, StoreError> {
    let mut concurrency = match url {
        StoreUrl::Local(_) => LOCAL_CONCURRENCY,
        _ => DEFAULT_CONCURRENCY,
    };
    for (_, v) in own {
        concurrency = v
            .trim()
            .parse()
            .ok()
            .filter(|n| (1..=MAX_CONCURRENCY).contains(n))
            .ok_or_else(|| {
                StoreError::Config(format!(
                    "fdlConcurrency: '{}' is not a number from 1 to {MAX_CONCURRENCY}",
                    crate::redact::for_terminal(v)
                ))
            })?;
    }
    Ok(concurrency)
}

/// `path: message`, or the message alone when the path is the root.
fn at_path(path: &str, message: &str) -> String {
    if path.is_empty() {
        message.to_string()
    } else {
        format!("{path}: {message}")
    }
}

impl Store {
    /// A cloud store's failed request, in words (see `diagnose`).
    fn request_failed(&self, rel: &str, e: &object_store::Error) -> StoreError {
        diagnose::request_error(&self.url, rel, e)
    }

    /// A missing file is "nothing there"; a missing bucket is an error.
    fn is_absent(&self, e: &object_store::Error) -> bool {
        matches!(e, object_store::Error::NotFound { .. }) && !diagnose::is_missing_bucket(e)
    }

    async fn read_limited(
        &self,
        rel: &str,
        stream: futures::stream::BoxStream<'static, object_store::Result<Bytes>>,
        size: u64,
        limit: u64,
    ) -> Result<Bytes, StoreError> {
        read_limited(rel, stream, size, limit)
            .await
            .map_err(|e| match e {
                Ok(too_large) => too_large,
                Err(e) => self.request_failed(rel, &e),
            })
    }
}

/// Reads a response body of `size` bytes (as the store announced it) into one buffer, up to
/// `limit` bytes: `Err(Ok(_))` when it is larger, `Err(Err(_))` when the store fails.
async fn read_limited(
    rel: &str,
    mut stream: futures::stream::BoxStream<'static, object_store::Result<Bytes>>,
    size: u64,
    limit: u64,
) -> Result<Bytes, Result<StoreError, object_store::Error>> {
    // Sized once: growing by doubling would hold up to twice the file for a moment.
    let mut buf = Vec::with_capacity(size.min(limit) as usize);
    while let Some(chunk) = stream.try_next().await.map_err(Err)? {
        if (buf.len() + chunk.len()) as u64 > limit {
            return Err(Ok(StoreError::TooLarge {
                path: rel.to_string(),
                limit,
            }));
        }
        buf.extend_from_slice(&chunk);
    }
    Ok(Bytes::from(buf))
}

/// Retries for cloud stores: a few, with backoff, and bounded so a dead server cannot hang us.
pub(crate) fn retry_config() -> object_store::RetryConfig {
    object_store::RetryConfig {
        max_retries: 4,
        retry_timeout: Duration::from_secs(30),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_below_the_root_is_what_follows_it_part_by_part() {
        let p = |s: &str| StorePath::parse(s).unwrap();
        let old = |root: &StorePath, loc: &StorePath| {
            let parts: Vec<String> = loc
                .prefix_match(root)?
                .map(|p| p.as_ref().to_string())
                .collect();
            Some(parts.join("/"))
        };
        for (root, loc) in [
            ("lake", "lake/refs/tags/v1"),
            ("lake", "lake"),
            ("lake", "lakes/refs/x"),
            ("lake", "other/lake/x"),
            ("a/b", "a/b/c"),
            ("a/b", "a/bc/d"),
            ("", "refs/heads/main"),
            ("lake", "lake/x%2Fy/z"),
        ] {
            let (root, loc) = (p(root), p(loc));
            assert_eq!(strip_root(&root, &loc), old(&root, &loc), "{root} {loc}");
        }
    }

    #[test]
    fn relative_paths_cannot_escape() {
        for bad in ["../x", "a/../b", "/etc/passwd", "a//b", "./a", "a\\b"] {
            assert!(check_rel(bad).is_err(), "{bad}");
        }
        for good in ["", "fdl.json", "refs/", "versions/x/version.json"] {
            assert!(check_rel(good).is_ok(), "{good}");
        }
    }
}
