//! Azure Storage connection strings (`AZURE_STORAGE_CONNECTION_STRING`), which object_store does
//! not read: `AccountName`, `AccountKey`, `SharedAccessSignature`, `BlobEndpoint` (or
//! `DefaultEndpointsProtocol` with `EndpointSuffix`) and `UseDevelopmentStorage=true`, turned into
//! object_store's options in place of the account variables. Its keys and signatures are
//! registered as secrets.

use std::sync::Arc;

use object_store::azure::{AzureConfigKey as K, MicrosoftAzureBuilder};
use url::Url;

use crate::store::cloud::built::Parts;
use crate::store::cloud::delete::{Deleter, LazyClient};
use crate::store::cloud::endpoint::{check_endpoint, PlainHttp};
use crate::store::cloud::pages::Pages;
use crate::store::cloud::settings::{build_error, config_key, retry_config};
use crate::store::error::StoreError;

/// Which credentials to set for Azure.
pub(in crate::store) const CREDENTIALS_HINT: &str =
    "set AZURE_STORAGE_ACCOUNT_NAME with AZURE_STORAGE_ACCOUNT_KEY or AZURE_STORAGE_SAS_KEY";

/// The variable that allows plain HTTP to Azure.
pub(in crate::store) const ALLOW_HTTP_VARIABLE: &str = "AZURE_ALLOW_HTTP";
use crate::store::url::StoreUrl;

/// The variable the Azure CLI and SDKs read a connection string from.
pub(in crate::store) const CONNECTION_STRING: &str = "AZURE_STORAGE_CONNECTION_STRING";

/// object_store's builder from the environment. With a connection string, the account, key,
/// SAS, token, endpoint and emulator variables are left out, as the connection string stands
/// for them (as for the Azure CLI): a stray `AZURE_STORAGE_ACCOUNT_KEY` cannot win over its SAS.
pub(in crate::store) fn builder_from_env() -> Result<MicrosoftAzureBuilder, StoreError> {
    let text = std::env::var(CONNECTION_STRING)
        .ok()
        .filter(|v| !v.trim().is_empty());
    let Some(text) = text else {
        return Ok(MicrosoftAzureBuilder::from_env());
    };
    let given = options(&text)?;
    let superseded = [
        K::AccountName,
        K::AccessKey,
        K::SasKey,
        K::Token,
        K::Endpoint,
        K::UseEmulator,
    ];
    // What from_env reads, less those.
    let mut b = MicrosoftAzureBuilder::new();
    for (key, value) in std::env::vars_os() {
        let (Some(key), Some(value)) = (key.to_str(), value.to_str()) else {
            continue;
        };
        if !key.starts_with("AZURE_") {
            continue;
        }
        match key.to_ascii_lowercase().parse::<K>() {
            Ok(k) if !superseded.contains(&k) => b = b.with_config(k, value),
            _ => {}
        }
    }
    if let Ok(msi) = std::env::var("IDENTITY_ENDPOINT") {
        b = b.with_msi_endpoint(msi);
    }
    for (key, value) in given {
        b = b.with_config(key, value);
    }
    Ok(b)
}

/// The options a connection string gives, in object_store's terms.
fn options(text: &str) -> Result<Vec<(K, String)>, StoreError> {
    let mut fields = std::collections::BTreeMap::new();
    for part in text.split(';').map(str::trim).filter(|p| !p.is_empty()) {
        let Some((k, v)) = part.split_once('=') else {
            return Err(bad("a part is not Name=value"));
        };
        let (k, v) = (k.trim().to_ascii_lowercase(), v.trim().to_string());
        if k == "accountkey" || k == "sharedaccesssignature" {
            crate::redact::register_secret(&v);
        }
        fields.insert(k, v);
    }
    let get = |k: &str| fields.get(k).filter(|v| !v.is_empty()).cloned();
    let mut out = Vec::new();
    if get("usedevelopmentstorage").is_some_and(|v| v.eq_ignore_ascii_case("true")) {
        out.push((K::UseEmulator, "true".to_string()));
    }
    if let Some(account) = get("accountname") {
        out.push((K::AccountName, account));
    }
    if let Some(key) = get("accountkey") {
        out.push((K::AccessKey, key));
    }
    if let Some(sas) = get("sharedaccesssignature") {
        out.push((K::SasKey, sas.trim_start_matches('?').to_string()));
    }
    let protocol = get("defaultendpointsprotocol").map(|p| p.to_ascii_lowercase());
    let endpoint = match (get("blobendpoint"), get("accountname")) {
        (Some(e), _) => Some(e.trim_end_matches('/').to_string()),
        (None, Some(account))
            if protocol.as_deref().is_some_and(|p| p != "https")
                || get("endpointsuffix").is_some() =>
        {
            let suffix = get("endpointsuffix").unwrap_or_else(|| "core.windows.net".into());
            let scheme = protocol.clone().unwrap_or_else(|| "https".into());
            Some(format!("{scheme}://{account}.blob.{suffix}"))
        }
        _ => None,
    };
    if let (None, Some(account)) = (get("accountname"), endpoint.as_deref().and_then(account_of)) {
        // A SAS string names only the endpoint: the account is in it.
        out.push((K::AccountName, account));
    }
    if let Some(e) = endpoint {
        // The user's own connection string names plain HTTP (Azurite): that is the permission.
        if e.to_ascii_lowercase().starts_with("http://") {
            out.push((
                K::Client(object_store::ClientConfigKey::AllowHttp),
                "true".into(),
            ));
        }
        out.push((K::Endpoint, e));
    }
    let has_account = out
        .iter()
        .any(|(k, _)| matches!(k, K::AccountName | K::Endpoint));
    if !has_account && !out.iter().any(|(k, _)| *k == K::UseEmulator) {
        return Err(bad(
            "it names no AccountName, BlobEndpoint or UseDevelopmentStorage",
        ));
    }
    Ok(out)
}

