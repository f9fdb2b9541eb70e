//! Reading refs: `HEAD`, the ref files (listed, or only those whose ETag changed) or
//! `refs.json` where the store cannot list, and which refs Git can hold.

use std::collections::HashMap;

use futures::{StreamExt, TryStreamExt};

use super::error::LakeError;
use super::etags;
use super::handle::Lake;
use super::names::{check_ref_name, printable, VersionId};
use super::refs_json;
use super::small_files;
use super::{list_ref_folders, REFS_JSON_LIMIT, SMALL_FILE_LIMIT};
use crate::store::{StoreError, Token, Versioned};

/// Refs as a listing found them, and what to remember of their files.
pub(crate) struct RefsSeen {
    /// Name, version and file token, sorted by name.
    pub refs: Vec<(String, VersionId, Token)>,
    /// `name -> (etag, version)`; `None` when that is what was remembered already.
    pub remember: Option<HashMap<String, (String, VersionId)>>,
}

/// A writer's lock or temporary file: never a ref, not worth a warning.
pub(super) fn is_writer_file(path: &str) -> bool {
    let last = path.rsplit('/').next().unwrap_or("");
    last.ends_with(".lock") || last.starts_with('.')
}

/// Refs a reader keeps, and those it leaves out, each with the kept ref in its way.
pub(crate) type WithoutConflicts<T> = (Vec<(String, T)>, Vec<(String, String)>);

/// Git cannot hold a ref and refs below it (`a` and `a/b`), which an object store can. Of
/// refs sorted by name, keeps each one no kept ref is a folder of; returns the others, each
/// with the kept ref in its way.
pub(crate) fn without_conflicts<T>(refs: Vec<(String, T)>) -> WithoutConflicts<T> {
    let mut kept_names = std::collections::HashSet::new();
    let (mut kept, mut dropped) = (Vec::new(), Vec::new());
    for (name, value) in refs {
        let in_the_way = name
            .match_indices('/')
            .map(|(i, _)| &name[..i])
            .find(|folder| kept_names.contains(*folder))
            .map(str::to_string);
        match in_the_way {
            Some(other) => dropped.push((name, other)),
            None => {
                kept_names.insert(name.clone());
                kept.push((name, value));
            }
        }
    }
    (kept, dropped)
}
/// What a `refs.json` read ahead says each ref holds; entries that are no version are left out.
fn claims_of(
    refs_json: &Option<Result<Option<Versioned>, StoreError>>,
) -> HashMap<String, VersionId> {
    let Some(Ok(Some(raw))) = refs_json else {
        return HashMap::new();
    };
    let pairs = refs_json::parse_refs_json(&raw.bytes).unwrap_or_default();
    pairs
        .into_iter()
        .filter_map(|(name, v)| Some((name, VersionId::parse(v.trim()).ok()?)))
        .collect()
}

/// A ref file read: its name, version and token; `None` if it is gone.
type RefRead = Option<(String, VersionId, Token)>;
impl Lake {
    /// The branch `HEAD` names. A lake without `HEAD` is read as if it said `refs/heads/main`.
    pub(crate) async fn head(&self) -> Result<String, LakeError> {
        let ahead = self.read_ahead.lock().head.take();
        let raw = match ahead {
            Some(r) => r,
            None => self.store.get("HEAD", SMALL_FILE_LIMIT).await,
        };
        match raw.map_err(|e| self.store_err(e))? {
            None => Ok("refs/heads/main".to_string()),
            Some(raw) => small_files::parse_head(&raw).map_err(|why| LakeError::BadHead {
                lake: self.name(),
                why: why.to_string(),
            }),
        }
    }

    /// Every branch and tag with the version it holds, sorted by name. Read from the ref files
    /// where the store lists, else from `refs.json`. `refs/requests/` and other refs are skipped.
    pub(crate) async fn refs(&self) -> Result<Vec<(String, VersionId)>, LakeError> {
        let out = if self.store.can_list() {
            self.refs_from_files().await?
        } else {
            self.refs_from_json().await?
        };
        Ok(self.git_compatible(out))
    }

