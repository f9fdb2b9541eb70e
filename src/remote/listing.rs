//! What `list` found (refs, HEAD, commits computed), handed to `fetch` and `push`.

use std::collections::{HashMap, HashSet};

use crate::history::BuiltVersion;
use crate::lake::VersionId;
use crate::mapping::ObjectId;
use crate::store::{Token, Versioned};

/// What `list` found: refs, HEAD, and every version's commit it had to compute.
#[derive(Default)]
pub(crate) struct Listing {
    pub head: Option<String>,
    pub refs: Vec<(String, VersionId)>,
    pub commits: HashMap<VersionId, ObjectId>,
    pub(super) built: HashMap<VersionId, BuiltVersion>,
    /// Every version the refs reach, parents first, when `list` built them all (nothing was
    /// known before it): a fetch of every ref into an empty repository needs no walk.
    pub(super) whole_history: Option<Vec<VersionId>>,
    /// For `list for-push`: each ref file's version token, for writes on condition, in the
    /// order of `refs` (sorted by name then).
    pub(super) tokens: Vec<Token>,
    /// For `list for-push`: `refs.json` as read with the refs (`Some(None)`: there was none).
    pub refs_json: Option<Option<Versioned>>,
    /// `refs.json` was read before the refs were listed, rather than beside them.
    pub refs_json_first: bool,
    /// Made by `list for-push`: with the tokens and `refs.json` a push writes on condition.
    pub for_push: bool,
    /// What it built is not in the cache yet: [`Remote::remember_listing`] puts it there
    /// ([`Remote::list_for_fetch`]).
    ///
    /// [`Remote::remember_listing`]: super::Remote::remember_listing
    /// [`Remote::list_for_fetch`]: super::Remote::list_for_fetch
    pub(super) unremembered: bool,
}

impl Listing {
    /// The version token of the ref file `name`, as a push's listing found it.
    pub(crate) fn token(&self, name: &str) -> Option<&Token> {
        let at = self
            .refs
            .binary_search_by(|(n, _)| n.as_str().cmp(name))
            .ok()?;
        self.tokens.get(at)
    }

    /// Each ref file as a push's listing found it, by name: its ETag and version (files listed
    /// without an ETag are left out).
    pub(crate) fn ref_files_seen(&self) -> HashMap<String, (String, VersionId)> {
        let with_tags = self
            .refs
            .iter()
            .zip(&self.tokens)
            .filter_map(|((n, v), t)| {
                let tag = t.e_tag.clone()?;
                Some((n.clone(), (tag, v.clone())))
            });
        with_tags.collect()
    }

    /// Every version `tips` reach, parents first, when `list` built them all and the tips are
    /// every ref's version (as a clone asks).
    pub(super) fn whole_history_for(&self, tips: &[(VersionId, String)]) -> Option<&[VersionId]> {
        let whole = self.whole_history.as_ref()?;
        let wanted: HashSet<&VersionId> = tips.iter().map(|(v, _)| v).collect();
        let listed: HashSet<&VersionId> = self.refs.iter().map(|(_, v)| v).collect();
        (wanted == listed).then_some(&whole[..])
    }

    /// The branch HEAD names, when that branch exists: a HEAD naming a missing branch is left
    /// out, as Git's own servers do.
    pub(crate) fn listed_head(&self) -> Option<&str> {
        self.head
            .as_deref()
            .filter(|h| self.refs.iter().any(|(n, _)| n == h))
    }
}
