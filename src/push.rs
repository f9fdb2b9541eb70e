//! `git push` to a lake: moving and making refs with conditional writes, then rewriting
//! `refs.json`. A push never adds versions: every pushed commit must be the mapped commit of a
//! version the lake already holds.
//!
//! Each ref is checked first (name, commit, version, fast-forward, lease), then written on
//! condition against the exact file Git saw in `list for-push`: the store decides who wins.
//! `refs.json` is a cache of the ref files, rewritten afterwards with its own conditional write
//! and retried on conflict; a conflict there never fails a push whose ref write succeeded.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;

use crate::lake::files::render_refs_json;
use crate::lake::{
    check_ref_name, check_writable_ref, names::RefNameProblem, LakeError, VersionId,
};
use crate::mapping::{self, ObjectId};
use crate::protocol::PushItem;
use crate::remote::{Listing, Remote, RemoteError};
use crate::store::{Token, WriteError, WriteMode};

/// Git's own status words, which it turns into its usual messages and advice.
pub const NON_FAST_FORWARD: &str = "non-fast forward";
pub const FETCH_FIRST: &str = "fetch first";
pub const ALREADY_EXISTS: &str = "already exists";
pub const STALE_INFO: &str = "stale info";
pub const ATOMIC_FAILED: &str = "atomic push failed";

/// How many times `refs.json` is re-read and rewritten when other writers keep changing it.
const REFS_JSON_ATTEMPTS: u32 = 100;

/// The options of one push batch.
#[derive(Debug, Clone, Default)]
pub struct PushOptions {
    pub dry_run: bool,
    pub atomic: bool,
    /// `--force-with-lease`: ref → expected commit (hex; empty for "must not exist").
    pub cas: Vec<(String, String)>,
}

/// The result for one ref: `Ok(note)` (note such as `forced update`), or `Err(reason)`.
pub type RefResult = Result<Option<String>, String>;

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

/// A write that happened, and how to undo it (for `--atomic`).
#[derive(Debug, Clone)]
struct Done {
    dst: String,
    new_token: Option<Token>,
    old_bytes: Option<Bytes>,
    /// Known to be this push's own write. A value found by reading back after a failed write
    /// may be another writer's (the same value): an atomic undo must never touch it.
    ours: bool,
}

/// A ref's write: its name, what was done (or why not), and the note for Git.
type Outcome = (String, Result<Option<Done>, Failure>, Option<String>);

/// Why a write did not happen, and whether that is certain.
#[derive(Debug, Clone)]
struct Failure {
    reason: String,
    /// The store's answer was lost and the ref could not be read back: it may hold our value.
    uncertain: bool,
}

impl Failure {
    fn sure(reason: String) -> Failure {
        Failure {
            reason,
            uncertain: false,
        }
    }

    fn unknown(reason: String) -> Failure {
        Failure {
            reason,
            uncertain: true,
        }
    }
}

/// What a push did, beyond the per-ref results.
#[derive(Debug, Default)]
pub struct PushReport {
    pub results: Vec<(String, RefResult)>,
    /// Problems that did not fail the push (refs.json left stale, an undo that failed).
    pub warnings: Vec<String>,
    pub refs_json_attempts: u32,
}

