//! `git-remote-fdl pack`: the lake's history as Git packs in `git-packs/`, for readers to
//! download instead of reading every version. The versions are read by this helper itself
//! (a bare clone in a temporary folder, through Git), after a listing of `versions/` whose
//! ETags go into the record: a file rewritten in between has another ETag than the one
//! recorded, and readers then read it themselves. Git's `pack-objects` makes the pack (deltas
//! included) of what no earlier pack holds; the pack and its record are written first, each
//! only if absent, and `list.json` last, on condition, so two runs at once never lose a pack.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use super::ahead::{self, Claimed};
use super::run::{all_commits, exclusions, present_commits, run, GitStepError, Run, Scope};
use super::{parse_list, parse_record, render_list, render_record};
use super::{FormatError, MERGE_AT};
use super::{PackedSignature, PackedVersion, Record};
use crate::git::{Git, GitError};
use crate::lake::git_packs::VersionFileEtags;
use crate::lake::{Lake, VersionId};
use crate::mapping::ObjectId;
use crate::store::{WriteError, WriteMode};

/// Why packing stopped; nothing in the lake changed unless it says so.
#[derive(Debug, thiserror::Error)]
pub(crate) enum PackError {
    #[error("lake '{lake}': {source}")]
    Format { lake: String, source: FormatError },
    #[error("lake '{lake}': cannot read git-packs/: {why}")]
    Read { lake: String, why: String },
    #[error("lake '{lake}': cannot read its versions through Git: {why}")]
    Clone { lake: String, why: GitError },
    #[error("lake '{lake}': git {step} failed: {why}")]
    Git {
        lake: String,
        step: &'static str,
        why: GitStepError,
    },
    #[error("lake '{lake}': cannot write git-packs/{path}: {why}")]
    Write {
        lake: String,
        path: String,
        why: String,
    },
}

/// What a run did (or, with `--dry-run`, would do).
#[derive(Debug, Default)]
pub struct PackSummary {
    /// Versions the packs held before.
    pub packed_before: usize,
    /// Versions the new pack holds.
    pub new_versions: usize,
    /// The new pack's name (none when nothing was new).
    pub pack: Option<String>,
    /// Packs merged into the new one (all of them, when there were too many).
    pub merged: usize,
    /// Packs `list.json` names now.
    pub packs_now: usize,
    pub dry_run: bool,
    /// Records set aside (their versions packed again), each said once.
    pub warnings: Vec<String>,
    /// Listed packs made before claims were, whose claims this run wrote from their records.
    pub claims_added: usize,
}

/// What the packer is given: the lake, the address Git reaches it at (`fdl::` prefixed) and
/// the remote's `fdl*` configuration, for the clone that reads the versions.
pub(crate) struct PackJob<'a> {
    pub lake: &'a Lake,
    pub address: String,
    pub remote_config: Vec<(String, String)>,
    pub dry_run: bool,
    /// Where the clone's progress goes (Git's own lines, as they come); none: no progress.
    pub progress: Option<&'a (dyn Fn(&str) + Sync)>,
}

/// What a run found before reading any version: the pack list, the listing of `versions/`,
/// the packs with a readable record, how many claims it added, and how it reads the history
/// (`ahead`: above the packs it keeps; none: all of it).
struct Survey {
    list: Option<crate::store::Versioned>,
    tags: std::collections::HashMap<VersionId, VersionFileEtags>,
    packed: Packed,
    claims_added: usize,
    merge_all: bool,
    ahead: Option<ahead::Ahead>,
}

/// The most refs a run's clone above the packs names on Git's command line.
const MAX_REFS_AHEAD: usize = 4096;

