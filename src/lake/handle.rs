//! Opening a lake: `fdl.json` checked, `HEAD`, `refs.json` and the ref listing read beside it
//! (each handed out once), and what every reader of the lake shares (name, warnings).

use std::sync::Arc;

use parking_lot::Mutex;

use bytes::Bytes;

use super::error::LakeError;
use super::etags;
use super::small_files::FdlConfig;
use super::{list_ref_folders, PACK_LIST, PACK_LIST_LIMIT, REFS_JSON_LIMIT, SMALL_FILE_LIMIT};
use crate::store::{Listed, Store, StoreError, Versioned};

/// An opened lake; clones share the store and the warnings.
#[derive(Debug, Clone)]
pub(crate) struct Lake {
    pub(super) store: Store,
    pub(super) config: FdlConfig,
    pub(super) warnings: Arc<Mutex<Vec<String>>>,
    pub(super) read_ahead: Arc<Mutex<ReadAhead>>,
    /// Ref files passed over because they hold no version (see [`Lake::broken_refs`]).
    pub(super) broken: Arc<Mutex<std::collections::BTreeSet<String>>>,
    /// The ETags of `fdl.json` and `refs.json` as read on opening: a ref file listed with one
    /// of them is on a store whose ETags name no content (`etags.rs`).
    pub(super) other_tags: Vec<String>,
}

/// Files read with `fdl.json`, each handed out once (a later read asks the store again).
#[derive(Debug, Default)]
pub(super) struct ReadAhead {
    pub(super) head: Option<Result<Option<Bytes>, StoreError>>,
    pub(super) refs_json: Option<Result<Option<Versioned>, StoreError>>,
    /// The listing of `refs/heads/` and `refs/tags/`, made beside `fdl.json` by
    /// [`Lake::open_listing`].
    pub(super) ref_listing: Option<Result<Listed, LakeError>>,
    /// What `refs.json` (as read with `fdl.json`) says each ref holds, kept when `refs.json`
    /// itself is let go: a claim a listed ETag can prove ([`etags::proves`]).
    pub(super) claims: Option<std::collections::HashMap<String, super::VersionId>>,
    /// `git-packs/list.json`, read with `fdl.json` where a clone from a store that cannot list
    /// takes its versions from the packs' records ([`Lake::open_listing`]).
    pub(super) pack_list: Option<Result<Option<Versioned>, StoreError>>,
}

/// Reads `git-packs/list.json`: when the lake is opened ([`Lake::open_listing`]), or later.
pub(super) async fn read_pack_list(store: &Store) -> Result<Option<Versioned>, StoreError> {
    store.get_versioned(PACK_LIST, PACK_LIST_LIMIT).await
}

impl Lake {
    /// Opens a lake: reads and checks `fdl.json`.
    ///
    /// `HEAD` and `refs.json` are read alongside it: every listing needs `HEAD`, and a push (or
    /// a store that cannot list) `refs.json`, so neither costs a round trip of its own later.
    pub(crate) async fn open(store: Store) -> Result<Lake, LakeError> {
        Lake::open_with(store, None, false).await
    }

    /// Opens a lake and lists its refs in the same round trip, for a caller that lists them
    /// next (`git ls-remote`, fetch, push). The listing is split in ranges at `hints` (ref names
    /// seen before, sorted), so that many refs still take one round trip; it is handed out by
    /// the first ref listing, and thrown away if `fdl.json` says this is no lake.
    ///
    /// With `pack_list` (a session that remembers nothing of the lake: most likely a clone, or
    /// a listing outside any repository), `git-packs/list.json` is read in that round trip
    /// too: a clone reads the packs' records (over plain HTTP before any version), a listing
    /// outside a repository their claims or, without packs, every version, and the list would
    /// otherwise cost a round trip of its own.
    pub(crate) async fn open_listing(
        store: Store,
        hints: &[String],
        pack_list: bool,
    ) -> Result<Lake, LakeError> {
        Lake::open_with(store, Some(hints), pack_list).await
    }

