//! AWS credentials as the AWS CLI finds them, for S3 lakes without explicit keys: the official
//! providers of the `aws-config` crate, in the CLI's order (a profile of `~/.aws/config` and
//! `~/.aws/credentials` with its static keys, `credential_process`, assumed role, SSO or web
//! identity; then web identity and container credentials from the environment; then instance
//! metadata unless `AWS_EC2_METADATA_DISABLED`), behind object_store's `CredentialProvider`,
//! cached until shortly before they expire. A chain that finds nothing is one error saying what
//! was tried, with the variable or `git config` key to set: never an SDK's error dump.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use aws_config::provider_config::ProviderConfig;
use aws_credential_types::provider::error::CredentialsError;
use aws_credential_types::provider::{ProvideCredentials, SharedCredentialsProvider};
use aws_credential_types::Credentials;
use object_store::aws::AwsCredential;

use crate::redact::{excerpt, redact};
use crate::store::error::StoreError;

/// Which credentials to set for S3 (the AWS CLI's, and the helper's own keys).
pub(in crate::store) const CREDENTIALS_HINT: &str =
    "name a profile of ~/.aws/config with AWS_PROFILE or git config \
             remote.<remote>.fdlProfile <name>, or set AWS_ACCESS_KEY_ID and \
             AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN for temporary keys); for a public \
             bucket, AWS_SKIP_SIGNATURE=true (or git config --add remote.<remote>.fdlOption \
             aws_skip_signature=true)";

/// The object_store option that carries `remote.<name>.fdlProfile` (and may be given as
/// `fdlOption aws_profile=<name>`).
pub(in crate::store) const PROFILE_OPTION: &str = "aws_profile";

/// How long before credentials expire they are fetched again.
const REFRESH_BEFORE_EXPIRY: Duration = Duration::from_secs(300);

/// How long a failed lookup is answered from memory, so that the many requests waiting for the
/// first one do not each run a `credential_process` that just failed.
const REMEMBER_FAILURE: Duration = Duration::from_secs(10);

/// The profile the chain reads, and what named it (for messages).
#[derive(Clone, Debug)]
pub(in crate::store) struct Profile {
    pub name: String,
    /// `fdlProfile` (Git's configuration) or `AWS_PROFILE`.
    pub named_by: &'static str,
}

impl Profile {
    /// The profile `option` names (from Git's configuration), else `AWS_PROFILE`, else none
    /// (the `default` profile, as for the AWS CLI).
    pub(in crate::store) fn chosen(option: Option<&str>) -> Option<Profile> {
        let given = |v: &str| !v.trim().is_empty();
        if let Some(name) = option.filter(|v| given(v)) {
            return Some(Profile {
                name: name.trim().to_string(),
                named_by: "fdlProfile",
            });
        }
        let env = std::env::var("AWS_PROFILE").ok().filter(|v| given(v))?;
        Some(Profile {
            name: env.trim().to_string(),
            named_by: "AWS_PROFILE",
        })
    }

    fn describe(p: Option<&Profile>) -> String {
        match p {
            Some(p) => format!("profile '{}' (from {})", p.name, p.named_by),
            None => "the default profile".to_string(),
        }
    }
}

/// Where the AWS CLI's files are: `AWS_CONFIG_FILE`, `AWS_SHARED_CREDENTIALS_FILE`, else `~/.aws`.
fn profile_files() -> String {
    let file = |var: &str, default: &str| {
        std::env::var(var)
            .ok()
            .filter(|v| !v.is_empty())
            .unwrap_or_else(|| default.to_string())
    };
    format!(
        "{} and {}",
        file("AWS_CONFIG_FILE", "~/.aws/config"),
        file("AWS_SHARED_CREDENTIALS_FILE", "~/.aws/credentials")
    )
}

/// What the profile files say before a client is built: the profile's region. A profile named
/// by the user that is in neither file is an error, as in the AWS CLI (`aws-config` alone would
/// go on to instance metadata).
pub(in crate::store) fn profile_region(
    profile: Option<&Profile>,
) -> Result<Option<String>, StoreError> {
    let fs = aws_types::os_shim_internal::Fs::real();
    let env = aws_types::os_shim_internal::Env::real();
    let selected = profile.map(|p| Cow::Owned(p.name.clone()));
    // Reading the files is synchronous underneath (std::fs): no runtime is needed.
    let set = futures::executor::block_on(aws_config::profile::load(
        &fs,
        &env,
        &Default::default(),
        selected,
    ))
    .map_err(|e| StoreError::Setup {
        message: format!(
            "the AWS configuration cannot be read: {}",
            one_line(&e.to_string())
        ),
        hint: Some(format!("check {}", profile_files())),
    })?;
    if let Some(p) = profile {
        if set.get_profile(&p.name).is_none() {
            return Err(StoreError::Setup {
                message: format!(
                    "no AWS profile '{}' (named by {}) in {}",
                    p.name,
                    p.named_by,
                    profile_files()
                ),
                hint: Some(format!(
                    "name a profile that exists (aws configure list-profiles) in {}; \
                     AWS_CONFIG_FILE and AWS_SHARED_CREDENTIALS_FILE name other files",
                    match p.named_by {
                        "AWS_PROFILE" => "AWS_PROFILE",
                        _ => "git config remote.<remote>.fdlProfile",
                    }
                )),
            });
        }
    }
    Ok(set
        .get("region")
        .map(str::to_string)
        .filter(|r| !r.is_empty()))
}

