//! The command line for humans: `git-remote-fdl ls <lake>` and `git-remote-fdl help`. Git's own
//! invocations never reach here.

use clap::{Parser, Subcommand};

use crate::helper::{expand_home, store_options};
use crate::history;
use crate::lake::Lake;
use crate::progress::Silent;
use crate::remote::{Remote, RemoteError};
use crate::repo::Repo;
use crate::signatures::{self, AllowedSigners, Subject, Verdict, DEFAULT_NAMESPACE};
use crate::store::{Store, StoreUrl};

#[derive(Parser, Debug)]
#[command(
    name = "git-remote-fdl",
    version,
    about = "Git remote helper for FDL lakes",
    long_about = "Git runs this helper for remotes whose URL starts with fdl::, for example\n  git clone fdl::s3://bucket/lake/ data\n  git ls-remote --symref fdl::/srv/lakes/sales\nRun by hand, it offers the commands below.",
    after_long_help = "\
Lake addresses (after fdl::):
  /srv/lakes/sales, lakes/sales, file:///srv/lakes/sales   a local folder
  s3://<bucket>/<prefix>/      Amazon S3 and S3-compatible stores (MinIO, R2, Ceph)
  gs://<bucket>/<prefix>/      Google Cloud Storage
  az://<container>/<prefix>/   Azure Blob Storage (also azure://, abfs[s]://)
  https://<host>/<path>/       plain HTTP(S), read-only

Configuration, per remote (git config remote.<name>.<key>):
  fdlEndpoint, fdlRegion, fdlAllowHttp   where the store is (emulators, MinIO, R2, Ceph)
  fdlOption = <key>=<value>              any object_store option; may be repeated
  fdlRequireSignatures, fdlAllowedSignersFile, fdlSignatureNamespace   signed versions

Environment:
  S3     AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_REGION,
         AWS_ENDPOINT_URL, AWS_ALLOW_HTTP, AWS_VIRTUAL_HOSTED_STYLE_REQUEST
  GCS    GOOGLE_SERVICE_ACCOUNT, GOOGLE_SERVICE_ACCOUNT_KEY, GOOGLE_APPLICATION_CREDENTIALS,
         GOOGLE_BASE_URL
  Azure  AZURE_STORAGE_ACCOUNT_NAME, AZURE_STORAGE_ACCOUNT_KEY, AZURE_STORAGE_SAS_KEY,
         AZURE_STORAGE_ENDPOINT, AZURE_STORAGE_USE_EMULATOR, AZURITE_BLOB_STORAGE_URL
  GIT_REMOTE_FDL_DEBUG=1   traces the session to stderr

Submodules with fdl:: URLs need Git's permission, once, by you:
  git config --global protocol.fdl.allow always

The manual: git help remote-fdl (or man git-remote-fdl), installed by make install."
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
    /// Check the signatures of a lake's versions against the keys you trust, as a table:
    /// version, signer, status. Exits 1 if any version is not signed by a trusted key.
    Verify {
        /// The lake's address
        lake: String,
        /// Branches or tags whose history to check (default: all of them), e.g. main v2026.11
        refs: Vec<String>,
        /// The keys you trust, as an SSH allowed-signers file (default: git config gpg.ssh.allowedSignersFile)
        #[arg(long, value_name = "FILE")]
        allowed_signers: Option<std::path::PathBuf>,
        /// The signature namespace
        #[arg(long, default_value = DEFAULT_NAMESPACE)]
        namespace: String,
    },
}

const SUBCOMMANDS: [&str; 4] = ["ls", "verify", "help", "--help"];

/// Git runs `git-remote-fdl <remote> [<url>]`; humans run subcommands or flags. A remote may
/// be named like a subcommand (`verify`): Git runs its helpers with `GIT_DIR` set, which a
/// human's shell does not have.
pub fn is_git_invocation(args: &[String]) -> bool {
    matches!(args.len(), 1 | 2)
        && !args[0].starts_with('-')
        && (!SUBCOMMANDS.contains(&args[0].as_str()) || std::env::var_os("GIT_DIR").is_some())
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
    let result: anyhow::Result<i32> = runtime.block_on(async {
        match cli.command {
            Command::Ls { lake } => ls(&lake).await.map(|_| 0),
            Command::Verify {
                lake,
                refs,
                allowed_signers,
                namespace,
            } => verify(&lake, &refs, allowed_signers, &namespace).await,
        }
    });
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("fatal: {}", crate::store::redact(&format!("{e:#}")));
            128
        }
    }
}

