//! Rewriting `refs.json` after a push so that it equals the ref files: a conditional write;
//! when another writer changed it meanwhile, this push's own changes applied to theirs and
//! written again.

use std::collections::HashMap;
use std::time::Duration;

use bytes::Bytes;

use super::lost_race::{self, after_lost_race, own_changes, AfterLostRace, Announcing};
use super::refs_json_state::render;
pub(super) use super::refs_json_state::{read_current, Current};
use crate::backoff::Backoff;
use crate::lake::refs_json::parse_refs_json;
use crate::lake::{Lake, RefsSeen, VersionId};
use crate::remote::{Listing, Remote};
use crate::store::{Token, WriteError, WriteMode};

/// How many times `refs.json` is re-read and rewritten when other writers keep changing it.
const ATTEMPTS: u32 = 100;

/// After this many refusals in a row of a compare-and-swap on one unchanged token, the store
/// does not honour `If-Match` (a racing writer would have changed the token).
const SAME_TOKEN_REFUSALS: u32 = 10;

/// What `refs.json` holds now (bytes and token), and what the ref files hold.
struct State {
    current: Current,
    refs: HashMap<String, VersionId>,
}

/// The first attempt's work, which needs only the listing and the changes a push plans: done
/// while the push's ref writes are in flight ([`prepare`]), used if the writes changed just
/// those refs.
pub(super) struct Prepared {
    changes: Vec<(String, Option<VersionId>)>,
    /// What the first attempt writes; `None` when the listing's refs.json may miss a ref write
    /// that finished before the listing (then refs.json and the refs are read again first).
    wanted: Option<Bytes>,
}

impl Prepared {
    /// Whether refs.json and the refs must be read again whatever the writes do.
    pub(super) fn must_read_again(&self) -> bool {
        self.wanted.is_none()
    }
}

/// What the first attempt is worked out from, taken from the listing: owned, so that the
/// work runs on a thread of its own while the ref writes are sent and answered.
pub(super) struct Basis {
    /// `refs.json` as listed (`Some(None)`: there was none; `None`: no token was listed).
    refs_json: Option<Option<Bytes>>,
    refs_json_first: bool,
    refs: Vec<(String, VersionId)>,
    /// Ref files the listing passed over as broken: their refs.json entries are kept.
    broken: Vec<String>,
}

impl Basis {
    pub(super) fn of(listing: &Listing, lake: &Lake) -> Basis {
        Basis {
            refs_json: (listing.refs_json.as_ref()).map(|s| s.as_ref().map(|v| v.bytes.clone())),
            refs_json_first: listing.refs_json_first,
            refs: listing.refs.clone(),
            broken: lake.broken_refs(),
        }
    }
}

/// Works out the first attempt for `changes`; `None` for a lake without a listed refs.json
/// token (nothing is written then).
pub(super) fn prepare(
    basis: &Basis,
    changes: Vec<(String, Option<VersionId>)>,
) -> Option<Prepared> {
    let current = basis.refs_json.as_ref()?.as_deref();
    // Read beside the ref listing rather than before it, refs.json's token covers every ref
    // write that finished before the listing only if the two agree.
    let covers = basis.refs_json_first || agrees(current, &basis.refs, &basis.broken);
    let wanted = covers.then(|| {
        let refs = listed_plus_changes(&basis.refs, &changes);
        render(current, refs, &basis.broken)
    });
    Some(Prepared { changes, wanted })
}

