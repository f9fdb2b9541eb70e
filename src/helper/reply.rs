//! What the session answers Git: the one writer of the protocol's output, the `list` reply and
//! each pushed ref's status line.

use std::io::Write;

use crate::fatal::Fatal;
use crate::protocol::{self, ListLine, PushStatus};
use crate::push::{self, Rejection};
use crate::remote::Listing;
use crate::trace;

/// The one writer of the protocol's output, tracing what it sends.
pub(super) struct Out<W: Write> {
    pub(super) writer: W,
    pub(super) trace: bool,
}

impl<W: Write> Out<W> {
    pub(super) fn send(&mut self, text: &str) -> Result<(), Fatal> {
        if self.trace {
            for line in text.split_inclusive('\n') {
                trace::line(&format!("-> {}", line.trim_end_matches('\n')));
            }
        }
        self.writer
            .write_all(text.as_bytes())
            .and_then(|_| self.writer.flush())
            .map_err(|e| Fatal::new(format!("cannot write to Git: {e}")))
    }
}

/// The `list` reply: HEAD as a symref first (Git resolves its value), as Git's own servers
/// list it, then every ref in name order. No HEAD for a push, as Git's own receive-pack: or
/// `--mirror` would try to delete it.
pub(super) fn list_lines(listing: &Listing, for_push: bool) -> Vec<ListLine> {
    let head = listing.listed_head().filter(|_| !for_push);
    let head = head.map(|target| ListLine::Symref {
        target: target.to_string(),
        name: "HEAD".into(),
    });
    let refs = listing.refs.iter().map(|(name, v)| ListLine::Ref {
        oid: listing.commits[v].to_hex(),
        name: name.clone(),
    });
    head.into_iter().chain(refs).collect()
}

/// One `ok`/`error` line, in the status words Git turns into its own messages and advice.
pub(super) fn push_status(dst: &str, result: &push::RefResult) -> String {
    let reason = match result {
        Ok(false) => return protocol::push_status(dst, &PushStatus::Ok),
        Ok(true) => {
            let forced = PushStatus::OkWith(protocol::FORCED_UPDATE);
            return protocol::push_status(dst, &forced);
        }
        Err(Rejection::NonFastForward) => protocol::NON_FAST_FORWARD.to_string(),
        Err(Rejection::FetchFirst) => protocol::FETCH_FIRST.to_string(),
        Err(Rejection::AlreadyExists) => protocol::ALREADY_EXISTS.to_string(),
        Err(Rejection::StaleInfo) => protocol::STALE_INFO.to_string(),
        // Git shows the reason as it is: escape what a lake's files could put in it.
        Err(other) => crate::redact::for_terminal(&other.to_string()),
    };
    protocol::push_status(dst, &PushStatus::Error(reason))
}
