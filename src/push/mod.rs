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
mod lost_race;
mod plan;
mod refs_json_state;
mod refs_json_update;
mod updates;
mod write;

use crate::lake::VersionId;
use crate::remote::{Listing, Remote};

use updates::{Action, Plans};
pub(crate) use updates::{PushOptions, PushReport, RefResult, RefUpdate, Rejection};

/// Checks and performs one batch of `push` lines.
pub(crate) async fn push(
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
        refs_json_update::update(
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
) -> (
    Option<refs_json_update::Prepared>,
    Option<refs_json_update::Current>,
) {
    let basis = refs_json_update::Basis::of(listing, writer.lake());
    let changes = planned_changes(planned);
    let work = tokio::task::spawn_blocking(move || refs_json_update::prepare(&basis, changes));
    let prepared = work.await.ok().flatten();
    let read_before = match prepared.as_ref().is_some_and(|p| p.must_read_again()) {
        true => refs_json_update::read_current(writer.lake()).await,
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
