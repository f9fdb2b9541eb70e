//! Conditional deletes on the clouds, which object_store 0.14 cannot send: one DELETE with the
//! store's own precondition (S3 and Azure `If-Match: <ETag>`, GCS
//! `x-goog-if-generation-match: <generation>`), authorized by the store's own signer or
//! credentials and sent with object_store's HTTP client (no retry layer of its own: a few
//! retries here, and an answer after a retry is never taken for a conflict).

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use http::{Method, StatusCode};
use object_store::client::{HttpClient, HttpConnector, HttpRequestBody, ReqwestConnector};
use object_store::path::Path as StorePath;
use object_store::signer::Signer;
use object_store::{ClientConfigKey, ClientOptions};

use crate::redact::redact;
use crate::store::condition::Token;

/// How many times a conditional DELETE is sent at most: object_store's retries do not cover
/// it (it goes out on a bare client), so the few it needs are here.
const DELETE_ATTEMPTS: u32 = 4;

/// The pause before the first retry of a DELETE; each next one doubles.
const DELETE_FIRST_PAUSE: Duration = Duration::from_millis(400);

/// How a store deletes on condition.
#[derive(Debug, Clone)]
pub(crate) enum Deleter {
    /// S3: a presigned (SigV4) DELETE URL plus `If-Match`; no signer when requests are
    /// not signed (`aws_skip_signature`).
    S3(Option<Arc<dyn Signer>>, LazyClient),
    /// Azure: the container's URL, signed per request as object_store signs its own (Shared
    /// Key, bearer token or SAS), plus `If-Match`. Not a service SAS URL: object_store signs
    /// those over the percent-encoded name, which Azure refuses for names like `fix#9`.
    Azure {
        container_url: url::Url,
        account: String,
        credentials: object_store::azure::AzureCredentialProvider,
        client: LazyClient,
    },
    /// GCS: the XML API object URL (`<base>/<bucket>`) and an OAuth bearer token.
    Gcs {
        bucket_url: String,
        credentials: object_store::gcp::GcpCredentialProvider,
        client: LazyClient,
    },
}

/// What a conditional DELETE found.
pub(crate) enum Outcome {
    Deleted,
    /// The precondition failed, or the object was gone.
    Conflict,
    /// The store could not decide it (no answer, an error, or a retry that may have found the
    /// first attempt's work).
    Failed(String),
    /// These credentials cannot authorize the request (nothing was sent).
    Unsupported(String),
}

/// The HTTP client for these requests, built by the first one: most sessions delete nothing,
/// and building a client reads every root certificate of the system.
#[derive(Debug, Clone)]
pub(crate) struct LazyClient {
    env_prefix: &'static str,
    options: Vec<(String, String)>,
    client: Arc<OnceLock<Result<HttpClient, Arc<object_store::Error>>>>,
}

impl LazyClient {
    pub(crate) fn new(env_prefix: &'static str, options: &[(String, String)]) -> LazyClient {
        LazyClient {
            env_prefix,
            options: options.to_vec(),
            client: Arc::default(),
        }
    }

    fn get(&self) -> Result<&HttpClient, SendError> {
        let built = self
            .client
            .get_or_init(|| http_client(self.env_prefix, &self.options).map_err(Arc::new));
        built.as_ref().map_err(|e| Fatal(redact(&e.to_string())))
    }
}

/// The HTTP client for these requests, with the store's client settings (proxy, certificates,
/// timeouts) from the environment variables with `env_prefix` and then the options.
fn http_client(
    env_prefix: &str,
    options: &[(String, String)],
) -> Result<HttpClient, object_store::Error> {
    let mut client = ClientOptions::new()
        .with_timeout(Duration::from_secs(60))
        .with_connect_timeout(Duration::from_secs(10));
    let from_env = std::env::vars().filter(|(k, _)| k.starts_with(env_prefix));
    let pairs = from_env.chain(options.iter().cloned());
    for (k, v) in pairs {
        let k = k.to_ascii_lowercase();
        let bare = ["aws_", "google_", "azure_"]
            .iter()
            .find_map(|p| k.strip_prefix(p))
            .unwrap_or(&k);
        if let Ok(key) = bare.parse::<ClientConfigKey>() {
            client = client.with_config(key, v);
        }
    }
    // The store's own requests already refused a plain-HTTP endpoint the user did not allow,
    // and Azurite's emulator mode allows it without saying so: follow the store.
    ReqwestConnector::default().connect(&client.with_allow_http(true))
}

impl Deleter {
    pub(crate) async fn delete(&self, path: &StorePath, expected: &Token) -> Outcome {
        let mut last = String::new();
        // Pauses of 0.4, 0.8 and 1.6 s, with jitter: racing deleters do not come back together.
        let mut backoff = crate::backoff::Backoff::new(DELETE_FIRST_PAUSE, Duration::from_secs(2))
            .with_jitter(Duration::from_millis(100));
        for attempt in 0..DELETE_ATTEMPTS {
            if attempt > 0 {
                backoff.wait().await;
            }
            match self.send(path, expected).await {
                Ok(status) if status.is_success() => return Outcome::Deleted,
                // After a lost answer, a retry finds its own first attempt's work: not a conflict.
                Ok(StatusCode::PRECONDITION_FAILED | StatusCode::NOT_FOUND) if attempt > 0 => {
                    return Outcome::Failed(format!(
                        "a retried delete found the object changed or gone (the first attempt may have deleted it): {last}"
                    ))
                }
                Ok(StatusCode::PRECONDITION_FAILED | StatusCode::NOT_FOUND) => {
                    return Outcome::Conflict
                }
                Ok(s) if s.is_server_error() || s == StatusCode::TOO_MANY_REQUESTS => {
                    last = format!("DELETE answered {s}")
                }
                Ok(s) => return Outcome::Failed(format!("DELETE answered {s}")),
                Err(Retry(e)) => last = e,
                Err(Fatal(e)) => return Outcome::Failed(e),
                Err(Unsigned(e)) => return Outcome::Unsupported(e),
            }
        }
        Outcome::Failed(last)
    }