async fn survey(lake: &Lake) -> Result<Survey, PackError> {
    let read_err = |why: String| PackError::Read {
        lake: lake.name(),
        why,
    };
    let list = lake
        .pack_list()
        .await
        .map_err(|e| read_err(e.to_string()))?;
    // Listed before any version is read: a file rewritten after this has another ETag.
    let newest = lake.newest_in_refs_json();
    let tags = lake
        .version_file_tags(None, newest.as_ref())
        .await
        .map_err(|e| read_err(e.to_string()))?;
    let list_bytes = list.as_ref().map(|l| &l.bytes[..]);
    let (packed, unchanged) = read_packed(lake, list_bytes, &tags).await?;
    let merge_all = packed.kept.len() + 1 > MERGE_AT;
    // A cloud lake whose packs are as the listing shows is read only above the packs kept.
    let ahead = match merge_all || lake.is_local() || !unchanged {
        true => None,
        false => {
            let refs = lake.refs().await.map_err(|e| read_err(e.to_string()))?;
            let planned = ahead::plan(&packed.records, &tags, &refs);
            // Each ref is a refspec on Git's command line: beyond a few thousand, the
            // whole history is cloned instead.
            Some(planned).filter(|a| a.refs.len() <= MAX_REFS_AHEAD)
        }
    };
    Ok(Survey {
        list,
        tags,
        packed,
        claims_added: 0,
        merge_all,
        ahead,
    })
}

/// Runs a `pack`.
pub(crate) async fn pack(job: &PackJob<'_>) -> Result<PackSummary, PackError> {
    let lake = job.lake;
    let name = lake.name();
    let mut survey = survey(lake).await?;
    survey.claims_added = add_missing_claims(lake, &survey.packed.records, job.dry_run).await?;
    let Survey { list, tags, .. } = &survey;
    let Packed { kept, records } = &survey.packed;
    if survey.ahead.as_ref().is_some_and(|a| a.refs.is_empty()) {
        return Ok(PackSummary {
            packed_before: (records.iter())
                .flat_map(|(_, r)| r.iter().map(|(v, _)| v))
                .collect::<HashSet<_>>()
                .len(),
            packs_now: kept.len(),
            dry_run: job.dry_run,
            claims_added: survey.claims_added,
            ..Default::default()
        });
    }
    let read_err = |why: String| PackError::Read {
        lake: name.clone(),
        why,
    };
    let dir = tempfile::tempdir().map_err(|e| read_err(format!("no temporary folder: {e}")))?;
    // Removed by its drop, or by a signal (Ctrl-C, a CI's timeout) that ends the run.
    let _on_signal = RemovedOnSignal::new(dir.path());
    let repo = dir.path().join("lake.git");
    let Run {
        excluded,
        new,
        merged,
        packed,
        warnings,
    } = read_history(&repo, job, &survey)?;
    let mut summary = PackSummary {
        warnings,
        packed_before: packed.len(),
        new_versions: new.len(),
        merged: merged.len(),
        packs_now: kept.len(),
        dry_run: job.dry_run,
        claims_added: survey.claims_added,
        ..Default::default()
    };
    if new.is_empty() || job.dry_run {
        return Ok(summary);
    }
    let versions = packed_versions(lake, new, tags)
        .await
        .map_err(|e| read_err(e.to_string()))?;
    let (pack_name, pack_path) =
        pack_objects(&repo, dir.path(), &excluded).map_err(|why| PackError::Git {
            lake: name.clone(),
            step: "pack-objects",
            why: why.into(),
        })?;
    let record = Record {
        lake: lake.config().id.clone(),
        pack: pack_name.clone(),
        recorded: versions.len(),
        versions,
    };
    let write_err = |path: String, e: WriteError| PackError::Write {
        lake: name.clone(),
        path,
        why: e.to_string(),
    };
    lake.write_pack(&pack_name, &pack_path, render_record(&record).into())
        .await
        .map_err(|e| write_err(format!("{pack_name}.pack"), e))?;
    write_claims(lake, &record).await?;
    let token = list.as_ref().map(|l| l.token.clone());
    let now = publish(lake, token, &pack_name, &merged)
        .await
        .map_err(|e| write_err("list.json".into(), e))?;
    summary.pack = Some(pack_name);
    summary.packs_now = now;
    Ok(summary)
}

