//! Rewriting `refs.json` after a push so that it equals the ref files: a conditional write;
//! when another writer changed it meanwhile, this push's own changes applied to theirs and
//! written again.

use std::collections::HashMap;
use std::time::Duration;

use bytes::Bytes;

use crate::backoff::Backoff;
use crate::lake::refs_json::{parse_refs_json, render_refs_json};
use crate::lake::{check_ref_name, Lake, RefsSeen, VersionId};
use crate::remote::{Listing, Remote};
use crate::store::{Token, WriteError, WriteMode};

/// How many times `refs.json` is re-read and rewritten when other writers keep changing it.
const ATTEMPTS: u32 = 100;

/// Up to this many refs, a push that lost the race for `refs.json` lists them again rather
/// than apply its own changes to the winner's. Measured (benches/writers.rs, 32 tag pushes at
/// once on SeaweedFS 20 ms away, 2 cores): on 100 and on 5,000 tags relisting gave the lower
/// slowest push and CPU (5,000: 11.7 to 19.7 s, 2.1x to 2.8x a lone push's CPU, in three runs;
/// own changes applied: 12.0 to 18.1 s, 4.4x to 6.8x, in four), applying them half the
/// requests (about 33 a push, not 60 to 67): each attempt parses and renders all of refs.json.
const RELIST_UP_TO: usize = 5_000;

/// After this many refusals in a row of a compare-and-swap on one unchanged token, the store
/// does not honour `If-Match` (a racing writer would have changed the token).
const SAME_TOKEN_REFUSALS: u32 = 10;

/// `refs.json` as read before the refs are listed again (`None`: there is none).
pub(super) type Current = Option<(Bytes, Token)>;

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

