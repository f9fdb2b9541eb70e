//! The commands for humans (`ls`, `verify`, `fsck`, `catalog`, `pack`, `doctor`): what each
//! computes, as data; the binary prints it. Nothing here writes to the terminal.

mod catalog;
pub mod doctor;
mod fsck;
mod ls;
mod named;
mod pack;
mod verify_signatures;
mod workspace;

pub use catalog::{catalog, CatalogOutcome, CatalogRequest};
pub use fsck::{fsck, FsckReport};
pub use ls::{ls, RefList};
pub use pack::pack;
pub use verify_signatures::{verify, VerifyReport, VerifyRow};