/// The history the run reads, cloned at `repo` (above the packs kept where the survey planned
/// it), and what it packs.
fn read_history(repo: &Path, job: &PackJob, survey: &Survey) -> Result<Run, PackError> {
    let name = job.lake.name();
    let records = &survey.packed.records;
    let cloned = match &survey.ahead {
        // A ref the plan names may be deleted before the clone reads it: Git then refuses
        // the refspec, and the whole history is cloned instead.
        Some(a) => clone_above(repo, job, a, records).or_else(|_| {
            let _ = std::fs::remove_dir_all(repo);
            clone(repo, job, &[]).map(|()| None)
        }),
        None => clone(repo, job, &[]).map(|()| None),
    };
    let ahead = cloned.map_err(|why| PackError::Clone {
        lake: name.clone(),
        why,
    })?;
    crate::testhook::stop_at(crate::testhook::Point::PackCloned);
    let git_err = |step: &'static str| {
        let lake = name.clone();
        move |why: GitStepError| PackError::Git { lake, step, why }
    };
    let present = match ahead {
        Some(_) => all_commits(repo).map_err(|e| git_err("rev-list")(e.into()))?,
        None => {
            let claimed: Vec<ObjectId> = records
                .iter()
                .flat_map(|(_, r)| r.iter().map(|v| v.1))
                .collect();
            present_commits(repo, &claimed).map_err(|e| git_err("cat-file")(e.into()))?
        }
    };
    let scope = match ahead {
        Some(ahead) => Scope::Above(ahead),
        None => Scope::Whole {
            kept: &survey.packed.kept,
            merge_all: survey.merge_all,
        },
    };
    run(repo, &name, records, &present, scope).map_err(git_err("log"))
}

/// Writes the claims of `record`'s pack cut in pieces ([`super::claims`]), for readers that
/// need a few versions' commits.
async fn write_claims(lake: &Lake, record: &Record) -> Result<(), PackError> {
    let claimed: Vec<_> = (record.versions.iter())
        .map(|v| (v.id.clone(), v.commit))
        .collect();
    write_claims_of(lake, &record.pack, &claimed).await
}

async fn write_claims_of(
    lake: &Lake,
    pack: &str,
    claimed: &[(VersionId, ObjectId)],
) -> Result<(), PackError> {
    let Some((index, blocks)) = super::claims::render(claimed) else {
        return Ok(());
    };
    let blocks = blocks.into_iter().map(Into::into).collect();
    let written = lake.write_claims(pack, index.into(), blocks).await;
    written.map_err(|e| PackError::Write {
        lake: lake.name(),
        path: format!("{pack}.claims/"),
        why: e.to_string(),
    })
}

/// Writes, from their records, the claims of listed packs made before claims were, so that a
/// shallow clone of a lake packed long ago reads them too (a base pack is never rewritten).
/// Returns how many.
async fn add_missing_claims(
    lake: &Lake,
    records: &[(String, Vec<(VersionId, ObjectId)>)],
    dry_run: bool,
) -> Result<usize, PackError> {
    // Every listed pack's index asked for at once: a round trip, not one a pack.
    let asked = records
        .iter()
        .filter(|_| !dry_run)
        .map(|(pack, claimed)| async move { (pack, claimed, lake.claims_index(pack).await) });
    let mut added = 0;
    for (pack, claimed, index) in futures::future::join_all(asked).await {
        let index = index.map_err(|e| PackError::Read {
            lake: lake.name(),
            why: e.to_string(),
        })?;
        if index.is_none() {
            write_claims_of(lake, pack, claimed).await?;
            added += 1;
        }
    }
    Ok(added)
}

/// Signatures read at once at most.
const SIGNATURES_IN_FLIGHT: usize = 32;

/// The record's entries of versions `new` (parents first), with the ETags the listing gave
/// (a version written since, which the clone reached, has its own folder listed), and the
/// signature of each version the listing showed one for (read after the listing: one
/// replaced since has another ETag than the one recorded, and readers then read it).
async fn packed_versions(
    lake: &Lake,
    new: Vec<(ObjectId, VersionId)>,
    tags: &std::collections::HashMap<VersionId, VersionFileEtags>,
) -> Result<Vec<PackedVersion>, crate::store::StoreError> {
    use futures::StreamExt;
    let entry = |(commit, id): (ObjectId, VersionId)| async move {
        let files = match tags.get(&id) {
            Some(files) => files.clone(),
            None => lake.one_version_file_tags(&id).await?,
        };
        let signature = match files.signature {
            Some(etag) => lake.signature(&id).await?.and_then(|bytes| {
                let text = String::from_utf8(bytes.to_vec()).ok()?;
                Some(PackedSignature { etag, text })
            }),
            None => None,
        };
        Ok(PackedVersion {
            id,
            commit,
            version_json: files.version_json.unwrap_or_default(),
            dataset_json: files.dataset_json,
            signature,
        })
    };
    futures::stream::iter(new)
        .map(entry)
        .buffered(SIGNATURES_IN_FLIGHT)
        .collect::<Vec<_>>()
        .await
        .into_iter()
        .collect()
}

