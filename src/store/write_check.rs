//! Whether a store honours the conditional writes every push relies on, proven on a scratch
//! key under the lake's root (the layout lets other files sit there) and removed afterwards:
//! a create-only PUT over an existing key must be refused, a compare-and-swap with a stale
//! token refused and one with the current token taken; a conditional DELETE with a stale
//! token should be refused. Each PUT writes bytes of its own, so a request whose answer was
//! lost is settled by reading the key back, as a push settles its own writes.

use bytes::Bytes;

use super::condition::{Token, WriteError, WriteMode};
use super::error::StoreError;
use super::Store;

/// What one check found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The store did what the condition says.
    Honoured,
    /// The store took a write it should have refused: the condition is ignored.
    Ignored,
    /// The store refused a write it should have taken (a compare-and-swap with the current
    /// token).
    Refused,
    /// The store takes `If-Match` only with the ETag without its quotes (Ceph RGW 16): the
    /// helper sends that form to it.
    UnquotedOnly,
    /// The request failed, and reading back could not settle what happened.
    Failed(String),
}

/// One check, as `doctor` prints it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    /// What was sent, in the store's terms (`PUT If-None-Match: * over an existing key`).
    pub what: &'static str,
    /// What a safe store answers.
    pub want: &'static str,
    pub outcome: Outcome,
}

/// What the store honours, check by check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checks {
    pub create_only: Check,
    pub current_cas: Check,
    pub stale_cas: Check,
    pub stale_delete: Check,
    /// The scratch key could not be removed (it may be left under the root).
    pub left_behind: Option<String>,
}

impl Checks {
    /// The checks in the order they ran.
    pub fn all(&self) -> [&Check; 4] {
        [
            &self.create_only,
            &self.current_cas,
            &self.stale_cas,
            &self.stale_delete,
        ]
    }

    /// Whether pushes are safe: the three PUT checks hold (the DELETE one only narrows a
    /// window of one request, `Store::delete`).
    pub fn puts_are_safe(&self) -> bool {
        let ok = |c: &Check| matches!(c.outcome, Outcome::Honoured | Outcome::UnquotedOnly);
        ok(&self.create_only) && ok(&self.current_cas) && ok(&self.stale_cas)
    }

    /// Whether the store compares `If-Match` with unquoted ETags only.
    pub fn unquoted_if_match(&self) -> bool {
        self.current_cas.outcome == Outcome::UnquotedOnly
    }

    /// What the store does not honour, in a few words, for a `fatal:` line.
    pub fn not_honoured(&self) -> Vec<&'static str> {
        let mut out = Vec::new();
        if self.create_only.outcome != Outcome::Honoured {
            out.push("create-only writes (PUT If-None-Match: *)");
        }
        if !matches!(
            self.current_cas.outcome,
            Outcome::Honoured | Outcome::UnquotedOnly
        ) || self.stale_cas.outcome != Outcome::Honoured
        {
            out.push("compare-and-swap writes (PUT If-Match)");
        }
        out
    }

    /// The first PUT check whose request failed, if any (the DELETE one decides nothing).
    pub fn failure(&self) -> Option<&str> {
        let puts = [&self.create_only, &self.current_cas, &self.stale_cas];
        puts.into_iter().find_map(|c| match &c.outcome {
            Outcome::Failed(why) => Some(why.as_str()),
            _ => None,
        })
    }
}

/// The scratch key's name: no lake path starts with it.
pub(crate) const SCRATCH_PREFIX: &str = "fdl-store-check.";

/// How many times a failed request is tried again (object_store already retried it).
const TRIES: usize = 3;

