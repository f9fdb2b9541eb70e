//! What the commands for humans compute (`git-remote-fdl ls`, `git-remote-fdl verify`), as
//! data: the binary prints it. Nothing here writes to the terminal.

use std::path::PathBuf;
use std::sync::Arc;

pub use crate::catalog::{catalog, CatalogRequest};
use crate::config;
use crate::fatal::Fatal;
use crate::history::{self, Reading};
use crate::lake::{Lake, VersionId};
use crate::mapping::ObjectId;
use crate::progress::Silent;
use crate::remote::Remote;
use crate::repo::Repo;
use crate::signatures::{AllowedSigners, Policy, Verdict};
use crate::workspace::{fdl_remotes, local_repo, open_lake, open_remote_lake, remote_of_address};

/// A lake named on the command line: the name of an fdl remote of the repository around, or an
/// address; an address one of its remotes names is that remote (compared as the helper
/// resolves both), so that the remote's configuration and fetched commits count.
struct Named {
    lake: Lake,
    repo: Option<Repo>,
    remote: Option<String>,
}

async fn open_named(lake: &str) -> Result<Named, Fatal> {
    let repo = local_repo()?;
    // A remote of another kind named where a lake is expected is not a folder of that name.
    if let Some(repo) = &repo {
        let urls: Vec<String> = repo
            .remote_urls()
            .into_iter()
            .filter(|(n, _)| n == lake)
            .map(|(_, u)| u)
            .collect();
        if !urls.is_empty() && !urls.iter().any(|u| u.starts_with("fdl::")) {
            return Err(Fatal::with_hint(
                format!("'{lake}' is not an fdl remote of this repository (its URL does not start with fdl::)"),
                "name an fdl remote, or give the lake's address (fdl::<address>)",
            ));
        }
    }
    let remote = repo.as_ref().and_then(|repo| {
        match fdl_remotes(repo).into_iter().any(|(n, _)| n == lake) {
            true => Some(lake.to_string()),
            false => remote_of_address(repo, lake),
        }
    });
    let opened = match (&repo, &remote) {
        (Some(repo), Some(name)) => open_remote_lake(repo, name).await?,
        _ => open_lake(lake).await?,
    };
    Ok(Named {
        lake: opened,
        repo,
        remote,
    })
}

/// `git-remote-fdl fsck <lake | remote>`: a remote's fetched commits are compared with the
/// lake's.
pub async fn fsck(
    lake: &str,
    catalogs: bool,
    progress: &dyn crate::progress::Progress,
) -> Result<crate::fsck::FsckReport, Fatal> {
    let named = open_named(lake).await?;
    let fetched = match (&named.repo, &named.remote) {
        (Some(repo), Some(remote)) => Some(crate::fsck::Fetched::new(
            repo,
            remote,
            Some(crate::cache::Cache::load(
                repo.git_dir(),
                &named.lake.name(),
                named.lake.config().id.as_deref(),
            )),
        )),
        _ => None,
    };
    let mut report = crate::fsck::fsck(&named.lake, fetched, catalogs, progress).await?;
    if named.remote.is_none() {
        let note = match named.repo {
            Some(_) => {
                "this repository has no remote for this lake: versions rewritten and tags \
                        moved since a fetch cannot be seen without one"
            }
            None => {
                "outside a repository, versions rewritten and tags moved since a fetch \
                     cannot be seen"
            }
        };
        report.notes.push(format!(
            "{note} (run 'git-remote-fdl fsck <remote>' in a clone of the lake)"
        ));
    }
    Ok(report)
}

/// A lake's refs: `(commit, version, ref name)` in name order, HEAD's target, and warnings.
pub struct RefList {
    /// Each ref's commit, version and full name.
    pub refs: Vec<(ObjectId, VersionId, String)>,
    /// The branch `HEAD` names, if it names one of the refs.
    pub head: Option<String>,
    /// What was passed over on the way, to print as warnings.
    pub warnings: Vec<String>,
}

/// `git-remote-fdl ls <lake | remote>`.
pub async fn ls(address: &str) -> Result<RefList, Fatal> {
    let named = open_named(address).await?;
    let mut remote = Remote::new(named.lake, None);
    let listing = remote.list(&Silent).await;
    let warnings = remote.take_warnings();
    let listing = listing?;
    Ok(RefList {
        refs: listing
            .refs
            .iter()
            .map(|(name, v)| (listing.commits[v], v.clone(), name.clone()))
            .collect(),
        head: listing.head.clone(),
        warnings,
    })
}

/// One row of `verify`'s table.
pub struct VerifyRow {
    /// The version checked.
    pub version: VersionId,
    /// The trusted principal, or the record's author email in parentheses, or `-`.
    pub signer: String,
    /// What its signature says.
    pub verdict: Verdict,
}

/// What `verify` found.
pub struct VerifyReport {
    /// Newest first.
    pub rows: Vec<VerifyRow>,
    /// How many signers `fdl.json` lists (none of them trusted for that).
    pub listed_signers: usize,
    /// `None`: no allowed-signers file was given or configured, so no key was trusted.
    pub allowed_signers: Option<PathBuf>,
}

impl VerifyReport {
    /// How many versions are not signed by a trusted key.
    pub fn bad(&self) -> usize {
        self.rows.iter().filter(|r| !r.verdict.is_good()).count()
    }

    /// Whether versions were found and none of them carries a signature at all (an unsigned
    /// lake, such as the example's): there is nothing to verify.
    pub fn none_signed(&self) -> bool {
        !self.rows.is_empty()
            && self
                .rows
                .iter()
                .all(|r| matches!(r.verdict, Verdict::Missing))
    }
}

