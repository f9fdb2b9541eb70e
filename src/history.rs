//! Resolving history: from ref tips to the commit ID of every version they reach, reading as
//! few records as possible and never one round trip per version where the store can list.
//!
//! Versions already in the cache are known and not read. Unknown ones are read a generation at
//! a time, all of a generation concurrently; once that has taken more round trips than listing
//! `versions/` would cost, the rest of the lake is listed and read concurrently in one go.

use std::collections::{HashMap, HashSet};

use futures::StreamExt;
use tokio::sync::mpsc::UnboundedReceiver;

use crate::lake::{Lake, LakeError, VersionData, VersionId, CONCURRENCY};
use crate::mapping::{self, ObjectId, VersionObjects};
use crate::progress::Progress;

/// A version read and mapped: its parents and its Git objects.
pub struct Built {
    pub parents: Vec<VersionId>,
    pub objects: VersionObjects,
    /// The author's email and the version's time: what a signature is checked against.
    pub author_email: String,
    pub time: u64,
}

/// Results a reading task hands over at once.
const SEND_BATCH: usize = 64;

/// Tasks that read versions side by side.
const WORKERS: usize = 4;

impl Built {
    /// The exact bytes of the version's `version.json` (the tree's last blob).
    pub fn record(&self) -> &[u8] {
        &self
            .objects
            .blobs
            .last()
            .expect("every version has a version.json blob")
            .data
    }
}

/// The outcome of resolving: commit IDs for every version reached, and the objects of those
/// that had to be read (the others are known from the cache).
#[derive(Default)]
pub struct Resolved {
    pub commits: HashMap<VersionId, ObjectId>,
    pub built: HashMap<VersionId, Built>,
}

/// Reads what is missing and computes commit IDs for `tips` and everything they reach.
/// `known` holds commit IDs from the cache; `tips` name who points at each tip (for errors).
pub async fn resolve(
    lake: &Lake,
    tips: &[(VersionId, String)],
    known: &HashMap<VersionId, ObjectId>,
    progress: &dyn Progress,
) -> Result<Resolved, LakeError> {
    let walk = Walk {
        lake,
        stop: &|v: &VersionId| known.contains_key(v),
        walked: &HashMap::new(),
        known: known.len(),
        progress,
    };
    let read = walk.read(tips).await?;
    compute_commits(lake, tips, known, read.data, &read.named_by)
}

/// A walk down history from some tips, reading the versions it meets: a generation at a time
/// while that is cheap, then, where the store can list, every version at once.
pub struct Walk<'a> {
    pub lake: &'a Lake,
    /// Versions the walk neither reads nor goes past (known to the cache, or already in the
    /// repository).
    pub stop: &'a dyn Fn(&VersionId) -> bool,
    /// Parents of versions read before: walked through without being read again.
    pub walked: &'a HashMap<VersionId, Vec<VersionId>>,
    /// How many versions are known already; a walk may take more generations the more it knows.
    pub known: usize,
    pub progress: &'a dyn Progress,
}

/// What a walk read: each version's data (or why it could not be read), and who named it.
pub struct WalkRead {
    pub data: HashMap<VersionId, Result<VersionData, LakeError>>,
    pub named_by: HashMap<VersionId, String>,
}

