//! The `git-remote-fdl` binary: Git's invocation (`git-remote-fdl <remote> [<url>]`) runs the
//! remote-helper protocol; anything else is a human at the CLI.

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let code = if git_remote_fdl::cli::is_git_invocation(&args) {
        git_remote_fdl::helper::run(&args[0], args.get(1).map(String::as_str))
    } else {
        git_remote_fdl::cli::main(&args)
    };
    std::process::exit(code);
}
