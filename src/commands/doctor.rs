//! `git-remote-fdl doctor <lake | remote>`: what the lake's store honours, asked now: the
//! store check a first write runs (each check and its answer; the answer is remembered as a
//! write's would be), what its listings give (ETags, content MD5s) and a round trip's time.
//! Lines of text for the binary to print; nothing here writes to the terminal.

use std::time::Instant;

use crate::fatal::Fatal;
use crate::safety::{self, Checked};
use crate::store::write_check::{Check, Checks, EtagCheck, Outcome};
use crate::store::Store;

/// What `doctor` found: the lines to print, and whether pushes are safe on the store.
pub struct Report {
    /// One line per check and its answer.
    pub lines: Vec<String>,
    /// Whether the store honours every conditional write a push needs.
    pub safe: bool,
}

/// Runs the checks on the lake an address or a remote names.
pub async fn doctor(lake: &str) -> Result<Report, Fatal> {
    let opened = super::named::open_for_doctor(lake).await?;
    let store = opened.store();
    let mut lines = vec![format!("lake '{}'", opened.name())];
    let started = Instant::now();
    let round_trip = store.get("fdl.json", 1 << 20).await;
    let ms = started.elapsed().as_secs_f64() * 1000.0;
    match round_trip {
        Ok(_) => lines.push(format!("round trip: {ms:.1} ms (fdl.json read)")),
        Err(e) => lines.push(format!("round trip: fdl.json could not be read again: {e}")),
    }
    if store.is_local() {
        lines.push(
            "store: a folder on this machine; it writes on condition under a lock file of its own \
             (no check needed): pushes are safe"
                .into(),
        );
        return Ok(Report { lines, safe: true });
    }
    if store.url().is_read_only() {
        lines.push("store: plain HTTP, read-only: it takes no push".into());
        return Ok(Report { lines, safe: false });
    }
    lines.push(format!("store: {}", store.describe()));
    let Checked::Ran(checks) = safety::check(store, true).await else {
        return Ok(Report { lines, safe: true });
    };
    lines.push("conditional writes, on a scratch key under the lake's root:".into());
    lines.extend(checks.all().into_iter().map(check_line));
    lines.extend(listing_lines(store).await);
    let safe = checks.puts_are_safe();
    lines.push(verdict(&checks));
    if let Some(k) = &checks.left_behind {
        lines.push(format!("note: the scratch key could not be removed: {k}"));
    }
    Ok(Report { lines, safe })
}

fn check_line(c: &Check) -> String {
    let answer = match &c.outcome {
        Outcome::Honoured => format!("{}: honoured", c.want),
        Outcome::Ignored => "taken: NOT honoured (the condition is ignored)".into(),
        Outcome::Refused => "refused: NOT honoured (a compare-and-swap never succeeds)".into(),
        Outcome::UnquotedOnly => "taken only with the ETag unquoted (Ceph RGW 16 compares it so): \
             the helper sends that form to this store"
            .into(),
        Outcome::Failed(why) => format!("failed: {why}"),
    };
    format!("  {:<44} {answer}", c.what)
}

async fn listing_lines(store: &Store) -> Vec<String> {
    match store.check_listing().await {
        Err(why) => vec![format!("listing: could not be checked: {why}")],
        Ok(l) => {
            let mut out = vec![listing_line(&l)];
            if let Some(k) = l.left_behind {
                out.push(format!("note: the scratch key could not be removed: {k}"));
            }
            out
        }
    }
}

fn listing_line(l: &EtagCheck) -> String {
    let etag = match (&l.listed, l.same_as_written) {
        (None, _) => "no ETag: every ref file is read on each listing".to_string(),
        (Some(t), true) => format!("ETags ({t}), as written"),
        (Some(t), false) => format!("ETags ({t}), not the one the write answered"),
    };
    let md5 = if l.is_md5 {
        "content MD5s: yes (packs' blobs are checked against them)"
    } else {
        "content MD5s: no (packs' blobs are checked by their Git IDs alone)"
    };
    format!("listing: {etag}; {md5}")
}

fn verdict(checks: &Checks) -> String {
    if checks.puts_are_safe() {
        let delete = match checks.stale_delete.outcome {
            Outcome::Honoured => "",
            _ => " (a branch delete is checked first, then sent: a race within that one request can lose a move)",
        };
        return format!("verdict: pushes are safe here{delete}");
    }
    if let Some(why) = checks.failure() {
        return format!("verdict: unknown, a check failed: {why}");
    }
    format!(
        "verdict: pushes are refused here: it does not honour {} (remote.<name>.{} writes anyway, at your own risk)",
        checks.not_honoured().join(" nor "),
        safety::UNSAFE_KEY
    )
}
