//! Reading one version into what the helper keeps of it: its parents and the IDs of its
//! objects. Each file is read within the store's memory budget, hashed, handed to the pack
//! being written (if any) and let go; only IDs and the commit's few fields stay.

use std::collections::HashMap;
use std::sync::Arc;

mod summaries;
pub(crate) use summaries::Summaries;

use crate::lake::{Lake, LakeError, VersionId, VersionRecord};

use crate::mapping::{self, object_id, Kind, ObjectId};
use crate::session_pack::PackSink;
use crate::signatures::{self, Policy, Subject, Verdict};
use crate::spill::{Spill, Spilled};

/// How versions are read: from which lake, into which pack, with which signature check.
#[derive(Clone)]
pub(crate) struct Reading {
    lake: Lake,
    sink: Option<Arc<PackSink>>,
    check: Option<Arc<Policy>>,
    /// Where commit tails wait for their commits: a clone builds commits only when their
    /// parents are known, so a long history holds a tail for every version read until then
    /// (100,000 versions: 11 MB of them, and as many small allocations).
    spill: Arc<Spill>,
    /// Whether each summary keeps its record's `sha256` (for `fsck --catalogs`).
    digests: bool,
    /// Where each version read leaves its commit's time, when a `--shallow-since` needs it.
    times: Option<Times>,
    /// Room, in KiB, for what parsing a record holds beside its bytes (the parsed record and
    /// its commit tail, about three times its size): the store's budget counts only the bytes,
    /// so without it the records parsed at once could hold several times the budget.
    parsing: Arc<tokio::sync::Semaphore>,
}

/// Versions' commit times, shared by the readings of one session.
#[derive(Clone, Default)]
pub(crate) struct Times(Arc<parking_lot::Mutex<HashMap<VersionId, u64>>>);

impl Times {
    fn insert(&self, id: &VersionId, time: u64) {
        let mut times = self.0.lock();
        times.insert(id.clone(), time);
    }

    /// The time of `id`, if a reading saw it.
    pub(crate) fn get(&self, id: &VersionId) -> Option<u64> {
        let times = self.0.lock();
        times.get(id).copied()
    }
}

/// The room for parsing records, in KiB (64 MiB).
const PARSING_ROOM_KIB: u32 = 64 << 10;

/// What follows a commit's parent lines ([`mapping::commit_tail`]), spilled (or in memory if
/// no temporary file can be written).
enum Tail {
    Kept(Box<[u8]>),
    Spilled(Spilled),
}

/// A version read: what its commit needs, and IDs only.
pub(crate) struct Summary {
    /// Exactly its parents (a clone holds a summary for every version read).
    pub parents: Box<[VersionId]>,
    objects: Objects,
    tail: Tail,
    /// What only some readings keep (boxed: most keep none, and a clone holds a summary for
    /// every version).
    pub extra: Option<Box<Extra>>,
    /// Set while the versions it descends from are built ([`compute_commits`]).
    ///
    /// [`compute_commits`]: crate::history::compute_commits
    pub under_way: bool,
}

/// A version's objects so far: its record's blob until its `dataset.json` is read (or known
/// to be missing), then its tree, made (and packed) at once by the task that read it: only
/// commits wait for their parents, and neither blob is needed again.
#[derive(Clone, Copy)]
enum Objects {
    Record(ObjectId),
    Tree(ObjectId),
}

/// What a summary holds only when the reading asks for it.
pub(crate) struct Extra {
    /// The signature checked, when reading checks signatures (boxed on its own: it moves
    /// whole into the built version).
    pub checked: Option<Box<Checked>>,
    /// The record's `sha256` as given (an excerpt), when the reading keeps digests.
    pub sha256: Option<Box<str>>,
}

/// A version's tree, made once its `dataset.json` was read.
pub(crate) struct DatasetAndTree {
    tree: ObjectId,
}

impl Summary {
    /// The record's blob while the version's `dataset.json` is still to be read.
    pub(crate) fn awaiting_dataset(&self) -> Option<ObjectId> {
        match self.objects {
            Objects::Record(blob) => Some(blob),
            Objects::Tree(_) => None,
        }
    }

