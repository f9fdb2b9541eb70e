//! After a push lost the race for `refs.json`: the winner's file read again, and this push's
//! own changes applied to it, never the refs listed again (W writers on R refs would cost
//! W² x R/1000 pages). A push that made tags also announces them
//! ([`crate::lake::announced`]) and carries every tag announced by the others, so that one
//! write serves many racers and each finds its own carried, rather than each writing in turn.

use std::collections::HashMap;

use bytes::Bytes;

use super::refs_json_state::{read_current, render, Current};
use crate::lake::announced::Announced;
use crate::lake::refs_json::parse_refs_json;
use crate::lake::{Lake, VersionId};
use crate::remote::Listing;

/// How many times in a row a push leaves the write to the racer whose announcement comes
/// first, before it writes itself (that racer may have been killed).
const WAITS_AT_MOST: u32 = 3;

/// A push that made more tags than this does not announce them: a file each would cost more
/// than the rounds they save.
const ANNOUNCE_AT_MOST: usize = 16;

/// Each ref this push changed: what its file held when Git listed it (`None`: no file), and
/// what the push wrote there (`None`: deleted).
pub(super) type OwnChange = (String, Option<VersionId>, Option<VersionId>);

pub(super) fn own_changes(
    listing: &Listing,
    changed: &[(String, Option<VersionId>)],
) -> Vec<OwnChange> {
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

/// The tags this push made, and their announcements once written.
pub(super) struct Announcing {
    made: Vec<(String, VersionId)>,
    /// `None` until announced; then their paths (none if the writes failed).
    paths: Option<Vec<String>>,
    /// Times this push left the write to another racer ([`AfterLostRace::Wait`]).
    waits: u32,
}

impl Announcing {
    pub(super) fn of(own: &[OwnChange]) -> Announcing {
        let made: Vec<(String, VersionId)> = own
            .iter()
            .filter(|(name, before, _)| before.is_none() && name.starts_with("refs/tags/"))
            .filter_map(|(name, _, after)| Some((name.clone(), after.clone()?)))
            .collect();
        Announcing {
            made: if made.len() <= ANNOUNCE_AT_MOST {
                made
            } else {
                Vec::new()
            },
            paths: None,
            waits: 0,
        }
    }

    /// The announcements this push made, to delete once `refs.json` carries them.
    pub(super) fn own_paths(&self) -> &[String] {
        self.paths.as_deref().unwrap_or_default()
    }
}

/// What to write after a lost race for `refs.json`.
pub(super) enum AfterLostRace {
    /// The winner's `refs.json` carries this push's changes, or newer ones.
    Done,
    /// The winner's `refs.json` (bytes and token), it with this push's changes and the
    /// announced tags, and the announcements it settles (to delete once it is written).
    Write(Current, Bytes, Vec<String>),
    /// The winner's `refs.json` cannot be read as refs: rebuilt from the ref files.
    Rebuild,
    /// `refs.json` could not be read: after a pause, again.
    Unread,
    /// Another racer's announcement comes first among those to carry: that racer writes them
    /// all, and this push looks again once such a write is done. Racers that all wrote at
    /// once took a SeaweedFS 2 to 3 s an answer (32 racers on 100 tags).
    Wait,
}

pub(super) async fn after_lost_race(
    lake: &Lake,
    own: &[OwnChange],
    announcing: &mut Announcing,
) -> AfterLostRace {
    // The first time, this push's tags are announced while refs.json is read: no round trip.
    let first = announcing.paths.is_none() && !announcing.made.is_empty();
    let announce = async {
        match first {
            true => Some(lake.announce_tags(&announcing.made).await),
            false => None,
        }
    };
    let (current, announced) = futures::join!(read_current(lake), announce);
    if let Some(result) = announced {
        announcing.paths = Some(result.unwrap_or_default());
    }
    let Some(current) = current else {
        return AfterLostRace::Unread;
    };
    let raw = current.as_ref().map(|(b, _)| &b[..]);
    let Ok(refs) = refs_of(raw) else {
        return AfterLostRace::Rebuild;
    };
    if carried(&refs, own) {
        return AfterLostRace::Done;
    }
    // A push that made tags carries the others' too: a listing of one page.
    let others = match announcing.made.is_empty() {
        true => Vec::new(),
        false => lake.announced_tags().await.unwrap_or_default(),
    };
    if leaves_the_write(announcing, &refs, &others) {
        announcing.waits += 1;
        return AfterLostRace::Wait;
    }
    announcing.waits = 0;
    let (wanted, settled) = reapply(raw, refs, own, &others);
    AfterLostRace::Write(current, wanted, settled)
}

/// Whether this push leaves the next write to the racer whose announcement comes first among
/// those `refs` does not carry yet, this push's among them.
fn leaves_the_write(
    announcing: &Announcing,
    refs: &HashMap<String, VersionId>,
    announced: &[Announced],
) -> bool {
    let mine = announcing.own_paths();
    let to_carry = announced.iter().filter(|a| !refs.contains_key(&a.name));
    let first = to_carry.map(|a| &a.path).min();
    let listed_mine = announced.iter().any(|a| mine.contains(&a.path));
    announcing.waits < WAITS_AT_MOST && listed_mine && first.is_some_and(|p| !mine.contains(p))
}

/// A `refs.json` whose refs cannot be read: its refs are then rebuilt from the ref files.
#[derive(Debug)]
pub(super) struct Unreadable;

/// The branches and tags `refs.json` names (a host's other entries are kept by [`render`]).
fn refs_of(raw: Option<&[u8]>) -> Result<HashMap<String, VersionId>, Unreadable> {
    let named = parse_refs_json(raw.ok_or(Unreadable)?).map_err(|_| Unreadable)?;
    let mut refs = HashMap::with_capacity(named.len());
    for (name, version) in named {
        if !(name.starts_with("refs/heads/") || name.starts_with("refs/tags/")) {
            continue;
        }
        let version = VersionId::parse(version.trim()).map_err(|_| Unreadable)?;
        refs.insert(name, version);
    }
    Ok(refs)
}

/// Whether `refs` carries every change of `own`, or newer values: a ref is this push's to set
/// only where `refs` still names what its file held before (nothing, for a ref the push
/// made), since the store took this push's conditional write on the file Git listed, so a
/// different value was written after it.
fn carried(refs: &HashMap<String, VersionId>, own: &[OwnChange]) -> bool {
    !own.iter().any(|change| still_to_make(refs, change))
}

/// Whether `refs` still names what the ref's file held before this push's change, and not
/// what the change made it.
fn still_to_make(refs: &HashMap<String, VersionId>, (name, before, after): &OwnChange) -> bool {
    refs.get(name) == before.as_ref() && refs.get(name) != after.as_ref()
}

/// This push's changes applied to `refs` (read from `raw`, another writer's newer
/// `refs.json`), and every tag `announced` that it does not name; every other entry kept as
/// `raw` has it. Also the announcements it settles: those it carries, and those of a tag it
/// names at another version (a tag never moves: the announcement is stale).
fn reapply(
    raw: Option<&[u8]>,
    mut refs: HashMap<String, VersionId>,
    own: &[OwnChange],
    announced: &[Announced],
) -> (Bytes, Vec<String>) {
    for change in own {
        if !still_to_make(&refs, change) {
            continue;
        }
        let (name, _, after) = change;
        match after {
            Some(v) => refs.insert(name.clone(), v.clone()),
            None => refs.remove(name),
        };
    }
    let mut settled = Vec::new();
    for a in announced {
        refs.entry(a.name.clone())
            .or_insert_with(|| a.version.clone());
        settled.push(a.path.clone());
    }
    (render(raw, refs, &[]), settled)
}

/// The attempt after a lost race, as [`after_lost_race`] reads it for a test: what it writes
/// (`None`: this push's changes are carried).
#[cfg(test)]
fn reapplied(raw: &[u8], own: &[OwnChange], announced: &[Announced]) -> Option<Bytes> {
    let refs = refs_of(Some(raw)).ok()?;
    (!carried(&refs, own)).then(|| reapply(Some(raw), refs, own, announced).0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(n: u64) -> VersionId {
        VersionId::parse(&format!("0190f3a2-7b4c-7d2e-8f10-{n:012}")).unwrap()
    }

    fn refs_in(raw: &[u8]) -> HashMap<String, String> {
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
        let out = reapplied(winner.as_bytes(), &own, &[]).unwrap();
        let refs = refs_in(&out);
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
        assert!(reapplied(carried.as_bytes(), &mine, &[]).is_none());
        // A branch this push deleted, still named with its old version: removed.
        let deleted = vec![("refs/heads/gone".to_string(), Some(v(7)), None)];
        let listed = format!("{{\"refs/heads/gone\": \"{}\"}}", v(7));
        let out = reapplied(listed.as_bytes(), &deleted, &[]).unwrap();
        assert!(!refs_in(&out).contains_key("refs/heads/gone"));
        // What cannot be read as refs is rebuilt from the ref files instead.
        assert!(refs_of(Some(b"not json")).is_err());
        assert!(refs_of(None).is_err());
        let bad = "{\"refs/heads/main\": \"not a version\"}";
        assert!(refs_of(Some(bad.as_bytes())).is_err());
    }

    #[test]
    fn a_lost_race_carries_the_tags_others_announced_and_never_moves_one() {
        let winner = format!(
            "{{\"refs/tags/theirs\": \"{}\", \"refs/tags/known\": \"{}\"}}",
            v(2),
            v(5)
        );
        let announced = |name: &str, n: u64| Announced {
            path: crate::lake::announced::announcement_path(name, &v(n)),
            name: name.to_string(),
            version: v(n),
        };
        let others = [
            announced("refs/tags/other", 4),
            // Named already at its version (carried by an earlier write), or at another (a
            // stale announcement): left as refs.json has it, and settled either way.
            announced("refs/tags/theirs", 2),
            announced("refs/tags/known", 6),
        ];
        let mine = vec![("refs/tags/mine".to_string(), None, Some(v(3)))];
        let refs = refs_of(Some(winner.as_bytes())).unwrap();
        let (out, settled) = reapply(Some(winner.as_bytes()), refs, &mine, &others);
        let refs = refs_in(&out);
        assert_eq!(refs["refs/tags/mine"], v(3).as_str());
        assert_eq!(refs["refs/tags/other"], v(4).as_str());
        assert_eq!(refs["refs/tags/theirs"], v(2).as_str());
        assert_eq!(refs["refs/tags/known"], v(5).as_str());
        assert_eq!(settled.len(), 3);
        // Only a made tag is announced; a push of more tags than a few announces none.
        let moved = ("refs/heads/main".to_string(), Some(v(1)), Some(v(2)));
        assert_eq!(Announcing::of(&[moved, mine[0].clone()]).made.len(), 1);
        let many: Vec<OwnChange> = (0..=ANNOUNCE_AT_MOST as u64)
            .map(|i| (format!("refs/tags/t{i}"), None, Some(v(i))))
            .collect();
        assert!(Announcing::of(&many).made.is_empty());
    }
}