async fn open_lake(address: &str) -> anyhow::Result<Lake> {
    let address = address.strip_prefix("fdl::").unwrap_or(address);
    let url = StoreUrl::parse(address, &std::env::current_dir()?)?;
    let repo = Repo::from_env().ok().flatten();
    let opts = store_options(repo.as_ref(), "").map_err(|f| anyhow::anyhow!(f.message))?;
    Ok(Lake::open(Store::open(&url, &opts)?)
        .await
        .map_err(RemoteError::from)?)
}

async fn verify(
    address: &str,
    wanted: &[String],
    allowed_signers: Option<std::path::PathBuf>,
    namespace: &str,
) -> anyhow::Result<i32> {
    let path = match allowed_signers {
        Some(p) => p,
        None => git_config("gpg.ssh.allowedSignersFile")
            .map(|p| expand_home(&p))
            .ok_or_else(|| {
                anyhow::anyhow!("no allowed signers file: pass --allowed-signers FILE or set gpg.ssh.allowedSignersFile")
            })?,
    };
    let trusted = AllowedSigners::load(&path).map_err(|e| anyhow::anyhow!(e))?;
    let lake = open_lake(address).await?;
    let refs = lake.refs().await.map_err(RemoteError::from)?;
    let mut tips = Vec::new();
    for w in wanted {
        let found = refs.iter().find(|(n, _)| {
            n == w || *n == format!("refs/heads/{w}") || *n == format!("refs/tags/{w}")
        });
        let (name, v) = found
            .ok_or_else(|| anyhow::anyhow!("lake '{}' has no branch or tag '{w}'", lake.name()))?;
        tips.push((v.clone(), format!("ref {name}")));
    }
    if wanted.is_empty() {
        tips = refs
            .iter()
            .map(|(n, v)| (v.clone(), format!("ref {n}")))
            .collect();
    }
    let resolved = history::resolve(&lake, &tips, &Default::default(), &Silent)
        .await
        .map_err(RemoteError::from)?;
    let mut versions: Vec<_> = resolved.built.iter().collect();
    versions.sort_by(|a, b| b.1.time.cmp(&a.1.time).then(b.0.cmp(a.0)));
    let sigs = lake
        .read_signatures(versions.iter().map(|(v, _)| (*v).clone()))
        .await
        .map_err(RemoteError::from)?;
    println!("{:<36}  {:<28}  STATUS", "VERSION", "SIGNER");
    let mut bad = 0;
    for (v, b) in &versions {
        let subject = Subject {
            record: b.record(),
            signature: sigs[*v].as_deref(),
            principal: &b.author_email,
            time: b.time,
        };
        let verdict = signatures::verify(&subject, &trusted, namespace, &lake.config.signers);
        let signer = match &verdict {
            Verdict::Good { principal, .. } => principal.clone(),
            _ if b.author_email.is_empty() => "-".to_string(),
            _ => format!("({})", b.author_email),
        };
        let status = if verdict.is_good() {
            format!("ok: {verdict}")
        } else {
            bad += 1;
            format!("FAILED: {verdict}")
        };
        println!("{v}  {signer:<28}  {status}");
    }
    let listed = lake.config.signers.len();
    if listed > 0 {
        println!(
            "\nfdl.json lists {listed} signer(s); only the keys in {} are trusted",
            path.display()
        );
    }
    println!(
        "{} version(s), {bad} not signed by a trusted key",
        versions.len()
    );
    Ok(if bad == 0 { 0 } else { 1 })
}

fn git_config(key: &str) -> Option<String> {
    let out = std::process::Command::new("git")
        .args(["config", "--get", key])
        .output()
        .ok()?;
    let v = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (out.status.success() && !v.is_empty()).then_some(v)
}

async fn ls(address: &str) -> anyhow::Result<()> {
    let lake = open_lake(address).await?;
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
