//! What wraps any backend, as object_store's wrapping stores wrap a store: each request
//! counted (`stats.rs`), traced (`traced.rs`), and let through the gate that keeps a bounded
//! number in flight and slows down while the store throttles (`throttle.rs`).

pub(crate) mod stats;
pub(crate) mod throttle;
pub(crate) mod traced;
