//! Operator control plane: reload health and the configuration-change hook.

pub mod config_status;
pub mod on_config_change;
