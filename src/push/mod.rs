//! `git push` to a lake: moving and making refs with conditional writes, then rewriting
//! `refs.json`. A push never adds versions: every pushed commit must be the mapped commit of a
//! version the lake already holds.
//!
//! Each ref is checked first (`plan`: name, commit, version, fast-forward, lease), then written
//! on condition against the exact file Git saw in `list for-push` (`write`): the store decides
//! who wins. `--atomic` pushes write one ref at a time and undo on failure (`atomic`).
//! `refs.json` is a cache of the ref files, rewritten afterwards with its own conditional write
//! and retried on conflict (`refs_json`); a conflict there never fails a push whose ref write
//! succeeded.

mod atomic;
mod plan;
mod refs_json;
mod write;

use std::collections::HashSet;
use std::fmt;

use crate::lake::VersionId;
use crate::remote::{Listing, Remote};
use crate::store::Token;

/// One ref Git asks to update: `[+]<src>:<dst>`; an empty `src` deletes `dst`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefUpdate {
    pub force: bool,
    pub src: String,
    pub dst: String,
}

/// The options of one push batch.
#[derive(Debug, Clone, Default)]
pub struct PushOptions {
    pub dry_run: bool,
    pub atomic: bool,
    /// `--force-with-lease`: ref → expected commit (hex; empty for "must not exist").
    pub cas: Vec<(String, String)>,
}

/// Why a ref was not pushed. The first kinds are the ones Git knows and turns into its own
/// statuses and advice.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rejection {
    NonFastForward,
    FetchFirst,
    AlreadyExists,
    StaleInfo,
    /// Another ref of an `--atomic` push failed.
    AtomicFailed,
    /// A forced push lost a race with another push: pulling would not help, pushing again may.
    ChangedMeanwhile,
    /// The store's answer was lost and the ref could not be read back: it may hold our value.
    Unknown(String),
    /// Refused, though the ref file this push wrote stays in the lake (a tag is never
    /// deleted, and a value this push cannot prove it wrote is never taken back).
    Left(String),
    /// Any other refusal, in words.
    Refused(String),
}

impl Rejection {
    fn refused(why: impl Into<String>) -> Rejection {
        Rejection::Refused(why.into())
    }

    /// Whether the ref may have changed after all.
    pub fn is_uncertain(&self) -> bool {
        matches!(self, Rejection::Unknown(_) | Rejection::Left(_))
    }
}

impl fmt::Display for Rejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Rejection::NonFastForward => f.write_str("non-fast-forward"),
            Rejection::FetchFirst => f.write_str("the lake holds a version you do not have"),
            Rejection::AlreadyExists => f.write_str("already exists"),
            Rejection::StaleInfo => f.write_str("stale info"),
            Rejection::AtomicFailed => f.write_str("atomic push failed"),
            Rejection::ChangedMeanwhile => {
                f.write_str("another push changed this ref while this one ran; push again")
            }
            Rejection::Unknown(why) | Rejection::Left(why) | Rejection::Refused(why) => {
                f.write_str(why)
            }
        }
    }
}

/// The result for one ref: `Ok(forced)` when it was pushed (`forced`: a non-fast-forward
/// update), or why not.
pub type RefResult = Result<bool, Rejection>;

/// What a push did, beyond the per-ref results.
#[derive(Debug, Default)]
pub struct PushReport {
    pub results: Vec<(String, RefResult)>,
    /// Problems that did not fail the push (refs.json left stale, an undo that failed).
    pub warnings: Vec<String>,
    pub refs_json_attempts: u32,
}

/// What one pushed ref will do.
#[derive(Debug, Clone)]
enum Action {
    /// Nothing to write: the ref already holds this version.
    UpToDate,
    Create {
        version: VersionId,
    },
    Update {
        version: VersionId,
        old: Token,
        forced: bool,
    },
    Delete {
        old: Token,
    },
}

impl Action {
    /// The version the ref holds after the write (`None`: it is gone, or untouched).
    fn target(&self) -> Option<VersionId> {
        match self {
            Action::Create { version } | Action::Update { version, .. } => Some(version.clone()),
            Action::Delete { .. } | Action::UpToDate => None,
        }
    }

    fn forced(&self) -> bool {
        matches!(self, Action::Update { forced: true, .. })
    }

    fn is_delete(&self) -> bool {
        matches!(self, Action::Delete { .. })
    }

    /// A write that can never be taken back: a new tag.
    fn is_create_only(&self, dst: &str) -> bool {
        matches!(self, Action::Create { .. }) && dst.starts_with("refs/tags/")
    }
}

/// A ref that passed its checks, and what to write.
#[derive(Debug, Clone)]
struct Planned {
    dst: String,
    action: Action,
    /// The version the ref held when Git listed it, to put back if an atomic push fails.
    old_version: Option<VersionId>,
    /// The lease, if any: a lost condition then reads `stale info` rather than `fetch first`.
    leased: bool,
    /// `+` or `--force`: a lost condition is then not a reason to fetch.
    forced_by_user: bool,
}

/// Each ref's plan, in Git's order: what to write, or why not.
type Plans = Vec<Result<Planned, Rejection>>;

