//! Checking each pushed ref before anything is written: its name, that the pushed commit is a
//! version of this lake, fast-forward, the lease, and clashes with other refs.

use std::collections::HashSet;

use super::updates::{deleted_refs, Action, Planned, Plans, PushOptions, RefUpdate, Rejection};
use crate::lake::{
    check_ref_name, check_writable_ref, names::RefNameProblem, LakeError, VersionId,
};
use crate::mapping::{self, ObjectId};
use crate::remote::{Listing, Remote, RemoteError};

/// Plans every ref of a batch, in Git's order.
pub(super) async fn plan_all(
    remote: &mut Remote,
    listing: &Listing,
    updates: &[RefUpdate],
    opts: &PushOptions,
) -> Plans {
    let deleted = deleted_refs(updates);
    let mut planned = Vec::with_capacity(updates.len());
    for update in updates {
        let clash = updates.iter().find(|other| {
            !update.src.is_empty()
                && !other.src.is_empty()
                && (other.dst.starts_with(&format!("{}/", update.dst))
                    || update.dst.starts_with(&format!("{}/", other.dst)))
        });
        planned.push(match clash {
            Some(other) => Err(Rejection::refused(format!(
                "cannot create both {} and {}",
                update.dst, other.dst
            ))),
            None => plan(remote, listing, &deleted, update, opts).await,
        });
    }
    planned
}

/// What Git listed for one ref.
struct ListedRef {
    version: Option<VersionId>,
    commit: Option<ObjectId>,
}

/// Checks one ref.
async fn plan(
    remote: &mut Remote,
    listing: &Listing,
    deleted: &HashSet<String>,
    update: &RefUpdate,
    opts: &PushOptions,
) -> Result<Planned, Rejection> {
    let dst = update.dst.as_str();
    check_name(update)?;
    let version = listing
        .refs
        .iter()
        .find(|(n, _)| n == dst)
        .map(|(_, v)| v.clone());
    let listed = ListedRef {
        commit: version.as_ref().map(|v| listing.commits[v]),
        version,
    };
    if listed.version.is_none() {
        check_room(listing, deleted, dst)?;
        // A ref file the listing passed over as broken is there all the same: Git took it
        // for a new ref, but nothing can be written on condition over what no one listed.
        if remote.lake().broken_refs().iter().any(|b| b == dst) {
            return Err(Rejection::refused(
                "the lake's file for this ref holds no version (see the warning): \
                 repair or remove it in the lake first",
            ));
        }
    }
    let lease = opts.cas.iter().find(|(r, _)| r == dst).map(|(_, v)| v);
    if let Some(expected) = lease {
        check_lease(expected, listed.commit.as_ref())?;
    }
    let planned = |action: Action| Planned {
        dst: dst.to_string(),
        action,
        old_version: listed.version.clone(),
        leased: lease.is_some(),
        forced_by_user: update.force,
    };
    let old_token = listing.token(dst).cloned();
    if update.src.is_empty() {
        return plan_delete(listing, dst, old_token).map(planned);
    }
    let version = pushed_version(remote, &update.src, dst).await?;
    if Some(&version) == listed.version.as_ref() {
        return Ok(planned(Action::UpToDate));
    }
    if dst.starts_with("refs/tags/") {
        // Git itself refuses to move a tag unless forced; forced, it is told why not.
        match (listed.version.is_some(), update.force || lease.is_some()) {
            (true, true) => return Err(Rejection::refused("tags in a lake never move")),
            (true, false) => return Err(Rejection::AlreadyExists),
            (false, _) => {}
        }
        return Ok(planned(Action::Create { version }));
    }
    let (Some(old_commit), Some(old)) = (listed.commit, old_token) else {
        return Ok(planned(Action::Create { version }));
    };
    let forced = is_forced(
        remote,
        &version,
        &old_commit,
        update.force || lease.is_some(),
    )
    .await?;
    Ok(planned(Action::Update {
        version,
        old,
        forced,
    }))
}

/// A ref that exists may be deleted whatever its name; new names must be writable ones.
fn check_name(update: &RefUpdate) -> Result<(), Rejection> {
    let dst = update.dst.as_str();
    let checked = if update.src.is_empty() {
        check_ref_name(dst)
    } else {
        check_writable_ref(dst)
    };
    match checked {
        Ok(()) => Ok(()),
        Err(RefNameProblem::NotHeadOrTag) => Err(Rejection::refused(format!(
            "refusing to push to {dst}: a lake holds only refs/heads/* and refs/tags/*"
        ))),
        Err(problem) => Err(Rejection::refused(format!(
            "refusing to push to {dst}: {problem}"
        ))),
    }
}

/// A folder cannot be both a ref and hold refs: refuse what Git itself could not store.
fn check_room(listing: &Listing, deleted: &HashSet<String>, dst: &str) -> Result<(), Rejection> {
    let conflict = listing
        .refs
        .iter()
        .filter(|(n, _)| !deleted.contains(n))
        .find(|(n, _)| is_below(dst, n) || is_below(n, dst));
    match conflict {
        Some((other, _)) => Err(Rejection::refused(format!(
            "cannot create {dst}: {other} exists in the lake"
        ))),
        None => Ok(()),
    }
}

