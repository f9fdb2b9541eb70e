//! git-remote-fdl: a Git remote helper for FDL lakes (DuckLake catalog versions on object
//! storage). The library holds everything but the terminal; the binary only dispatches, prints
//! and picks exit codes. `docs/ARCHITECTURE.md` gives the layers and what each module is for.

// Safe Rust only, but for the one audited call in `process`.
#![deny(unsafe_code)]

pub mod backoff;
pub mod cache;
pub mod catalog;
pub mod cleanup;
pub mod commands;
pub mod config;
pub mod doctor;
pub mod duckdb;
pub mod fatal;
pub mod fsck;
#[doc(hidden)]
pub mod fuzz;
pub mod git;
pub mod graph;
pub mod helper;
pub mod history;
pub mod kept_packs;
pub mod lake;
pub mod lake_packs;
pub mod mapping;
pub mod process;
pub mod progress;
pub mod protocol;
pub mod push;
pub mod reading;
pub mod redact;
pub mod remote;
pub mod repo;
pub mod safety;
pub mod session_pack;
pub mod signatures;
pub mod spill;
pub mod store;
pub mod testhook;
pub mod trace;
pub mod vouch;
pub mod workspace;
