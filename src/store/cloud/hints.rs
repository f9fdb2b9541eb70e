//! What to set when a store refuses: the credentials of each kind of store, and the
//! permission plain HTTP needs. `remote.<remote>.` in a hint is filled in by the helper.

use crate::store::url::StoreUrl;

/// Which credentials to set for a store at `url`.
pub(in crate::store) fn hint_credentials(url: &StoreUrl) -> String {
    match url {
        StoreUrl::S3(_) => "name a profile of ~/.aws/config with AWS_PROFILE or git config \
             remote.<remote>.fdlProfile <name>, or set AWS_ACCESS_KEY_ID and \
             AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN for temporary keys); for a public \
             bucket, AWS_SKIP_SIGNATURE=true (or git config --add remote.<remote>.fdlOption \
             aws_skip_signature=true)"
            .to_string(),
        StoreUrl::Gcs(_) => {
            "set GOOGLE_APPLICATION_CREDENTIALS (or GOOGLE_SERVICE_ACCOUNT) to a key file"
                .to_string()
        }
        StoreUrl::Azure(_) => {
            "set AZURE_STORAGE_ACCOUNT_NAME with AZURE_STORAGE_ACCOUNT_KEY or AZURE_STORAGE_SAS_KEY"
                .to_string()
        }
        StoreUrl::Http(_) | StoreUrl::Local(_) => "check the address".to_string(),
    }
}

/// How to allow plain HTTP to a store at `url`.
pub(in crate::store) fn hint_allow_http(url: &StoreUrl) -> String {
    let env = match url {
        StoreUrl::S3(_) => "AWS_ALLOW_HTTP=true, or ",
        StoreUrl::Azure(_) => "AZURE_ALLOW_HTTP=true, or ",
        _ => "",
    };
    format!("to use it, set {env}git config remote.<remote>.fdlAllowHttp true")
}
