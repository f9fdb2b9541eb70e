//! A whole file streamed in ranged parts, each part a request of its own: a large file (a
//! lake's pack, a catalog) never meets the client's per-request timeout however slow the link,
//! and the next part is asked for while one is read, so no round trip is spent between parts.
//! Parts grow on a link fast enough for it, so that a large file costs few requests.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::TryStreamExt;
use object_store::path::Path as StorePath;
use object_store::{GetOptions, GetRange, GetResult, ObjectStore};

use crate::store::error::StoreError;

/// The size of a part: at the default 60 s timeout, a link of 140 KB/s still brings each in
/// time (a part that breaks off is asked for again from where it stopped, by object_store).
pub(crate) const PART: u64 = 8 << 20;

/// The largest part: on a fast link, a 700 MiB pack in 14 requests rather than 88.
const LARGEST_PART: u64 = 64 << 20;

/// How large a part may be: what the link was seen to bring in a quarter of the request's
/// timeout (room for the link to slow down fourfold), at most twice the part before it, and
/// never less than [`PART`] nor more than [`LARGEST_PART`].
fn part_size(previous: u64, seen: Option<(u64, Duration)>, timeout: Duration) -> u64 {
    let Some((bytes, took)) = seen else {
        return PART;
    };
    let rate = bytes as f64 / took.as_secs_f64().max(1e-3);
    let fits = (rate * timeout.as_secs_f64() / 4.0) as u64;
    fits.min(previous.saturating_mul(2))
        .clamp(PART, LARGEST_PART)
}

/// Why a download stopped: the store's error, the sink's (a full disk), or an answer no honest
/// server gives (a file larger than its limit by its own word, parts that disagree).
pub(in crate::store) enum Stopped {
    Store(object_store::Error),
    Sink(StoreError),
    /// The server says the file holds more bytes than the limit for its kind.
    TooLarge,
    /// An answer that contradicts the request or an earlier answer, in words.
    Inconsistent(String),
}

/// Streams `path` into `sink`; `false` when there is no such file (`absent` says which errors
/// mean that). `whole_only` is set once the server answers a range with the whole file (a
/// plain web server without ranges): from then on each file is asked for whole. `timeout`:
/// the client's, for each request (a part's size is chosen to fit it). A file the server says
/// is over `limit` bytes is refused before its first byte is kept.
pub(in crate::store) async fn download(
    store: &Arc<dyn ObjectStore>,
    path: &StorePath,
    (timeout, limit): (Duration, u64),
    whole_only: &AtomicBool,
    absent: &(dyn Fn(&object_store::Error) -> bool + Sync),
    sink: &mut (dyn FnMut(&[u8]) -> Result<(), StoreError> + Send),
) -> Result<bool, Stopped> {
    let mut unclear = None;
    if !whole_only.load(Ordering::Relaxed) {
        let asked = Instant::now();
        match store.get_opts(path, part(0, PART, None)).await {
            Ok(first) => {
                let rest = rest(store, path, (asked, first), (timeout, limit), sink).await;
                return rest.map(|()| true);
            }
            Err(e) if absent(&e) => return Ok(false),
            // object_store's word for "this server answered a range with the whole file".
            Err(object_store::Error::NotSupported { .. }) => {
                whole_only.store(true, Ordering::Relaxed)
            }
            Err(e) if decisive(&e) => return Err(Stopped::Store(e)),
            // A range refused in a way object_store does not name (a file of no bytes, whose
            // every range is unsatisfiable; a cloud client's "non-partial response"): the file
            // is asked for whole, once, and tells which it was.
            Err(e) => unclear = Some(e),
        }
    }
    match store.get_opts(path, GetOptions::default()).await {
        Ok(whole) => {
            if unclear.is_some() && whole.meta.size > 0 {
                // A file with bytes, whose range was refused: the server has no ranges.
                whole_only.store(true, Ordering::Relaxed);
            }
            if whole.meta.size > limit {
                return Err(Stopped::TooLarge);
            }
            let size = whole.meta.size;
            stream(whole, size, sink).await.map(|_| true)
        }
        Err(e) if absent(&e) => Ok(false),
        Err(e) => Err(Stopped::Store(e)),
    }
}

/// Whether an error to a ranged request says all there is: no answer at all (no connection,
/// no answer in time), or an answer about the file or the caller rather than the range.
fn decisive(e: &object_store::Error) -> bool {
    use object_store::Error as E;
    let no_answer = crate::store::error::causes(e).any(|s| {
        s.downcast_ref::<object_store::client::HttpError>()
            .is_some()
    });
    no_answer
        || matches!(
            e,
            E::PermissionDenied { .. }
                | E::Unauthenticated { .. }
                | E::Precondition { .. }
                | E::NotModified { .. }
        )
}

/// Bytes `start..start + size` of the file, of the version with ETag `e_tag` where known (a
/// file replaced between two parts is refused rather than stitched from two contents).
fn part(start: u64, size: u64, e_tag: Option<&String>) -> GetOptions {
    GetOptions {
        range: Some(GetRange::Bounded(start..start + size)),
        if_match: e_tag.cloned(),
        ..GetOptions::default()
    }
}