    /// The version's tree, once its `dataset.json` was read.
    pub(crate) fn tree(&self) -> Option<ObjectId> {
        match self.objects {
            Objects::Tree(tree) => Some(tree),
            Objects::Record(_) => None,
        }
    }

    /// Takes what [`Reading::dataset_and_tree`] read.
    pub(crate) fn add_dataset(&mut self, read: DatasetAndTree) {
        self.objects = Objects::Tree(read.tree);
    }
}

/// A version whose tree and commit are made (and in the pack, if one is written).
#[derive(Clone)]
pub(crate) struct BuiltVersion {
    pub parents: Box<[VersionId]>,
    /// Its signature's verdict, with its author and time, when the reading checked it.
    pub checked: Option<Box<Checked>>,
}

/// A version's signature checked: the verdict, and the author and time the signature was
/// checked against.
#[derive(Clone)]
pub(crate) struct Checked {
    pub verdict: Verdict,
    pub author_email: String,
    pub time: u64,
}

impl Reading {
    pub(crate) fn new(lake: Lake) -> Reading {
        Reading {
            lake,
            sink: None,
            check: None,
            spill: Arc::default(),
            digests: false,
            times: None,
            parsing: Arc::new(tokio::sync::Semaphore::new(PARSING_ROOM_KIB as usize)),
        }
    }

    /// Makes room in the pack being written (if any) for `objects` more at once.
    pub(crate) fn reserve_objects(&self, objects: usize) {
        if let Some(sink) = &self.sink {
            sink.reserve(objects);
        }
    }

    /// The lake versions are read from.
    pub(crate) fn lake(&self) -> &Lake {
        &self.lake
    }

    /// Keeps each record's `sha256` in its summary.
    pub(crate) fn with_digests(mut self) -> Reading {
        self.digests = true;
        self
    }

    pub(crate) fn with_sink(mut self, sink: Option<Arc<PackSink>>) -> Reading {
        self.sink = sink;
        self
    }

    /// Leaves the commit time of every version read in `times`.
    pub(crate) fn with_times(mut self, times: Option<Times>) -> Reading {
        self.times = times;
        self
    }

    pub(crate) fn with_check(mut self, check: Option<Arc<Policy>>) -> Reading {
        self.check = check;
        self
    }

    fn store_err(&self, e: crate::store::StoreError) -> LakeError {
        LakeError::Store {
            lake: self.lake.name(),
            source: e,
        }
    }

    /// Hashes one of version `v`'s files (`what`) into a blob, into the pack if one is written.
    fn keep_blob(&self, v: &VersionId, what: &str, data: &[u8]) -> Result<ObjectId, LakeError> {
        let id = object_id(Kind::Blob, data).map_err(|e| self.collision(v, what, e))?;
        if let Some(sink) = &self.sink {
            sink.add(Kind::Blob, id, data);
        }
        Ok(id)
    }

    /// An object already made, into the pack if one is written.
    fn keep_object(&self, object: &mapping::Object) {
        if let Some(sink) = &self.sink {
            sink.add(object.kind, object.id, &object.data);
        }
    }

    /// Version `v` refused: one of its objects (made from `what`) is a collision attack.
    fn collision(&self, v: &VersionId, what: &str, e: mapping::Collision) -> LakeError {
        LakeError::BadVersion {
            lake: self.lake.name(),
            version: v.clone(),
            why: format!("{what}: {e}"),
        }
    }

    /// Reads a version's record, and its `dataset.json` too if `with_dataset`, concurrently.
    /// `None` if it has no record.
    pub(crate) async fn version(
        &self,
        id: &VersionId,
        with_dataset: bool,
    ) -> Result<Option<Summary>, LakeError> {
        let (record, dataset) = futures::join!(self.record(id), async {
            match with_dataset {
                true => self.dataset(id).await.map(Some),
                false => Ok(None),
            }
        });
        let Some(mut summary) = record? else {
            return Ok(None);
        };
        if let Some(dataset) = dataset? {
            self.make_tree(id, &mut summary, dataset)?;
        }
        Ok(Some(summary))
    }

