//! End-to-end tests: real `git` driving the built helper against real stores (a local folder,
//! an S3-compatible server on 127.0.0.1, a plain HTTP server). One binary, one module per area.

mod support;

mod bad_lakes;
mod golden;
mod hardening_read;
mod push;
mod read;
mod reliability;
mod signatures;
mod stores;
mod waves;
