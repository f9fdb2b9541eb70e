//! Tags announced by pushes racing for `refs.json`: a push that lost the race writes one small
//! file a tag it made, `git-refs-pending/<version>/refs/tags/<name>`, so that whichever racer
//! writes `refs.json` next carries every announced tag, and the others find theirs carried
//! (one write for many writers, not one each). Only tags: a tag never moves once made, so an
//! announcement is true for as long as it can be read. Read by listing: the key names the tag
//! and its version, and nothing is read but the listing.

use bytes::Bytes;

use super::handle::Lake;
use super::names::{check_ref_name, VersionId};
use crate::store::{StoreError, WriteError, WriteMode};

/// Where announcements are kept, beside `git-packs/`: files of this helper's own.
pub(crate) const ANNOUNCED_DIR: &str = "git-refs-pending/";

/// The most announcements one listing reads: one page of a cloud store.
const READ_AT_MOST: usize = 1000;

/// A tag a racing push made, as its announcement names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Announced {
    /// The announcement's path, to delete it once `refs.json` carries the tag.
    pub path: String,
    pub name: String,
    pub version: VersionId,
}

/// The announcement of `name` at `version`.
pub(crate) fn announcement_path(name: &str, version: &VersionId) -> String {
    format!("{ANNOUNCED_DIR}{version}/{name}")
}

/// The tag an announcement's path names; `None` for anything else (a hostile or broken file
/// is passed over: an announcement only saves a round, the ref files are the truth).
pub(crate) fn parse_announcement(path: &str) -> Option<Announced> {
    let rest = path.strip_prefix(ANNOUNCED_DIR)?;
    let (version, name) = rest.split_once('/')?;
    let parsed = VersionId::parse(version).ok()?;
    let ok = parsed.as_str() == version
        && name.starts_with("refs/tags/")
        && check_ref_name(name).is_ok();
    ok.then(|| Announced {
        path: path.to_string(),
        name: name.to_string(),
        version: parsed,
    })
}

impl Lake {
    /// Announces the tags `made` (names and versions), side by side; their paths.
    pub(crate) async fn announce_tags(
        &self,
        made: &[(String, VersionId)],
    ) -> Result<Vec<String>, StoreError> {
        let writes = made.iter().map(|(name, version)| async move {
            let path = announcement_path(name, version);
            // Never empty: a listing passes over empty keys (a console's "folders").
            let body = Bytes::from(format!("{version}\n"));
            match self.store.put(&path, body, &WriteMode::Create).await {
                // Announced already (a retried request's first attempt): the same file.
                Ok(_) | Err(WriteError::Conflict) => Ok(path),
                Err(WriteError::Refused(e) | WriteError::Store(e)) => Err(e),
            }
        });
        futures::future::try_join_all(writes).await
    }

    /// The tags announced now, up to a page of them.
    pub(crate) async fn announced_tags(&self) -> Result<Vec<Announced>, StoreError> {
        let listed = self
            .store
            .list_range(ANNOUNCED_DIR, None, None, Some(READ_AT_MOST), None)
            .await?;
        Ok(listed
            .files
            .iter()
            .filter_map(|f| parse_announcement(f))
            .collect())
    }

    /// Deletes announcements that `refs.json` now carries (again after the store's throttling
    /// pause: GCS answers a delete within a second of the write 429).
    pub(crate) async fn forget_announced(&self, paths: &[String]) -> Result<(), StoreError> {
        self.store.delete_all(paths).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_announcement_names_a_tag_and_its_version_and_nothing_else_is_taken() {
        let v = VersionId::parse("0190f3a2-7b4c-7d2e-8f10-000000000001").unwrap();
        let path = announcement_path("refs/tags/r/1", &v);
        assert_eq!(
            path,
            "git-refs-pending/0190f3a2-7b4c-7d2e-8f10-000000000001/refs/tags/r/1"
        );
        let read = parse_announcement(&path).unwrap();
        assert_eq!((read.name.as_str(), &read.version), ("refs/tags/r/1", &v));
        for hostile in [
            "git-refs-pending/0190f3a2-7b4c-7d2e-8f10-000000000001/refs/heads/main",
            "git-refs-pending/not-a-version/refs/tags/x",
            "git-refs-pending/0190F3A2-7B4C-7D2E-8F10-000000000001/refs/tags/x",
            "git-refs-pending/0190f3a2-7b4c-7d2e-8f10-000000000001/refs/tags/a..b",
            "git-refs-pending/0190f3a2-7b4c-7d2e-8f10-000000000001",
            "refs/tags/x",
        ] {
            assert_eq!(parse_announcement(hostile), None, "{hostile}");
        }
    }
}
