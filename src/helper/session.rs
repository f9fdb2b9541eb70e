//! One protocol session: Git's requests in, one function per command, the answers out. What a
//! command decides, it asks of `remote` and `push`, and translates the answers into replies.

use std::io::{BufRead, Write};

use crate::config;
use crate::fatal::Fatal;
use crate::progress::{self, Progress};
use crate::protocol::{self, Options, Parser, PushItem, Request};
use crate::push::{self, PushOptions, RefUpdate};
use crate::remote::{Listing, Remote, ShallowAsk, Want};
use crate::store::StoreUrl;
use crate::trace;

use super::invocation::Invocation;
use super::opening::{open_remote, Early, Opening};
use super::reply::{list_lines, push_status, Out};

/// Git sends `capabilities` first, always: a session that ends before any line is a person
/// (or a script) who ran the helper as Git does, or mistyped a command with no terminal on
/// standard input. Ending it with success would hide the mistake.
fn nothing_from_git() -> Fatal {
    Fatal::with_hint(
        "no command came on standard input: git-remote-fdl was run as Git runs it \
         (git-remote-fdl <remote> [<url>]), but not by Git",
        "Git runs it itself for fdl:: addresses (git clone fdl::<lake>); \
         for the commands a person runs, see 'git-remote-fdl --help'",
    )
}

/// The longest line the helper takes from Git. Git's lines hold a command and one or two ref
/// names; a longer line is not Git, and reading it whole would let it take any memory.
const MAX_LINE: usize = 64 << 10;

/// Reads one line without its `\n`, bounded by [`MAX_LINE`]; `None` at the end of input.
fn read_line(input: &mut impl BufRead, buf: &mut Vec<u8>) -> Result<Option<String>, Fatal> {
    buf.clear();
    let n = std::io::Read::take(&mut *input, MAX_LINE as u64 + 1)
        .read_until(b'\n', buf)
        .map_err(|e| Fatal::new(format!("cannot read from Git: {e}")))?;
    if n == 0 {
        return Ok(None);
    }
    if buf.last() == Some(&b'\n') {
        buf.pop();
    } else if buf.len() > MAX_LINE {
        return Err(Fatal::new(format!(
            "protocol error: a line from Git is longer than {MAX_LINE} bytes"
        )));
    }
    match std::str::from_utf8(buf) {
        Ok(line) => Ok(Some(line.to_string())),
        Err(_) => Err(Fatal::new(
            "protocol error: a line from Git is not UTF-8 text",
        )),
    }
}

/// The options Git sends for a partial history the helper does not give, as the command-line
/// flags that set them.
fn partial_history_flag(name: &str) -> Option<&'static str> {
    match name {
        "filter" => Some("--filter"),
        _ => None,
    }
}

/// What Git asked of a shallow fetch, `None` for the whole history. `--shallow-since` is read
/// as Git's own fetch reads it (`approxidate`, here through `git rev-parse --since`).
fn shallow_ask(deepen: &protocol::Deepen) -> Result<Option<ShallowAsk>, Fatal> {
    if !deepen.asked() {
        return Ok(None);
    }
    let selected = deepen.since.is_some() || !deepen.not.is_empty();
    Ok(Some(match deepen.depth {
        Some(_) if selected => {
            return Err(Fatal::new(
                "--depth or --deepen cannot be used with --shallow-since or --shallow-exclude",
            ))
        }
        Some(protocol::INFINITE_DEPTH) => ShallowAsk::Everything,
        Some(n) if deepen.relative => ShallowAsk::Deepen(n),
        Some(n) => ShallowAsk::Depth(n),
        None => {
            let since = match &deepen.since {
                Some(text) => Some(approxidate(text)?),
                None => None,
            };
            ShallowAsk::Selected {
                since,
                excluded: deepen.not.clone(),
            }
        }
    }))
}

/// Seconds since the epoch for a date as Git's `--shallow-since` takes it.
fn approxidate(text: &str) -> Result<i64, Fatal> {
    let said = crate::git::Git::new(["rev-parse".to_string(), format!("--since={text}")]).run();
    said.ok()
        .and_then(|out| out.trim().strip_prefix("--max-age=")?.parse().ok())
        .ok_or_else(|| {
            Fatal::new(format!(
                "cannot read --shallow-since={} as a date",
                crate::redact::printable(text)
            ))
        })
}