impl Walk<'_> {
    /// Reads every version the tips reach that is neither stopped at nor walked before.
    pub async fn read(&self, tips: &[(VersionId, String)]) -> Result<WalkRead, LakeError> {
        let mut data: HashMap<VersionId, Result<VersionData, LakeError>> = HashMap::new();
        let mut named_by: HashMap<VersionId, String> = HashMap::new();
        let mut through: HashSet<VersionId> = HashSet::new();
        for (id, by) in tips {
            named_by.entry(id.clone()).or_insert_with(|| by.clone());
        }
        let mut frontier = self.to_read(tips.iter().map(|(v, _)| v.clone()), &mut through);
        // Walking one generation costs a round trip; listing costs about one per 1000 versions.
        let walk_limit = 2 + self.known / 1000;
        let mut rounds = 0;
        let mut read = 0u64;
        while !frontier.is_empty() {
            if rounds >= walk_limit && self.lake.store.can_list() {
                self.read_listed(&mut data, &mut read).await?;
                let frontier = self.next_frontier(&data, &mut named_by, &mut through);
                // Everything that exists has been read: what is still missing does not exist.
                if let Some(missing) = frontier.first() {
                    return Err(LakeError::MissingVersion {
                        lake: self.lake.name(),
                        version: missing.clone(),
                        by: named_by.get(missing).cloned().unwrap_or_default(),
                    });
                }
                self.progress.finish("Reading versions", read, None);
                self.read_reachable_datasets(tips, &mut data, &through)
                    .await?;
                return Ok(WalkRead { data, named_by });
            }
            let batch = std::mem::take(&mut frontier);
            read_batch(
                self.lake,
                batch,
                &mut data,
                &mut read,
                None,
                self.progress,
                false,
            )
            .await;
            rounds += 1;
            frontier = self.next_frontier(&data, &mut named_by, &mut through);
        }
        if read > 0 {
            self.progress.finish("Reading versions", read, None);
        }
        Ok(WalkRead { data, named_by })
    }

    /// Of `ids`, those to read: versions walked before are gone through (their parents taken
    /// instead, without a request), stopped ones dropped. `through` remembers what was gone
    /// through.
    fn to_read(
        &self,
        ids: impl IntoIterator<Item = VersionId>,
        through: &mut HashSet<VersionId>,
    ) -> Vec<VersionId> {
        let mut out = Vec::new();
        let mut seen = HashSet::new();
        let mut stack: Vec<VersionId> = ids.into_iter().collect();
        while let Some(v) = stack.pop() {
            if (self.stop)(&v) || !seen.insert(v.clone()) {
                continue;
            }
            match self.walked.get(&v) {
                Some(parents) => {
                    if through.insert(v) {
                        stack.extend(parents.iter().cloned());
                    }
                }
                None => out.push(v),
            }
        }
        out.sort();
        out
    }

    /// Parents of what has been read that are neither stopped at, walked, nor read yet.
    fn next_frontier(
        &self,
        data: &HashMap<VersionId, Result<VersionData, LakeError>>,
        named_by: &mut HashMap<VersionId, String>,
        through: &mut HashSet<VersionId>,
    ) -> Vec<VersionId> {
        let mut parents = Vec::new();
        for (id, d) in data {
            let Ok(d) = d else { continue };
            for p in &d.record.parents {
                if !data.contains_key(p) && !through.contains(p) && !(self.stop)(p) {
                    named_by
                        .entry(p.clone())
                        .or_insert_with(|| format!("version {id}"));
                    parents.push(p.clone());
                }
            }
        }
        self.to_read(parents, through)
            .into_iter()
            .filter(|v| !data.contains_key(v))
            .collect()
    }

    /// Lists `versions/` and reads every record not read, walked or stopped at.
    async fn read_listed(
        &self,
        data: &mut HashMap<VersionId, Result<VersionData, LakeError>>,
        read: &mut u64,
    ) -> Result<(), LakeError> {
        let all = self.lake.version_ids().await?;
        let rest: Vec<VersionId> = all
            .into_iter()
            .filter(|v| !(self.stop)(v) && !data.contains_key(v) && !self.walked.contains_key(v))
            .collect();
        let total = *read + rest.len() as u64;
        read_batch(
            self.lake,
            rest,
            data,
            read,
            Some(total),
            self.progress,
            true,
        )
        .await;
        Ok(())
    }

    /// After a listing read only records: reads `dataset.json` of the versions the tips reach.
    async fn read_reachable_datasets(
        &self,
        tips: &[(VersionId, String)],
        data: &mut HashMap<VersionId, Result<VersionData, LakeError>>,
        through: &HashSet<VersionId>,
    ) -> Result<(), LakeError> {
        let mut reachable: HashSet<VersionId> = HashSet::new();
        let mut stack: Vec<VersionId> = tips.iter().map(|(v, _)| v.clone()).collect();
        while let Some(v) = stack.pop() {
            if (self.stop)(&v) || !reachable.insert(v.clone()) {
                continue;
            }
            if let Some(Ok(d)) = data.get(&v) {
                stack.extend(d.record.parents.iter().cloned());
            } else if let Some(parents) = self.walked.get(&v).filter(|_| through.contains(&v)) {
                stack.extend(parents.iter().cloned());
            }
        }
        let missing: Vec<VersionId> = reachable
            .into_iter()
            .filter(|v| matches!(data.get(v), Some(Ok(d)) if !d.dataset_read))
            .collect();
        let mut reads = spread_reads(self.lake, missing, |lake, id| async move {
            lake.read_dataset(&id).await
        });
        while let Some(batch) = reads.recv().await {
            for (v, r) in batch {
                if let Some(Ok(d)) = data.get_mut(&v) {
                    d.dataset = r?;
                    d.dataset_read = true;
                }
            }
        }
        Ok(())
    }
}

/// Runs `read` for every ID with [`CONCURRENCY`] reads in flight, spread over a few tasks so
/// that parsing and hashing (and local reads, which are synchronous) use every core. Results
/// arrive in completion order.
fn spread_reads<T, F, Fut>(
    lake: &Lake,
    ids: Vec<VersionId>,
    read: F,
) -> UnboundedReceiver<Vec<(VersionId, T)>>
where
    T: Send + 'static,
    F: Fn(Lake, VersionId) -> Fut + Clone + Send + Sync + 'static,
    Fut: std::future::Future<Output = T> + Send,
{
    let workers = WORKERS.min(ids.len()).max(1);
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    for part in ids.chunks(ids.len().div_ceil(workers).max(1)) {
        let (lake, part, tx, read) = (lake.clone(), part.to_vec(), tx.clone(), read.clone());
        tokio::spawn(async move {
            let mut reads = futures::stream::iter(part)
                .map(|id| {
                    let (lake, read) = (lake.clone(), read.clone());
                    async move { (id.clone(), read(lake, id).await) }
                })
                .buffer_unordered(CONCURRENCY / workers);
            // Results go out in small batches: one wake-up of the receiver per result would
            // cost more than a local read.
            let mut batch = Vec::with_capacity(SEND_BATCH);
            while let Some(result) = reads.next().await {
                batch.push(result);
                if batch.len() == SEND_BATCH && tx.send(std::mem::take(&mut batch)).is_err() {
                    return;
                }
            }
            let _ = tx.send(batch);
        });
    }
    rx
}

