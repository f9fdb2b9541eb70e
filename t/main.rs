//! End-to-end tests: real `git` driving the built helper against real stores (a local folder,
//! an S3-compatible server on 127.0.0.1, a plain HTTP server). One binary, one module per area.

mod support;

mod architecture;
mod bad_lakes;
mod golden;
mod hardening_edges;
mod hardening_push;
mod integrity;
mod push;
mod read;
mod ref_names;
mod reliability;
mod signatures;
mod stores;
