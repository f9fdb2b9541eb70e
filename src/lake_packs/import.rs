//! A reader's use of a lake's packs: the packs `list.json` names downloaded side by side into
//! the repository (indexed by Git's own `index-pack`, which hashes every object), beside their
//! records and a listing of `versions/`; then each recorded version checked (`verify.rs`),
//! parents first. What passes is handed back as known commits; what fails is read version by
//! version as if there were no pack, and said once.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};

use futures::future::BoxFuture;
use futures::StreamExt;

use super::verify::{verify, Against, Parents, Signing, Unverified};
use super::{parse_record, PackedVersion, Record};
use crate::lake::git_packs::VersionFileEtags;
use crate::lake::{Lake, VersionId};
use crate::mapping::ObjectId;
use crate::progress::Progress;
use crate::repo::Repo;

/// Packs downloaded at once.
const DOWNLOADS: usize = 8;

/// What the packs gave: versions with their verified commits and parents, and warnings.
#[derive(Default)]
pub(crate) struct Imported {
    pub verified: Vec<Taken>,
    pub warnings: Vec<String>,
    /// The packs this import installed that versions were taken from.
    pub installed: Vec<String>,
}

/// A version taken from a pack: its commit checked, and its parents.
pub(crate) struct Taken {
    pub version: VersionId,
    pub commit: ObjectId,
    pub parents: Vec<VersionId>,
}

/// How far packs are believed: `Listed` checks each version against the store's listing (one
/// under way, awaited while the packs download; if it gives none, one made here); `Trusted`
/// (plain HTTP or a local folder, with `fdlTrustPacks`) only recomputes commits.
pub(crate) enum Trust<'a> {
    Listed(BoxFuture<'a, Option<HashMap<VersionId, VersionFileEtags>>>),
    Trusted,
}

/// A pack's name and its record as read, or why the record cannot be used.
pub(crate) type ReadRecord = (String, Result<Record, Unusable>);

/// Records read at once at most.
const RECORDS_IN_FLIGHT: usize = 32;

/// The records of packs `names`, read side by side, in order.
pub(crate) async fn read_records(lake: &Lake, names: Vec<String>) -> Vec<ReadRecord> {
    futures::stream::iter(names)
        .map(|name| async move {
            let record = read_record(lake, &name).await;
            (name, record)
        })
        .buffered(RECORDS_IN_FLIGHT)
        .collect()
        .await
}

async fn read_record(lake: &Lake, pack: &str) -> Result<Record, Unusable> {
    let raw = lake.pack_record(pack).await?;
    let raw = raw.ok_or(Unusable::NoRecord)?;
    Ok(parse_record(pack, &raw)?)
}

/// What a packed version is held to beside the listing: the commits already known (of its
/// parents), and, where the reader requires them, signatures.
pub(crate) struct Checks<'a> {
    pub known: &'a (dyn Fn(&VersionId) -> Option<ObjectId> + Sync),
    pub signatures: Option<Signing<'a>>,
}

/// Uses the packs whose `records` are given (read by [`read_records`]) for the versions they
/// hold that `checks.known` (commits already known) lacks. `newest`: the newest version a ref names
/// (where the listing's ranges end).
pub(crate) async fn import(
    lake: &Lake,
    repo: &Repo,
    records: Vec<ReadRecord>,
    trust: Trust<'_>,
    newest: Option<&VersionId>,
    checks: &Checks<'_>,
    progress: &dyn Progress,
) -> Imported {
    let mut out = Imported::default();
    let records = to_check(lake, records, checks.known);
    // The listing starts at the oldest version to check (IDs sort by time).
    let oldest = records
        .iter()
        .filter_map(|(_, r)| r.as_ref().ok())
        .flat_map(|r| r.versions.iter().map(|v| &v.id))
        .min()
        .cloned();
    let Some(oldest) = oldest else {
        settle_unread(lake, &records, &mut out);
        return out;
    };
    let (listing, fetched) = fetch_all(lake, repo, &records, trust, &oldest, newest).await;
    let listing = match listing.transpose() {
        Ok(l) => l,
        Err(e) => {
            out.warnings
                .push(format!("{e}: the lake's packs are not used"));
            for name in fetched.into_iter().filter_map(|(_, i)| i) {
                super::download::remove(repo, &name);
            }
            return out;
        }
    };
    let against = Against {
        listed: listing.as_ref(),
        known: checks.known,
        signatures: checks.signatures,
    };
    let mut installed_now = Vec::with_capacity(records.len());
    let records: Vec<ReadRecord> = records
        .into_iter()
        .zip(fetched)
        .map(|((n, r), (got, installed))| {
            installed_now.push(installed);
            (n, got.and(r))
        })
        .collect();
    // The commits the records claim: each version is checked with its parents' claimed
    // commits, and taken only once its parents were taken before it.
    let claimed: HashMap<VersionId, ObjectId> = records
        .iter()
        .filter_map(|(_, r)| r.as_ref().ok())
        .flat_map(|r| r.versions.iter().map(|v| (v.id.clone(), v.commit)))
        .collect();
    let checked = tokio::task::block_in_place(|| {
        check_all(repo.git_dir(), &records, &against, &claimed, progress)
    });
    let rows = records.iter().zip(checked).zip(installed_now);
    settle(
        lake,
        repo,
        rows.map(|(((n, r), c), i)| (n, r, c, i)),
        &claimed,
        &mut out,
    );
    out
}

