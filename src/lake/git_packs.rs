//! The lake's folder of Git packs (`git-packs/`, an accelerator a lake's maintainer writes with
//! `git-remote-fdl pack`): its paths, and the files read and written there. What the files
//! say, and whether to believe it, is `crate::lake_packs`'s business.

use bytes::Bytes;

use super::handle::Lake;
use super::version_of_key;
use super::VersionId;
use super::PACK_LIST;
use crate::store::{Listed, StoreError, Token, Versioned, WriteError, WriteMode};

/// The folder at the lake's root that holds the packs, their records and their list.
pub(crate) const PACKS_DIR: &str = "git-packs/";
/// A pack's record larger than this is not read (about 300 bytes a version).
pub(crate) const RECORD_LIMIT: u64 = 256 << 20;
/// A claims index larger than this is not read (37 bytes a block of 256 versions: 16 MiB is
/// over 100 million versions).
pub(crate) const CLAIMS_INDEX_LIMIT: u64 = 16 << 20;
/// A block of claims is 256 lines of 78 bytes.
pub(crate) const CLAIMS_BLOCK_LIMIT: u64 = 64 << 10;
/// Blocks of claims written at once.
const CLAIMS_IN_FLIGHT: usize = 32;
/// A pack larger than this is not downloaded.
pub(crate) const PACK_LIMIT: u64 = 16 << 30;

