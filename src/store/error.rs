//! What went wrong talking to a store, with what to do about it.

use crate::redact::redact;

/// What went wrong talking to a store. Messages name the path at fault (relative to the lake).
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A file larger than the limit for its kind, refused before it is read whole.
    #[error("{path}: larger than the {limit}-byte limit for this file")]
    TooLarge {
        /// The file, relative to the lake's root.
        path: String,
        /// The limit, in bytes.
        limit: u64,
    },
    /// A path of a local folder that leads outside the lake's root.
    #[error("{path}: leads outside the lake's root (a symlink?)")]
    OutsideRoot {
        /// The path asked for, relative to the lake's root.
        path: String,
    },
    /// A request that failed, in the store's words.
    #[error("{}", at_path(path, message))]
    Failed {
        /// The file or folder, relative to the lake's root.
        path: String,
        /// What the store or the system said.
        message: String,
    },
    /// A request the store refused or could not make, in words, with what to do.
    #[error("{}", at_path(path, message))]
    Request {
        /// The file or folder, relative to the lake's root.
        path: String,
        /// The cause, in words.
        message: String,
        /// What to do about it.
        hint: Option<String>,
        /// The client's error the words were written from.
        #[source]
        cause: Option<Cause>,
    },
    /// A request the store refused because it is busy (503, 429, S3's `SlowDown`): said as
    /// [`StoreError::Request`] is; the gate slows down on it and tries a read again.
    #[error("{}", at_path(path, message))]
    Throttled {
        /// The file or folder, relative to the lake's root.
        path: String,
        /// The store's answer, in words.
        message: String,
        /// What to do about it.
        hint: Option<String>,
        /// The client's error the words were written from.
        #[source]
        cause: Option<Cause>,
    },
    /// A local folder's lock file another writer holds.
    #[error("{path} exists: another writer holds this lock ({holder})")]
    Locked {
        /// The lock file, relative to the lake's root.
        path: String,
        /// Who holds it (process, host, since when), as its file says.
        holder: String,
    },
    /// A key in a listing that no lake path can be (an empty segment, a control character).
    #[error("{path}: the store lists a key no lake path can be ({message})")]
    InvalidKey {
        /// The folder listed.
        path: String,
        /// What is wrong with the key.
        message: String,
    },
    /// An address or option that names no store this helper can open.
    #[error("{0}")]
    Config(String),
    /// A store that cannot be set up as configured, with the variable or key to change.
    #[error("{message}")]
    Setup {
        /// What cannot be set up.
        message: String,
        /// The variable or key to change.
        hint: Option<String>,
    },
    /// A store that refuses or ignores the conditional writes pushes need.
    #[error("{path}: this store cannot write on condition: {message}")]
    NoConditionalWrites {
        /// The file being written.
        path: String,
        /// What the store answered.
        message: String,
    },
}

impl StoreError {
    /// What to do about it, Git-style.
    pub fn hint(&self) -> Option<String> {
        match self {
            StoreError::Locked { path, .. } => Some(format!(
                "if no push to this lake is running, remove the lock file and push again: rm '{path}'"
            )),
            StoreError::NoConditionalWrites { .. } => Some(
                "pushes need a store that writes on condition (S3, GCS, Azure, a local folder)".into(),
            ),
            StoreError::Request { hint, .. }
            | StoreError::Throttled { hint, .. }
            | StoreError::Setup { hint, .. } => hint.clone(),
            _ => None,
        }
    }
    /// Whether the store refused the request as too many (503 SlowDown, 429).
    pub(crate) fn is_throttled(&self) -> bool {
        matches!(self, StoreError::Throttled { .. })
    }

    /// The same error, marked as the store's "slow down" (a request it refused as such).
    pub(crate) fn throttled(self) -> StoreError {
        match self {
            StoreError::Request {
                path,
                message,
                hint,
                cause,
            } => StoreError::Throttled {
                path,
                message,
                hint,
                cause,
            },
            other => other,
        }
    }
}

/// The client's error a [`StoreError`] was written from, kept for code that looks at it
/// ([`Cause::client`]). Shown only redacted, and its own causes are not chained on: their
/// words hold the request's URL, which may carry a presigned query or a SAS token.
#[derive(Clone)]
pub struct Cause(std::sync::Arc<object_store::Error>);

/// As shown: redacted (a trace prints errors with `{:?}`).
impl std::fmt::Debug for Cause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Cause").field(&self.to_string()).finish()
    }
}

impl Cause {
    pub(crate) fn new(e: object_store::Error) -> Cause {
        Cause(std::sync::Arc::new(e))
    }

    /// The client's error itself.
    pub fn client(&self) -> &object_store::Error {
        &self.0
    }
}

impl std::fmt::Display for Cause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&redact(&self.0.to_string()))
    }
}

impl std::error::Error for Cause {}

/// `path: message`, or the message alone when the path is the root.
fn at_path(path: &str, message: &str) -> String {
    if path.is_empty() {
        message.to_string()
    } else {
        format!("{path}: {message}")
    }
}

/// A task that read or listed `path` and stopped before it answered (`what`: "read",
/// "listing"): the runtime went away, or the task panicked.
/// An error and its causes, outermost first.
pub(crate) fn causes<'a>(
    e: &'a (dyn std::error::Error + 'static),
) -> impl Iterator<Item = &'a (dyn std::error::Error + 'static)> {
    std::iter::successors(Some(e), |s| s.source())
}

pub(crate) fn stopped(path: &str, what: &str, e: tokio::task::JoinError) -> StoreError {
    StoreError::Failed {
        path: path.to_string(),
        message: format!("{what} stopped: {e}"),
    }
}

/// A request that failed with `e`, in words without secrets.
pub(super) fn failed(rel: &str, e: impl std::fmt::Display) -> StoreError {
    StoreError::Failed {
        path: rel.to_string(),
        message: redact(&e.to_string()),
    }
}
