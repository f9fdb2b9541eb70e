//! `git-remote-fdl catalog <commit-ish>`: from a commit fetched from a lake to that version's
//! verified catalog on disk, and the DuckDB statements that open it read-only.

use std::path::PathBuf;

use sha2::{Digest, Sha256};

mod duckdb;
mod target;

use super::workspace::{fdl_remote, local_repo, open_remote_lake};
use crate::fatal::Fatal;
use crate::lake::catalog::{expected_sha256, CatalogFormat};
use crate::lake::{VersionId, VersionRecord};
use crate::mapping::{self, ObjectId};
use crate::remote::Remote;
use crate::repo::Repo;
use target::{Output, Target};

/// What `catalog` was asked for.
pub struct CatalogRequest {
    /// The commit (any revision Git resolves) whose version's catalog is wanted.
    pub commit: String,
    /// Where to write it (`-o`); `None`: beside the repository, named by the version.
    pub output: Option<PathBuf>,
    /// A DuckLake format other than the default catalog's (`catalogs/<format>.duckdb`).
    pub format: Option<String>,
    /// The fdl remote to read from (default: the repository's only one).
    pub remote: Option<String>,
}

/// What `catalog` wrote.
pub struct CatalogOutcome {
    /// The version whose catalog it is.
    pub version: VersionId,
    /// Where it was written.
    pub path: PathBuf,
    /// Its size.
    pub bytes: u64,
    /// Its SHA-256, as the record gives it and as checked.
    pub sha256: String,
    /// DuckDB statements that attach the catalog read-only, with the lake's data path.
    pub attach: String,
}

/// Downloads the catalog of the version `req.commit` stands for, checks its digest against
/// the commit's own record (and the lake's), and only then renames it into place.
pub async fn catalog(req: &CatalogRequest) -> Result<CatalogOutcome, Fatal> {
    let format = match &req.format {
        None => CatalogFormat::Default,
        Some(f) => CatalogFormat::parse(f).map_err(|e| Fatal::new(e.to_string()))?,
    };
    let repo = local_repo()?.ok_or_else(|| {
        Fatal::with_hint(
            "not in a Git repository",
            "run 'git-remote-fdl catalog' inside a clone of the lake",
        )
    })?;
    let (commit, version) = version_of_commit(&repo, &req.commit)?;
    // The digest is the one the commit's own version.json gives: neither a cache nor the lake
    // (which may have been rewritten since) can change what a commit stands for.
    let committed = committed_record(&repo, &commit)?;
    let remote_name = fdl_remote(&repo, req.remote.as_deref())?;
    let lake = open_remote_lake(&repo, &remote_name).await?;
    let git_dir = repo.git_dir().to_path_buf();
    let mut remote = Remote::new(lake, Some(repo));
    check_commit(&mut remote, &req.commit, &commit, &version).await?;
    let expected = expected_sha256(&committed, &format).ok_or_else(|| {
        Fatal::with_hint(
            format!(
                "version {version}'s version.json gives no sha256 for its {}: refusing an unverified catalog",
                format.file()
            ),
            "nothing was written",
        )
    })?;
    check_lake_record(&remote, &commit, &version, &format, &expected).await?;
    // Checked before anything is written: the statements are meant to be pasted.
    let data_path = printable_data_path(&remote)?;
    let path = match &req.output {
        Some(p) => p.clone(),
        None => default_output(&git_dir, &version, &format)?,
    };
    let target = Target::of(&path)?;
    let data_path = match target.is_stream() {
        true => None,
        false => Some(printable_path(&path).map(|()| data_path)?),
    };
    let (bytes, sha256) = download_verified(&remote, &version, &format, &target, &expected).await?;
    // A device or a pipe holds no file for DuckDB to attach.
    let attach = match data_path {
        None => String::new(),
        Some(data_path) => {
            duckdb::attach_statements(&path, &data_path, &remote.lake().data_access())
        }
    };
    Ok(CatalogOutcome {
        version,
        path,
        bytes,
        sha256,
        attach,
    })
}

/// The lake's `DATA_PATH`, checked to hold no control character: the printed statements are
/// pasted, often a line at a time, and a newline inside a quoted path would start a statement
/// the lake chose.
fn printable_data_path(remote: &Remote) -> Result<String, Fatal> {
    let data_path = remote.lake().data_path().map_err(|e| {
        Fatal::with_hint(
            e.to_string(),
            "nothing was written; fix data_dir in the lake's fdl.json (a folder under the lake's root, such as data/)",
        )
    })?;
    let controlled = |s: &str| s.chars().any(char::is_control);
    if controlled(&data_path) {
        return Err(Fatal::with_hint(
            format!(
                "lake '{}': its address holds a control character: no statements can name its data",
                remote.lake().name()
            ),
            "nothing was written; open the lake at an address without control characters",
        ));
    }
    Ok(data_path)
}

/// Refuses a catalog's path that holds a control character, for the same reason.
fn printable_path(path: &std::path::Path) -> Result<(), Fatal> {
    if path.to_string_lossy().chars().any(char::is_control) {
        return Err(Fatal::with_hint(
            format!("the catalog's path '{}' holds a control character: no statements can name it", crate::lake::printable(&path.to_string_lossy())),
            "nothing was written; give -o a path without control characters (or work in a folder without them)",
        ));
    }
    Ok(())
}

