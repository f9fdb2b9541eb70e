//! The error that ends a session or a command, as Git words it: one `fatal:` line and optional
//! `hint:` lines. Library code returns it; only the binary prints it and picks the exit code.

use std::fmt;

use crate::config::RemoteConfigError;
use crate::remote::RemoteError;
use crate::store::{StoreError, StoreUrl};

/// A failure that ends the session: `fatal: <message>` and optional `hint:` lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fatal {
    /// What failed and why, printed after `fatal: `.
    pub message: String,
    /// What to do about it, printed as `hint:` lines.
    pub hint: Option<String>,
}

impl Fatal {
    /// A failure without a hint.
    pub fn new(message: impl Into<String>) -> Fatal {
        Fatal {
            message: message.into(),
            hint: None,
        }
    }

    /// A failure and what to do about it.
    pub fn with_hint(message: impl Into<String>, hint: impl Into<String>) -> Fatal {
        Fatal {
            message: message.into(),
            hint: Some(hint.into()),
        }
    }

    /// A write (`push`, `pack`) to a lake served over plain HTTP, refused before any request:
    /// nothing was `done`; `instead` says where to write (`push to`, `pack`).
    pub fn read_only(url: &StoreUrl, done: &str, instead: &str) -> Fatal {
        Fatal::with_hint(
            format!(
                "lake '{url}' is served over plain HTTP, which is read-only: nothing was {done}"
            ),
            format!("{instead} the lake's store address instead (s3://, gs://, az:// or a folder)"),
        )
    }
}

/// The lines Git's users expect on stderr: secrets removed, control characters escaped (text
/// from a lake or a server can neither drive the terminal nor forge a `hint:` line).
impl fmt::Display for Fatal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "fatal: {}", crate::redact::for_terminal(&self.message))?;
        for line in self.hint.iter().flat_map(|h| h.lines()) {
            writeln!(f, "hint: {}", crate::redact::for_terminal(line))?;
        }
        Ok(())
    }
}

impl Fatal {
    /// A store that cannot be opened: its address, why, and the store's advice (which variable
    /// or key to set) or where addresses and configuration are described.
    pub fn cannot_open(url: &StoreUrl, e: &StoreError) -> Fatal {
        Fatal::with_hint(
            format!("cannot open lake '{url}': {e}"),
            e.hint().unwrap_or_else(|| {
                "'git-remote-fdl help' lists lake addresses, configuration keys and environment"
                    .to_string()
            }),
        )
    }
}

impl std::error::Error for Fatal {}

/// An I/O error as Git words one (`No space left on device`), without Rust's `(os error N)`.
pub fn io_reason(e: &std::io::Error) -> String {
    let text = e.to_string();
    match text.rfind(" (os error ") {
        Some(at) if text.ends_with(')') => text[..at].to_string(),
        _ => text,
    }
}

impl From<RemoteError> for Fatal {
    fn from(e: RemoteError) -> Fatal {
        // A store's own advice (which variable or key to set) is more precise than the lake's.
        let store_hint = match &e {
            RemoteError::Lake(crate::lake::LakeError::Store { source, .. }) => source.hint(),
            _ => None,
        };
        Fatal {
            hint: store_hint.or_else(|| e.hint()),
            message: e.to_string(),
        }
    }
}

impl From<RemoteConfigError> for Fatal {
    fn from(e: RemoteConfigError) -> Fatal {
        Fatal {
            message: e.message,
            hint: e.hint,
        }
    }
}

impl From<crate::lake::LakeError> for Fatal {
    fn from(e: crate::lake::LakeError) -> Fatal {
        Fatal::from(RemoteError::from(e))
    }
}