impl Store {
    /// Runs the checks on a scratch key under the root. A folder needs none (it writes on
    /// condition under a lock file); callers do not ask it.
    pub async fn check_conditions(&self) -> Checks {
        let key = scratch_key();
        let mut left_behind = None;
        // Beside the first PUT: the keys of checks killed long ago removed (no round trip more).
        let first_put = put_checked(self, &key, b"fdl store check 1", &WriteMode::Create, true);
        let (create, ()) = futures::join!(first_put, sweep_abandoned(self));
        let first = match create {
            Written::Taken(t) => t,
            Written::Refused => {
                // A scratch key of that name was there already: not this store's fault.
                let why = format!("{key} exists already");
                return failed_all(why);
            }
            Written::Failed(why) => return failed_all(why),
        };
        let (create_only, current) =
            match put_checked(self, &key, b"fdl store check 2", &WriteMode::Create, false).await {
                Written::Refused => (Outcome::Honoured, first.clone()),
                Written::Taken(t) => (Outcome::Ignored, t),
                Written::Failed(why) => (Outcome::Failed(why), first.clone()),
            };
        let (current_cas, now) = current_cas(self, &key, &current).await;
        // A token the key no longer has; `first`'s bytes differ from every later write.
        let mut stale = if first != now { first } else { made_up() };
        if current_cas == Outcome::UnquotedOnly {
            stale = super::unquoted(&stale);
        }
        // What the key holds now, to remove it without asking first.
        let (stale_cas, latest) = match put_checked(
            self,
            &key,
            b"fdl store check 4",
            &WriteMode::Update(stale.clone()),
            false,
        )
        .await
        {
            Written::Refused => (Outcome::Honoured, Some(now)),
            Written::Taken(t) => (Outcome::Ignored, Some(t)),
            Written::Failed(why) => (Outcome::Failed(why), None),
        };
        let stale_delete = stale_delete(self, &key, &stale).await;
        if stale_delete != Outcome::Ignored {
            if let Err(why) = remove(self, &key, latest).await {
                left_behind = Some(format!("{key}: {why}"));
            }
        }
        let check = |what, want, outcome| Check {
            what,
            want,
            outcome,
        };
        Checks {
            create_only: check(
                "PUT If-None-Match: * over an existing key",
                "refused",
                create_only,
            ),
            current_cas: check("PUT If-Match: <the current ETag>", "taken", current_cas),
            stale_cas: check("PUT If-Match: <a stale ETag>", "refused", stale_cas),
            stale_delete: check("DELETE If-Match: <a stale ETag>", "refused", stale_delete),
            left_behind,
        }
    }
}

/// A compare-and-swap with the current token: taken, or taken only unquoted (Ceph RGW 16).
async fn current_cas(store: &Store, key: &str, current: &Token) -> (Outcome, Token) {
    let mode = WriteMode::Update(current.clone());
    match put_checked(store, key, b"fdl store check 3", &mode, true).await {
        Written::Taken(t) => return (Outcome::Honoured, t),
        Written::Failed(why) => return (Outcome::Failed(why), current.clone()),
        Written::Refused => {}
    }
    let Some(unquoted) = current.e_tag.as_deref().and_then(unquote) else {
        return (Outcome::Refused, current.clone());
    };
    let token = Token {
        e_tag: Some(unquoted.to_string()),
        version: current.version.clone(),
    };
    let mode = WriteMode::Update(token);
    match put_checked(store, key, b"fdl store check 3u", &mode, true).await {
        Written::Taken(t) => (Outcome::UnquotedOnly, t),
        Written::Refused => (Outcome::Refused, current.clone()),
        Written::Failed(why) => (Outcome::Failed(why), current.clone()),
    }
}

/// A conditional DELETE with a stale token: refused if honoured; the key gone if ignored.
async fn stale_delete(store: &Store, key: &str, stale: &Token) -> Outcome {
    let mut last = String::new();
    for _ in 0..TRIES {
        match unthrottled(|| store.delete_on_condition_only(key, stale)).await {
            Err(WriteError::Conflict) => return Outcome::Honoured,
            Ok(()) => return Outcome::Ignored,
            Err(e) => last = e.to_string(),
        }
        // Settled by whether the key is still there.
        match store.backend.head(key).await {
            Ok(Some(_)) => continue,
            Ok(None) => return Outcome::Ignored,
            Err(e) => last = e.to_string(),
        }
    }
    Outcome::Failed(last)
}

