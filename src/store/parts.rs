//! A whole file streamed in ranged parts, each part a request of its own: a large file (a
//! lake's pack, a catalog) never meets the client's per-request timeout however slow the link,
//! and the next part is asked for while one is read, so no round trip is spent between parts.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use futures::TryStreamExt;
use object_store::path::Path as StorePath;
use object_store::{GetOptions, GetRange, GetResult, ObjectStore};

use super::error::StoreError;

/// The size of a part: at the default 60 s timeout, a link of 140 KB/s still brings each in
/// time (a part that breaks off is asked for again from where it stopped, by object_store).
pub(crate) const PART: u64 = 8 << 20;

/// Why a download stopped: the store's error, or the sink's (a file over its limit, a full disk).
pub(super) enum Stopped {
    Store(object_store::Error),
    Sink(StoreError),
}

/// Streams `path` into `sink`; `false` when there is no such file (`absent` says which errors
/// mean that). `whole_only` is set once the server answers a range with the whole file (a
/// plain web server without ranges): from then on each file is asked for whole.
pub(super) async fn download(
    store: &Arc<dyn ObjectStore>,
    path: &StorePath,
    whole_only: &AtomicBool,
    absent: &(dyn Fn(&object_store::Error) -> bool + Sync),
    sink: &mut (dyn FnMut(&[u8]) -> Result<(), StoreError> + Send),
) -> Result<bool, Stopped> {
    if !whole_only.load(Ordering::Relaxed) {
        match store.get_opts(path, part(0, None)).await {
            Ok(first) => return rest(store, path, first, sink).await.map(|()| true),
            Err(e) if absent(&e) => return Ok(false),
            Err(e) if !ranges_refused(&e) => return Err(Stopped::Store(e)),
            // A server without ranges, or a file of no bytes (no range of it exists).
            Err(_) => whole_only.store(true, Ordering::Relaxed),
        }
    }
    match store.get_opts(path, GetOptions::default()).await {
        Ok(whole) => stream(whole, sink).await.map(|()| true),
        Err(e) if absent(&e) => Ok(false),
        Err(e) => Err(Stopped::Store(e)),
    }
}

/// Bytes `start..start + PART` of the file, of the version with ETag `e_tag` where known (a
/// file replaced between two parts is refused rather than stitched from two contents).
fn part(start: u64, e_tag: Option<&String>) -> GetOptions {
    GetOptions {
        range: Some(GetRange::Bounded(start..start + PART)),
        if_match: e_tag.cloned(),
        ..GetOptions::default()
    }
}

/// The first part streamed into `sink`, then every other part, each asked for while the one
/// before it is read.
async fn rest(
    store: &Arc<dyn ObjectStore>,
    path: &StorePath,
    first: GetResult,
    sink: &mut (dyn FnMut(&[u8]) -> Result<(), StoreError> + Send),
) -> Result<(), Stopped> {
    let size = first.meta.size;
    // A weak ETag (`W/"..."`, a CDN that compressed the answer) never matches an `If-Match`,
    // whose comparison is strong: the later parts are then asked for without one.
    let e_tag = first.meta.e_tag.clone().filter(|t| !t.starts_with("W/"));
    let mut start = first.range.end;
    let mut next = ask(store, path, start, size, e_tag.as_ref());
    stream(first, sink).await?;
    while let Some(asked) = next {
        let got = asked.await.map_err(|e| Stopped::Store(join_error(e)))?;
        let got = got.map_err(Stopped::Store)?;
        start = got.range.end;
        next = ask(store, path, start, size, e_tag.as_ref());
        stream(got, sink).await?;
    }
    Ok(())
}

type Asked = tokio::task::JoinHandle<object_store::Result<GetResult>>;

/// The part from `start` on asked for on a task of its own (its answer's head awaited there,
/// its body read when its turn comes); none once `start` is the end of the file.
fn ask(
    store: &Arc<dyn ObjectStore>,
    path: &StorePath,
    start: u64,
    size: u64,
    e_tag: Option<&String>,
) -> Option<Asked> {
    if start >= size {
        return None;
    }
    let (store, path, options) = (store.clone(), path.clone(), part(start, e_tag));
    Some(tokio::spawn(
        async move { store.get_opts(&path, options).await },
    ))
}

async fn stream(
    got: GetResult,
    sink: &mut (dyn FnMut(&[u8]) -> Result<(), StoreError> + Send),
) -> Result<(), Stopped> {
    let mut body = got.into_stream();
    while let Some(chunk) = body.try_next().await.map_err(Stopped::Store)? {
        sink(&chunk).map_err(Stopped::Sink)?;
    }
    Ok(())
}

/// A part's task that ended without an answer (the runtime shutting down).
fn join_error(e: tokio::task::JoinError) -> object_store::Error {
    object_store::Error::Generic {
        store: "download",
        source: Box::new(e),
    }
}

/// Whether the server refused or ignored the range itself: answered the whole file (status 200)
/// to a request for part of it, or found no part to give (status 416: a file of no bytes).
fn ranges_refused(e: &object_store::Error) -> bool {
    let text = e.to_string();
    // object_store's words for a status (`status code: 416 Range Not Satisfiable`), never
    // digits alone: a key or a bucket may hold them.
    [
        "non-partial response",
        "status code: 416",
        "Range Not Satisfiable",
        "InvalidRange",
    ]
    .iter()
    .any(|w| text.contains(w))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_file_larger_than_a_part_comes_whole_and_in_order() {
        let store: Arc<dyn ObjectStore> = Arc::new(object_store::memory::InMemory::new());
        let path = StorePath::from("big");
        let data: Vec<u8> = (0..(2 * PART + 12345)).map(|i| (i % 251) as u8).collect();
        object_store::ObjectStoreExt::put(&*store, &path, data.clone().into())
            .await
            .unwrap();
        let mut got = Vec::new();
        let mut sink = |c: &[u8]| {
            got.extend_from_slice(c);
            Ok(())
        };
        let never = |_: &object_store::Error| false;
        let found = download(&store, &path, &AtomicBool::new(false), &never, &mut sink).await;
        assert!(matches!(found, Ok(true)));
        assert_eq!(got, data);
    }
}
