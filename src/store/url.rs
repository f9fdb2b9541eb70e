//! Store URLs: which backend an address names, how it is shown without secrets, and how a
//! cloud store is built from it, the environment and per-remote options.

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use object_store::path::Path as StorePath;
use object_store::{ClientConfigKey, ObjectStore};
use url::Url;

use super::delete::Deleter;
use super::pages::Pages;
use super::StoreError;
use crate::redact::redact;

/// The address of a lake's root.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StoreUrl {
    Local(PathBuf),
    S3(Url),
    Gcs(Url),
    Azure(Url),
    /// Plain HTTP(S): read-only, cannot list.
    Http(Url),
}

impl StoreUrl {
    /// Parses what follows `fdl::`. Relative paths are taken from `cwd`.
    pub fn parse(s: &str, cwd: &std::path::Path) -> Result<StoreUrl, StoreError> {
        crate::redact::register_url_secrets(s);
        let bad = |why: String| {
            StoreError::Config(format!("'{}' is not a lake address: {why}", redact(s)))
        };
        if s.is_empty() {
            return Err(bad("it is empty".into()));
        }
        let scheme = s.split_once("://").map(|(sc, _)| sc.to_ascii_lowercase());
        let Some(scheme) = scheme else {
            let p = PathBuf::from(s);
            return Ok(StoreUrl::Local(if p.is_absolute() {
                p
            } else {
                cwd.join(p)
            }));
        };
        let url = Url::parse(s).map_err(|e| bad(e.to_string()))?;
        match scheme.as_str() {
            "file" => file_path(s, &url)
                .map(StoreUrl::Local)
                .ok_or_else(|| bad("a file:// URL must name an absolute local path".into())),
            "s3" | "s3a" => Ok(StoreUrl::S3(url)),
            "gs" => Ok(StoreUrl::Gcs(url)),
            "az" | "azure" | "abfs" | "abfss" | "adl" => Ok(StoreUrl::Azure(url)),
            "http" | "https" => Ok(StoreUrl::Http(url)),
            other => Err(bad(format!(
                "unknown scheme '{other}' (use a path, file://, s3://, gs://, az:// or http(s)://)"
            ))),
        }
    }

    /// Only stores that can write on condition take pushes.
    pub fn is_read_only(&self) -> bool {
        matches!(self, StoreUrl::Http(_))
    }
}

/// A `file://` URL's path as written, percent-decoded. `Url` removes `..` segments as text
/// (`/d/link/../lake` becomes `/d/lake`); Git's own `file://` remotes and a plain path leave
/// them to the system, which follows `link` first. `Url` still checks the host and form.
fn file_path(s: &str, url: &Url) -> Option<PathBuf> {
    url.to_file_path().ok()?;
    let rest = s.get("file://".len()..)?;
    let path = &rest[rest.find('/')?..];
    let path = path.split(['?', '#']).next()?;
    let mut bytes = Vec::with_capacity(path.len());
    let mut raw = path.bytes();
    while let Some(b) = raw.next() {
        let hex = |b: Option<u8>| (b? as char).to_digit(16);
        let decoded = match b {
            b'%' => {
                let mut ahead = raw.clone();
                let pair = hex(ahead.next()).zip(hex(ahead.next()));
                pair.map(|(hi, lo)| {
                    raw = ahead;
                    (hi * 16 + lo) as u8
                })
            }
            _ => None,
        };
        bytes.push(decoded.unwrap_or(b));
    }
    let path: std::ffi::OsString = std::os::unix::ffi::OsStringExt::from_vec(bytes);
    Some(PathBuf::from(path))
}

impl fmt::Display for StoreUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreUrl::Local(p) => write!(f, "{}", p.display()),
            StoreUrl::S3(u) | StoreUrl::Gcs(u) | StoreUrl::Azure(u) | StoreUrl::Http(u) => {
                f.write_str(&redact(u.as_str()))
            }
        }
    }
}

/// A built store, the lake's root inside it, its conditional deletes, and its listing in pages
/// of a chosen size (none over plain HTTP, which cannot list).
pub(super) type Remote = (
    Arc<dyn ObjectStore>,
    StorePath,
    Option<Deleter>,
    Option<Pages>,
);