/// What the packs `list.json` names already hold.
struct Packed {
    /// Packs with a readable record (one without is of no use to readers: packed again).
    kept: Vec<String>,
    /// Each readable record: its pack, and its versions with their commits.
    records: Vec<(String, Vec<(VersionId, ObjectId)>)>,
}

/// The packs `list` names with a readable record, the records read side by side; and whether
/// every version they hold is listed in `listed` with the ETags it was packed with.
async fn read_packed(
    lake: &Lake,
    list: Option<&[u8]>,
    listed: &std::collections::HashMap<VersionId, VersionFileEtags>,
) -> Result<(Packed, bool), PackError> {
    let name = lake.name();
    let names = match list {
        Some(l) => parse_list(l).map_err(|source| PackError::Format {
            lake: name.clone(),
            source,
        })?,
        None => Vec::new(),
    };
    let mut packed = Packed {
        kept: Vec::new(),
        records: Vec::new(),
    };
    let read = names.iter().map(|pack| lake.pack_record(pack));
    let read = futures::future::join_all(read).await;
    let mut unchanged = true;
    for (pack, raw) in names.iter().zip(read) {
        let raw = raw.map_err(|e| PackError::Read {
            lake: name.clone(),
            why: e.to_string(),
        })?;
        let Some(record) = raw.and_then(|raw| parse_record(pack, &raw).ok()) else {
            continue;
        };
        unchanged &= ahead::unchanged_since_packed(&record, listed);
        let versions = record.versions.iter().map(|v| (v.id.clone(), v.commit));
        packed.records.push((pack.clone(), versions.collect()));
        packed.kept.push(pack.clone());
    }
    Ok((packed, unchanged))
}

/// Writes `list.json` with `pack` added (and the `merged` packs gone) on condition, reading it
/// again after another run won the race. Returns how many packs it names.
async fn publish(
    lake: &Lake,
    mut token: Option<crate::store::Token>,
    pack: &str,
    merged: &HashSet<String>,
) -> Result<usize, WriteError> {
    let mut attempt = 0;
    let mut backoff = crate::backoff::Backoff::new(
        std::time::Duration::from_millis(50),
        std::time::Duration::from_secs(2),
    );
    loop {
        let names = match &token {
            None => Vec::new(),
            Some(_) => match lake.pack_list().await.map_err(WriteError::Refused)? {
                Some(l) if Some(&l.token) == token.as_ref() => {
                    parse_list(&l.bytes).unwrap_or_default()
                }
                Some(l) => {
                    token = Some(l.token);
                    continue;
                }
                None => {
                    token = None;
                    continue;
                }
            },
        };
        let mut next: Vec<String> = names.into_iter().filter(|n| !merged.contains(n)).collect();
        if !next.iter().any(|n| n == pack) {
            next.push(pack.to_string());
        }
        let mode = match &token {
            Some(t) => WriteMode::Update(t.clone()),
            None => WriteMode::Create,
        };
        match lake.write_pack_list(render_list(&next).into(), &mode).await {
            Ok(_) => return Ok(next.len()),
            Err(WriteError::Conflict) if attempt < 8 => {
                attempt += 1;
                backoff.wait().await;
                token = lake
                    .pack_list()
                    .await
                    .map_err(WriteError::Refused)?
                    .map(|l| l.token);
            }
            Err(e) => return Err(e),
        }
    }
}

