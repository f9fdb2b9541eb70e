//! A large local file uploaded in parts (S3's multipart upload, GCS's XML multipart upload,
//! Azure's blocks), a few parts in flight: what it costs in memory is the parts in flight,
//! whatever the file's size.

use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;
use object_store::path::Path as StorePath;
use object_store::{ObjectStore, ObjectStoreExt, WriteMultipart};

/// Files up to this size go in one request (with its condition); larger ones in parts.
pub(in crate::store) const IN_PARTS_ABOVE: u64 = 16 << 20;

/// The size of a part (S3 takes no part under 5 MiB but the last).
const PART: usize = 8 << 20;

/// Parts sent at once at most: the memory an upload holds is about this many parts.
const PARTS_IN_FLIGHT: usize = 3;

/// Why an upload stopped: the store would not begin one in parts (some servers take no
/// multipart upload: fake-gcs-server, small S3 servers), the store's error, or the local file's.
pub(in crate::store) enum Stopped {
    NotBegun,
    Store(object_store::Error),
    File(std::io::Error),
    /// A signal is ending the process: the upload was aborted.
    Interrupted,
}

/// Uploads `file` to `path` in parts; on any failure, and on a signal that ends the process
/// (Ctrl-C, a CI's timeout), the upload is aborted, so that no part is left billed in the
/// bucket (as far as the store still answers; a SIGKILL leaves it, for a lifecycle rule).
pub(in crate::store) async fn upload(
    store: &Arc<dyn ObjectStore>,
    path: &StorePath,
    file: &Path,
) -> Result<(), Stopped> {
    let mut source = std::fs::File::open(file).map_err(Stopped::File)?;
    let mut signal = crate::cleanup::abort_on_signal();
    let upload = store
        .put_multipart(path)
        .await
        .map_err(|_| Stopped::NotBegun)?;
    let mut writer = WriteMultipart::new_with_chunk_size(upload, PART);
    loop {
        let read = tokio::task::spawn_blocking(move || {
            let mut part = Vec::with_capacity(PART);
            let got = std::io::Read::read_to_end(
                &mut std::io::Read::take(&mut source, PART as u64),
                &mut part,
            );
            (source, got.map(|_| part))
        })
        .await;
        let part = match read {
            Ok((back, Ok(part))) => {
                source = back;
                part
            }
            Ok((_, Err(e))) => return aborted(writer, Stopped::File(e)).await,
            Err(e) => return aborted(writer, Stopped::File(std::io::Error::other(e))).await,
        };
        if part.is_empty() {
            break;
        }
        match room(&mut writer, PARTS_IN_FLIGHT, &mut signal).await {
            Some(Ok(())) => {}
            Some(Err(e)) => return aborted(writer, Stopped::Store(e)).await,
            None => return interrupted(writer, signal).await,
        }
        writer.put(Bytes::from(part));
        if crate::testhook::reached(crate::testhook::Point::UploadingParts) {
            tokio::select! {
                () = signal.signalled() => return interrupted(writer, signal).await,
                () = tokio::time::sleep(std::time::Duration::from_secs(60)) => {}
            }
        }
    }
    // Every part sent before the one request that completes the upload.
    match room(&mut writer, 0, &mut signal).await {
        Some(Ok(())) => {}
        Some(Err(e)) => return aborted(writer, Stopped::Store(e)).await,
        None => return interrupted(writer, signal).await,
    }
    writer.finish().await.map(|_| ()).map_err(Stopped::Store)
}

/// Waits until at most `parts` are in flight; `None` if a signal came first.
async fn room(
    writer: &mut WriteMultipart,
    parts: usize,
    signal: &mut crate::cleanup::AbortOnSignal,
) -> Option<object_store::Result<()>> {
    tokio::select! {
        biased;
        () = signal.signalled() => None,
        done = writer.wait_for_capacity(parts) => Some(done),
    }
}

/// The upload aborted on a signal, and the signal's handler let go on: it ends the process
/// (128 + the signal), so this returns only if no signal is being handled.
async fn interrupted(
    writer: WriteMultipart,
    signal: crate::cleanup::AbortOnSignal,
) -> Result<(), Stopped> {
    let aborted = aborted(writer, Stopped::Interrupted).await;
    drop(signal);
    crate::cleanup::wait_for_the_signal_to_end_the_process();
    aborted
}

async fn aborted(writer: WriteMultipart, why: Stopped) -> Result<(), Stopped> {
    let _ = writer.abort().await;
    Err(why)
}
