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
fn s3_on_seaweedfs_meets_put_opts() {
    let bucket = fresh_bucket(Where::SeaweedFs);
    let store: Arc<dyn ObjectStore> = cloud(Where::SeaweedFs).unwrap().store(&bucket);
    block_on(put_opts(store.as_ref(), true));
}

/// object_store's own client sends quoted ETags, which RGW 16 refuses: `make test-ceph` runs
/// this on RGW 20 only (the helper sends RGW 16 unquoted ones once its store check found it).
#[test]
#[ignore = "needs Ceph RGW: make test-ceph"]
fn s3_on_rgw_meets_put_opts() {
    let bucket = fresh_bucket(Where::Rgw);
    let store: Arc<dyn ObjectStore> = cloud(Where::Rgw).unwrap().store(&bucket);
    block_on(put_opts(store.as_ref(), true));
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

/// The helper's own `Store` on every backend: the operations pushes and reads rely on, with the
/// same outcomes everywhere (conditional create, update and delete and their refusals, ranged
/// listing with ETags, size limits, absent files). Reads only over plain HTTP.
mod helper_store {
    use git_remote_fdl::store::{Store, StoreError, StoreUrl, WriteError, WriteMode};

    use crate::support::clouds::block_on;
    use crate::support::{LakeBuilder, TestEnv, Where};

    const TAGS: usize = 25;

    fn files() -> LakeBuilder {
        let mut l = LakeBuilder::new();
        for i in 0..TAGS {
            l.put(&format!("refs/tags/t{i:02}"), format!("tag {i}\n"));
        }
        l.put("versions/a/version.json", "{}");
        l.put("versions/b/version.json", "{}");
        l.put("big", vec![b'x'; 100]);
        l.put("empty", Vec::new());
        // Two whole parts of a ranged download and a piece of a third, each byte its place's.
        l.put(
            "parts",
            (0..PARTS_FILE)
                .map(|i| (i % 251) as u8)
                .collect::<Vec<u8>>(),
        );
        l
    }

    const PARTS_FILE: usize = (16 << 20) + 12_345;

    /// A whole file streamed, or `None` when there is none.
    async fn downloaded(store: &Store, rel: &str) -> Option<Vec<u8>> {
        let mut got = Vec::new();
        let mut sink = |c: &[u8]| {
            got.extend_from_slice(c);
            Ok(())
        };
        let found = store.download(rel, 1 << 30, &mut sink).await.unwrap();
        found.then_some(got)
    }

    fn open(place: Where, t: &mut TestEnv) -> Store {
        let at = t.lake_at(place, "conformance", &files());
        match place {
            Where::Local => {
                let url = StoreUrl::parse(at.dir.to_str().unwrap(), std::path::Path::new("/"));
                Store::open(&url.unwrap(), &[]).unwrap()
            }
            cloud => crate::backends::open_store(cloud, &at.url),
        }
    }

    fn tag(i: usize) -> String {
        format!("refs/tags/t{i:02}")
    }

    /// Absent files, size limits, and a file's version as a read gives it.
    async fn reads(store: &Store) {
        assert_eq!(store.get("absent", 10).await.unwrap(), None);
        assert!(store.get_versioned("absent", 10).await.unwrap().is_none());
        assert!(!store.is_file("nothing/here").await.unwrap());
        let big = store.get("big", 99).await;
        assert!(
            matches!(big, Err(StoreError::TooLarge { limit: 99, .. })),
            "{big:?}"
        );
        assert_eq!(store.get("big", 100).await.unwrap().unwrap().len(), 100);
        let mut streamed = 0;
        let mut sink = |c: &[u8]| {
            streamed += c.len();
            Ok(())
        };
        let over = store.download("big", 50, &mut sink).await;
        assert!(matches!(over, Err(StoreError::TooLarge { .. })), "{over:?}");
        assert!(streamed <= 100);
        // Downloads come in ranged parts on cloud stores: an empty file has no range to give,
        // a larger one comes whole and in order, an absent one is none.
        assert_eq!(downloaded(store, "absent").await, None);
        assert_eq!(downloaded(store, "empty").await, Some(Vec::new()));
        let parts = downloaded(store, "parts").await.expect("the file");
        assert_eq!(parts.len(), PARTS_FILE);
        assert!(parts.iter().enumerate().all(|(i, b)| *b == (i % 251) as u8));
        let held = store.get_held(&tag(3), 1 << 10).await.unwrap().unwrap();
        assert_eq!(&held.bytes[..], b"tag 3\n");
        assert!(store.is_file(&tag(3)).await.unwrap());
    }

    /// Conditional create, update and delete, and each one's refusal once the file changed.
    async fn writes(store: &Store) {
        let rel = "refs/heads/conformance";
        let created = store
            .put(rel, "1\n".into(), &WriteMode::Create)
            .await
            .unwrap();
        let again = store.put(rel, "2\n".into(), &WriteMode::Create).await;
        assert!(matches!(again, Err(WriteError::Conflict)), "{again:?}");
        let read = store.get_versioned(rel, 1 << 10).await.unwrap().unwrap();
        assert_eq!(&read.bytes[..], b"1\n");
        let updated = store
            .put(rel, "3\n".into(), &WriteMode::Update(read.token.clone()))
            .await
            .unwrap();
        assert_ne!(updated, created);
        let stale = store
            .put(rel, "4\n".into(), &WriteMode::Update(read.token.clone()))
            .await;
        assert!(matches!(stale, Err(WriteError::Conflict)), "{stale:?}");
        let stale = store.delete(rel, &read.token).await;
        assert!(matches!(stale, Err(WriteError::Conflict)), "{stale:?}");
        let now = store.get_versioned(rel, 1 << 10).await.unwrap().unwrap();
        assert_eq!(&now.bytes[..], b"3\n");
        store.delete(rel, &now.token).await.unwrap();
        assert!(store.get(rel, 1 << 10).await.unwrap().is_none());
        let gone = store.delete(rel, &now.token).await;
        assert!(matches!(gone, Err(WriteError::Conflict)), "{gone:?}");
    }

    /// Ranges of a listing, in order, with ETags where the store's listing gives them (the
    /// ones a write on condition can name on S3 and Azure), split and joined, and folders.
    async fn listings(store: &Store, cloud: bool) {
        let all = store.list("refs/tags/").await.unwrap();
        assert_eq!(all.files, (0..TAGS).map(tag).collect::<Vec<_>>());
        let (after, until) = (tag(4), tag(14));
        let range = store
            .list_range("refs/tags/", Some(&after), Some(&until), None, Some(10))
            .await
            .unwrap();
        assert_eq!(range.files, (5..=14).map(tag).collect::<Vec<_>>());
        assert!(!range.more);
        if cloud {
            let tags = range.e_tags_by_path();
            assert_eq!(tags.len(), 10, "{tags:?}");
        }
        if store.etag_conditions() {
            let read = store
                .get_versioned(&tag(7), 1 << 10)
                .await
                .unwrap()
                .unwrap();
            // Azure lists an ETag without the quotes its GET gives: the same version.
            let bare = |t: Option<&str>| t.map(|t| t.trim_matches('"').to_string());
            assert_eq!(
                bare(read.token.e_tag.as_deref()),
                bare(range.e_tag_of(&tag(7)))
            );
        }
        let first = store
            .list_range("refs/tags/", None, None, Some(3), None)
            .await
            .unwrap();
        if cloud {
            assert_eq!((first.files.len(), first.more), (3, true));
        }
        assert_eq!(first.files[..3], (0..3).map(tag).collect::<Vec<_>>()[..]);
        let names: Vec<String> = (0..TAGS).map(tag).collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let splits = git_remote_fdl::store::even_splits(&names, 7);
        assert_eq!(splits.len(), 3);
        let split = store.list_split("refs/tags/", splits, 7).await.unwrap();
        assert_eq!(split.files, all.files);
        let mut dirs = store.list_dirs("versions/").await.unwrap();
        dirs.sort();
        assert_eq!(dirs, ["a", "b"]);
    }

    fn conformance(place: Where) {
        let mut t = TestEnv::new();
        let store = open(place, &mut t);
        block_on(async {
            reads(&store).await;
            writes(&store).await;
            listings(&store, place != Where::Local).await;
        });
    }

    #[test]
    fn folder() {
        conformance(Where::Local);
    }

    #[test]
    fn s3_on_moto() {
        conformance(Where::S3);
    }

    #[test]
    fn s3_on_seaweedfs() {
        conformance(Where::SeaweedFs);
    }

    #[test]
    fn gcs_on_fake_gcs_server() {
        conformance(Where::Gcs);
    }

    #[test]
    fn azure_on_azurite() {
        conformance(Where::Azure);
    }

    #[test]
    fn http_reads() {
        let t = TestEnv::new();
        let dir = t.path("http-lake");
        files().write_dir(&dir);
        let server = crate::support::http::serve(&dir);
        let url = StoreUrl::parse(&server.url, std::path::Path::new("/")).unwrap();
        let store = Store::open(&url, &[]).unwrap();
        assert!(!store.can_list());
        block_on(reads(&store));
        let refused = block_on(store.put("refs/heads/x", "x".into(), &WriteMode::Create));
        assert!(refused.is_err());
    }
}

/// `fdlConcurrency` bounds every kind of request in flight, not reads alone: many listings,
/// HEADs, writes and deletes at once on a store that answers after a delay never have more
/// than the configured number at the server at the same time.
#[test]
fn concurrency_bounds_listings_and_writes_as_well_as_reads() {
    use futures::future::join_all;
    use git_remote_fdl::store::{Store, StoreUrl, WriteMode};

    const LIMIT: u64 = 3;
    let server = crate::support::s3lite::start_with(64);
    let mut files = std::collections::BTreeMap::new();
    for i in 0..20 {
        files.insert(format!("refs/heads/b{i:02}"), b"x\n".to_vec());
    }
    server.put_files("bounded", "lake/", &files);
    server.set_delay(std::time::Duration::from_millis(30));
    let mut options: Vec<(String, String)> = server
        .env()
        .into_iter()
        .map(|(k, v)| (k.to_ascii_lowercase(), v))
        .collect();
    options.push(("fdl_concurrency".into(), LIMIT.to_string()));
    let url = StoreUrl::parse("s3://bounded/lake/", std::path::Path::new("/")).unwrap();
    let store = Store::open(&url, &options).unwrap();
    let names: Vec<String> = (0..20).map(|i| format!("refs/heads/b{i:02}")).collect();
    let bounded = |what: &str| {
        let c = server.counts();
        assert!(
            c.max_in_flight <= LIMIT && c.max_in_flight >= 2,
            "{what}: {} in flight at once, fdlConcurrency {LIMIT}",
            c.max_in_flight
        );
        server.reset();
    };
    let store = &store;
    block_on(async {
        server.reset();
        join_all(names.iter().map(|n| store.get(n, 10))).await;
        bounded("GET");
        join_all(
            names
                .iter()
                .map(|n| store.list_range("refs/heads/", Some(n), None, None, None)),
        )
        .await;
        bounded("LIST");
        join_all(names.iter().map(|n| store.is_file(n))).await;
        bounded("HEAD");
        let writes = names
            .iter()
            .map(|n| store.put(n, "y\n".into(), &WriteMode::Create));
        join_all(writes).await;
        let news = (0..20)
            .map(|i| format!("refs/tags/n{i}"))
            .collect::<Vec<_>>();
        join_all(
            news.iter()
                .map(|n| store.put(n, "y\n".into(), &WriteMode::Create)),
        )
        .await;
        bounded("PUT");
        let tokens = join_all(news.iter().map(|n| store.get_versioned(n, 10))).await;
        server.reset();
        let deletes = news.iter().zip(&tokens).map(|(n, t)| {
            let token = t.as_ref().unwrap().as_ref().unwrap().token.clone();
            async move { store.delete(n, &token).await }
        });
        join_all(deletes).await;
        bounded("DELETE");
    });
}
