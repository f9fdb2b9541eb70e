//! `git-remote-fdl verify`: every version the refs reach, its signature checked against the
//! keys trusted.

use std::path::PathBuf;
use std::sync::Arc;

use crate::config;
use crate::fatal::Fatal;
use crate::history::{self, Reading};
use crate::lake::{Lake, VersionId};
use crate::progress::Silent;
use crate::signatures::{AllowedSigners, Policy, Verdict};

use super::named::open_named;

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
