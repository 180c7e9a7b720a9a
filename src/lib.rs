//! # ide
//!
//! One worker process on the iii engine that gives agents and the console
//! everything they need to work in a code base, under one hot-reloaded
//! security policy and one error-code scheme.
//!
//! The map, from the bottom up:
//!
//! - [`config`]: the configuration schema (typed, strict, migration hints).
//! - [`policy`]: the ONE path policy every surface resolves paths through.
//! - [`error`]: the ONE failure enum, rendered `C2xx` / `S2xx`.
//! - [`runtime`]: an immutable snapshot of config + compiled policy, swapped
//!   atomically on hot reload.
//! - [`catalog`]: the ONE function table (ids, descriptions, schemas,
//!   handlers) shared by the engine bus, `ide call` and the tests.
//! - [`stream`]: transport-free byte streams (channels) for large payloads.
//! - [`coder`], [`fs`], [`control`]: the functions, one module each.
//! - [`exec`]: commands, background jobs and the `shell::job-finished`
//!   trigger (process groups, capture caps, the env gate, the denylist).
//! - [`pty`]: terminal sessions (`shell::pty::*`) for console panes and
//!   agents: PTYs, replay ring, ordered delivery, a server-side screen.
//! - [`bus`]: the engine connection (the only module that knows about iii).
//!
//! Core modules know nothing about the transport: a function is a plain
//! async fn over typed request/response structs and a [`catalog::Ctx`].

pub mod bus;
pub mod catalog;
pub mod coder;
pub mod config;
pub mod control;
pub mod error;
pub mod exec;
pub mod fs;
pub mod function;
pub mod jail;
pub mod journal;
pub mod policy;
pub mod ports;
pub mod pty;
pub mod runtime;
pub mod sandbox;
pub mod services;
pub mod stream;
#[cfg(test)]
pub mod testkit;
pub mod turns;
pub mod ui;
pub mod watch;
pub mod workspace;
