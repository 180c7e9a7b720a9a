//! # ide
//!
//! One worker process on the iii engine that gives agents and the console
//! everything they need to work in a code base, under one hot-reloaded
//! security policy and one error-code scheme.
//!
//! The map, from the bottom up (the layer order is checked by
//! `tests/shape.rs`; ARCHITECTURE.md explains each layer):
//!
//! - [`error`] (the ONE failure enum, rendered `C2xx` / `S2xx`), [`stream`]
//!   (transport-free byte streams), [`config`] (the configuration schema),
//!   [`schema`] (the registered schemas' JSON Schema 2020-12 dialect),
//!   [`batch`] (how a batch answer counts its failed entries).
//! - [`jail`]: every filesystem operation, by handle — resolution beneath a
//!   root, walks, atomic replacement ([`jail::atomic`]) and what a write
//!   tells its recorder ([`jail::record`]).
//! - [`policy`]: the ONE path policy every surface resolves paths through.
//! - [`runtime`]: an immutable snapshot of config + compiled policy, swapped
//!   atomically on hot reload.
//! - [`ports`]: what the core needs from the engine, as traits.
//! - [`journal`]: the change journal and each call's [`journal::Scope`].
//! - [`exec`], [`pty`], [`watch`], [`index`]: the owners of long-lived
//!   state (processes and jobs, terminal sessions, the change feed's
//!   watchers, the content index behind `coder::search`), and [`code`]:
//!   code understanding (the languages as data, outlines and occurrences
//!   from tree-sitter) beneath the code-intelligence functions, and
//!   [`lsp`]: the language servers ide runs for the semantic answers.
//! - [`services`]: one per worker, holding all of them.
//! - [`function`]: what a function is (`Ctx`, the typed builder).
//! - The functions, one file each: [`coder`], [`fs`], [`exec`], [`pty`],
//!   [`workspace`], [`turns`], [`control`], [`ui`], [`watch::changed`],
//!   with [`sandbox`] forwarding.
//! - [`catalog`]: the ONE function table, shared by the engine bus,
//!   `ide call` and the tests.
//! - [`bus`]: the engine connection (the only module that knows about iii);
//!   [`mcp`]: the same functions as MCP tools on stdio (`ide mcp`).
//!
//! Core modules know nothing about the transport: a function is a plain
//! async fn over typed request/response structs and a [`function::Ctx`].

pub mod batch;
pub mod bus;
pub mod catalog;
pub mod code;
pub mod coder;
pub mod config;
pub mod control;
pub mod error;
pub mod exec;
pub mod fs;
pub mod function;
pub mod index;
pub mod jail;
pub mod journal;
pub mod lsp;
pub mod mcp;
pub mod policy;
pub mod ports;
pub mod pty;
pub mod runtime;
pub mod sandbox;
pub mod schema;
pub mod services;
pub mod stream;
#[cfg(test)]
pub mod testkit;
pub mod turns;
pub mod ui;
pub mod watch;
pub mod workspace;
