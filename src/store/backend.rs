//! The operations every store offers, one implementation per backend (a folder, or a cloud
//! store through object_store), and the wrappers (counting, tracing, the gate) around any of
//! them, as object_store's own wrapping stores wrap an `ObjectStore`.

use bytes::Bytes;

use super::budget::Budget;
use super::condition::{Token, Versioned, WriteError, WriteMode};
use super::error::StoreError;

/// A file read within the memory budget: its content, its version, its share of the budget.
pub(crate) struct Got {
    pub bytes: Bytes,
    pub token: Token,
    pub room: tokio::sync::OwnedSemaphorePermit,
}

/// A range of a listing: the files below a folder after `after` and up to `until` included,
/// at most `max` of them; `expected` is about how many the range holds.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Range<'a> {
    pub after: Option<&'a str>,
    pub until: Option<&'a str>,
    pub max: Option<usize>,
    pub expected: Option<usize>,
}

impl Range<'_> {
    /// Whether the relative path `f` is in the range (`max` aside).
    pub(crate) fn holds(&self, f: &str) -> bool {
        self.after.is_none_or(|a| f > a) && self.until.is_none_or(|u| f <= u)
    }
}

/// What a listing found, and how many requests it took (a cloud store lists 1,000 a page).
pub(crate) struct Paged<T> {
    pub found: T,
    pub requests: u64,
}

/// Where a streamed read's chunks go; it refuses a file once it is over its limit.
pub(crate) type Sink<'a> = dyn FnMut(&[u8]) -> Result<(), StoreError> + Send + 'a;

/// What lies directly below a folder: the names of its folders and of its files.
#[derive(Debug, Default)]
pub(crate) struct Below {
    pub dirs: Vec<String>,
    pub files: Vec<String>,
}

/// What a listing found and did not list.
#[derive(Debug, Default)]
pub struct Listed {
    pub files: Vec<String>,
    /// Entries passed over (printable path, why), for the caller to warn about.
    pub skipped: Vec<(String, &'static str)>,
    /// Each file's ETag, beside `files` (the same index), where the store's listing gives one
    /// (cloud stores; a folder's listing has none). Not keyed by path: a listing of a large
    /// lake's `versions/` is most of what a clone holds, and a map would hold each path twice.
    e_tags: Vec<Option<String>>,
    /// The listing stopped at the most files asked for: there may be more after the last.
    pub more: bool,
}

impl Listed {
    pub(crate) fn skip(&mut self, path: String, why: &'static str) {
        self.skipped.push((path, why));
    }

    /// Adds `file`, listed with `e_tag`.
    pub(crate) fn push(&mut self, file: String, e_tag: Option<String>) {
        self.e_tags.resize(self.files.len(), None);
        self.files.push(file);
        self.e_tags.push(e_tag);
    }

    /// The ETag of the `i`th file, if the listing gave one.
    pub(crate) fn e_tag(&self, i: usize) -> Option<&str> {
        self.e_tags.get(i).and_then(Option::as_deref)
    }

    /// The ETag of the `i`th file, taken out (it is `None` afterwards).
    pub(crate) fn take_e_tag(&mut self, i: usize) -> Option<String> {
        self.e_tags.get_mut(i).and_then(Option::take)
    }

    /// The ETag `file` was listed with.
    pub fn e_tag_of(&self, file: &str) -> Option<&str> {
        let i = self.files.iter().position(|f| f == file)?;
        self.e_tag(i)
    }

    /// Each file with the ETag it was listed with, by path.
    pub fn e_tags_by_path(&self) -> std::collections::HashMap<String, String> {
        let tagged = self.files.iter().enumerate();
        tagged
            .filter_map(|(i, f)| Some((f.clone(), self.e_tag(i)?.to_string())))
            .collect()
    }

    /// Adds the files of `other`, which come after these, with their ETags.
    pub(crate) fn append(&mut self, other: Listed) {
        if !other.e_tags.is_empty() || !self.e_tags.is_empty() {
            self.e_tags.resize(self.files.len(), None);
            let tags = other.e_tags.into_iter().chain(std::iter::repeat(None));
            self.e_tags.extend(tags.take(other.files.len()));
        }
        self.files.extend(other.files);
        self.skipped.extend(other.skipped);
    }

    /// Drops a file listed twice in a row (ranges that meet), and its second ETag.
    pub(crate) fn dedup(&mut self) {
        if self.e_tags.is_empty() {
            self.files.dedup();
            return;
        }
        self.e_tags.resize(self.files.len(), None);
        let mut files = std::mem::take(&mut self.files).into_iter();
        let mut tags = std::mem::take(&mut self.e_tags).into_iter();
        for (file, tag) in (&mut files).zip(&mut tags) {
            if self.files.last() != Some(&file) {
                self.files.push(file);
                self.e_tags.push(tag);
            }
        }
    }
}

/// One store's operations, on paths relative to the lake's root, already checked not to leave
/// it. Each method is one request (a listing: as many pages as it takes). No method has a
/// default body, so that a wrapper that forgets to pass one on does not compile
/// (`t/architecture_files.rs` holds it).
#[async_trait::async_trait]
pub(crate) trait Backend: std::fmt::Debug + Send + Sync {
    /// The version of `rel`, `None` when it is no file.
    async fn head(&self, rel: &str) -> Result<Option<Token>, StoreError>;

    /// The whole of `rel` (refused over `limit` bytes), once `budget` has room for it.
    async fn get(&self, rel: &str, limit: u64, budget: &Budget) -> Result<Option<Got>, StoreError>;

    /// The whole of `rel` with its version, outside the budget (small files).
    async fn get_versioned(
        &self,
        rel: &str,
        limit: u64,
        budget: &Budget,
    ) -> Result<Option<Versioned>, StoreError>;

    /// Streams `rel` into `sink` a chunk at a time; `false` when there is no such file.
    async fn download(
        &self,
        rel: &str,
        limit: u64,
        sink: &mut Sink<'_>,
    ) -> Result<bool, StoreError>;

    /// The files below the folder `prefix` in `range`, in order, with their ETags.
    async fn list(&self, prefix: &str, range: Range<'_>) -> Result<Paged<Listed>, StoreError>;

    /// The names of the folders and of the files directly below `prefix`.
    async fn list_dirs(&self, prefix: &str) -> Result<Paged<Below>, StoreError>;

    /// Writes `bytes` to `rel` on condition; the new version.
    async fn put(&self, rel: &str, bytes: Bytes, mode: &WriteMode) -> Result<Token, WriteError>;

    /// Writes the local file `file` to `rel` unless `rel` is there (`WriteError::Conflict`),
    /// a piece at a time: a large file named by its content (a lake's pack), never held whole.
    async fn put_file(&self, rel: &str, file: &std::path::Path) -> Result<(), WriteError>;

    /// Deletes `rel` on condition that it is at version `expected` (a store that cannot send
    /// the condition deletes plainly: the caller checked the version just before).
    async fn delete(&self, rel: &str, expected: &Token) -> Result<(), WriteError>;

    /// Deletes each of `rels` whatever it holds, and says nothing of those not there: for
    /// files only this helper writes, which no one needs once done (one request for a
    /// thousand on S3, which deletes in bulk).
    async fn delete_all(&self, rels: &[String]) -> Result<(), StoreError>;

    /// Whether [`Backend::delete`] checks the version itself, under a lock (a folder): else
    /// the caller asks for it first, which finds most conflicts for the price of a HEAD.
    fn checks_before_delete(&self) -> bool;

    /// Notes about what the store repaired on its own (a stale lock it removed).
    fn take_notes(&self) -> Vec<String>;
}
