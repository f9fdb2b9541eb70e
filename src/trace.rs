//! Session tracing: `GIT_REMOTE_FDL_DEBUG=1` logs the protocol exchange and every store request
//! to stderr, as `GIT_TRANSPORT_HELPER_DEBUG` does on Git's side.

use std::io::Write;

/// The environment variable that turns tracing on.
pub(crate) const ENV: &str = "GIT_REMOTE_FDL_DEBUG";

pub(crate) fn enabled() -> bool {
    std::env::var_os(ENV).is_some_and(|v| !v.is_empty() && v != "0" && v != "false")
}

static START: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();

/// Writes one trace line (`fdl: [seconds since start] ...`) to stderr.
pub(crate) fn line(text: &str) {
    let t = START
        .get_or_init(std::time::Instant::now)
        .elapsed()
        .as_secs_f64();
    let _ = writeln!(
        std::io::stderr().lock(),
        "fdl: [{t:8.3}] {}",
        crate::redact::for_terminal(text)
    );
}
