//! git-remote-fdl: a Git remote helper for FDL lakes (DuckLake catalog versions on object
//! storage). The library holds everything but the terminal; the binary only dispatches, prints
//! and picks exit codes. `docs/ARCHITECTURE.md` gives the layers and what each module is for.

// Safe Rust only, but for the one audited call in `process`.
#![deny(unsafe_code)]

mod backoff;
mod cache;
mod cleanup;
pub mod commands;
mod config;
pub mod fatal;
#[doc(hidden)]
pub mod fuzz;
mod git;
mod graph;
pub mod helper;
mod history;
mod kept_packs;
pub mod lake;
mod lake_packs;
mod mapping;
pub mod process;
pub mod progress;
mod protocol;
mod push;
mod reading;
pub mod redact;
mod remote;
mod repo;
pub use repo::{check_command_line, Bogus};
mod safety;
mod session_pack;
mod shallow_plan;
mod signatures;
mod spill;
pub mod store;
pub mod testhook;
mod trace;
mod vouch;
