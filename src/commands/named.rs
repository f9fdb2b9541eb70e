//! A lake named on a command line: a remote of the repository around, or an address.

use crate::fatal::Fatal;
use crate::lake::Lake;
use crate::repo::Repo;

use super::workspace::{fdl_remotes, local_repo, open_lake, open_remote_lake, remote_of_address};

/// A lake named on the command line: the name of an fdl remote of the repository around, or an
/// address; an address one of its remotes names is that remote (compared as the helper
/// resolves both), so that the remote's configuration and fetched commits count.
pub(super) struct Named {
    pub(super) lake: Lake,
    pub(super) repo: Option<Repo>,
    pub(super) remote: Option<String>,
}

pub(super) async fn open_named(lake: &str) -> Result<Named, Fatal> {
    let repo = local_repo()?;
    // A remote of another kind named where a lake is expected is not a folder of that name.
    if let Some(repo) = &repo {
        let urls: Vec<String> = repo
            .remote_urls()
            .into_iter()
            .filter(|(n, _)| n == lake)
            .map(|(_, u)| u)
            .collect();
        if !urls.is_empty() && !urls.iter().any(|u| u.starts_with("fdl::")) {
            return Err(Fatal::with_hint(
                format!("'{lake}' is not an fdl remote of this repository (its URL does not start with fdl::)"),
                "name an fdl remote, or give the lake's address (fdl::<address>)",
            ));
        }
    }
    let remote = repo.as_ref().and_then(|repo| {
        match fdl_remotes(repo).into_iter().any(|(n, _)| n == lake) {
            true => Some(lake.to_string()),
            false => remote_of_address(repo, lake),
        }
    });
    let opened = match (&repo, &remote) {
        (Some(repo), Some(name)) => open_remote_lake(repo, name).await?,
        _ => open_lake(lake).await?,
    };
    Ok(Named {
        lake: opened,
        repo,
        remote,
    })
}

/// The lake `doctor` looks at: an address or a remote, opened with the remote's configuration.
pub(super) async fn open_for_doctor(lake: &str) -> Result<Lake, Fatal> {
    Ok(open_named(lake).await?.lake)
}
