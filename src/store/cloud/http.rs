//! The plain HTTP(S) backend's builder: read-only, it cannot list.

use std::sync::Arc;

use url::Url;

use crate::store::cloud::built::Parts;
use crate::store::cloud::settings::{
    build_error, config_key, retry_config, NO_SYSTEM_CERTIFICATES,
};
use crate::store::error::StoreError;
use crate::store::url::StoreUrl;

pub(in crate::store) fn build_http(
    url: &StoreUrl,
    u: &Url,
    options: &[(String, String)],
) -> Result<Parts, StoreError> {
    let base = &u[..url::Position::BeforePath];
    let mut b = object_store::http::HttpBuilder::new()
        .with_url(base)
        .with_retry(retry_config());
    for (k, v) in options {
        b = b.with_config(config_key(url, k)?, v);
    }
    if u.scheme() == "http" {
        b = b.with_config(NO_SYSTEM_CERTIFICATES, "true");
    }
    let http = b.build().map_err(|e| build_error(options, &e))?;
    Ok(Parts {
        store: Arc::new(http),
        deleter: None,
        pages: None,
    })
}
