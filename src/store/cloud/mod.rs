//! The cloud backend: S3, GCS, Azure and plain HTTP through object_store, the lake's root a
//! key prefix in a bucket. What differs per cloud (builders, credentials, the conditional
//! DELETE object_store cannot send) is in files of their own.

mod answer;
pub(in crate::store) mod aws_credentials;
mod azure;
mod built;
mod delete;
mod diagnose;
mod endpoint;
mod gcs;
mod hints;
mod http;
mod multipart;
pub(in crate::store) mod open;
mod pages;
mod parts;
mod s3;
mod settings;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};
use object_store::path::Path as StorePath;
use object_store::{ObjectMeta, ObjectStore, ObjectStoreExt};

use crate::redact::redact;
use crate::store::backend::{Backend, Got, Paged, Range, Sink};
use crate::store::backend::{Below, Listed};
use crate::store::budget::Budget;
use crate::store::condition::{Token, Versioned, WriteError, WriteMode};
use crate::store::error::{failed, StoreError};
use crate::store::url::StoreUrl;
use answer::Answer;
use built::Parts;
use delete::Deleter;
use pages::Pages;
use parts::Stopped;

/// The longest key S3, GCS and Azure all accept, in bytes: a longer write is refused before
/// it is sent, so that its refusal is definite.
const MAX_KEY: usize = 1024;

/// How many objects a listing page holds on the cloud stores (S3, GCS and Azure alike).
pub(crate) const LIST_PAGE: usize = 1000;

/// A cloud store, rooted at the lake's root inside it.
#[derive(Debug, Clone)]
pub(crate) struct Cloud {
    store: Arc<dyn ObjectStore>,
    root: StorePath,
    deleter: Option<Deleter>,
    pages: Option<Pages>,
    url: StoreUrl,
    /// Set once the server answered a range with the whole file (`parts.rs`).
    whole_only: Arc<AtomicBool>,
    /// The client's timeout for each request.
    timeout: Duration,
}

impl Cloud {
    pub(in crate::store) fn new(
        parts: Parts,
        root: StorePath,
        url: &StoreUrl,
        timeout: Duration,
    ) -> Cloud {
        Cloud {
            store: parts.store,
            root,
            deleter: parts.deleter,
            pages: parts.pages,
            url: url.clone(),
            whole_only: Arc::default(),
            timeout,
        }
    }

    /// The key of `rel` below the root, taken as it is (not percent-encoded), exactly as a
    /// listing returns keys: a ref named `a#b` or `café` is the key `.../a#b`, `.../café`.
    fn path(&self, rel: &str) -> Result<StorePath, StoreError> {
        let rel = rel.trim_end_matches('/');
        let raw = match (self.root.as_ref(), rel) {
            (p, "") => p.to_string(),
            ("", r) => r.to_string(),
            (p, r) => format!("{p}/{r}"),
        };
        StorePath::parse(&raw).map_err(|e| StoreError::Failed {
            path: rel.to_string(),
            message: format!("not a valid key: {e}"),
        })
    }

    /// A failed request, in words (see `diagnose`), marked when the store throttled it.
    fn request_failed(&self, rel: &str, e: object_store::Error) -> StoreError {
        let answer = Answer::of(&e);
        let throttled = answer.is_throttling();
        let error = diagnose::request_error(&self.url, rel, e, &answer);
        if throttled {
            error.throttled()
        } else {
            error
        }
    }

    /// A missing file is "nothing there"; a missing bucket is an error.
    fn is_absent(&self, e: &object_store::Error) -> bool {
        matches!(e, object_store::Error::NotFound { .. })
            && !Answer::store_answer(e).is_missing_bucket()
    }

    /// The entries below `path` after `offset`, with their ETags and sizes: in pages of `page` where
    /// the store lists in pages of a chosen size, else as object_store lists.
    fn listing(
        &self,
        path: &StorePath,
        offset: Option<&StorePath>,
        page: Option<usize>,
        requests: &Arc<AtomicU64>,
    ) -> futures::stream::BoxStream<'static, object_store::Result<ObjectMeta>> {
        match (page, &self.pages) {
            (Some(page), Some(pages)) => pages.list(
                format!("{path}/"),
                offset.map(|o| o.to_string()),
                page,
                requests.clone(),
            ),
            _ => match offset {
                Some(o) => self.store.list_with_offset(Some(path), o),
                None => self.store.list(Some(path)),
            },
        }
    }

    async fn delete_unconditionally(&self, path: &StorePath, rel: &str) -> Result<(), WriteError> {
        self.store
            .delete(path)
            .await
            .map_err(|e| WriteError::Store(failed(rel, e)))
    }
}

#[async_trait::async_trait]
impl Backend for Cloud {
    async fn head(&self, rel: &str) -> Result<Option<Token>, StoreError> {
        match self.store.head(&self.path(rel)?).await {
            Ok(meta) => Ok(Some(Token {
                e_tag: meta.e_tag,
                version: meta.version,
            })),
            Err(e) if self.is_absent(&e) => Ok(None),
            Err(e) => Err(self.request_failed(rel, e)),
        }
    }

