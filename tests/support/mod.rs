//! Test support shared by the integration tests.
//!
//! End-to-end tests start their engine through [`harness::Engine`]: the
//! loopback stand-in ([`engine`]) by default, a real iii engine
//! ([`real_engine`]) when `IDE_TEST_ENGINE` names its binary. What differs
//! between the two is recorded in `ENGINE-FACTS.md` beside this file.
//!
//! Each test file that needs it starts with `mod support;`. Not every test
//! uses every helper, hence the blanket `dead_code` allowance.
#![allow(dead_code)]

pub mod channels;
pub mod engine;
pub mod harness;
pub mod ide_process;
pub mod real_engine;

/// A finished command's status, stdout and stderr, for an assertion's
/// message.
pub fn output_text(o: &std::process::Output) -> String {
    format!(
        "status {}\nstdout:\n{}\nstderr:\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}