/// The packs that hold a version to check downloaded and installed side by side (with what
/// each install gave), while the listing the check holds to is waited for or made, from
/// version `oldest` on.
async fn fetch_all(
    lake: &Lake,
    repo: &Repo,
    records: &[ReadRecord],
    trust: Trust<'_>,
    oldest: &VersionId,
    newest: Option<&VersionId>,
) -> (Listing, Vec<(Result<(), Unusable>, Option<String>)>) {
    let listing = async {
        match trust {
            Trust::Listed(under_way) => Some(match under_way.await {
                Some(made) => Ok(made),
                None => lake.version_file_tags(Some(oldest), newest).await,
            }),
            Trust::Trusted => None,
        }
    };
    // Only a pack that holds a version to check is downloaded.
    let fetched = futures::stream::iter(records)
        .map(|(n, r)| async move {
            match r {
                Ok(r) if !r.versions.is_empty() => {
                    let limit = super::verify::pack_size_bound(r.recorded);
                    fetch_pack(lake, repo, n, limit).await
                }
                _ => (Ok(()), None),
            }
        })
        .buffered(DOWNLOADS)
        .collect::<Vec<_>>();
    futures::join!(listing, fetched)
}

/// The listing a check holds to: none where the packs are trusted.
type Listing = Option<Result<HashMap<VersionId, VersionFileEtags>, crate::lake::LakeError>>;

/// The records with only the versions to check: a record of another lake cannot be used, and
/// a version already known is not checked again (the walk meets it as without packs).
fn to_check(
    lake: &Lake,
    records: Vec<ReadRecord>,
    known: &(dyn Fn(&VersionId) -> Option<ObjectId> + Sync),
) -> Vec<ReadRecord> {
    let of_this_lake = |r: Record| match r.lake.is_some() && r.lake != lake.config().id {
        true => Err(Unusable::OtherLake),
        false => Ok(r),
    };
    let unknown = |mut r: Record| {
        r.versions.retain(|v| known(&v.id).is_none());
        r
    };
    records
        .into_iter()
        .map(|(n, r)| (n, r.and_then(of_this_lake).map(unknown)))
        .collect()
}

/// Says why each pack whose record cannot be used gives nothing (where no pack was fetched).
fn settle_unread(lake: &Lake, records: &[ReadRecord], out: &mut Imported) {
    for (pack, record) in records {
        if let Err(why) = record {
            out.warnings.push(format!(
                "lake '{}': git-packs/{pack}: {why}; its versions are read one by one",
                lake.name()
            ));
        }
    }
}

