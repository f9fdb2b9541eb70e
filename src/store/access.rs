//! How another program reaches the store's files as the helper does: the settings (endpoint,
//! region, addressing style, profile) a query engine needs to read a lake's data, never a
//! credential's value.

use url::Url;

use super::url::StoreUrl;

/// What a reader needs, besides credentials it finds itself, to read files of this store.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DataAccess {
    Folder,
    S3(S3Access),
    Gcs {
        /// `fdlEndpoint` or `GOOGLE_BASE_URL`, when not Google's own.
        endpoint: Option<String>,
    },
    Azure {
        account: Option<String>,
        /// Set when the helper reads a connection string from `AZURE_STORAGE_CONNECTION_STRING`.
        connection_string_variable: Option<&'static str>,
    },
    Http,
}

/// An S3 bucket as the helper addresses it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct S3Access {
    pub bucket: String,
    /// `host[:port]` of a non-AWS endpoint, without its scheme.
    pub endpoint: Option<String>,
    pub use_ssl: bool,
    /// Path-style (`endpoint/bucket/key`) rather than virtual-hosted addressing.
    pub path_style: bool,
    pub region: String,
    /// The profile named by `fdlProfile` (AWS_PROFILE is read by other tools themselves).
    pub profile: Option<String>,
    /// Requests go unsigned (`aws_skip_signature`).
    pub unsigned: bool,
}

/// The settings of `url` with the remote's `options` and the environment, as the store is
/// built from them (`store/url.rs`).
pub(crate) fn describe(url: &StoreUrl, options: &[(String, String)]) -> DataAccess {
    match url {
        StoreUrl::Local(_) => DataAccess::Folder,
        StoreUrl::Http(_) => DataAccess::Http,
        StoreUrl::S3(u) => DataAccess::S3(describe_s3(u, options)),
        StoreUrl::Gcs(_) => DataAccess::Gcs {
            endpoint: option(options, "endpoint")
                .or_else(|| option(options, "google_base_url"))
                .or_else(|| std::env::var("GOOGLE_BASE_URL").ok())
                .filter(|e| !e.is_empty()),
        },
        StoreUrl::Azure(u) => DataAccess::Azure {
            account: option(options, "azure_storage_account_name")
                .or_else(|| option(options, "account_name"))
                .or_else(|| std::env::var("AZURE_STORAGE_ACCOUNT_NAME").ok())
                .or_else(|| azure_account_of(u)),
            connection_string_variable: std::env::var_os("AZURE_STORAGE_CONNECTION_STRING")
                .filter(|v| !v.is_empty())
                .map(|_| "AZURE_STORAGE_CONNECTION_STRING"),
        },
    }
}

fn option(options: &[(String, String)], key: &str) -> Option<String> {
    options
        .iter()
        .rev()
        .find(|(k, _)| k.eq_ignore_ascii_case(key))
        .map(|(_, v)| v.clone())
}

fn describe_s3(u: &Url, options: &[(String, String)]) -> S3Access {
    use object_store::aws::AmazonS3ConfigKey as K;
    let mut b = object_store::aws::AmazonS3Builder::from_env().with_url(u.as_str());
    let mut profile = None;
    for (k, v) in options {
        if k.eq_ignore_ascii_case(crate::store::cloud::aws_credentials::PROFILE_OPTION) {
            profile = Some(v.trim().to_string()).filter(|p| !p.is_empty());
        } else if let Ok(key) = k.to_ascii_lowercase().parse::<K>() {
            b = b.with_config(key, v);
        }
    }
    let chosen = crate::store::cloud::aws_credentials::Profile::chosen(profile.as_deref());
    let region = b
        .get_config_value(&K::Region)
        .filter(|r| !r.is_empty())
        .or_else(|| {
            crate::store::cloud::aws_credentials::profile_region(chosen.as_ref())
                .ok()
                .flatten()
        })
        .unwrap_or_else(|| "us-east-1".to_string());
    let endpoint = b.get_config_value(&K::Endpoint).filter(|e| !e.is_empty());
    let use_ssl = !endpoint
        .as_deref()
        .is_some_and(|e| e.len() >= 7 && e[..7].eq_ignore_ascii_case("http://"));
    let endpoint = endpoint.map(|e| {
        let host = e.split_once("://").map_or(e.as_str(), |(_, rest)| rest);
        host.trim_end_matches('/').to_string()
    });
    let virtual_hosted = super::options::truthy(b.get_config_value(&K::VirtualHostedStyleRequest));
    S3Access {
        bucket: u.host_str().unwrap_or_default().to_string(),
        endpoint,
        use_ssl,
        path_style: !virtual_hosted,
        region,
        profile,
        unsigned: super::options::truthy(b.get_config_value(&K::SkipSignature)),
    }
}

/// `abfss://container@account.dfs.core.windows.net/...` names its account in the host.
fn azure_account_of(u: &Url) -> Option<String> {
    if u.username().is_empty() {
        return None;
    }
    let account = u.host_str()?.split('.').next()?;
    (!account.is_empty()).then(|| account.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_s3_endpoint_over_plain_http_is_host_and_port_without_ssl() {
        let url = StoreUrl::S3(Url::parse("s3://datasets/sales/").unwrap());
        let opts = [
            ("endpoint".to_string(), "http://127.0.0.1:9000/".to_string()),
            ("region".to_string(), "eu-west-3".to_string()),
        ];
        let DataAccess::S3(s3) = describe(&url, &opts) else {
            panic!("not S3")
        };
        assert_eq!(s3.bucket, "datasets");
        assert_eq!(s3.endpoint.as_deref(), Some("127.0.0.1:9000"));
        assert!(!s3.use_ssl && s3.path_style);
        assert_eq!(s3.region, "eu-west-3");
    }
}
