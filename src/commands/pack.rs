//! `git-remote-fdl pack` as a command: the lake named, the store checked before the first
//! write, then `lake_packs::make`.

use crate::config;
use crate::fatal::Fatal;

use super::named::open_named;

/// `git-remote-fdl pack <lake | remote>`: the lake's history written as packs in the lake,
/// read through Git with the remote's configuration.
pub async fn pack(
    lake: &str,
    dry_run: bool,
    progress: Option<&(dyn Fn(&str) + Sync)>,
) -> Result<(crate::lake_packs::make::PackSummary, Vec<String>), Fatal> {
    let named = open_named(lake).await?;
    let url = match (&named.repo, &named.remote) {
        (Some(repo), Some(remote)) => super::workspace::remote_store_url(repo, remote)?,
        _ => super::workspace::store_url(lake)?,
    };
    if url.is_read_only() {
        return Err(Fatal::read_only(&url, "packed", "pack"));
    }
    let remote_config = match (&named.repo, &named.remote) {
        (Some(repo), Some(remote)) => config::remote_fdl_config(repo, remote)?,
        _ => Vec::new(),
    };
    let mut pack_warnings = Vec::new();
    if !dry_run {
        // Warnings (the unsafe setting, a scratch key left behind) go with the summary's.
        pack_warnings = crate::safety::before_first_write(
            &named.lake,
            named.repo.as_ref(),
            named.remote.as_deref(),
        )
        .await?;
    }
    let job = crate::lake_packs::make::PackJob {
        lake: &named.lake,
        address: format!("fdl::{}", url.as_address()),
        remote_config,
        dry_run,
        progress,
    };
    let summary = crate::lake_packs::make::pack(&job)
        .await
        .map_err(|e| Fatal::new(e.to_string()))?;
    Ok((summary, pack_warnings))
}