/// Whether ref `name` is in the folder `other` (`refs/tags/a/b` in `refs/tags/a`).
fn is_below(name: &str, other: &str) -> bool {
    name.strip_prefix(other)
        .is_some_and(|rest| rest.starts_with('/'))
}

/// `--force-with-lease`: the ref must hold what the user expects.
fn check_lease(expected: &str, listed: Option<&ObjectId>) -> Result<(), Rejection> {
    // Git sends the all-zero ID (or nothing) for "the ref must not exist yet".
    let expects_absent = expected.is_empty() || expected.bytes().all(|b| b == b'0');
    let matches = match listed {
        None => expects_absent,
        Some(c) => ObjectId::from_hex(expected).as_ref() == Some(c),
    };
    if matches {
        Ok(())
    } else {
        Err(Rejection::StaleInfo)
    }
}

fn plan_delete(
    listing: &Listing,
    dst: &str,
    old_token: Option<crate::store::Token>,
) -> Result<Action, Rejection> {
    if dst.starts_with("refs/tags/") {
        return Err(Rejection::refused("tags in a lake are never deleted"));
    }
    let Some(old) = old_token else {
        return Err(Rejection::refused("remote ref does not exist"));
    };
    if listing.head.as_deref() == Some(dst) {
        return Err(Rejection::refused(
            "deletion of the current branch prohibited (the lake's HEAD names it)",
        ));
    }
    Ok(Action::Delete { old })
}

/// Whether moving a branch from `old_commit` to `version` is a forced update; refused when it
/// is one and the user did not force it. Checked here too: Git sends refs it marked
/// `fetch first` and `needs force`.
async fn is_forced(
    remote: &mut Remote,
    version: &VersionId,
    old_commit: &ObjectId,
    may_force: bool,
) -> Result<bool, Rejection> {
    let new_commit = remote
        .commit_of(version, "the pushed commit")
        .await
        .map_err(|e| Rejection::refused(e.to_string()))?;
    let repo = remote
        .repo()
        .ok_or_else(|| Rejection::refused("no local repository"))?;
    let forced = if !repo.has(old_commit) {
        if !may_force {
            return Err(Rejection::FetchFirst);
        }
        true
    } else {
        !repo.is_ancestor(old_commit, &new_commit)
    };
    if forced && !may_force {
        return Err(Rejection::NonFastForward);
    }
    Ok(forced)
}

/// The version a pushed source names, checked to be exactly that version's commit in this lake.
async fn pushed_version(remote: &mut Remote, src: &str, dst: &str) -> Result<VersionId, Rejection> {
    let repo = remote
        .repo()
        .ok_or_else(|| Rejection::refused("no local repository to push from"))?;
    let id = repo.resolve(src).ok_or_else(|| {
        Rejection::refused(format!("cannot resolve '{src}' in the local repository"))
    })?;
    let short = &id.to_hex()[..12];
    let (kind, data) = repo
        .object(&id)
        .ok_or_else(|| Rejection::refused(format!("{short} is not in the local repository")))?;
    check_kind(kind, short, dst)?;
    let version = mapping::commit_message(&data)
        .and_then(mapping::version_of_message)
        .ok_or_else(|| {
            Rejection::refused(format!(
                "{short} is not a version of this lake (no FDL-Version trailer): a lake gains versions \
                 only through its writers; push a commit fetched from the lake"
            ))
        })?;
    let named_by = format!("commit {short}");
    match remote.commit_of(&version, &named_by).await {
        Ok(c) if c == id => Ok(version),
        Ok(c) => Err(Rejection::refused(format!(
            "{short} names version {version}, whose commit in this lake is {}: it was made or amended \
             locally, or comes from another lake",
            &c.to_hex()[..12]
        ))),
        Err(RemoteError::Lake(LakeError::MissingVersion { .. })) => Err(Rejection::refused(
            format!("{short} names version {version}, which this lake does not hold"),
        )),
        Err(e) => Err(Rejection::refused(e.to_string())),
    }
}

/// Only commits can be versions.
fn check_kind(kind: gix::object::Kind, short: &str, dst: &str) -> Result<(), Rejection> {
    match kind {
        gix::object::Kind::Commit => Ok(()),
        gix::object::Kind::Tag => {
            let short_dst = dst.rsplit('/').next().unwrap_or(dst);
            Err(Rejection::refused(format!(
                "{short} is an annotated tag, and lake tags carry no message or signature; \
                 push the commit it points at: git push <remote> {short_dst}^{{commit}}:{dst}"
            )))
        }
        other => Err(Rejection::refused(format!(
            "{short} is a {other}; only commits that are versions of this lake can be pushed"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::is_below;

    #[test]
    fn a_ref_is_below_another_only_past_a_slash() {
        assert!(is_below("refs/tags/a/b", "refs/tags/a"));
        assert!(is_below("refs/tags/a/b/c", "refs/tags/a"));
        assert!(!is_below("refs/tags/ab", "refs/tags/a"));
        assert!(!is_below("refs/tags/a", "refs/tags/a"));
        assert!(!is_below("refs/tags/a", "refs/tags/a/b"));
    }
}