/// Rewrites `refs.json`. The first attempt uses the refs Git listed (read after `refs.json`'s
/// token, or beside it and agreeing with it) plus this push's `changed` refs, unless
/// `uncertain` (then the token and the ref files are read again first); on a conflict, this
/// push's changes are applied to the `refs.json` that won ([`lost_race`]). Returns the
/// attempts made, and a warning on giving up. Entries other than branches and tags (a host's
/// own) are kept. `prepared` is used if it was worked out for `changed`.
pub(super) async fn update(
    remote: &Remote,
    listing: &Listing,
    changed: &[(String, Option<VersionId>)],
    written: &[(String, String, VersionId)],
    uncertain: bool,
    prepared: Option<Prepared>,
    mut read_before: Option<Current>,
) -> (u32, Option<String>) {
    let lake = remote.lake();
    let Some(mut first) = first_attempt(lake, listing, changed, uncertain, prepared) else {
        return (0, None);
    };
    // After a lost race, this push's own changes are applied to the winner's refs.json
    // ([`lost_race`]); only after a write of unknown outcome are the refs listed again.
    let mut retry = Retrying::new(uncertain);
    // Made only if refs.json must be read again: most pushes write it at the first attempt.
    let mut seen = None;
    let own = own_changes(listing, changed);
    let mut announcing = Announcing::of(&own);
    // Announcements the next write settles (to delete once it lands).
    let mut settles = Vec::new();
    for attempt in 1..=ATTEMPTS {
        let reapplied = match first.is_none() && retry.reapply_next {
            true => match after_a_lost_race(lake, &own, &mut announcing, &mut retry).await {
                LostRace::Done => return (attempt - 1, None),
                LostRace::Again => continue,
                LostRace::Write(current, wanted, settled) => {
                    settles = settled;
                    Some((current, wanted))
                }
                LostRace::Rebuild => None,
            },
            false => None,
        };
        let (current, wanted) = match reapplied.or_else(|| first.take()) {
            Some(f) => f,
            None => {
                let seen = seen.get_or_insert_with(|| ref_files_seen(listing, changed, written));
                match rebuilt(lake, read_before.take(), seen).await {
                    Some(state) => state,
                    None => {
                        retry.backoff.wait().await;
                        continue;
                    }
                }
            }
        };
        if current.as_ref().is_some_and(|(b, _)| *b == wanted) {
            return (attempt - 1, None);
        }
        let mode = match current {
            Some((_, t)) => WriteMode::Update(t),
            None => WriteMode::Create,
        };
        let started = std::time::Instant::now();
        let outcome = lake.write_refs_json(wanted, &mode).await;
        retry.write_took = started.elapsed();
        if let Err(e) = outcome {
            match retry.after(lake, e, &mode).await {
                Some(warning) => return (attempt, Some(warning)),
                None => continue,
            }
        }
        forget_announced(lake, &announcing, settles).await;
        return (attempt, None);
    }
    let warning = format!(
        "refs.json of lake '{}' is still changing after {ATTEMPTS} attempts; the refs are \
         written, and the next push will repair refs.json",
        lake.name()
    );
    (ATTEMPTS, Some(warning))
}

/// `refs.json` (bytes and token) read again with the ref files, and what makes it equal to
/// them; `None` if a read failed.
async fn rebuilt(
    lake: &Lake,
    read_before: Option<Current>,
    seen: &mut HashMap<String, (String, VersionId)>,
) -> Option<(Current, Bytes)> {
    let state = read_state(lake, read_before, seen).await?;
    let current = state.current.as_ref().map(|(b, _)| &b[..]);
    let wanted = render(current, state.refs, &lake.broken_refs());
    Some((state.current, wanted))
}

/// What the loop does after a lost race.
enum LostRace {
    /// Nothing: the winner's `refs.json` carries this push's changes.
    Done,
    /// After a pause, another attempt.
    Again,
    /// Write this (the winner's `refs.json` and token, what to write, the announcements
    /// settled).
    Write(Current, Bytes, Vec<String>),
    /// Read `refs.json` and the refs again and rebuild it.
    Rebuild,
}

/// The next step after a lost race, pauses included ([`after_lost_race`]).
async fn after_a_lost_race(
    lake: &Lake,
    own: &[lost_race::OwnChange],
    announcing: &mut Announcing,
    retry: &mut Retrying,
) -> LostRace {
    match after_lost_race(lake, own, announcing).await {
        AfterLostRace::Done => {
            // Carried by another writer, which may not have read the announcements.
            forget_announced(lake, announcing, Vec::new()).await;
            LostRace::Done
        }
        AfterLostRace::Write(current, wanted, settled) => LostRace::Write(current, wanted, settled),
        AfterLostRace::Rebuild => LostRace::Rebuild,
        AfterLostRace::Unread => {
            retry.backoff.wait().await;
            LostRace::Again
        }
        AfterLostRace::Wait => {
            retry.wait_for_a_write().await;
            LostRace::Again
        }
    }
}