/// Credentials that could not be found or fetched, in words, with what to do. Its text never
/// holds a secret: the key ID, keys and tokens are never part of it.
#[derive(Clone, Debug)]
pub(in crate::store) struct NoCredentials {
    pub message: String,
    pub hint: String,
}

impl std::fmt::Display for NoCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for NoCredentials {}

/// Whether instance metadata is turned off: `AWS_EC2_METADATA_DISABLED=true` (also `1`, `yes`,
/// `on`: no request is sent then either).
pub(in crate::store) fn metadata_disabled() -> bool {
    crate::store::options::truthy(std::env::var("AWS_EC2_METADATA_DISABLED").ok())
}

/// The chain's settings that object_store's options may give.
pub(in crate::store) struct ChainSettings {
    pub profile: Option<Profile>,
    /// The region STS is asked in (the lake's).
    pub region: String,
    /// Another instance-metadata address (`AWS_METADATA_ENDPOINT`, object_store's name);
    /// `AWS_EC2_METADATA_SERVICE_ENDPOINT` is read by aws-config itself.
    pub metadata_endpoint: Option<String>,
}

/// One official provider and what it is called in messages.
type Source = (&'static str, SharedCredentialsProvider);

/// object_store's credential provider for S3, backed by the AWS CLI's chain.
#[derive(Debug)]
pub(in crate::store) struct AwsChain {
    profile: Option<Profile>,
    sources: Vec<Source>,
    /// Instance metadata: `None` when turned off, else the address asked.
    metadata: Option<String>,
    cache: tokio::sync::Mutex<Option<Cached>>,
}

#[derive(Debug)]
enum Cached {
    Found {
        credential: Arc<AwsCredential>,
        refresh_at: SystemTime,
    },
    Failed {
        error: NoCredentials,
        until: SystemTime,
    },
}

impl AwsChain {
    /// The providers, in the AWS CLI's order. Explicit keys (`AWS_ACCESS_KEY_ID`, options) never
    /// reach here: object_store uses them itself, first, as the CLI does.
    pub(in crate::store) fn new(s: ChainSettings) -> Result<AwsChain, StoreError> {
        let conf =
            ProviderConfig::default().with_region(Some(aws_config::Region::new(s.region.clone())));
        let mut profile = aws_config::profile::ProfileFileCredentialsProvider::builder();
        if let Some(p) = &s.profile {
            profile = profile.profile_name(&p.name);
        }
        let mut sources: Vec<Source> =
            vec![
            ("profile", shared(profile.configure(&conf).build())),
            (
                "web identity",
                shared(
                    aws_config::web_identity_token::WebIdentityTokenCredentialsProvider::builder()
                        .configure(&conf)
                        .build(),
                ),
            ),
            (
                "container",
                shared(aws_config::ecs::EcsCredentialsProvider::builder().configure(&conf).build()),
            ),
        ];
        let metadata = if metadata_disabled() {
            None
        } else {
            let mut client = aws_config::imds::Client::builder().configure(&conf);
            if let Some(e) = &s.metadata_endpoint {
                client = client.endpoint(e).map_err(|_| StoreError::Setup {
                    message: format!("the metadata endpoint '{}' is not a URL", redact(e)),
                    hint: Some(
                        "unset AWS_METADATA_ENDPOINT, or give it as http://host:port".into(),
                    ),
                })?;
            }
            let imds = aws_config::imds::credentials::ImdsCredentialsProvider::builder()
                .configure(&conf)
                .imds_client(client.build())
                .build();
            sources.push(("instance metadata", shared(imds)));
            Some(s.metadata_endpoint.clone().unwrap_or_else(metadata_address))
        };
        Ok(AwsChain {
            profile: s.profile,
            sources,
            metadata,
            cache: tokio::sync::Mutex::new(None),
        })
    }

    /// Asks each source in turn; the first with credentials wins. A source that has none says
    /// so and the next is asked; one that fails (a `credential_process` that exits non-zero, an
    /// STS refusal) ends the search, as in the AWS CLI.
    async fn resolve(&self) -> Result<Credentials, NoCredentials> {
        let mut none = Vec::new();
        for (name, source) in &self.sources {
            match source.provide_credentials().await {
                Ok(c) => return Ok(c),
                Err(CredentialsError::CredentialsNotLoaded(_)) => none.push(*name),
                Err(e) => return Err(self.failed(name, &e)),
            }
        }
        Err(self.nothing_found())
    }

    fn nothing_found(&self) -> NoCredentials {
        let metadata = match &self.metadata {
            None => "instance metadata is turned off (AWS_EC2_METADATA_DISABLED)".to_string(),
            Some(at) => format!("the instance metadata service ({at}) gave none"),
        };
        NoCredentials {
            message: format!(
                "no AWS credentials: none in the environment (AWS_ACCESS_KEY_ID), in {} of {}, \
                 from web identity (AWS_WEB_IDENTITY_TOKEN_FILE) or container credentials \
                 (AWS_CONTAINER_CREDENTIALS_*); {metadata}",
                Profile::describe(self.profile.as_ref()),
                profile_files(),
            ),
            hint: CREDENTIALS_HINT.to_string(),
        }
    }

    /// A source that failed: which one, for which profile, and the cause in one short line.
    fn failed(&self, source: &str, e: &CredentialsError) -> NoCredentials {
        let cause = cause_of(e);
        let message = match source {
            "profile" => format!(
                "no AWS credentials: {} gave none: {cause}",
                Profile::describe(self.profile.as_ref())
            ),
            "instance metadata" => format!(
                "no AWS credentials: the instance metadata service ({}) failed: {cause}",
                self.metadata.as_deref().unwrap_or("?")
            ),
            other => format!("no AWS credentials: {other} credentials failed: {cause}"),
        };
        NoCredentials {
            message,
            hint: CREDENTIALS_HINT.to_string(),
        }
    }
}

fn shared(p: impl ProvideCredentials + 'static) -> SharedCredentialsProvider {
    SharedCredentialsProvider::new(p)
}

/// Where aws-config asks for instance metadata unless told otherwise.
fn metadata_address() -> String {
    std::env::var("AWS_EC2_METADATA_SERVICE_ENDPOINT")
        .ok()
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| "http://169.254.169.254".to_string())
}

