//! What each kind's builder gives the cloud backend: the client, how it deletes on condition,
//! and how it lists in pages of a chosen size.

use std::sync::Arc;

use object_store::ObjectStore;

use crate::store::cloud::delete::Deleter;
use crate::store::cloud::pages::Pages;

/// What a cloud's builder makes (no pages over plain HTTP, which cannot list).
pub(crate) struct Parts {
    pub store: Arc<dyn ObjectStore>,
    pub deleter: Option<Deleter>,
    pub pages: Option<Pages>,
}
