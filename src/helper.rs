//! The helper's IO loop: reads Git's requests from stdin, answers on stdout (through one
//! writer), reports on stderr in Git's words. One function per command; everything they
//! decide, they ask of `remote` and `push`, and translate the answers into protocol replies.

use std::io::{BufRead, Write};

use crate::cache::{Cache, Preload};
use crate::config;
use crate::fatal::Fatal;
use crate::lake::Lake;
use crate::progress::{self, Progress};
use crate::protocol::{self, ListLine, Options, Parser, PushItem, PushStatus, Request};
use crate::push::{self, PushOptions, RefUpdate, Rejection};
use crate::remote::{Listing, Remote, ShallowAsk, Want};
use crate::repo::Repo;
use crate::store::{Store, StoreUrl};
use crate::trace;

/// A line on stderr for the user (warnings): a full or closed stderr is passed over, as Git
/// does, never a panic (`eprintln!` panics when the write fails).
macro_rules! warn {
    ($($arg:tt)*) => {{
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

/// Git runs the helper with the remote's name as its URL when `remote.<name>.vcs=fdl` is set
/// and the remote has no URL: the name is then no lake to open as a folder.
fn refuse_a_remote_without_url(remote_name: &str) -> Result<(), Fatal> {
    let Ok(Some(repo)) = Repo::from_env() else {
        return Ok(());
    };
    let vcs = repo.config(&format!("remote.{remote_name}.vcs"));
    let url = repo.config(&format!("remote.{remote_name}.url"));
    match (vcs, url) {
        (Some(_), None) => Err(Fatal::with_hint(
            format!("remote '{remote_name}' has no URL"),
            format!(
                "give it the lake's address: git config remote.{remote_name}.url fdl::<address>"
            ),
        )),
        _ => Ok(()),
    }
}

/// Runs a protocol session for `git-remote-fdl <remote> [<url>]` on stdin and stdout.
pub fn run(remote_name: &str, url: Option<&str>) -> Result<(), Fatal> {
    if url.is_none_or(|u| u == remote_name) {
        refuse_a_remote_without_url(remote_name)?;
    }
    let mut session = Session::new(remote_name, url.unwrap_or(remote_name), std::io::stdout());
    // The repository and where the last listing split the refs are read while the runtime
    // starts: the first request waits for all three.
    let early = session
        .store_url()
        .ok()
        .and_then(|url| Early::start(remote_name, url));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_all()
        .build()
        .map_err(|e| Fatal::new(format!("cannot start: {e}")))?;
    let stdin = std::io::stdin();
    let served = runtime.block_on(session.serve(stdin.lock(), early));
    // A listing no fetch followed (an `ls-remote` in a repository) is remembered now.
    session.remember_listing();
    // Git waits for the helper to exit. What is left on a cloud store's runtime once the
    // session is over only reads (a cache file being preloaded, idle connections): it is not
    // waited for. A folder's writes run on blocking threads, and those are.
    let cloud = session
        .store_url()
        .is_ok_and(|u| !matches!(u, StoreUrl::Local(_)));
    if cloud {
        // Nor is its memory given back piece by piece (half a millisecond at 1,000 refs):
        // the process ends now. What dropping the remote does is done first.
        if let Some(remote) = session.remote.as_mut() {
            remote.end();
        }

        std::mem::forget(session);
        runtime.shutdown_background();
    }
    served.map_err(|f| name_the_remote(f, remote_name))
}

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

/// Hints name configuration keys as `remote.<remote>.<key>`: with a configured remote, its name.
fn name_the_remote(mut f: Fatal, remote_name: &str) -> Fatal {
    if config::is_remote_name(remote_name) {
        f.hint = f
            .hint
            .map(|h| h.replace("remote.<remote>.", &format!("remote.{remote_name}.")));
    }
    f
}

/// The longest line the helper takes from Git. Git's lines hold a command and one or two ref
/// names; a longer line is not Git, and reading it whole would let it take any memory.
pub const MAX_LINE: usize = 64 << 10;

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

/// The one writer of the protocol's output, tracing what it sends.
struct Out<W: Write> {
    writer: W,
    trace: bool,
}

impl<W: Write> Out<W> {
    fn send(&mut self, text: &str) -> Result<(), Fatal> {
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

/// One session's state: what Git set, the lake once opened, and the last listing.
struct Session<W: Write> {
    out: Out<W>,
    remote_name: String,
    url: String,
    options: Options,
    remote: Option<Remote>,
    /// The lake being opened since the session began (see [`Opening`]).
    opening: Option<Opening>,
    listing: Option<Listing>,
    /// Flags for a partial history Git passed on (`--depth`, ...), said once, then emptied.
    ignored_flags: Vec<&'static str>,
    warned_partial: bool,
}

impl<W: Write> Session<W> {
    fn new(remote_name: &str, url: &str, writer: W) -> Session<W> {
        Session {
            out: Out {
                writer,
                trace: trace::enabled(),
            },
            remote_name: remote_name.to_string(),
            url: url.to_string(),
            options: Options::default(),
            remote: None,
            opening: None,
            listing: None,
            ignored_flags: Vec::new(),
            warned_partial: false,
        }
    }

    /// Reads requests until Git ends the session.
    async fn serve(&mut self, mut input: impl BufRead, early: Option<Early>) -> Result<(), Fatal> {
        self.opening = self
            .store_url()
            .ok()
            .zip(early)
            .map(|(url, early)| Opening::start(url, early));
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
        let url = self.store_url()?;
        if for_push && url.is_read_only() {
            return Err(Fatal::read_only(&url, "pushed", "push to"));
        }
        if self.remote.is_none() {
            self.record_absolute_url(&url);
            // A push needs history only for a commit no ref holds: it reads the commits file
            // then, not beside every listing.
            let opening = self.opening.take();
            self.remote = Some(open_remote(&self.remote_name, &url, !for_push, opening).await?);
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
    fn remember_listing(&mut self) {
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
            let remote_name = Some(self.remote_name.as_str());
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

    /// The lake's address, as Git gave it (relative folders taken from the current folder).
    fn store_url(&self) -> Result<StoreUrl, Fatal> {
        let addr = self.url.strip_prefix("fdl::").unwrap_or(&self.url);
        let cwd =
            std::env::current_dir().map_err(|e| Fatal::new(format!("no current folder: {e}")))?;
        StoreUrl::parse(addr, &cwd).map_err(|e| Fatal::new(e.to_string()))
    }

    /// Makes a clone's relative folder address absolute in its configuration (see
    /// [`config::record_absolute_url`]); a failure only costs the later commands that fix.
    fn record_absolute_url(&self, url: &StoreUrl) {
        let addr = self.url.strip_prefix("fdl::").unwrap_or(&self.url);
        let StoreUrl::Local(path) = url else { return };
        if std::path::Path::new(addr).is_absolute() || addr.contains("://") {
            return;
        }
        let Ok(Some(repo)) = Repo::from_env() else {
            return;
        };
        // The folder as the system finds it now (`..` resolved, as `cd` would), else as given.
        let absolute = std::fs::canonicalize(path)
            .or_else(|_| std::path::absolute(path))
            .unwrap_or_else(|_| path.clone());
        let done = config::record_absolute_url(&repo, &self.remote_name, addr, &absolute);
        if self.out.trace {
            trace::line(&format!(
                "relative address '{addr}' recorded absolute: {done:?}"
            ));
        }
        if let Err(e) = done {
            warn!(
                "warning: cannot record the lake's absolute address in remote.{}.url: {}",
                self.remote_name,
                crate::redact::for_terminal(&e.to_string())
            );
        }
    }

    /// Opens the lake on first use.
    async fn remote(&mut self) -> Result<&mut Remote, Fatal> {
        if self.remote.is_none() {
            let url = self.store_url()?;
            let opening = self.opening.take();
            self.remote = Some(open_remote(&self.remote_name, &url, true, opening).await?);
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

    fn trace_requests(&self) {
        if let (true, Some(r)) = (self.out.trace, &self.remote) {
            trace::line(&format!("requests so far: {}", r.lake().requests_summary()));
        }
    }
}

/// The lake being opened since the session began. Git lists the refs first whatever it does
/// (`list`, `list for-push`), so on a cloud store the first round trip (`fdl.json`, HEAD,
/// `refs.json` and the ref listing) is under way while Git and the helper exchange
/// capabilities and options. Errors wait for the listing that needs the lake.
struct Opening(tokio::task::JoinHandle<Result<Lake, Fatal>>);

impl Opening {
    /// Starts opening the lake at `url` (a cloud store, see [`Early::start`]). The store is
    /// made here, on the thread that then reads Git (no request), and the first round trip on
    /// a worker.
    fn start(url: StoreUrl, early: Early) -> Opening {
        let read = early
            .options
            .join()
            .unwrap_or_else(|_| Ok((Vec::new(), false)));
        let use_packs = matches!(read, Ok((_, true)));
        let prepared = read.and_then(|(opts, _)| {
            Store::open(&url, &opts).map_err(|e| Fatal::cannot_open(&url, &e))
        });
        let hints = early.hints.join().unwrap_or_default();
        // No names remembered: most likely a clone, which reads the packs' list first thing.
        let pack_list = use_packs && hints.is_empty();
        Opening(tokio::spawn(async move {
            Ok(Lake::open_listing(prepared?, &hints, pack_list).await?)
        }))
    }

    async fn lake(self) -> Result<Lake, Fatal> {
        self.0
            .await
            .map_err(|e| Fatal::new(format!("cannot open the lake: {e}")))?
    }
}

/// The store's options, from the configuration of the repository, and whether the lake's
/// packs may be read (`fdlUsePacks`; an error in it is said when the remote is opened).
type EarlyConfig = (Vec<(String, String)>, bool);

/// What a cloud session's first request needs, read on threads of their own while the
/// runtime starts: the repository Git names (`GIT_DIR`, for the remote's configuration), and
/// where the ref listing splits (the names the last listing found, in that repository's cache,
/// else the user's). None for a folder: it lists its refs in one walk, and is not opened early
/// (a relative one is first recorded absolute).
struct Early {
    options: std::thread::JoinHandle<Result<EarlyConfig, Fatal>>,
    hints: std::thread::JoinHandle<Vec<String>>,
}

impl Early {
    fn start(remote_name: &str, url: StoreUrl) -> Option<Early> {
        if matches!(url, StoreUrl::Local(_)) {
            return None;
        }
        let remote_name = remote_name.to_string();
        Some(Early {
            options: std::thread::spawn(move || {
                let repo = Repo::from_env().map_err(crate::remote::RemoteError::from)?;
                let options = config::store_options(repo.as_ref(), &remote_name)?;
                let use_packs = config::use_packs(repo.as_ref(), &remote_name).unwrap_or(false);
                Ok((options, use_packs))
            }),
            hints: std::thread::spawn(move || Early::hints(&url)),
        })
    }

    fn hints(url: &StoreUrl) -> Vec<String> {
        if matches!(url, StoreUrl::Local(_)) {
            return Vec::new();
        }
        let git_dir = std::env::var_os("GIT_DIR").map(std::path::PathBuf::from);
        crate::cache::root_for(git_dir.as_deref())
            .map(|root| crate::cache::remembered_names(&root, &url.to_string()))
            .unwrap_or_default()
    }
}

/// The store a remote names, with its configuration.
fn store_of(remote_name: &str, url: &StoreUrl, repo: Option<&Repo>) -> Result<Store, Fatal> {
    let opts = config::store_options(repo, remote_name)?;
    Store::open(url, &opts).map_err(|e| Fatal::cannot_open(url, &e))
}

/// Opens the lake a remote names, with the remote's configuration (`opening`, if started);
/// with `preload`, the cache's commits file is read meanwhile (where a round trip takes time).
async fn open_remote(
    remote_name: &str,
    url: &StoreUrl,
    preload: bool,
    opening: Option<Opening>,
) -> Result<Remote, Fatal> {
    let repo = Repo::from_env().map_err(crate::remote::RemoteError::from)?;
    // Git lists the refs first whatever it does: they are listed beside fdl.json, in ranges
    // split where the last listing's names say.
    let opening = match opening {
        Some(o) => o,
        None => {
            let store = store_of(remote_name, url, repo.as_ref())?;
            let hints = Early::hints(url);
            Opening(tokio::spawn(async move {
                Ok(Lake::open_listing(store, &hints, false).await?)
            }))
        }
    };
    // Meanwhile, the cache of the lake last seen at this URL is opened from the file of refs
    // (kept if fdl.json names the same lake).
    let url_text = url.to_string();
    let root = crate::cache::root_for(repo.as_ref().map(|r| r.git_dir()));
    let remembered = root
        .as_ref()
        .map(|root| crate::cache::remembered(root, &url_text))
        .unwrap_or_default();
    let cache = root.zip(remembered.lake_id.clone()).map(|(root, id)| {
        let id = Some(id.as_str()).filter(|i| !i.is_empty());
        Cache::open(&root, &url_text, id, remembered).inside(repo.as_ref().map(|r| r.git_dir()))
    });
    // Where a round trip takes time, the commits file is read meanwhile (and left unread if
    // every ref turns out known); a folder answers at once, so it is read only if needed.
    let is_local = matches!(url, StoreUrl::Local(_));
    let preload = cache
        .as_ref()
        .filter(|_| preload && !is_local)
        .map(Preload::start);
    let lake = opening.lake().await?;
    let policy = config::signature_policy(repo.as_ref(), remote_name)?;
    let trust_packs = match repo
        .as_ref()
        .filter(|_| config::is_remote_name(remote_name))
    {
        Some(repo) => config::remote_bool(repo, remote_name, "fdlTrustPacks")? == Some(true),
        None => false,
    };
    let packs_allowed = config::use_packs(repo.as_ref(), remote_name)?;
    let cache = cache.filter(|c| c.is_of(lake.config().id.as_deref()));
    let preload = preload.filter(|_| cache.is_some());
    let mut remote = Remote::with_cache(lake, repo, cache, preload);
    remote.require_signatures(policy);
    remote.trust_packs(trust_packs);
    remote.allow_packs(packs_allowed);
    Ok(remote)
}

/// The `list` reply: HEAD as a symref first (Git resolves its value), as Git's own servers
/// list it, then every ref in name order. No HEAD for a push, as Git's own receive-pack: or
/// `--mirror` would try to delete it.
fn list_lines(listing: &Listing, for_push: bool) -> Vec<ListLine> {
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
fn push_status(dst: &str, result: &push::RefResult) -> String {
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
