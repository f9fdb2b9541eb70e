//! What Git's configuration says about a remote: store options (`remote.<name>.fdlEndpoint`,
//! `fdlRegion`, `fdlAllowHttp`, `fdlOption`), the signature policy, and paths as Git reads them.

use std::path::PathBuf;

use crate::repo::Repo;
use crate::signatures::{AllowedSigners, Policy, DEFAULT_NAMESPACE};

/// A configuration that cannot be used, with what to do about it.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct ConfigError {
    pub message: String,
    pub hint: Option<String>,
}

/// Git's configuration keys for a remote, mapped to object_store option names (and the
/// helper's own, `fdl_*`, which the store takes for itself).
pub const CONFIG_KEYS: [(&str, &str); 4] = [
    ("fdlEndpoint", "endpoint"),
    ("fdlRegion", "region"),
    ("fdlAllowHttp", "allow_http"),
    ("fdlConcurrency", crate::store::CONCURRENCY_OPTION),
];

/// Without a configured remote (a bare URL), Git passes the URL as the remote's name.
fn is_url(name: &str) -> bool {
    name.contains([':', '/', '\\'])
}

/// Store options for remote `name` from Git's configuration.
pub fn store_options(
    repo: Option<&Repo>,
    name: &str,
) -> Result<Vec<(String, String)>, ConfigError> {
    let Some(repo) = repo else {
        return Ok(Vec::new());
    };
    if is_url(name) {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    for (key, option) in CONFIG_KEYS {
        if let Some(v) = repo.config(&format!("remote.{name}.{key}")) {
            out.push((option.to_string(), v));
        }
    }
    for raw in repo.config_all(&format!("remote.{name}.fdlOption")) {
        let (k, v) = raw.split_once('=').ok_or_else(|| ConfigError {
            message: format!(
                "remote.{name}.fdlOption: '{}' is not key=value",
                raw.split('=').next().unwrap_or("")
            ),
            hint: Some(
                "example: git config --add remote.origin.fdlOption aws_skip_signature=true".into(),
            ),
        })?;
        out.push((k.trim().to_string(), v.trim().to_string()));
    }
    Ok(out)
}

/// Whether Git's configuration turns a boolean on (`true`, `yes`, `on`, `1`).
pub fn config_true(value: Option<String>) -> bool {
    value.is_some_and(|v| matches!(v.to_ascii_lowercase().as_str(), "true" | "yes" | "on" | "1"))
}

/// The allowed-signers file for remote `name`: `remote.<name>.fdlAllowedSignersFile`, else
/// Git's own `gpg.ssh.allowedSignersFile`.
pub fn allowed_signers_file(repo: &Repo, name: &str) -> Option<PathBuf> {
    let raw = repo
        .config(&format!("remote.{name}.fdlAllowedSignersFile"))
        .or_else(|| repo.config("gpg.ssh.allowedSignersFile"))?;
    Some(expand_home(&raw))
}

/// `~/x` as Git reads paths in its configuration.
pub fn expand_home(path: &str) -> PathBuf {
    match (path.strip_prefix("~/"), std::env::var_os("HOME")) {
        (Some(rest), Some(home)) => std::path::Path::new(&home).join(rest),
        _ => PathBuf::from(path),
    }
}

/// The signature policy of remote `name`, when `remote.<name>.fdlRequireSignatures` is on.
pub fn signature_policy(repo: Option<&Repo>, name: &str) -> Result<Option<Policy>, ConfigError> {
    let Some(repo) = repo else { return Ok(None) };
    if is_url(name) || !config_true(repo.config(&format!("remote.{name}.fdlRequireSignatures"))) {
        return Ok(None);
    }
    let Some(path) = allowed_signers_file(repo, name) else {
        return Err(ConfigError {
            message: format!(
                "remote.{name}.fdlRequireSignatures is on, but no allowed signers file is configured"
            ),
            hint: Some(format!(
                "name the keys you trust: git config remote.{name}.fdlAllowedSignersFile ~/.ssh/allowed_signers"
            )),
        });
    };
    let trusted = AllowedSigners::load(&path).map_err(|message| ConfigError {
        message,
        hint: None,
    })?;
    let namespace = repo
        .config(&format!("remote.{name}.fdlSignatureNamespace"))
        .unwrap_or_else(|| DEFAULT_NAMESPACE.to_string());
    Ok(Some(Policy { trusted, namespace }))
}