/// Checks and performs one batch of `push` lines.
pub async fn push(
    remote: &mut Remote,
    listing: &Listing,
    items: &[PushItem],
    opts: &PushOptions,
) -> PushReport {
    let mut report = PushReport::default();
    let mut planned: Vec<Result<Planned, String>> = Vec::with_capacity(items.len());
    // Refs this push deletes make room for refs it creates (`a/b` out, `a` in).
    let deleted: HashSet<String> = items
        .iter()
        .filter(|i| i.src.is_empty())
        .map(|i| i.dst.clone())
        .collect();
    for item in items {
        let clash = items.iter().find(|other| {
            !item.src.is_empty()
                && !other.src.is_empty()
                && (other.dst.starts_with(&format!("{}/", item.dst))
                    || item.dst.starts_with(&format!("{}/", other.dst)))
        });
        planned.push(match clash {
            Some(other) => Err(format!("cannot create both {} and {}", item.dst, other.dst)),
            None => plan(remote, listing, &deleted, item, opts).await,
        });
    }
    let any_failed = planned.iter().any(|p| p.is_err());
    if opts.atomic && any_failed {
        for (item, p) in items.iter().zip(planned) {
            let r = match p {
                Err(why) => Err(why),
                Ok(_) => Err(ATOMIC_FAILED.to_string()),
            };
            report.results.push((item.dst.clone(), r));
        }
        return report;
    }
    if opts.dry_run {
        for (item, p) in items.iter().zip(planned) {
            report
                .results
                .push((item.dst.clone(), p.map(|p| note(&p.action))));
        }
        return report;
    }
    let remote: &Remote = remote;
    let outcomes: Vec<Outcome> = if opts.atomic {
        write_atomically(remote, &planned, &mut report.warnings).await
    } else {
        // Deletions first, so that a folder they empty can hold a new ref; then the rest,
        // concurrently. Results keep Git's order.
        let is_delete = |p: &Result<Planned, String>| {
            matches!(
                p,
                Ok(Planned {
                    action: Action::Delete { .. },
                    ..
                })
            )
        };
        let mut outcomes: Vec<Option<Outcome>> = vec![None; planned.len()];
        for deletes in [true, false] {
            let batch: Vec<usize> = (0..planned.len())
                .filter(|i| is_delete(&planned[*i]) == deletes)
                .collect();
            let results: Vec<Outcome> =
                futures::stream::iter(batch.iter().map(|i| write_one(remote, &planned[*i])))
                    .buffered(16)
                    .collect()
                    .await;
            for (i, r) in batch.into_iter().zip(results) {
                outcomes[i] = Some(r);
            }
        }
        outcomes
            .into_iter()
            .map(|o| o.expect("every ref written"))
            .collect()
    };
    let mut changed: Vec<(String, Option<VersionId>)> = Vec::new();
    let mut uncertain = false;
    for ((item, p), (_, outcome, note)) in items.iter().zip(&planned).zip(outcomes) {
        let r = match outcome {
            Ok(Some(_)) => {
                if let Ok(p) = p {
                    changed.push((p.dst.clone(), target_of(&p.action)));
                }
                Ok(note)
            }
            Ok(None) => Ok(note),
            Err(f) => {
                // An atomic push that failed may have written and undone refs meanwhile.
                uncertain |= f.uncertain || opts.atomic;
                Err(f.reason)
            }
        };
        report.results.push((item.dst.clone(), r));
    }
    crash_point_for_tests();
    // After a write of unknown outcome, what Git listed plus our changes may be wrong:
    // refs.json is then rebuilt from the ref files themselves.
    let (attempts, warning) = update_refs_json(remote, listing, &changed, uncertain).await;
    report.refs_json_attempts = attempts;
    report.warnings.extend(warning);
    report
}

/// Writes one planned ref (or passes its refusal on).
async fn write_one(remote: &Remote, p: &Result<Planned, String>) -> Outcome {
    match p {
        Err(why) => (String::new(), Err(Failure::sure(why.clone())), None),
        Ok(p) => {
            let r = write(remote, p).await;
            (p.dst.clone(), r, note(&p.action))
        }
    }
}

fn target_of(action: &Action) -> Option<VersionId> {
    match action {
        Action::Create { version } | Action::Update { version, .. } => Some(version.clone()),
        Action::Delete { .. } | Action::UpToDate => None,
    }
}

fn note(action: &Action) -> Option<String> {
    match action {
        Action::Update { forced: true, .. } => Some("forced update".to_string()),
        _ => None,
    }
}