/// The first part (asked for at the instant given) streamed into `sink`, then every other
/// part, each asked for while the one before it is read, each sized by how fast the last part
/// read came: its bytes over the time from its request to its last byte, as the client's
/// timeout counts it (and, as the part before it was read meanwhile, half the link's rate at
/// worst: room again).
async fn rest(
    store: &Arc<dyn ObjectStore>,
    path: &StorePath,
    (first_asked, first): (Instant, GetResult),
    (timeout, limit): (Duration, u64),
    sink: &mut (dyn FnMut(&[u8]) -> Result<(), StoreError> + Send),
) -> Result<(), Stopped> {
    let size = first.meta.size;
    if size > limit {
        return Err(Stopped::TooLarge);
    }
    // A weak ETag (`W/"..."`, a CDN that compressed the answer) never matches an `If-Match`,
    // whose comparison is strong: the later parts are then asked for without one.
    let e_tag = first.meta.e_tag.clone().filter(|t| !t.starts_with("W/"));
    let mut asked_size = PART;
    let mut next = ask(
        store,
        path,
        first.range.end,
        asked_size,
        size,
        e_tag.as_ref(),
    );
    let first_size = first.range.end - first.range.start;
    let mut seen = Some((
        stream(first, first_size, sink).await?,
        first_asked.elapsed(),
    ));
    while let Some((asked, answer)) = next {
        let got = answer.await.map_err(|e| Stopped::Store(join_error(e)))?;
        let got = got.map_err(Stopped::Store)?;
        if got.meta.size != size {
            // The file cannot change size between parts (the ETag holds it), so one of the
            // answers is false: nothing more is asked of this server for it.
            return Err(Stopped::Inconsistent(format!(
                "the server gave its size as {size} bytes, then as {} bytes",
                got.meta.size
            )));
        }
        asked_size = part_size(asked_size, seen.take(), timeout);
        next = ask(store, path, got.range.end, asked_size, size, e_tag.as_ref());
        let got_size = got.range.end - got.range.start;
        seen = Some((stream(got, got_size, sink).await?, asked.elapsed()));
    }
    Ok(())
}

/// A part asked for: when, and its answer to come.
type Asked = (
    Instant,
    tokio::task::JoinHandle<object_store::Result<GetResult>>,
);

/// The `part_size` bytes from `start` on asked for on a task of its own (its answer's head
/// awaited there, its body read when its turn comes); none once `start` is the end of the
/// file (of `size` bytes).
fn ask(
    store: &Arc<dyn ObjectStore>,
    path: &StorePath,
    start: u64,
    part_size: u64,
    size: u64,
    e_tag: Option<&String>,
) -> Option<Asked> {
    if start >= size {
        return None;
    }
    let options = part(start, part_size, e_tag);
    let (store, path) = (store.clone(), path.clone());
    let answer = tokio::spawn(async move { store.get_opts(&path, options).await });
    Some((Instant::now(), answer))
}

/// Streams an answer's body into `sink`: how many bytes, exactly the `expected` bytes its range
/// (or the whole file's size) gave. A server that sends more, whatever its `Content-Length`
/// says, is cut off there and refused; one that sends fewer is refused too.
async fn stream(
    got: GetResult,
    expected: u64,
    sink: &mut (dyn FnMut(&[u8]) -> Result<(), StoreError> + Send),
) -> Result<u64, Stopped> {
    let mut bytes = 0u64;
    let mut body = got.into_stream();
    while let Some(chunk) = body.try_next().await.map_err(Stopped::Store)? {
        bytes += chunk.len() as u64;
        if bytes > expected {
            return Err(Stopped::Inconsistent(format!(
                "the server sent more than the {expected} bytes its answer was to hold"
            )));
        }
        sink(&chunk).map_err(Stopped::Sink)?;
    }
    if bytes < expected {
        // A body that ended early and cleanly: the next part would start past a gap.
        return Err(Stopped::Inconsistent(format!(
            "the server sent {bytes} of the {expected} bytes its answer was to hold"
        )));
    }
    Ok(bytes)
}

/// A part's task that ended without an answer (the runtime shutting down).
fn join_error(e: tokio::task::JoinError) -> object_store::Error {
    object_store::Error::Generic {
        store: "download",
        source: Box::new(e),
    }
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
        let (timeout, whole) = (Duration::from_secs(60), AtomicBool::new(false));
        let found = download(
            &store,
            &path,
            (timeout, u64::MAX),
            &whole,
            &never,
            &mut sink,
        )
        .await;
        assert!(matches!(found, Ok(true)));
        assert_eq!(got, data);
    }

    #[test]
    fn parts_grow_with_the_link_and_stay_within_the_timeout() {
        let minute = Duration::from_secs(60);
        let second = Duration::from_secs(1);
        // Nothing seen yet: the smallest part.
        assert_eq!(part_size(PART, None, minute), PART);
        // A fast link: twice the part before, up to the largest.
        assert_eq!(
            part_size(PART, Some((PART, second / 100)), minute),
            2 * PART
        );
        let fast = Some((LARGEST_PART, second / 100));
        assert_eq!(part_size(LARGEST_PART, fast, minute), LARGEST_PART);
        // 1 MB/s and a timeout of a minute: 15 MB a part.
        let mb = Some((1_000_000, second));
        assert_eq!(part_size(LARGEST_PART, mb, minute), 15_000_000);
        // A slow link or a short timeout: never below the smallest part.
        assert_eq!(part_size(4 * PART, mb, Duration::from_secs(3)), PART);
    }
}
