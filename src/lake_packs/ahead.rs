//! What a run of `pack` packs, decided from the records and a listing before any version is
//! read: the packs it merges (geometric, factor 2), and how little of the history its clone
//! must hold for that: the refs whose versions no kept pack holds, to a depth of as many
//! versions as it packs. The packs it keeps are never downloaded, and their versions never
//! read: their records' commits stand for them, as a shallow clone takes them
//! (`remote/claims_listing.rs`), once the listing shows every one of their versions unchanged
//! since it was packed.

use std::collections::{HashMap, HashSet};

use super::Record;
use crate::lake::git_packs::VersionFileEtags;
use crate::lake::VersionId;
use crate::mapping::ObjectId;

/// A record's pack, with its versions and their commits.
pub(super) type Claimed = (String, Vec<(VersionId, ObjectId)>);

/// A run planned before its clone.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Ahead {
    /// The packs merged into the run's pack.
    pub merged: HashSet<String>,
    /// The refs whose versions the run packs (none: nothing to pack, no clone).
    pub refs: Vec<String>,
    /// How deep the clone reads below them: each version packed is at most this far from a
    /// ref, since the versions of the packs kept are closed under parents.
    pub depth: usize,
}

/// Whether every version of `record` is listed with the ETags it was packed with: where one
/// was rewritten or is gone, a run reads the whole history (which sets the record aside).
pub(super) fn unchanged_since_packed(
    record: &Record,
    listed: &HashMap<VersionId, VersionFileEtags>,
) -> bool {
    record.versions.iter().all(|v| {
        listed.get(&v.id).is_some_and(|l| {
            l.version_json.as_ref() == Some(&v.version_json) && l.dataset_json == v.dataset_json
        })
    })
}

/// The run over `records` (in the order they were made, each unchanged since packed) given
/// the listing `listed` and the lake's `refs`. The versions no pack holds are counted from the
/// listing, which also shows versions no ref reaches (a push that lost its race): an upper
/// bound, so the merge planned is the most the run merges (`run.rs` merges by what its clone
/// reaches). Where no ref holds an unpacked version, nothing new is reachable (the packs'
/// versions are closed under parents): no ref is read, nothing merged.
pub(super) fn plan(
    records: &[Claimed],
    listed: &HashMap<VersionId, VersionFileEtags>,
    refs: &[(String, VersionId)],
) -> Ahead {
    let claimed: HashSet<&VersionId> = records
        .iter()
        .flat_map(|(_, r)| r.iter().map(|(v, _)| v))
        .collect();
    let new = listed
        .iter()
        .filter(|(v, f)| f.version_json.is_some() && !claimed.contains(v))
        .count();
    if refs.iter().all(|(_, v)| claimed.contains(v)) {
        return Ahead {
            merged: HashSet::new(),
            refs: Vec::new(),
            depth: 1,
        };
    }
    let sizes: Vec<(String, usize)> = records.iter().map(|(p, r)| (p.clone(), r.len())).collect();
    let merged = geometric_merge(&sizes, new);
    let remerged: HashSet<&VersionId> = records
        .iter()
        .filter(|(p, _)| merged.contains(p))
        .flat_map(|(_, r)| r.iter().map(|(v, _)| v))
        .collect();
    let packs_it = |v: &VersionId| !claimed.contains(v) || remerged.contains(v);
    let refs = refs
        .iter()
        .filter(|(_, v)| packs_it(v))
        .map(|(name, _)| name.clone())
        .collect();
    Ahead {
        merged,
        refs,
        depth: new + remerged.len() + 1,
    }
}

/// The packs merged into a run's new pack of `new` versions: the newest of `packs` (in the
/// order they were made, each with its number of versions) while each holds fewer than twice
/// the versions of the new pack and of the packs newer than it, as Git's geometric repacking
/// (factor 2) does. Runs of a few versions each thus leave about log2(runs) packs, each
/// version rewritten about log2(runs) times, and a base pack far larger than what came since
/// is never rewritten. Only the newest are merged: every pack's versions' parents stay in it
/// or in an older pack.
pub(super) fn geometric_merge(packs: &[(String, usize)], new: usize) -> HashSet<String> {
    let mut total = new;
    let mut merged = HashSet::new();
    for (pack, versions) in packs.iter().rev() {
        if new == 0 || *versions >= 2 * total {
            break;
        }
        total += versions;
        merged.insert(pack.clone());
    }
    merged
}