/// Checks one ref; the error is the reason Git shows.
async fn plan(
    remote: &mut Remote,
    listing: &Listing,
    deleted: &HashSet<String>,
    item: &PushItem,
    opts: &PushOptions,
) -> Result<Planned, String> {
    let dst = item.dst.as_str();
    // A ref that exists may be deleted whatever its name; new names must be writable ones.
    let name_check = if item.src.is_empty() {
        check_ref_name(dst)
    } else {
        check_writable_ref(dst)
    };
    match name_check {
        Ok(()) => {}
        Err(RefNameProblem::NotHeadOrTag) => {
            return Err(format!(
                "refusing to push to {dst}: a lake holds only refs/heads/* and refs/tags/*"
            ))
        }
        Err(problem) => return Err(format!("refusing to push to {dst}: {problem}")),
    }
    let is_tag = dst.starts_with("refs/tags/");
    let old_version = listing
        .refs
        .iter()
        .find(|(n, _)| n == dst)
        .map(|(_, v)| v.clone());
    let old_commit = old_version.as_ref().map(|v| listing.commits[v]);
    let old_token = listing.tokens.get(dst).cloned();
    // A folder cannot be both a ref and hold refs: refuse what Git itself could not store.
    if old_version.is_none() {
        if let Some((other, _)) = listing
            .refs
            .iter()
            .filter(|(n, _)| !deleted.contains(n))
            .find(|(n, _)| dst.starts_with(&format!("{n}/")) || n.starts_with(&format!("{dst}/")))
        {
            return Err(format!("cannot create {dst}: {other} exists in the lake"));
        }
    }
    let lease = opts
        .cas
        .iter()
        .find(|(r, _)| r == dst)
        .map(|(_, v)| v.clone());
    if let Some(expected) = &lease {
        // Git sends the all-zero ID (or nothing) for "the ref must not exist yet".
        let expects_absent = expected.is_empty() || expected.bytes().all(|b| b == b'0');
        let matches = match &old_commit {
            None => expects_absent,
            Some(c) => ObjectId::from_hex(expected) == Some(*c),
        };
        if !matches {
            return Err(STALE_INFO.to_string());
        }
    }
    let leased = lease.is_some();
    let planned = |action: Action| Planned {
        dst: dst.to_string(),
        action,
        old_version: old_version.clone(),
        leased,
        forced_by_user: item.force,
    };

    if item.src.is_empty() {
        if is_tag {
            return Err("tags in a lake are never deleted".to_string());
        }
        let Some(old) = old_token else {
            return Err("remote ref does not exist".to_string());
        };
        if listing.head.as_deref() == Some(dst) {
            return Err(
                "deletion of the current branch prohibited (the lake's HEAD names it)".to_string(),
            );
        }
        return Ok(planned(Action::Delete { old }));
    }

    let version = pushed_version(remote, &item.src, dst).await?;
    if Some(&version) == old_version.as_ref() {
        return Ok(planned(Action::UpToDate));
    }
    if is_tag {
        if old_version.is_some() {
            return Err(ALREADY_EXISTS.to_string());
        }
        return Ok(planned(Action::Create { version }));
    }
    let (Some(old_commit), Some(old)) = (old_commit, old_token) else {
        return Ok(planned(Action::Create { version }));
    };
    // Fast-forward is checked here too: Git sends refs it marked `fetch first` and `needs force`.
    let new_commit = remote
        .commit_of(&version, "the pushed commit")
        .await
        .map_err(|e| e.to_string())?;
    let forced = {
        let repo = remote.repo.as_ref().ok_or("no local repository")?;
        if !repo.has(&old_commit) {
            if !item.force && !leased {
                return Err(FETCH_FIRST.to_string());
            }
            true
        } else {
            !repo.is_ancestor(&old_commit, &new_commit)
        }
    };
    if forced && !item.force && !leased {
        return Err(NON_FAST_FORWARD.to_string());
    }
    Ok(planned(Action::Update {
        version,
        old,
        forced,
    }))
}

/// The version a pushed source names, checked to be exactly that version's commit in this lake.
async fn pushed_version(remote: &mut Remote, src: &str, dst: &str) -> Result<VersionId, String> {
    let repo = remote
        .repo
        .as_ref()
        .ok_or("no local repository to push from")?;
    let id = repo
        .resolve(src)
        .ok_or_else(|| format!("cannot resolve '{src}' in the local repository"))?;
    let short = &id.to_hex()[..12];
    let (kind, data) = repo
        .object(&id)
        .ok_or_else(|| format!("{short} is not in the local repository"))?;
    match kind.as_str() {
        "commit" => {}
        "tag" => {
            let short_dst = dst.rsplit('/').next().unwrap_or(dst);
            return Err(format!(
                "{short} is an annotated tag, and lake tags carry no message or signature; \
                 push the commit it points at: git push <remote> {short_dst}^{{commit}}:{dst}"
            ));
        }
        other => {
            return Err(format!(
                "{short} is a {other}; only commits that are versions of this lake can be pushed"
            ))
        }
    }
    let version = mapping::commit_message(&data)
        .and_then(mapping::version_of_message)
        .ok_or_else(|| {
            format!(
                "{short} is not a version of this lake (no FDL-Version trailer): a lake gains versions \
                 only through its writers; push a commit fetched from the lake"
            )
        })?;
    let named_by = format!("commit {short}");
    match remote.commit_of(&version, &named_by).await {
        Ok(c) if c == id => Ok(version),
        Ok(c) => Err(format!(
            "{short} names version {version}, whose commit in this lake is {}: it was made or amended \
             locally, or comes from another lake",
            &c.to_hex()[..12]
        )),
        Err(RemoteError::Lake(LakeError::MissingVersion { .. })) => {
            Err(format!("{short} names version {version}, which this lake does not hold"))
        }
        Err(e) => Err(e.to_string()),
    }
}