    /// Refs sorted by name, without those Git cannot hold beside another (`a` and `a/b`: the
    /// shortest is kept), each left out named in a warning.
    pub(crate) fn git_compatible<T>(&self, mut refs: Vec<(String, T)>) -> Vec<(String, T)> {
        refs.sort_by(|a, b| a.0.cmp(&b.0));
        let (kept, dropped) = without_conflicts(refs);
        for (name, kept_instead) in dropped {
            self.warn(format!(
                "lake '{}': {} and {} cannot both be refs in Git; showing {} only \
                 (remove one of them from the lake)",
                self.name(),
                printable(&kept_instead),
                printable(&name),
                printable(&kept_instead)
            ));
        }
        kept
    }

    async fn refs_from_files(&self) -> Result<Vec<(String, VersionId)>, LakeError> {
        Ok(self
            .refs_versioned()
            .await?
            .into_iter()
            .map(|(n, v, _)| (n, v))
            .collect())
    }

    /// Every branch and tag from the ref files, with each file's version token (for pushes).
    pub(crate) async fn refs_versioned(
        &self,
    ) -> Result<Vec<(String, VersionId, Token)>, LakeError> {
        Ok(self.read_ref_files(&HashMap::new()).await?.refs)
    }

    /// Every branch and tag, reading only the ref files whose ETag in the listing differs from
    /// what `known` remembers (`name -> (etag, version)`); returns the refs and what to
    /// remember next time. Stores that give no ETags read every ref file.
    pub(crate) async fn refs_remembered(
        &self,
        known: &HashMap<String, (String, VersionId)>,
    ) -> Result<RefsSeen, LakeError> {
        if !self.store.can_list() {
            let refs = self.refs().await?;
            let refs = refs.into_iter().map(|(n, v)| (n, v, Token::default()));
            return Ok(RefsSeen {
                refs: refs.collect(),
                remember: Some(HashMap::new()),
            });
        }
        self.read_ref_files(known).await
    }

    /// The ref files listed, each read unless `known` holds its listed ETag (a file deleted
    /// between the listing and its read is gone, as a racing reader sees it).
    async fn read_ref_files(
        &self,
        known: &HashMap<String, (String, VersionId)>,
    ) -> Result<RefsSeen, LakeError> {
        let (names, mut e_tags) = self.ref_names(known).await?;
        // ETags that name no content are no ETags: every ref file is read, none remembered.
        e_tags.retain(|_, t| etags::names_something(t));
        let trusted = etags::trusted(&e_tags, known, &self.other_tags);
        let nothing = HashMap::new();
        let known = if trusted { known } else { &nothing };
        let claims = self.refs_json_claims();
        // Refs unchanged since they were last read are taken as remembered, and refs whose
        // listed ETag is the MD5 of what refs.json says they hold are taken as proven, without
        // a future each: a lake of a thousand tags mostly holds those.
        let mut unchanged = Vec::with_capacity(names.len());
        let mut to_read = Vec::new();
        for name in names {
            let listed = e_tags.remove(&name);
            let held = match (known.get(&name), &listed) {
                (Some((tag, v)), Some(listed)) if tag == listed => Some(v.clone()),
                (_, Some(listed)) => claims
                    .get(&name)
                    .filter(|v| etags::proves(listed, v))
                    .cloned(),
                _ => None,
            };
            match held {
                Some(v) => {
                    let token = Token {
                        e_tag: listed,
                        version: None,
                    };
                    unchanged.push((name, v, token));
                }
                None => to_read.push(name),
            }
        }
        // Each read is a task of its own: a thousand answers are handled on every worker, not
        // all on the one running this listing.
        let reads = to_read.into_iter().map(|name| {
            let lake = self.clone();
            let path = name.clone();
            let read = tokio::spawn(async move { lake.read_ref_file(name).await });
            async move {
                let read = read.await.unwrap_or_else(|e| {
                    Err(self.store_err(crate::store::stopped(&path, "read", e)))
                });
                self.pass_over_broken(read)
            }
        });
        let read: Vec<_> = futures::stream::iter(reads)
            .buffer_unordered(self.store.concurrency())
            .try_filter_map(|x| async move { Ok(x) })
            .try_collect()
            .await?;
        let none_read = read.is_empty();
        let mut refs = unchanged;
        refs.extend(read);
        refs.sort_by(|a, b| a.0.cmp(&b.0));
        // Every ref remembered, none changed (most listings), each listed once: nothing new
        // to remember.
        let as_known =
            none_read && refs.len() == known.len() && refs.windows(2).all(|w| w[0].0 < w[1].0);
        let remember = (!as_known).then(|| {
            let with_tags = refs.iter().filter_map(|(name, v, token)| {
                let tag = token.e_tag.clone().filter(|t| etags::names_something(t))?;
                Some((name.clone(), (tag, v.clone())))
            });
            let remember: HashMap<String, (String, VersionId)> = with_tags.collect();
            let each = etags::one_version_each(remember.values().map(|(t, v)| (t, v)));
            match trusted && each {
                true => remember,
                false => HashMap::new(),
            }
        });
        Ok(RefsSeen { refs, remember })
    }