/// Reads `ids` concurrently into `data`. In a walk, a missing record is an error (something
/// names it); in a listing it is an incomplete version, being written, and is skipped.
async fn read_batch(
    lake: &Lake,
    ids: Vec<VersionId>,
    data: &mut HashMap<VersionId, Result<VersionData, LakeError>>,
    read: &mut u64,
    total: Option<u64>,
    progress: &dyn Progress,
    from_listing: bool,
) {
    // A listing reads every version, reachable or not: the records first, and dataset.json
    // later, only for those the tips reach.
    let with_dataset = !from_listing;
    let mut results = spread_reads(lake, ids, move |lake, id| async move {
        lake.read_version_with(&id, with_dataset).await
    });
    while let Some(batch) = results.recv().await {
        for (id, r) in batch {
            *read += 1;
            progress.update("Reading versions", *read, total);
            match r {
                Ok(Some(d)) => {
                    data.insert(id, Ok(d));
                }
                Ok(None) if from_listing => {}
                Ok(None) => {
                    let missing = LakeError::MissingVersion {
                        lake: lake.name(),
                        version: id.clone(),
                        by: String::new(),
                    };
                    data.insert(id, Err(missing));
                }
                Err(e) => {
                    data.insert(id, Err(e));
                }
            }
        }
    }
}

/// Why a version the tips reach has no data: its read failed, or it does not exist. A missing
/// version is named with who named it.
fn unreadable(
    lake: &Lake,
    data: &mut HashMap<VersionId, Result<VersionData, LakeError>>,
    id: VersionId,
    named_by: &HashMap<VersionId, String>,
) -> LakeError {
    let by = named_by.get(&id).cloned().unwrap_or_default();
    match data.remove(&id) {
        Some(Err(LakeError::MissingVersion { lake, version, .. })) => {
            LakeError::MissingVersion { by, lake, version }
        }
        Some(Err(other)) => other,
        _ => LakeError::MissingVersion {
            lake: lake.name(),
            by,
            version: id,
        },
    }
}

/// Commit IDs in dependency order (parents first), without recursion; reports cycles and
/// missing parents among the versions the tips reach. Unreachable broken versions are ignored.
fn compute_commits(
    lake: &Lake,
    tips: &[(VersionId, String)],
    known: &HashMap<VersionId, ObjectId>,
    mut data: HashMap<VersionId, Result<VersionData, LakeError>>,
    named_by: &HashMap<VersionId, String>,
) -> Result<Resolved, LakeError> {
    let mut commits: HashMap<VersionId, ObjectId> = HashMap::new();
    let mut visiting: HashSet<VersionId> = HashSet::new();
    let mut built: HashMap<VersionId, Built> = HashMap::new();
    for (tip, _) in tips {
        let mut stack: Vec<(VersionId, bool)> = vec![(tip.clone(), false)];
        while let Some((id, expanded)) = stack.pop() {
            if known.contains_key(&id) || commits.contains_key(&id) {
                continue;
            }
            let d = match data.get(&id) {
                Some(Ok(d)) => d,
                _ => return Err(unreadable(lake, &mut data, id, named_by)),
            };
            if expanded {
                visiting.remove(&id);
                let parents: Vec<ObjectId> = d
                    .record
                    .parents
                    .iter()
                    .map(|p| {
                        known
                            .get(p)
                            .or_else(|| commits.get(p))
                            .copied()
                            .expect("parents first")
                    })
                    .collect();
                let objects = mapping::version_objects(&id, &d.record, d.dataset.clone(), &parents);
                commits.insert(id.clone(), objects.commit.id);
                let built_version = Built {
                    parents: d.record.parents.clone(),
                    objects,
                    author_email: d.record.author.email.clone(),
                    time: mapping::commit_time(&id, &d.record),
                };
                built.insert(id, built_version);
                continue;
            }
            // Everything above a marker on the stack descends from it: meeting a version that
            // is still being expanded means its parents lead back to it.
            if !visiting.insert(id.clone()) {
                return Err(LakeError::Cycle {
                    lake: lake.name(),
                    version: id,
                });
            }
            stack.push((id.clone(), true));
            for p in d.record.parents.iter().rev() {
                if !known.contains_key(p) && !commits.contains_key(p) {
                    stack.push((p.clone(), false));
                }
            }
        }
    }
    Ok(Resolved { commits, built })
}