/// One session's state: what Git set, the lake once opened, and the last listing.
pub(super) struct Session<W: Write> {
    out: Out<W>,
    invocation: Invocation,
    options: Options,
    pub(super) remote: Option<Remote>,
    /// The lake being opened since the session began (see [`Opening`]).
    opening: Option<Opening>,
    listing: Option<Listing>,
    /// Flags for a partial history Git passed on (`--depth`, ...), said once, then emptied.
    ignored_flags: Vec<&'static str>,
    warned_partial: bool,
}

impl<W: Write> Session<W> {
    pub(super) fn new(invocation: Invocation, writer: W) -> Session<W> {
        Session {
            out: Out {
                writer,
                trace: trace::enabled(),
            },
            invocation,
            options: Options::default(),
            remote: None,
            opening: None,
            listing: None,
            ignored_flags: Vec::new(),
            warned_partial: false,
        }
    }

    /// Reads requests until Git ends the session.
    pub(super) async fn serve(
        &mut self,
        mut input: impl BufRead,
        early: Option<Early>,
    ) -> Result<(), Fatal> {
        if let (Ok(url), Some(early)) = (self.invocation.url().cloned(), early) {
            let configured = self.invocation.configured();
            self.opening = Some(Opening::start(url, configured, early));
        }
        let mut parser = Parser::default();
        let mut buf = Vec::new();
        let mut heard = false;
        loop {
            let line = read_line(&mut input, &mut buf)?;
            if line.is_none() && !heard {
                return Err(nothing_from_git());
            }
            heard = true;
            if let (true, Some(line)) = (self.out.trace, &line) {
                trace::line(&format!("<- {line}"));
            }
            let request = match line.map(|l| parser.feed(&l)) {
                None => Request::Quit,
                Some(Ok(Some(r))) => r,
                Some(Ok(None)) => continue,
                Some(Err(e)) => return Err(Fatal::new(format!("protocol error: {e}"))),
            };
            if matches!(request, Request::List { .. } | Request::Fetch(_)) {
                self.say_partial_history_ignored();
            }
            match request {
                Request::Quit => return Ok(()),
                Request::Capabilities => self.out.send(&protocol::capabilities(true))?,
                Request::Option { name, value } => self.option(&name, &value)?,
                Request::List { for_push } => self.list(for_push).await?,
                Request::Fetch(items) => self.fetch(&items).await?,
                Request::Push(items) => self.push(&items).await?,
            }
            self.trace_requests();
        }
    }

    fn option(&mut self, name: &str, value: &str) -> Result<(), Fatal> {
        if let Some(flag) = partial_history_flag(name) {
            if !self.ignored_flags.contains(&flag) {
                self.ignored_flags.push(flag);
            }
        }
        let reply = self.options.set(name, value, true);
        if name == "pushcert" && reply == crate::protocol::OptionReply::Ok {
            // Git's own words where the receiving end takes no certificates.
            warn!("warning: not sending a push certificate since the receiving end does not support --signed push");
        }
        self.out.send(&reply.line())
    }

    /// Git's own transports warn when they ignore `--filter`; so does the helper, once a
    /// session: every object of a version is fetched.
    fn say_partial_history_ignored(&mut self) {
        if self.ignored_flags.is_empty() || self.warned_partial {
            return;
        }
        let flags = self.ignored_flags.join(" and ");
        let verb = if self.ignored_flags.len() == 1 {
            "is"
        } else {
            "are"
        };
        warn!(
            "warning: {flags} {verb} ignored for FDL lakes; every object of a version is fetched"
        );
        self.warned_partial = true;
    }

    async fn list(&mut self, for_push: bool) -> Result<(), Fatal> {
        let progress = self.progress();
        // Read-only is a property of the address: say so before any request can fail.
        let url = self.invocation.url()?.clone();
        if for_push && url.is_read_only() {
            return Err(Fatal::read_only(&url, "pushed", "push to"));
        }
        if self.remote.is_none() {
            self.record_absolute_url(&url);
            // A push needs history only for a commit no ref holds: it reads the commits file
            // then, not beside every listing.
            let opening = self.opening.take();
            self.remote = Some(open_remote(&mut self.invocation, !for_push, opening).await?);
        }
        let earlier = self.listing.take();
        let deepen = &self.options.deepen;
        let (shallow, since) = (deepen.asked() && !for_push, deepen.since.is_some());
        let remote = self.remote().await?;
        if shallow {
            remote.prepare_shallow(since);
        }
        // What an earlier listing built is known to this one.
        if let Some(mut earlier) = earlier {
            remote.remember_listing(&mut earlier);
        }
        let listing = if for_push {
            remote.list_for_push(progress.as_ref()).await
        } else {
            remote.list_for_fetch(progress.as_ref()).await
        };
        self.show_warnings(&[]);
        let listing = listing?;
        let reply = protocol::list(&list_lines(&listing, for_push), self.options.object_format);
        self.out.send(&reply)?;
        self.listing = Some(listing);
        Ok(())
    }