fn ref_bytes(version: &VersionId) -> Bytes {
    Bytes::from(format!("{version}\n"))
}

/// Performs one planned write. `Ok(Some(done))` when the lake changed, `Ok(None)` when nothing
/// needed writing.
async fn write(remote: &Remote, p: &Planned) -> Result<Option<Done>, Failure> {
    let store = &remote.lake.store;
    let lost = |p: &Planned| -> String {
        if p.dst.starts_with("refs/tags/") {
            ALREADY_EXISTS.to_string()
        } else if p.leased {
            STALE_INFO.to_string()
        } else if p.forced_by_user {
            // Pulling would not help a forced push: say what happened instead.
            "another push changed this ref while this one ran; push again".to_string()
        } else {
            FETCH_FIRST.to_string()
        }
    };
    match &p.action {
        Action::UpToDate => Ok(None),
        Action::Create { version } | Action::Update { version, .. } => {
            let mode = match &p.action {
                Action::Update { old, .. } => WriteMode::Update(old.clone()),
                _ => WriteMode::Create,
            };
            match store.put(&p.dst, ref_bytes(version), &mode).await {
                Ok(token) => Ok(Some(Done {
                    dst: p.dst.clone(),
                    new_token: Some(token),
                    old_bytes: None,
                    ours: true,
                })),
                // The outcome of a failed write is checked, not assumed: a retried request
                // whose first attempt landed reads as a conflict with our own write.
                Err(e) => match recheck(remote, &p.dst, Some(version)).await {
                    Readback::Holds(token) => Ok(Some(Done {
                        dst: p.dst.clone(),
                        new_token: Some(token),
                        old_bytes: None,
                        ours: false,
                    })),
                    Readback::Differs => Err(Failure::sure(match e {
                        WriteError::Conflict => lost(p),
                        WriteError::Store(s) => store_reason(&s),
                    })),
                    Readback::Unknown(why) => Err(Failure::unknown(unknown_outcome(&e, &why))),
                },
            }
        }
        Action::Delete { old } => match store.delete(&p.dst, old).await {
            Ok(()) => Ok(Some(Done {
                dst: p.dst.clone(),
                new_token: None,
                old_bytes: None,
                ours: true,
            })),
            Err(WriteError::Conflict) => Err(Failure::sure(lost(p))),
            Err(e) => match recheck(remote, &p.dst, None).await {
                Readback::Holds(_) => Ok(Some(Done {
                    dst: p.dst.clone(),
                    new_token: None,
                    old_bytes: None,
                    ours: false,
                })),
                Readback::Differs => Err(Failure::sure(match &e {
                    WriteError::Store(s) => store_reason(s),
                    WriteError::Conflict => lost(p),
                })),
                Readback::Unknown(why) => Err(Failure::unknown(unknown_outcome(&e, &why))),
            },
        },
    }
}

fn store_reason(e: &crate::store::StoreError) -> String {
    match e.hint() {
        Some(h) => format!("{e}; {h}"),
        None => e.to_string(),
    }
}

/// What reading a ref back after a failed write showed.
enum Readback {
    /// It holds what we wrote (our write landed after all), at this version.
    Holds(Token),
    Differs,
    /// It could not be read: whether the write happened is unknown.
    Unknown(String),
}

