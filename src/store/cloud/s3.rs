//! The S3 backend's builder: object_store's client with the AWS CLI's credentials and region,
//! and its conditional deletes.

use std::sync::Arc;

use url::Url;

use crate::store::cloud::aws_credentials::CREDENTIALS_HINT;
use crate::store::cloud::built::Parts;
use crate::store::cloud::delete::{Deleter, LazyClient};
use crate::store::cloud::endpoint::{check_endpoint, PlainHttp};
use crate::store::cloud::pages::Pages;
use crate::store::cloud::settings::{
    build_error, config_key, is_plain_http, retry_config, with_plain_http, NO_SYSTEM_CERTIFICATES,
};
use crate::store::error::StoreError;
use crate::store::options::truthy;

/// The variable that allows plain HTTP to S3.
pub(in crate::store) const ALLOW_HTTP_VARIABLE: &str = "AWS_ALLOW_HTTP";
use crate::store::url::StoreUrl;

pub(in crate::store) fn build_s3(
    url: &StoreUrl,
    u: &Url,
    options: &[(String, String)],
) -> Result<Parts, StoreError> {
    let config_err = |e: object_store::Error| build_error(options, &e);
    let mut b = object_store::aws::AmazonS3Builder::from_env()
        .with_url(u.as_str())
        .with_retry(retry_config())
        .with_conditional_put(object_store::aws::S3ConditionalPut::ETagMatch);
    let mut profile = None;
    for (k, v) in options {
        if k.eq_ignore_ascii_case(crate::store::cloud::aws_credentials::PROFILE_OPTION) {
            profile = Some(v.as_str());
            continue;
        }
        b = b.with_config(config_key(url, k)?, v);
    }
    // As in the AWS CLI, the profile is read even with keys in the environment: its region
    // counts, and a named profile that does not exist is an error.
    let profile = crate::store::cloud::aws_credentials::Profile::chosen(profile);
    let (mut b, region) = with_profile_region(b, profile.as_ref())?;
    let unsigned = truthy(b.get_config_value(&object_store::aws::AmazonS3ConfigKey::SkipSignature));
    if unsigned {
        // Never asked for (requests go unsigned); without it object_store would build an
        // instance-metadata client, reading every system root certificate for nothing.
        b = b.with_credentials(Arc::new(object_store::StaticCredentialProvider::new(
            object_store::aws::AwsCredential {
                key_id: String::new(),
                secret_key: String::new(),
                token: None,
            },
        )));
    } else if !has_explicit_credentials(&b) {
        b = with_aws_chain(b, profile, region.clone())?;
    }
    let plain = is_plain_http(b.get_config_value(&object_store::aws::AmazonS3ConfigKey::Endpoint));
    if plain {
        b = b.with_config(
            object_store::aws::AmazonS3ConfigKey::Client(NO_SYSTEM_CERTIFICATES),
            "true",
        );
    }
    let s3 = Arc::new(b.build().map_err(config_err)?);
    let client = LazyClient::new("AWS_", &with_plain_http(options, plain));
    let signer = (!unsigned).then(|| s3.clone() as Arc<dyn object_store::signer::Signer>);
    // S3 Express directory buckets take no start-after: object_store lists those from the
    // start, and so do pages here, by not being used.
    let express = u.host_str().is_some_and(|b| b.ends_with("--x-s3"));
    let pages = (!express).then(|| Pages::new(s3.clone()));
    Ok(Parts {
        store: s3,
        deleter: Some(Deleter::S3(signer, client)),
        pages,
    })
}

/// Keys object_store uses as they are, before any profile: `AWS_ACCESS_KEY_ID` with
/// `AWS_SECRET_ACCESS_KEY` (or their options), as the AWS CLI takes the environment first; or
/// no signing at all (`aws_skip_signature`).
fn has_explicit_credentials(b: &object_store::aws::AmazonS3Builder) -> bool {
    use object_store::aws::AmazonS3ConfigKey as K;
    let set = |k: K| b.get_config_value(&k).is_some_and(|v| !v.is_empty());
    truthy(b.get_config_value(&K::SkipSignature))
        || (set(K::AccessKeyId) && set(K::SecretAccessKey))
}

