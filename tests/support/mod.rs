//! Test support shared by the integration tests.
//!
//! Each test file that needs it starts with `mod support;`. Not every test
//! uses every helper, hence the blanket `dead_code` allowance.
#![allow(dead_code)]

pub mod channels;
pub mod engine;
pub mod ide_process;
