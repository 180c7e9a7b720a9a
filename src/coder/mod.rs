//! `coder::*`: the agent-ergonomic code surface.
//!
//! One module a function. Every path goes through [`crate::policy::Policy`];
//! nothing here canonicalizes or checks globs by itself.

pub mod info;
pub mod search;
