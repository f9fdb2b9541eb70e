//! The folder backend: a lake in a local folder, confined to its root (`confined.rs`), read on
//! blocking threads while its files are not cached (`uncached.rs`), written on condition under lock
//! files (`swap.rs`, `lock.rs`).

pub(crate) mod confined;
mod lock;
pub(crate) mod swap;
mod uncached;

use bytes::Bytes;

use crate::store::backend::{Backend, Below, Got, Listed, Paged, Range, Sink};
use crate::store::budget::Budget;
use crate::store::condition::{Token, Versioned, WriteError, WriteMode};
use crate::store::error::{failed, StoreError};
use confined::LocalDir;
use swap::{Expect, LocalWriteError};
use uncached::DiskWaits;

/// A local folder as a store.
#[derive(Debug, Clone)]
pub(crate) struct Folder {
    dir: LocalDir,
    waits: std::sync::Arc<DiskWaits>,
}

impl Folder {
    pub(in crate::store) fn open(path: &std::path::Path) -> Result<Folder, StoreError> {
        Ok(Folder {
            dir: LocalDir::open(path)?,
            waits: std::sync::Arc::new(DiskWaits::new()),
        })
    }
}

/// A folder's token for a write's condition: its ETag, the file's content token.
fn expect_of(token: &Token) -> Expect {
    Expect::Token(token.e_tag.clone().unwrap_or_default())
}

fn token_of(file_token: String) -> Token {
    Token {
        e_tag: Some(file_token),
        version: None,
    }
}

/// A folder's writes are local system calls: when one fails, the folder knows nothing changed.
fn local_write_error(e: LocalWriteError) -> WriteError {
    match e {
        LocalWriteError::Mismatch => WriteError::Conflict,
        LocalWriteError::Store(s) => WriteError::Refused(s),
    }
}

#[async_trait::async_trait]
impl Backend for Folder {
    async fn head(&self, rel: &str) -> Result<Option<Token>, StoreError> {
        Ok(self.dir.is_file(rel)?.then(Token::default))
    }

    // A cached read takes microseconds, less than a hop to a blocking thread would: reads go
    // to threads only while they wait on the disk.
    async fn get(&self, rel: &str, limit: u64, budget: &Budget) -> Result<Option<Got>, StoreError> {
        let asked = uncached::Asked {
            dir: &self.dir,
            rel,
            limit,
            budget,
        };
        let whole = uncached::read(&self.waits, asked).await?;
        Ok(whole.map(|w| Got {
            bytes: Bytes::from(w.bytes),
            token: Token::default(),
            room: w.room,
        }))
    }

    async fn get_versioned(
        &self,
        rel: &str,
        limit: u64,
        _: &Budget,
    ) -> Result<Option<Versioned>, StoreError> {
        Ok(self
            .dir
            .get_versioned(rel, limit)?
            .map(|(bytes, token)| Versioned {
                token: token_of(token),
                bytes: Bytes::from(bytes),
            }))
    }

    async fn download(
        &self,
        rel: &str,
        limit: u64,
        sink: &mut Sink<'_>,
    ) -> Result<bool, StoreError> {
        let Some(mut file) = self.dir.open_read(rel)? else {
            return Ok(false);
        };
        let size = file.metadata().map_err(|e| failed(rel, e))?.len();
        if size > limit {
            return Err(StoreError::TooLarge {
                path: rel.to_string(),
                limit,
            });
        }
        let mut buf = vec![0u8; 1 << 20];
        loop {
            let n = std::io::Read::read(&mut file, &mut buf).map_err(|e| failed(rel, e))?;
            if n == 0 {
                return Ok(true);
            }
            sink(&buf[..n])?;
        }
    }

    async fn list(&self, prefix: &str, range: Range<'_>) -> Result<Paged<Listed>, StoreError> {
        let dir = self.dir.clone();
        let p = prefix.to_string();
        let mut listed = tokio::task::spawn_blocking(move || dir.list(&p))
            .await
            .map_err(|e| failed(prefix, e))??;
        listed.files.retain(|f| range.holds(f));
        Ok(Paged {
            found: listed,
            requests: 1,
        })
    }

    async fn list_dirs(&self, prefix: &str) -> Result<Paged<Below>, StoreError> {
        let dir = self.dir.clone();
        let p = prefix.to_string();
        let found = tokio::task::spawn_blocking(move || dir.list_dirs(&p))
            .await
            .map_err(|e| failed(prefix, e))??;
        Ok(Paged { found, requests: 1 })
    }

    async fn put(&self, rel: &str, bytes: Bytes, mode: &WriteMode) -> Result<Token, WriteError> {
        let expect = match mode {
            WriteMode::Create => Expect::Absent,
            WriteMode::Update(t) => expect_of(t),
        };
        let dir = self.dir.clone();
        let rel_owned = rel.to_string();
        tokio::task::spawn_blocking(move || dir.put(&rel_owned, &bytes, &expect))
            .await
            .map_err(|e| WriteError::Store(failed(rel, e)))?
            .map(token_of)
            .map_err(local_write_error)
    }

    async fn put_file(&self, rel: &str, file: &std::path::Path) -> Result<(), WriteError> {
        let dir = self.dir.clone();
        let (rel_owned, file) = (rel.to_string(), file.to_path_buf());
        tokio::task::spawn_blocking(move || {
            let mut source =
                std::fs::File::open(&file).map_err(|e| WriteError::Store(failed(&rel_owned, e)))?;
            dir.put_from(&rel_owned, &mut source, &Expect::Absent)
                .map_err(local_write_error)
        })
        .await
        .map_err(|e| WriteError::Store(failed(rel, e)))?
        .map(|_| ())
    }

    async fn delete(&self, rel: &str, expected: &Token) -> Result<(), WriteError> {
        let expect = expect_of(expected);
        let dir = self.dir.clone();
        let rel_owned = rel.to_string();
        tokio::task::spawn_blocking(move || dir.delete(&rel_owned, &expect))
            .await
            .map_err(|e| WriteError::Store(failed(rel, e)))?
            .map_err(local_write_error)
    }

    async fn delete_all(&self, rels: &[String]) -> Result<(), StoreError> {
        let dir = self.dir.clone();
        let rels = rels.to_vec();
        let deleting = tokio::task::spawn_blocking(move || {
            rels.iter().try_for_each(|rel| {
                dir.delete(rel, &Expect::Any)
                    .map_err(|e| match local_write_error(e) {
                        WriteError::Refused(e) | WriteError::Store(e) => e,
                        WriteError::Conflict => StoreError::Failed {
                            path: rel.clone(),
                            message: "changed while it was deleted".into(),
                        },
                    })
            })
        });
        let path = "(files to delete)";
        deleting.await.map_err(|e| failed(path, e))?
    }

    fn checks_before_delete(&self) -> bool {
        true
    }

    fn take_notes(&self) -> Vec<String> {
        self.dir.take_notes()
    }
}
