//! Terminal sessions: `shell::pty::*`.
//!
//! A session is a program on a pseudo-terminal the worker owns, kept across
//! browser reloads: output is numbered into frames, kept in a bounded ring
//! ([`ring`]) and delivered, in order and under flow control, to the one
//! console handler it is attached to ([`target`]); credentials
//! ([`creds`]) rotate on attach and adopt. Every byte also feeds a terminal
//! emulator ([`screen`]), so a replay that lost frames starts with a redraw
//! and an agent can read the screen. See [`session`] for the tasks and
//! [`functions`] for the contract.

pub mod creds;
pub mod functions;
pub mod keys;
pub mod ring;
pub mod screen;
pub mod session;
pub mod spawn;
pub mod target;
pub mod utf8;

pub use session::Sessions;

/// Smallest `pty.ring_bytes` (see [`crate::config::PtyConfig`]).
pub const MIN_RING_BYTES: u64 = crate::config::PtyConfig::MIN_RING_BYTES;
/// Largest `pty.ring_bytes`.
pub const MAX_RING_BYTES: u64 = crate::config::PtyConfig::MAX_RING_BYTES;

#[cfg(test)]
mod tests;
