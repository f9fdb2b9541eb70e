//! Writing planned refs on condition, and finding out what happened when the store's answer
//! was an error: a failed write is read back, never assumed.

use std::time::Duration;

use futures::StreamExt;

use super::updates::{Action, Planned, Plans, Rejection};
use crate::backoff::Backoff;
use crate::lake::VersionId;
use crate::remote::Remote;
use crate::store::{StoreError, Token, WriteError, WriteMode};

/// How long the writer of `a` waits for a racing writer of `a/b` to take its ref back.
const TIE_WAIT: Duration = Duration::from_secs(2);

/// Refs written at once by a plain push.
const WRITES_IN_FLIGHT: usize = 16;

/// A write that happened, and how to undo it (for `--atomic`).
#[derive(Debug, Clone)]
pub(super) struct Done {
    pub new_token: Option<Token>,
    /// Known to be this push's own write. A value found by reading back after a failed write
    /// may be another writer's (the same value): an atomic undo must never touch it.
    pub ours: bool,
}

/// A ref's write: what was done (`None`: nothing needed writing), or why not.
pub(super) type Written = Result<Option<Done>, Rejection>;

/// A plain push: deletions first, so that a folder they empty can hold a new ref; then the
/// rest, concurrently. Results keep Git's order: `Ok(Some(_))` if the lake changed.
pub(super) async fn write_all(remote: &Remote, planned: &Plans) -> Vec<Written> {
    let mut outcomes: Vec<Option<Written>> = vec![None; planned.len()];
    for deletes in [true, false] {
        let batch: Vec<usize> = (0..planned.len())
            .filter(|i| planned[*i].as_ref().is_ok_and(|p| p.action.is_delete()) == deletes)
            .collect();
        let results: Vec<Written> = futures::stream::iter(batch.iter().map(|i| async move {
            match &planned[*i] {
                Err(why) => Err(why.clone()),
                Ok(p) => write_with(remote, p, true).await,
            }
        }))
        .buffered(WRITES_IN_FLIGHT)
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
}

/// Why a lost condition failed this ref, in the words that help the user most.
fn lost(p: &Planned) -> Rejection {
    if p.dst.starts_with("refs/tags/") {
        Rejection::AlreadyExists
    } else if p.leased {
        Rejection::StaleInfo
    } else if p.forced_by_user {
        // Pulling would not help a forced push: say what happened instead.
        Rejection::ChangedMeanwhile
    } else {
        Rejection::FetchFirst
    }
}

/// Performs one planned write.
pub(super) async fn write(remote: &Remote, p: &Planned) -> Written {
    write_with(remote, p, false).await
}

/// Whether the look for a racing ref in the way of `p`'s create is left to
/// [`check_created_tag`], to run beside the `refs.json` write: a tag on an object store. A tag
/// is never taken back, so `refs.json` holds it whatever the look finds.
pub(super) fn defers_check(remote: &Remote, p: &Planned) -> bool {
    p.dst.starts_with("refs/tags/")
        && matches!(p.action, Action::Create { .. })
        && !remote.lake().paths_are_folders()
}

/// The look [`defers_check`] put off: why the created tag `dst` is refused, if a racing push
/// made a ref in its way.
pub(super) async fn check_created_tag(remote: &Remote, dst: &str) -> Option<Rejection> {
    let in_the_way = ref_in_the_way(remote, dst, false).await?;
    Some(left_in_lake(dst, in_the_way, "tags are never deleted"))
}

/// Performs one planned write; with `defer`, a tag's look for a ref in the way is left to the
/// caller ([`defers_check`]).
async fn write_with(remote: &Remote, p: &Planned, defer: bool) -> Written {
    let lake = remote.lake();
    match &p.action {
        Action::UpToDate => Ok(None),
        Action::Create { version } => {
            let (token, ours) = create(remote, p, version).await?;
            match defer && defers_check(remote, p) {
                true => done(token, ours),
                false => settle_create(remote, p, token, ours).await,
            }
        }
        Action::Update { version, old, .. } => {
            let mode = WriteMode::Update(old.clone());
            match lake.write_ref(&p.dst, version, &mode).await {
                Ok(token) => done(token, true),
                Err(e @ WriteError::Refused(_)) => Err(failed(p, &e)),
                // A retried request whose first attempt landed reads as a conflict with our
                // own write: look.
                Err(e) => match recheck(remote, &p.dst, Some(version)).await {
                    Readback::Holds(token) => done(token, false),
                    Readback::Differs => Err(failed(p, &e)),
                    Readback::Unknown(why) => Err(unknown_outcome(&e, &why)),
                },
            }
        }
        Action::Delete { old } => match lake.delete_ref(&p.dst, old).await {
            Ok(()) => Ok(Some(Done {
                new_token: None,
                ours: true,
            })),
            Err(WriteError::Conflict) => Err(lost(p)),
            Err(e @ WriteError::Refused(_)) => Err(failed(p, &e)),
            Err(e) => match recheck(remote, &p.dst, None).await {
                Readback::Holds(_) => Ok(Some(Done {
                    new_token: None,
                    ours: false,
                })),
                Readback::Differs => Err(failed(p, &e)),
                Readback::Unknown(why) => Err(unknown_outcome(&e, &why)),
            },
        },
    }
}

fn done(token: Token, ours: bool) -> Written {
    Ok(Some(Done {
        new_token: Some(token),
        ours,
    }))
}

/// Creates a ref with a create-only write: its token, and whether the value is known to be
/// ours. Where the store allows a ref beside refs below it, the caller then looks for one a
/// racing push made (`settle_create`).
async fn create(
    remote: &Remote,
    p: &Planned,
    version: &VersionId,
) -> Result<(Token, bool), Rejection> {
    let lake = remote.lake();
    let (token, ours) = match lake.write_ref(&p.dst, version, &WriteMode::Create).await {
        Ok(token) => (token, true),
        Err(e @ WriteError::Refused(_)) => {
            // A folder lake refuses a ref in the way itself: name that ref.
            if lake.paths_are_folders() {
                if let Ok(Some(other)) = lake.conflicting_ref(&p.dst).await {
                    return Err(taken(&p.dst, &other));
                }
            }
            return Err(failed(p, &e));
        }
        Err(e) => match recheck(remote, &p.dst, Some(version)).await {
            Readback::Holds(token) => (token, false),
            Readback::Differs => return Err(failed(p, &e)),
            Readback::Unknown(why) => return Err(unknown_outcome(&e, &why)),
        },
    };
    Ok((token, ours))
}

/// After a create on an object store: is a ref in the way (`a` for `a/b`, or `a/b` for `a`)?
/// Every writer looks after its own write, so of two racing creates the later one sees the
/// other's ref: never both win. A branch this push created is taken back on condition; a tag
/// never is (a reader may have seen it), nor a value this push cannot prove it wrote.
async fn settle_create(remote: &Remote, p: &Planned, token: Token, ours: bool) -> Written {
    let lake = remote.lake();
    if lake.paths_are_folders() {
        return done(token, ours);
    }
    let dst = &p.dst;
    let is_tag = dst.starts_with("refs/tags/");
    let Some(in_the_way) = ref_in_the_way(remote, dst, ours && !is_tag).await else {
        return done(token, ours);
    };
    if is_tag || !ours {
        let why_kept = if is_tag {
            "tags are never deleted"
        } else {
            "the value there may be another push's"
        };
        return Err(left_in_lake(dst, in_the_way, why_kept));
    }
    match lake.delete_ref(dst, &token).await {
        Ok(()) => Err(Rejection::Refused(match in_the_way {
            InTheWay::Ref(other) => format!(
                "cannot create {dst}: {other} exists in the lake (another push made it meanwhile)"
            ),
            InTheWay::LookFailed(why) => format!(
                "checking that no ref is in the way failed ({why}), so this push took its \
                 write back; push again"
            ),
        })),
        Err(undo) => Err(Rejection::Left(format!(
            "{}, and taking this write back failed ({undo}); remove one of them from the lake",
            match in_the_way {
                InTheWay::Ref(other) => format!("{other} exists in the lake"),
                InTheWay::LookFailed(why) =>
                    format!("checking that no ref is in the way failed ({why})"),
            }
        ))),
    }
}

/// What stands in the way of a ref just created.
enum InTheWay {
    /// Another ref, a folder of it or in it.
    Ref(String),
    /// Looking for one failed (the store's reason).
    LookFailed(String),
}

/// The ref in the way of `dst` (or why the look failed), if any. On a tie the writer of the
/// ref below yields at once; the writer of the ref above, when it `may_wait`, gives that
/// writer a moment to take its ref back, so both lose only when the wait is too short.
async fn ref_in_the_way(remote: &Remote, dst: &str, may_wait: bool) -> Option<InTheWay> {
    let look = || async {
        match remote.lake().conflicting_ref(dst).await {
            Ok(found) => found.map(InTheWay::Ref),
            Err(e) => Some(InTheWay::LookFailed(store_reason(&e))),
        }
    };
    let below = |o: &Option<InTheWay>| matches!(o, Some(InTheWay::Ref(other)) if other.starts_with(&format!("{dst}/")));
    let mut found = look().await;
    let mut backoff = Backoff::new(Duration::from_millis(50), Duration::from_millis(400));
    let deadline = std::time::Instant::now() + TIE_WAIT;
    while may_wait && below(&found) && std::time::Instant::now() < deadline {
        backoff.wait().await;
        found = look().await;
    }
    found
}

/// A ref this push wrote and leaves in the lake, though it is refused.
fn left_in_lake(dst: &str, in_the_way: InTheWay, why_kept: &str) -> Rejection {
    Rejection::Left(match in_the_way {
        InTheWay::Ref(other) => format!(
            "{other} was made at the same time, and Git cannot hold both; {dst} stays in the \
             lake ({why_kept}), and readers show only {}: remove one of them from the lake",
            if other.len() < dst.len() { &other } else { dst }
        ),
        InTheWay::LookFailed(why) => format!(
            "{dst} was written, but checking that no ref is in its way failed ({why}); it stays \
             ({why_kept}): see 'git ls-remote'"
        ),
    })
}

/// A ref that cannot be created because `other` is in its way.
fn taken(dst: &str, other: &str) -> Rejection {
    Rejection::Refused(format!("cannot create {dst}: {other} exists in the lake"))
}

fn failed(p: &Planned, e: &WriteError) -> Rejection {
    match e {
        WriteError::Conflict => lost(p),
        WriteError::Refused(s) | WriteError::Store(s) => Rejection::Refused(store_reason(s)),
    }
}

pub(super) fn store_reason(e: &StoreError) -> String {
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
    let mut backoff = Backoff::new(Duration::from_millis(100), Duration::from_secs(1));
    let mut last_error = String::new();
    for _ in 0..4 {
        match remote.lake().read_ref(dst).await {
            Ok(got) => {
                return match (got, want) {
                    (None, None) => Readback::Holds(Token::default()),
                    (Some((Some(held), token)), Some(want)) if held == *want => {
                        Readback::Holds(token)
                    }
                    _ => Readback::Differs,
                }
            }
            Err(e) => last_error = e.to_string(),
        }
        backoff.wait().await;
    }
    Readback::Unknown(last_error)
}

fn unknown_outcome(e: &WriteError, why: &str) -> Rejection {
    Rejection::Unknown(format!(
        "the outcome of this write is unknown ({e}; reading the ref back failed: {why}); \
         run 'git ls-remote' to see whether it happened"
    ))
}
