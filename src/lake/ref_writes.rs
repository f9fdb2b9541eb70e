//! Writing refs on condition: a ref file, its deletion, `refs.json`; and reading one ref file
//! back, or a ref in the way of a new one, as a push needs.

use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};

use super::handle::Lake;
use super::names::{check_ref_name, VersionId};
use super::refs::is_writer_file;
use super::small_files;
use super::SMALL_FILE_LIMIT;
use crate::store::{StoreError, Token, WriteError, WriteMode};

impl Lake {
    /// Writes the ref file `name` (a full ref name, which is its path) to hold `version`, on
    /// condition; returns the file's new token.
    pub(crate) async fn write_ref(
        &self,
        name: &str,
        version: &VersionId,
        mode: &WriteMode,
    ) -> Result<Token, WriteError> {
        let bytes = Bytes::from(small_files::render_ref_value(version));
        self.store.put(name, bytes, mode).await
    }

    /// Deletes the ref file `name` if it is still at `expected`.
    pub(crate) async fn delete_ref(&self, name: &str, expected: &Token) -> Result<(), WriteError> {
        self.store.delete(name, expected).await
    }

    /// A ref that cannot exist beside `name` in a Git repository, the first found: a ref named
    /// like one of `name`'s folders (`refs/heads/a` for `refs/heads/a/b`), or one below
    /// `name/`. Object stores hold both; a folder lake cannot.
    pub(crate) async fn conflicting_ref(&self, name: &str) -> Result<Option<String>, StoreError> {
        let parts: Vec<&str> = name.split('/').collect();
        // refs/heads/<folder>/...: the folders below refs/heads/ and refs/tags/.
        let folders: Vec<String> = (3..parts.len()).map(|i| parts[..i].join("/")).collect();
        let found: Vec<bool> = futures::stream::iter(&folders)
            .map(|f| self.store.is_file(f))
            .buffered(self.store.concurrency())
            .try_collect()
            .await?;
        if let Some(i) = found.iter().position(|f| *f) {
            return Ok(Some(folders[i].clone()));
        }
        let below = self.store.list(&format!("{name}/")).await?;
        Ok(below
            .files
            .into_iter()
            .find(|f| !is_writer_file(f) && check_ref_name(f).is_ok()))
    }

    /// One ref file as it is now: `None` if there is none; else its version (`None` if the file
    /// holds no version ID) and its token.
    pub(crate) async fn read_ref(
        &self,
        name: &str,
    ) -> Result<Option<(Option<VersionId>, Token)>, StoreError> {
        let got = self.store.get_versioned(name, SMALL_FILE_LIMIT).await?;
        Ok(got.map(|v| (small_files::parse_ref_value(&v.bytes).ok(), v.token)))
    }

    /// Writes `refs.json` on condition.
    pub(crate) async fn write_refs_json(
        &self,
        bytes: Bytes,
        mode: &WriteMode,
    ) -> Result<Token, WriteError> {
        self.store.put("refs.json", bytes, mode).await
    }
}
