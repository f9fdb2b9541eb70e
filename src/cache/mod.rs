//! The cache under the repository's git dir, an accelerator only: deleting it changes no
//! result. It remembers each version's commit and parents (versions are immutable, so what was
//! computed once holds forever), and each ref file's ETag with the version it held, so that a
//! ref unchanged since the last listing is not read again. The refs are remembered by the
//! lake's URL alone (an ETag names a file's content, whatever lake holds it): the helper needs
//! their names before `fdl.json` is read, to list the refs in the same round trip.
//!
//! The file of refs also holds the commit of each version the refs held (the tips), so that a
//! listing whose refs are all known answers without reading the commits file, whose size
//! grows with history: a no-op fetch costs O(refs), not O(versions).
//!
//! Every line carries its own checksum: a damaged line is ignored (and counted, so the caller
//! can say so), never trusted. A checksum does not catch an edit: a commit read from here is
//! checked against the repository before it is used (`vouch.rs`). New versions
//! are appended; the file is rewritten only when it was missing or unreadable.
//!
//! One file per concern: the cache of one lake (`lake_cache.rs`), its commits file
//! (`commits.rs`, read early by `preload.rs`), the file of refs (`refs_file.rs`), the line
//! format with checksums (`lines.rs`), the files themselves (`disk.rs`), and, in the user's cache,
//! which stores passed the store check (`stores.rs`); the lake's packs a fetch weighed and left
//! (`weighed_packs.rs`).

mod commits;
mod disk;
mod lake_cache;
mod lines;
mod preload;
mod refs_file;
mod stores;
mod weighed_packs;

pub(crate) use disk::root_for;
pub(crate) use lake_cache::Cache;
pub(crate) use preload::Preload;
pub(crate) use refs_file::{remembered, remembered_names};
pub(crate) use stores::{
    forget_store_checked, remember_store_checked, store_checked, StoreChecked,
};