    /// Reads `dataset.json` of a version read without it, and makes its tree: what
    /// [`Summary::add_dataset`] takes. Only the record's blob goes to the reading task, not the
    /// summary: a first clone reads a hundred thousand of these at once.
    pub(crate) async fn dataset_and_tree(
        &self,
        id: &VersionId,
        record_blob: ObjectId,
    ) -> Result<DatasetAndTree, LakeError> {
        let dataset = self.dataset(id).await?;
        let tree = mapping::tree_object(dataset, record_blob)
            .map_err(|e| self.collision(id, "its tree", e))?;
        self.keep_object(&tree);
        Ok(DatasetAndTree { tree: tree.id })
    }

    async fn record(&self, id: &VersionId) -> Result<Option<Summary>, LakeError> {
        let (raw, sig) = futures::join!(self.lake.record_held(id), async {
            match &self.check {
                Some(_) => self.lake.signature(id).await.map_err(|e| self.store_err(e)),
                None => Ok(None),
            }
        });
        let Some(raw) = raw.map_err(|e| self.store_err(e))? else {
            return Ok(None);
        };
        // Held until the record's tail is kept (or spilled) and the parsed record let go.
        let kib = (raw.bytes.len().saturating_mul(3) >> 10).min(PARSING_ROOM_KIB as usize);
        let _parsing = self
            .parsing
            .clone()
            .acquire_many_owned(kib as u32)
            .await
            .expect("the parsing room's semaphore is never closed");
        let record =
            VersionRecord::parse(raw.bytes.clone()).map_err(|why| LakeError::BadVersion {
                lake: self.lake.name(),
                version: id.clone(),
                why: why.to_string(),
            })?;
        let sig = sig?;
        let time = mapping::commit_time(id, &record);
        if let Some(times) = &self.times {
            times.insert(id, time);
        }
        let checked = self.check.as_ref().map(|c| {
            let subject = Subject {
                record: &raw.bytes,
                signature: sig.as_deref(),
                principal: &record.author.email,
                time,
            };
            let verdict = signatures::verify(
                &subject,
                &c.trusted,
                &c.namespace,
                &self.lake.config().signers,
            );
            Checked {
                verdict,
                author_email: record.author.email.clone(),
                time,
            }
        });
        let record_blob = self.keep_blob(id, "version.json", &raw.bytes)?;
        let tail = mapping::commit_tail(id, &record);
        let tail = self.keep_tail(tail);
        let sha256 = match (self.digests, record.sha256) {
            (true, Some(d)) => Some(crate::redact::excerpt(&d, 100).into_boxed_str()),
            _ => None,
        };
        let extra = (checked.is_some() || sha256.is_some()).then(|| {
            Box::new(Extra {
                checked: checked.map(Box::new),
                sha256,
            })
        });
        Ok(Some(Summary {
            parents: record.parents.into_boxed_slice(),
            objects: Objects::Record(record_blob),
            tail,
            extra,
            under_way: false,
        }))
    }

    /// A commit tail put in the spill file (kept in memory if it cannot be written).
    fn keep_tail(&self, tail: Vec<u8>) -> Tail {
        match self.spill.put(&tail) {
            Some(at) => Tail::Spilled(at),
            None => Tail::Kept(tail.into_boxed_slice()),
        }
    }

    async fn dataset(&self, id: &VersionId) -> Result<Option<ObjectId>, LakeError> {
        let held = self
            .lake
            .dataset_held(id)
            .await
            .map_err(|e| self.store_err(e))?;
        held.map(|h| self.keep_blob(id, "dataset.json", &h.bytes))
            .transpose()
    }

    /// Makes the tree of version `v` once its `dataset.json` blob is known (`None`: it has
    /// none), into the pack if one is written.
    fn make_tree(
        &self,
        v: &VersionId,
        s: &mut Summary,
        dataset: Option<ObjectId>,
    ) -> Result<(), LakeError> {
        if let Objects::Record(record) = s.objects {
            let tree = mapping::tree_object(dataset, record)
                .map_err(|e| self.collision(v, "its tree", e))?;
            self.keep_object(&tree);
            s.objects = Objects::Tree(tree.id);
        }
        Ok(())
    }

    /// Makes the tree of version `v`, which has no `dataset.json` (a listing showed none).
    pub(crate) fn without_dataset(&self, v: &VersionId, s: &mut Summary) -> Result<(), LakeError> {
        self.make_tree(v, s, None)
    }

