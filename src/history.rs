//! Resolving history: from ref tips to the commit ID of every version they reach, reading as
//! few records as possible and never one round trip per version where the store can list.
//!
//! Versions already in the cache are known and not read. Where the store lists, what is new is
//! listed (after the newest known version; everything when nothing is known) while the first
//! generation is read, and read all at once; a generation at a time only where the store
//! cannot list, or for what a listing missed, and then for a few rounds before everything is
//! listed.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

mod pool;

use pool::ReadPool;

use crate::graph::{parents_first, ParentsFirst};
use crate::lake::{LakeError, VersionId};
use crate::mapping::ObjectId;
use crate::progress::Progress;
use crate::reading::InOrder;
pub(crate) use crate::reading::{BuiltVersion, Reading, Summaries, Summary};

/// A version's objects: its record's blob, its dataset's blob, its tree and its commit.
const OBJECTS_PER_VERSION: usize = 4;

/// The outcome of resolving: commit IDs for every version reached, and those that had to be
/// read (the others are known from the cache), whose objects went to the reading's pack.
#[derive(Default)]
pub(crate) struct Resolved {
    pub commits: HashMap<VersionId, ObjectId>,
    pub built: HashMap<VersionId, BuiltVersion>,
    /// The versions of `built`, parents first.
    pub order: Vec<VersionId>,
}

/// A listing of every version, started before the tips were read ([`Remote::list`]), and
/// stopped if it is dropped untaken.
///
/// [`Remote::list`]: crate::remote::Remote::list
pub(crate) struct ListingUnderWay(pub tokio::task::JoinHandle<Result<ListedVersions, LakeError>>);

/// What reading one version gives: `None` if its record is missing.
type ReadResult = Result<Option<Summary>, LakeError>;

/// The versions a listing found, each with whether it has a `dataset.json`.
pub(crate) type ListedVersions = Vec<(VersionId, Option<bool>)>;

impl Drop for ListingUnderWay {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Commits known without reading their versions (the cache's), looked up one at a time as the
/// walk meets them: a lookup may check what it gives (`vouch.rs`), so that only the versions a
/// walk reaches are checked, not the whole history.
pub(crate) trait Known {
    /// The commit of `v`, if known (and found sound).
    fn commit(&self, v: &VersionId) -> Option<ObjectId>;
    /// The newest version known: newer ones are listed from there.
    fn newest(&self) -> Option<&VersionId>;
}

impl Known for HashMap<VersionId, ObjectId> {
    fn commit(&self, v: &VersionId) -> Option<ObjectId> {
        self.get(v).copied()
    }

    fn newest(&self) -> Option<&VersionId> {
        self.keys().max()
    }
}

/// Reads what is missing and computes commit IDs for `tips` and everything they reach.
/// `known` holds commit IDs from the cache; `tips` name who points at each tip (for errors).
pub(crate) async fn resolve(
    reading: &Reading,
    tips: &[(VersionId, String)],
    known: &HashMap<VersionId, ObjectId>,
    progress: &dyn Progress,
) -> Result<Resolved, LakeError> {
    resolve_listed(reading, tips, known, progress, None).await
}

/// [`resolve`], with a listing of every version already under way (used if nothing is known).
pub(crate) async fn resolve_listed(
    reading: &Reading,
    tips: &[(VersionId, String)],
    known: &dyn Known,
    progress: &dyn Progress,
    listing: Option<ListingUnderWay>,
) -> Result<Resolved, LakeError> {
    // Every tip known (a push's listing, a no-op fetch): nothing to read or build.
    if tips.iter().all(|(v, _)| known.commit(v).is_some()) {
        return Ok(Resolved::default());
    }
    let newest_known = known.newest();
    let walk = Walk {
        reading,
        stop: &|v: &VersionId| known.commit(v).is_some(),
        walked: &|_: &VersionId| None,
        newest_known,
        progress,
    };
    let read = walk.read_listed(tips, listing).await?;
    compute_commits(reading, tips, known, read.data, &read.named_by)
}

/// Generations read one after the other, once a listing of what is new has not reached known
/// versions, before the whole of `versions/` is listed (a few round trips, in ranges).
const WALK_ROUNDS: usize = 3;

/// A walk down history from some tips, reading the versions it meets. Where the store lists,
/// it lists what is new (every version when nothing is known) alongside the first generation
/// and reads it all at once; a generation at a time only where it cannot list, or for what a
/// listing missed.
pub(crate) struct Walk<'a> {
    pub reading: &'a Reading,
    /// Versions the walk neither reads nor goes past (known to the cache, or already in the
    /// repository).
    pub stop: &'a dyn Fn(&VersionId) -> bool,
    /// Parents of versions known without reading them (built before, or remembered by the
    /// cache): walked through without a request.
    pub walked: &'a dyn Fn(&VersionId) -> Option<&'a [VersionId]>,
    /// The newest version the cache knows: newer ones are listed from there. `None`: nothing
    /// is known, and every version is listed.
    pub newest_known: Option<&'a VersionId>,
    pub progress: &'a dyn Progress,
}

/// What a walk read: each version's data (or why it could not be read), and who named it.
pub(crate) struct WalkRead {
    pub data: Summaries,
    pub named_by: HashMap<VersionId, String>,
}

/// What one walk has read so far.
struct State {
    data: Summaries,
    named_by: HashMap<VersionId, String>,
    through: HashSet<VersionId>,
    read: u64,
    /// How many versions this walk reads, once a listing said (Git's progress shows a total
    /// and a percentage as soon as it knows one); grown if a later generation adds more.
    total: Option<u64>,
    /// Versions a listing showed without a `dataset.json`.
    no_dataset: HashSet<VersionId>,
}

impl Walk<'_> {
    /// Reads every version the tips reach that is neither stopped at nor walked before.
    pub(crate) async fn read(&self, tips: &[(VersionId, String)]) -> Result<WalkRead, LakeError> {
        self.read_listed(tips, None).await
    }