    async fn get(&self, rel: &str, limit: u64, budget: &Budget) -> Result<Option<Got>, StoreError> {
        let res = match self.store.get(&self.path(rel)?).await {
            Err(e) if self.is_absent(&e) => return Ok(None),
            Err(e) => return Err(self.request_failed(rel, e)),
            Ok(res) => res,
        };
        let size = res.meta.size;
        if size > limit {
            return Err(StoreError::TooLarge {
                path: rel.to_string(),
                limit,
            });
        }
        let token = Token {
            e_tag: res.meta.e_tag.clone(),
            version: res.meta.version.clone(),
        };
        let room = budget.reserve(size).await;
        let bytes = read_limited(rel, res.into_stream(), size, limit)
            .await
            .map_err(|e| match e {
                Ok(too_large) => too_large,
                Err(e) => self.request_failed(rel, e),
            })?;
        Ok(Some(Got { bytes, token, room }))
    }

    async fn get_versioned(
        &self,
        rel: &str,
        limit: u64,
        budget: &Budget,
    ) -> Result<Option<Versioned>, StoreError> {
        let got = self.get(rel, limit, budget).await?;
        Ok(got.map(|g| Versioned {
            bytes: g.bytes,
            token: g.token,
        }))
    }

    async fn download(
        &self,
        rel: &str,
        limit: u64,
        sink: &mut Sink<'_>,
    ) -> Result<bool, StoreError> {
        // The same error path as every other request: a missing bucket is not a missing file,
        // and the store's hints and throttling words reach the caller.
        let absent = |e: &object_store::Error| self.is_absent(e);
        let path = self.path(rel)?;
        let (store, timeout, whole) = (&self.store, self.timeout, &self.whole_only);
        let bounds = (timeout, limit);
        match parts::download(store, &path, bounds, whole, &absent, sink).await {
            Ok(found) => Ok(found),
            Err(Stopped::Sink(e)) => Err(e),
            Err(Stopped::Store(e)) => Err(self.request_failed(rel, e)),
            Err(Stopped::TooLarge) => Err(StoreError::TooLarge {
                path: rel.to_string(),
                limit,
            }),
            Err(Stopped::Inconsistent(message)) => Err(StoreError::Failed {
                path: rel.to_string(),
                message: format!("refused the server's answer: {message}"),
            }),
        }
    }

