//! The long-lived services every call shares: the owners of state that
//! outlives a call, and the ports to the outside. One `Services` per worker
//! (tests make their own): nothing here is a process global.

use crate::exec::jobs::JobTable;
use crate::journal::Journals;
use crate::ports::{ConfigSource, Outbound};
use crate::pty::session::Sessions;
use crate::runtime::{LiveRuntime, Runtime};
use crate::watch::Registry;
use std::sync::Arc;

/// Long-lived services shared by every call.
pub struct Services {
    /// The runtime snapshot in force, swapped on hot reload.
    pub live: Arc<LiveRuntime>,
    /// Absent in `ide call` mode, where there is no configuration worker.
    pub config_source: Option<Arc<dyn ConfigSource>>,
    /// Absent in `ide call` mode, where there is no engine.
    pub outbound: Option<Arc<dyn Outbound>>,
    /// Background jobs and every live command process group.
    pub jobs: Arc<JobTable>,
    /// Terminal sessions (`shell::pty::*`).
    pub pty: Arc<Sessions>,
    /// The change journals open, and the marks of this worker's own writes.
    pub journals: Arc<Journals>,
    /// The watchers of the live change feed (`shell::changed`).
    pub watch: Arc<Registry>,
    /// The content index of `coder::search`, per searched root.
    pub index: Arc<crate::index::Indexes>,
    /// The symbol index beside it (`coder::find-symbol`, `coder::map`).
    pub symbols: Arc<crate::index::symbols::Symbols>,
    /// The language servers behind the semantic answers.
    pub servers: Arc<crate::lsp::Servers>,
}

impl Services {
    /// Services over `runtime`, with these ports (none: `ide call`, tests).
    pub fn new(
        runtime: Runtime,
        config_source: Option<Arc<dyn ConfigSource>>,
        outbound: Option<Arc<dyn Outbound>>,
    ) -> Services {
        let journals = Arc::new(Journals::new());
        Services {
            live: Arc::new(LiveRuntime::new(runtime)),
            config_source,
            jobs: Arc::new(JobTable::new(outbound.clone())),
            outbound,
            pty: Arc::new(Sessions::new()),
            watch: Arc::new(Registry::new(journals.marks().clone())),
            index: Arc::new(crate::index::Indexes::new()),
            symbols: Arc::new(crate::index::symbols::Symbols::new()),
            servers: Arc::new(crate::lsp::Servers::new()),
            journals,
        }
    }

    /// Services without an engine (`ide mcp`, unit tests).
    pub fn standalone(runtime: Runtime) -> Arc<Services> {
        Arc::new(Services::new(runtime, None, None))
    }

    /// Services for a process that ends with its one call (`ide call`):
    /// no engine, and no background work it would not live to use (no
    /// search index is built; searches scan).
    pub fn one_shot(runtime: Runtime) -> Arc<Services> {
        let mut s = Services::new(runtime, None, None);
        s.index = Arc::new(crate::index::Indexes::one_shot());
        Arc::new(s)
    }

    /// Bring back, in the background, the indexes the last run of this
    /// configuration saved (the search index, then the symbol index).
    pub fn resume_indexes(&self) {
        let rt = self.live.snapshot();
        self.index.resume(&rt);
        self.symbols.resume(&self.index, &rt);
    }

    /// Where language servers get their change feeds.
    pub fn feeds(&self) -> crate::lsp::Feeds {
        crate::lsp::Feeds {
            watch: self.watch.clone(),
            live: self.live.clone(),
        }
    }

    /// Stop everything the services own (called on worker shutdown):
    /// every running command's process group, every language server and
    /// every terminal session is killed and reaped, and every watcher of the change feed stops.
    pub async fn shutdown(&self) {
        let watch = self.watch.clone();
        let watchers = tokio::task::spawn_blocking(move || watch.shutdown());
        let _ = tokio::join!(
            self.jobs.shutdown(),
            self.pty.shutdown(),
            self.servers.stop_all(),
            watchers
        );
    }
}