    async fn fetch(&mut self, items: &[protocol::FetchItem]) -> Result<(), Fatal> {
        let progress = self.progress();
        let mut listing = self
            .listing
            .take()
            .ok_or_else(|| Fatal::new("protocol error: fetch before list"))?;
        let verbose = self.options.progress || self.options.verbosity > 1;
        let wants: Vec<Want> = items
            .iter()
            .map(|i| Want {
                oid: i.oid.clone(),
                name: i.name.clone(),
            })
            .collect();
        let lock_pack = self.options.check_connectivity;
        let shallow = shallow_ask(&self.options.deepen)?;
        let remote = self.remote().await?;
        let shallow = shallow.or_else(|| remote.fetches_shallow().then_some(ShallowAsk::Plain));
        let outcome = match &shallow {
            Some(ask) => {
                remote
                    .fetch_shallow(&mut listing, &wants, ask, progress.as_ref())
                    .await
            }
            None => {
                remote
                    .fetch(&mut listing, &wants, lock_pack, progress.as_ref())
                    .await
            }
        };
        if outcome.is_err() {
            remote.remember_listing(&mut listing);
        }
        let lake_name = crate::redact::for_terminal(&remote.lake().name());
        self.show_warnings(&[]);
        let outcome = outcome?;
        self.suggest_trusting_packs(outcome.versions).await;
        if verbose && outcome.versions > 0 {
            warn!(
                "Fetched {} version{} ({} objects) from lake '{lake_name}'",
                outcome.versions,
                if outcome.versions == 1 { "" } else { "s" },
                outcome.objects
            );
        }
        self.listing = Some(listing);
        // Git may skip its own walk over every fetched object when the helper vouches for it;
        // the helper does only when it wrote the whole closure itself, into one pack that Git
        // finds by its `.keep` file (and removes when the fetch is over).
        if let Some(lock) = &outcome.lock {
            let lock = lock.to_string_lossy();
            self.out.send(&format!("lock {lock}\nconnectivity-ok\n"))?;
        }
        self.out.send("\n")?;
        // A clone's listing goes into the cache while Git goes on with the refs it fetched.
        self.remember_listing();
        Ok(())
    }

    /// Puts what the session's listing built into the cache, if it is not there yet.
    pub(super) fn remember_listing(&mut self) {
        if let (Some(remote), Some(listing)) = (self.remote.as_mut(), self.listing.as_mut()) {
            remote.remember_listing(listing);
        }
    }

    async fn push(&mut self, items: &[PushItem]) -> Result<(), Fatal> {
        let mut listing = self
            .listing
            .take()
            .ok_or_else(|| Fatal::new("protocol error: push before list for-push"))?;
        // After a plain `list` (a driver other than Git), the refs are listed again as for a
        // push: without the ref files' tokens and refs.json's, nothing could be written on
        // condition, and refs.json would be left behind.
        if !listing.for_push {
            let progress = self.progress();
            let remote = self.remote().await?;
            remote.remember_listing(&mut listing);
            let listed = remote.list_for_push(progress.as_ref()).await;
            self.show_warnings(&[]);
            listing = listed?;
        }
        let opts = PushOptions {
            dry_run: self.options.dry_run,
            atomic: self.options.atomic,
            cas: self.options.cas.clone(),
        };
        let updates: Vec<RefUpdate> = items
            .iter()
            .map(|i| RefUpdate {
                force: i.force,
                src: i.src.clone(),
                dst: i.dst.clone(),
            })
            .collect();
        self.remote().await?;
        if !opts.dry_run {
            let remote_name = Some(self.invocation.remote_name());
            let remote = self.remote.as_ref().expect("just opened");
            let warnings =
                crate::safety::before_first_write(remote.lake(), remote.repo(), remote_name)
                    .await?;
            self.show_warnings(&warnings);
        }
        let remote = self.remote().await?;
        let report = push::push(remote, &listing, &updates, &opts).await;
        self.show_warnings(&report.warnings);
        if self.out.trace {
            trace::line(&format!(
                "push: refs.json written in {} attempt(s)",
                report.refs_json_attempts
            ));
        }
        let mut reply: String = report
            .results
            .iter()
            .map(|(dst, result)| push_status(dst, result))
            .collect();
        reply.push('\n');
        self.out.send(&reply)
    }