/// Reads the ref back after a failed write, retrying the read a few times: does it hold
/// `want` (for a delete, `want` is `None` and a missing ref counts)?
async fn recheck(remote: &Remote, dst: &str, want: Option<&VersionId>) -> Readback {
    let mut pause = Duration::from_millis(100);
    let mut last_error = String::new();
    for _ in 0..4 {
        match remote.lake.store.get_versioned(dst, 1 << 20).await {
            Ok(got) => {
                return match (got, want) {
                    (None, None) => Readback::Holds(Token::default()),
                    (Some(v), Some(want))
                        if std::str::from_utf8(&v.bytes)
                            .is_ok_and(|t| t.trim() == want.as_str()) =>
                    {
                        Readback::Holds(v.token)
                    }
                    _ => Readback::Differs,
                }
            }
            Err(e) => last_error = e.to_string(),
        }
        tokio::time::sleep(pause).await;
        pause *= 2;
    }
    Readback::Unknown(last_error)
}

fn unknown_outcome(e: &WriteError, why: &str) -> String {
    format!(
        "the outcome of this write is unknown ({e}; reading the ref back failed: {why}); \
         run 'git ls-remote' to see whether it happened"
    )
}

/// `--atomic`: writes one at a time; on the first failure, undoes what was written with
/// compensating conditional writes, and fails every ref.
async fn write_atomically(
    remote: &Remote,
    planned: &[Result<Planned, String>],
    warnings: &mut Vec<String>,
) -> Vec<Outcome> {
    let store = &remote.lake.store;
    let mut done: Vec<(Done, Planned)> = Vec::new();
    let mut failure: Option<(usize, Failure)> = None;
    // Deletions first, as in a plain push.
    let mut order: Vec<usize> = (0..planned.len()).collect();
    order.sort_by_key(|i| {
        !matches!(
            planned[*i],
            Ok(Planned {
                action: Action::Delete { .. },
                ..
            })
        )
    });
    for i in order {
        let Ok(p) = &planned[i] else { continue };
        // What to put back if a later write fails.
        let old_bytes = p.old_version.as_ref().map(ref_bytes);
        match write(remote, p).await {
            Ok(Some(mut d)) => {
                d.old_bytes = old_bytes;
                done.push((d, p.clone()));
            }
            Ok(None) => {}
            Err(why) => {
                failure = Some((i, why));
                break;
            }
        }
    }
    let Some((failed_at, why)) = failure else {
        return planned
            .iter()
            .map(|p| {
                let p = p
                    .as_ref()
                    .expect("atomic pushes are written only when every ref passed");
                let d = done
                    .iter()
                    .find(|(d, _)| d.dst == p.dst)
                    .map(|(d, _)| d.clone());
                (p.dst.clone(), Ok(d), note(&p.action))
            })
            .collect();
    };
    for (d, p) in done.iter().rev() {
        if !d.ours {
            warnings.push(format!(
                "atomic push: {} already held the pushed value, perhaps written by another push; it is left as it is",
                d.dst
            ));
            continue;
        }
        let undone = match (&p.action, &d.new_token, &d.old_bytes) {
            (Action::Create { .. }, Some(t), _) => store.delete(&d.dst, t).await.map(|_| ()),
            (Action::Update { .. }, Some(t), Some(old)) => store
                .put(&d.dst, old.clone(), &WriteMode::Update(t.clone()))
                .await
                .map(|_| ()),
            (Action::Delete { .. }, _, Some(old)) => store
                .put(&d.dst, old.clone(), &WriteMode::Create)
                .await
                .map(|_| ()),
            _ => Err(WriteError::Conflict),
        };
        if let Err(e) = undone {
            warnings.push(format!(
                "atomic push: could not undo the write of {} ({e}); the lake keeps the pushed value there",
                d.dst
            ));
        }
    }
    if why.uncertain {
        let dst = planned[failed_at]
            .as_ref()
            .map(|p| p.dst.as_str())
            .unwrap_or("");
        warnings.push(format!(
            "atomic push: the write of {dst} may have happened (its outcome is unknown) and could not be undone; \
             check it with 'git ls-remote'"
        ));
    }
    planned
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let dst = p.as_ref().map(|p| p.dst.clone()).unwrap_or_default();
            let r = if i == failed_at {
                Err(why.clone())
            } else {
                Err(Failure::sure(ATOMIC_FAILED.to_string()))
            };
            (dst, r, None)
        })
        .collect()
}