/// Checks and performs one batch of `push` lines.
pub async fn push(
    remote: &mut Remote,
    listing: &Listing,
    updates: &[RefUpdate],
    opts: &PushOptions,
) -> PushReport {
    let mut planned = plan::plan_all(remote, listing, updates, opts).await;
    if opts.atomic {
        atomic::refuse_two_tags(&mut planned);
    }
    let mut report = PushReport::default();
    let any_failed = planned.iter().any(|p| p.is_err());
    if (opts.atomic && any_failed) || opts.dry_run {
        report.results = planned
            .into_iter()
            .zip(updates)
            .map(|(p, u)| {
                let result = match p {
                    Err(why) => Err(why),
                    Ok(_) if opts.atomic && any_failed => Err(Rejection::AtomicFailed),
                    Ok(p) => Ok(p.action.forced()),
                };
                (u.dst.clone(), result)
            })
            .collect();
        return report;
    }
    let writer: &Remote = remote;
    let writes = async {
        match opts.atomic {
            true => atomic::write_all(writer, &planned, &mut report.warnings).await,
            false => write::write_all(writer, &planned).await,
        }
    };
    let preparing = prepare_refs_json(writer, listing, &planned);
    let (outcomes, (prepared, read_before)) = futures::join!(writes, preparing);
    let Settled {
        changed,
        written,
        uncertain,
    } = settle(&mut report, updates, &planned, outcomes, opts.atomic);
    crate::testhook::stop_at(crate::testhook::Point::BeforeRefsJson);
    // The refs written are saved in the cache while refs.json is written.
    let saving = remote.remember_written_refs(written.clone());
    let writer: &Remote = remote;
    let deferred = deferred_checks(writer, &planned, &report, opts);
    // After a write of unknown outcome, what Git listed plus our changes may be wrong:
    // refs.json is then rebuilt from the ref files themselves. Created tags are looked after
    // meanwhile: they stay in the lake whatever the look finds.
    let checks = deferred
        .iter()
        .map(|i| write::check_created_tag(writer, &report.results[*i].0));
    let ((attempts, warning), checks, saved) = futures::join!(
        refs_json::update(
            writer,
            listing,
            &changed,
            &written,
            uncertain,
            prepared,
            read_before
        ),
        futures::future::join_all(checks),
        saving.done()
    );
    remote.take_back(saved);
    for (i, check) in deferred.into_iter().zip(checks) {
        if let Some(why) = check {
            report.results[i].1 = Err(why);
        }
    }
    report.refs_json_attempts = attempts;
    report.warnings.extend(warning);
    report
}

/// refs.json as it will be if every write lands, worked out while they are in flight, on a
/// thread of its own: here (2 ms at 1,000 refs) it held back the writes' own progress. A
/// refs.json the listing cannot be trusted with is read again now, beside the writes, not
/// after them: one round trip fewer.
async fn prepare_refs_json(
    writer: &Remote,
    listing: &Listing,
    planned: &Plans,
) -> (Option<refs_json::Prepared>, Option<refs_json::Current>) {
    let basis = refs_json::Basis::of(listing, writer.lake());
    let changes = planned_changes(planned);
    let work = tokio::task::spawn_blocking(move || refs_json::prepare(&basis, changes));
    let prepared = work.await.ok().flatten();
    let read_before = match prepared.as_ref().is_some_and(|p| p.must_read_again()) {
        true => refs_json::read_current(writer.lake()).await,
        false => None,
    };
    (prepared, read_before)
}

/// What the writes did, beyond each ref's result.
struct Settled {
    changed: Vec<(String, Option<VersionId>)>,
    /// Ref files as this push left them, with their ETags: the next listing need not read them.
    written: Vec<(String, String, VersionId)>,
    /// Whether a ref may hold another value than its result says.
    uncertain: bool,
}

/// Each ref's result from its plan and its write's outcome, into `report`.
fn settle(
    report: &mut PushReport,
    updates: &[RefUpdate],
    planned: &Plans,
    outcomes: Vec<write::Written>,
    atomic: bool,
) -> Settled {
    let mut settled = Settled {
        changed: Vec::new(),
        written: Vec::new(),
        uncertain: false,
    };
    for ((update, p), outcome) in updates.iter().zip(planned).zip(outcomes) {
        let result = match (p, outcome) {
            (Ok(p), Ok(done)) => {
                if let Some(done) = done {
                    settled.changed.push((p.dst.clone(), p.action.target()));
                    let e_tag = done.new_token.and_then(|t| t.e_tag);
                    if let (Some(e_tag), Some(v)) = (e_tag, p.action.target()) {
                        settled.written.push((p.dst.clone(), e_tag, v));
                    }
                }
                Ok(p.action.forced())
            }
            (_, Err(why)) => {
                // An atomic push that failed may have written and undone refs meanwhile.
                settled.uncertain |= why.is_uncertain() || atomic;
                Err(why)
            }
            (Err(why), Ok(_)) => Err(why.clone()),
        };
        report.results.push((update.dst.clone(), result));
    }
    settled
}

/// The refs the push changes if all its writes land, in the order their results come.
fn planned_changes(planned: &Plans) -> Vec<(String, Option<VersionId>)> {
    planned
        .iter()
        .flatten()
        .filter(|p| !matches!(p.action, Action::UpToDate))
        .map(|p| (p.dst.clone(), p.action.target()))
        .collect()
}

/// The refs whose look for a racing ref in the way runs beside the `refs.json` write: tags
/// created on an object store by a push that is not atomic.
fn deferred_checks(
    remote: &Remote,
    planned: &Plans,
    report: &PushReport,
    opts: &PushOptions,
) -> Vec<usize> {
    if opts.atomic {
        return Vec::new();
    }
    (0..planned.len())
        .filter(|i| {
            let created = report.results[*i].1.is_ok();
            created
                && planned[*i]
                    .as_ref()
                    .is_ok_and(|p| write::defers_check(remote, p))
        })
        .collect()
}

/// Refs this push deletes, which make room for refs it creates (`a/b` out, `a` in).
fn deleted_refs(updates: &[RefUpdate]) -> HashSet<String> {
    updates
        .iter()
        .filter(|u| u.src.is_empty())
        .map(|u| u.dst.clone())
        .collect()
}
