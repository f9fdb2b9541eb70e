//! object_store's own conformance test for conditional writes (`integration::put_opts`), run
//! against each store the helper writes to: S3 on moto, GCS on fake-gcs-server, Azure on
//! Azurite, and a local folder through the helper's own store. Pushes rely on exactly these
//! semantics (create only if absent, update only if unchanged, a lost race is a precondition
//! failure), so a store or emulator that does not meet them is found here, not in a push.

use std::sync::Arc;

use object_store::aws::{AmazonS3Builder, S3ConditionalPut};
use object_store::integration::put_opts;
use object_store::ObjectStore;

use crate::support::clouds::{block_on, cloud};
use crate::support::folder_object_store::FolderObjectStore;
use crate::support::{moto, Where};

/// A bucket of the test's own: `put_opts` first deletes everything in the store it is given.
fn fresh_bucket(place: Where) -> String {
    let bucket = format!("conformance-put-opts-{}", std::process::id());
    cloud(place).unwrap().create_bucket(&bucket);
    bucket
}

#[test]
fn s3_on_moto_meets_put_opts() {
    let bucket = fresh_bucket(Where::S3);
    // The test suite's client with conditional puts named as the helper uses them: If-Match and
    // If-None-Match on PUT.
    let store = AmazonS3Builder::new()
        .with_endpoint(&moto::moto().endpoint)
        .with_bucket_name(&bucket)
        .with_region("us-east-1")
        .with_access_key_id("testing")
        .with_secret_access_key("testing-secret-never-shown")
        .with_allow_http(true)
        .with_conditional_put(S3ConditionalPut::ETagMatch)
        .build()
        .unwrap();
    block_on(put_opts(&store, true));
}

#[test]
fn gcs_on_fake_gcs_server_meets_put_opts() {
    let bucket = fresh_bucket(Where::Gcs);
    let store: Arc<dyn ObjectStore> = cloud(Where::Gcs).unwrap().store(&bucket);
    block_on(put_opts(store.as_ref(), true));
}

#[test]
fn azure_on_azurite_meets_put_opts() {
    let bucket = fresh_bucket(Where::Azure);
    let store: Arc<dyn ObjectStore> = cloud(Where::Azure).unwrap().store(&bucket);
    block_on(put_opts(store.as_ref(), true));
}

#[test]
fn folder_meets_put_opts() {
    let dir = tempfile::tempdir().unwrap();
    let store = FolderObjectStore::open(dir.path());
    block_on(put_opts(&store, true));
    // Again on the same folder: its first step deletes what the first run left (through the
    // adapter's list and conditional delete), or the first create fails.
    block_on(put_opts(&store, true));
    // put_opts wrote through the helper's store: its files are in the folder, and its lock
    // files are gone.
    let mut names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["RACE", "put_opts"]);
}
