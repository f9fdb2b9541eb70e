//! Where a lake lives: opening a store from a URL and options, and the few operations the helper
//! needs from it (read with a size limit, list, conditional writes). `Store` is the facade the
//! rest of the crate uses; below it one backend per kind of store (`folder.rs`, `cloud.rs`)
//! behind the [`backend::Backend`] trait, wrapped in counting, tracing and the gate.

pub(crate) mod access;
mod backend;
mod budget;
mod cloud;
mod condition;
mod error;
mod folder;
mod options;
mod ranges;
pub(crate) mod url;
mod wrappers;
pub(crate) mod write_check;

pub(crate) use wrappers::throttle;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use bytes::Bytes;

pub(crate) use backend::Listed;
use backend::{Backend, Range};
pub(crate) use budget::{Budget, Held, MEMORY_BUDGET};
pub(crate) use cloud::LIST_PAGE;
pub use condition::{Token, Versioned, WriteError, WriteMode};
pub(crate) use error::stopped;
pub use error::StoreError;
pub(crate) use options::{parse_switch, CONCURRENCY_OPTION, DEFAULT_CONCURRENCY, MAX_CONCURRENCY};
pub use ranges::even_splits;
pub(crate) use ranges::joined;
pub use url::StoreUrl;
pub(crate) use wrappers::stats::Stats;

/// An opened store, rooted at the lake's root.
#[derive(Debug, Clone)]
pub struct Store {
    /// The backend, wrapped: counted, then traced (when tracing), then gated.
    backend: Arc<dyn Backend>,
    url: StoreUrl,
    /// The remote's store options, for [`Store::data_access`].
    options: Vec<(String, String)>,
    stats: Arc<Stats>,
    budget: Budget,
    concurrency: usize,
    /// `If-Match` sent with the ETag without its quotes (Ceph RGW 16 compares it so), once
    /// the store check found that the store takes no other form.
    unquoted_if_match: Arc<AtomicBool>,
}

impl Store {
    /// The requests made so far, counted by kind.
    pub fn stats(&self) -> &Stats {
        &self.stats
    }

    /// Opens the store a URL names, with object_store configuration `options` (`key`, `value`)
    /// added to what the environment gives.
    pub fn open(url: &StoreUrl, options: &[(String, String)]) -> Result<Store, StoreError> {
        let (own, options): (Vec<_>, Vec<_>) = options
            .iter()
            .cloned()
            .partition(|(k, _)| k == CONCURRENCY_OPTION);
        let concurrency =
            options::concurrency_of(url, &own)?.min(wrappers::throttle::open_files_room());
        let backend: Box<dyn Backend> = match url {
            // A folder uses no store option, but one no store knows is a typo all the same.
            StoreUrl::Local(path) => {
                if let Some((k, _)) = options.iter().find(|(k, _)| !options::is_known_option(k)) {
                    return Err(StoreError::Config(format!(
                        "unknown store option '{k}' (a folder lake uses none)"
                    )));
                }
                Box::new(folder::Folder::open(path)?)
            }
            _ => Box::new(cloud::open::build_remote(url, &options)?),
        };
        let gate = Arc::new(wrappers::throttle::Gate::new(concurrency));
        let mut backend: Box<dyn Backend> = Box::new(wrappers::throttle::Gated::new(backend, gate));
        if crate::trace::enabled() {
            backend = Box::new(wrappers::traced::Traced::new(backend));
        }
        let stats = Arc::new(Stats::default());
        let backend = Arc::new(wrappers::stats::Counted::new(backend, stats.clone()));
        Ok(Store {
            backend,
            url: url.clone(),
            options,
            stats,
            budget: Budget::new(MEMORY_BUDGET),
            concurrency,
            unquoted_if_match: Arc::default(),
        })
    }

    /// How many requests to keep in flight at once.
    pub fn concurrency(&self) -> usize {
        self.concurrency
    }

    /// The address the store was opened from.
    pub fn url(&self) -> &StoreUrl {
        &self.url
    }

    /// What another program needs to read this store's files as the helper does.
    pub fn data_access(&self) -> access::DataAccess {
        access::describe(&self.url, &self.options)
    }

    /// A folder on this machine: requests cost microseconds, not round trips.
    pub fn is_local(&self) -> bool {
        matches!(self.url, StoreUrl::Local(_))
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
        self.is_local()
    }

    /// Stored notes about what the store repaired on its own (a stale lock it removed).
    pub fn take_notes(&self) -> Vec<String> {
        self.backend.take_notes()
    }