/// Builds a cloud or HTTP store, the path of the lake's root inside it, and how it deletes on
/// condition (not over plain HTTP).
pub(super) fn build_remote(
    url: &StoreUrl,
    options: &[(String, String)],
) -> Result<Remote, StoreError> {
    check_setup(url, options)?;
    let options = with_defaults(url, options);
    let ((store, deleter, pages), u) = match url {
        StoreUrl::S3(u) => (build_s3(url, u, &options)?, u),
        StoreUrl::Gcs(u) => (build_gcs(url, u, &options)?, u),
        StoreUrl::Azure(u) => (build_azure(url, u, &options)?, u),
        StoreUrl::Http(u) => (build_http(url, u, &options)?, u),
        StoreUrl::Local(_) => unreachable!("local folders are not built here"),
    };
    // Azure's abfs form names the container before '@'; az:// names it as the host: either
    // way the lake's root is the URL's path.
    let prefix = StorePath::from_url_path(u.path())
        .map_err(|e| StoreError::Config(format!("bad path in {url}: {e}")))?;
    Ok((store, prefix, deleter, pages))
}

/// A store, how it deletes on condition, and how it lists in pages of a chosen size.
type Built = (Arc<dyn ObjectStore>, Option<Deleter>, Option<Pages>);

/// The user's options after the helper's defaults: bounded waits, so a stalled server cannot
/// hang the helper (options may override them), and `allow_http` for an `http://` lake.
fn with_defaults(url: &StoreUrl, options: &[(String, String)]) -> Vec<(String, String)> {
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

fn unknown_option(url: &StoreUrl, k: &str) -> StoreError {
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
fn config_key<K: std::str::FromStr>(url: &StoreUrl, k: &str) -> Result<K, StoreError> {
    k.to_ascii_lowercase()
        .parse()
        .map_err(|_| unknown_option(url, k))
}

fn build_s3(url: &StoreUrl, u: &Url, options: &[(String, String)]) -> Result<Built, StoreError> {
    let config_err = |e: object_store::Error| build_error(options, &e);
    let mut b = object_store::aws::AmazonS3Builder::from_env()
        .with_url(u.as_str())
        .with_retry(super::retry_config())
        .with_conditional_put(object_store::aws::S3ConditionalPut::ETagMatch);
    let mut profile = None;
    for (k, v) in options {
        if k.eq_ignore_ascii_case(super::aws::PROFILE_OPTION) {
            profile = Some(v.as_str());
            continue;
        }
        b = b.with_config(config_key(url, k)?, v);
    }
    // As in the AWS CLI, the profile is read even with keys in the environment: its region
    // counts, and a named profile that does not exist is an error.
    let profile = super::aws::Profile::chosen(profile);
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
        b = with_aws_chain(b, url, profile, region.clone())?;
    }
    let plain = is_plain_http(b.get_config_value(&object_store::aws::AmazonS3ConfigKey::Endpoint));
    if plain {
        b = b.with_config(
            object_store::aws::AmazonS3ConfigKey::Client(NO_SYSTEM_CERTIFICATES),
            "true",
        );
    }
    let kept = super::s3_list::KeepClient::default();
    let b = b.with_http_connector(kept.clone());
    let s3 = Arc::new(b.clone().build().map_err(config_err)?);
    let lister = super::s3_list::S3Lister::new(u, &b, &s3, &kept, &region);
    let client = super::delete::LazyClient::new("AWS_", &with_plain_http(options, plain));
    let signer = (!unsigned).then(|| s3.clone() as Arc<dyn object_store::signer::Signer>);
    // S3 Express directory buckets take no start-after: object_store lists those from the
    // start, and so do pages here, by not being used.
    let express = u.host_str().is_some_and(|b| b.ends_with("--x-s3"));
    let pages = (!express).then(|| Pages::new(s3.clone(), lister));
    Ok((s3, Some(Deleter::S3(signer, client)), pages))
}

/// A client for an `http://` endpoint never verifies a certificate: it need not read the
/// system's (every file of /etc/ssl/certs, a few milliseconds each session).
const NO_SYSTEM_CERTIFICATES: object_store::ClientConfigKey =
    object_store::ClientConfigKey::NoSystemCertificates;

fn is_plain_http(endpoint: Option<String>) -> bool {
    endpoint.is_some_and(|e| {
        e.get(..7)
            .is_some_and(|s| s.eq_ignore_ascii_case("http://"))
    })
}

/// `options`, plus no system certificates for a plain-HTTP endpoint.
fn with_plain_http(options: &[(String, String)], plain: bool) -> Vec<(String, String)> {
    let mut out = options.to_vec();
    if plain {
        out.push((NO_SYSTEM_CERTIFICATES.as_ref().to_string(), "true".into()));
    }
    out
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
    profile: Option<&super::aws::Profile>,
) -> Result<(object_store::aws::AmazonS3Builder, String), StoreError> {
    use object_store::aws::AmazonS3ConfigKey as K;
    let from_profile = super::aws::profile_region(profile)?;
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
    url: &StoreUrl,
    profile: Option<super::aws::Profile>,
    region: String,
) -> Result<object_store::aws::AmazonS3Builder, StoreError> {
    use object_store::aws::AmazonS3ConfigKey as K;
    let chain = super::aws::AwsChain::new(super::aws::ChainSettings {
        url: url.clone(),
        profile,
        region,
        metadata_endpoint: b.get_config_value(&K::MetadataEndpoint),
    })?;
    Ok(b.with_credentials(Arc::new(chain)))
}

fn build_gcs(url: &StoreUrl, u: &Url, options: &[(String, String)]) -> Result<Built, StoreError> {
    let config_err = |e: object_store::Error| build_error(options, &e);
    let mut b = object_store::gcp::GoogleCloudStorageBuilder::from_env()
        .with_url(u.as_str())
        .with_retry(super::retry_config());
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
        client: super::delete::LazyClient::new("GOOGLE_", options),
    };
    Ok((gcs.clone(), Some(deleter), Some(Pages::new(gcs, None))))
}