    /// [`Walk::read`], with a listing of every version under way: taken if the walk lists
    /// everything, stopped otherwise.
    async fn read_listed(
        &self,
        tips: &[(VersionId, String)],
        under_way: Option<ListingUnderWay>,
    ) -> Result<WalkRead, LakeError> {
        // A listing of everything is taken only where nothing is known; pack records (on a
        // store that cannot list) name only what was packed since the last fetch read them.
        let (under_way, under_way_unlisted) = match self.reading.lake().can_list() {
            true => (under_way.filter(|_| self.newest_known.is_none()), None),
            false => (None, under_way),
        };
        let mut st = State {
            data: Summaries::default(),
            named_by: HashMap::new(),
            through: HashSet::new(),
            read: 0,
            total: None,
            no_dataset: HashSet::new(),
        };
        for (id, by) in tips {
            st.named_by.entry(id.clone()).or_insert_with(|| by.clone());
        }
        let mut frontier = self.to_read(tips.iter().map(|(v, _)| v.clone()), &mut st.through);
        let newest = tips.iter().map(|(v, _)| v).max();
        let mut listed_all = self.newest_known.is_none();
        if !frontier.is_empty() && self.reading.lake().can_list() {
            let listing = self.reading.lake().list_versions(self.newest_known, newest);
            let listed = if self.newest_known.is_some() {
                // What is new is likely listed after the newest known version: list it while
                // the first generation is read.
                let batch = with_datasets(std::mem::take(&mut frontier));
                let (listed, ()) = futures::join!(listing, self.read_batch(&mut st, batch, false));
                listed?
            } else if let Some(under_way) = under_way {
                self.taken(under_way).await?
            } else {
                listing.await?
            };
            // What is new since the last fetch is almost all reachable: its datasets are read
            // with it. A listing of everything reads records first, datasets of what the
            // tips reach after.
            let with_datasets = self.newest_known.is_some();
            self.read_found(&mut st, listed, with_datasets).await;
            // A tip the listing did not show (written after it) is read as a generation.
            let unlisted: Vec<VersionId> = std::mem::take(&mut frontier)
                .into_iter()
                .filter(|v| !st.data.contains_key(v))
                .collect();
            frontier = self.next_frontier(&mut st);
            frontier.extend(unlisted);
            frontier.sort();
            frontier.dedup();
        }
        if let Some(under_way) = under_way_unlisted.filter(|_| !frontier.is_empty()) {
            frontier = self.read_named(&mut st, under_way, frontier).await?;
        }
        let mut rounds = 0;
        while !frontier.is_empty() {
            if rounds == WALK_ROUNDS && !listed_all && self.reading.lake().can_list() {
                listed_all = true;
                let listed = self.reading.lake().list_versions(None, newest).await?;
                self.read_found(&mut st, listed, false).await;
                frontier = self.next_frontier(&mut st);
            }
            let batch = with_datasets(std::mem::take(&mut frontier));
            self.read_batch(&mut st, batch, false).await;
            rounds += 1;
            frontier = self.next_frontier(&mut st);
        }
        if st.read > 0 {
            self.progress
                .finish("Reading versions", st.read, Some(st.read));
        }
        self.read_reachable_datasets(&mut st, tips).await?;
        Ok(WalkRead {
            data: st.data,
            named_by: st.named_by,
        })
    }

