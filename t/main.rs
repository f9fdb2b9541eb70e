//! End-to-end tests: real `git` driving the built helper against real stores (a local folder,
//! S3, GCS and Azure emulators on 127.0.0.1, a plain HTTP server). One binary, one module per area.

// The shared test support is one crate's private modules, `pub` to one another.
#![allow(unreachable_pub)]

mod support;

mod architecture;
mod backends;
mod bad_lakes;
mod conformance;
mod credentials;
mod ducklake;
mod golden;
mod hardening_caches;
mod hardening_edges;
mod hardening_human;
mod hardening_limits;
mod hardening_push;
mod hardening_read;
mod integrity;
mod manual;
mod mapping_vectors;
mod packs;
mod push;
mod read;
mod ref_names;
mod reliability;
mod remote_names;
mod signatures;
mod store_check;
mod stores;
mod submodules;
mod waves;