/// `git-remote-fdl verify <lake | remote> [<ref>...]`: every version the refs reach, checked
/// against the keys in `allowed_signers` (default: the remote's `fdlAllowedSignersFile`, else
/// Git's `gpg.ssh.allowedSignersFile`), in `namespace` (default: the remote's
/// `fdlSignatureNamespace`, else `fdl`).
pub async fn verify(
    address: &str,
    wanted: &[String],
    allowed_signers: Option<PathBuf>,
    namespace: Option<&str>,
) -> Result<VerifyReport, Fatal> {
    let named = open_named(address).await?;
    let remote = named.repo.as_ref().zip(named.remote.as_deref());
    // Without a file the table is still shown, as `git log --show-signature` shows signatures
    // it cannot check: no key is trusted, so no version passes.
    let path = allowed_signers.or_else(|| {
        remote
            .and_then(|(repo, name)| config::allowed_signers_file(repo, name))
            .or_else(|| config::git_allowed_signers_file(named.repo.as_ref()))
    });
    let namespace = match namespace {
        Some(ns) => ns.to_string(),
        None => remote
            .and_then(|(repo, name)| repo.config(&format!("remote.{name}.fdlSignatureNamespace")))
            .unwrap_or_else(|| crate::signatures::DEFAULT_NAMESPACE.to_string()),
    };
    let trusted = match &path {
        Some(path) => AllowedSigners::load(path).map_err(|e| Fatal::new(e.to_string()))?,
        None => AllowedSigners::default(),
    };
    let lake = named.lake;
    let tips = verify_tips(&lake, wanted).await?;
    let policy = Policy { trusted, namespace };
    let reading = Reading::new(lake.clone()).with_check(Some(Arc::new(policy)));
    let resolved = history::resolve(&reading, &tips, &Default::default(), &Silent).await?;
    let mut versions: Vec<_> = resolved.built.into_iter().collect();
    let time = |b: &history::BuiltVersion| b.checked.as_ref().map_or(0, |c| c.time);
    versions.sort_by(|a, b| time(&b.1).cmp(&time(&a.1)).then(b.0.cmp(&a.0)));
    let rows = versions
        .into_iter()
        .map(|(version, b)| {
            let (verdict, author) = match b.checked {
                Some(c) => (c.verdict, c.author_email),
                None => (Verdict::Missing, String::new()),
            };
            let signer = match &verdict {
                Verdict::Good { principal, .. } => principal.clone(),
                _ if author.is_empty() => "-".to_string(),
                _ => format!("({author})"),
            };
            VerifyRow {
                version,
                signer,
                verdict,
            }
        })
        .collect();
    Ok(VerifyReport {
        rows,
        listed_signers: lake.config().signers.len(),
        allowed_signers: path,
    })
}

/// The refs `verify` checks: those named (short names allowed), or all of them.
async fn verify_tips(lake: &Lake, wanted: &[String]) -> Result<Vec<(VersionId, String)>, Fatal> {
    let refs = lake.refs().await?;
    if wanted.is_empty() {
        return Ok(refs
            .iter()
            .map(|(n, v)| (v.clone(), format!("ref {n}")))
            .collect());
    }
    let mut tips = Vec::new();
    for w in wanted {
        let found = refs.iter().find(|(n, _)| {
            n == w || *n == format!("refs/heads/{w}") || *n == format!("refs/tags/{w}")
        });
        let (name, v) = found.ok_or_else(|| {
            Fatal::new(format!("lake '{}' has no branch or tag '{w}'", lake.name()))
        })?;
        tips.push((v.clone(), format!("ref {name}")));
    }
    Ok(tips)
}

/// `git-remote-fdl pack <lake | remote>`: the lake's history written as packs in the lake,
/// read through Git with the remote's configuration.
pub async fn pack(
    lake: &str,
    dry_run: bool,
    progress: Option<&(dyn Fn(&str) + Sync)>,
) -> Result<(crate::lake_packs::make::PackSummary, Vec<String>), Fatal> {
    let named = open_named(lake).await?;
    let url = match (&named.repo, &named.remote) {
        (Some(repo), Some(remote)) => crate::workspace::remote_store_url(repo, remote)?,
        _ => crate::workspace::store_url(lake)?,
    };
    if url.is_read_only() {
        return Err(Fatal::read_only(&url, "packed", "pack"));
    }
    let remote_config = match (&named.repo, &named.remote) {
        (Some(repo), Some(remote)) => config::remote_fdl_config(repo, remote)?,
        _ => Vec::new(),
    };
    let mut pack_warnings = Vec::new();
    if !dry_run {
        // Warnings (the unsafe setting, a scratch key left behind) go with the summary's.
        pack_warnings = crate::safety::before_first_write(
            &named.lake,
            named.repo.as_ref(),
            named.remote.as_deref(),
        )
        .await?;
    }
    let job = crate::lake_packs::make::PackJob {
        lake: &named.lake,
        address: format!("fdl::{}", url.as_address()),
        remote_config,
        dry_run,
        progress,
    };
    let summary = crate::lake_packs::make::pack(&job)
        .await
        .map_err(|e| Fatal::new(e.to_string()))?;
    Ok((summary, pack_warnings))
}

/// The lake `doctor` looks at: an address or a remote, opened with the remote's configuration.
pub async fn open_for_doctor(lake: &str) -> Result<Lake, Fatal> {
    Ok(open_named(lake).await?.lake)
}
