//! Writing on condition: an object's version token, the condition of a write, and why a
//! conditional write did not happen.

use bytes::Bytes;

use super::error::StoreError;

/// A store's version of an object, for writing on condition.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Token {
    /// The object's ETag, as the store gave it.
    pub e_tag: Option<String>,
    /// The object's version, where the store keeps versions (a local folder's file token).
    pub version: Option<String>,
}

/// A file's content with its version token.
#[derive(Debug, Clone)]
pub struct Versioned {
    /// The content.
    pub bytes: Bytes,
    /// The version it was read at.
    pub token: Token,
}

/// The condition of a write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WriteMode {
    /// Only if nothing is there.
    Create,
    /// Only if the object is still at this version.
    Update(Token),
}

/// Why a conditional write did not happen.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// The condition failed: something was there (create) or it changed (update, delete).
    #[error("changed since it was read")]
    Conflict,
    /// The store refused the write and is sure nothing changed (a local folder always knows).
    #[error(transparent)]
    Refused(StoreError),
    /// The request failed: the write may or may not have happened.
    #[error(transparent)]
    Store(#[from] StoreError),
}
