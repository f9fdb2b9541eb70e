//! What Git's configuration says about a remote: store options (`remote.<name>.fdlEndpoint`,
//! `fdlRegion`, `fdlProfile`, `fdlAllowHttp`, `fdlOption`), the signature policy, booleans and
//! paths as Git reads them, and the one write: a clone's relative folder address made absolute.

use std::path::PathBuf;

use crate::repo::Repo;
use crate::signatures::{AllowedSigners, Policy, DEFAULT_NAMESPACE};

/// A configuration that cannot be used, with what to do about it.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct RemoteConfigError {
    pub message: String,
    pub hint: Option<String>,
}

/// Git's configuration keys for a remote that hold text, mapped to object_store option names
/// (and the helper's own, `fdl_*`, which the store takes for itself).
pub(crate) const CONFIG_KEYS: [(&str, &str); 4] = [
    ("fdlEndpoint", "endpoint"),
    ("fdlRegion", "region"),
    ("fdlProfile", "aws_profile"),
    ("fdlConcurrency", crate::store::CONCURRENCY_OPTION),
];

/// Whether `name` is the name of a configured remote. Without one (a bare URL), Git passes the
/// URL with its `fdl::` prefix as the remote's name; Git's remote names cannot hold `:` (they
/// follow the ref-name rules), but may hold `/`.
pub(crate) fn is_remote_name(name: &str) -> bool {
    !name.is_empty() && !name.contains([':', '\\']) && !name.chars().any(char::is_control)
}

/// A boolean of remote `name` read with Git's rules (`true`/`yes`/`on`/`1`, a bare key, and
/// their opposites); an error names the key.
pub(crate) fn remote_bool(
    repo: &Repo,
    name: &str,
    key: &str,
) -> Result<Option<bool>, RemoteConfigError> {
    let full = format!("remote.{name}.{key}");
    repo.config_bool(&full).map_err(|_| RemoteConfigError {
        message: format!("bad boolean config value for '{full}'"),
        hint: Some(format!("use true or false: git config {full} true")),
    })
}

/// `remote.<name>.fdlConcurrency` must be a number of requests the store takes; said as Git
/// says a bad number in its configuration.
fn check_concurrency(name: &str, value: &str) -> Result<(), RemoteConfigError> {
    let max = crate::store::MAX_CONCURRENCY;
    let n = value.trim().parse::<usize>().ok();
    if n.is_some_and(|n| (1..=max).contains(&n)) {
        return Ok(());
    }
    let full = format!("remote.{name}.fdlConcurrency");
    Err(RemoteConfigError {
        message: format!(
            "bad numeric config value '{}' for '{full}': not a number from 1 to {max}",
            crate::redact::for_terminal(value)
        ),
        hint: Some(format!(
            "it is how many requests are in flight at once ({} by default on cloud stores): git config {full} 256",
            crate::store::DEFAULT_CONCURRENCY
        )),
    })
}

