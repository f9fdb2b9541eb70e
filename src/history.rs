//! Resolving history: from ref tips to the commit ID of every version they reach, reading as
//! few records as possible and never one round trip per version where the store can list.
//!
//! Versions already in the cache are known and not read. Unknown ones are read a generation at
//! a time, all of a generation concurrently; once that has taken more round trips than listing
//! `versions/` would cost, the rest of the lake is listed and read concurrently in one go.

use std::collections::{HashMap, HashSet};

use futures::StreamExt;
use tokio::sync::mpsc::UnboundedReceiver;

use crate::lake::{LakeError, VersionId, CONCURRENCY};
use crate::mapping::ObjectId;
use crate::progress::Progress;
pub use crate::reading::{Built, Reading, Summary};

/// Results a reading task hands over at once.
const SEND_BATCH: usize = 64;

/// Tasks that read versions side by side.
const WORKERS: usize = 4;

/// The outcome of resolving: commit IDs for every version reached, and those that had to be
/// read (the others are known from the cache), whose objects went to the reading's pack.
#[derive(Default)]
pub struct Resolved {
    pub commits: HashMap<VersionId, ObjectId>,
    pub built: HashMap<VersionId, Built>,
}

/// Reads what is missing and computes commit IDs for `tips` and everything they reach.
/// `known` holds commit IDs from the cache; `tips` name who points at each tip (for errors).
pub async fn resolve(
    reading: &Reading,
    tips: &[(VersionId, String)],
    known: &HashMap<VersionId, ObjectId>,
    progress: &dyn Progress,
) -> Result<Resolved, LakeError> {
    let walk = Walk {
        reading,
        stop: &|v: &VersionId| known.contains_key(v),
        walked: &HashMap::new(),
        known: known.len(),
        progress,
    };
    let read = walk.read(tips).await?;
    compute_commits(reading, tips, known, read.data, &read.named_by)
}

/// A walk down history from some tips, reading the versions it meets: a generation at a time
/// while that is cheap, then, where the store can list, every version at once.
pub struct Walk<'a> {
    pub reading: &'a Reading,
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
    pub data: HashMap<VersionId, Result<Summary, LakeError>>,
    pub named_by: HashMap<VersionId, String>,
}