/// Takes each pack's checked versions into `out`, parents first, and says why a pack gave
/// nothing.
fn settle<'r>(
    lake: &Lake,
    repo: &Repo,
    rows: impl Iterator<
        Item = (
            &'r String,
            &'r Result<Record, Unusable>,
            Checked,
            Option<String>,
        ),
    >,
    claimed: &HashMap<VersionId, ObjectId>,
    out: &mut Imported,
) {
    let mut taken: HashSet<VersionId> = HashSet::new();
    let (mut unused, mut used) = (Vec::new(), HashSet::new());
    for (pack, record, results, installed) in rows {
        let before = out.verified.len();
        let why = match (record, signature_failed(record, &results)) {
            (Err(why), _) => Some(why.to_string()),
            // A signature is no part of a commit: a version whose signature fails would be
            // found in the pack's objects by the walk, and never checked. Nothing is taken.
            (Ok(record), Some((version, why))) => Some(format!(
                "version {version}: {why}; none of its {} versions is taken from it",
                record.versions.len()
            )),
            (Ok(record), None) => take(record, results, claimed, &mut taken, &mut out.verified),
        };
        match (out.verified.len() > before, installed) {
            (true, installed) => {
                used.insert(pack.as_str());
                out.installed.extend(installed);
            }
            (false, Some(installed)) => unused.push(installed),
            (false, None) => {}
        }
        if let Some(why) = why {
            out.warnings.push(format!(
                "lake '{}': git-packs/{pack}: {why}; its versions are read one by one",
                lake.name()
            ));
        }
    }
    // A pack this import installed that gave nothing goes again: it would only be garbage in
    // objects/pack (another lake's, misnamed, unrecorded, every version failed). Not where
    // another pack was taken from: its versions were checked against every pack installed, and
    // a later pack leaves out what an earlier one holds (`pack-objects ^<packed commits>`), so
    // a version taken may need a blob only the untaken pack has.
    if !used.is_empty() {
        return;
    }
    for pack in &unused {
        super::download::remove(repo, pack);
    }
}

/// The first version of `record` whose signature failed its check, and why.
fn signature_failed(
    record: &Result<Record, Unusable>,
    results: &Checked,
) -> Option<(VersionId, Unverified)> {
    let record = record.as_ref().ok()?;
    record
        .versions
        .iter()
        .zip(results)
        .find_map(|(v, r)| match r {
            Err(
                e @ (Unverified::NoSignature
                | Unverified::SignatureChanged
                | Unverified::Signature(_)),
            ) => Some((v.id.clone(), e.clone())),
            _ => None,
        })
}

/// Each version of one record checked: its parents, or why it failed.
type Checked = Vec<Result<Parents, Unverified>>;