    async fn open_with(
        store: Store,
        hints: Option<&[String]>,
        pack_list: bool,
    ) -> Result<Lake, LakeError> {
        let lake = store.url().to_string();
        // A folder lists its refs in one cheap walk when asked; a store that cannot list
        // reads refs.json, which is read here anyway.
        let hints = hints.filter(|_| store.can_list() && !store.is_local());
        let listing = async {
            match hints {
                Some(hints) => Some(list_ref_folders(&store, hints).await),
                None => None,
            }
        };
        let pack_list = async {
            match pack_list && !store.is_local() {
                true => Some(read_pack_list(&store).await),
                false => None,
            }
        };
        // The listing first: its ranges' answers take longest to parse.
        let (ref_listing, raw, head, refs_json, pack_list) = futures::join!(
            listing,
            store.get_versioned("fdl.json", SMALL_FILE_LIMIT),
            store.get("HEAD", SMALL_FILE_LIMIT),
            store.get_versioned("refs.json", REFS_JSON_LIMIT),
            pack_list
        );
        let raw = raw
            .map_err(|source| LakeError::Store {
                lake: lake.clone(),
                source,
            })?
            .ok_or_else(|| LakeError::NotALake { lake: lake.clone() })?;
        let lake_name = lake.clone();
        let config = FdlConfig::parse(&raw.bytes).map_err(|why| LakeError::Config { lake, why })?;
        let refs_json_tag = refs_json.as_ref().ok().and_then(|r| r.as_ref());
        let other_tags = [Some(&raw), refs_json_tag]
            .into_iter()
            .flatten()
            .filter_map(|v| v.token.e_tag.clone())
            .filter(|t| etags::names_something(t))
            .collect();
        Ok(Lake {
            store,
            config,
            warnings: Default::default(),
            broken: Default::default(),
            other_tags,
            read_ahead: Arc::new(Mutex::new(ReadAhead {
                head: Some(head),
                refs_json: Some(refs_json),
                claims: None,
                pack_list,
                ref_listing: ref_listing.map(|l| {
                    l.map_err(|source| LakeError::Store {
                        lake: lake_name.clone(),
                        source,
                    })
                }),
            })),
        })
    }

    /// What `fdl.json` says.
    pub(crate) fn config(&self) -> &FdlConfig {
        &self.config
    }

    /// Whether the store lists its files (every store but plain HTTP).
    pub(crate) fn can_list(&self) -> bool {
        self.store.can_list()
    }

    /// Whether the store's listing gives each file an ETag that shows it unchanged since: a
    /// cloud store's does; a folder's gives none, and plain HTTP does not list.
    pub(crate) fn lists_etags(&self) -> bool {
        self.store.can_list() && !self.store.is_local()
    }

    /// Whether the store is a local folder.
    pub(crate) fn is_local(&self) -> bool {
        self.store.is_local()
    }

    /// How many requests the store keeps in flight (`fdlConcurrency`).
    pub(crate) fn concurrency(&self) -> usize {
        self.store.concurrency()
    }

    /// Whether the store's conditional writes compare ETags.
    pub(crate) fn etag_conditions(&self) -> bool {
        self.store.etag_conditions()
    }

    /// Whether a ref's path is a folder on this store when a ref below it exists (a folder
    /// lake), so that a ref and refs below it cannot both exist.
    pub(crate) fn paths_are_folders(&self) -> bool {
        self.store.paths_are_folders()
    }

    /// The store itself, for what concerns the store and no lake path: the store check before
    /// a first write (`safety`), and `doctor`.
    pub(crate) fn store(&self) -> &Store {
        &self.store
    }

    /// The requests made so far, counted by kind (for the trace).
    pub(crate) fn requests_summary(&self) -> String {
        self.store.stats().summary()
    }

    pub(crate) fn name(&self) -> String {
        self.store.url().to_string()
    }

    pub(super) fn store_err(&self, source: StoreError) -> LakeError {
        LakeError::Store {
            lake: self.name(),
            source,
        }
    }

    /// A warning for the caller to show; every layer above the lake gathers its own here.
    pub(crate) fn warn(&self, msg: String) {
        self.warnings.lock().push(msg);
    }

    /// Warnings gathered so far, with what the store repaired, for the caller to show.
    pub(crate) fn take_warnings(&self) -> Vec<String> {
        let mut out = std::mem::take(&mut *self.warnings.lock());
        let name = self.name();
        out.extend(
            self.store
                .take_notes()
                .into_iter()
                .map(|n| format!("lake '{name}': {n}")),
        );
        out
    }
}