    async fn send(&self, path: &StorePath, expected: &Token) -> Result<StatusCode, SendError> {
        let (client, req) = match self {
            Deleter::S3(signer, client) => (client, s3_request(signer, path, expected).await?),
            Deleter::Azure {
                container_url,
                account,
                credentials,
                client,
            } => {
                let req =
                    azure_request(container_url, account, credentials, path, expected).await?;
                (client, req)
            }
            Deleter::Gcs {
                bucket_url,
                credentials,
                client,
            } => (
                client,
                gcs_request(bucket_url, credentials, path, expected).await?,
            ),
        };
        let resp = client
            .get()?
            .execute(req)
            .await
            .map_err(|e| Retry(redact(&e.to_string())))?;
        Ok(resp.status())
    }
}

enum SendError {
    Retry(String),
    Fatal(String),
    Unsigned(String),
}
use SendError::{Fatal, Retry, Unsigned};

/// The key percent-encoded whole (every byte but ASCII letters and digits), as object_store
/// builds GCS object URLs.
fn encode_path(path: &StorePath) -> String {
    let mut out = String::new();
    for b in path.as_ref().bytes() {
        if b.is_ascii_alphanumeric() {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

type Request = http::Request<HttpRequestBody>;

/// S3: a presigned DELETE URL with `If-Match`.
async fn s3_request(
    signer: &Option<Arc<dyn Signer>>,
    path: &StorePath,
    expected: &Token,
) -> Result<Request, SendError> {
    let etag = etag_of(expected)?;
    let signer = signer
        .as_ref()
        .ok_or_else(|| Unsigned("requests are not signed (aws_skip_signature)".into()))?;
    let url = signer
        .signed_url(Method::DELETE, path, Duration::from_secs(300))
        .await
        .map_err(|e| Unsigned(redact(&e.to_string())))?;
    let req = http::Request::builder()
        .method(Method::DELETE)
        .uri(url.as_str())
        .header("if-match", etag)
        .body(HttpRequestBody::empty())
        .map_err(|e| Fatal(e.to_string()))?;
    Ok(req)
}

/// The ETag a delete must match (S3 and Azure).
fn etag_of(expected: &Token) -> Result<&str, SendError> {
    expected
        .e_tag
        .as_deref()
        .ok_or_else(|| Fatal("no ETag to delete on condition".into()))
}

/// Azure: the blob's URL, signed as object_store signs its own requests, with `If-Match`.
async fn azure_request(
    container_url: &url::Url,
    account: &str,
    credentials: &object_store::azure::AzureCredentialProvider,
    path: &StorePath,
    expected: &Token,
) -> Result<Request, SendError> {
    let etag = etag_of(expected)?;
    let mut url = container_url.clone();
    url.path_segments_mut()
        .map_err(|_| Fatal(format!("{container_url} cannot hold a path")))?
        .pop_if_empty()
        .extend(path.parts());
    let mut req = http::Request::builder()
        .method(Method::DELETE)
        .uri(url.as_str())
        .header("if-match", etag)
        .header("content-length", "0")
        .body(HttpRequestBody::empty())
        .map_err(|e| Fatal(e.to_string()))?;
    let credential = credentials
        .get_credential()
        .await
        .map_err(|e| Retry(redact(&e.to_string())))?;
    object_store::azure::AzureAuthorizer::new(&credential, account)
        .try_authorize(&mut req)
        .map_err(|e| Unsigned(redact(&e.to_string())))?;
    Ok(req)
}

/// GCS: the XML API object URL with the generation to match and the bearer token.
async fn gcs_request(
    bucket_url: &str,
    credentials: &object_store::gcp::GcpCredentialProvider,
    path: &StorePath,
    expected: &Token,
) -> Result<Request, SendError> {
    let generation = expected
        .version
        .as_deref()
        .ok_or_else(|| Fatal("no generation to delete on condition".into()))?;
    let url = format!("{bucket_url}/{}", encode_path(path));
    let mut req = http::Request::builder()
        .method(Method::DELETE)
        .uri(url)
        .header("x-goog-if-generation-match", generation);
    let token = credentials
        .get_credential()
        .await
        .map_err(|e| Retry(redact(&e.to_string())))?;
    if !token.bearer.is_empty() {
        req = req.header("authorization", format!("Bearer {}", token.bearer));
    }
    let req = req
        .body(HttpRequestBody::empty())
        .map_err(|e| Fatal(e.to_string()))?;
    Ok(req)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gcs_keys_are_encoded_whole() {
        let p = StorePath::parse("lake/heads/fix#9 a/café").unwrap();
        assert_eq!(encode_path(&p), "lake%2Fheads%2Ffix%239%20a%2Fcaf%C3%A9");
    }
}
