//! `git-remote-fdl ls`: a lake's refs with their commits, as Git would list them.

use crate::fatal::Fatal;
use crate::lake::VersionId;
use crate::mapping::ObjectId;
use crate::progress::Silent;
use crate::remote::Remote;

use super::named::open_named;

/// A lake's refs: `(commit, version, ref name)` in name order, HEAD's target, and warnings.
pub struct RefList {
    /// Each ref's commit, version and full name.
    pub refs: Vec<(ObjectId, VersionId, String)>,
    /// The branch `HEAD` names, if it names one of the refs.
    pub head: Option<String>,
    /// What was passed over on the way, to print as warnings.
    pub warnings: Vec<String>,
}

/// `git-remote-fdl ls <lake | remote>`.
pub async fn ls(address: &str) -> Result<RefList, Fatal> {
    let named = open_named(address).await?;
    let mut remote = Remote::new(named.lake, None);
    let listing = remote.list(&Silent).await;
    let warnings = remote.take_warnings();
    let listing = listing?;
    Ok(RefList {
        refs: listing
            .refs
            .iter()
            .map(|(name, v)| (listing.commits[v], v.clone(), name.clone()))
            .collect(),
        head: listing.head.clone(),
        warnings,
    })
}