/// Rewrites `refs.json` so that it equals the ref files. The first attempt uses the refs Git
/// listed (read after `refs.json`'s token) plus this push's changes, unless `fresh_first`; on a
/// conflict, the token and then the ref files are read again. Returns the attempts made, and a
/// warning on giving up. Entries other than branches and tags (a host's own) are kept.
async fn update_refs_json(
    remote: &Remote,
    listing: &Listing,
    changed: &[(String, Option<VersionId>)],
    fresh_first: bool,
) -> (u32, Option<String>) {
    let lake = &remote.lake;
    let Some(snapshot) = &listing.refs_json else {
        return (0, None);
    };
    // What refs.json holds now (bytes and token), and what the ref files hold.
    type State = (Option<(Bytes, Token)>, HashMap<String, VersionId>);
    let mut state: Option<State> = None;
    if !fresh_first {
        let mut refs: HashMap<String, VersionId> = listing.refs.iter().cloned().collect();
        for (name, v) in changed {
            match v {
                Some(v) => refs.insert(name.clone(), v.clone()),
                None => refs.remove(name),
            };
        }
        state = Some((
            snapshot
                .as_ref()
                .map(|v| (v.bytes.clone(), v.token.clone())),
            refs,
        ));
    }
    let mut pause = Duration::from_millis(5);
    for attempt in 1..=REFS_JSON_ATTEMPTS {
        if state.is_none() {
            // refs.json's token first, then the ref files: a write conditional on that token
            // then holds every ref write that finished before it.
            let current = lake.refs_json_versioned().await;
            let fresh = match current {
                Ok(current) => lake.refs_versioned().await.map(|r| (current, r)),
                Err(e) => Err(e),
            };
            match fresh {
                Ok((current, refs)) => {
                    state = Some((
                        current.map(|v| (v.bytes, v.token)),
                        refs.into_iter().map(|(n, v, _)| (n, v)).collect(),
                    ))
                }
                Err(_) => {
                    backoff(&mut pause).await;
                    continue;
                }
            }
        }
        let (current, refs) = state.as_ref().expect("read above");
        let mut pairs: Vec<(String, VersionId)> =
            refs.iter().map(|(n, v)| (n.clone(), v.clone())).collect();
        pairs.retain(|(n, _)| check_ref_name(n).is_ok());
        let wanted = Bytes::from(render_refs_json(
            current.as_ref().map(|(b, _)| &b[..]),
            &pairs,
        ));
        if current.as_ref().is_some_and(|(b, _)| *b == wanted) {
            return (attempt - 1, None);
        }
        let mode = match current {
            Some((_, t)) => WriteMode::Update(t.clone()),
            None => WriteMode::Create,
        };
        match lake.store.put("refs.json", wanted, &mode).await {
            Ok(_) => return (attempt, None),
            Err(WriteError::Conflict) => {
                state = None;
                backoff(&mut pause).await;
            }
            Err(WriteError::Store(e)) => {
                let what = match e.hint() {
                    // A lock left by a killed push stays until someone removes it.
                    Some(hint) => format!("; {hint}"),
                    None => "; the next push will repair it".to_string(),
                };
                return (
                    attempt,
                    Some(format!(
                        "refs.json of lake '{}' was not updated ({e}); the refs are written{what}",
                        lake.name()
                    )),
                );
            }
        }
    }
    (
        REFS_JSON_ATTEMPTS,
        Some(format!(
            "refs.json of lake '{}' is still changing after {REFS_JSON_ATTEMPTS} attempts; the refs are \
             written, and the next push will repair refs.json",
            lake.name()
        )),
    )
}

/// Sleeps with exponential backoff and jitter, so racing writers spread out.
async fn backoff(pause: &mut Duration) {
    tokio::time::sleep(*pause + Duration::from_micros(u64::from(jitter()) % 5000)).await;
    *pause = (*pause * 2).min(Duration::from_millis(200));
}

/// For the crash tests only: with `GIT_REMOTE_FDL_TEST_STOP_BEFORE_REFS_JSON=<file>`, the helper
/// writes its pid there and waits to be killed between its ref writes and `refs.json`.
fn crash_point_for_tests() {
    if let Some(path) = std::env::var_os("GIT_REMOTE_FDL_TEST_STOP_BEFORE_REFS_JSON") {
        let _ = std::fs::write(&path, std::process::id().to_string());
        std::thread::sleep(Duration::from_secs(60));
    }
}

fn jitter() -> u32 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos() ^ std::process::id())
        .unwrap_or(0)
}