    /// A ref file that holds no version (garbage, or more than a ref file can be) is passed
    /// over with a warning, as Git passes over a broken ref: one bad file does not stop every
    /// reader and pusher of the lake. Its name is remembered ([`Lake::broken_refs`]).
    fn pass_over_broken(&self, read: Result<RefRead, LakeError>) -> Result<RefRead, LakeError> {
        let (name, why) = match read {
            Err(LakeError::BadRef { name, why, .. }) => (name, why),
            Err(LakeError::Store {
                source: StoreError::TooLarge { path, limit },
                ..
            }) => (
                path,
                format!("larger than the {limit}-byte limit for a ref file"),
            ),
            other => return other,
        };
        // Once a session: refs.json's retries list the refs again.
        let first = self.broken.lock().insert(name.clone());
        if first {
            self.warn(format!(
                "lake '{}': ignoring broken ref {}: {why}",
                self.name(),
                printable(&name)
            ));
        }
        Ok(None)
    }

    /// The ref files passed over so far because they hold no version, sorted.
    pub(crate) fn broken_refs(&self) -> Vec<String> {
        let broken = self.broken.lock();
        broken.iter().cloned().collect()
    }

    /// One ref file's version and token; `None` if it is gone.
    async fn read_ref_file(&self, name: String) -> Result<RefRead, LakeError> {
        let got = self
            .store
            .get_versioned(&name, SMALL_FILE_LIMIT)
            .await
            .map_err(|e| self.store_err(e))?;
        let Some(got) = got else { return Ok(None) };
        let id = small_files::parse_ref_value(&got.bytes).map_err(|why| LakeError::BadRef {
            lake: self.name(),
            name: name.clone(),
            why: why.to_string(),
        })?;
        Ok(Some((name, id, got.token)))
    }

    /// The names of the ref files under `refs/heads/` and `refs/tags/`, with their ETags;
    /// warns about entries passed over. Both folders are listed side by side, each in ranges
    /// split at the names `known` holds, so that many refs cost one round trip.
    async fn ref_names(
        &self,
        known: &HashMap<String, (String, VersionId)>,
    ) -> Result<(Vec<String>, HashMap<String, String>), LakeError> {
        let ahead = self.read_ahead.lock().ref_listing.take();
        let listed = match ahead {
            Some(listed) => listed?,
            // One walk of a folder is cheap, and sees a symlinked refs/heads or refs/tags as an
            // entry to name in a warning rather than a path to refuse.
            None if self.store.is_local() => self
                .store
                .list("refs/")
                .await
                .map_err(|e| self.store_err(e))?,
            None => {
                let mut sorted: Vec<String> = known.keys().cloned().collect();
                sorted.sort();
                list_ref_folders(&self.store, &sorted)
                    .await
                    .map_err(|e| self.store_err(e))?
            }
        };
        let is_ref = |f: &str| f.starts_with("refs/heads/") || f.starts_with("refs/tags/");
        for (path, why) in &listed.skipped {
            if is_ref(path) && !is_writer_file(path) {
                self.warn(format!(
                    "lake '{}': ignoring {}: {why}",
                    self.name(),
                    printable(path)
                ));
            }
        }
        let e_tags = listed.e_tags_by_path();
        let mut names = Vec::new();
        for f in listed.files {
            if !is_ref(&f) || is_writer_file(&f) {
                continue;
            }
            match check_ref_name(&f) {
                Ok(()) => names.push(f),
                Err(why) => self.warn(format!(
                    "lake '{}': ignoring {}: {why}",
                    self.name(),
                    printable(&f)
                )),
            }
        }
        Ok((names, e_tags))
    }

