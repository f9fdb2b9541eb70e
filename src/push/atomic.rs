//! `--atomic`: every ref or none. Refs are written one at a time, deletions first and a new
//! tag last; on the first failure, what was written is undone with compensating conditional
//! writes, and every ref fails. A tag is never undone: a reader or another push may have seen
//! it. So it is written last, when nothing after it can fail, and an atomic push creates at
//! most one.

use super::updates::{Action, Planned, Plans, Rejection};
use super::write::{write, Done, Written};
use crate::remote::Remote;
use crate::store::{WriteError, WriteMode};

/// Writes every planned ref (all passed their checks), or none; results in Git's order.
pub(super) async fn write_all(
    remote: &Remote,
    planned: &Plans,
    warnings: &mut Vec<String>,
) -> Vec<Written> {
    let plans: Vec<&Planned> = planned
        .iter()
        .map(|p| {
            p.as_ref()
                .expect("atomic pushes are written only when every ref passed")
        })
        .collect();
    // Deletions first, as in a plain push; the tag, which cannot be undone, last.
    let mut order: Vec<usize> = (0..plans.len()).collect();
    order.sort_by_key(|i| {
        let p = plans[*i];
        (!p.action.is_delete(), p.action.is_create_only(&p.dst))
    });
    let mut done: Vec<(Done, &Planned)> = Vec::new();
    let mut failure: Option<(usize, Rejection)> = None;
    for i in order {
        match write(remote, plans[i]).await {
            Ok(Some(d)) => done.push((d, plans[i])),
            Ok(None) => {}
            Err(why) => {
                failure = Some((i, why));
                break;
            }
        }
    }
    let Some((failed_at, why)) = failure else {
        return plans
            .iter()
            .map(|p| {
                Ok(done
                    .iter()
                    .find(|(_, q)| q.dst == p.dst)
                    .map(|(d, _)| d.clone()))
            })
            .collect();
    };
    undo(remote, &done, warnings).await;
    if matches!(why, Rejection::Unknown(_)) {
        warnings.push(format!(
            "atomic push: the write of {} may have happened (its outcome is unknown) and could not be undone; \
             check it with 'git ls-remote'",
            plans[failed_at].dst
        ));
    }
    (0..plans.len())
        .map(|i| {
            Err(if i == failed_at {
                why.clone()
            } else {
                Rejection::AtomicFailed
            })
        })
        .collect()
}

/// An atomic push that would create two tags or more is refused before anything is written:
/// if the second failed, the first could not be undone.
pub(super) fn refuse_two_tags(planned: &mut Plans) {
    let tags = planned
        .iter()
        .flatten()
        .filter(|p| p.action.is_create_only(&p.dst))
        .count();
    if tags < 2 {
        return;
    }
    for p in planned.iter_mut() {
        if p.as_ref().is_ok_and(|p| p.action.is_create_only(&p.dst)) {
            *p = Err(Rejection::Refused(format!(
                "an --atomic push creates at most one tag ({tags} here): tags are never deleted, \
                 so a second one that failed could not be undone; push the tags in separate pushes"
            )));
        }
    }
}

/// Puts back what this push wrote, newest first, each on condition that it still holds what
/// this push wrote. A value this push cannot prove it wrote is left alone.
async fn undo(remote: &Remote, done: &[(Done, &Planned)], warnings: &mut Vec<String>) {
    let lake = remote.lake();
    for (d, p) in done.iter().rev() {
        if p.action.is_create_only(&p.dst) {
            // Unreachable by the order above; kept so that no change of order can delete a tag.
            continue;
        }
        if !d.ours {
            warnings.push(format!(
                "atomic push: {} already held the pushed value, perhaps written by another push; it is left as it is",
                p.dst
            ));
            continue;
        }
        let undone = match (&p.action, &d.new_token, &p.old_version) {
            (Action::Create { .. }, Some(t), _) => lake.delete_ref(&p.dst, t).await,
            (Action::Update { .. }, Some(t), Some(old)) => lake
                .write_ref(&p.dst, old, &WriteMode::Update(t.clone()))
                .await
                .map(|_| ()),
            (Action::Delete { .. }, _, Some(old)) => lake
                .write_ref(&p.dst, old, &WriteMode::Create)
                .await
                .map(|_| ()),
            _ => Err(WriteError::Conflict),
        };
        if let Err(e) = undone {
            warnings.push(format!(
                "atomic push: could not undo the write of {} ({e}); the lake keeps the pushed value there",
                p.dst
            ));
        }
    }
}
