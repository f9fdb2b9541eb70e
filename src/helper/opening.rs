//! Opening the lake a session names: on a cloud store the first round trip begins while Git
//! sends its options (`Opening`), beside the cache of the lake last seen at that address.

use crate::cache::{Cache, Preload};
use crate::fatal::Fatal;
use crate::lake::Lake;
use crate::remote::Remote;
use crate::store::{Store, StoreUrl};

use super::invocation::{Configured, Invocation};

/// The lake being opened since the session began. Git lists the refs first whatever it does
/// (`list`, `list for-push`), so on a cloud store the first round trip (`fdl.json`, HEAD,
/// `refs.json` and the ref listing) is under way while Git and the helper exchange
/// capabilities and options. Errors wait for the listing that needs the lake.
pub(super) struct Opening(tokio::task::JoinHandle<Result<Lake, Fatal>>);

impl Opening {
    /// Starts opening the lake at `url` (a cloud store, see [`Early::start`]) with the store
    /// options `configured` gives. The store is made here, on the thread that then reads Git
    /// (no request), and the first round trip on a worker.
    pub(super) fn start(url: StoreUrl, configured: &Configured, early: Early) -> Opening {
        let use_packs = matches!(configured.use_packs(), Ok(true));
        let prepared = configured
            .store_options()
            .and_then(|opts| Store::open(&url, opts).map_err(|e| Fatal::cannot_open(&url, &e)));
        let hints = early.hints.join().unwrap_or_default();
        // No names remembered: most likely a clone, which reads the packs' list first thing.
        let pack_list = use_packs && hints.is_empty();
        Opening(tokio::spawn(async move {
            Ok(Lake::open_listing(prepared?, &hints, pack_list).await?)
        }))
    }

    pub(super) async fn lake(self) -> Result<Lake, Fatal> {
        self.0
            .await
            .map_err(|e| Fatal::new(format!("cannot open the lake: {e}")))?
    }
}

/// What a cloud session's first request needs besides the remote's configuration, read on a
/// thread of its own while the runtime starts: where the ref listing splits (the names the last
/// listing found, in the repository's cache, else the user's). None for a folder: it lists its
/// refs in one walk, and is not opened early (a relative one is first recorded absolute).
pub(super) struct Early {
    hints: std::thread::JoinHandle<Vec<String>>,
}

impl Early {
    pub(super) fn start(url: &StoreUrl) -> Option<Early> {
        if matches!(url, StoreUrl::Local(_)) {
            return None;
        }
        let url = url.clone();
        Some(Early {
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

/// Opens the lake the invocation names, with the remote's configuration (`opening`, if
/// started); with `preload`, the cache's commits file is read meanwhile (where a round trip
/// takes time).
pub(super) async fn open_remote(
    invocation: &mut Invocation,
    preload: bool,
    opening: Option<Opening>,
) -> Result<Remote, Fatal> {
    let url = invocation.url()?.clone();
    let configured = invocation.configured();
    let policy = configured.policy();
    let repo = configured.take_repo()?;
    // Git lists the refs first whatever it does: they are listed beside fdl.json, in ranges
    // split where the last listing's names say.
    let opening = match opening {
        Some(o) => o,
        None => {
            let options = configured.store_options()?;
            let store = Store::open(&url, options).map_err(|e| Fatal::cannot_open(&url, &e))?;
            let hints = Early::hints(&url);
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
    let policy = policy?;
    let trust_packs = configured.trust_packs()?;
    let packs_allowed = configured.use_packs()?;
    let cache = cache.filter(|c| c.is_of(lake.config().id.as_deref()));
    let preload = preload.filter(|_| cache.is_some());
    let mut remote = Remote::with_cache(lake, repo, cache, preload);
    remote.require_signatures(policy);
    remote.trust_packs(trust_packs);
    remote.allow_packs(packs_allowed);
    Ok(remote)
}
