//! What to set when a store refuses, by kind: each kind's credentials hint is its own
//! (`aws_credentials.rs`, `gcs.rs`, `azure.rs`), gathered here for the diagnosis of a
//! request that failed. `remote.<remote>.` in a hint is filled in by the helper.

use crate::store::url::StoreUrl;

/// Which credentials to set for a store at `url`.
pub(in crate::store) fn hint_credentials(url: &StoreUrl) -> String {
    match url {
        StoreUrl::S3(_) => crate::store::cloud::aws_credentials::CREDENTIALS_HINT,
        StoreUrl::Gcs(_) => crate::store::cloud::gcs::CREDENTIALS_HINT,
        StoreUrl::Azure(_) => crate::store::cloud::azure::CREDENTIALS_HINT,
        StoreUrl::Http(_) | StoreUrl::Local(_) => "check the address",
    }
    .to_string()
}

/// How to allow plain HTTP to a store at `url`.
pub(in crate::store) fn hint_allow_http(url: &StoreUrl) -> String {
    let variable = match url {
        StoreUrl::S3(_) => Some(crate::store::cloud::s3::ALLOW_HTTP_VARIABLE),
        StoreUrl::Azure(_) => Some(crate::store::cloud::azure::ALLOW_HTTP_VARIABLE),
        _ => None,
    };
    crate::store::cloud::endpoint::allow_http_hint(variable)
}