/// A bare clone of the lake at `repo`, through Git and this very helper, with the remote's
/// configuration. The remote is given in the environment (`GIT_CONFIG_COUNT`, after any the
/// caller set), never in a file: its options may hold secrets, and the environment does not
/// show in `ps` as `git -c` would.
fn clone(repo: &Path, job: &PackJob, extra: &[String]) -> Result<(), GitError> {
    if !repo.exists() {
        Git::elsewhere(["init", "--bare", "-q"]).arg(repo).run()?;
    }
    let mut config = vec![
        ("remote.origin.url".to_string(), job.address.clone()),
        (
            "remote.origin.fetch".into(),
            "+refs/heads/*:refs/heads/*".into(),
        ),
        (
            "remote.origin.fetch".into(),
            "+refs/tags/*:refs/tags/*".into(),
        ),
    ];
    config.extend(
        job.remote_config
            .iter()
            .map(|(key, value)| (format!("remote.origin.{key}"), value.clone())),
    );
    // `-q` keeps the ref lines out; `--progress` still shows how the reading goes.
    let progress = if job.progress.is_some() {
        "--progress"
    } else {
        "--no-progress"
    };
    let mut fetch = Git::in_repo(repo, ["fetch", "-q", progress, "--no-tags"]);
    // Options before the remote, refspecs after it.
    let (options, refspecs): (Vec<&String>, Vec<&String>) =
        extra.iter().partition(|a| a.starts_with("--"));
    for a in options {
        fetch = fetch.arg(a);
    }
    fetch = fetch.arg("origin");
    for a in refspecs {
        fetch = fetch.arg(a);
    }
    fetch = fetch.with_this_helper();
    let given = std::env::var("GIT_CONFIG_COUNT")
        .ok()
        .and_then(|n| n.trim().parse::<usize>().ok())
        .unwrap_or(0);
    for (i, (key, value)) in config.iter().enumerate() {
        fetch = fetch
            .env(format!("GIT_CONFIG_KEY_{}", given + i), key)
            .env(format!("GIT_CONFIG_VALUE_{}", given + i), value);
    }
    fetch = fetch.env("GIT_CONFIG_COUNT", (given + config.len()).to_string());
    match job.progress {
        Some(relay) => fetch.run_relaying(relay).map(drop),
        None => fetch.run().map(drop),
    }
}

/// A clone at `repo` of the refs `ahead` names, as deep as it says: `Some` of it when the
/// clone's shallow boundary lies in the packs kept (their versions' commits, as `records`
/// claim them), else the whole history fetched (`--unshallow`, a version written since the
/// listing having made it deeper) and `None`.
fn clone_above<'a>(
    repo: &Path,
    job: &PackJob,
    ahead: &'a ahead::Ahead,
    records: &[Claimed],
) -> Result<Option<&'a ahead::Ahead>, GitError> {
    let mut extra = vec![format!("--depth={}", ahead.depth)];
    extra.extend(ahead.refs.iter().map(|r| format!("+{r}:{r}")));
    clone(repo, job, &extra)?;
    let shallow = std::fs::read_to_string(repo.join("shallow")).unwrap_or_default();
    let kept: HashSet<ObjectId> = records
        .iter()
        .filter(|(p, _)| !ahead.merged.contains(p))
        .flat_map(|(_, r)| r.iter().map(|v| v.1))
        .collect();
    let boundary = shallow.lines().filter_map(ObjectId::from_hex);
    match boundary.into_iter().all(|c| kept.contains(&c)) {
        true => Ok(Some(ahead)),
        false => clone(repo, job, &["--unshallow".to_string()]).map(|()| None),
    }
}

/// The packer's temporary folder, registered for removal on a signal while it lives.
struct RemovedOnSignal(PathBuf);

impl RemovedOnSignal {
    fn new(dir: &Path) -> RemovedOnSignal {
        crate::cleanup::remove_on_signal(dir);
        RemovedOnSignal(dir.to_path_buf())
    }
}

impl Drop for RemovedOnSignal {
    fn drop(&mut self) {
        crate::cleanup::forget(&self.0);
    }
}

/// Git's pack of every object the refs reach that `excluded` do not: its name and path.
fn pack_objects(
    repo: &Path,
    dir: &Path,
    excluded: &[ObjectId],
) -> Result<(String, PathBuf), GitError> {
    let base = dir.join("out");
    let args = [
        "pack-objects",
        "--revs",
        "--all",
        "-q",
        "--delta-base-offset",
    ];
    let hex = Git::in_repo(repo, args)
        .arg(&base)
        .stdin(exclusions(excluded))
        .run()?;
    let name = format!("pack-{}", hex.trim());
    let path = PathBuf::from(format!("{}-{}.pack", base.display(), hex.trim()));
    Ok((name, path))
}