/// Removes the scratch key, at version `known` if given (no HEAD first), else whatever its
/// version.
async fn remove(store: &Store, key: &str, known: Option<Token>) -> Result<(), WriteError> {
    let mut last = None;
    if let Some(token) = known {
        match unthrottled(|| store.backend.delete(key, &token)).await {
            Ok(()) => return Ok(()),
            Err(e) => last = Some(e),
        }
    }
    for _ in 0..TRIES {
        let token = match store.backend.head(key).await {
            Ok(None) => return Ok(()),
            Ok(Some(t)) => t,
            Err(e) => {
                last = Some(WriteError::Store(e));
                continue;
            }
        };
        match unthrottled(|| store.backend.delete(key, &token)).await {
            Ok(()) => return Ok(()),
            Err(e) => last = Some(e),
        }
    }
    last.map_or(Ok(()), Err)
}

/// `write`, sent again while the store answers that it is too busy: a throttled write was not
/// made. The check writes one key several times in a row, which GCS's quota answers with 429.
async fn unthrottled<T, F>(write: impl FnMut() -> F) -> Result<T, WriteError>
where
    F: std::future::Future<Output = Result<T, WriteError>>,
{
    let throttled = |e: &WriteError| matches!(e, WriteError::Store(e) if e.is_throttled());
    crate::store::wrappers::throttle::until_unthrottled(write, throttled).await
}

/// What a PUT did, settled.
enum Written {
    Taken(Token),
    Refused,
    Failed(String),
}

/// A PUT on condition; one whose answer did not come is settled by reading the key back: its
/// own bytes there mean it was taken. So is a refusal of a write that should be taken (the
/// first create, the compare-and-swap on the current token): the client may have sent it
/// again after its answer was lost, and the second attempt found the first.
async fn put_checked(
    store: &Store,
    key: &str,
    bytes: &'static [u8],
    mode: &WriteMode,
    should_take: bool,
) -> Written {
    let mut last = String::new();
    for _ in 0..TRIES {
        match unthrottled(|| store.put(key, Bytes::from_static(bytes), mode)).await {
            Ok(t) => return Written::Taken(t),
            Err(WriteError::Conflict) if should_take => {
                return match read_back(store, key).await {
                    Ok(Some(v)) if v.bytes[..] == *bytes => Written::Taken(v.token),
                    Ok(_) => Written::Refused,
                    Err(e) => Written::Failed(e.to_string()),
                }
            }
            Err(WriteError::Conflict) => return Written::Refused,
            Err(WriteError::Refused(e)) => return Written::Failed(e.to_string()),
            Err(WriteError::Store(e)) => last = e.to_string(),
        }
        match read_back(store, key).await {
            Ok(Some(v)) if v.bytes[..] == *bytes => return Written::Taken(v.token),
            // Not written: the same request again.
            Ok(_) => {}
            Err(e) => last = e.to_string(),
        }
    }
    Written::Failed(last)
}

async fn read_back(store: &Store, key: &str) -> Result<Option<super::Versioned>, StoreError> {
    store.get_versioned(key, 1024).await
}

/// An ETag without quotes, whichever way it came (Azure lists them bare).
fn bare(e_tag: &str) -> &str {
    unquote(e_tag).unwrap_or(e_tag)
}

fn unquote(e_tag: &str) -> Option<&str> {
    e_tag.strip_prefix('"')?.strip_suffix('"')
}

/// A token no object has.
fn made_up() -> Token {
    Token {
        e_tag: Some("\"00000000000000000000000000000000\"".into()),
        version: Some("1".into()),
    }
}