/// Store options for remote `name` from Git's configuration. Option values are registered as
/// secrets: no message ever shows them.
pub(crate) fn store_options(
    repo: Option<&Repo>,
    name: &str,
) -> Result<Vec<(String, String)>, RemoteConfigError> {
    let Some(repo) = repo.filter(|_| is_remote_name(name)) else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    for (key, option) in CONFIG_KEYS {
        if let Some(v) = repo.config(&format!("remote.{name}.{key}")) {
            crate::redact::register_url_secrets(&v);
            if option == crate::store::CONCURRENCY_OPTION {
                check_concurrency(name, &v)?;
            }
            out.push((option.to_string(), v));
        }
    }
    if let Some(b) = remote_bool(repo, name, "fdlAllowHttp")? {
        out.push(("allow_http".to_string(), b.to_string()));
    }
    let raws = repo.config_all(&format!("remote.{name}.fdlOption"));
    for (i, raw) in raws.iter().enumerate() {
        let pair = raw.split_once('=').map(|(k, v)| (k.trim(), v.trim()));
        if let Some((k, v)) = pair {
            crate::redact::register_option_secret(k, v);
        }
        let which = format!(
            "remote.{name}.fdlOption (value {} of {}, not shown: it may hold a secret)",
            i + 1,
            raws.len()
        );
        let example = "example: git config --add remote.origin.fdlOption aws_skip_signature=true";
        let (k, v) = pair.ok_or_else(|| RemoteConfigError {
            message: format!("{which} is not key=value"),
            hint: Some(example.into()),
        })?;
        if k.is_empty() || !k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(RemoteConfigError {
                message: format!("{which}: its key is not an option name (letters, digits, _)"),
                hint: Some(example.into()),
            });
        }
        if is_boolean_option(k) && crate::store::parse_switch(v).is_none() {
            return Err(RemoteConfigError {
                message: format!("{which}: '{k}' takes true or false"),
                hint: Some(format!(
                    "for example: git config --add remote.{name}.fdlOption {k}=true"
                )),
            });
        }
        out.push((k.to_string(), v.to_string()));
    }
    Ok(out)
}

/// Store options that are switches. The stores read any other word as false, so a typo
/// (`=ture`) would quietly turn one off.
fn is_boolean_option(key: &str) -> bool {
    const SWITCHES: [&str; 13] = [
        "allow_http",
        "allow_invalid_certificates",
        "skip_signature",
        "unsigned_payload",
        "virtual_hosted_style_request",
        "imdsv1_fallback",
        "s3_express",
        "disable_tagging",
        "use_emulator",
        "use_fabric_endpoint",
        "use_azure_cli",
        "http1_only",
        "http2_only",
    ];
    let key = key.to_ascii_lowercase();
    SWITCHES.iter().any(|s| key.ends_with(s))
}

/// The allowed-signers file for remote `name`: `remote.<name>.fdlAllowedSignersFile`, else
/// Git's own `gpg.ssh.allowedSignersFile`.
pub(crate) fn allowed_signers_file(repo: &Repo, name: &str) -> Option<PathBuf> {
    let raw = repo.config(&format!("remote.{name}.fdlAllowedSignersFile"));
    raw.map(|r| expand_home(&r))
        .or_else(|| git_allowed_signers_file(Some(repo)))
}

/// Git's own `gpg.ssh.allowedSignersFile`, from `repo`'s configuration, or outside any
/// repository from the user's and the system's.
pub(crate) fn git_allowed_signers_file(repo: Option<&Repo>) -> Option<PathBuf> {
    const KEY: &str = "gpg.ssh.allowedSignersFile";
    let raw = match repo {
        Some(repo) => repo.config(KEY),
        None => crate::repo::global_config(KEY),
    };
    Some(expand_home(&raw?))
}

/// `~/x` as Git reads paths in its configuration.
pub(crate) fn expand_home(path: &str) -> PathBuf {
    match (path.strip_prefix("~/"), std::env::var_os("HOME")) {
        (Some(rest), Some(home)) => std::path::Path::new(&home).join(rest),
        _ => PathBuf::from(path),
    }
}

/// Whether the lake's packs may be read: `remote.<name>.fdlUsePacks`, else `fdl.usePacks`
/// (outside any repository, the user's and the system's configuration), else yes.
pub(crate) fn use_packs(repo: Option<&Repo>, name: &str) -> Result<bool, RemoteConfigError> {
    const KEY: &str = "fdl.usePacks";
    let bad = |full: &str| RemoteConfigError {
        message: format!("bad boolean config value for '{full}'"),
        hint: Some(format!("use true or false: git config {full} false")),
    };
    let per_remote = match repo.filter(|_| is_remote_name(name)) {
        Some(repo) => remote_bool(repo, name, "fdlUsePacks")?,
        None => None,
    };
    let everywhere = match (per_remote, repo) {
        (Some(_), _) => None,
        (None, Some(repo)) => repo.config_bool(KEY).map_err(|_| bad(KEY))?,
        (None, None) => crate::repo::global_config_bool(KEY).map_err(|_| bad(KEY))?,
    };
    Ok(per_remote.or(everywhere).unwrap_or(true))
}