/// Deletes the announcements the `refs.json` just written carries, and this push's own: a
/// file left behind (the delete failed, the push was killed) is carried and deleted by the
/// next push that meets a race.
async fn forget_announced(lake: &Lake, announcing: &Announcing, mut settled: Vec<String>) {
    settled.extend(announcing.own_paths().iter().cloned());
    settled.sort();
    settled.dedup();
    if let Err(e) = lake.forget_announced(&settled).await {
        if crate::trace::enabled() {
            crate::trace::line(&format!("push: announcements left in the lake: {e}"));
        }
    }
}

/// The warning for a store that refuses every compare-and-swap on a token that never changes.
fn if_match_ignored(lake: &Lake) -> String {
    format!(
        "refs.json of lake '{}' was refused {SAME_TOKEN_REFUSALS} times on its current ETag, \
         which never changed: the store does not honour If-Match (git-remote-fdl doctor shows \
         its checks); the refs are written, refs.json is not",
        lake.name()
    )
}

/// How the attempts go on after a write that did not land.
struct Retrying {
    backoff: Backoff,
    /// Pauses after the store's "slow down", longer than after a race.
    throttled: Backoff,
    refused: Refusals,
    /// The next attempt applies this push's changes to the `refs.json` that won.
    reapply_next: bool,
    /// After a lost race the refs are listed again rather than this push's changes applied.
    relist: bool,
    /// How long the last write of `refs.json` took to be answered.
    write_took: Duration,
}

impl Retrying {
    fn new(relist: bool) -> Retrying {
        Retrying {
            backoff: Backoff::new(Duration::from_millis(5), Duration::from_millis(200))
                .with_jitter(Duration::from_millis(20)),
            throttled: crate::store::throttle::backoff(),
            refused: Refusals::default(),
            reapply_next: false,
            relist,
            write_took: Duration::ZERO,
        }
    }

    /// The pause while another racer writes `refs.json`: about two of this push's last write,
    /// from 20 ms to a second.
    async fn wait_for_a_write(&mut self) {
        let pause = (2 * self.write_took).clamp(Duration::from_millis(20), Duration::from_secs(1));
        tokio::time::sleep(pause).await;
    }

    /// After `error` on a write of `mode`: a warning to give up with, or `None` once the pause
    /// is over and the next attempt may go.
    async fn after(&mut self, lake: &Lake, error: WriteError, mode: &WriteMode) -> Option<String> {
        match error {
            WriteError::Conflict if self.refused.again(mode) >= SAME_TOKEN_REFUSALS => {
                Some(if_match_ignored(lake))
            }
            WriteError::Conflict => {
                self.reapply_next = !self.relist;
                self.backoff.wait().await;
                None
            }
            // Not written: a store's "slow down" (GCS takes one write a second to one object,
            // S3 may answer 503 to writes at once on one key) is a race lost, after a pause.
            WriteError::Store(e) if e.is_throttled() => {
                self.reapply_next = !self.relist;
                self.throttled.wait().await;
                None
            }
            WriteError::Refused(e) | WriteError::Store(e) => Some(not_updated(lake, &e)),
        }
    }
}

/// Compare-and-swaps refused one after the other on the same token.
#[derive(Default)]
struct Refusals {
    token: Option<Token>,
    in_a_row: u32,
}

impl Refusals {
    /// Counts a refusal of `mode`; how many in a row were on its token.
    fn again(&mut self, mode: &WriteMode) -> u32 {
        let WriteMode::Update(t) = mode else {
            self.in_a_row = 0;
            return 0;
        };
        if self.token.as_ref() == Some(t) {
            self.in_a_row += 1;
        } else {
            self.token = Some(t.clone());
            self.in_a_row = 1;
        }
        self.in_a_row
    }
}

