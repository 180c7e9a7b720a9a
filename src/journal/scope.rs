//! One call's scope: who is changing files (function id, the engine-stamped
//! `_caller_worker_id`, the request's `turn_id` / `session_id`) and the
//! journal that records it.
//!
//! The scope is an explicit value: the function builder makes one per call
//! ([`Scope::of_call`]) and puts it in the call's `Ctx`; a handler hands
//! [`Scope::recorder`] to every write it makes (the write layer takes it as
//! an argument), so no spawn, thread or task can lose it. [`Scope::none`]
//! records nothing (code outside a call, measurements without the journal).

use super::marks::OwnWrites;
use super::{ChangeKind, Flush, Image, Journal, KNOWN_MAX, beside, stamp_of};
use crate::jail;
use crate::jail::record::{Record, Recorder};
use crate::runtime::Runtime;
use std::collections::HashMap;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

/// The journals this worker has open, by directory, and the marks of its
/// own writes (one per worker, held by the services).
#[derive(Default)]
pub struct Journals {
    open: Mutex<HashMap<PathBuf, Arc<Journal>>>,
    marks: Arc<OwnWrites>,
    /// Contents of revisions recently read or written, for stale writes.
    pub seen: super::seen::Seen,
}

impl Journals {
    pub fn new() -> Journals {
        Journals::default()
    }

    /// The journal at `dir` (created if missing), opened once.
    pub fn at(&self, dir: &Path) -> std::io::Result<Arc<Journal>> {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(j) = open.get(dir) {
            return Ok(j.clone());
        }
        let j = Arc::new(Journal::open(dir)?);
        open.insert(dir.to_path_buf(), j.clone());
        Ok(j)
    }

    /// Forget the open journal of `dir`, so the next use reads it from disk
    /// again (what a worker restart does).
    pub fn forget(&self, dir: &Path) {
        self.open
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(dir);
    }

    /// The marks of this worker's own writes (the change feed reads them).
    pub fn marks(&self) -> &Arc<OwnWrites> {
        &self.marks
    }
}

/// Who is changing files, for the duration of one call (cheap to clone).
#[derive(Clone, Default)]
pub struct Scope(Option<Arc<Call>>);

/// One recorded call.
pub struct Call {
    pub function_id: String,
    pub caller: Option<String>,
    pub turn_id: Option<String>,
    pub session_id: Option<String>,
    pub max_blob_bytes: u64,
    data_dir: PathBuf,
    journals: Arc<Journals>,
    /// Opened at the call's first change (a call that changes nothing
    /// never opens it); `None` when it cannot be opened (logged once).
    journal: OnceLock<Option<Arc<Journal>>>,
    /// Change ids recorded during the call, in order.
    recorded: Mutex<Vec<String>>,
}

impl Scope {
    /// Records nothing.
    pub fn none() -> Scope {
        Scope(None)
    }

    /// The scope of a call to `function_id` with `payload`, under `rt`,
    /// recorded in `journals`.
    pub fn of_call(
        function_id: &str,
        payload: &serde_json::Value,
        rt: &Runtime,
        journals: &Arc<Journals>,
    ) -> Scope {
        let text = |k: &str| payload.get(k).and_then(|v| v.as_str()).map(str::to_string);
        Scope(Some(Arc::new(Call {
            function_id: function_id.to_string(),
            caller: text("_caller_worker_id"),
            turn_id: text("turn_id").filter(|s| !s.is_empty()),
            session_id: text("session_id").filter(|s| !s.is_empty()),
            max_blob_bytes: rt.config.turns.max_blob_bytes,
            data_dir: rt.turns_dir.clone(),
            journals: journals.clone(),
            journal: OnceLock::new(),
            recorded: Mutex::default(),
        })))
    }

    /// The same call under another turn, with its own list of recorded
    /// changes (a revert's writes form a turn of their own).
    pub fn in_turn(&self, turn_id: String) -> Scope {
        Scope(self.0.as_ref().map(|c| {
            Arc::new(Call {
                function_id: c.function_id.clone(),
                caller: c.caller.clone(),
                turn_id: Some(turn_id),
                session_id: c.session_id.clone(),
                max_blob_bytes: c.max_blob_bytes,
                data_dir: c.data_dir.clone(),
                journals: c.journals.clone(),
                journal: OnceLock::new(),
                recorded: Mutex::default(),
            })
        }))
    }

    /// The call, when recorded.
    pub fn call(&self) -> Option<&Call> {
        self.0.as_deref()
    }

    /// What the write layer is handed for this call's changes.
    pub fn recorder(&self) -> Recorder {
        self.0.clone().map(|c| c as Arc<dyn Record>)
    }

    /// The change ids recorded so far in this call (and forget them), for
    /// the answer of one batch entry.
    pub fn take_recorded(&self) -> Vec<String> {
        self.0
            .as_ref()
            .map(|c| std::mem::take(&mut *c.recorded.lock().unwrap_or_else(|e| e.into_inner())))
            .unwrap_or_default()
    }

    /// The first change id recorded since the last take (one batch entry's
    /// change; a recursive delete records one per file, all in the call's
    /// turn), clearing the list.
    pub fn take_first(&self) -> Option<String> {
        self.take_recorded().into_iter().next()
    }
}

impl Call {
    /// This call's journal, opened at its first use.
    fn journal(&self) -> Option<&Arc<Journal>> {
        self.journal
            .get_or_init(|| match self.journals.at(&self.data_dir) {
                Ok(j) => Some(j),
                Err(e) => {
                    tracing::error!(dir = %self.data_dir.display(), error = %e, "change journal unavailable; the change is not journaled");
                    None
                }
            })
            .as_ref()
    }

