//! Checks before a client is built: endpoints, plain HTTP without permission, half-set keys and
//! header values a client library would panic on.

use object_store::ClientConfigKey;
use url::Url;

use super::azure::builder_from_env;
use super::error::StoreError;
use super::hints::{hint_allow_http, hint_credentials};
use super::options::truthy;
use super::url::StoreUrl;
use crate::redact::redact;

/// Checks, before any client is built, what a client library would otherwise panic on or
/// report obscurely: endpoint URLs, plain HTTP without permission, half-set AWS keys.
pub(super) fn check_setup(url: &StoreUrl, options: &[(String, String)]) -> Result<(), StoreError> {
    crate::redact::register_env_secrets();
    match url {
        StoreUrl::S3(_) => check_s3(url, options),
        StoreUrl::Gcs(_) => {
            let mut b = object_store::gcp::GoogleCloudStorageBuilder::from_env();
            for (k, v) in options {
                if let Ok(key) = k.to_ascii_lowercase().parse() {
                    b = b.with_config(key, v);
                }
            }
            let endpoint = b.get_config_value(&object_store::gcp::GoogleConfigKey::BaseUrl);
            check_endpoint(url, endpoint.as_deref(), "endpoint", true)
        }
        // GCS and Azure emulators may be given plain HTTP by the builder itself: only the
        // endpoint's form is checked here.
        StoreUrl::Azure(_) => {
            let mut b = builder_from_env()?;
            for (k, v) in options {
                if let Ok(key) = k.to_ascii_lowercase().parse() {
                    b = b.with_config(key, v);
                }
            }
            let endpoint = b.get_config_value(&object_store::azure::AzureConfigKey::Endpoint);
            check_endpoint(url, endpoint.as_deref(), "endpoint", true)
        }
        StoreUrl::Http(_) | StoreUrl::Local(_) => Ok(()),
    }
}

fn check_s3(url: &StoreUrl, options: &[(String, String)]) -> Result<(), StoreError> {
    use object_store::aws::AmazonS3ConfigKey as K;
    let mut b = object_store::aws::AmazonS3Builder::from_env();
    for (k, v) in options {
        if let Ok(key) = k.to_ascii_lowercase().parse() {
            b = b.with_config(key, v);
        }
    }
    let allow = truthy(b.get_config_value(&K::Client(ClientConfigKey::AllowHttp)));
    check_endpoint(
        url,
        b.get_config_value(&K::Endpoint).as_deref(),
        "endpoint",
        allow,
    )?;
    check_endpoint(
        url,
        b.get_config_value(&K::S3Endpoint).as_deref(),
        "S3 endpoint",
        allow,
    )?;
    for (key, what) in [
        (K::MetadataEndpoint, "metadata endpoint"),
        (K::ContainerCredentialsFullUri, "container credentials URI"),
        (K::StsEndpoint, "STS endpoint"),
    ] {
        check_endpoint(url, b.get_config_value(&key).as_deref(), what, true)?;
    }
    check_header_values(url, &b)?;
    let key_id = b.get_config_value(&K::AccessKeyId);
    let secret = b.get_config_value(&K::SecretAccessKey);
    let setup = |message: String| StoreError::Setup {
        message,
        hint: Some(hint_credentials(url)),
    };
    match (key_id.is_some(), secret.is_some()) {
        (true, false) => Err(setup(
            "AWS_ACCESS_KEY_ID is set, but not AWS_SECRET_ACCESS_KEY".to_string(),
        )),
        (false, true) => Err(setup(
            "AWS_SECRET_ACCESS_KEY is set, but not AWS_ACCESS_KEY_ID".to_string(),
        )),
        _ => Ok(()),
    }
}

/// The key ID, session token and region go into HTTP headers, where the client library panics
/// on a control character or non-ASCII text (a stray newline from a copy-paste): refuse them,
/// without showing the value.
fn check_header_values(
    url: &StoreUrl,
    b: &object_store::aws::AmazonS3Builder,
) -> Result<(), StoreError> {
    use object_store::aws::AmazonS3ConfigKey as K;
    for (key, name) in [
        (K::AccessKeyId, "AWS_ACCESS_KEY_ID"),
        (K::Token, "AWS_SESSION_TOKEN"),
        (K::Region, "AWS_REGION"),
    ] {
        let Some(v) = b.get_config_value(&key) else {
            continue;
        };
        let bad_char = v.chars().any(|c| !(c == ' ' || c.is_ascii_graphic()));
        let bad_region = key == K::Region && v.contains(['/', '?', '#', '@', ':', ' ']);
        if bad_char || bad_region {
            return Err(StoreError::Setup {
                message: format!(
                    "{name} (or its store option) holds a character it cannot hold (a blank, a \
                     control character or non-ASCII text; the value is not shown)"
                ),
                hint: Some(match key {
                    K::Region => "a region is a name such as us-east-1".to_string(),
                    _ => hint_credentials(url),
                }),
            });
        }
    }
    Ok(())
}

/// An endpoint must be an `http(s)://host[:port]` URL a client can use (a client library
/// panics on some that are not), and plain HTTP needs the user's permission.
fn check_endpoint(
    url: &StoreUrl,
    value: Option<&str>,
    what: &str,
    allow_http: bool,
) -> Result<(), StoreError> {
    let Some(value) = value else { return Ok(()) };
    let hint = format!(
        "an endpoint is a URL such as http://127.0.0.1:9000 or https://storage.example.org; \
         set it with {}git config remote.<remote>.fdlEndpoint",
        if matches!(url, StoreUrl::S3(_)) {
            "AWS_ENDPOINT_URL or "
        } else {
            ""
        }
    );
    let bad = |why: &str| StoreError::Setup {
        message: format!(
            "the {what} '{}' is not a usable URL: {why}",
            crate::redact::excerpt(&redact(value), 200)
        ),
        hint: Some(hint.clone()),
    };
    if value.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(bad("it holds a blank or a control character"));
    }
    let parsed = Url::parse(value).map_err(|e| bad(&e.to_string()))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(bad("it must start with http:// or https://"));
    }
    if parsed.host_str().is_none_or(str::is_empty) {
        return Err(bad("it names no host"));
    }
    if parsed.scheme() == "http" && !allow_http {
        return Err(StoreError::Setup {
            message: format!(
                "the {what} '{}' is plain HTTP, which is not allowed unless you say so",
                redact(value)
            ),
            hint: Some(hint_allow_http(url)),
        });
    }
    Ok(())
}