    /// Whether `rel` is a file (a folder or nothing is not).
    pub async fn is_file(&self, rel: &str) -> Result<bool, StoreError> {
        check_rel(rel)?;
        Ok(self.backend.head(rel).await?.is_some())
    }

    /// Reads a whole file, `None` when there is none; refuses files over `limit` bytes.
    pub async fn get(&self, rel: &str, limit: u64) -> Result<Option<Bytes>, StoreError> {
        Ok(self.get_held(rel, limit).await?.map(|h| h.bytes))
    }

    /// Like [`Store::get`], holding the file's size in the memory budget until the result is
    /// dropped: the read waits for room before it reads the file's content.
    pub async fn get_held(&self, rel: &str, limit: u64) -> Result<Option<Held>, StoreError> {
        check_rel(rel)?;
        let got = self.backend.get(rel, limit, &self.budget).await?;
        Ok(got.map(|g| Held::new(g.bytes, g.room)))
    }

    /// Like [`Store::get`], with the version token a conditional write needs.
    pub async fn get_versioned(
        &self,
        rel: &str,
        limit: u64,
    ) -> Result<Option<Versioned>, StoreError> {
        check_rel(rel)?;
        self.backend.get_versioned(rel, limit, &self.budget).await
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
        let range = Range {
            after,
            until,
            max,
            expected,
        };
        Ok(self.backend.list(prefix, range).await?.found)
    }

    /// The names of the folders directly below `prefix` (ending in `/`).
    pub async fn list_dirs(&self, prefix: &str) -> Result<Vec<String>, StoreError> {
        check_rel(prefix)?;
        Ok(self.backend.list_dirs(prefix).await?.found.dirs)
    }

    /// The names of the files directly below `prefix` (one request: what lies deeper is not
    /// listed).
    pub async fn list_files_at(&self, prefix: &str) -> Result<Vec<String>, StoreError> {
        check_rel(prefix)?;
        Ok(self.backend.list_dirs(prefix).await?.found.files)
    }

    /// Writes `bytes` to `rel` on condition; returns the new version token.
    pub async fn put(
        &self,
        rel: &str,
        bytes: Bytes,
        mode: &WriteMode,
    ) -> Result<Token, WriteError> {
        check_rel(rel).map_err(WriteError::Refused)?;
        match mode {
            WriteMode::Update(t) if self.sends_unquoted_if_match() => {
                let mode = WriteMode::Update(unquoted(t));
                self.backend.put(rel, bytes, &mode).await
            }
            _ => self.backend.put(rel, bytes, mode).await,
        }
    }

    /// Writes the local file `file` to `rel` unless `rel` is there (`WriteError::Conflict`), a
    /// piece at a time (in parts, on a cloud store, above 16 MiB): for a large file named by
    /// its content.
    pub async fn put_file(&self, rel: &str, file: &std::path::Path) -> Result<(), WriteError> {
        check_rel(rel).map_err(WriteError::Refused)?;
        self.backend.put_file(rel, file).await
    }

    /// From now on, `If-Match` carries ETags without their quotes (see [`write_check::Checks`]):
    /// the only form a store that compares them so takes.
    pub fn send_unquoted_if_match(&self) {
        self.unquoted_if_match.store(true, Ordering::Relaxed);
    }

    fn sends_unquoted_if_match(&self) -> bool {
        self.unquoted_if_match.load(Ordering::Relaxed)
    }

    /// Whether writes on this store need the store check first: every store but a folder
    /// (which writes on condition under a lock file of its own) and plain HTTP (read-only).
    pub fn needs_condition_check(&self) -> bool {
        !self.is_local() && !self.url.is_read_only()
    }

    /// What names this store for the store check: its kind, endpoint (or account) and bucket
    /// (or container); every lake in one bucket shares its answer.
    pub fn check_key(&self) -> String {
        let url = match &self.url {
            StoreUrl::S3(u) | StoreUrl::Gcs(u) | StoreUrl::Azure(u) | StoreUrl::Http(u) => u,
            StoreUrl::Local(p) => return format!("folder {}", p.display()),
        };
        let container = match url.username() {
            "" => url.host_str().unwrap_or_default().to_string(),
            user => format!("{user}@{}", url.host_str().unwrap_or_default()),
        };
        let place = match self.data_access() {
            access::DataAccess::S3(s3) => s3.endpoint.unwrap_or_else(|| "aws".into()),
            access::DataAccess::Gcs { endpoint } => endpoint.unwrap_or_else(|| "google".into()),
            access::DataAccess::Azure { account, .. } => account.unwrap_or_default(),
            _ => String::new(),
        };
        format!("{} {place} {container}", url.scheme())
    }