    /// On a store that cannot list, the versions the lake's pack records named (a clone over
    /// plain HTTP), read at once; returns what the walk goes on with: the parents they miss.
    /// One stream of reads: the tips (`frontier`) first, while the records arrive, then what
    /// the records name, and, as each version comes, its parents no record named (a tip
    /// written since the last `pack`). Named by a record, so reachable when packed: each
    /// `dataset.json` is read beside its record; whether it has one is not taken from the
    /// record.
    async fn read_named(
        &self,
        st: &mut State,
        under_way: ListingUnderWay,
        frontier: Vec<VersionId>,
    ) -> Result<Vec<VersionId>, LakeError> {
        // Each item says whether it was named (a missing one is passed over here, and read
        // again by the walk, which reports it) or is a tip (missing: an error now).
        let mut pool = pool_of(
            self.reading,
            2,
            |reading, (id, listed): (VersionId, bool)| async move {
                let r = reading.version(&id, true).await;
                (id, listed, r)
            },
        );
        let mut queued: HashSet<VersionId> = frontier.iter().cloned().collect();
        pool.feed(frontier.into_iter().map(|v| (v, false)).collect());
        let named = self.taken(under_way);
        tokio::pin!(named);
        let mut named_in = false;
        loop {
            tokio::select! {
                named = &mut named, if !named_in => {
                    named_in = true;
                    // Whether each has a dataset.json is asked of the lake, not of a record.
                    let mut more: Vec<VersionId> = named?.into_iter().map(|(v, _)| v).collect();
                    // The parents of the tips read so far go with what the records name.
                    more.extend(self.unread_parents(st, None, &queued));
                    self.feed_unqueued(st, &mut pool, &mut queued, more);
                }
                batch = pool.next() => {
                    let Some(batch) = batch else { break };
                    let ids: Vec<VersionId> = batch.iter().map(|(id, _, _)| id.clone()).collect();
                    for (id, listed, r) in batch {
                        self.take_read(st, id, r, listed);
                    }
                    if named_in {
                        let parents = self.unread_parents(st, Some(&ids), &queued);
                        self.feed_unqueued(st, &mut pool, &mut queued, parents);
                    }
                }
            }
            if named_in && pool.waiting() == 0 {
                pool.close();
            }
        }
        Ok(self.next_frontier(st))
    }

    /// Feeds `pool` those of `ids` neither queued before, read, walked nor stopped at, with
    /// room for them and the total the progress shows.
    fn feed_unqueued(
        &self,
        st: &mut State,
        pool: &mut ReadPool<(VersionId, bool), (VersionId, bool, ReadResult)>,
        queued: &mut HashSet<VersionId>,
        ids: Vec<VersionId>,
    ) {
        let mut fed = Vec::new();
        for v in ids {
            if (self.stop)(&v) || st.data.contains_key(&v) || (self.walked)(&v).is_some() {
                continue;
            }
            if queued.insert(v.clone()) {
                fed.push((v, true));
            }
        }
        if !fed.is_empty() {
            st.data.reserve(fed.len());
            self.reading
                .reserve_objects(fed.len() * OBJECTS_PER_VERSION);
            pool.feed(fed);
            st.total = Some(st.read + pool.waiting() as u64);
        }
    }

