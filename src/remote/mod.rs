//! One lake as a Git remote: what `list` shows and what `fetch` writes, on top of the lake
//! reader, the mapping, the cache and the local repository. One file per concern: errors,
//! the remote opened (cache, pack, warnings), the listing, `list` and `fetch`.

mod claims_listing;
mod error;
mod fetch;
mod list;
mod listing;
mod pack_claims;
mod packed;
mod shallow_fetch;
mod state;

pub(crate) use error::RemoteError;
pub(crate) use fetch::Want;
pub(crate) use listing::Listing;
pub(crate) use shallow_fetch::ShallowAsk;
pub(crate) use state::Remote;