    async fn list(&self, prefix: &str, range: Range<'_>) -> Result<Paged<Listed>, StoreError> {
        let Range {
            after,
            until,
            max,
            expected,
        } = range;
        let path = self.path(prefix)?;
        let offset = after.map(|a| self.path(a)).transpose()?;
        // A range that ends before the listing does, of about known size: pages of a quarter
        // more than that (a page of the store's size would mostly be past its end).
        let page = expected
            .filter(|_| until.is_some())
            .map(|e| (e + e / 4 + 16).min(LIST_PAGE));
        let requests = Arc::new(AtomicU64::new(0));
        let mut listing = self.listing(&path, offset.as_ref(), page, &requests);
        let mut out = Listed::default();
        let mut seen = 0u64;
        while let Some(item) = listing.next().await {
            let ObjectMeta {
                location,
                e_tag,
                size,
                ..
            } = match item {
                Ok(m) => m,
                // A key no lake path can be (an empty segment, a control character) spoils
                // the whole page it is on: say so, never drop a page silently.
                Err(e @ object_store::Error::InvalidPath { .. }) => {
                    return Err(StoreError::InvalidKey {
                        path: prefix.to_string(),
                        message: redact(&e.to_string()),
                    })
                }
                Err(e) => return Err(self.request_failed(prefix, e)),
            };
            seen += 1;
            // A zero-byte key ending in `/` is a console's "folder", which object_store lists
            // without its `/`, as a file of that name: never a ref (`refs/heads/team/` would
            // stand in the way of a branch `team`) nor any other lake file, none of which is
            // ever empty.
            if size == 0 {
                continue;
            }
            let Some(rel) = strip_root(&self.root, &location) else {
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
            out.push(rel, e_tag);
            if max.is_some_and(|m| out.files.len() >= m) {
                out.more = true;
                break;
            }
        }
        let requests = match requests.load(Ordering::Relaxed) {
            0 => seen.div_ceil(LIST_PAGE as u64).max(1),
            paged => paged,
        };
        Ok(Paged {
            found: out,
            requests,
        })
    }

    async fn list_dirs(&self, prefix: &str) -> Result<Paged<Below>, StoreError> {
        let res = self
            .store
            .list_with_delimiter(Some(&self.path(prefix)?))
            .await
            .map_err(|e| self.request_failed(prefix, e))?;
        let n = (res.common_prefixes.len() + res.objects.len()) as u64;
        let names = |paths: &mut dyn Iterator<Item = &StorePath>| -> Vec<String> {
            paths
                .filter_map(|p| p.filename().map(str::to_string))
                .collect()
        };
        let found = Below {
            dirs: names(&mut res.common_prefixes.iter()),
            files: names(&mut res.objects.iter().map(|o| &o.location)),
        };
        Ok(Paged {
            found,
            requests: n.div_ceil(LIST_PAGE as u64).max(1),
        })
    }

    async fn put(&self, rel: &str, bytes: Bytes, mode: &WriteMode) -> Result<Token, WriteError> {
        let path = self.path(rel).map_err(WriteError::Refused)?;
        check_key_length(rel, &path).map_err(WriteError::Refused)?;
        let mode = match mode {
            WriteMode::Create => object_store::PutMode::Create,
            WriteMode::Update(t) => object_store::PutMode::Update(object_store::UpdateVersion {
                e_tag: t.e_tag.clone(),
                version: t.version.clone(),
            }),
        };
        let opts = object_store::PutOptions {
            mode,
            ..Default::default()
        };
        let payload = object_store::PutPayload::from(bytes);
        match self.store.put_opts(&path, payload, opts).await {
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
            Err(e) => Err(WriteError::Store(self.request_failed(rel, e))),
        }
    }

    async fn put_file(&self, rel: &str, file: &std::path::Path) -> Result<(), WriteError> {
        let path = self.path(rel).map_err(WriteError::Refused)?;
        check_key_length(rel, &path).map_err(WriteError::Refused)?;
        let local = |e: std::io::Error| WriteError::Store(failed(rel, e));
        let whole = || async {
            // Read off the runtime's threads: up to 16 MiB, or a whole pack (see below).
            let owned = file.to_path_buf();
            let read = tokio::task::spawn_blocking(move || std::fs::read(owned)).await;
            let bytes = read
                .unwrap_or_else(|e| Err(std::io::Error::other(e)))
                .map_err(local)?;
            let put = self.put(rel, bytes.into(), &WriteMode::Create).await;
            put.map(|_| ())
        };
        let size = std::fs::metadata(file).map_err(local)?.len();
        if size <= multipart::IN_PARTS_ABOVE {
            return whole().await;
        }
        // An upload in parts carries no condition: a file already there is left as it is (its
        // name is its content), and two uploads at once write the same bytes.
        if self.head(rel).await.map_err(WriteError::Store)?.is_some() {
            return Err(WriteError::Conflict);
        }
        match multipart::upload(&self.store, &path, file).await {
            Ok(()) => Ok(()),
            // A store that takes no upload in parts (fake-gcs-server, small S3 servers): the
            // file goes whole instead, held in memory for that request.
            Err(multipart::Stopped::NotBegun) => whole().await,
            Err(multipart::Stopped::File(e)) => Err(local(e)),
            Err(multipart::Stopped::Interrupted) => Err(local(std::io::Error::new(
                std::io::ErrorKind::Interrupted,
                "interrupted by a signal: the upload was aborted",
            ))),
            Err(multipart::Stopped::Store(e)) => {
                Err(WriteError::Store(self.request_failed(rel, e)))
            }
        }
    }

    async fn delete_all(&self, rels: &[String]) -> Result<(), StoreError> {
        let paths: Vec<Result<StorePath, object_store::Error>> = rels
            .iter()
            .map(|rel| self.path(rel))
            .collect::<Result<Vec<_>, StoreError>>()?
            .into_iter()
            .map(Ok)
            .collect();
        let deleted = self
            .store
            .delete_stream(futures::stream::iter(paths).boxed());
        let mut deleted = std::pin::pin!(deleted);
        while let Some(result) = deleted.next().await {
            match result {
                Ok(_) => {}
                Err(e) if self.is_absent(&e) => {}
                Err(e) => return Err(self.request_failed("(files to delete)", e)),
            }
        }
        Ok(())
    }

    /// A conditional DELETE names the version itself (or, without one, the caller checks first).
    fn checks_before_delete(&self) -> bool {
        false
    }

    /// A cloud store repairs nothing on its own.
    fn take_notes(&self) -> Vec<String> {
        Vec::new()
    }

    async fn delete(&self, rel: &str, expected: &Token) -> Result<(), WriteError> {
        let path = self.path(rel).map_err(WriteError::Refused)?;
        let Some(deleter) = &self.deleter else {
            return self.delete_unconditionally(&path, rel).await;
        };
        match deleter.delete(&path, expected).await {
            delete::Outcome::Deleted => Ok(()),
            delete::Outcome::Conflict => Err(WriteError::Conflict),
            delete::Outcome::Failed(message) => Err(WriteError::Store(StoreError::Failed {
                path: rel.to_string(),
                message,
            })),
            // A request it cannot sign (S3 without signatures): the version was just checked,
            // so delete as before, with the documented window.
            delete::Outcome::Unsupported(why) => {
                if crate::trace::enabled() {
                    crate::trace::line(&format!(
                        "store: DELETE {rel}: cannot delete on condition ({why}); deleting after the check"
                    ));
                }
                self.delete_unconditionally(&path, rel).await
            }
        }
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
}