/// Why a listed pack gives nothing (said in a warning, after the pack's name).
#[derive(Debug, thiserror::Error)]
pub(crate) enum Unusable {
    #[error("{0}")]
    Store(#[from] crate::store::StoreError),
    #[error("it has no record")]
    NoRecord,
    #[error(transparent)]
    Format(#[from] super::FormatError),
    #[error("it was made from another lake")]
    OtherLake,
    #[error("the pack is missing")]
    Missing,
    #[error("the pack's checksum names {got}, not {listed}")]
    Misnamed { got: String, listed: String },
    #[error(transparent)]
    Write(#[from] crate::repo::RepoError),
    #[error(transparent)]
    Install(#[from] super::download::InstallError),
    #[error("git index-pack did not finish: {0}")]
    Interrupted(#[from] tokio::task::JoinError),
}

/// How many versions a checking thread reads through one repository handle (about 1.5 KiB of
/// pack each). Small in debug builds, so that the tests' packs go through reopening.
const REOPEN_EVERY: usize = if cfg!(debug_assertions) { 16 } else { 8192 };

/// Each recorded version checked on its own (`verify`), its parents' commits taken from the
/// records (or known): side by side on every core, each thread with a repository handle of its
/// own, opened now, so that it sees the packs just installed. Results by record, in order.
fn check_all(
    git_dir: &std::path::Path,
    records: &[ReadRecord],
    against: &Against,
    claimed: &HashMap<VersionId, ObjectId>,
    progress: &dyn Progress,
) -> Vec<Checked> {
    let all: Vec<&PackedVersion> = records
        .iter()
        .filter_map(|(_, r)| r.as_ref().ok())
        .flat_map(|r| r.versions.iter())
        .collect();
    let total = all.len() as u64;
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(8);
    let done = AtomicU64::new(0);
    let mut results: Vec<Option<Result<Parents, Unverified>>> = vec![None; all.len()];
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|k| {
                let (all, done) = (&all, &done);
                scope.spawn(move || {
                    let open =
                        || Repo::open(git_dir).map_err(|e| Unverified::Repository(e.to_string()));
                    let mut repo = open();
                    let mut out = Vec::new();
                    for (n, i) in (k..all.len()).step_by(threads).enumerate() {
                        // The packs are mapped, and every page read stays resident while they
                        // are: a handle opened afresh now and then unmaps what was read, so
                        // the helper holds a window of a large pack, never all of it.
                        if n > 0 && n % REOPEN_EVERY == 0 {
                            drop(repo);
                            repo = open();
                        }
                        let checked = match &repo {
                            Ok(repo) => verify(all[i], repo, against, claimed),
                            Err(e) => Err(e.clone()),
                        };
                        out.push((i, checked));
                        let n = done.fetch_add(1, Ordering::Relaxed) + 1;
                        progress.update("Checking packed versions", n, Some(total));
                    }
                    out
                })
            })
            .collect();
        for w in workers {
            for (i, r) in w.join().unwrap_or_default() {
                results[i] = Some(r);
            }
        }
    });
    if total > 0 {
        progress.finish("Checking packed versions", total, Some(total));
    }
    let mut results = results.into_iter();
    records
        .iter()
        .map(|(_, r)| {
            let n = r.as_ref().map_or(0, |r| r.versions.len());
            (&mut results)
                .take(n)
                .map(|r| r.unwrap_or(Err(Unverified::NotChecked)))
                .collect()
        })
        .collect()
}

/// Takes a record's versions whose check held and whose parents are taken before them (or
/// known); what failed is said once.
fn take(
    record: &Record,
    results: Vec<Result<Parents, Unverified>>,
    claimed: &HashMap<VersionId, ObjectId>,
    taken: &mut HashSet<VersionId>,
    out: &mut Vec<Taken>,
) -> Option<String> {
    let mut failed: Option<(VersionId, Unverified)> = None;
    let mut failures = 0;
    for (packed, checked) in record.versions.iter().zip(results) {
        let checked = checked.and_then(|parents| {
            // A parent no record claims was known: its known commit was used.
            let untaken = parents
                .iter()
                .find(|p| claimed.contains_key(*p) && !taken.contains(*p));
            match untaken {
                Some(p) => Err(Unverified::ParentFailed(p.clone())),
                None => Ok(parents),
            }
        });
        match checked {
            Ok(parents) => {
                taken.insert(packed.id.clone());
                out.push(Taken {
                    version: packed.id.clone(),
                    commit: packed.commit,
                    parents,
                });
            }
            Err(why) => {
                failures += 1;
                failed.get_or_insert((packed.id.clone(), why));
            }
        }
    }
    failed.map(|(version, why)| {
        format!(
            "{failures} of its {} versions cannot be taken from it (version {version}: {why})",
            record.versions.len()
        )
    })
}

/// Pack `pack` installed in the repository (unless already there), and the name this import
/// installed it under, if it did.
async fn fetch_pack(
    lake: &Lake,
    repo: &Repo,
    pack: &str,
    limit: u64,
) -> (Result<(), Unusable>, Option<String>) {
    if super::download::has(repo, pack) {
        return (Ok(()), None);
    }
    match download_and_install(lake, repo, pack, limit).await {
        Ok(got) if got == pack => (Ok(()), Some(got)),
        Ok(got) => {
            let why = Unusable::Misnamed {
                got: got.clone(),
                listed: pack.to_string(),
            };
            (Err(why), Some(got))
        }
        Err(why) => (Err(why), None),
    }
}

/// Downloads pack `pack` (at most `limit` bytes) and installs it under the name its checksum
/// gives (returned).
async fn download_and_install(
    lake: &Lake,
    repo: &Repo,
    pack: &str,
    limit: u64,
) -> Result<String, Unusable> {
    let tmp = super::download::download_path(repo)?;
    let mut file = std::fs::File::create(&tmp).map_err(|e| crate::repo::write_error(&tmp, e))?;
    let mut sink = |chunk: &[u8]| std::io::Write::write_all(&mut file, chunk);
    let found = lake.download_pack(pack, limit, &mut sink).await;
    drop(file);
    match found {
        Ok(true) => {}
        Ok(false) => {
            let _ = std::fs::remove_file(&tmp);
            return Err(Unusable::Missing);
        }
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            return Err(e.into());
        }
    }
    // On a blocking thread of its own: indexing one pack must not stop the other downloads.
    let installer = super::download::installer(repo);
    Ok(tokio::task::spawn_blocking(move || installer.install(&tmp)).await??)
}
