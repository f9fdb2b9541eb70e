//! The helper's IO loop: reads Git's requests from stdin, answers on stdout (through one
//! writer), reports on stderr in Git's words. Everything it decides, it asks of `remote`.

use std::io::{BufRead, Write};

use crate::lake::Lake;
use crate::progress::{self, Progress};
use crate::protocol::{self, OptionReply, Options, Parser, Request};
use crate::push::{self, PushOptions};
use crate::remote::{Listing, Remote, RemoteError};
use crate::repo::Repo;
use crate::signatures::{AllowedSigners, Policy, DEFAULT_NAMESPACE};
use crate::store::{Store, StoreUrl};
use crate::trace;

/// A failure that ends the session: `fatal: <message>` and optional `hint:` lines.
#[derive(Debug)]
pub struct Fatal {
    pub message: String,
    pub hint: Option<String>,
}

impl From<RemoteError> for Fatal {
    fn from(e: RemoteError) -> Fatal {
        Fatal {
            hint: e.hint(),
            message: e.to_string(),
        }
    }
}

impl Fatal {
    fn new(message: impl Into<String>) -> Fatal {
        Fatal {
            message: message.into(),
            hint: None,
        }
    }

    /// Prints the error Git-style.
    pub fn report(&self) {
        let mut err = std::io::stderr().lock();
        let _ = writeln!(err, "fatal: {}", crate::store::redact(&self.message));
        if let Some(h) = &self.hint {
            for line in h.lines() {
                let _ = writeln!(err, "hint: {line}");
            }
        }
    }
}

/// The one writer of stdout, tracing what it sends.
struct Out {
    trace: bool,
}

impl Out {
    fn send(&self, text: &str) -> Result<(), Fatal> {
        if self.trace {
            for line in text.split_inclusive('\n') {
                trace::line(&format!("-> {}", line.trim_end_matches('\n')));
            }
        }
        let mut out = std::io::stdout().lock();
        out.write_all(text.as_bytes())
            .and_then(|_| out.flush())
            .map_err(|e| Fatal::new(format!("cannot write to Git: {e}")))
    }
}

/// Git's configuration keys for a remote, mapped to object_store option names.
pub const CONFIG_KEYS: [(&str, &str); 3] = [
    ("fdlEndpoint", "endpoint"),
    ("fdlRegion", "region"),
    ("fdlAllowHttp", "allow_http"),
];

