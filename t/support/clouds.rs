//! The cloud stores the lake-level tests run on (S3 on moto and on SeaweedFS, GCS on
//! fake-gcs-server, Azure Blob on Azurite), behind one interface: the environment the helper needs to reach each, a fresh
//! bucket, and direct access to its objects as another writer would have.

use std::collections::BTreeMap;
use std::sync::Arc;

use futures::TryStreamExt;
use object_store::path::Path as StorePath;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};

pub use super::servers::{block_on, Cloud};
use super::Where;

/// The server behind a cloud place, started on first use; `None` for a folder.
pub fn cloud(place: Where) -> Option<&'static dyn Cloud> {
    match place {
        Where::Local => None,
        Where::S3 => Some(super::moto::moto()),
        Where::Gcs => Some(super::gcs::gcs()),
        Where::Azure => Some(super::azurite::azurite()),
        Where::SeaweedFs => Some(super::seaweedfs::seaweedfs()),
        Where::Rgw => Some(super::rgw::rgw()),
    }
}

pub fn put_files(store: &dyn ObjectStore, prefix: &str, files: &BTreeMap<String, Vec<u8>>) {
    block_on(async {
        for (path, bytes) in files {
            let p = StorePath::parse(format!("{prefix}{path}")).unwrap();
            store
                .put(&p, PutPayload::from(bytes.clone()))
                .await
                .unwrap_or_else(|e| panic!("put {p}: {e}"));
        }
    });
}

pub fn get(store: &dyn ObjectStore, path: &str) -> Option<Vec<u8>> {
    block_on(async {
        match store.get(&StorePath::parse(path).unwrap()).await {
            Ok(r) => Some(r.bytes().await.unwrap().to_vec()),
            Err(object_store::Error::NotFound { .. }) => None,
            Err(e) => panic!("get {path}: {e}"),
        }
    })
}

pub fn delete(store: &dyn ObjectStore, path: &str) {
    block_on(async {
        let p = StorePath::parse(path).unwrap();
        store
            .delete(&p)
            .await
            .unwrap_or_else(|e| panic!("delete {p}: {e}"));
    })
}

pub fn list(store: &dyn ObjectStore, prefix: &str) -> Vec<String> {
    block_on(async {
        let metas: Vec<_> = store
            .list(Some(&StorePath::from(prefix)))
            .try_collect()
            .await
            .unwrap_or_else(|e| panic!("list {prefix}: {e}"));
        metas.into_iter().map(|m| m.location.to_string()).collect()
    })
}

impl Cloud for super::moto::Moto {
    fn scheme(&self) -> &'static str {
        "s3"
    }
    fn env(&self) -> Vec<(String, String)> {
        super::moto::Moto::env(self)
    }
    fn create_bucket(&self, bucket: &str) {
        super::moto::Moto::create_bucket(self, bucket)
    }
    fn store(&self, bucket: &str) -> Arc<dyn ObjectStore> {
        Arc::new(super::moto::Moto::store(self, bucket))
    }
}