    /// Runs `f`, which builds commits one after the other with [`InOrder::build`], while a
    /// thread of its own compresses them into the pack: each commit needs its parents' IDs,
    /// so the building is single-threaded, and on a clone of 100,000 versions compressing
    /// commits took a third of it.
    pub(crate) fn build_in_order<T>(&self, f: impl FnOnce(&mut InOrder) -> T) -> T {
        let Some(sink) = self.sink.as_deref() else {
            return f(&mut InOrder {
                reading: self,
                batch: Vec::new(),
                packer: None,
            });
        };
        std::thread::scope(|scope| {
            let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<mapping::Object>>(PACKER_QUEUE);
            let packer = std::thread::Builder::new().spawn_scoped(scope, move || {
                for batch in rx {
                    for o in batch {
                        sink.add(o.kind, o.id, &o.data);
                    }
                }
            });
            // No thread to be had (a process limit): commits are packed as they are built.
            let mut in_order = InOrder {
                reading: self,
                batch: Vec::with_capacity(PACKER_BATCH),
                packer: packer.is_ok().then_some(tx),
            };
            let out = f(&mut in_order);
            in_order.flush();
            out
            // The sender goes with `in_order`: the packer empties the queue, and the scope
            // waits for it.
        })
    }

    /// Makes a version's tree (into the pack, if one is written) and its commit object from
    /// its summary and its parents' commits, in the record's order.
    fn commit(
        &self,
        id: &VersionId,
        s: Summary,
        parents: &[ObjectId],
    ) -> Result<(mapping::Object, BuiltVersion), LakeError> {
        let bad = |why: String| LakeError::BadVersion {
            lake: self.lake.name(),
            version: id.clone(),
            why,
        };
        let Some(tree) = s.tree() else {
            return Err(bad(
                "dataset.json was not read (a bug in git-remote-fdl)".into()
            ));
        };
        let commit = match &s.tail {
            Tail::Kept(tail) => mapping::commit_object(&tree, parents, tail)
                .map_err(|e| self.collision(id, "its commit", e))?,
            Tail::Spilled(at) => {
                let tail = self
                    .spill
                    .get(*at)
                    .map_err(|e| bad(format!("cannot read back its commit message: {e}")))?;
                mapping::commit_object(&tree, parents, &tail)
                    .map_err(|e| self.collision(id, "its commit", e))?
            }
        };
        let built = BuiltVersion {
            parents: s.parents,
            checked: s.extra.and_then(|e| e.checked),
        };
        Ok((commit, built))
    }
}

/// Commits handed to the packer at once, and batches waiting for it at most.
const PACKER_BATCH: usize = 64;
const PACKER_QUEUE: usize = 16;

/// Commits being built in order ([`Reading::build_in_order`]).
pub(crate) struct InOrder<'r> {
    reading: &'r Reading,
    batch: Vec<mapping::Object>,
    /// The packer's queue; `None` when no pack is written or no packer could be started.
    packer: Option<std::sync::mpsc::SyncSender<Vec<mapping::Object>>>,
}

impl InOrder<'_> {
    /// Makes a version's tree and commit from its summary and its parents' commits, in the
    /// record's order; the commit goes to the pack, if one is written.
    pub(crate) fn build(
        &mut self,
        id: &VersionId,
        s: Summary,
        parents: &[ObjectId],
    ) -> Result<(ObjectId, BuiltVersion), LakeError> {
        let (commit, built) = self.reading.commit(id, s, parents)?;
        let commit_id = commit.id;
        match (&self.packer, &self.reading.sink) {
            (Some(_), _) => {
                self.batch.push(commit);
                if self.batch.len() == PACKER_BATCH {
                    self.flush();
                }
            }
            (None, Some(sink)) => sink.add(Kind::Commit, commit.id, &commit.data),
            (None, None) => {}
        }
        Ok((commit_id, built))
    }

    fn flush(&mut self) {
        if let (Some(packer), false) = (&self.packer, self.batch.is_empty()) {
            let batch = std::mem::replace(&mut self.batch, Vec::with_capacity(PACKER_BATCH));
            // The packer stops only when the queue is closed, which is not yet.
            let _ = packer.send(batch);
        }
    }
}
