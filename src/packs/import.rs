//! A reader's use of a lake's packs: the packs `list.json` names downloaded side by side into
//! the repository (indexed by Git's own `index-pack`, which hashes every object), beside their
//! records and a listing of `versions/`; then each recorded version checked (`verify.rs`),
//! parents first. What passes is handed back as known commits; what fails is read version by
//! version as if there were no pack, and said once.

use std::collections::HashMap;

use futures::StreamExt;

use super::verify::{verify, Against};
use super::{parse_list, parse_record, Record};
use crate::lake::git_packs::ListedFiles;
use crate::lake::{Lake, VersionId};
use crate::mapping::ObjectId;
use crate::progress::Progress;
use crate::repo::Repo;

/// Packs downloaded at once.
const DOWNLOADS: usize = 8;

/// What the packs gave: versions with their verified commits and parents, and warnings.
#[derive(Default)]
pub struct Imported {
    pub verified: Vec<Taken>,
    pub warnings: Vec<String>,
}

/// A version taken from a pack: its commit checked, and its parents.
pub struct Taken {
    pub version: VersionId,
    pub commit: ObjectId,
    pub parents: Vec<VersionId>,
}

/// How far packs are believed: `Listed` checks each version against the store's listing (made
/// already, or made here); `Trusted` (a store that cannot list, with `fdlTrustPacks`) only
/// recomputes commits.
pub enum Trust {
    Listed(Option<HashMap<VersionId, ListedFiles>>),
    Trusted,
}

/// Uses the packs `list` (the bytes of `git-packs/list.json`) names. `newest`: the newest
/// version a ref names (where the listing's ranges end); `known`: commits already known.
pub async fn import(
    lake: &Lake,
    repo: &Repo,
    list: &[u8],
    trust: Trust,
    newest: Option<&VersionId>,
    known: &dyn Fn(&VersionId) -> Option<ObjectId>,
    progress: &dyn Progress,
) -> Imported {
    let name = lake.name();
    let mut out = Imported::default();
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
            Trust::Listed(Some(made)) => Some(Ok(made)),
            Trust::Listed(None) => Some(lake.version_file_tags(newest).await),
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
    // A handle opened now sees the packs just installed (the helper's own never rescans).
    let fresh = Repo::open(repo.git_dir());
    let repo = fresh.as_ref().unwrap_or(repo);
    let mut verified: HashMap<VersionId, ObjectId> = HashMap::new();
    let total = fetched
        .iter()
        .flatten()
        .map(|r| r.versions.len() as u64)
        .sum();
    let mut checked = Checked {
        progress,
        done: 0,
        total,
    };
    for (pack, record) in names.iter().zip(fetched) {
        let why = match record {
            Err(why) => why,
            Ok(r) if r.lake.is_some() && r.lake != lake.config().id => {
                "it was made from another lake".to_string()
            }
            Ok(record) => {
                let (taken, failed) =
                    check_pack(&record, repo, &against, &mut verified, &mut checked);
                out.verified.extend(taken);
                match failed {
                    Some(why) => why,
                    None => continue,
                }
            }
        };
        out.warnings.push(format!(
            "lake '{name}': git-packs/{pack}: {why}; its versions are read one by one"
        ));
    }
    if total > 0 {
        progress.finish("Checking packed versions", checked.done, Some(total));
    }
    out
}

/// Progress over every packed version.
struct Checked<'a> {
    progress: &'a dyn Progress,
    done: u64,
    total: u64,
}

/// Checks a record's versions in order: those that hold, and what failed (said once).
fn check_pack(
    record: &Record,
    repo: &Repo,
    against: &Against,
    verified: &mut HashMap<VersionId, ObjectId>,
    checked: &mut Checked,
) -> (Vec<Taken>, Option<String>) {
    let mut taken = Vec::with_capacity(record.versions.len());
    let mut failed: Option<(VersionId, String)> = None;
    let mut failures = 0;
    for packed in &record.versions {
        match verify(packed, repo, against, verified) {
            Ok(parents) => {
                verified.insert(packed.id.clone(), packed.commit);
                taken.push(Taken {
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
        checked.done += 1;
        (checked.progress).update(
            "Checking packed versions",
            checked.done,
            Some(checked.total),
        );
    }
    let why = failed.map(|(version, why)| {
        format!(
            "{failures} of its {} versions cannot be taken from it (version {version}: {why})",
            record.versions.len()
        )
    });
    (taken, why)
}

/// A pack's record, and the pack itself installed in the repository (unless already there).
async fn fetch_pack(lake: &Lake, repo: &Repo, pack: &str) -> Result<Record, String> {
    let record = async {
        let raw = lake.pack_record(pack).await.map_err(|e| e.to_string())?;
        let raw = raw.ok_or("it has no record")?;
        parse_record(pack, &raw).map_err(|e| e.to_string())
    };
    let installed = async {
        if repo.has_pack(pack) {
            return Ok(());
        }
        let tmp = repo.downloaded_pack_path().map_err(|e| e.to_string())?;
        let mut file = std::fs::File::create(&tmp).map_err(|e| e.to_string())?;
        let mut sink = |chunk: &[u8]| std::io::Write::write_all(&mut file, chunk);
        let found = lake.download_pack(pack, &mut sink).await;
        drop(file);
        match found {
            Ok(true) => {}
            Ok(false) => {
                let _ = std::fs::remove_file(&tmp);
                return Err("the pack is missing".to_string());
            }
            Err(e) => {
                let _ = std::fs::remove_file(&tmp);
                return Err(e.to_string());
            }
        }
        let got = tokio::task::block_in_place(|| repo.install_downloaded(&tmp))?;
        match got == pack {
            true => Ok(()),
            false => Err(format!("the pack's checksum names {got}, not {pack}")),
        }
    };
    let (record, installed) = futures::join!(record, installed);
    installed?;
    record
}
