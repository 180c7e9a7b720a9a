//! The long-lived services every call shares: the owners of state that
//! outlives a call (the live runtime, background jobs and every command
//! process group, terminal sessions) and the ports to the outside.

use crate::ports::{ConfigSource, Outbound};
use crate::runtime::{LiveRuntime, Runtime};
use std::sync::Arc;

/// Long-lived services shared by every call.
pub struct Services {
    pub live: Arc<LiveRuntime>,
    /// Absent in `ide call` mode, where there is no configuration worker.
    pub config_source: Option<Arc<dyn ConfigSource>>,
    /// Absent in `ide call` mode, where there is no engine.
    pub outbound: Option<Arc<dyn Outbound>>,
    /// Background jobs and every live command process group.
    pub jobs: Arc<crate::exec::jobs::JobTable>,
    /// Terminal sessions (`shell::pty::*`).
    pub pty: Arc<crate::pty::Sessions>,
}

impl Services {
    /// Services without an engine (`ide call`, unit tests).
    pub fn standalone(runtime: Runtime) -> Arc<Services> {
        Arc::new(Services {
            live: Arc::new(LiveRuntime::new(runtime)),
            config_source: None,
            outbound: None,
            jobs: Arc::new(crate::exec::jobs::JobTable::new(None)),
            pty: Arc::new(crate::pty::Sessions::new()),
        })
    }

    /// Stop everything the services own (called on worker shutdown):
    /// every running command's process group and every terminal session
    /// is killed and reaped.
    pub async fn shutdown(&self) {
        tokio::join!(self.jobs.shutdown(), self.pty.shutdown());
    }
}