/// The signature policy of remote `name`, when `remote.<name>.fdlRequireSignatures` is on.
pub(crate) fn signature_policy(
    repo: Option<&Repo>,
    name: &str,
) -> Result<Option<Policy>, RemoteConfigError> {
    let Some(repo) = repo.filter(|_| is_remote_name(name)) else {
        return Ok(None);
    };
    if remote_bool(repo, name, "fdlRequireSignatures")? != Some(true) {
        return Ok(None);
    }
    let Some(path) = allowed_signers_file(repo, name) else {
        return Err(RemoteConfigError {
            message: format!(
                "remote.{name}.fdlRequireSignatures is on, but no allowed signers file is configured"
            ),
            hint: Some(format!(
                "name the keys you trust: git config remote.{name}.fdlAllowedSignersFile ~/.ssh/allowed_signers"
            )),
        });
    };
    let trusted = AllowedSigners::load(&path).map_err(|e| RemoteConfigError {
        message: e.to_string(),
        hint: None,
    })?;
    let namespace = repo
        .config(&format!("remote.{name}.fdlSignatureNamespace"))
        .unwrap_or_else(|| DEFAULT_NAMESPACE.to_string());
    Ok(Some(Policy { trusted, namespace }))
}

/// A clone from a relative folder address (`git clone fdl::lake demo`) records the address as
/// written, but Git runs the helper for every later command from inside the clone, where the
/// same words name another folder. As Git does for its own local clones, the address is
/// recorded absolute: while the repository has no refs yet (a clone, or a first fetch into a new
/// repository, where both readings agree), a `remote.<name>.url` equal to `fdl::<given>` becomes
/// `fdl::<absolute>`. Returns whether it was rewritten.
pub(crate) fn record_absolute_url(
    repo: &Repo,
    name: &str,
    given: &str,
    absolute: &std::path::Path,
) -> Result<bool, crate::git::GitError> {
    let urls = repo.config_all(&format!("remote.{name}.url"));
    if !is_remote_name(name) || urls != [format!("fdl::{given}")] {
        return Ok(false);
    }
    let git = |args: &[&str]| crate::git::Git::new(args);
    let refs = git(&["for-each-ref", "--count=1", "--format=%(refname)"]).output()?;
    if !refs.status.success() || !refs.stdout.is_empty() {
        return Ok(false);
    }
    // Git's configuration holds text: a folder whose name is not UTF-8 stays as written.
    let Some(absolute) = absolute.to_str() else {
        return Ok(false);
    };
    let key = format!("remote.{name}.url");
    git(&["config", &key, &format!("fdl::{absolute}")]).run()?;
    Ok(true)
}

/// The `fdl*` configuration of remote `name` (`pack`'s own clone of the lake is given it):
/// text as it is written, `fdlAllowHttp` as the boolean Git reads (a bare key is true), its
/// error naming this remote.
pub(crate) fn remote_fdl_config(
    repo: &Repo,
    name: &str,
) -> Result<Vec<(String, String)>, RemoteConfigError> {
    // The keys `store_options` reads, from the same list.
    let text_keys = CONFIG_KEYS.iter().map(|(key, _)| *key);
    let keys = text_keys.chain(["fdlOption"]);
    let mut out = Vec::new();
    for key in keys {
        for v in repo.config_all(&format!("remote.{name}.{key}")) {
            out.push((key.to_string(), v));
        }
    }
    if let Some(allow) = remote_bool(repo, name, "fdlAllowHttp")? {
        out.push(("fdlAllowHttp".into(), allow.to_string()));
    }
    Ok(out)
}