/// The first attempt: refs.json as listed and what to write in its place, unless refs.json
/// must be read again first (`Some(None)`); `None` when nothing is written (the listing got no
/// token for refs.json).
fn first_attempt(
    lake: &Lake,
    listing: &Listing,
    changed: &[(String, Option<VersionId>)],
    uncertain: bool,
    prepared: Option<Prepared>,
) -> Option<Option<(Current, Bytes)>> {
    let snapshot = listing.refs_json.as_ref()?;
    let prepared = match prepared.filter(|p| p.changes == changed) {
        Some(p) => p,
        None => prepare(&Basis::of(listing, lake), changed.to_vec())?,
    };
    Some(match (uncertain, prepared.wanted) {
        (false, Some(wanted)) => {
            let listed = snapshot.as_ref();
            Some((listed.map(|v| (v.bytes.clone(), v.token.clone())), wanted))
        }
        _ => None,
    })
}

/// The warning when refs.json could not be written, though the refs were.
fn not_updated(lake: &Lake, e: &crate::store::StoreError) -> String {
    let what = match e.hint() {
        // A lock left by a killed push stays until someone removes it.
        Some(hint) => format!("; {hint}"),
        None => "; the next push will repair it".to_string(),
    };
    format!(
        "refs.json of lake '{}' was not updated ({e}); the refs are written{what}",
        lake.name()
    )
}

/// Whether `refs.json` (its bytes; `None`: there is none) names exactly the branches and tags
/// the ref files held when Git listed them. Any difference may be a ref write that finished
/// between the two reads, which a rewrite from the listing would undo. Entries of `broken`
/// ref files (passed over by the listing, kept by [`render`]) are left out of the comparison.
fn agrees(refs_json: Option<&[u8]>, listed: &[(String, VersionId)], broken: &[String]) -> bool {
    let named: Option<HashMap<String, String>> = match refs_json {
        None => Some(HashMap::new()),
        Some(raw) => parse_refs_json(raw).ok().map(|pairs| {
            pairs
                .into_iter()
                .filter(|(n, _)| n.starts_with("refs/heads/") || n.starts_with("refs/tags/"))
                .filter(|(n, _)| !broken.contains(n))
                .map(|(n, v)| (n, v.trim().to_ascii_lowercase()))
                .collect()
        }),
    };
    named.is_some_and(|named| {
        named.len() == listed.len()
            && listed
                .iter()
                .all(|(n, v)| named.get(n).is_some_and(|x| x == v.as_str()))
    })
}

fn listed_plus_changes(
    listed: &[(String, VersionId)],
    changed: &[(String, Option<VersionId>)],
) -> HashMap<String, VersionId> {
    let mut refs: HashMap<String, VersionId> = listed.iter().cloned().collect();
    for (name, v) in changed {
        match v {
            Some(v) => refs.insert(name.clone(), v.clone()),
            None => refs.remove(name),
        };
    }
    refs
}

/// The ref files as this push last knew them (name -> ETag and version): the listing's, with
/// the refs this push changed in place of theirs. A ref changed without a known ETag is left
/// out, and so read again.
fn ref_files_seen(
    listing: &Listing,
    changed: &[(String, Option<VersionId>)],
    written: &[(String, String, VersionId)],
) -> HashMap<String, (String, VersionId)> {
    let mut seen = listing.ref_files_seen();
    for (name, _) in changed {
        seen.remove(name);
    }
    for (name, e_tag, version) in written {
        seen.insert(name.clone(), (e_tag.clone(), version.clone()));
    }
    seen
}

/// `refs.json`'s token first (unless `read_before`), then the ref files: a write conditional
/// on that token then holds every ref write that finished before it. The refs are listed again
/// (in ranges side by side, split at the names in `seen`) and only the files whose ETag is not
/// the one `seen` holds are read: a thousand refs cost two round trips, not a read each. `seen`
/// learns what was read, for the next attempt. `None` if either read failed.
async fn read_state(
    lake: &Lake,
    read_before: Option<Current>,
    seen: &mut HashMap<String, (String, VersionId)>,
) -> Option<State> {
    let current = match read_before {
        Some(current) => current,
        None => read_current(lake).await?,
    };
    let RefsSeen { refs, remember } = lake.refs_remembered(seen).await.ok()?;
    if let Some(learned) = remember {
        *seen = learned;
    }
    Some(State {
        current,
        refs: refs.into_iter().map(|(n, v, _)| (n, v)).collect(),
    })
}
