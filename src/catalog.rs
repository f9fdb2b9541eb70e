//! `git-remote-fdl catalog <commit-ish>`: from a commit fetched from a lake to that version's
//! verified catalog on disk, and the DuckDB statements that open it read-only.

use std::io::Write;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::fatal::Fatal;
use crate::lake::catalog::{expected_sha256, CatalogFormat};
use crate::lake::VersionId;
use crate::mapping::{self, ObjectId};
use crate::open::{fdl_remote, local_repo, open_remote_lake};
use crate::remote::Remote;
use crate::repo::Repo;

/// What `catalog` was asked for.
pub struct CatalogRequest {
    pub commit: String,
    pub output: Option<PathBuf>,
    /// A DuckLake format other than the default catalog's (`catalogs/<format>.duckdb`).
    pub format: Option<String>,
    /// The fdl remote to read from (default: the repository's only one).
    pub remote: Option<String>,
}

/// What `catalog` wrote.
pub struct CatalogOutcome {
    pub version: VersionId,
    pub path: PathBuf,
    pub bytes: u64,
    pub sha256: String,
    /// DuckDB statements that attach the catalog read-only, with the lake's data path.
    pub attach: String,
}

/// Downloads the catalog of the version `req.commit` stands for, checks its digest against
/// the version's record, and only then renames it into place.
pub async fn catalog(req: &CatalogRequest) -> Result<CatalogOutcome, Fatal> {
    let format = match &req.format {
        None => CatalogFormat::Default,
        Some(f) => CatalogFormat::parse(f).map_err(Fatal::new)?,
    };
    let repo = local_repo()?.ok_or_else(|| {
        Fatal::with_hint(
            "not in a Git repository",
            "run 'git-remote-fdl catalog' inside a clone of the lake",
        )
    })?;
    let (commit, version) = version_of_commit(&repo, &req.commit)?;
    let remote_name = fdl_remote(req.remote.as_deref())?;
    let lake = open_remote_lake(&repo, &remote_name).await?;
    let mut remote = Remote::new(lake, Some(repo));
    check_commit(&mut remote, &req.commit, &commit, &version).await?;
    let lake = &remote.lake;
    let record = lake
        .read_version_with(&version, false)
        .await?
        .ok_or_else(|| {
            Fatal::new(format!(
                "lake '{}' no longer holds version {version}",
                lake.name()
            ))
        })?
        .record;
    let expected = expected_sha256(&record, &format).ok_or_else(|| {
        Fatal::with_hint(
            format!(
                "version {version}'s version.json gives no sha256 for its {}: refusing an unverified catalog",
                format.file()
            ),
            "nothing was written",
        )
    })?;
    let path = req
        .output
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("{version}.duckdb")));
    let (bytes, sha256) = download_verified(&remote, &version, &format, &path, &expected).await?;
    let attach = crate::duckdb::attach_statements(
        &path,
        &remote.lake.data_path(),
        &remote.lake.data_access(),
    );
    Ok(CatalogOutcome {
        version,
        path,
        bytes,
        sha256,
        attach,
    })
}

/// The commit `commit_ish` names, and the version its `FDL-Version` trailer gives.
fn version_of_commit(repo: &Repo, commit_ish: &str) -> Result<(ObjectId, VersionId), Fatal> {
    let id = repo
        .resolve(&format!("{commit_ish}^{{commit}}"))
        .ok_or_else(|| Fatal::new(format!("'{commit_ish}' does not name a commit")))?;
    let (_, data) = repo
        .object(&id)
        .ok_or_else(|| Fatal::new(format!("commit {id} is not in the repository")))?;
    let version = mapping::commit_message(&data)
        .and_then(mapping::version_of_message)
        .ok_or_else(|| {
            Fatal::with_hint(
                format!(
                    "commit {} is not a lake version (no FDL-Version trailer)",
                    &id.to_hex()[..12]
                ),
                "name a commit fetched from the lake, such as a tag or origin/main",
            )
        })?;
    Ok((id, version))
}

/// The commit must be exactly the lake's commit for its version: a commit made or amended
/// locally, or a version rewritten in the lake, must not pass for it.
async fn check_commit(
    remote: &mut Remote,
    commit_ish: &str,
    commit: &ObjectId,
    version: &VersionId,
) -> Result<(), Fatal> {
    let named_by = format!("commit {}", &commit.to_hex()[..12]);
    let mapped = remote.commit_of(version, &named_by).await?;
    if mapped != *commit {
        return Err(Fatal::with_hint(
            format!(
                "'{commit_ish}' ({}) names version {version}, but lake '{}' maps that version to {}",
                &commit.to_hex()[..12],
                remote.lake.name(),
                &mapped.to_hex()[..12]
            ),
            "the commit was made or amended locally, or the version was rewritten in the lake; \
             check the lake with: git-remote-fdl fsck <remote>",
        ));
    }
    Ok(())
}

/// Streams the catalog into a temporary file beside `path`, hashing it; renames it into place
/// only if the digest is `expected`. Returns the size and digest.
async fn download_verified(
    remote: &Remote,
    version: &VersionId,
    format: &CatalogFormat,
    path: &Path,
    expected: &str,
) -> Result<(u64, String), Fatal> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
    let result = download_to(remote, version, format, &tmp, expected).await;
    let outcome = result.and_then(|got| {
        std::fs::rename(&tmp, path)
            .map_err(|e| Fatal::new(format!("cannot write {}: {e}", path.display())))?;
        Ok(got)
    });
    if outcome.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    outcome
}

async fn download_to(
    remote: &Remote,
    version: &VersionId,
    format: &CatalogFormat,
    tmp: &Path,
    expected: &str,
) -> Result<(u64, String), Fatal> {
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(tmp)
        .map_err(|e| Fatal::new(format!("cannot write {}: {e}", tmp.display())))?;
    let mut hasher = Sha256::new();
    let mut bytes = 0u64;
    let found = remote
        .lake
        .download_catalog(version, format, &mut |chunk| {
            hasher.update(chunk);
            bytes += chunk.len() as u64;
            file.write_all(chunk)
        })
        .await?;
    if !found {
        return Err(Fatal::with_hint(
            format!(
                "version {version} has no {} in lake '{}'",
                format.file(),
                remote.lake.name()
            ),
            "nothing was written",
        ));
    }
    let got: String = hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    if got != expected {
        return Err(Fatal::with_hint(
            format!(
                "version {version}'s {} has sha256 {got}, but its version.json says {expected}",
                format.file()
            ),
            "the catalog was damaged or replaced in the lake; nothing was written",
        ));
    }
    file.sync_all()
        .map_err(|e| Fatal::new(format!("cannot write {}: {e}", tmp.display())))?;
    Ok((bytes, got))
}
