//! The command line for humans (clap): `git-remote-fdl ls <lake>`, `git-remote-fdl verify
//! <lake>`, `git-remote-fdl help`. It prints what the library's `commands` compute; Git's own
//! invocations never reach here.

use std::io::{IsTerminal, Write};

use clap::{CommandFactory, Parser, Subcommand};
use git_remote_fdl::commands;
use git_remote_fdl::fatal::Fatal;
use git_remote_fdl::progress::{self, Progress, Silent};
use git_remote_fdl::redact;

/// `eprintln!` for a human's command: a full or closed stderr is passed over, as Git does,
/// rather than a panic.
macro_rules! say {
    ($($arg:tt)*) => {{
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

/// `println!` that returns its error (`out!(...)?`): see [`stdout_failed`].
macro_rules! out {
    ($($arg:tt)*) => {
        writeln!(std::io::stdout(), $($arg)*).map_err(stdout_failed)
    };
}

/// Standard output failed. A closed pipe (`| head -1`) ends the command quietly, with the
/// status a shell shows for Git there (141, killed by SIGPIPE: Rust ignores the signal, so the
/// write fails instead); anything else (a full disk) is Git's `fatal: write failure`.
fn stdout_failed(e: std::io::Error) -> Fatal {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        return Fatal::closed_pipe();
    }
    Fatal::new(format!(
        "write failure on standard output: {}",
        git_remote_fdl::fatal::io_reason(&e)
    ))
}

#[derive(Parser, Debug)]
#[command(
    name = "git-remote-fdl",
    version,
    about = "Git remote helper for FDL lakes",
    long_about = "Git runs this helper for remotes whose URL starts with fdl::, for example\n  git clone fdl::s3://bucket/lake/ data\n  git ls-remote --symref fdl::/srv/lakes/sales\nRun by hand, it offers the commands below.",
    after_help = "'git-remote-fdl --help' also lists lake addresses, configuration keys and environment variables.",
    after_long_help = MORE_HELP
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// List a lake's branches and tags: commit, version and ref name.
    Ls {
        /// The lake's address (a path, file://, s3://, gs://, az:// or http(s)://), or the name
        /// of an fdl remote of this repository
        #[arg(value_name = "lake | remote")]
        lake: String,
    },
    /// Check the signatures of a lake's versions against the keys you trust, as a table:
    /// version, signer, status. Exits 1 if any version is not signed by a trusted key.
    Verify {
        /// The lake's address, or the name of an fdl remote of this repository (whose
        /// fdlAllowedSignersFile and fdlSignatureNamespace then count)
        #[arg(value_name = "lake | remote")]
        lake: String,
        /// Branches or tags whose history to check (default: all of them), e.g. main v2026.11
        refs: Vec<String>,
        /// The keys you trust, as an SSH allowed-signers file (default: the remote's
        /// fdlAllowedSignersFile, else git config gpg.ssh.allowedSignersFile)
        #[arg(long, value_name = "FILE")]
        allowed_signers: Option<std::path::PathBuf>,
        /// The signature namespace (default: the remote's fdlSignatureNamespace, else fdl)
        #[arg(long, value_name = "NS")]
        namespace: Option<String>,
    },
    /// Check a lake as git fsck checks a repository: every version the refs reach is read and
    /// mapped again; prints one line per problem and exits 1 if there is any.
    Fsck {
        /// The lake's address, or the name of an fdl remote of this repository (its fetched
        /// commits are then compared with the lake's, to find rewritten versions and moved tags)
        #[arg(value_name = "lake | remote")]
        lake: String,
        /// Also check each version's catalog against the sha256 in its version.json
        #[arg(long)]
        catalogs: bool,
        /// No progress and no summary
        #[arg(long, short)]
        quiet: bool,
    },
    /// Write the lake's history as Git packs under git-packs/ in the lake (for its maintainer:
    /// needs write access), so that a clone downloads a few packs instead of reading every
    /// version; a later run packs only what is new. Readers check every version they take.
    Pack {
        /// The lake's address, or the name of an fdl remote of this repository
        #[arg(value_name = "lake | remote")]
        lake: String,
        /// Say what would be packed, and write nothing
        #[arg(long, short = 'n')]
        dry_run: bool,
        /// Show the progress of reading the versions even when stderr is not a terminal
        #[arg(long, overrides_with_all = ["no_progress", "quiet"])]
        progress: bool,
        /// Show no progress, even on a terminal
        #[arg(long, overrides_with_all = ["progress", "quiet"])]
        no_progress: bool,
        /// Show no progress (the summary is still said)
        #[arg(long, short, overrides_with_all = ["progress", "no_progress"])]
        quiet: bool,
    },
    /// Check what the lake's store honours, now: the conditional writes a push relies on (each
    /// check and its answer), what its listings give, and a round trip. Exits 1 if pushes
    /// would be refused there.
    Doctor {
        /// The lake's address, or the name of an fdl remote of this repository
        #[arg(value_name = "lake | remote")]
        lake: String,
    },
    /// Write the verified catalog of the version a commit stands for (inside a clone), and print
    /// the DuckDB statements that attach it read-only with the lake's data.
    Catalog {
        /// A commit fetched from the lake: a tag, origin/main, HEAD, a commit ID
        commit: String,
        /// Where to write it (default: <version>.duckdb in .git/fdl/catalogs/, outside the work tree)
        #[arg(short, long, value_name = "FILE")]
        output: Option<std::path::PathBuf>,
        /// The catalog in another DuckLake format (catalogs/<format>.duckdb), e.g. 1.0
        #[arg(long, value_name = "DUCKLAKE_VERSION")]
        format: Option<String>,
        /// The fdl remote to read from (default: the repository's only one)
        #[arg(long)]
        remote: Option<String>,
    },
}

/// What `--help` and `help` add: addresses, configuration and environment, in brief.
const MORE_HELP: &str = "\
Lake addresses (after fdl::):
  /abs/path, relative/path, file:///abs/path   a local folder
  s3://<bucket>/<prefix>/                      Amazon S3 or an S3-compatible store
  gs://<bucket>/<prefix>/                      Google Cloud Storage
  az://<container>/<prefix>/, abfss://<container>@<account>.dfs.core.windows.net/<prefix>/
                                               Azure Blob Storage
  http(s)://<host>/<path>/                     plain HTTP: read-only, through refs.json

Configuration (git config, for a remote named <remote>):
  remote.<remote>.fdlEndpoint <url>            the store's endpoint (S3-compatible servers, emulators)
  remote.<remote>.fdlRegion <region>           the region
  remote.<remote>.fdlProfile <name>            the AWS profile (of ~/.aws/config), before AWS_PROFILE
  remote.<remote>.fdlAllowHttp true            allow a plain http:// endpoint
  remote.<remote>.fdlOption <key>=<value>      any object_store option, e.g. aws_skip_signature=true,
                                               timeout=120s (may be given several times)
  remote.<remote>.fdlRequireSignatures true    fetch only versions signed by a trusted key
  remote.<remote>.fdlAllowedSignersFile <file> the keys you trust (else gpg.ssh.allowedSignersFile)
  remote.<remote>.fdlSignatureNamespace <ns>   the signature namespace (default fdl)
  remote.<remote>.fdlTrustPacks true           over plain HTTP or from a folder, clone from
                                               the lake's packs
  remote.<remote>.fdlUsePacks false            never read the lake's packs (also fdl.usePacks)
  remote.<remote>.fdlUnsafeIgnoreConditionalWrites true
                                               push to a store that failed the store check
                                               (git-remote-fdl doctor), at your own risk

Environment:
  AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_PROFILE (~/.aws/config,
  ~/.aws/credentials: keys, credential_process, role_arn, SSO), AWS_REGION, AWS_ENDPOINT_URL,
  AWS_ENDPOINT_URL_STS, AWS_ALLOW_HTTP, AWS_SKIP_SIGNATURE, AWS_EC2_METADATA_DISABLED     S3
  GOOGLE_SERVICE_ACCOUNT, GOOGLE_SERVICE_ACCOUNT_KEY, GOOGLE_APPLICATION_CREDENTIALS,
  ~/.config/gcloud/application_default_credentials.json, GOOGLE_BASE_URL            GCS
  AZURE_STORAGE_CONNECTION_STRING, AZURE_STORAGE_ACCOUNT_NAME, AZURE_STORAGE_ACCOUNT_KEY,
  AZURE_STORAGE_SAS_KEY, AZURE_STORAGE_ENDPOINT, AZURE_STORAGE_USE_EMULATOR          Azure
  GIT_REMOTE_FDL_DEBUG=1    trace the session (lines from and to Git, store requests) to stderr

Submodules with fdl:: URLs need Git's permission, once, by you:
  git config --global protocol.fdl.allow always

The manual: git help remote-fdl (or man git-remote-fdl), installed by make install.";

const SUBCOMMANDS: [&str; 8] = [
    "ls", "verify", "fsck", "catalog", "pack", "doctor", "help", "--help",
];

/// Git runs `git-remote-fdl <remote> [<url>]` with its pipes on stdin and stdout; humans run
/// subcommands or flags. A terminal on stdin is a human (`git-remote-fdl lss <lake>`, a typo,
/// must not wait for protocol input). A remote may be named like a subcommand (`verify`): Git
/// runs its helpers with `GIT_DIR` set, which a human's shell does not have.
pub(crate) fn is_git_invocation(args: &[String]) -> bool {
    matches!(args.len(), 1 | 2)
        && !args[0].starts_with('-')
        && (!SUBCOMMANDS.contains(&args[0].as_str()) || std::env::var_os("GIT_DIR").is_some())
        && !std::io::stdin().is_terminal()
}

/// A usage error as clap words it, then every command with what it does.
fn usage_error(e: &clap::Error) -> i32 {
    let _ = e.print();
    if matches!(
        e.kind(),
        clap::error::ErrorKind::InvalidSubcommand | clap::error::ErrorKind::UnknownArgument
    ) {
        say!("\nCommands:");
        for c in Cli::command().get_subcommands() {
            let about = c.get_about().map(|a| a.to_string()).unwrap_or_default();
            let about = about.lines().next().unwrap_or_default().to_string();
            say!("  {:<8} {about}", c.get_name());
        }
        say!(
            "  {:<8} Addresses, configuration keys and environment",
            "help"
        );
        say!("\nGit runs git-remote-fdl itself for fdl:: addresses (git clone fdl::<lake>).");
    }
    129
}

/// Runs a human's command; returns the process's exit code (129 for usage errors, as Git).
pub(crate) fn main(args: &[String]) -> i32 {
    let cli = match Cli::try_parse_from(
        std::iter::once("git-remote-fdl".to_string()).chain(args.iter().cloned()),
    ) {
        Ok(c) => c,
        Err(e) if e.use_stderr() => return usage_error(&e),
        Err(e) => {
            let _ = e.print();
            return 0;
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => return crate::report_fatal(&Fatal::new(format!("cannot start: {e}"))),
    };
    let result = runtime.block_on(async {
        match cli.command {
            Command::Ls { lake } => ls(&lake).await,
            Command::Verify {
                lake,
                refs,
                allowed_signers,
                namespace,
            } => verify(&lake, &refs, allowed_signers, namespace.as_deref()).await,
            Command::Fsck {
                lake,
                catalogs,
                quiet,
            } => fsck(&lake, catalogs, quiet).await,
            Command::Pack {
                lake,
                dry_run,
                progress,
                no_progress,
                quiet,
            } => {
                // As Git decides: shown on a terminal unless told otherwise.
                let shown = progress || (!no_progress && !quiet && std::io::stderr().is_terminal());
                pack(&lake, dry_run, shown).await
            }
            Command::Doctor { lake } => doctor(&lake).await,
            Command::Catalog {
                commit,
                output,
                format,
                remote,
            } => {
                let request = commands::CatalogRequest {
                    commit,
                    output,
                    format,
                    remote,
                };
                catalog(&request).await
            }
        }
    });
    match result.and_then(|code| {
        std::io::stdout()
            .flush()
            .map_err(stdout_failed)
            .map(|()| code)
    }) {
        Ok(code) => code,
        Err(f) => crate::report_fatal(&f),
    }
}

async fn fsck(lake: &str, catalogs: bool, quiet: bool) -> Result<i32, Fatal> {
    // As Git's fsck: progress only on a terminal, so that a log holds no redrawn lines.
    let progress: Box<dyn Progress> = if quiet || !std::io::stderr().is_terminal() {
        Box::new(Silent)
    } else {
        Box::new(progress::Stderr::default())
    };
    let report = commands::fsck(lake, catalogs, progress.as_ref()).await?;
    for line in &report.problems {
        out!("{}", redact::for_terminal(line))?;
    }
    if !quiet {
        for note in &report.notes {
            say!("note: {}", redact::for_terminal(note));
        }
        say!(
            "Checked {} ref{} and {} version{}: {} problem{}",
            report.refs,
            plural(report.refs),
            report.versions,
            plural(report.versions),
            report.problems.len(),
            plural(report.problems.len())
        );
    }
    Ok(if report.problems.is_empty() { 0 } else { 1 })
}

async fn pack(lake: &str, dry_run: bool, progress: bool) -> Result<i32, Fatal> {
    let relay = |line: &str| {
        let _ = std::io::Write::write_all(&mut std::io::stderr(), line.as_bytes());
    };
    let relay: Option<&(dyn Fn(&str) + Sync)> = if progress { Some(&relay) } else { None };
    let (done, warnings) = commands::pack(lake, dry_run, relay).await?;
    for w in warnings.iter().chain(&done.warnings) {
        say!("warning: {}", shown(w));
    }
    if done.claims_added > 0 {
        say!(
            "Wrote the claims of {} pack{} made before claims were (git-packs/<pack>.claims/)",
            done.claims_added,
            plural(done.claims_added)
        );
    }
    let would = if done.dry_run { "would be" } else { "were" };
    let versions = |n: usize| format!("{n} version{}", plural(n));
    say!(
        "{} already packed; {} new {would} packed{}",
        versions(done.packed_before),
        done.new_versions,
        match done.merged {
            0 => String::new(),
            1 => " with the newest pack, merged into one".to_string(),
            n => format!(" with the {n} newest packs, merged into one"),
        }
    );
    match (&done.pack, done.dry_run) {
        (Some(p), _) => say!(
            "Wrote git-packs/{p}.pack and its record; git-packs/list.json names {} pack{}",
            done.packs_now,
            plural(done.packs_now)
        ),
        (None, false) => say!("Everything up-to-date"),
        (None, true) => {}
    }
    Ok(0)
}

async fn doctor(lake: &str) -> Result<i32, Fatal> {
    let report = git_remote_fdl::commands::doctor::doctor(lake).await?;
    for line in &report.lines {
        out!("{}", shown(line))?;
    }
    Ok(if report.safe { 0 } else { 1 })
}

async fn catalog(request: &commands::CatalogRequest) -> Result<i32, Fatal> {
    let done = commands::catalog(request).await?;
    say!(
        "Wrote the catalog of version {} to {} ({} bytes, sha256 {} as in version.json)",
        done.version,
        shown(&done.path.display().to_string()),
        done.bytes,
        done.sha256
    );
    for line in done.attach.lines() {
        out!("{}", shown(line))?;
    }
    Ok(0)
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

async fn ls(address: &str) -> Result<i32, Fatal> {
    let list = commands::ls(address).await?;
    for w in &list.warnings {
        say!("warning: {}", shown(w));
    }
    for (commit, version, name) in &list.refs {
        out!("{commit}\t{version}\t{}", shown(name))?;
    }
    if let Some(h) = &list.head {
        out!("ref: {}\tHEAD", shown(h))?;
    }
    Ok(0)
}

async fn verify(
    address: &str,
    wanted: &[String],
    allowed_signers: Option<std::path::PathBuf>,
    namespace: Option<&str>,
) -> Result<i32, Fatal> {
    let report = commands::verify(address, wanted, allowed_signers, namespace).await?;
    out!("{:<36}  {:<28}  STATUS", "VERSION", "SIGNER")?;
    for row in &report.rows {
        let status = if row.verdict.is_good() {
            format!("ok: {}", row.verdict)
        } else {
            format!("FAILED: {}", row.verdict)
        };
        out!(
            "{}  {:<28}  {}",
            row.version,
            shown(&row.signer),
            shown(&status)
        )?;
    }
    let unsigned = || {
        if report.none_signed() {
            say!("hint: no version of this lake is signed (none has a version.json.sig), so there is nothing to verify; SIGNED VERSIONS in git-remote-fdl(1) says how a writer signs versions");
        }
    };
    let Some(allowed) = &report.allowed_signers else {
        out!(
            "{} version(s), none checked against a trusted key",
            report.rows.len()
        )?;
        // Git's verify-commit, without gpg.ssh.allowedSignersFile: an error, exit 1.
        say!("error: no allowed signers file: no signature can be trusted");
        say!("hint: pass --allowed-signers FILE, or set gpg.ssh.allowedSignersFile (or remote.<name>.fdlAllowedSignersFile)");
        unsigned();
        return Ok(1);
    };
    if report.listed_signers > 0 {
        out!(
            "\nfdl.json lists {} signer(s); only the keys in {} are trusted",
            report.listed_signers,
            shown(&allowed.display().to_string())
        )?;
    }
    let bad = report.bad();
    out!(
        "{} version(s), {bad} not signed by a trusted key",
        report.rows.len()
    )?;
    unsigned();
    Ok(if bad == 0 { 0 } else { 1 })
}

/// Text from a lake as a table cell or line shows it: secrets removed, control characters
/// escaped, so an author email cannot move the cursor or forge a row.
fn shown(text: &str) -> String {
    git_remote_fdl::redact::for_terminal(text)
}