    fn push(&self, ids: impl IntoIterator<Item = String>) {
        self.recorded
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend(ids);
    }
}

impl Record for Call {
    /// The current body of a regular file (none if absent or not a file).
    fn image_of(&self, file: &std::fs::File, mode: u32) -> Option<Image> {
        self.journal()?
            .store_file(file, mode, self.max_blob_bytes)
            .ok()
    }

    /// The image of a new version the write layer hashed as it wrote it.
    fn image_of_new(
        &self,
        file: &std::fs::File,
        digest: &[u8],
        size: u64,
        mode: u32,
    ) -> Option<Image> {
        self.journal()?
            .store_new(file, digest, size, mode, self.max_blob_bytes)
            .ok()
    }

    /// Note that `file` (now in place) holds `image`'s bytes, so its next
    /// change need not read them again.
    fn remember(&self, file: &std::fs::File, image: &Image) {
        let Some(journal) = self.journal() else {
            return;
        };
        if let Some((key, stamp)) = stamp_of(file) {
            let mut known = journal.known.lock().unwrap_or_else(|e| e.into_inner());
            if known.len() >= KNOWN_MAX {
                known.clear();
            }
            let mut img = image.clone();
            img.pending = None;
            known.insert(key, (stamp, img));
        }
    }

    /// The version of a file without storing its body (a body the blob
    /// cap could not keep anyway).
    fn version_only(&self, file: &std::fs::File, mode: u32) -> Option<Image> {
        self.journal()?.store_file(file, mode, 0).ok()
    }

    /// Record many deletions (a removed tree) with one `fdatasync`.
    fn record_deletions(&self, removed: Vec<(PathBuf, Image)>) {
        if removed.is_empty() {
            return;
        }
        let Some(journal) = self.journal() else {
            return;
        };
        // One flush of the journal's filesystem makes every body durable.
        let flushed = {
            let st = journal.state();
            nix::unistd::syncfs(st.blobs.as_fd())
        };
        if let Err(e) = flushed {
            tracing::error!(error = %e, "change journal: syncfs failed; the bodies are not journaled");
            return;
        }
        let mut ids = Vec::with_capacity(removed.len());
        for (path, img) in removed {
            match journal.append(
                self,
                ChangeKind::Deleted,
                &path,
                None,
                Some(img),
                None,
                Flush::Nothing,
            ) {
                Ok(id) => {
                    self.journals.marks.note(&path, &id);
                    ids.push(id);
                }
                Err(e) => {
                    tracing::error!(path = %path.display(), error = %e, "change journal append failed")
                }
            }
        }
        if let Err(e) = journal.state().log.sync_data() {
            tracing::error!(error = %e, "change journal fdatasync failed");
        }
        self.push(ids);
    }

    /// The blob cap of the current call.
    fn max_blob_bytes(&self) -> u64 {
        self.max_blob_bytes
    }

    /// Record a completed change whose directory entries the `fsync` of
    /// `dirs` makes durable (the mutation's own directories). The record's
    /// line is written first; the directories are flushed on a helper
    /// thread while this one runs the line's `fdatasync`, so the two reach
    /// the disk in one commit of the filesystem's journal rather than one
    /// after the other, and the caller is not woken by the helper: the
    /// line's flush (its data block and the commit) is the longer of the
    /// two, measured in BENCHMARKS.md. Both are done when this returns. A
    /// kill -9 can only lose an unwritten line (the last change), never
    /// corrupt one; only a power loss in that instant could keep the
    /// record of the call in flight and lose its rename (ARCHITECTURE.md).
    #[allow(clippy::too_many_arguments)]
    fn record(
        &self,
        kind: ChangeKind,
        path: &Path,
        from: Option<&Path>,
        before: Option<Image>,
        after: Option<Image>,
        dirs: &[std::os::fd::BorrowedFd<'_>],
    ) {
        let sync_here = || {
            for d in dirs {
                jail::sync_dir(*d);
            }
        };
        let Some(journal) = self.journal() else {
            for d in dirs {
                jail::sync_dir(*d);
            }
            return;
        };
        let appended = journal.append(self, kind, path, from, before, after, Flush::Bodies);
        let id = match appended {
            Ok(id) => id,
            Err(e) => {
                sync_here();
                tracing::error!(path = %path.display(), error = %e, "change journal append failed");
                return;
            }
        };
        let log = journal.state().log.clone();
        let owned: std::io::Result<Vec<OwnedFd>> = dirs
            .iter()
            .map(|d| nix::unistd::dup(*d).map_err(std::io::Error::from))
            .collect();
        let synced = match owned {
            Ok(owned) => {
                let helper = move || {
                    for d in &owned {
                        jail::sync_dir(d.as_fd());
                    }
                };
                let (done, synced) = beside::beside(helper, || log.sync_data());
                if done.is_none() {
                    // the helper was lost: flush the directories here
                    sync_here();
                }
                synced
            }
            Err(_) => {
                sync_here();
                log.sync_data()
            }
        };
        if let Err(e) = synced {
            tracing::error!(path = %path.display(), error = %e, "change journal fdatasync failed");
            return;
        }
        // The live feed's events for these paths carry the id (the feed
        // delivers after its 200 ms window, so noting it now is in time).
        self.journals.marks.note(path, &id);
        if let Some(from) = from {
            self.journals.marks.note(from, &id);
        }
        self.push([id]);
    }
}