    /// Makes a clone's relative folder address absolute in its configuration (see
    /// [`config::record_absolute_url`]); a failure only costs the later commands that fix.
    fn record_absolute_url(&mut self, url: &StoreUrl) {
        let addr = self.invocation.address().to_string();
        let StoreUrl::Local(path) = url else { return };
        if std::path::Path::new(&addr).is_absolute() || addr.contains("://") {
            return;
        }
        let remote_name = self.invocation.remote_name().to_string();
        let Ok(Some(repo)) = self.invocation.configured().repo() else {
            return;
        };
        // The folder as the system finds it now (`..` resolved, as `cd` would), else as given.
        let absolute = std::fs::canonicalize(path)
            .or_else(|_| std::path::absolute(path))
            .unwrap_or_else(|_| path.clone());
        let done = config::record_absolute_url(repo, &remote_name, &addr, &absolute);
        if self.out.trace {
            trace::line(&format!(
                "relative address '{addr}' recorded absolute: {done:?}"
            ));
        }
        if let Err(e) = done {
            warn!(
                "warning: cannot record the lake's absolute address in remote.{}.url: {}",
                remote_name,
                crate::redact::for_terminal(&e.to_string())
            );
        }
    }

    /// Opens the lake on first use.
    async fn remote(&mut self) -> Result<&mut Remote, Fatal> {
        if self.remote.is_none() {
            let opening = self.opening.take();
            self.remote = Some(open_remote(&mut self.invocation, true, opening).await?);
        }
        Ok(self.remote.as_mut().expect("just opened"))
    }

    fn progress(&self) -> Box<dyn Progress> {
        if self.options.progress {
            Box::new(progress::Stderr::default())
        } else {
            Box::new(progress::Silent)
        }
    }

    /// Shows the lake's warnings and `more` on stderr, Git-style.
    fn show_warnings(&self, more: &[String]) {
        let lake = self.remote.iter().flat_map(|r| r.take_warnings());
        for w in lake.chain(more.iter().cloned()) {
            warn!("warning: {}", crate::redact::for_terminal(&w));
        }
    }

    /// After a fetch that read many versions one by one where the lake's packs could have
    /// given them, Git-style hints on trusting the packs (`advice.fdlTrustPacks` false
    /// silences them, as Git's `advice.*` do).
    async fn suggest_trusting_packs(&self, versions: usize) {
        let name = self.invocation.remote_name();
        let Some(remote) = self.remote.as_ref() else {
            return;
        };
        if !crate::config::is_remote_name(name) || !remote.suggests_trusting_packs(versions).await {
            return;
        }
        let why = match remote.lake().is_local() {
            true => "a local folder's listing cannot",
            false => "plain HTTP lists nothing to",
        };
        let name = crate::redact::for_terminal(name);
        let lines = [
            format!(
                "This lake has packs (git-packs/), but each of the {versions} versions was read"
            ),
            format!("and mapped one by one: {why} check the packs"),
            "against the lake's files. If you trust whoever writes the packs as much".into(),
            "as whoever writes the versions, read the packs instead (each commit is".into(),
            "still made again from their blobs; see PACKS in git-remote-fdl(1)):".into(),
            String::new(),
            format!("\tgit config remote.{name}.fdlTrustPacks true"),
            String::new(),
            "for this repository's next fetches, or clone with".into(),
            format!("-c remote.{name}.fdlTrustPacks=true."),
            "Disable this message with \"git config advice.fdlTrustPacks false\"".into(),
        ];
        for line in lines {
            match line.is_empty() {
                true => warn!("hint:"),
                false => warn!("hint: {line}"),
            }
        }
    }

    fn trace_requests(&self) {
        if let (true, Some(r)) = (self.out.trace, &self.remote) {
            trace::line(&format!("requests so far: {}", r.lake().requests_summary()));
        }
    }
}
