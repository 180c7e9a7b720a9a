//! Code understanding, beneath the functions: the languages ide knows
//! ([`lang`], data), what a file defines ([`outline`]), where a name
//! occurs ([`occurrences`]), and name paths ([`names`]).
//!
//! Everything here is blocking and pure over bytes: callers run it off
//! the async runtime, on files they opened through the policy.

pub mod lang;
pub mod names;
pub mod occurrences;
pub mod outline;
