//! The GCS backend's builder: object_store's client, gcloud's credentials file, and the
//! conditional deletes' base URL.

use std::sync::Arc;

use url::Url;

use crate::store::cloud::built::Parts;
use crate::store::cloud::delete::{Deleter, LazyClient};
use crate::store::cloud::endpoint::{check_endpoint, PlainHttp};
use crate::store::cloud::pages::Pages;
use crate::store::cloud::settings::{build_error, retry_config, unknown_option};
use crate::store::error::StoreError;

/// Which credentials to set for GCS.
pub(in crate::store) const CREDENTIALS_HINT: &str =
    "set GOOGLE_APPLICATION_CREDENTIALS (or GOOGLE_SERVICE_ACCOUNT) to a key file";
use crate::store::url::StoreUrl;

pub(in crate::store) fn build_gcs(
    url: &StoreUrl,
    u: &Url,
    options: &[(String, String)],
) -> Result<Parts, StoreError> {
    let config_err = |e: object_store::Error| build_error(options, &e);
    let mut b = object_store::gcp::GoogleCloudStorageBuilder::from_env()
        .with_url(u.as_str())
        .with_retry(retry_config());
    for (k, v) in options {
        // `fdlEndpoint` is the base URL on GCS (an emulator, a private endpoint).
        let k = match k.to_ascii_lowercase().as_str() {
            "endpoint" => "google_base_url".to_string(),
            k => k.to_string(),
        };
        b = b.with_config(k.parse().map_err(|_| unknown_option(url, &k))?, v);
    }
    if let Some(adc) = gcloud_adc_file(&b) {
        b = b.with_config(
            object_store::gcp::GoogleConfigKey::ApplicationCredentials,
            adc,
        );
    }
    let bucket_url = format!(
        "{}/{}",
        gcs_base_url(&b).trim_end_matches('/'),
        u.host_str().unwrap_or_default()
    );
    let gcs = Arc::new(b.build().map_err(config_err)?);
    let deleter = Deleter::Gcs {
        bucket_url,
        credentials: gcs.credentials().clone(),
        client: LazyClient::new("GOOGLE_", options),
    };
    Ok(Parts {
        store: gcs.clone(),
        deleter: Some(deleter),
        pages: Some(Pages::new(gcs)),
    })
}

/// gcloud writes application-default credentials under `CLOUDSDK_CONFIG` when that is set;
/// object_store looks only in `~/.config/gcloud`. Where no other credentials are given, the
/// file in `CLOUDSDK_CONFIG` is named, as gcloud's client libraries find it.
fn gcloud_adc_file(b: &object_store::gcp::GoogleCloudStorageBuilder) -> Option<String> {
    use object_store::gcp::GoogleConfigKey as K;
    let given = [
        K::ServiceAccount,
        K::ServiceAccountKey,
        K::ApplicationCredentials,
        K::BearerToken,
    ]
    .iter()
    .any(|k| b.get_config_value(k).is_some_and(|v| !v.is_empty()));
    let dir = std::env::var_os("CLOUDSDK_CONFIG").filter(|d| !d.is_empty())?;
    let file = std::path::Path::new(&dir).join("application_default_credentials.json");
    (!given && file.is_file()).then(|| file.to_string_lossy().into_owned())
}

/// The GCS base URL object_store will use: the option, else the service account's
/// `gcs_base_url` (emulators), else Google's.
fn gcs_base_url(b: &object_store::gcp::GoogleCloudStorageBuilder) -> String {
    use object_store::gcp::GoogleConfigKey as K;
    if let Some(u) = b.get_config_value(&K::BaseUrl) {
        return u;
    }
    let key = b.get_config_value(&K::ServiceAccountKey).or_else(|| {
        b.get_config_value(&K::ServiceAccount)
            .and_then(|p| std::fs::read_to_string(p).ok())
    });
    key.and_then(|k| serde_json::from_str::<serde_json::Value>(&k).ok())
        .and_then(|v| v.get("gcs_base_url")?.as_str().map(str::to_string))
        .unwrap_or_else(|| "https://storage.googleapis.com".to_string())
}

/// Checks the endpoint's form before the client is built (an emulator may be given plain
/// HTTP by the builder itself).
pub(in crate::store) fn check(
    url: &StoreUrl,
    options: &[(String, String)],
) -> Result<(), StoreError> {
    let mut b = object_store::gcp::GoogleCloudStorageBuilder::from_env();
    for (k, v) in options {
        if let Ok(key) = k.to_ascii_lowercase().parse() {
            b = b.with_config(key, v);
        }
    }
    let endpoint = b.get_config_value(&object_store::gcp::GoogleConfigKey::BaseUrl);
    check_endpoint(url, endpoint.as_deref(), "endpoint", PlainHttp::Allowed)
}