fn build_azure(url: &StoreUrl, u: &Url, options: &[(String, String)]) -> Result<Built, StoreError> {
    let config_err = |e: object_store::Error| build_error(options, &e);
    let mut b = super::azure::builder_from_env()?
        .with_url(u.as_str())
        .with_retry(super::retry_config());
    for (k, v) in options {
        b = b.with_config(config_key(url, k)?, v);
    }
    let container_url = azure_container_url(&b, u);
    let azure = Arc::new(b.build().map_err(config_err)?);
    let deleter = container_url.map(|(container_url, account)| Deleter::Azure {
        container_url,
        account,
        credentials: azure.credentials().clone(),
        client: super::delete::LazyClient::new("AZURE_", options),
    });
    Ok((azure.clone(), deleter, Some(Pages::new(azure, None))))
}

fn build_http(url: &StoreUrl, u: &Url, options: &[(String, String)]) -> Result<Built, StoreError> {
    let base = &u[..url::Position::BeforePath];
    let mut b = object_store::http::HttpBuilder::new()
        .with_url(base)
        .with_retry(super::retry_config());
    for (k, v) in options {
        b = b.with_config(config_key(url, k)?, v);
    }
    if u.scheme() == "http" {
        b = b.with_config(NO_SYSTEM_CERTIFICATES, "true");
    }
    let http = b.build().map_err(|e| build_error(options, &e))?;
    Ok((Arc::new(http), None, None))
}

