//! What is wrong with a lake, naming the lake and the ref or version at fault, with a hint.

use super::names::VersionId;
use super::small_files::FdlJsonError;
use crate::store::StoreError;

/// What is wrong with a lake, naming the lake and the ref or version at fault.
#[derive(Debug, thiserror::Error)]
pub enum LakeError {
    #[error("'{lake}' is not an FDL lake: it has no fdl.json")]
    NotALake { lake: String },
    #[error("lake '{lake}': {why}")]
    Config { lake: String, why: FdlJsonError },
    #[error("lake '{lake}': {source}")]
    Store { lake: String, source: StoreError },
    #[error("lake '{lake}': ref {name}: {why}")]
    BadRef {
        lake: String,
        name: String,
        why: String,
    },
    #[error("lake '{lake}': {why}")]
    BadHead { lake: String, why: String },
    /// A store that cannot list (plain HTTP) shows its refs only through `refs.json`: without
    /// it, the refs are unknown, which is not the same as none (a `fetch --prune` would delete
    /// every remote-tracking branch).
    #[error(
        "lake '{lake}' has no refs.json, and this store cannot list refs/: its refs are unknown"
    )]
    NoRefsJson { lake: String },
    #[error("lake '{lake}': refs.json: {why}")]
    BadRefsJson { lake: String, why: String },
    #[error("lake '{lake}': version {version}: {why}")]
    BadVersion {
        lake: String,
        version: VersionId,
        why: String,
    },
    #[error("lake '{lake}': version {version}, named by {by}, does not exist (no versions/{version}/version.json)")]
    MissingVersion {
        lake: String,
        version: VersionId,
        by: String,
    },
    #[error("lake '{lake}': the parents of version {version} lead back to itself (a cycle)")]
    Cycle { lake: String, version: VersionId },
}

impl LakeError {
    /// What the user can do about it, Git-style (`hint:` lines).
    pub fn hint(&self) -> Option<&'static str> {
        match self {
            LakeError::NotALake { .. } => Some(
                "check the address: it must name the folder that holds fdl.json, HEAD and refs/",
            ),
            LakeError::Config {
                why: FdlJsonError::UnknownMajor { .. },
                ..
            } => {
                Some("upgrade git-remote-fdl, or ask the lake's owner which FDL version it uses")
            }
            LakeError::Config { .. } => Some(
                "fdl.json must be a JSON object with an \"fdl\" version; ask the lake's owner to repair it",
            ),
            LakeError::BadRef { .. } | LakeError::BadHead { .. } => {
                Some("a writer left this file broken; fix or remove it in the lake")
            }
            LakeError::NoRefsJson { .. } | LakeError::BadRefsJson { .. } => Some(
                "over plain HTTP the refs are read from refs.json, which any push to the lake \
                 rewrites; or read the lake through its store address (s3://, gs://, az:// or a \
                 folder), which lists refs/",
            ),
            LakeError::MissingVersion { .. }
            | LakeError::BadVersion { .. }
            | LakeError::Cycle { .. } => {
                Some("the lake's history is damaged here; ask its owner to repair it")
            }
            LakeError::Store { .. } => None,
        }
    }
}