/// Store options for remote `name` from Git's configuration.
pub fn store_options(repo: Option<&Repo>, name: &str) -> Result<Vec<(String, String)>, Fatal> {
    let Some(repo) = repo else {
        return Ok(Vec::new());
    };
    // Without a configured remote (a bare URL), Git passes the URL as the name.
    if name.contains([':', '/', '\\']) {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    for (key, option) in CONFIG_KEYS {
        if let Some(v) = repo.config(&format!("remote.{name}.{key}")) {
            out.push((option.to_string(), v));
        }
    }
    for raw in repo.config_all(&format!("remote.{name}.fdlOption")) {
        let (k, v) = raw.split_once('=').ok_or_else(|| Fatal {
            message: format!(
                "remote.{name}.fdlOption: '{}' is not key=value",
                raw.split('=').next().unwrap_or("")
            ),
            hint: Some(
                "example: git config --add remote.origin.fdlOption aws_skip_signature=true".into(),
            ),
        })?;
        out.push((k.trim().to_string(), v.trim().to_string()));
    }
    Ok(out)
}

/// Whether Git's configuration turns a boolean on (`true`, `yes`, `on`, `1`).
fn config_true(value: Option<String>) -> bool {
    value.is_some_and(|v| matches!(v.to_ascii_lowercase().as_str(), "true" | "yes" | "on" | "1"))
}

/// The allowed-signers file for remote `name`: `remote.<name>.fdlAllowedSignersFile`, else
/// Git's own `gpg.ssh.allowedSignersFile`.
pub fn allowed_signers_file(repo: &Repo, name: &str) -> Option<std::path::PathBuf> {
    let raw = repo
        .config(&format!("remote.{name}.fdlAllowedSignersFile"))
        .or_else(|| repo.config("gpg.ssh.allowedSignersFile"))?;
    Some(expand_home(&raw))
}

/// `~/x` as Git reads paths in its configuration.
pub fn expand_home(path: &str) -> std::path::PathBuf {
    match (path.strip_prefix("~/"), std::env::var_os("HOME")) {
        (Some(rest), Some(home)) => std::path::Path::new(&home).join(rest),
        _ => std::path::PathBuf::from(path),
    }
}

/// The signature policy of remote `name`, when `remote.<name>.fdlRequireSignatures` is on.
fn signature_policy(repo: Option<&Repo>, name: &str) -> Result<Option<Policy>, Fatal> {
    let Some(repo) = repo else { return Ok(None) };
    if name.contains([':', '/', '\\'])
        || !config_true(repo.config(&format!("remote.{name}.fdlRequireSignatures")))
    {
        return Ok(None);
    }
    let Some(path) = allowed_signers_file(repo, name) else {
        return Err(Fatal {
            message: format!("remote.{name}.fdlRequireSignatures is on, but no allowed signers file is configured"),
            hint: Some(format!(
                "name the keys you trust: git config remote.{name}.fdlAllowedSignersFile ~/.ssh/allowed_signers"
            )),
        });
    };
    let trusted = AllowedSigners::load(&path).map_err(Fatal::new)?;
    let namespace = repo
        .config(&format!("remote.{name}.fdlSignatureNamespace"))
        .unwrap_or_else(|| DEFAULT_NAMESPACE.to_string());
    Ok(Some(Policy { trusted, namespace }))
}

/// Runs a protocol session for `git-remote-fdl <remote> [<url>]`; returns the exit code.
pub fn run(remote_name: &str, url: Option<&str>) -> i32 {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            Fatal::new(format!("cannot start: {e}")).report();
            return 128;
        }
    };
    match runtime.block_on(session(remote_name, url.unwrap_or(remote_name))) {
        Ok(()) => 0,
        Err(f) => {
            f.report();
            128
        }
    }
}

struct State {
    remote_name: String,
    url: String,
    options: Options,
    remote: Option<Remote>,
    listing: Option<Listing>,
}

