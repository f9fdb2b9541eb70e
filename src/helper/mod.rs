//! The helper's protocol side: `run` reads the invocation once (`invocation.rs`), then serves a
//! session (`session.rs`) on stdin and stdout, the lake opened as early as Git allows
//! (`opening.rs`), the answers written by one writer (`reply.rs`); warnings on stderr in Git's
//! words.

use crate::config;
use crate::fatal::Fatal;
use crate::store::StoreUrl;

/// A line on stderr for the user (warnings): a full or closed stderr is passed over, as Git
/// does, never a panic (`eprintln!` panics when the write fails).
macro_rules! warn {
    ($($arg:tt)*) => {{
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

mod invocation;
mod opening;
mod reply;
mod session;

use invocation::Invocation;
use opening::Early;
use session::Session;

/// Git runs the helper with the remote's name as its URL when `remote.<name>.vcs=fdl` is set
/// and the remote has no URL: the name is then no lake to open as a folder.
fn refuse_a_remote_without_url(invocation: &mut Invocation) -> Result<(), Fatal> {
    let remote_name = invocation.remote_name().to_string();
    let Ok(Some(repo)) = invocation.configured().repo() else {
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
    let mut invocation = Invocation::read(remote_name, url);
    if url.is_none_or(|u| u == remote_name) {
        refuse_a_remote_without_url(&mut invocation)?;
    }
    // Where the last listing split the refs is read while the runtime starts (the first
    // request waits for it).
    let early = invocation.url().ok().and_then(Early::start);
    let cloud = invocation
        .url()
        .is_ok_and(|u| !matches!(u, StoreUrl::Local(_)));
    let mut session = Session::new(invocation, std::io::stdout());
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

/// Hints name configuration keys as `remote.<remote>.<key>`: with a configured remote, its name.
fn name_the_remote(f: Fatal, remote_name: &str) -> Fatal {
    match config::is_remote_name(remote_name) {
        true => f.map_hints(|h| h.replace("remote.<remote>.", &format!("remote.{remote_name}."))),
        false => f,
    }
}
