//! Opening a cloud or HTTP store: the checks first, then the builder of its kind.

use object_store::path::Path as StorePath;

use crate::store::cloud::settings::with_defaults;
use crate::store::cloud::Cloud;
use crate::store::error::StoreError;
use crate::store::url::StoreUrl;

/// Builds a cloud or HTTP store, the path of the lake's root inside it, and how it deletes on
/// condition (not over plain HTTP).
pub(in crate::store) fn build_remote(
    url: &StoreUrl,
    options: &[(String, String)],
) -> Result<Cloud, StoreError> {
    crate::redact::register_env_secrets();
    match url {
        StoreUrl::S3(_) => crate::store::cloud::s3::check(url, options)?,
        StoreUrl::Gcs(_) => crate::store::cloud::gcs::check(url, options)?,
        StoreUrl::Azure(_) => crate::store::cloud::azure::check(url, options)?,
        StoreUrl::Http(_) | StoreUrl::Local(_) => {}
    }
    let options = with_defaults(url, options);
    let (parts, u) = match url {
        StoreUrl::S3(u) => (crate::store::cloud::s3::build_s3(url, u, &options)?, u),
        StoreUrl::Gcs(u) => (crate::store::cloud::gcs::build_gcs(url, u, &options)?, u),
        StoreUrl::Azure(u) => (
            crate::store::cloud::azure::build_azure(url, u, &options)?,
            u,
        ),
        StoreUrl::Http(u) => (crate::store::cloud::http::build_http(url, u, &options)?, u),
        StoreUrl::Local(_) => unreachable!("local folders are not built here"),
    };
    // Azure's abfs form names the container before '@'; az:// names it as the host: either
    // way the lake's root is the URL's path.
    let prefix = StorePath::from_url_path(u.path())
        .map_err(|e| StoreError::Config(format!("bad path in {url}: {e}")))?;
    Ok(Cloud::new(parts, prefix, url, request_timeout(&options)))
}

/// The timeout for each request the options give (the last `timeout` wins, as in the
/// client's builder); a duration the client reads but this does not, taken as the default.
fn request_timeout(options: &[(String, String)]) -> std::time::Duration {
    options
        .iter()
        .rev()
        .find(|(k, _)| k.eq_ignore_ascii_case("timeout"))
        .and_then(|(_, v)| humantime::parse_duration(v).ok())
        .unwrap_or(std::time::Duration::from_secs(60))
}
