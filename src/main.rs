//! The `git-remote-fdl` binary: Git's invocation (`git-remote-fdl <remote> [<url>]`) runs the
//! remote-helper protocol; anything else is a human at the CLI. Exit codes are decided here.

#![forbid(unsafe_code)]

mod cli;

use std::io::Write;

use git_remote_fdl::fatal::Fatal;

fn main() {
    git_remote_fdl::process::return_large_buffers();
    std::panic::set_hook(Box::new(report_panic));
    let args: Vec<String> = std::env::args().skip(1).collect();
    if git_remote_fdl::check_command_line().is_err() {
        // Git's own words and status for the same variable.
        let _ = write!(
            std::io::stderr(),
            "error: bogus format in GIT_CONFIG_PARAMETERS\nfatal: unable to parse command-line config\n"
        );
        std::process::exit(128);
    }
    let code = if cli::is_git_invocation(&args) {
        #[cfg(debug_assertions)]
        if std::env::var_os("GIT_REMOTE_FDL_TEST_PANIC").is_some() {
            panic!("test panic https://user:hunter2@example.org/\x1b[31m");
        }
        match git_remote_fdl::helper::run(&args[0], args.get(1).map(String::as_str)) {
            Ok(()) => 0,
            Err(f) => report_fatal(&f),
        }
    } else {
        cli::main(&args)
    };
    git_remote_fdl::testhook::record_peak_memory();
    std::process::exit(code);
}

/// Prints a fatal error as Git does (nothing for a closed standard output); the exit code is
/// its kind's, 128 as Git's `die()`. A full or closed stderr is passed over (Git too ignores
/// it), not a panic.
pub fn report_fatal(f: &Fatal) -> i32 {
    let _ = write!(std::io::stderr(), "{f}");
    f.exit_code()
}

/// The last line of defence: a panic (a bug, whatever the input) is one `fatal:` line, secrets
/// removed, and Git's exit code for `die()`, never a backtrace. Exits at once, also from a
/// worker thread, so no half-done work carries on.
fn report_panic(info: &std::panic::PanicHookInfo<'_>) {
    let what = info
        .payload()
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| info.payload().downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".to_string());
    let place = info
        .location()
        .map(|l| format!(" at {}:{}", l.file(), l.line()))
        .unwrap_or_default();
    let f = Fatal::new(format!(
        "git-remote-fdl {} hit a bug{place}: {}; please report it to the git-remote-fdl \
         maintainers (the project's issue tracker) with the command you ran",
        env!("CARGO_PKG_VERSION"),
        git_remote_fdl::redact::excerpt(&what, 300),
    ));
    std::process::exit(report_fatal(&f));
}
