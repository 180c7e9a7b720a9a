//! Terminal sessions: `shell::pty::*`.
//!
//! A session is a program on a pseudo-terminal the worker owns, kept across
//! browser reloads: output is numbered into frames, kept in a bounded ring
//! ([`ring`]) and delivered, in order and under flow control, to the one
//! console handler it is attached to ([`target`]); credentials
//! ([`creds`]) rotate on attach and adopt. Every byte also feeds a terminal
//! emulator ([`screen`]), so a replay that lost frames starts with a redraw
//! and an agent can read the screen. See [`session`] for the tasks. One
//! file a function: the eight console functions exactly as published
//! ([`open`], [`write`], [`resize`], [`attach`], [`detach`], [`close`],
//! [`adopt`], [`sessions`]) and four agent-facing ones ([`start`],
//! [`send`], [`read`], [`screen`], [`stop`]); [`shared`] holds what they share.

pub mod adopt;
pub mod attach;
pub mod close;
pub mod creds;
pub mod detach;
pub mod emulator;
pub mod keys;
pub mod open;
pub mod read;
pub mod resize;
pub mod ring;
pub mod screen;
pub mod send;
pub mod session;
pub mod sessions;
pub mod shared;
pub mod spawn;
pub mod start;
pub mod stop;
pub mod target;
pub mod utf8;
pub mod waiting;
pub mod write;

pub use session::Sessions;

/// Smallest `pty.ring_bytes` (see [`crate::config::PtyConfig`]).
pub const MIN_RING_BYTES: u64 = crate::config::PtyConfig::MIN_RING_BYTES;
/// Largest `pty.ring_bytes`.
pub const MAX_RING_BYTES: u64 = crate::config::PtyConfig::MAX_RING_BYTES;

#[cfg(test)]
mod tests;