#[cfg(test)]
mod tests {
    use super::super::PackedVersion;
    use super::*;

    /// Issue 48's goal, for the policy alone (versions standing for bytes): a base pack of
    /// 100,000 versions, then 300 runs of `pack` after 10 new versions each. The base is never
    /// merged, the versions written over all runs stay within 20x the 3,000 new ones, and
    /// the list stays short.
    #[test]
    fn three_hundred_small_runs_never_rewrite_the_base_and_write_each_version_a_few_times() {
        let mut packs: Vec<(String, usize)> = vec![("base".into(), 100_000)];
        let mut written = 0;
        for run in 0..300 {
            let merged = geometric_merge(&packs, 10);
            assert!(!merged.contains("base"), "run {run}");
            let mut size = 10;
            packs.retain(|(name, versions)| {
                let keep = !merged.contains(name);
                size += if keep { 0 } else { *versions };
                keep
            });
            written += size;
            packs.push((format!("run-{run}"), size));
            assert!(packs.len() <= 11, "run {run}: {} packs", packs.len());
        }
        assert!(written <= 20 * 3_000, "{written} versions written");
        assert_eq!(packs[0].0, "base");
    }

    fn id(n: u8) -> VersionId {
        VersionId::parse(&format!("0190a000-0000-7000-8000-0000000000{n:02x}")).unwrap()
    }

    fn files(tag: &str) -> VersionFileEtags {
        VersionFileEtags {
            version_json: Some(format!("\"{tag}\"")),
            ..Default::default()
        }
    }

    #[test]
    fn a_run_reads_the_refs_above_the_packs_it_keeps_as_deep_as_what_it_packs() {
        let commit = ObjectId::from_hex(&"1".repeat(40)).unwrap();
        let base: Vec<_> = (1..=8).map(|n| (id(n), commit)).collect();
        let small = vec![(id(9), commit)];
        let records = vec![("base".to_string(), base), ("small".to_string(), small)];
        let mut listed: HashMap<_, _> = (1..=11).map(|n| (id(n), files(&n.to_string()))).collect();
        let refs = vec![
            ("refs/heads/main".to_string(), id(11)),
            ("refs/tags/v1".to_string(), id(4)),
            ("refs/tags/v2".to_string(), id(9)),
        ];
        let planned = plan(&records, &listed, &refs);
        assert_eq!(planned.merged, HashSet::from(["small".to_string()]));
        assert_eq!(planned.refs, ["refs/heads/main", "refs/tags/v2"]);
        assert_eq!(planned.depth, 2 + 1 + 1);
        // Nothing new: no ref to read, nothing merged.
        listed.remove(&id(10));
        listed.remove(&id(11));
        let planned = plan(&records, &listed, &refs[1..]);
        assert!(
            planned.refs.is_empty() && planned.merged.is_empty(),
            "{planned:?}"
        );
        // Versions no ref reaches (a push that lost its race) make no run either.
        listed.insert(id(12), files("12"));
        let planned = plan(&records, &listed, &refs[1..]);
        assert!(
            planned.refs.is_empty() && planned.merged.is_empty(),
            "{planned:?}"
        );
    }

    #[test]
    fn a_record_is_unchanged_only_while_every_version_is_listed_with_its_etags() {
        let packed = |n: u8| PackedVersion {
            id: id(n),
            commit: ObjectId::from_hex(&"1".repeat(40)).unwrap(),
            version_json: format!("\"{n}\""),
            dataset_json: None,
            signature: None,
        };
        let record = Record {
            lake: Some("lake".into()),
            pack: "pack".into(),
            recorded: 2,
            versions: vec![packed(1), packed(2)],
        };
        let mut listed: HashMap<_, _> = (1..=2).map(|n| (id(n), files(&n.to_string()))).collect();
        assert!(unchanged_since_packed(&record, &listed));
        listed.get_mut(&id(2)).unwrap().dataset_json = Some("\"d\"".into());
        assert!(!unchanged_since_packed(&record, &listed));
        listed.insert(id(2), files("2 again"));
        assert!(!unchanged_since_packed(&record, &listed));
        listed.remove(&id(2));
        assert!(!unchanged_since_packed(&record, &listed));
    }
}
