//! Store options: which names a store knows, how object_store reads a boolean, the helper's
//! defaults (bounded waits, retries) and a client that cannot be built, in words.

use std::time::Duration;

use object_store::ClientConfigKey;

use super::error::StoreError;
use super::url::StoreUrl;
use crate::redact::redact;

/// The user's options after the helper's defaults: bounded waits, so a stalled server cannot
/// hang the helper (options may override them), and `allow_http` for an `http://` lake.
pub(super) fn with_defaults(url: &StoreUrl, options: &[(String, String)]) -> Vec<(String, String)> {
    let mut out = vec![
        ("timeout".to_string(), "60s".to_string()),
        ("connect_timeout".to_string(), "10s".to_string()),
    ];
    if let StoreUrl::Http(u) = url {
        // The user wrote http:// themselves: that is their permission to use it.
        if u.scheme() == "http" {
            out.insert(0, ("allow_http".to_string(), "true".to_string()));
        }
    }
    out.extend(options.iter().cloned());
    out
}

pub(super) fn unknown_option(url: &StoreUrl, k: &str) -> StoreError {
    StoreError::Config(format!("unknown store option '{k}' for {url}"))
}

/// Whether `k` is an option some store knows (a folder uses none, but one set for it is no
/// typo then): the manual's "an unknown option is an error" holds for every address.
pub(super) fn is_known_option(k: &str) -> bool {
    let k = k.to_ascii_lowercase();
    k.parse::<object_store::aws::AmazonS3ConfigKey>().is_ok()
        || k.parse::<object_store::gcp::GoogleConfigKey>().is_ok()
        || k.parse::<object_store::azure::AzureConfigKey>().is_ok()
        || k.parse::<ClientConfigKey>().is_ok()
}

/// A store option's name as one of object_store's configuration keys of the store's kind.
pub(super) fn config_key<K: std::str::FromStr>(url: &StoreUrl, k: &str) -> Result<K, StoreError> {
    k.to_ascii_lowercase()
        .parse()
        .map_err(|_| unknown_option(url, k))
}

/// A client for an `http://` endpoint never verifies a certificate: it need not read the
/// system's (every file of /etc/ssl/certs, a few milliseconds each session).
pub(super) const NO_SYSTEM_CERTIFICATES: object_store::ClientConfigKey =
    object_store::ClientConfigKey::NoSystemCertificates;

pub(super) fn is_plain_http(endpoint: Option<String>) -> bool {
    endpoint.is_some_and(|e| {
        e.get(..7)
            .is_some_and(|s| s.eq_ignore_ascii_case("http://"))
    })
}

/// `options`, plus no system certificates for a plain-HTTP endpoint.
pub(super) fn with_plain_http(options: &[(String, String)], plain: bool) -> Vec<(String, String)> {
    let mut out = options.to_vec();
    if plain {
        out.push((NO_SYSTEM_CERTIFICATES.as_ref().to_string(), "true".into()));
    }
    out
}

/// A switch as object_store writes one (`true`, `1`, `on`, `yes`, `y` and their opposites, any
/// case); `None` for any other word, which object_store itself would read as false. Git's own
/// booleans are read by gix (`Repo::config_bool`).
pub(crate) fn parse_switch(value: &str) -> Option<bool> {
    match value.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "on" | "yes" | "y" => Some(true),
        "0" | "false" | "off" | "no" | "n" => Some(false),
        _ => None,
    }
}

/// A switch as object_store reads one: on only if it says so.
pub(super) fn truthy(value: Option<String>) -> bool {
    value.is_some_and(|v| parse_switch(&v) == Some(true))
}

/// A client that cannot be built, in words. A value the client cannot parse is named by its
/// option, never shown (it may be a secret in the wrong place).
pub(super) fn build_error(options: &[(String, String)], e: &object_store::Error) -> StoreError {
    let raw = e.to_string();
    let culprit = options
        .iter()
        .rev()
        .find(|(_, v)| raw.contains(&format!("\"{v}\"")));
    match (raw.split_once("failed to parse"), culprit) {
        (Some((_, rest)), Some((k, _))) => {
            let kind = rest.rsplit(" as ").next().unwrap_or("value").trim();
            StoreError::Setup {
                message: format!(
                    "the value of store option '{k}' is not a valid {kind} (not shown: it may hold a secret)"
                ),
                hint: Some(format!(
                    "check remote.<remote>.fdlOption {k}=... and the matching environment variable"
                )),
            }
        }
        _ => StoreError::Config(redact(&raw)),
    }
}

/// Retries for cloud stores: a few, with backoff, and bounded so a dead server cannot hang us.
pub(super) fn retry_config() -> object_store::RetryConfig {
    object_store::RetryConfig {
        max_retries: 4,
        retry_timeout: Duration::from_secs(30),
        ..Default::default()
    }
}

/// The store option (`remote.<name>.fdlConcurrency` in Git's configuration) that sets how many
/// requests are in flight at once.
pub(crate) const CONCURRENCY_OPTION: &str = "fdl_concurrency";

/// Requests in flight at once on a cloud store unless configured: a round trip there costs
/// tens of milliseconds, so only many at once make reading thousands of files quick.
pub(crate) const DEFAULT_CONCURRENCY: usize = 256;

/// Reads in flight at once in a local folder (they are synchronous: this only spreads them).
pub(super) const LOCAL_CONCURRENCY: usize = 48;

/// The most requests a configuration may put in flight.
pub(crate) const MAX_CONCURRENCY: usize = 4096;

/// Requests in flight for a store at `url`: the default for its kind, or the configured
/// `fdlConcurrency` (1 to [`MAX_CONCURRENCY`]).
pub(super) fn concurrency_of(
    url: &StoreUrl,
    own: &[(String, String)],
) -> Result<usize, StoreError> {
    let mut concurrency = match url {
        StoreUrl::Local(_) => LOCAL_CONCURRENCY,
        _ => DEFAULT_CONCURRENCY,
    };
    for (_, v) in own {
        concurrency = v
            .trim()
            .parse()
            .ok()
            .filter(|n| (1..=MAX_CONCURRENCY).contains(n))
            .ok_or_else(|| {
                StoreError::Config(format!(
                    "fdlConcurrency: '{}' is not a number from 1 to {MAX_CONCURRENCY}",
                    crate::redact::for_terminal(v)
                ))
            })?;
    }
    Ok(concurrency)
}