/// The innermost cause of a provider's error, on one line, at most 200 characters, with what
/// is registered as secret removed. aws-config's messages never hold a key or a
/// `credential_process` command's arguments; a failing process's stderr is quoted, as the AWS
/// CLI does (it is where such a process says what is wrong).
fn cause_of(e: &CredentialsError) -> String {
    let text = crate::store::error::causes(e)
        .last()
        .map(|s| s.to_string())
        .unwrap_or_default();
    let text = text
        .strip_prefix("Error retrieving credentials: ")
        .unwrap_or(&text);
    excerpt(&redact(&one_line(text)), 200)
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// When to fetch again: shortly before they expire (never for keys that do not expire).
fn refresh_at(c: &Credentials, now: SystemTime) -> SystemTime {
    match c.expiry() {
        None => now + Duration::from_secs(365 * 24 * 3600),
        Some(expiry) => {
            let left = expiry.duration_since(now).unwrap_or_default();
            expiry - REFRESH_BEFORE_EXPIRY.min(left / 2)
        }
    }
}

#[async_trait::async_trait]
impl object_store::CredentialProvider for AwsChain {
    type Credential = AwsCredential;

    async fn get_credential(&self) -> object_store::Result<Arc<AwsCredential>> {
        // One lookup at a time: requests that start together wait for the first one's answer.
        let mut cache = self.cache.lock().await;
        let now = SystemTime::now();
        match &*cache {
            Some(Cached::Found {
                credential,
                refresh_at,
            }) if now < *refresh_at => return Ok(credential.clone()),
            Some(Cached::Failed { error, until }) if now < *until => return Err(generic(error)),
            _ => {}
        }
        match self.resolve().await {
            Ok(c) => {
                crate::redact::register_secret(c.secret_access_key());
                if let Some(t) = c.session_token() {
                    crate::redact::register_secret(t);
                }
                let credential = Arc::new(AwsCredential {
                    key_id: c.access_key_id().to_string(),
                    secret_key: c.secret_access_key().to_string(),
                    token: c.session_token().map(str::to_string),
                });
                *cache = Some(Cached::Found {
                    credential: credential.clone(),
                    refresh_at: refresh_at(&c, now),
                });
                Ok(credential)
            }
            Err(error) => {
                let e = generic(&error);
                *cache = Some(Cached::Failed {
                    error,
                    until: now + REMEMBER_FAILURE,
                });
                Err(e)
            }
        }
    }
}

fn generic(e: &NoCredentials) -> object_store::Error {
    object_store::Error::Generic {
        store: "S3",
        source: Box::new(e.clone()),
    }
}

/// The credentials error in `e`'s causes, if that is what failed.
pub(in crate::store) fn no_credentials(e: &object_store::Error) -> Option<&NoCredentials> {
    crate::store::error::causes(e).find_map(|s| s.downcast_ref::<NoCredentials>())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refreshed_shortly_before_expiry() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        let hour = Credentials::new("a", "b", None, Some(now + Duration::from_secs(3600)), "t");
        assert_eq!(refresh_at(&hour, now), now + Duration::from_secs(3300));
        // Short-lived: refreshed at half its remaining life, not after it expired.
        let short = Credentials::new("a", "b", None, Some(now + Duration::from_secs(120)), "t");
        assert_eq!(refresh_at(&short, now), now + Duration::from_secs(60));
        let forever = Credentials::new("a", "b", None, None, "t");
        assert!(refresh_at(&forever, now) > now + Duration::from_secs(3600 * 24 * 300));
    }
}
