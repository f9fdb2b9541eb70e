//! A reader's use of a lake's packs: the packs `list.json` names downloaded side by side into
//! the repository (indexed by Git's own `index-pack`, which hashes every object), beside their
//! records and a listing of `versions/`; then each recorded version checked (`verify.rs`),
//! parents first. What passes is handed back as known commits; what fails is read version by
//! version as if there were no pack, and said once.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};

use futures::future::BoxFuture;
use futures::StreamExt;

use super::verify::{verify, Against, Parents, Unverified};
use super::{parse_list, parse_record, PackedVersion, Record};
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
}

/// A version taken from a pack: its commit checked, and its parents.
pub(crate) struct Taken {
    pub version: VersionId,
    pub commit: ObjectId,
    pub parents: Vec<VersionId>,
}

/// How far packs are believed: `Listed` checks each version against the store's listing (one
/// under way, awaited while the packs download; if it gives none, one made here); `Trusted` (a
/// store that cannot list, with `fdlTrustPacks`) only recomputes commits.
pub(crate) enum Trust<'a> {
    Listed(BoxFuture<'a, Option<HashMap<VersionId, VersionFileEtags>>>),
    Trusted,
}

/// Uses the packs `list` (the bytes of `git-packs/list.json`) names. `newest`: the newest
/// version a ref names (where the listing's ranges end); `known`: commits already known.
pub(crate) async fn import(
    lake: &Lake,
    repo: &Repo,
    list: &[u8],
    trust: Trust<'_>,
    newest: Option<&VersionId>,
    known: &(dyn Fn(&VersionId) -> Option<ObjectId> + Sync),
    progress: &dyn Progress,
) -> Imported {
    let name = lake.name();
    let mut out = Imported::default();
    // `parse_list` gives each name once: a pack named twice is fetched and checked once.
    let names = match parse_list(list) {
        Ok(names) if names.is_empty() => return out,
        Ok(names) => names,
        Err(e) => {
            out.warnings
                .push(format!("lake '{name}': {e}: its packs are not used"));
            return out;
        }
    };
    let listing = async {
        match trust {
            Trust::Listed(under_way) => Some(match under_way.await {
                Some(made) => Ok(made),
                None => lake.version_file_tags(newest).await,
            }),
            Trust::Trusted => None,
        }
    };
    let fetched = futures::stream::iter(&names)
        .map(|n| fetch_pack(lake, repo, n))
        .buffered(DOWNLOADS)
        .collect::<Vec<_>>();
    let (listing, fetched) = futures::join!(listing, fetched);
    let listing = match listing.transpose() {
        Ok(l) => l,
        Err(e) => {
            out.warnings
                .push(format!("{e}: the lake's packs are not used"));
            return out;
        }
    };
    let against = Against {
        listed: listing.as_ref(),
        known,
    };
    let of_this_lake = |r: Record| match r.lake.is_some() && r.lake != lake.config().id {
        true => Err(Unusable::OtherLake),
        false => Ok(r),
    };
    let mut installed_now = Vec::with_capacity(names.len());
    let records: Vec<(&String, Result<Record, Unusable>)> = names
        .iter()
        .zip(fetched)
        .map(|(n, f)| {
            installed_now.push(f.installed);
            (n, f.record.and_then(of_this_lake))
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
        rows.map(|(((n, r), c), i)| (*n, r, c, i)),
        &claimed,
        &mut out,
    );
    out
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
        let why = match record {
            Err(why) => Some(why.to_string()),
            Ok(record) => take(record, results, claimed, &mut taken, &mut out.verified),
        };
        match (out.verified.len() > before, installed) {
            (true, _) => _ = used.insert(pack.as_str()),
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
    // objects/pack (another lake's, misnamed, unrecorded, every version failed), unless a pack
    // taken from has its name (a misnamed copy of it).
    for pack in unused.iter().filter(|p| !used.contains(p.as_str())) {
        super::download::remove(repo, pack);
    }
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

/// A pack's record, and the name of the pack this import installed for it (if it did: one
/// already in the repository is left to it, whatever happens).
struct Fetched {
    record: Result<Record, Unusable>,
    installed: Option<String>,
}

/// Each recorded version checked on its own (`verify`), its parents' commits taken from the
/// records (or known): side by side on every core, each thread with a repository handle of its
/// own, opened now, so that it sees the packs just installed. Results by record, in order.
fn check_all(
    git_dir: &std::path::Path,
    records: &[(&String, Result<Record, Unusable>)],
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
                    let repo =
                        Repo::open(git_dir).map_err(|e| Unverified::Repository(e.to_string()));
                    let mut out = Vec::new();
                    for i in (k..all.len()).step_by(threads) {
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

/// A pack's record, and the pack itself installed in the repository (unless already there).
async fn fetch_pack(lake: &Lake, repo: &Repo, pack: &str) -> Fetched {
    let record = async {
        let raw = lake.pack_record(pack).await?;
        let raw = raw.ok_or(Unusable::NoRecord)?;
        Ok::<_, Unusable>(parse_record(pack, &raw)?)
    };
    let installed = async {
        if super::download::has(repo, pack) {
            return (Ok(()), None);
        }
        let got = download_and_install(lake, repo, pack).await;
        match got {
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
    };
    let (record, (installed, name)) = futures::join!(record, installed);
    Fetched {
        record: installed.and(record),
        installed: name,
    }
}

/// Downloads pack `pack` and installs it under the name its checksum gives (returned).
async fn download_and_install(lake: &Lake, repo: &Repo, pack: &str) -> Result<String, Unusable> {
    let tmp = super::download::download_path(repo)?;
    let mut file = std::fs::File::create(&tmp).map_err(|e| crate::repo::write_error(&tmp, e))?;
    let mut sink = |chunk: &[u8]| std::io::Write::write_all(&mut file, chunk);
    let found = lake.download_pack(pack, &mut sink).await;
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