/// A key of this process alone: its process ID and when it was made, in nanoseconds since the
/// epoch, in hex.
fn scratch_key() -> String {
    format!("{SCRATCH_PREFIX}{}-{:x}", std::process::id(), now_nanos())
}

fn now_nanos() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default()
}

/// A scratch key older than this was left by a check that never finished (a push killed
/// during it): no check takes more than seconds.
const ABANDONED_AFTER_NANOS: u128 = 24 * 3600 * 1_000_000_000;

/// When scratch key `name` (a file at the lake's root) was made, by its name.
fn made_at(name: &str) -> Option<u128> {
    let (_, nanos) = name.strip_prefix(SCRATCH_PREFIX)?.split_once('-')?;
    u128::from_str_radix(nanos, 16).ok()
}

/// Removes the scratch keys at the lake's root that checks killed more than a day ago left:
/// one listing of the root alone, and a best effort (a key not removed now is at the next).
async fn sweep_abandoned(store: &Store) {
    let Ok(names) = store.list_files_at("").await else {
        return;
    };
    let now = now_nanos();
    let abandoned = names.into_iter().filter(|name| {
        made_at(name).is_some_and(|at| now.saturating_sub(at) > ABANDONED_AFTER_NANOS)
    });
    for name in abandoned {
        let _ = remove(store, &name, None).await;
    }
}

/// Every check failed with `why`: nothing could be proven.
fn failed_all(why: String) -> Checks {
    let check = |what, want| Check {
        what,
        want,
        outcome: Outcome::Failed(why.clone()),
    };
    Checks {
        create_only: check("PUT If-None-Match: * over an existing key", "refused"),
        current_cas: check("PUT If-Match: <the current ETag>", "taken"),
        stale_cas: check("PUT If-Match: <a stale ETag>", "refused"),
        stale_delete: check("DELETE If-Match: <a stale ETag>", "refused"),
        left_behind: None,
    }
}

/// What a listing gives for a file just written: its ETag, and whether that is the MD5 of the
/// content (then packs' blobs can be checked against the listing, `lake_packs/verify.rs`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EtagCheck {
    /// The ETag the listing gave (`None`: none).
    pub listed: Option<String>,
    /// The listing's ETag is the one the PUT answered.
    pub same_as_written: bool,
    /// The ETag is the content's MD5 in hex, quoted.
    pub is_md5: bool,
    pub left_behind: Option<String>,
}

/// Why the listing's ETag could not be looked at.
#[derive(Debug, thiserror::Error)]
pub enum ListingCheckError {
    #[error("{0} exists already")]
    Exists(String),
    #[error("{0}")]
    Write(String),
    #[error("{0}")]
    List(StoreError),
}

impl Store {
    /// Writes a scratch file in a scratch folder, lists the folder and removes the file.
    pub async fn check_listing(&self) -> Result<EtagCheck, ListingCheckError> {
        use md5::{Digest, Md5};
        let folder = format!("{}/", scratch_key());
        let key = format!("{folder}listed");
        let bytes: &'static [u8] = b"fdl store listing check";
        let written = match put_checked(self, &key, bytes, &WriteMode::Create, true).await {
            Written::Taken(t) => t,
            Written::Refused => return Err(ListingCheckError::Exists(key)),
            Written::Failed(why) => return Err(ListingCheckError::Write(why)),
        };
        let listed = self.list(&folder).await.map_err(ListingCheckError::List);
        let left_behind = remove(self, &key, Some(written.clone()))
            .await
            .err()
            .map(|e| format!("{key}: {e}"));
        let listed = listed?.e_tag_of(&key).map(str::to_string);
        let md5: String = Md5::digest(bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        Ok(EtagCheck {
            same_as_written: listed.is_some()
                && listed.as_deref().map(bare) == written.e_tag.as_deref().map(bare),
            is_md5: listed.as_deref() == Some(format!("\"{md5}\"").as_str()),
            listed,
            left_behind,
        })
    }
}