    /// The versions a listing under way finds.
    async fn taken(&self, mut under_way: ListingUnderWay) -> Result<ListedVersions, LakeError> {
        (&mut under_way.0).await.unwrap_or_else(|e| {
            Err(LakeError::Store {
                lake: self.reading.lake().name(),
                source: crate::store::stopped("versions/", "listing", e),
            })
        })
    }

    /// Reads the listed versions not read, walked or stopped at; with `with_datasets`, each
    /// with its `dataset.json` unless the listing showed it has none.
    async fn read_found(
        &self,
        st: &mut State,
        listed: Vec<(VersionId, Option<bool>)>,
        with_datasets: bool,
    ) {
        let mut rest = Vec::new();
        for (v, dataset) in listed {
            if (self.stop)(&v) || st.data.contains_key(&v) || (self.walked)(&v).is_some() {
                continue;
            }
            if dataset == Some(false) {
                st.no_dataset.insert(v.clone());
            }
            rest.push((v, with_datasets && dataset != Some(false)));
        }
        // A listing says how many versions come: room for them all at once (see
        // `PackWriter::reserve`); four objects a version at most.
        st.data.reserve(rest.len());
        self.reading
            .reserve_objects(rest.len() * OBJECTS_PER_VERSION);
        st.total = Some(st.read + rest.len() as u64);
        self.read_batch(st, rest, true).await;
    }

