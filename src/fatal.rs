//! The error that ends a session or a command, as Git words it: one `fatal:` line and its
//! `hint:` lines, with a kind that decides the exit status and the error it came from. Library
//! code returns it; only the binary prints it and takes the exit code from its kind.

use std::fmt;
use std::sync::Arc;

use crate::config::RemoteConfigError;
use crate::remote::RemoteError;
use crate::store::{StoreError, StoreUrl};

/// What kind of end a failure is: it decides the exit status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Git's `die()`: `fatal:` and `hint:` lines, exit status 128.
    Fatal,
    /// Standard output was closed under a command (`| head -1`): nothing is said, and the exit
    /// status is the one a shell shows for Git killed by SIGPIPE, 141 (Rust ignores the signal,
    /// so the write fails instead).
    ClosedPipe,
}

/// A failure that ends the session: `fatal: <message>` and `hint:` lines.
#[derive(Debug, Clone)]
pub struct Fatal {
    message: String,
    hints: Vec<String>,
    kind: Kind,
    /// The error it came from, kept for a caller that looks (`std::error::Error::source`);
    /// what is shown is the message, written from it.
    source: Option<Arc<dyn std::error::Error + Send + Sync>>,
}

impl Fatal {
    /// A failure without a hint.
    pub fn new(message: impl Into<String>) -> Fatal {
        Fatal {
            message: message.into(),
            hints: Vec::new(),
            kind: Kind::Fatal,
            source: None,
        }
    }

    /// A failure and what to do about it.
    pub fn with_hint(message: impl Into<String>, hint: impl Into<String>) -> Fatal {
        Fatal::new(message).hint(hint)
    }

    /// Standard output closed under a command: see [`Kind::ClosedPipe`].
    pub fn closed_pipe() -> Fatal {
        Fatal {
            kind: Kind::ClosedPipe,
            ..Fatal::new("standard output was closed")
        }
    }

    /// With one more hint (each may hold several lines).
    pub fn hint(mut self, hint: impl Into<String>) -> Fatal {
        self.hints.push(hint.into());
        self
    }

    /// With its hints rewritten by `f` (a remote's name filled in).
    pub fn map_hints(mut self, f: impl Fn(&str) -> String) -> Fatal {
        self.hints = self.hints.iter().map(|h| f(h)).collect();
        self
    }

    /// With its hints replaced by `hint` (a more precise one than the cause's).
    pub fn instead_hint(mut self, hint: impl Into<String>) -> Fatal {
        self.hints = vec![hint.into()];
        self
    }

    /// Keeping the error it came from.
    fn caused_by(mut self, e: impl std::error::Error + Send + Sync + 'static) -> Fatal {
        self.source = Some(Arc::new(e));
        self
    }

    /// What failed and why, as printed after `fatal: `.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// What decides the exit status.
    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// The exit status: 128 as Git's `die()`, 141 for a closed standard output.
    pub fn exit_code(&self) -> i32 {
        match self.kind {
            Kind::Fatal => 128,
            Kind::ClosedPipe => 141,
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
        if self.kind == Kind::ClosedPipe {
            return Ok(());
        }
        writeln!(f, "fatal: {}", crate::redact::for_terminal(&self.message))?;
        for line in self.hints.iter().flat_map(|h| h.lines()) {
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

impl std::error::Error for Fatal {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source.as_deref().map(|e| e as _)
    }
}

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
        let hint = store_hint.or_else(|| e.hint());
        let f = Fatal::new(e.to_string());
        let f = match hint {
            Some(h) => f.hint(h),
            None => f,
        };
        f.caused_by(e)
    }
}

impl From<RemoteConfigError> for Fatal {
    fn from(e: RemoteConfigError) -> Fatal {
        let f = Fatal::new(e.message.clone());
        let f = match e.hint.clone() {
            Some(h) => f.hint(h),
            None => f,
        };
        f.caused_by(e)
    }
}

impl From<crate::lake::LakeError> for Fatal {
    fn from(e: crate::lake::LakeError) -> Fatal {
        Fatal::from(RemoteError::from(e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fatal_keeps_its_kind_hints_and_source() {
        let e = RemoteConfigError {
            message: "bad boolean config value for 'remote.o.fdlUsePacks'".into(),
            hint: Some("use true or false: git config remote.<remote>.fdlUsePacks false".into()),
        };
        let f = Fatal::from(e).map_hints(|h| h.replace("<remote>", "o"));
        assert_eq!(f.exit_code(), 128);
        assert_eq!(
            f.to_string(),
            "fatal: bad boolean config value for 'remote.o.fdlUsePacks'\n\
             hint: use true or false: git config remote.o.fdlUsePacks false\n"
        );
        let source = std::error::Error::source(&f).expect("the configuration error is kept");
        assert!(source.downcast_ref::<RemoteConfigError>().is_some());
        let closed = Fatal::closed_pipe();
        assert_eq!(
            (closed.exit_code(), closed.to_string()),
            (141, String::new())
        );
        let two = Fatal::with_hint("m", "a").hint("b\nc");
        assert_eq!(two.to_string(), "fatal: m\nhint: a\nhint: b\nhint: c\n");
    }
}
