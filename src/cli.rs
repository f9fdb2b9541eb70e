//! The command line for humans: `git-remote-fdl ls <lake>` and `git-remote-fdl help`. Git's own
//! invocations never reach here.

use clap::{Parser, Subcommand};

use crate::helper::store_options;
use crate::lake::Lake;
use crate::progress::Silent;
use crate::remote::{Remote, RemoteError};
use crate::repo::Repo;
use crate::store::{Store, StoreUrl};

#[derive(Parser, Debug)]
#[command(
    name = "git-remote-fdl",
    version,
    about = "Git remote helper for FDL lakes",
    long_about = "Git runs this helper for remotes whose URL starts with fdl::, for example\n  git clone fdl::s3://bucket/lake/ data\n  git ls-remote --symref fdl::/srv/lakes/sales\nRun by hand, it offers the commands below."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// List a lake's branches and tags: commit, version and ref name.
    Ls {
        /// The lake's address (a path, file://, s3://, gs://, az:// or http(s)://)
        lake: String,
    },
}

const SUBCOMMANDS: [&str; 3] = ["ls", "help", "--help"];

/// Git runs `git-remote-fdl <remote> [<url>]`; humans run subcommands or flags.
pub fn is_git_invocation(args: &[String]) -> bool {
    matches!(args.len(), 1 | 2)
        && !args[0].starts_with('-')
        && !SUBCOMMANDS.contains(&args[0].as_str())
}

pub fn main(args: &[String]) -> i32 {
    let cli = match Cli::try_parse_from(
        std::iter::once("git-remote-fdl".to_string()).chain(args.iter().cloned()),
    ) {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { 129 } else { 0 };
        }
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let result: anyhow::Result<()> = runtime.block_on(async {
        match cli.command {
            Command::Ls { lake } => ls(&lake).await,
        }
    });
    match result {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("fatal: {}", crate::store::redact(&format!("{e:#}")));
            128
        }
    }
}

async fn ls(address: &str) -> anyhow::Result<()> {
    let address = address.strip_prefix("fdl::").unwrap_or(address);
    let url = StoreUrl::parse(address, &std::env::current_dir()?)?;
    let repo = Repo::from_env().ok().flatten();
    let opts = store_options(repo.as_ref(), "").map_err(|f| anyhow::anyhow!(f.message))?;
    let lake = Lake::open(Store::open(&url, &opts)?)
        .await
        .map_err(RemoteError::from)?;
    let mut remote = Remote::new(lake, None);
    let listing = remote.list(&Silent).await?;
    for w in remote.take_warnings() {
        eprintln!("warning: {w}");
    }
    for (name, v) in &listing.refs {
        println!("{}\t{v}\t{name}", listing.commits[v]);
    }
    if let Some(h) = &listing.head {
        println!("ref: {h}\tHEAD");
    }
    Ok(())
}
