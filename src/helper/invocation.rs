//! The invocation, read once: the remote's name, the address as Git gave it and parsed, and
//! the repository Git names with what its configuration says of the remote, handed to whoever
//! needs them rather than read again.

use crate::config;
use crate::fatal::Fatal;
use crate::repo::Repo;
use crate::signatures::Policy;
use crate::store::StoreUrl;

/// `git-remote-fdl <remote> [<url>]`, as Git ran it.
pub(super) struct Invocation {
    remote_name: String,
    /// The address as Git gave it, without `fdl::`.
    address: String,
    /// The address parsed, a relative folder taken from the current folder.
    url: Result<StoreUrl, Fatal>,
    configured: Configured,
}

impl Invocation {
    /// Parses the address, opens the repository and reads the remote's configuration. (gix's
    /// repository cannot cross threads: it is opened here, on the thread that keeps it.)
    pub(super) fn read(remote_name: &str, url: Option<&str>) -> Invocation {
        let given = url.unwrap_or(remote_name);
        let address = given.strip_prefix("fdl::").unwrap_or(given).to_string();
        let url = std::env::current_dir()
            .map_err(|e| Fatal::new(format!("no current folder: {e}")))
            .and_then(|cwd| StoreUrl::parse(&address, &cwd).map_err(|e| Fatal::new(e.to_string())));
        Invocation {
            remote_name: remote_name.to_string(),
            address,
            url,
            configured: Configured::read(remote_name),
        }
    }

    pub(super) fn remote_name(&self) -> &str {
        &self.remote_name
    }

    /// The address as Git gave it, without `fdl::`.
    pub(super) fn address(&self) -> &str {
        &self.address
    }

    /// The lake's address, parsed.
    pub(super) fn url(&self) -> Result<&StoreUrl, Fatal> {
        self.url.as_ref().map_err(Clone::clone)
    }

    /// What the repository says of the remote.
    pub(super) fn configured(&mut self) -> &mut Configured {
        &mut self.configured
    }
}

/// The repository Git names (`GIT_DIR`, none outside one) and what its configuration says of
/// the remote, each read once. An error waits for the request that needs the value, and is
/// said then, as when each was read where it was needed.
pub(super) struct Configured {
    repo: Result<Option<Repo>, Fatal>,
    store_options: Result<Vec<(String, String)>, Fatal>,
    use_packs: Result<bool, Fatal>,
    trust_packs: Result<bool, Fatal>,
    /// The remote's name, for what is read only when needed (the signature policy).
    name: String,
}

impl Configured {
    fn read(name: &str) -> Configured {
        let repo = match Repo::from_env() {
            Ok(repo) => repo,
            Err(e) => return Configured::failed(crate::remote::RemoteError::from(e).into()),
        };
        let r = repo.as_ref();
        let trust_packs = match r.filter(|_| config::is_remote_name(name)) {
            Some(repo) => config::remote_bool(repo, name, "fdlTrustPacks").map(|b| b == Some(true)),
            None => Ok(false),
        };
        Configured {
            store_options: config::store_options(r, name).map_err(Fatal::from),
            use_packs: config::use_packs(r, name).map_err(Fatal::from),
            trust_packs: trust_packs.map_err(Fatal::from),
            name: name.to_string(),
            repo: Ok(repo),
        }
    }

    /// What a repository that cannot be opened gives: its error, for every value.
    fn failed(e: Fatal) -> Configured {
        Configured {
            repo: Err(e.clone()),
            store_options: Err(e.clone()),
            use_packs: Err(e.clone()),
            trust_packs: Err(e),
            name: String::new(),
        }
    }

    pub(super) fn repo(&self) -> Result<Option<&Repo>, Fatal> {
        self.repo.as_ref().map(Option::as_ref).map_err(Clone::clone)
    }

    /// The repository, handed to the remote once it is opened.
    pub(super) fn take_repo(&mut self) -> Result<Option<Repo>, Fatal> {
        std::mem::replace(&mut self.repo, Ok(None))
    }

    /// The store's options (`remote.<name>.fdlOption`, `fdlEndpoint`, ...).
    pub(super) fn store_options(&self) -> Result<&[(String, String)], Fatal> {
        self.store_options.as_deref().map_err(Clone::clone)
    }

    /// Whether the lake's packs may be read (`fdlUsePacks`).
    pub(super) fn use_packs(&self) -> Result<bool, Fatal> {
        self.use_packs.clone()
    }

    /// Whether a clone over plain HTTP or from a local folder takes versions from the lake's
    /// packs, checking only that each commit is what its blobs make (`fdlTrustPacks`).
    pub(super) fn trust_packs(&self) -> Result<bool, Fatal> {
        self.trust_packs.clone()
    }

    /// The signature policy (`fdlRequireSignatures`), read only for a session that opens the
    /// lake (it reads the allowed-signers file), and before the repository is handed on.
    pub(super) fn policy(&self) -> Result<Option<Policy>, Fatal> {
        config::signature_policy(self.repo()?, &self.name).map_err(Fatal::from)
    }
}