/// `refs.json` with its token, read now: beside the ref writes when the first attempt cannot
/// come from the listing, since a write on this token needs only that the refs are listed
/// after it, which they are once the writes are over. `None` if the read failed.
pub(super) async fn read_current(lake: &Lake) -> Option<Current> {
    let current = lake.refs_json_versioned().await.ok()?;
    Some(current.map(|v| (v.bytes, v.token)))
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
/// push's changes are applied to the `refs.json` that won ([`reapply`]). Returns the
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
    // A loser lists the refs again up to RELIST_UP_TO refs: it then writes every writer's
    // change it finds, and the others find theirs carried (few rounds for many writers). On
    // more refs that costs each loser R/1000 pages a round, and it applies its own changes.
    let relist = uncertain || listing.refs.len() <= RELIST_UP_TO;
    let mut retry = Retrying::new(relist);
    // Made only if refs.json must be read again: most pushes write it at the first attempt.
    let mut seen = None;
    // After a lost race on more refs, this push's own changes are applied to the winner's
    // refs.json, which listed the refs itself: the refs are not listed again (W writers on R
    // refs would cost W² x R/1000 pages). Not after a write of unknown outcome.
    let own = own_changes(listing, changed);
    for attempt in 1..=ATTEMPTS {
        let reapplied = match first.is_none() && retry.reapply_next {
            true => match after_lost_race(lake, &own).await {
                AfterLostRace::Done => return (attempt - 1, None),
                AfterLostRace::Write(current, wanted) => Some((current, wanted)),
                AfterLostRace::Rebuild => None,
                AfterLostRace::Unread => {
                    retry.backoff.wait().await;
                    continue;
                }
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
        if let Err(e) = lake.write_refs_json(wanted, &mode).await {
            match retry.after(lake, e, &mode).await {
                Some(warning) => return (attempt, Some(warning)),
                None => continue,
            }
        }
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

/// The warning for a store that refuses every compare-and-swap on a token that never changes.
fn if_match_ignored(lake: &Lake) -> String {
    format!(
        "refs.json of lake '{}' was refused {SAME_TOKEN_REFUSALS} times on its current ETag, \
         which never changed: the store does not honour If-Match (git-remote-fdl doctor shows \
         its checks); the refs are written, refs.json is not",
        lake.name()
    )
}

/// What to write after a lost race for `refs.json`.
enum AfterLostRace {
    /// The winner's `refs.json` carries this push's changes, or newer ones.
    Done,
    /// The winner's `refs.json` (bytes and token) and it with this push's changes.
    Write(Current, Bytes),
    /// The winner's `refs.json` cannot be read as refs: rebuilt from the ref files.
    Rebuild,
    /// `refs.json` could not be read: after a pause, again.
    Unread,
}

async fn after_lost_race(lake: &Lake, own: &[OwnChange]) -> AfterLostRace {
    let Some(current) = read_current(lake).await else {
        return AfterLostRace::Unread;
    };
    match reapply(current.as_ref().map(|(b, _)| &b[..]), own) {
        Ok(None) => AfterLostRace::Done,
        Ok(Some(wanted)) => AfterLostRace::Write(current, wanted),
        Err(Unreadable) => AfterLostRace::Rebuild,
    }
}

/// Each ref this push changed: what its file held when Git listed it (`None`: no file), and
/// what the push wrote there (`None`: deleted).
type OwnChange = (String, Option<VersionId>, Option<VersionId>);

fn own_changes(listing: &Listing, changed: &[(String, Option<VersionId>)]) -> Vec<OwnChange> {
    let listed: HashMap<&str, &VersionId> =
        listing.refs.iter().map(|(n, v)| (n.as_str(), v)).collect();
    changed
        .iter()
        .map(|(name, new)| {
            (
                name.clone(),
                listed.get(name.as_str()).copied().cloned(),
                new.clone(),
            )
        })
        .collect()
}

/// A `refs.json` whose refs cannot be read: its refs are then rebuilt from the ref files.
#[derive(Debug)]
struct Unreadable;

/// This push's changes applied to `current`, another writer's newer `refs.json`: a ref is set
/// to what this push wrote where `current` still names what its file held before (nothing,
/// for a ref the push made), and left as it is where it names anything else, since the store
/// took this push's conditional write on the file Git listed, so a different value in
/// `current` was written after it. `None`: `current` already carries every change, or newer
/// values (this push has nothing to write). Every other entry is kept as `current` has it.
fn reapply(current: Option<&[u8]>, own: &[OwnChange]) -> Result<Option<Bytes>, Unreadable> {
    let raw = current.ok_or(Unreadable)?;
    let named = parse_refs_json(raw).map_err(|_| Unreadable)?;
    let mut refs: HashMap<String, VersionId> = HashMap::with_capacity(named.len());
    for (name, version) in named {
        if !(name.starts_with("refs/heads/") || name.starts_with("refs/tags/")) {
            continue;
        }
        let version = VersionId::parse(version.trim()).map_err(|_| Unreadable)?;
        refs.insert(name, version);
    }
    let mut changed = false;
    for (name, before, after) in own {
        if refs.get(name) != before.as_ref() || refs.get(name) == after.as_ref() {
            continue;
        }
        changed = true;
        match after {
            Some(v) => refs.insert(name.clone(), v.clone()),
            None => refs.remove(name),
        };
    }
    Ok(changed.then(|| render(Some(raw), refs, &[])))
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
        }
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

/// The `refs.json` that names `refs` (those Git can hold), keeping `current`'s other entries,
/// and the entries of `broken` ref files as they are (a ref file that holds no version is no
/// reason to drop what refs.json last said of it).
fn render(
    current: Option<&[u8]>,
    mut refs: HashMap<String, VersionId>,
    broken: &[String],
) -> Bytes {
    if let (false, Some(Ok(named))) = (broken.is_empty(), current.map(parse_refs_json)) {
        for (name, v) in named {
            if broken.contains(&name) && !refs.contains_key(&name) {
                if let Ok(v) = VersionId::parse(v.trim()) {
                    refs.insert(name, v);
                }
            }
        }
    }
    let mut pairs: Vec<(String, VersionId)> = refs
        .into_iter()
        .filter(|(n, _)| check_ref_name(n).is_ok())
        .collect();
    pairs.sort();
    Bytes::from(render_refs_json(current, &pairs))
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

#[cfg(test)]
mod tests {
    use super::*;

    fn v(n: u64) -> VersionId {
        VersionId::parse(&format!("0190f3a2-7b4c-7d2e-8f10-{n:012}")).unwrap()
    }

    fn refs_of(raw: &[u8]) -> HashMap<String, String> {
        parse_refs_json(raw).unwrap().into_iter().collect()
    }

    #[test]
    fn a_lost_race_applies_only_this_pushs_changes_and_undoes_no_newer_one() {
        let winner = format!(
            "{{\"refs/heads/main\": \"{}\", \"refs/heads/moved\": \"{}\", \"refs/tags/theirs\": \"{}\", \"host\": {{\"x\": 1}}}}",
            v(1), v(9), v(2)
        );
        let own = vec![
            // A tag this push made: added.
            ("refs/tags/mine".to_string(), None, Some(v(3))),
            // A branch this push moved from 1 to 4: refs.json still says 1, so 4.
            ("refs/heads/main".to_string(), Some(v(1)), Some(v(4))),
            // A branch this push moved from 5 to 6, which another moved on to 9 since: kept.
            ("refs/heads/moved".to_string(), Some(v(5)), Some(v(6))),
        ];
        let out = reapply(Some(winner.as_bytes()), &own).unwrap().unwrap();
        let refs = refs_of(&out);
        assert_eq!(refs["refs/tags/mine"], v(3).as_str());
        assert_eq!(refs["refs/heads/main"], v(4).as_str());
        assert_eq!(refs["refs/heads/moved"], v(9).as_str());
        assert_eq!(refs["refs/tags/theirs"], v(2).as_str());
        assert!(
            String::from_utf8_lossy(&out).contains("\"host\""),
            "a host's entry is kept"
        );
        // A winner that already carries this push's changes, or newer ones: nothing to write.
        let carried = format!("{{\"refs/tags/mine\": \"{}\"}}", v(3));
        let mine = vec![("refs/tags/mine".to_string(), None, Some(v(3)))];
        assert!(reapply(Some(carried.as_bytes()), &mine).unwrap().is_none());
        // A branch this push deleted, still named with its old version: removed.
        let deleted = vec![("refs/heads/gone".to_string(), Some(v(7)), None)];
        let listed = format!("{{\"refs/heads/gone\": \"{}\"}}", v(7));
        let out = reapply(Some(listed.as_bytes()), &deleted).unwrap().unwrap();
        assert!(!refs_of(&out).contains_key("refs/heads/gone"));
        // What cannot be read as refs is rebuilt from the ref files instead.
        assert!(reapply(Some(b"not json"), &mine).is_err());
        assert!(reapply(None, &mine).is_err());
        let bad = "{\"refs/heads/main\": \"not a version\"}";
        assert!(reapply(Some(bad.as_bytes()), &mine).is_err());
    }
}
