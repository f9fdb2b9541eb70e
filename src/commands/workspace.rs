//! Finding what a human command works on: the repository around it, its fdl remotes, and the
//! lake an address or a remote names, opened with the remote's configuration.

use crate::config;
use crate::fatal::Fatal;
use crate::lake::Lake;
use crate::repo::Repo;
use crate::store::{Store, StoreUrl};

/// Opens a lake from an address typed by a human (with or without `fdl::`).
pub(crate) async fn open_lake(address: &str) -> Result<Lake, Fatal> {
    let url = store_url(address)?;
    let store = Store::open(&url, &[]).map_err(|e| Fatal::cannot_open(&url, &e))?;
    Ok(Lake::open(store).await?)
}

/// The store address a human typed (with or without `fdl::`), from the current folder.
pub(crate) fn store_url(address: &str) -> Result<StoreUrl, Fatal> {
    let address = address.strip_prefix("fdl::").unwrap_or(address);
    StoreUrl::parse(address, &current_dir()?).map_err(|e| Fatal::new(e.to_string()))
}

/// The repository the command runs in: Git's `GIT_DIR`, else the one around the current
/// folder; `None` outside any repository.
pub(crate) fn local_repo() -> Result<Option<Repo>, Fatal> {
    if std::env::var_os("GIT_DIR").is_some() {
        return Repo::from_env().map_err(|e| Fatal::new(e.to_string()));
    }
    let Some(dir) = git_output(&["rev-parse", "--absolute-git-dir"]) else {
        return Ok(None);
    };
    Repo::open(std::path::Path::new(&dir))
        .map(Some)
        .map_err(|e| Fatal::new(e.to_string()))
}

/// The fdl remotes of `repo`: `(name, url)` for every `remote.<name>.url` that starts with
/// `fdl::`, read from Git's configuration through gix.
pub(crate) fn fdl_remotes(repo: &Repo) -> Vec<(String, String)> {
    let mut remotes = repo.remote_urls();
    remotes.retain(|(_, url)| url.starts_with("fdl::"));
    remotes
}

/// The fdl remote of `repo` a command works on: `wanted` if given, else its only one.
pub(crate) fn fdl_remote(repo: &Repo, wanted: Option<&str>) -> Result<String, Fatal> {
    let remotes = fdl_remotes(repo);
    if let Some(w) = wanted {
        return match remotes.iter().any(|(n, _)| n == w) {
            true => Ok(w.to_string()),
            false => Err(Fatal::new(format!(
                "'{w}' is not an fdl remote of this repository"
            ))),
        };
    }
    match remotes.as_slice() {
        [(name, _)] => Ok(name.clone()),
        [] => Err(Fatal::with_hint(
            "this repository has no fdl remote",
            "clone a lake first: git clone fdl::<address> <folder>",
        )),
        many => Err(Fatal::with_hint(
            "this repository has several fdl remotes",
            format!(
                "name one with --remote: {}",
                many.iter()
                    .map(|(n, _)| n.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        )),
    }
}

/// Opens the lake of fdl remote `name`, with the remote's configuration.
pub(crate) async fn open_remote_lake(repo: &Repo, name: &str) -> Result<Lake, Fatal> {
    let url = remote_store_url(repo, name)?;
    let opts = config::store_options(Some(repo), name)?;
    let store = Store::open(&url, &opts).map_err(|e| Fatal::cannot_open(&url, &e))?;
    Ok(Lake::open(store).await?)
}

/// The lake fdl remote `name` names, resolved as Git's helper resolves it: Git runs its
/// helpers at the top of the work tree (in a bare repository, or with `GIT_DIR` and no work
/// tree, where the command runs), so a relative path is taken from there, whatever subfolder
/// the command runs in.
pub(crate) fn remote_store_url(repo: &Repo, name: &str) -> Result<StoreUrl, Fatal> {
    let url = repo
        .config(&format!("remote.{name}.url"))
        .ok_or_else(|| Fatal::new(format!("remote '{name}' has no url")))?;
    let address = url.strip_prefix("fdl::").unwrap_or(&url);
    let relative = !address.contains("://") && !std::path::Path::new(address).is_absolute();
    let base = match relative {
        true => git_output(&["rev-parse", "--show-toplevel"]).map(std::path::PathBuf::from),
        false => None,
    };
    let base = match base {
        Some(top) => top,
        None => current_dir()?,
    };
    StoreUrl::parse(address, &base).map_err(|e| Fatal::new(e.to_string()))
}

/// The fdl remote of `repo` whose lake `address` (typed by a human, from the current folder)
/// names, compared as the helper resolves both: a folder by the path the system resolves.
pub(crate) fn remote_of_address(repo: &Repo, address: &str) -> Option<String> {
    let address = address.strip_prefix("fdl::").unwrap_or(address);
    let typed = StoreUrl::parse(address, &current_dir().ok()?).ok()?;
    let typed = comparable(&typed);
    fdl_remotes(repo)
        .into_iter()
        .map(|(n, _)| n)
        .find(|n| remote_store_url(repo, n).is_ok_and(|url| comparable(&url) == typed))
}

/// A lake's address as two names of one lake agree on it: a folder's path as the system
/// resolves it (links, `..`), a cloud address without its trailing `/`.
fn comparable(url: &StoreUrl) -> String {
    match url {
        StoreUrl::Local(p) => std::fs::canonicalize(p)
            .unwrap_or_else(|_| p.clone())
            .display()
            .to_string(),
        other => other.to_string().trim_end_matches('/').to_string(),
    }
}

fn current_dir() -> Result<std::path::PathBuf, Fatal> {
    std::env::current_dir().map_err(|e| Fatal::new(format!("no current folder: {e}")))
}

pub(crate) fn git_output(args: &[&str]) -> Option<String> {
    crate::git::Git::new(args).value()
}
