//! The error that ends a session or a command, as Git words it: one `fatal:` line and optional
//! `hint:` lines. Library code returns it; only the binary prints it and picks the exit code.

use std::fmt;

use crate::config::ConfigError;
use crate::remote::RemoteError;

/// A failure that ends the session: `fatal: <message>` and optional `hint:` lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fatal {
    pub message: String,
    pub hint: Option<String>,
}

impl Fatal {
    pub fn new(message: impl Into<String>) -> Fatal {
        Fatal {
            message: message.into(),
            hint: None,
        }
    }

    pub fn with_hint(message: impl Into<String>, hint: impl Into<String>) -> Fatal {
        Fatal {
            message: message.into(),
            hint: Some(hint.into()),
        }
    }
}

/// The lines Git's users expect on stderr, secrets removed.
impl fmt::Display for Fatal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "fatal: {}", crate::redact::redact(&self.message))?;
        for line in self.hint.iter().flat_map(|h| h.lines()) {
            writeln!(f, "hint: {}", crate::redact::redact(line))?;
        }
        Ok(())
    }
}

impl std::error::Error for Fatal {}

impl From<RemoteError> for Fatal {
    fn from(e: RemoteError) -> Fatal {
        Fatal {
            hint: e.hint(),
            message: e.to_string(),
        }
    }
}

impl From<ConfigError> for Fatal {
    fn from(e: ConfigError) -> Fatal {
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
