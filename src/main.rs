//! The `git-remote-fdl` binary: Git's invocation (`git-remote-fdl <remote> [<url>]`) runs the
//! remote-helper protocol; anything else is a human at the CLI. Exit codes are decided here.

mod cli;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let code = if cli::is_git_invocation(&args) {
        match git_remote_fdl::helper::run(&args[0], args.get(1).map(String::as_str)) {
            Ok(()) => 0,
            Err(f) => report_fatal(&f),
        }
    } else {
        cli::main(&args)
    };
    std::process::exit(code);
}

/// Prints a fatal error as Git does; its exit code is Git's for `die()`.
pub fn report_fatal(f: &git_remote_fdl::fatal::Fatal) -> i32 {
    eprint!("{f}");
    128
}