/// The container's URL and the account, as object_store will address them: the emulator's
/// (`AZURITE_BLOB_STORAGE_URL`), the configured endpoint, or the account's public one. `None`
/// when they cannot be told (a Fabric address): deletes then go unconditionally after a check.
fn azure_container_url(
    b: &object_store::azure::MicrosoftAzureBuilder,
    u: &Url,
) -> Option<(Url, String)> {
    use object_store::azure::AzureConfigKey as K;
    let host = u.host_str()?;
    // abfs[s]://<container>@<account>.dfs.core.windows.net/: the rest name the container only.
    let (container, account_from_url) = match u.username() {
        "" => (host.to_string(), None),
        c => {
            let (account, rest) = host.split_once('.')?;
            if !rest.ends_with(".core.windows.net") {
                return None;
            }
            (c.to_string(), Some(account.to_string()))
        }
    };
    let truthy = |k: K| {
        b.get_config_value(&k).is_some_and(|v| {
            matches!(
                v.to_ascii_lowercase().as_str(),
                "true" | "1" | "on" | "yes" | "y"
            )
        })
    };
    if truthy(K::UseFabricEndpoint) {
        return None;
    }
    let emulator = truthy(K::UseEmulator);
    let account = b.get_config_value(&K::AccountName).or(account_from_url);
    let (service, account) = if emulator {
        let account = account.unwrap_or_else(|| "devstoreaccount1".to_string());
        let base = std::env::var("AZURITE_BLOB_STORAGE_URL")
            .unwrap_or_else(|_| "http://127.0.0.1:10000".to_string());
        (format!("{}/{account}", base.trim_end_matches('/')), account)
    } else {
        let account = account?;
        let service = b
            .get_config_value(&K::Endpoint)
            .unwrap_or_else(|| format!("https://{account}.blob.core.windows.net"));
        (service, account)
    };
    let mut url = Url::parse(&service).ok()?;
    url.path_segments_mut()
        .ok()?
        .pop_if_empty()
        .push(&container);
    Some((url, account))
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

/// Checks, before any client is built, what a client library would otherwise panic on or
/// report obscurely: endpoint URLs, plain HTTP without permission, half-set AWS keys.
fn check_setup(url: &StoreUrl, options: &[(String, String)]) -> Result<(), StoreError> {
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
            let mut b = super::azure::builder_from_env()?;
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
        hint: Some(super::diagnose::hint_credentials(url)),
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
                    _ => super::diagnose::hint_credentials(url),
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
            hint: Some(super::diagnose::hint_allow_http(url)),
        });
    }
    Ok(())
}

/// A boolean as object_store reads one.
pub(super) fn truthy(value: Option<String>) -> bool {
    value.is_some_and(|v| {
        matches!(
            v.to_ascii_lowercase().as_str(),
            "1" | "true" | "on" | "yes" | "y"
        )
    })
}

/// A client that cannot be built, in words. A value the client cannot parse is named by its
/// option, never shown (it may be a secret in the wrong place).
fn build_error(options: &[(String, String)], e: &object_store::Error) -> StoreError {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds() {
        let cwd = std::path::Path::new("/home/x");
        assert_eq!(
            StoreUrl::parse("lake", cwd).unwrap(),
            StoreUrl::Local("/home/x/lake".into())
        );
        assert_eq!(
            StoreUrl::parse("/abs", cwd).unwrap(),
            StoreUrl::Local("/abs".into())
        );
        assert_eq!(
            StoreUrl::parse("file:///abs/l", cwd).unwrap(),
            StoreUrl::Local("/abs/l".into())
        );
        // `..` is left to the system (which follows links first), as in a path.
        assert_eq!(
            StoreUrl::parse("file:///d/link/../lake", cwd).unwrap(),
            StoreUrl::Local("/d/link/../lake".into())
        );
        assert_eq!(
            StoreUrl::parse("file://localhost/a%20b/./c?x#y", cwd).unwrap(),
            StoreUrl::Local("/a b/./c".into())
        );
        assert!(StoreUrl::parse("file://elsewhere/x", cwd).is_err());
        assert!(matches!(
            StoreUrl::parse("s3://b/lake/", cwd).unwrap(),
            StoreUrl::S3(_)
        ));
        assert!(matches!(
            StoreUrl::parse("gs://b/lake/", cwd).unwrap(),
            StoreUrl::Gcs(_)
        ));
        assert!(matches!(
            StoreUrl::parse("az://c/lake/", cwd).unwrap(),
            StoreUrl::Azure(_)
        ));
        assert!(StoreUrl::parse("http://h/l/", cwd).unwrap().is_read_only());
        assert!(StoreUrl::parse("ftp://h/l", cwd).is_err());
    }
}