/// The region object_store will use (STS is asked in it too): the one set, else the profile's
/// (then set), else object_store's default.
fn with_profile_region(
    mut b: object_store::aws::AmazonS3Builder,
    profile: Option<&crate::store::cloud::aws_credentials::Profile>,
) -> Result<(object_store::aws::AmazonS3Builder, String), StoreError> {
    use object_store::aws::AmazonS3ConfigKey as K;
    let from_profile = crate::store::cloud::aws_credentials::profile_region(profile)?;
    let region = match b.get_config_value(&K::Region).filter(|r| !r.is_empty()) {
        Some(r) => r,
        None => {
            if let Some(r) = &from_profile {
                b = b.with_region(r);
            }
            from_profile.unwrap_or_else(|| "us-east-1".to_string())
        }
    };
    Ok((b, region))
}

/// Credentials from the AWS CLI's chain (`aws-config`): the profile's, or web identity,
/// container or instance credentials.
fn with_aws_chain(
    b: object_store::aws::AmazonS3Builder,
    profile: Option<crate::store::cloud::aws_credentials::Profile>,
    region: String,
) -> Result<object_store::aws::AmazonS3Builder, StoreError> {
    use object_store::aws::AmazonS3ConfigKey as K;
    let chain = crate::store::cloud::aws_credentials::AwsChain::new(
        crate::store::cloud::aws_credentials::ChainSettings {
            profile,
            region,
            metadata_endpoint: b.get_config_value(&K::MetadataEndpoint),
        },
    )?;
    Ok(b.with_credentials(Arc::new(chain)))
}

/// Checks, before the client is built, what it would otherwise panic on or report obscurely:
/// endpoint URLs, plain HTTP without permission, half-set keys, header values.
pub(in crate::store) fn check(
    url: &StoreUrl,
    options: &[(String, String)],
) -> Result<(), StoreError> {
    use object_store::aws::AmazonS3ConfigKey as K;
    let mut b = object_store::aws::AmazonS3Builder::from_env();
    for (k, v) in options {
        if let Ok(key) = k.to_ascii_lowercase().parse() {
            b = b.with_config(key, v);
        }
    }
    let allow = truthy(b.get_config_value(&K::Client(object_store::ClientConfigKey::AllowHttp)));
    let plain_http = match allow {
        true => PlainHttp::Allowed,
        false => PlainHttp::Refused {
            variable: Some(ALLOW_HTTP_VARIABLE),
        },
    };
    check_endpoint(
        url,
        b.get_config_value(&K::Endpoint).as_deref(),
        "endpoint",
        plain_http,
    )?;
    check_endpoint(
        url,
        b.get_config_value(&K::S3Endpoint).as_deref(),
        "S3 endpoint",
        plain_http,
    )?;
    for (key, what) in [
        (K::MetadataEndpoint, "metadata endpoint"),
        (K::ContainerCredentialsFullUri, "container credentials URI"),
        (K::StsEndpoint, "STS endpoint"),
    ] {
        check_endpoint(
            url,
            b.get_config_value(&key).as_deref(),
            what,
            PlainHttp::Allowed,
        )?;
    }
    check_header_values(&b)?;
    let key_id = b.get_config_value(&K::AccessKeyId);
    let secret = b.get_config_value(&K::SecretAccessKey);
    let setup = |message: String| StoreError::Setup {
        message,
        hint: Some(CREDENTIALS_HINT.to_string()),
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
fn check_header_values(b: &object_store::aws::AmazonS3Builder) -> Result<(), StoreError> {
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
                    _ => CREDENTIALS_HINT.to_string(),
                }),
            });
        }
    }
    Ok(())
}