impl State {
    async fn remote(&mut self) -> Result<&mut Remote, Fatal> {
        if self.remote.is_none() {
            let addr = self.url.strip_prefix("fdl::").unwrap_or(&self.url);
            let cwd = std::env::current_dir()
                .map_err(|e| Fatal::new(format!("no current folder: {e}")))?;
            let url = StoreUrl::parse(addr, &cwd).map_err(|e| Fatal::new(e.to_string()))?;
            let repo = Repo::from_env().map_err(|e| Fatal::from(RemoteError::from(e)))?;
            let opts = store_options(repo.as_ref(), &self.remote_name)?;
            let store = Store::open(&url, &opts).map_err(|e| Fatal {
                message: format!("cannot open lake '{url}': {e}"),
                hint: Some("see 'git-remote-fdl help' for addresses and configuration".into()),
            })?;
            let lake = Lake::open(store)
                .await
                .map_err(|e| Fatal::from(RemoteError::from(e)))?;
            let policy = signature_policy(repo.as_ref(), &self.remote_name)?;
            let mut remote = Remote::new(lake, repo);
            remote.require_signatures = policy;
            self.remote = Some(remote);
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

    fn show_warnings(&self) {
        if let Some(r) = &self.remote {
            for w in r.take_warnings() {
                eprintln!("warning: {}", crate::store::redact(&w));
            }
        }
    }
}

async fn session(remote_name: &str, url: &str) -> Result<(), Fatal> {
    let tracing = trace::enabled();
    let out = Out { trace: tracing };
    let mut state = State {
        remote_name: remote_name.to_string(),
        url: url.to_string(),
        options: Options::default(),
        remote: None,
        listing: None,
    };
    let mut parser = Parser::default();
    let stdin = std::io::stdin();
    let mut line = String::new();
    loop {
        line.clear();
        let n = stdin
            .lock()
            .read_line(&mut line)
            .map_err(|e| Fatal::new(format!("cannot read from Git: {e}")))?;
        if tracing {
            trace::line(&format!("<- {}", line.trim_end_matches('\n')));
        }
        let request = if n == 0 {
            Request::Quit
        } else {
            match parser.feed(line.trim_end_matches('\n')) {
                Ok(Some(r)) => r,
                Ok(None) => continue,
                Err(e) => return Err(Fatal::new(format!("protocol error: {e}"))),
            }
        };
        match request {
            Request::Quit => return Ok(()),
            Request::Capabilities => out.send(&protocol::capabilities(true))?,
            Request::Option { name, value } => {
                let reply = state.options.set(&name, &value, true);
                out.send(&reply.line())?;
                if let OptionReply::Error(_) = reply {
                    continue;
                }
            }
            Request::List { for_push } => {
                let progress = state.progress();
                let remote = state.remote().await?;
                if for_push && remote.lake.store.url().is_read_only() {
                    return Err(Fatal {
                        message: format!(
                            "lake '{}' is served over plain HTTP, which is read-only: nothing was pushed",
                            remote.lake.name()
                        ),
                        hint: Some("push to the lake's store address instead (s3://, gs://, az:// or a folder)".into()),
                    });
                }
                let listing = if for_push {
                    remote.list_for_push(progress.as_ref()).await
                } else {
                    remote.list(progress.as_ref()).await
                };
                state.show_warnings();
                let listing = listing?;
                let mut lines = listing.lines();
                if for_push {
                    // As Git's own receive-pack: no HEAD for a push, or `--mirror` would try
                    // to delete it.
                    lines.retain(|l| !matches!(l, protocol::ListLine::Symref { .. }));
                }
                out.send(&protocol::list(&lines, state.options.object_format))?;
                state.listing = Some(listing);
            }
            Request::Fetch(items) => {
                let progress = state.progress();
                let mut listing = state
                    .listing
                    .take()
                    .ok_or_else(|| Fatal::new("protocol error: fetch before list"))?;
                let verbose = state.options.progress || state.options.verbosity > 1;
                let remote = state.remote().await?;
                let outcome = remote.fetch(&mut listing, &items, progress.as_ref()).await;
                let lake_name = remote.lake.name();
                let stats = remote.lake.store.stats.summary();
                state.show_warnings();
                let outcome = outcome?;
                if verbose && outcome.versions > 0 {
                    eprintln!(
                        "Fetched {} version{} ({} objects) from lake '{lake_name}'",
                        outcome.versions,
                        if outcome.versions == 1 { "" } else { "s" },
                        outcome.objects
                    );
                }
                if tracing {
                    trace::line(&format!("requests: {stats}"));
                }
                state.listing = Some(listing);
                // Git may skip its own walk over every fetched object when the helper vouches
                // for it; the helper does only when it wrote the whole closure itself.
                if state.options.check_connectivity && outcome.self_contained {
                    out.send("connectivity-ok\n")?;
                }
                out.send("\n")?;
            }
            Request::Push(items) => {
                let listing = state
                    .listing
                    .take()
                    .ok_or_else(|| Fatal::new("protocol error: push before list for-push"))?;
                let opts = PushOptions {
                    dry_run: state.options.dry_run,
                    atomic: state.options.atomic,
                    cas: state.options.cas.clone(),
                };
                let remote = state.remote().await?;
                let report = push::push(remote, &listing, &items, &opts).await;
                let stats = remote.lake.store.stats.summary();
                state.show_warnings();
                for w in &report.warnings {
                    eprintln!("warning: {}", crate::store::redact(w));
                }
                if tracing {
                    trace::line(&format!(
                        "push: refs.json written in {} attempt(s); requests: {stats}",
                        report.refs_json_attempts
                    ));
                }
                let mut reply = String::new();
                for (dst, result) in &report.results {
                    reply.push_str(&protocol::push_status(
                        dst,
                        &result.as_ref().map(|n| n.as_deref()).map_err(|e| e.clone()),
                    ));
                }
                reply.push('\n');
                out.send(&reply)?;
            }
        }
        if tracing {
            if let Some(r) = &state.remote {
                trace::line(&format!(
                    "requests so far: {}",
                    r.lake.store.stats.summary()
                ));
            }
        }
    }
}
