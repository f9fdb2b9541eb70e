//! One lake as a Git remote: what `list` shows and what `fetch` writes, on top of the lake
//! reader, the mapping, the cache and the local repository. One file per concern: errors,
//! the remote opened (cache, pack, warnings), the listing, `list` and `fetch`.

mod error;
mod fetch;
mod list;
mod listing;
mod packed;
mod state;

pub use error::RemoteError;
pub use fetch::{FetchOutcome, Want};
pub use listing::Listing;
pub use state::{Remote, Saving};
