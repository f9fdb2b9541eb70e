//! A cloud client's settings: the helper's defaults (bounded waits, retries) under the user's
//! options, an option's name as the client's key, plain HTTP, and a client that cannot be
//! built, in words.

use std::time::Duration;

use crate::redact::redact;
use crate::store::error::StoreError;
use crate::store::url::StoreUrl;

/// The user's options after the helper's defaults: bounded waits, so a stalled server cannot
/// hang the helper (options may override them), and `allow_http` for an `http://` lake.
pub(in crate::store) fn with_defaults(
    url: &StoreUrl,
    options: &[(String, String)],
) -> Vec<(String, String)> {
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

pub(in crate::store) fn unknown_option(url: &StoreUrl, k: &str) -> StoreError {
    StoreError::Config(format!("unknown store option '{k}' for {url}"))
}

/// A store option's name as one of object_store's configuration keys of the store's kind.
pub(in crate::store) fn config_key<K: std::str::FromStr>(
    url: &StoreUrl,
    k: &str,
) -> Result<K, StoreError> {
    k.to_ascii_lowercase()
        .parse()
        .map_err(|_| unknown_option(url, k))
}

/// A client for an `http://` endpoint never verifies a certificate: it need not read the
/// system's (every file of /etc/ssl/certs, a few milliseconds each session).
pub(in crate::store) const NO_SYSTEM_CERTIFICATES: object_store::ClientConfigKey =
    object_store::ClientConfigKey::NoSystemCertificates;

pub(in crate::store) fn is_plain_http(endpoint: Option<String>) -> bool {
    endpoint.is_some_and(|e| {
        e.get(..7)
            .is_some_and(|s| s.eq_ignore_ascii_case("http://"))
    })
}

/// `options`, plus no system certificates for a plain-HTTP endpoint.
pub(in crate::store) fn with_plain_http(
    options: &[(String, String)],
    plain: bool,
) -> Vec<(String, String)> {
    let mut out = options.to_vec();
    if plain {
        out.push((NO_SYSTEM_CERTIFICATES.as_ref().to_string(), "true".into()));
    }
    out
}

/// A client that cannot be built, in words. A value the client cannot parse is named by its
/// option, never shown (it may be a secret in the wrong place).
pub(in crate::store) fn build_error(
    options: &[(String, String)],
    e: &object_store::Error,
) -> StoreError {
    match crate::store::cloud::answer::unparsable_option(options, e) {
        Some((k, kind)) => StoreError::Setup {
            message: format!(
                "the value of store option '{k}' is not a valid {kind} (not shown: it may hold a secret)"
            ),
            hint: Some(format!(
                "check remote.<remote>.fdlOption {k}=... and the matching environment variable"
            )),
        },
        None => StoreError::Config(redact(&e.to_string())),
    }
}

/// Retries for cloud stores: a few, with backoff, and bounded so a dead server cannot hang us.
pub(in crate::store) fn retry_config() -> object_store::RetryConfig {
    object_store::RetryConfig {
        max_retries: 4,
        retry_timeout: Duration::from_secs(30),
        ..Default::default()
    }
}