    async fn refs_from_json(&self) -> Result<Vec<(String, VersionId)>, LakeError> {
        let raw = self
            .refs_json_raw()
            .await
            .map(|v| v.map(|v| v.bytes))
            .map_err(|e| LakeError::BadRefsJson {
                lake: self.name(),
                why: match e {
                    StoreError::Failed { message, .. } => format!("cannot be read: {message}"),
                    other => format!("cannot be read: {other}"),
                },
            })?;
        let Some(raw) = raw else {
            return Err(LakeError::NoRefsJson { lake: self.name() });
        };
        let pairs = refs_json::parse_refs_json(&raw).map_err(|why| LakeError::BadRefsJson {
            lake: self.name(),
            why: why.to_string(),
        })?;
        let mut out = Vec::new();
        for (name, value) in pairs {
            if !(name.starts_with("refs/heads/") || name.starts_with("refs/tags/")) {
                continue;
            }
            if let Err(why) = check_ref_name(&name) {
                self.warn(format!(
                    "lake '{}': refs.json: ignoring {}: {why}",
                    self.name(),
                    printable(&name)
                ));
                continue;
            }
            let id = VersionId::parse(value.trim()).map_err(|why| LakeError::BadRef {
                lake: self.name(),
                name: format!("{name} (in refs.json)"),
                why: why.to_string(),
            })?;
            out.push((name, id));
        }
        Ok(out)
    }

    /// `refs.json` as it is now, with its version token; `None` if there is none.
    pub(crate) async fn refs_json_versioned(&self) -> Result<Option<Versioned>, LakeError> {
        self.refs_json_raw().await.map_err(|e| self.store_err(e))
    }

    /// Whether the refs were listed beside `fdl.json` ([`Lake::open_listing`]) and not handed
    /// out yet.
    pub(crate) fn has_ref_listing_ahead(&self) -> bool {
        let ahead = self.read_ahead.lock();
        ahead.ref_listing.is_some()
    }

    /// The newest version `refs.json` (as read with `fdl.json`) names: a guess at the newest
    /// tip before the ref files are read, for splitting a listing of `versions/`.
    pub(crate) fn newest_in_refs_json(&self) -> Option<VersionId> {
        let ahead = self.read_ahead.lock();
        let Some(Ok(Some(raw))) = &ahead.refs_json else {
            return None;
        };
        let refs = refs_json::parse_refs_json(&raw.bytes).ok()?;
        refs.iter()
            .filter_map(|(_, v)| VersionId::parse(v).ok())
            .max()
    }

    /// Lets go of `refs.json` read with `fdl.json`, when no push will use it; what it says
    /// of each ref is kept, for the listing's ETags to prove. A store that cannot list keeps
    /// it: there it is where the refs are read from.
    pub(crate) fn forget_read_ahead(&self) {
        let mut ahead = self.read_ahead.lock();
        let claims = claims_of(&ahead.refs_json);
        ahead.claims = Some(claims);
        if self.store.can_list() {
            ahead.refs_json = None;
        }
    }

    /// What `refs.json`, as read with `fdl.json`, says each ref holds (nothing if it was not
    /// read then, or is unreadable). A claim is never taken for a ref: only a listed ETag that
    /// is the MD5 of exactly that ref file's content makes it one.
    fn refs_json_claims(&self) -> HashMap<String, VersionId> {
        let ahead = self.read_ahead.lock();
        match &ahead.claims {
            Some(claims) => claims.clone(),
            None => claims_of(&ahead.refs_json),
        }
    }

    /// `refs.json` as read with `fdl.json` the first time, from the store afterwards.
    async fn refs_json_raw(&self) -> Result<Option<Versioned>, StoreError> {
        let ahead = self.read_ahead.lock().refs_json.take();
        match ahead {
            Some(r) => r,
            None => self.store.get_versioned("refs.json", REFS_JSON_LIMIT).await,
        }
    }
}
