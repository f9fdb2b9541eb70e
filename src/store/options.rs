//! Store options every store shares: which names some store knows, how object_store reads a
//! boolean, and how many requests are in flight (a cloud client's own settings are
//! `cloud/settings.rs`).

use object_store::ClientConfigKey;

use super::error::StoreError;
use super::url::StoreUrl;

/// Whether `k` is an option some store knows (a folder uses none, but one set for it is no
/// typo then): the manual's "an unknown option is an error" holds for every address.
pub(super) fn is_known_option(k: &str) -> bool {
    let k = k.to_ascii_lowercase();
    k.parse::<object_store::aws::AmazonS3ConfigKey>().is_ok()
        || k.parse::<object_store::gcp::GoogleConfigKey>().is_ok()
        || k.parse::<object_store::azure::AzureConfigKey>().is_ok()
        || k.parse::<ClientConfigKey>().is_ok()
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
