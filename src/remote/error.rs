//! What goes wrong when a lake is read as a Git remote, with a hint for each.

use crate::lake::{LakeError, VersionId};
use crate::mapping::ObjectId;
use crate::repo::RepoError;
use crate::signatures::Verdict;

#[derive(Debug, thiserror::Error)]
pub enum RemoteError {
    #[error(transparent)]
    Lake(#[from] LakeError),
    #[error(transparent)]
    Repo(#[from] RepoError),
    #[error(
        "lake '{lake}': Git asked for {}, which no ref of the lake holds",
        asked_for(oid, name)
    )]
    UnknownWant {
        lake: String,
        oid: String,
        name: String,
    },
    #[error("lake '{lake}': version {version} is not signed by a trusted key: {verdict}{more}")]
    Unsigned {
        lake: String,
        version: VersionId,
        verdict: Box<Verdict>,
        more: String,
    },
    /// `--shallow-exclude` named no ref of the lake, or more than one.
    #[error("lake '{lake}': --shallow-exclude={name} names {}", if *matches == 0 { "no ref of the lake".to_string() } else { format!("{matches} refs of the lake") })]
    ExcludedRef {
        lake: String,
        name: String,
        matches: usize,
    },
    /// A version's files map to another commit than a pack of the lake claims for it.
    #[error("lake '{lake}': git-packs/{pack} claims commit {claimed} for version {version}, but the version's files map to commit {computed}: the claim is refused and nothing was fetched")]
    ClaimRefused {
        lake: String,
        pack: String,
        version: VersionId,
        claimed: ObjectId,
        computed: ObjectId,
    },
    /// A shallow commit of the repository that its version denies once its parents are read.
    #[error("lake '{lake}': version {version} is the shallow commit {had} of this repository, but built on its parents as the lake gives them now it is commit {computed}: the parents' IDs it was fetched with were wrong (a pack's claims, or a version below it rewritten since); nothing was fetched")]
    BoundaryDenied {
        lake: String,
        version: VersionId,
        had: ObjectId,
        computed: ObjectId,
    },
    /// `--shallow-since` and `--shallow-exclude` left no commit to fetch.
    #[error("lake '{lake}': no commits selected for shallow requests")]
    NothingSelected { lake: String },
    #[error("lake '{lake}': version {version} was rewritten in the lake: it was commit {cached} when this repository read it, and would now be commit {computed}")]
    CacheMismatch {
        lake: String,
        version: VersionId,
        computed: ObjectId,
        cached: ObjectId,
        cache: String,
    },
}

/// `<oid> (<ref>)`, or the ID alone when Git asked for it by ID (`git fetch <lake> <id>`).
fn asked_for(oid: &str, name: &str) -> String {
    if name == oid {
        oid.to_string()
    } else {
        format!("{oid} ({name})")
    }
}

impl RemoteError {
    pub fn hint(&self) -> Option<String> {
        match self {
            RemoteError::Lake(e) => e.hint().map(str::to_string),
            RemoteError::Repo(RepoError::Sha256(_)) => {
                Some("clone the lake into a SHA-1 repository (the default)".to_string())
            }
            RemoteError::Unsigned { .. } => Some(
                "nothing was fetched; see every version's status with: git-remote-fdl verify <lake>".to_string(),
            ),
            RemoteError::ExcludedRef { matches: 0, .. } => Some(
                "name a branch or tag of the lake; see them with: git ls-remote <remote>".to_string(),
            ),
            RemoteError::ExcludedRef { .. } => Some(
                "name the ref in full, as refs/heads/<name> or refs/tags/<name>".to_string(),
            ),
            RemoteError::ClaimRefused { pack, .. } => Some(format!(
                "the lake's packs are wrong: its maintainer should remove git-packs/{pack}.* from \
                 git-packs/list.json and run 'git-remote-fdl pack' again; meanwhile fetch without \
                 them: git -c fdl.usePacks=false ..."
            )),
            RemoteError::BoundaryDenied { .. } => Some(
                "check the lake with 'git-remote-fdl fsck <remote>'; a clone made now starts from \
                 the lake as it is"
                    .to_string(),
            ),
            RemoteError::NothingSelected { .. } => Some(
                "every commit the refs reach is older than --shallow-since or excluded; ask for an older date or exclude less".to_string(),
            ),
            RemoteError::CacheMismatch { cache, .. } => Some(format!(
                "versions are never rewritten: nothing was fetched; check the lake with \
                 'git-remote-fdl fsck <remote>' and ask its owner.\nTo accept the lake as it is \
                 now, remove {cache} and fetch again"
            )),
            _ => None,
        }
    }
}