/// Without `-o`: `<git dir>/fdl/catalogs/<version>.duckdb` (`<version>-<format>.duckdb` for
/// another format), where it leaves the work tree, and so `git status`, as it was.
fn default_output(
    git_dir: &std::path::Path,
    version: &VersionId,
    format: &CatalogFormat,
) -> Result<PathBuf, Fatal> {
    let dir = std::path::absolute(git_dir.join("fdl").join("catalogs"))
        .map_err(|e| Fatal::new(format!("no current folder: {e}")))?;
    std::fs::create_dir_all(&dir)
        .map_err(|e| Fatal::new(format!("cannot create {}: {e}", dir.display())))?;
    let name = match format {
        CatalogFormat::Default => format!("{version}.duckdb"),
        CatalogFormat::Other(f) => format!("{version}-{f}.duckdb"),
    };
    Ok(dir.join(name))
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
                remote.lake().name(),
                &mapped.to_hex()[..12]
            ),
            "the commit was made or amended locally, or the version was rewritten in the lake; \
             check the lake with: git-remote-fdl fsck <remote>",
        ));
    }
    Ok(())
}

/// The record in the commit's own tree (`version.json`): what the commit stands for.
fn committed_record(repo: &Repo, commit: &ObjectId) -> Result<VersionRecord, Fatal> {
    let short = &commit.to_hex()[..12];
    let unreadable = |why: &str| {
        Fatal::with_hint(
            format!("commit {short}'s version.json cannot be read: {why}"),
            "name a commit fetched from the lake, such as a tag or origin/main; nothing was written",
        )
    };
    let (_, data) = repo
        .object(commit)
        .ok_or_else(|| unreadable("the commit is not in the repository"))?;
    let tree = std::str::from_utf8(&data)
        .ok()
        .and_then(|t| t.lines().next()?.strip_prefix("tree "))
        .and_then(ObjectId::from_hex)
        .ok_or_else(|| unreadable("the commit names no tree"))?;
    let blob = repo
        .object(&tree)
        .and_then(|(_, entries)| tree_entry(&entries, b"version.json"))
        .ok_or_else(|| unreadable("its tree has no version.json"))?;
    let (_, raw) = repo
        .object(&blob)
        .ok_or_else(|| unreadable("the file is not in the repository"))?;
    VersionRecord::parse(raw).map_err(|e| unreadable(&e.to_string()))
}

/// The object a raw tree (`<mode> <name>\0<20-byte id>`...) holds under `name`.
fn tree_entry(mut entries: &[u8], name: &[u8]) -> Option<ObjectId> {
    while !entries.is_empty() {
        let nul = entries.iter().position(|b| *b == 0)?;
        let (head, rest) = entries.split_at(nul);
        let id: [u8; 20] = rest.get(1..21)?.try_into().ok()?;
        let entry_name = &head[head.iter().position(|b| *b == b' ')? + 1..];
        if entry_name == name {
            return Some(ObjectId(id));
        }
        entries = &rest[21..];
    }
    None
}

/// The lake's record of the version must still give the commit's digest: a rewritten record
/// (and catalog) is refused before anything is written, naming both digests.
async fn check_lake_record(
    remote: &Remote,
    commit: &ObjectId,
    version: &VersionId,
    format: &CatalogFormat,
    expected: &str,
) -> Result<(), Fatal> {
    let lake = remote.lake();
    let record = lake.read_record(version).await?.ok_or_else(|| {
        Fatal::new(format!(
            "lake '{}' no longer holds version {version}",
            lake.name()
        ))
    })?;
    let now = expected_sha256(&record, format);
    if now.as_deref() == Some(expected) {
        return Ok(());
    }
    Err(Fatal::with_hint(
        format!(
            "version {version} was rewritten in lake '{}': commit {}'s version.json gives its {} sha256 {expected}, the lake's version.json now gives {}",
            lake.name(),
            &commit.to_hex()[..12],
            format.file(),
            now.as_deref().unwrap_or("none"),
        ),
        "versions are never rewritten: nothing was written; check the lake with: git-remote-fdl fsck <remote>",
    ))
}

/// Streams the catalog to `target`, hashing it. A file is written beside its path and renamed
/// into place only if the digest is `expected`; a device or FIFO receives the bytes as they
/// come, and is told nothing is right unless the digest is. Returns the size and digest.
async fn download_verified(
    remote: &Remote,
    version: &VersionId,
    format: &CatalogFormat,
    target: &Target,
    expected: &str,
) -> Result<(u64, String), Fatal> {
    let mut out = target.open()?;
    let result = download_to(remote, version, format, &mut out, expected).await;
    out.finish(result)
}

async fn download_to(
    remote: &Remote,
    version: &VersionId,
    format: &CatalogFormat,
    out: &mut Output,
    expected: &str,
) -> Result<(u64, String), Fatal> {
    let mut hasher = Sha256::new();
    let mut bytes = 0u64;
    let mut failed: Option<std::io::Error> = None;
    let found = remote
        .lake()
        .download_catalog(version, format, &mut |chunk| {
            hasher.update(chunk);
            bytes += chunk.len() as u64;
            // The output's own error is kept, so that the output is blamed, not the lake.
            out.write_all(chunk).map_err(|e| {
                let kind = e.kind();
                failed = Some(e);
                std::io::Error::new(kind, "the output failed")
            })
        })
        .await;
    if let Some(e) = failed {
        return Err(out.write_error(&e));
    }
    if !found? {
        return Err(Fatal::with_hint(
            format!(
                "version {version} has no {} in lake '{}'",
                format.file(),
                remote.lake().name()
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
            format!(
                "the catalog was damaged or replaced in the lake; {}",
                out.what_was_written()
            ),
        ));
    }
    Ok((bytes, got))
}
