//! Session tracing: `GIT_REMOTE_FDL_DEBUG=1` logs the protocol exchange and every store request
//! to stderr, as `GIT_TRANSPORT_HELPER_DEBUG` does on Git's side.

use std::io::Write;

/// The environment variable that turns tracing on.
pub const ENV: &str = "GIT_REMOTE_FDL_DEBUG";

pub fn enabled() -> bool {
    std::env::var_os(ENV).is_some_and(|v| !v.is_empty() && v != "0" && v != "false")
}

/// Writes one trace line (`fdl: ...`) to stderr.
pub fn line(text: &str) {
    let _ = writeln!(std::io::stderr().lock(), "fdl: {}", crate::store::redact(text));
}
