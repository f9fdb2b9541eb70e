//! Listing a range of keys in pages of about its size. S3, GCS and Azure answer a listing
//! with a full page (1,000 keys) unless told otherwise, so a range that ends well before the
//! listing does would bring back, and have parsed, hundreds of keys past its end.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use futures::stream::{self, BoxStream, StreamExt, TryStreamExt};
use object_store::list::{PaginatedListOptions, PaginatedListStore};
use object_store::ObjectMeta;

/// A cloud store's listing in pages of a chosen size.
#[derive(Clone)]
pub(in crate::store) struct Pages {
    store: Arc<dyn PaginatedListStore>,
}

impl std::fmt::Debug for Pages {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Pages")
    }
}

/// Where a paged listing stands: the next page's token, or the end.
enum Next {
    First,
    Token(String),
    End,
}

impl Pages {
    pub(crate) fn new(store: Arc<dyn PaginatedListStore>) -> Pages {
        Pages { store }
    }

    /// The objects whose keys start with `prefix` (a folder, ending in `/`), after `offset`,
    /// in key order, with their ETags and sizes, asked for `page` at a time; `requests` counts the pages
    /// asked for.
    pub(in crate::store) fn list(
        &self,
        prefix: String,
        offset: Option<String>,
        page: usize,
        requests: Arc<AtomicU64>,
    ) -> BoxStream<'static, Result<ObjectMeta, object_store::Error>> {
        let store = self.store.clone();
        stream::try_unfold(Next::First, move |next| {
            let (store, prefix, offset) = (store.clone(), prefix.clone(), offset.clone());
            let requests = requests.clone();
            async move {
                let page_token = match next {
                    Next::End => return Ok::<_, object_store::Error>(None),
                    Next::First => None,
                    Next::Token(t) => Some(t),
                };
                requests.fetch_add(1, Ordering::Relaxed);
                let opts = PaginatedListOptions {
                    offset,
                    max_keys: Some(page),
                    page_token,
                    ..Default::default()
                };
                let got = store.list_paginated(Some(&prefix), opts).await?;
                let next = got.page_token.map_or(Next::End, Next::Token);
                Ok(Some((got.result.objects, next)))
            }
        })
        .map_ok(|objects: Vec<_>| stream::iter(objects.into_iter().map(Ok)))
        .try_flatten()
        .boxed()
    }
}