/// The account a blob endpoint names: its host's first label
/// (`https://<account>.blob.core.windows.net`), or, on an emulator addressed by IP or
/// `localhost`, the first segment of its path (`http://127.0.0.1:10000/<account>`).
fn account_of(endpoint: &str) -> Option<String> {
    let u = url::Url::parse(endpoint).ok()?;
    let account = match u.host()? {
        url::Host::Domain(d) if d != "localhost" => d.split('.').next()?.to_string(),
        _ => u.path_segments()?.next()?.to_string(),
    };
    Some(account).filter(|a| !a.is_empty())
}

fn bad(why: &str) -> StoreError {
    StoreError::Setup {
        message: format!("{CONNECTION_STRING} cannot be used: {why} (the value is not shown)"),
        hint: Some(
            "copy the storage account's connection string whole (Access keys in the Azure \
             portal): DefaultEndpointsProtocol=https;AccountName=<name>;AccountKey=<key>;\
             EndpointSuffix=core.windows.net"
                .to_string(),
        ),
    }
}

pub(in crate::store) fn build_azure(
    url: &StoreUrl,
    u: &Url,
    options: &[(String, String)],
) -> Result<Parts, StoreError> {
    let config_err = |e: object_store::Error| build_error(options, &e);
    let mut b = builder_from_env()?
        .with_url(u.as_str())
        .with_retry(retry_config());
    for (k, v) in options {
        b = b.with_config(config_key(url, k)?, v);
    }
    let container_url = azure_container_url(&b, u);
    let azure = Arc::new(b.build().map_err(config_err)?);
    let deleter = container_url.map(|(container_url, account)| Deleter::Azure {
        container_url,
        account,
        credentials: azure.credentials().clone(),
        client: LazyClient::new("AZURE_", options),
    });
    Ok(Parts {
        store: azure.clone(),
        deleter,
        pages: Some(Pages::new(azure)),
    })
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
    let truthy = |k: K| crate::store::options::truthy(b.get_config_value(&k));
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

/// Checks the endpoint's form before the client is built (an emulator may be given plain
/// HTTP by the builder itself).
pub(in crate::store) fn check(
    url: &StoreUrl,
    options: &[(String, String)],
) -> Result<(), StoreError> {
    let mut b = builder_from_env()?;
    for (k, v) in options {
        if let Ok(key) = k.to_ascii_lowercase().parse() {
            b = b.with_config(key, v);
        }
    }
    let endpoint = b.get_config_value(&object_store::azure::AzureConfigKey::Endpoint);
    check_endpoint(url, endpoint.as_deref(), "endpoint", PlainHttp::Allowed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(opts: &[(K, String)], key: K) -> Option<&str> {
        opts.iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| v.as_str())
    }

    #[test]
    fn account_key_form() {
        let o = options(
            "DefaultEndpointsProtocol=https;AccountName=acme;AccountKey=a2V5==;\
             EndpointSuffix=core.chinacloudapi.cn",
        )
        .unwrap();
        assert_eq!(get(&o, K::AccountName), Some("acme"));
        assert_eq!(get(&o, K::AccessKey), Some("a2V5=="));
        assert_eq!(
            get(&o, K::Endpoint),
            Some("https://acme.blob.core.chinacloudapi.cn")
        );
        // The public cloud's default endpoint is object_store's own: none is set.
        let o = options("AccountName=acme;AccountKey=a2V5==").unwrap();
        assert_eq!(get(&o, K::Endpoint), None);
    }

    #[test]
    fn sas_and_blob_endpoint_form() {
        let o =
            options("BlobEndpoint=http://127.0.0.1:10000/dev/;SharedAccessSignature=?sv=1&sig=x")
                .unwrap();
        assert_eq!(get(&o, K::Endpoint), Some("http://127.0.0.1:10000/dev"));
        assert_eq!(get(&o, K::AccountName), Some("dev"));
        assert_eq!(get(&o, K::SasKey), Some("sv=1&sig=x"));
        assert_eq!(
            get(&o, K::Client(object_store::ClientConfigKey::AllowHttp)),
            Some("true")
        );
        let o =
            options("BlobEndpoint=https://acme.blob.core.windows.net/;SharedAccessSignature=sv=1")
                .unwrap();
        assert_eq!(get(&o, K::AccountName), Some("acme"));
        assert_eq!(
            get(&o, K::Client(object_store::ClientConfigKey::AllowHttp)),
            None
        );
    }

    #[test]
    fn development_storage_and_bad_strings() {
        let o = options("UseDevelopmentStorage=true").unwrap();
        assert_eq!(get(&o, K::UseEmulator), Some("true"));
        assert!(options("AccountKey=abc").is_err());
        assert!(options("garbage").is_err());
    }
}