impl Walk<'_> {
    /// Reads every version the tips reach that is neither stopped at nor walked before.
    pub async fn read(&self, tips: &[(VersionId, String)]) -> Result<WalkRead, LakeError> {
        let mut data: HashMap<VersionId, Result<Summary, LakeError>> = HashMap::new();
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
            if rounds >= walk_limit && self.reading.lake.store.can_list() {
                self.read_listed(&mut data, &mut read).await?;
                let frontier = self.next_frontier(&data, &mut named_by, &mut through);
                // Everything that exists has been read: what is still missing does not exist.
                if let Some(missing) = frontier.first() {
                    return Err(LakeError::MissingVersion {
                        lake: self.reading.lake.name(),
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
                self.reading,
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
        data: &HashMap<VersionId, Result<Summary, LakeError>>,
        named_by: &mut HashMap<VersionId, String>,
        through: &mut HashSet<VersionId>,
    ) -> Vec<VersionId> {
        let mut parents = Vec::new();
        for (id, d) in data {
            let Ok(d) = d else { continue };
            for p in &d.parents {
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
        data: &mut HashMap<VersionId, Result<Summary, LakeError>>,
        read: &mut u64,
    ) -> Result<(), LakeError> {
        let all = self.reading.lake.version_ids().await?;
        let rest: Vec<VersionId> = all
            .into_iter()
            .filter(|v| !(self.stop)(v) && !data.contains_key(v) && !self.walked.contains_key(v))
            .collect();
        let total = *read + rest.len() as u64;
        read_batch(
            self.reading,
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
        data: &mut HashMap<VersionId, Result<Summary, LakeError>>,
        through: &HashSet<VersionId>,
    ) -> Result<(), LakeError> {
        let mut reachable: HashSet<VersionId> = HashSet::new();
        let mut stack: Vec<VersionId> = tips.iter().map(|(v, _)| v.clone()).collect();
        while let Some(v) = stack.pop() {
            if (self.stop)(&v) || !reachable.insert(v.clone()) {
                continue;
            }
            if let Some(Ok(d)) = data.get(&v) {
                stack.extend(d.parents.iter().cloned());
            } else if let Some(parents) = self.walked.get(&v).filter(|_| through.contains(&v)) {
                stack.extend(parents.iter().cloned());
            }
        }
        let mut missing: Vec<(VersionId, Summary)> = Vec::new();
        for v in reachable {
            if matches!(data.get(&v), Some(Ok(d)) if !d.dataset_read()) {
                if let Some(Ok(d)) = data.remove(&v) {
                    missing.push((v, d));
                }
            }
        }
        let mut reads = spread_reads(self.reading, missing, |reading, (id, mut d)| async move {
            let r = reading.add_dataset(&id, &mut d).await;
            (id, r.map(|()| d))
        });
        while let Some(batch) = reads.recv().await {
            for (v, r) in batch {
                data.insert(v, Ok(r?));
            }
        }
        Ok(())
    }
}

/// Runs `read` for every item with [`CONCURRENCY`] reads in flight, spread over a few tasks
/// so that parsing and hashing (and local reads, which are synchronous) use every core.
/// Results arrive in completion order.
fn spread_reads<I, T, F, Fut>(
    reading: &Reading,
    items: Vec<I>,
    read: F,
) -> UnboundedReceiver<Vec<T>>
where
    I: Send + 'static,
    T: Send + 'static,
    F: Fn(Reading, I) -> Fut + Clone + Send + Sync + 'static,
    Fut: std::future::Future<Output = T> + Send,
{
    let workers = WORKERS.min(items.len()).max(1);
    let per_worker = items.len().div_ceil(workers).max(1);
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let mut items = items.into_iter();
    for _ in 0..workers {
        let part: Vec<I> = items.by_ref().take(per_worker).collect();
        let (reading, tx, read) = (reading.clone(), tx.clone(), read.clone());
        tokio::spawn(async move {
            let mut reads = futures::stream::iter(part)
                .map(|item| read(reading.clone(), item))
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
    reading: &Reading,
    ids: Vec<VersionId>,
    data: &mut HashMap<VersionId, Result<Summary, LakeError>>,
    read: &mut u64,
    total: Option<u64>,
    progress: &dyn Progress,
    from_listing: bool,
) {
    // A listing reads every version, reachable or not: the records first, and dataset.json
    // later, only for those the tips reach.
    let with_dataset = !from_listing;
    let mut results = spread_reads(reading, ids, move |reading, id| async move {
        let r = reading.version(&id, with_dataset).await;
        (id, r)
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
                        lake: reading.lake.name(),
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

/// Commit IDs in dependency order (parents first), without recursion; reports cycles and
/// missing parents among the versions the tips reach. Unreachable broken versions are ignored.
pub fn compute_commits(
    reading: &Reading,
    tips: &[(VersionId, String)],
    known: &HashMap<VersionId, ObjectId>,
    mut data: HashMap<VersionId, Result<Summary, LakeError>>,
    named_by: &HashMap<VersionId, String>,
) -> Result<Resolved, LakeError> {
    let mut out = Resolved::default();
    let mut visiting: HashSet<VersionId> = HashSet::new();
    let commit_of = |out: &Resolved, v: &VersionId| known.get(v).or(out.commits.get(v)).copied();
    for (tip, _) in tips {
        let mut stack: Vec<(VersionId, bool)> = vec![(tip.clone(), false)];
        while let Some((id, expanded)) = stack.pop() {
            if commit_of(&out, &id).is_some() {
                continue;
            }
            if expanded {
                visiting.remove(&id);
                let Some(Ok(d)) = data.remove(&id) else {
                    return Err(unreadable(reading, &mut data, id, named_by));
                };
                let parents: Vec<ObjectId> = d
                    .parents
                    .iter()
                    .map(|p| commit_of(&out, p).expect("parents first"))
                    .collect();
                let (commit, built) = reading.build(&id, d, &parents)?;
                out.commits.insert(id.clone(), commit);
                out.built.insert(id, built);
                continue;
            }
            let d = match data.get(&id) {
                Some(Ok(d)) => d,
                Some(Err(_)) | None => return Err(unreadable(reading, &mut data, id, named_by)),
            };
            // Everything above a marker on the stack descends from it: meeting a version that
            // is still being expanded means its parents lead back to it.
            if !visiting.insert(id.clone()) {
                return Err(LakeError::Cycle {
                    lake: reading.lake.name(),
                    version: id,
                });
            }
            let parents: Vec<VersionId> = d.parents.iter().rev().cloned().collect();
            stack.push((id, true));
            for p in parents {
                if commit_of(&out, &p).is_none() {
                    stack.push((p, false));
                }
            }
        }
    }
    Ok(out)
}

/// Why `id` could not be read, naming who named it.
fn unreadable(
    reading: &Reading,
    data: &mut HashMap<VersionId, Result<Summary, LakeError>>,
    id: VersionId,
    named_by: &HashMap<VersionId, String>,
) -> LakeError {
    let by = named_by.get(&id).cloned().unwrap_or_default();
    match data.remove(&id) {
        Some(Err(LakeError::MissingVersion { lake, version, .. })) => {
            LakeError::MissingVersion { lake, version, by }
        }
        Some(Err(other)) => other,
        _ => LakeError::MissingVersion {
            lake: reading.lake.name(),
            version: id,
            by,
        },
    }
}
