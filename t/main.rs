//! End-to-end tests: real `git` driving the built helper against real stores (a local folder,
//! S3, GCS and Azure emulators on 127.0.0.1, a plain HTTP server). One binary, one module per area.

// The shared test support is one crate's private modules, `pub` to one another.
#![allow(unreachable_pub)]

mod support;

mod addresses;
mod architecture;
mod architecture_files;
mod architecture_imports;
mod atomic_push;
mod backends;
mod bad_lakes;
mod bad_lakes_links;
mod cache;
mod catalog;
mod cli;
mod concurrent_fetches;
mod config;
mod conformance;
mod credentials;
mod ducklake;
mod errors;
mod fsck;
mod fuzz_seeds;
mod golden;
mod golden_edges;
mod golden_refusals;
mod hostile_downloads;
mod integrity;
mod killed;
mod limits;
mod listing;
mod locks;
mod manual;
mod many_writers;
mod mapping_vectors;
mod output;
mod packs;
mod packs_config;
mod packs_fetch;
mod packs_geometric;
mod packs_index;
mod packs_large;
mod packs_leftovers;
mod packs_limits;
mod packs_signed;
mod protocol;
mod push;
mod read;
mod read_repository;
mod redaction;
mod ref_conflicts;
mod ref_names;
mod refs_json;
mod reliability;
mod remote_names;
mod shallow;
mod shallow_packed;
mod signatures;
mod snapshots;
mod store_check;
mod stores;
mod submodules;
mod tag_following;
mod throttling;
mod waves;
mod waves_http;
mod web_servers;
