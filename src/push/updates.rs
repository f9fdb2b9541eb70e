//! What a push is asked (`RefUpdate`, `PushOptions`), what it plans for each ref (`Planned`,
//! `Action`), and what it answers (`Rejection`, `PushReport`).

use std::collections::HashSet;
use std::fmt;

use crate::lake::VersionId;
use crate::store::Token;

/// One ref Git asks to update: `[+]<src>:<dst>`; an empty `src` deletes `dst`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RefUpdate {
    pub force: bool,
    pub src: String,
    pub dst: String,
}

/// The options of one push batch.
#[derive(Debug, Clone, Default)]
pub(crate) struct PushOptions {
    pub dry_run: bool,
    pub atomic: bool,
    /// `--force-with-lease`: ref → expected commit (hex; empty for "must not exist").
    pub cas: Vec<(String, String)>,
}

/// Why a ref was not pushed. The first kinds are the ones Git knows and turns into its own
/// statuses and advice.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Rejection {
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
    pub(super) fn refused(why: impl Into<String>) -> Rejection {
        Rejection::Refused(why.into())
    }

    /// Whether the ref may have changed after all.
    pub(crate) fn is_uncertain(&self) -> bool {
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
pub(crate) type RefResult = Result<bool, Rejection>;

/// What a push did, beyond the per-ref results.
#[derive(Debug, Default)]
pub(crate) struct PushReport {
    pub results: Vec<(String, RefResult)>,
    /// Problems that did not fail the push (refs.json left stale, an undo that failed).
    pub warnings: Vec<String>,
    pub refs_json_attempts: u32,
}

/// What one pushed ref will do.
#[derive(Debug, Clone)]
pub(super) enum Action {
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
    pub(super) fn target(&self) -> Option<VersionId> {
        match self {
            Action::Create { version } | Action::Update { version, .. } => Some(version.clone()),
            Action::Delete { .. } | Action::UpToDate => None,
        }
    }

    pub(super) fn forced(&self) -> bool {
        matches!(self, Action::Update { forced: true, .. })
    }

    pub(super) fn is_delete(&self) -> bool {
        matches!(self, Action::Delete { .. })
    }

    /// A write that can never be taken back: a new tag.
    pub(super) fn is_create_only(&self, dst: &str) -> bool {
        matches!(self, Action::Create { .. }) && dst.starts_with("refs/tags/")
    }
}

/// A ref that passed its checks, and what to write.
#[derive(Debug, Clone)]
pub(super) struct Planned {
    pub(super) dst: String,
    pub(super) action: Action,
    /// The version the ref held when Git listed it, to put back if an atomic push fails.
    pub(super) old_version: Option<VersionId>,
    /// The lease, if any: a lost condition then reads `stale info` rather than `fetch first`.
    pub(super) leased: bool,
    /// `+` or `--force`: a lost condition is then not a reason to fetch.
    pub(super) forced_by_user: bool,
}

/// Each ref's plan, in Git's order: what to write, or why not.
pub(super) type Plans = Vec<Result<Planned, Rejection>>;

/// Refs this push deletes, which make room for refs it creates (`a/b` out, `a` in).
pub(super) fn deleted_refs(updates: &[RefUpdate]) -> HashSet<String> {
    updates
        .iter()
        .filter(|u| u.src.is_empty())
        .map(|u| u.dst.clone())
        .collect()
}
