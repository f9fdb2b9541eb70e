//! The store check before the first write (a push, `git-remote-fdl pack`): a store that does
//! not honour create-only and compare-and-swap writes loses updates silently when two pushes
//! race, so it gets no write. The check (`store::check`) runs once per store (endpoint and
//! bucket or container) and is remembered in the user's cache for [`RECHECK_AFTER`]; a folder
//! needs none (it writes on condition under a lock file), nor plain HTTP (read-only).

use crate::config;
use crate::fatal::Fatal;
use crate::lake::Lake;
use crate::repo::Repo;
use crate::store::write_check::Checks;
use crate::store::Store;

/// The per-remote setting that lets writes through a store that failed the check, at the
/// user's own risk; named so that nobody sets it by accident.
pub(crate) const UNSAFE_KEY: &str = "fdlUnsafeIgnoreConditionalWrites";

/// How long a passed check is trusted before the next write checks again (a store's server
/// can be replaced behind the same endpoint): a day, six requests.
pub(crate) const RECHECK_AFTER: u64 = 24 * 3600;

/// The check as seen before a write: either remembered, or run now.
pub(crate) enum Checked {
    /// No check for this kind of store (a folder, plain HTTP).
    NotNeeded,
    /// The cache remembers a passed check this recent.
    Remembered,
    /// Run now, with what it found.
    Ran(Box<Checks>),
}

/// Makes sure the lake's store honours conditional writes before anything is written to it;
/// returns warnings to show. `remote`: the remote's name when the lake is a configured remote.
pub(crate) async fn before_first_write(
    lake: &Lake,
    repo: Option<&Repo>,
    remote: Option<&str>,
) -> Result<Vec<String>, Fatal> {
    let store = lake.store();
    let checked = check(store, false).await;
    let Checked::Ran(checks) = checked else {
        return Ok(Vec::new());
    };
    let mut warnings: Vec<String> = checks
        .left_behind
        .iter()
        .map(|k| format!("the store check could not remove its scratch key {k}"))
        .collect();
    if checks.puts_are_safe() {
        return Ok(warnings);
    }
    let unsafe_ok = match (repo, remote.filter(|r| config::is_remote_name(r))) {
        (Some(repo), Some(name)) => config::remote_bool(repo, name, UNSAFE_KEY)? == Some(true),
        _ => false,
    };
    let refusal = refusal(store, &checks, remote);
    if unsafe_ok && checks.failure().is_none() {
        warnings.push(format!(
            "{}; writing anyway, as remote.{}.{UNSAFE_KEY} says: two pushes at once can lose one's update",
            refusal.message().trim_end_matches("; nothing was written"),
            remote.unwrap_or_default()
        ));
        return Ok(warnings);
    }
    Err(refusal)
}

/// Runs the store check, or finds it remembered (unless `fresh`); a passed one is remembered,
/// and a store that takes only unquoted ETags is written to in that form from now on.
pub(crate) async fn check(store: &Store, fresh: bool) -> Checked {
    if !store.needs_condition_check() {
        return Checked::NotNeeded;
    }
    let key = store.check_key();
    let now = now();
    if !fresh {
        if let Some(c) = crate::cache::store_checked(&key) {
            if now.saturating_sub(c.at) < RECHECK_AFTER && c.at <= now {
                if c.unquoted_if_match {
                    store.send_unquoted_if_match();
                }
                return Checked::Remembered;
            }
        }
    }
    let checks = store.check_conditions().await;
    if checks.puts_are_safe() {
        if checks.unquoted_if_match() {
            store.send_unquoted_if_match();
        }
        let remembered = crate::cache::StoreChecked {
            at: now,
            unquoted_if_match: checks.unquoted_if_match(),
        };
        crate::cache::remember_store_checked(&key, &remembered);
    } else if checks.failure().is_none() {
        crate::cache::forget_store_checked(&key);
    }
    Checked::Ran(Box::new(checks))
}

/// The `fatal:` line for a store that failed the check, with what to do.
fn refusal(store: &Store, checks: &Checks, remote: Option<&str>) -> Fatal {
    let name = store.describe();
    if let Some(why) = checks.failure() {
        return Fatal::with_hint(
            format!("cannot check that the {name} honours conditional writes: {why}; nothing was written"),
            "try again; git-remote-fdl doctor <remote> runs the check and prints each answer",
        );
    }
    let setting = match remote.filter(|r| config::is_remote_name(r)) {
        Some(r) => format!("git config remote.{r}.{UNSAFE_KEY} true"),
        None => format!("git config remote.<name>.{UNSAFE_KEY} true (on a configured remote)"),
    };
    Fatal::with_hint(
        format!(
            "the {name} does not honour {}: a push there could silently lose another's update; nothing was written",
            checks.not_honoured().join(" nor ")
        ),
        format!(
            "pushes need a store that decides PUT If-None-Match and If-Match (AWS S3, GCS, Azure; \
             tested here: SeaweedFS 4.48, Ceph RGW 20.2 and 16.2): upgrade the server, or use another.\n\
             git-remote-fdl doctor <remote> prints each check and its answer.\n\
             To write anyway, at your own risk (two pushes at once can lose one's update): {setting}"
        ),
    )
}

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default()
}