    /// The store in words for a message: `bucket 'lakes' at 127.0.0.1:9000 (S3)`.
    pub fn describe(&self) -> String {
        let key = self.check_key();
        let mut parts = key.splitn(3, ' ');
        let (kind, place, container) = (
            parts.next().unwrap_or_default(),
            parts.next().unwrap_or_default(),
            parts.next().unwrap_or_default(),
        );
        let (noun, kind) = match kind {
            "gs" => ("bucket", "GCS"),
            "az" | "azure" | "abfs" | "abfss" | "adl" => ("container", "Azure"),
            _ => ("bucket", "S3"),
        };
        match place {
            "" | "aws" | "google" => format!("{kind} {noun} '{container}'"),
            p => format!("{kind} {noun} '{container}' at {p}"),
        }
    }

    /// Lists `prefix` in ranges split at `splits` (sorted paths, each the last of its range;
    /// see [`even_splits`]) side by side, each expected to hold about `expected` paths: the
    /// whole listing, in order, for about one round trip.
    pub async fn list_split(
        &self,
        prefix: &str,
        splits: Vec<&str>,
        expected: usize,
    ) -> Result<Listed, StoreError> {
        check_rel(prefix)?;
        ranges::list_split(&self.backend, prefix, splits, expected).await
    }

    /// Deletes `rel` if it is still at version `expected`. Local folders check and delete under
    /// a lock. Cloud stores check the version first (a cheap conflict), then delete on condition
    /// (S3 and Azure `If-Match`, GCS generation match); a store that ignores the condition on
    /// DELETE leaves a window of one request in which a racing update can be lost
    /// (docs/git-remote-fdl.md says which).
    pub async fn delete(&self, rel: &str, expected: &Token) -> Result<(), WriteError> {
        check_rel(rel).map_err(WriteError::Refused)?;
        let unquoted_token;
        let expected = if self.sends_unquoted_if_match() {
            unquoted_token = unquoted(expected);
            &unquoted_token
        } else {
            expected
        };
        if !self.backend.checks_before_delete() {
            match self.backend.head(rel).await {
                Ok(None) => return Err(WriteError::Conflict),
                // Nothing was deleted yet.
                Err(e) => return Err(WriteError::Refused(e)),
                Ok(Some(t)) if unquoted(&t).e_tag != unquoted(expected).e_tag => {
                    return Err(WriteError::Conflict)
                }
                Ok(Some(_)) => {}
            }
        }
        self.backend.delete(rel, expected).await
    }

    /// Deletes each of `rels` whatever it holds (those not there are no error): for files
    /// only this helper writes and no one needs once done. One request for up to a thousand
    /// on S3 and Azure, which delete in bulk. Sent again while the store throttles it: GCS
    /// answers a delete within a second of the file's write 429.
    pub async fn delete_all(&self, rels: &[String]) -> Result<(), StoreError> {
        rels.iter().try_for_each(|rel| check_rel(rel))?;
        if rels.is_empty() {
            return Ok(());
        }
        let delete = || self.backend.delete_all(rels);
        throttle::until_unthrottled(delete, StoreError::is_throttled).await
    }

    /// A test's view of [`Store::delete`] without its first check: the conditional request alone.
    #[doc(hidden)]
    pub async fn delete_on_condition_only(
        &self,
        rel: &str,
        expected: &Token,
    ) -> Result<(), WriteError> {
        check_rel(rel)?;
        self.backend.delete(rel, expected).await
    }

    /// Streams a whole file into `sink`, a chunk at a time, so that memory stays bounded
    /// whatever its size; `false` when there is no such file. Refuses files over `limit` bytes.
    pub async fn download(
        &self,
        rel: &str,
        limit: u64,
        sink: &mut (dyn FnMut(&[u8]) -> std::io::Result<()> + Send),
    ) -> Result<bool, StoreError> {
        check_rel(rel)?;
        let mut total = 0u64;
        let mut take = |chunk: &[u8]| -> Result<(), StoreError> {
            total += chunk.len() as u64;
            if total > limit {
                return Err(StoreError::TooLarge {
                    path: rel.to_string(),
                    limit,
                });
            }
            sink(chunk).map_err(|e| error::failed(rel, e))
        };
        self.backend.download(rel, limit, &mut take).await
    }
}

/// `t` with its ETag's quotes taken off.
fn unquoted(t: &Token) -> Token {
    let e_tag = t.e_tag.as_deref().map(|e| {
        let bare = e.strip_prefix('"').and_then(|e| e.strip_suffix('"'));
        bare.unwrap_or(e).to_string()
    });
    Token {
        e_tag,
        version: t.version.clone(),
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

#[cfg(test)]
mod tests {
    use super::*;

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
