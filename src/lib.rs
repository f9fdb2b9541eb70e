//! git-remote-fdl: a Git remote helper for FDL lakes (DuckLake catalog versions on object
//! storage). The library holds everything; the binary only dispatches.
//!
//! Layers, bottom up: `store` (where bytes live), `lake` (the FDL layout), `mapping` (version to
//! commit, frozen), `history` (resolving ref tips to commits), `remote` (list and fetch),
//! `protocol` (sans-IO remote-helper protocol), `helper` (the IO loop), `cli` (for humans).

pub mod cache;
pub mod cli;
pub mod helper;
pub mod history;
pub mod lake;
pub mod mapping;
pub mod progress;
pub mod protocol;
pub mod push;
pub mod remote;
pub mod repo;
pub mod signatures;
pub mod store;
pub mod trace;
