//! Versions: a record and its `dataset.json` read, and the versions under `versions/` listed
//! (a first page, then ranges side by side).

use bytes::Bytes;

use super::error::LakeError;
use super::handle::Lake;
use super::names::VersionId;
use super::record::VersionRecord;
use super::{range_splits, version_of_key, LIST_PAGE};
use super::{DATASET_JSON_LIMIT, SIGNATURE_LIMIT, VERSION_JSON_LIMIT};
use crate::store::{Held, Listed, StoreError};

impl Lake {
    /// A version's record, parsed; `None` if it has none.
    pub(crate) async fn read_record(
        &self,
        id: &VersionId,
    ) -> Result<Option<VersionRecord>, LakeError> {
        let record_path = format!("versions/{id}/version.json");
        let record = self.store.get(&record_path, VERSION_JSON_LIMIT).await;
        let Some(raw) = record.map_err(|e| self.store_err(e))? else {
            return Ok(None);
        };
        let record = VersionRecord::parse(raw).map_err(|why| LakeError::BadVersion {
            lake: self.name(),
            version: id.clone(),
            why: why.to_string(),
        })?;
        Ok(Some(record))
    }

    /// A version's `version.json`, held within the store's memory budget.
    pub(crate) async fn record_held(&self, id: &VersionId) -> Result<Option<Held>, StoreError> {
        let path = format!("versions/{id}/version.json");
        self.store.get_held(&path, VERSION_JSON_LIMIT).await
    }

    /// A version's signature, `version.json.sig`, if it has one.
    pub(crate) async fn signature(&self, id: &VersionId) -> Result<Option<Bytes>, StoreError> {
        let path = format!("versions/{id}/version.json.sig");
        self.store.get(&path, SIGNATURE_LIMIT).await
    }

    /// A version's `dataset.json`, held within the store's memory budget.
    pub(crate) async fn dataset_held(&self, id: &VersionId) -> Result<Option<Held>, StoreError> {
        let path = format!("versions/{id}/dataset.json");
        self.store.get_held(&path, DATASET_JSON_LIMIT).await
    }

    /// The versions under `versions/` (after `after`, if given) that have a record, and for
    /// each whether it has a `dataset.json` (`None` where the store lists folders only). A
    /// cloud store is listed a first page, then, when there is more, in ranges side by side:
    /// version IDs are mostly time-ordered UUIDs, so the ranges split the IDs between the
    /// first page's last and `newest` evenly, as many as the first page's density suggests.
    pub(crate) async fn list_versions(
        &self,
        after: Option<&VersionId>,
        newest: Option<&VersionId>,
    ) -> Result<Vec<(VersionId, Option<bool>)>, LakeError> {
        if self.store.is_local() {
            let ids = self.version_ids().await?;
            return Ok(ids
                .into_iter()
                .filter(|v| after.is_none_or(|a| v > a))
                .map(|v| (v, None))
                .collect());
        }
        let parts = self.list_version_files(after, newest).await?;
        Ok(listed_versions(&parts, after))
    }

    /// Every file of a cloud store under `versions/` (after `after`), with ETags, in parts:
    /// a first page, then, when there is more, ranges listed side by side (see
    /// [`Lake::list_versions`]). A version the first page cut in two is in both parts.
    pub(crate) async fn list_version_files(
        &self,
        after: Option<&VersionId>,
        newest: Option<&VersionId>,
    ) -> Result<Vec<Listed>, LakeError> {
        let start = after.map(before_folder);
        let first = self
            .store
            .list_range("versions/", start.as_deref(), None, Some(LIST_PAGE), None)
            .await
            .map_err(|e| self.store_err(e))?;
        if !first.more {
            return Ok(vec![first]);
        }
        let ids: Vec<VersionId> = first
            .files
            .iter()
            .filter_map(|f| version_of_key(f))
            .collect();
        let mut bounds: Vec<Option<String>> = match (ids.first(), ids.last()) {
            (Some(first_id), Some(last_id)) => {
                let splits = range_splits(first_id, last_id, newest, first.files.len());
                let mut b = vec![Some(before_folder(last_id))];
                b.extend(splits.into_iter().map(|s| Some(format!("versions/{s}"))));
                b
            }
            _ => vec![first.files.last().cloned()],
        };
        bounds.push(None);
        let ranges = bounds.windows(2).map(|w| {
            let (after, until) = (w[0].clone(), w[1].clone());
            async move {
                self.store
                    .list_range("versions/", after.as_deref(), until.as_deref(), None, None)
                    .await
            }
        });
        let parts = futures::future::try_join_all(ranges)
            .await
            .map_err(|e| self.store_err(e))?;
        Ok(std::iter::once(first).chain(parts).collect())
    }

    /// The IDs of every folder under `versions/` (complete or not). Folders whose names are not
    /// version IDs are ignored.
    pub(crate) async fn version_ids(&self) -> Result<Vec<VersionId>, LakeError> {
        let dirs = self
            .store
            .list_dirs("versions/")
            .await
            .map_err(|e| self.store_err(e))?;
        Ok(dirs
            .iter()
            .filter_map(|d| VersionId::parse(d).ok().filter(|v| v.as_str() == d))
            .collect())
    }
}

/// A key that every file of `versions/<id>/` sorts after on every store, for a listing to
/// start after. Not the folder's own key (`versions/<id>`): SeaweedFS, which lists a folder
/// at a time, takes a start-after of a folder's key to mean after all of that folder, and
/// would leave the folder's files out (S3, GCS and Azure compare keys). IDs are 36 characters
/// long, so the ID less its last character is no folder's key and sorts before `<id>`; the
/// files of the few versions that share those 35 characters come with it, and the callers
/// keep only the versions they asked for.
fn before_folder(id: &VersionId) -> String {
    let id = id.as_str();
    format!("versions/{}", &id[..id.len() - 1])
}

/// The versions a listing of `versions/` in parts ([`Lake::list_version_files`]) shows with a
/// record (after `after`), each with whether it has a `dataset.json`.
pub(crate) fn listed_versions(
    parts: &[Listed],
    after: Option<&VersionId>,
) -> Vec<(VersionId, Option<bool>)> {
    let mut found = VersionFiles::default();
    for part in parts {
        found.add(&part.files);
    }
    found.complete(after)
}

/// Files seen in a listing of `versions/`, by version.
#[derive(Default)]
struct VersionFiles {
    /// Per version: has `version.json`, has `dataset.json`.
    seen: std::collections::BTreeMap<VersionId, (bool, bool)>,
}

impl VersionFiles {
    fn add<'a>(&mut self, keys: impl IntoIterator<Item = &'a String>) {
        for key in keys {
            let Some(id) = version_of_key(key) else {
                continue;
            };
            let file = key.rsplit('/').next().unwrap_or("");
            let depth = key.matches('/').count();
            let entry = self.seen.entry(id).or_default();
            match file {
                "version.json" if depth == 2 => entry.0 = true,
                "dataset.json" if depth == 2 => entry.1 = true,
                _ => {}
            }
        }
    }

    /// Versions with a record (others are being written), after `after`.
    fn complete(self, after: Option<&VersionId>) -> Vec<(VersionId, Option<bool>)> {
        self.seen
            .into_iter()
            .filter(|(v, (record, _))| *record && after.is_none_or(|a| v > a))
            .map(|(v, (_, dataset))| (v, Some(dataset)))
            .collect()
    }
}