/// Whether `name` is a pack's name as Git makes it (`pack-` and 40 lower-case hex digits):
/// only such names become paths.
pub(crate) fn is_pack_name(name: &str) -> bool {
    name.strip_prefix("pack-").is_some_and(|h| {
        h.len() == 40
            && h.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

/// The ETags of each version's mapped files, as a listing of `versions/` gave them.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct VersionFileEtags {
    pub version_json: Option<String>,
    pub dataset_json: Option<String>,
    /// `version.json.sig`'s, where the version is signed.
    pub signature: Option<String>,
}

/// Each version's mapped files and their ETags, from the parts of a listing of `versions/`
/// (the ETags taken out of them, not copied: a large lake's listing is large).
pub(crate) fn listed_files(
    parts: &mut [Listed],
) -> std::collections::HashMap<VersionId, VersionFileEtags> {
    let mut out: std::collections::HashMap<VersionId, VersionFileEtags> = Default::default();
    for part in parts {
        for i in 0..part.files.len() {
            let key = &part.files[i];
            let Some(id) = version_of_key(key) else {
                continue;
            };
            if key.matches('/').count() != 2 {
                continue;
            }
            type Slot = fn(&mut VersionFileEtags) -> &mut Option<String>;
            let slot: Option<Slot> = match key.rsplit('/').next() {
                Some("version.json") => Some(|e| &mut e.version_json),
                Some("dataset.json") => Some(|e| &mut e.dataset_json),
                Some("version.json.sig") => Some(|e| &mut e.signature),
                _ => None,
            };
            let entry = out.entry(id).or_default();
            if let Some(slot) = slot {
                *slot(entry) = Some(part.take_e_tag(i).unwrap_or_default());
            }
        }
    }
    out
}

fn checked(name: &str) -> Result<(), StoreError> {
    match is_pack_name(name) {
        true => Ok(()),
        false => Err(StoreError::OutsideRoot {
            path: format!("{PACKS_DIR}{name}"),
        }),
    }
}

impl Lake {
    /// `git-packs/list.json` with its token; `None` if there is none.
    pub(crate) async fn pack_list(&self) -> Result<Option<Versioned>, StoreError> {
        let ahead = self.read_ahead.lock().pack_list.take();
        match ahead {
            Some(read) => read,
            None => super::handle::read_pack_list(&self.store).await,
        }
    }

    /// Writes `git-packs/list.json` on condition.
    pub(crate) async fn write_pack_list(
        &self,
        bytes: Bytes,
        mode: &WriteMode,
    ) -> Result<Token, WriteError> {
        self.store.put(PACK_LIST, bytes, mode).await
    }

    /// The record of pack `name` (`git-packs/<name>.json`).
    pub(crate) async fn pack_record(&self, name: &str) -> Result<Option<Bytes>, StoreError> {
        checked(name)?;
        let path = format!("{PACKS_DIR}{name}.json");
        self.store.get(&path, RECORD_LIMIT).await
    }

    /// Streams pack `name` (`git-packs/<name>.pack`) into `sink`, refused past `limit` bytes
    /// (what its record's versions can weigh) and [`PACK_LIMIT`]; `false` if there is none.
    pub(crate) async fn download_pack(
        &self,
        name: &str,
        limit: u64,
        sink: &mut (dyn FnMut(&[u8]) -> std::io::Result<()> + Send),
    ) -> Result<bool, StoreError> {
        checked(name)?;
        let path = format!("{PACKS_DIR}{name}.pack");
        self.store
            .download(&path, limit.min(PACK_LIMIT), sink)
            .await
    }

    /// Writes pack `name` from the local file `pack` (streamed, never held whole) and then its
    /// record, each only if absent: a pack's name is its checksum, so one already there holds
    /// the same objects.
    pub(crate) async fn write_pack(
        &self,
        name: &str,
        pack: &std::path::Path,
        record: Bytes,
    ) -> Result<(), WriteError> {
        checked(name).map_err(WriteError::Refused)?;
        let path = format!("{PACKS_DIR}{name}.pack");
        match self.store.put_file(&path, pack).await {
            Ok(()) | Err(WriteError::Conflict) => {}
            Err(e) => return Err(e),
        }
        let path = format!("{PACKS_DIR}{name}.json");
        match self.store.put(&path, record, &WriteMode::Create).await {
            Ok(_) | Err(WriteError::Conflict) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Writes pack `name`'s claims cut in pieces (`git-packs/<name>.claims/`): the blocks
    /// first, then the index that names them, each only if absent.
    pub(crate) async fn write_claims(
        &self,
        name: &str,
        index: Bytes,
        blocks: Vec<Bytes>,
    ) -> Result<(), WriteError> {
        use futures::StreamExt;
        checked(name).map_err(WriteError::Refused)?;
        let create = |path: String, bytes: Bytes| async move {
            match self.store.put(&path, bytes, &WriteMode::Create).await {
                Ok(_) | Err(WriteError::Conflict) => Ok(()),
                Err(e) => Err(e),
            }
        };
        let writes = blocks
            .into_iter()
            .enumerate()
            .map(|(n, b)| create(format!("{PACKS_DIR}{name}.claims/{n}"), b));
        let mut writes = futures::stream::iter(writes).buffer_unordered(CLAIMS_IN_FLIGHT);
        while let Some(done) = writes.next().await {
            done?;
        }
        create(format!("{PACKS_DIR}{name}.claims/index"), index).await
    }

    /// Pack `name`'s claims index; `None` if the pack has none.
    pub(crate) async fn claims_index(&self, name: &str) -> Result<Option<Bytes>, StoreError> {
        checked(name)?;
        let path = format!("{PACKS_DIR}{name}.claims/index");
        self.store.get(&path, CLAIMS_INDEX_LIMIT).await
    }

    /// Block `n` of pack `name`'s claims; `None` if there is none.
    pub(crate) async fn claims_block(
        &self,
        name: &str,
        n: usize,
    ) -> Result<Option<Bytes>, StoreError> {
        checked(name)?;
        let path = format!("{PACKS_DIR}{name}.claims/{n}");
        self.store.get(&path, CLAIMS_BLOCK_LIMIT).await
    }

    /// The files of version `id` with their ETags, listed on their own: a version written
    /// after `versions/` was listed.
    pub(crate) async fn one_version_file_tags(
        &self,
        id: &VersionId,
    ) -> Result<VersionFileEtags, StoreError> {
        let folder = format!("versions/{id}/");
        let listed = self
            .store
            .list_range(&folder, None, None, None, None)
            .await?;
        Ok(listed_files(&mut [listed]).remove(id).unwrap_or_default())
    }

    /// Every file under `versions/` with its ETag (cloud stores; see
    /// [`Lake::list_version_files`]), by version, from version `from` on (all: `None`).
    /// `newest`: the newest version the refs name, where the ranges end.
    pub(crate) async fn version_file_tags(
        &self,
        from: Option<&VersionId>,
        newest: Option<&VersionId>,
    ) -> Result<std::collections::HashMap<VersionId, VersionFileEtags>, super::LakeError> {
        let mut parts = self.list_version_files(from, newest).await?;
        Ok(listed_files(&mut parts))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_git_pack_names_become_paths() {
        assert!(is_pack_name(&format!("pack-{}", "ab12".repeat(10))));
        for bad in [
            "pack-../../x",
            "pack-AB12AB12AB12AB12AB12AB12AB12AB12AB12AB12",
            "list",
            "pack-abc",
            &format!("pack-{}/x", "a".repeat(40)),
        ] {
            assert!(!is_pack_name(bad), "{bad}");
        }
    }
}