    /// A listing read records only: reads `dataset.json` of the versions the tips reach
    /// (those the listing showed without one have none).
    async fn read_reachable_datasets(
        &self,
        st: &mut State,
        tips: &[(VersionId, String)],
    ) -> Result<(), LakeError> {
        let mut reachable: HashSet<VersionId> = HashSet::new();
        let mut stack: Vec<VersionId> = tips.iter().map(|(v, _)| v.clone()).collect();
        while let Some(v) = stack.pop() {
            if (self.stop)(&v) || !reachable.insert(v.clone()) {
                continue;
            }
            if let Some(Ok(d)) = st.data.get(&v) {
                stack.extend(d.parents.iter().cloned());
            } else if let Some(parents) = (self.walked)(&v).filter(|_| st.through.contains(&v)) {
                stack.extend(parents.iter().cloned());
            }
        }
        // Summaries stay where they are: only IDs and record blobs go to the readers.
        let mut missing: Vec<(VersionId, ObjectId)> = Vec::new();
        for v in reachable {
            let Some(Ok(d)) = st.data.get_mut(&v) else {
                continue;
            };
            let Some(record_blob) = d.awaiting_dataset() else {
                continue;
            };
            if st.no_dataset.contains(&v) {
                self.reading.without_dataset(&v, d)?;
            } else {
                missing.push((v, record_blob));
            }
        }
        // In the listing's order, as the records were read: on a folder whose files are not
        // cached, the disk then reads each version's files near the last ones.
        missing.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        let mut reads = spread_reads(
            self.reading,
            missing,
            1,
            |reading, (id, record_blob)| async move {
                let r = reading.dataset_and_tree(&id, record_blob).await;
                (id, r)
            },
        );
        while let Some(batch) = reads.next().await {
            for (v, r) in batch {
                if let Some(Ok(d)) = st.data.get_mut(&v) {
                    d.add_dataset(r?);
                }
            }
        }
        Ok(())
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
            match (self.walked)(&v) {
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
    fn next_frontier(&self, st: &mut State) -> Vec<VersionId> {
        self.unread_parents(st, None, &HashSet::new())
    }

    /// The parents of the versions `of` names (`None`: every version read) that are neither
    /// read, `queued`, walked nor stopped at, each named by its child.
    fn unread_parents(
        &self,
        st: &mut State,
        of: Option<&[VersionId]>,
        queued: &HashSet<VersionId>,
    ) -> Vec<VersionId> {
        let mut parents = Vec::new();
        let (data, through, named_by) = (&st.data, &st.through, &mut st.named_by);
        let mut add = |id: &VersionId, d: &Summary| {
            for p in &d.parents {
                if !data.contains_key(p)
                    && !queued.contains(p)
                    && !through.contains(p)
                    && !(self.stop)(p)
                {
                    named_by
                        .entry(p.clone())
                        .or_insert_with(|| format!("version {id}"));
                    parents.push(p.clone());
                }
            }
        };
        match of {
            None => data.iter().for_each(|(id, d)| {
                if let Ok(d) = d {
                    add(id, d);
                }
            }),
            Some(ids) => ids.iter().for_each(|id| {
                if let Some(Ok(d)) = data.get(id) {
                    add(id, d);
                }
            }),
        }
        let data = &st.data;
        self.to_read(parents, &mut st.through)
            .into_iter()
            .filter(|v| !data.contains_key(v))
            .collect()
    }

    /// Reads `ids` (each with its `dataset.json` or not) concurrently into the state
    /// ([`Walk::take_read`]).
    async fn read_batch(&self, st: &mut State, ids: Vec<(VersionId, bool)>, from_listing: bool) {
        let reading = self.reading;
        let per_item = if ids.iter().any(|(_, d)| *d) { 2 } else { 1 };
        // Once a total is known, a generation the listing did not show adds to it.
        st.total = st.total.map(|t| t.max(st.read + ids.len() as u64));
        let mut results = spread_reads(
            reading,
            ids,
            per_item,
            |reading, (id, with_dataset)| async move {
                let r = reading.version(&id, with_dataset).await;
                (id, r)
            },
        );
        while let Some(batch) = results.next().await {
            for (id, r) in batch {
                self.take_read(st, id, r, from_listing);
            }
        }
    }

    /// Keeps what reading `id` gave. A missing record is an error in a walk (something names
    /// it); in a listing (`listed`) it is a version deleted meanwhile, and is skipped.
    fn take_read(&self, st: &mut State, id: VersionId, r: ReadResult, listed: bool) {
        st.read += 1;
        self.progress.update("Reading versions", st.read, st.total);
        match r {
            Ok(Some(d)) => {
                st.data.insert(id, Ok(d));
            }
            Ok(None) if listed => {}
            Ok(None) => {
                let missing = LakeError::MissingVersion {
                    lake: self.reading.lake().name(),
                    version: id.clone(),
                    by: String::new(),
                };
                st.data.insert(id, Err(missing));
            }
            Err(e) => {
                st.data.insert(id, Err(e));
            }
        }
    }
}

fn with_datasets(ids: Vec<VersionId>) -> Vec<(VersionId, bool)> {
    ids.into_iter().map(|v| (v, true)).collect()
}

/// Reads `ids` (records and datasets) all at once: versions whose parents were known without
/// reading them, and that must be read now for their objects. A missing one is an error.
pub(crate) async fn read_versions(
    reading: &Reading,
    ids: Vec<VersionId>,
    progress: &dyn Progress,
) -> Result<HashMap<VersionId, Summary>, LakeError> {
    let mut out = HashMap::with_capacity(ids.len());
    let total = Some(ids.len() as u64);
    let mut results = spread_reads(reading, ids, 2, |reading, id| async move {
        let r = reading.version(&id, true).await;
        (id, r)
    });
    while let Some(batch) = results.next().await {
        for (id, r) in batch {
            match r? {
                Some(d) => {
                    out.insert(id, d);
                    progress.update("Reading versions", out.len() as u64, total);
                }
                None => {
                    return Err(LakeError::MissingVersion {
                        lake: reading.lake().name(),
                        version: id,
                        by: String::new(),
                    })
                }
            }
        }
    }
    if !out.is_empty() {
        progress.finish("Reading versions", out.len() as u64, None);
    }
    Ok(out)
}

/// Runs `read` for every item (each `requests_per_item` requests at once) with the store's
/// concurrency of requests in flight. Results arrive in completion order.
fn spread_reads<I, T, F, Fut>(
    reading: &Reading,
    items: Vec<I>,
    requests_per_item: usize,
    read: F,
) -> ReadPool<I, T>
where
    I: Send + 'static,
    T: Send + 'static,
    F: Fn(Arc<Reading>, I) -> Fut + Clone + Send + Sync + 'static,
    Fut: std::future::Future<Output = T> + Send,
{
    let mut pool = pool_of(reading, requests_per_item, read);
    pool.feed(items);
    pool.close();
    pool
}

/// A pool of reads fed later, with the store's concurrency of requests in flight.
fn pool_of<I, T, F, Fut>(reading: &Reading, requests_per_item: usize, read: F) -> ReadPool<I, T>
where
    I: Send + 'static,
    T: Send + 'static,
    F: Fn(Arc<Reading>, I) -> Fut + Clone + Send + Sync + 'static,
    Fut: std::future::Future<Output = T> + Send,
{
    let in_flight = reading.lake().concurrency() / requests_per_item.max(1);
    ReadPool::start(reading.clone(), in_flight.max(1), read)
}

/// Commit IDs in dependency order (parents first), without recursion; reports cycles and
/// missing parents among the versions the tips reach. Unreachable broken versions are ignored.
pub(crate) fn compute_commits(
    reading: &Reading,
    tips: &[(VersionId, String)],
    known: &dyn Known,
    mut data: Summaries,
    named_by: &HashMap<VersionId, String>,
) -> Result<Resolved, LakeError> {
    // The outputs grow as the summaries go (see `Building::leave`): reserved for them all
    // at once, they would be held beside every summary at the start.
    let mut out = Resolved::default();
    out.order.reserve(data.len());
    reading.build_in_order(|in_order| {
        let mut walk = Building {
            reading,
            known,
            data: &mut data,
            named_by,
            out: &mut out,
            in_order,
        };
        parents_first(tips.iter().map(|(tip, _)| tip.clone()), &mut walk)
    })?;
    Ok(out)
}

/// The walk of [`compute_commits`]: each version built once its parents are.
struct Building<'a, 'r> {
    reading: &'a Reading,
    known: &'a dyn Known,
    data: &'a mut Summaries,
    named_by: &'a HashMap<VersionId, String>,
    out: &'a mut Resolved,
    in_order: &'a mut InOrder<'r>,
}

/// The commit of `v`, built or known.
fn commit_of(out: &Resolved, known: &dyn Known, v: &VersionId) -> Option<ObjectId> {
    out.commits.get(v).copied().or_else(|| known.commit(v))
}

impl ParentsFirst for Building<'_, '_> {
    type Node = VersionId;
    type Error = LakeError;

    fn enter(&mut self, id: &VersionId) -> Result<Option<Vec<VersionId>>, LakeError> {
        if commit_of(self.out, self.known, id).is_some() {
            return Ok(None);
        }
        let d = match self.data.get_mut(id) {
            // Everything above a version under way on the stack descends from it: meeting
            // it again means its parents lead back to it.
            Some(Ok(d)) if d.under_way => {
                return Err(LakeError::Cycle {
                    lake: self.reading.lake().name(),
                    version: id.clone(),
                });
            }
            Some(Ok(d)) => d,
            Some(Err(_)) | None => {
                return Err(unreadable(
                    self.reading,
                    self.data,
                    id.clone(),
                    self.named_by,
                ))
            }
        };
        d.under_way = true;
        let (out, known) = (&*self.out, self.known);
        let parents = d.parents.iter();
        let parents = parents.filter(|p| commit_of(out, known, p).is_none());
        Ok(Some(parents.cloned().collect()))
    }

    fn leave(&mut self, id: VersionId) -> Result<(), LakeError> {
        // Entered (and found readable) before it was left.
        let Some(Ok(d)) = self.data.remove(&id) else {
            return Err(unreadable(self.reading, self.data, id, self.named_by));
        };
        let parents: Vec<ObjectId> = (d.parents.iter())
            .map(|p| commit_of(self.out, self.known, p).expect("parents first"))
            .collect();
        let (commit, built) = self.in_order.build(&id, d, &parents)?;
        self.out.commits.insert(id.clone(), commit);
        self.out.built.insert(id.clone(), built);
        self.out.order.push(id);
        Ok(())
    }
}

/// Why `id` could not be read, naming who named it.
fn unreadable(
    reading: &Reading,
    data: &mut Summaries,
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
            lake: reading.lake().name(),
            version: id,
            by,
        },
    }
}
