//! An `object_store::ObjectStore` over the helper's own store for a local folder
//! (`git_remote_fdl::store::Store`), so that object_store's conformance tests can judge the
//! folder's conditional writes as they judge S3, GCS and Azure. Only what those tests use is
//! there: conditional put, get, delete and list; the rest answers `NotImplemented`.

use std::fmt;

use async_trait::async_trait;
use bytes::Bytes;
use futures::stream::BoxStream;
use futures::{StreamExt, TryStreamExt};
use git_remote_fdl::store::{Store, StoreUrl, Token, WriteError, WriteMode};
use object_store::path::Path;
use object_store::{
    CopyOptions, Error, GetOptions, GetResult, GetResultPayload, ListResult, MultipartUpload,
    ObjectMeta, ObjectStore, PutMode, PutMultipartOptions, PutOptions, PutPayload, PutResult,
    Result,
};

/// The largest file read back (the conformance tests write a few bytes).
const READ_LIMIT: u64 = 1 << 20;

#[derive(Debug, Clone)]
pub struct FolderObjectStore {
    store: Store,
}

impl FolderObjectStore {
    /// The helper's store for the folder `root`, opened as a lake URL names it.
    pub fn open(root: &std::path::Path) -> FolderObjectStore {
        let url = StoreUrl::parse(&root.display().to_string(), std::path::Path::new("/")).unwrap();
        FolderObjectStore {
            store: Store::open(&url, &[]).unwrap(),
        }
    }

    async fn read(&self, location: &Path) -> Result<(Bytes, Token)> {
        match self
            .store
            .get_versioned(location.as_ref(), READ_LIMIT)
            .await
        {
            Ok(Some(v)) => Ok((v.bytes, v.token)),
            Ok(None) => Err(Error::NotFound {
                path: location.to_string(),
                source: "no such file in the folder".into(),
            }),
            Err(e) => Err(generic(e)),
        }
    }

    /// Deletes whatever version is there: the folder deletes only on condition, so read the
    /// version first and try again if another writer changed it in between.
    async fn delete_any(&self, location: &Path) -> Result<()> {
        loop {
            let token = match self.read(location).await {
                Ok((_, token)) => token,
                Err(Error::NotFound { .. }) => return Ok(()),
                Err(e) => return Err(e),
            };
            match self.store.delete(location.as_ref(), &token).await {
                Ok(()) => return Ok(()),
                Err(WriteError::Conflict) => continue,
                Err(e) => return Err(generic(e)),
            }
        }
    }
}

fn generic(e: impl std::error::Error + Send + Sync + 'static) -> Error {
    Error::Generic {
        store: "folder",
        source: Box::new(e),
    }
}

fn not_implemented(operation: &str) -> Error {
    Error::NotImplemented {
        operation: operation.to_string(),
        implementer: "FolderObjectStore".to_string(),
    }
}

fn meta(location: &Path, bytes: &Bytes, token: &Token) -> ObjectMeta {
    ObjectMeta {
        location: location.clone(),
        last_modified: chrono::DateTime::UNIX_EPOCH,
        size: bytes.len() as u64,
        e_tag: token.e_tag.clone(),
        version: token.version.clone(),
    }
}

impl fmt::Display for FolderObjectStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "FolderObjectStore({})", self.store.url())
    }
}

#[async_trait]
impl ObjectStore for FolderObjectStore {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> Result<PutResult> {
        let mode = match opts.mode {
            PutMode::Create => WriteMode::Create,
            PutMode::Update(v) => WriteMode::Update(Token {
                e_tag: v.e_tag,
                version: v.version,
            }),
            PutMode::Overwrite => return Err(not_implemented("put (overwrite)")),
        };
        let bytes = Bytes::from(payload);
        match self.store.put(location.as_ref(), bytes, &mode).await {
            Ok(token) => Ok(PutResult {
                e_tag: token.e_tag,
                version: token.version,
                extensions: Default::default(),
            }),
            Err(WriteError::Conflict) if mode == WriteMode::Create => Err(Error::AlreadyExists {
                path: location.to_string(),
                source: "a file is there".into(),
            }),
            Err(WriteError::Conflict) => Err(Error::Precondition {
                path: location.to_string(),
                source: "the file changed or is gone".into(),
            }),
            Err(e) => Err(generic(e)),
        }
    }

    async fn put_multipart_opts(
        &self,
        _: &Path,
        _: PutMultipartOptions,
    ) -> Result<Box<dyn MultipartUpload>> {
        Err(not_implemented("put_multipart"))
    }

    async fn get_opts(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
        if options.range.is_some() || options.if_match.is_some() || options.head {
            return Err(not_implemented("get with options"));
        }
        let (bytes, token) = self.read(location).await?;
        let len = bytes.len() as u64;
        let meta = meta(location, &bytes, &token);
        Ok(GetResult {
            payload: GetResultPayload::Stream(futures::stream::once(async { Ok(bytes) }).boxed()),
            meta,
            range: 0..len,
            attributes: Default::default(),
            extensions: Default::default(),
        })
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, Result<Path>>,
    ) -> BoxStream<'static, Result<Path>> {
        let this = self.clone();
        locations
            .and_then(move |location| {
                let this = this.clone();
                async move {
                    this.delete_any(&location).await?;
                    Ok(location)
                }
            })
            .boxed()
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        let this = self.clone();
        let prefix = prefix.map(|p| format!("{p}/")).unwrap_or_default();
        futures::stream::once(async move {
            let listed = this.store.list(&prefix).await.map_err(generic)?;
            let mut metas = Vec::new();
            for file in listed.files {
                let location = Path::from(file);
                match this.read(&location).await {
                    Ok((bytes, token)) => metas.push(Ok(meta(&location, &bytes, &token))),
                    Err(Error::NotFound { .. }) => {}
                    Err(e) => metas.push(Err(e)),
                }
            }
            Ok::<_, Error>(futures::stream::iter(metas))
        })
        .try_flatten()
        .boxed()
    }

    async fn list_with_delimiter(&self, _: Option<&Path>) -> Result<ListResult> {
        Err(not_implemented("list_with_delimiter"))
    }

    async fn copy_opts(&self, _: &Path, _: &Path, _: CopyOptions) -> Result<()> {
        Err(not_implemented("copy"))
    }
}
