//! What the write layer ([`super::atomic`]) tells whoever records the
//! changes it makes: the port the change journal plugs into.
//!
//! The write layer is the only code that replaces, renames or deletes a
//! file, so it is where every change is seen; it does not know who keeps
//! the record. A call hands it a [`Record`] explicitly (the change journal's
//! scope of that call, `crate::journal::Scope`); code outside a call hands it
//! none and nothing is recorded. The recorder stores bodies as
//! [`Image`]s before the swap and appends the record after it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::os::fd::BorrowedFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What a write is handed: the call's recorder, or none (nothing is
/// recorded: code outside a call).
pub type Recorder = Option<Arc<dyn Record>>;

/// Who records one call's changes (the change journal's scope of a call).
/// Every method is best effort: a recorder that cannot store a body or
/// append a record logs it, and the change itself goes ahead.
pub trait Record: Send + Sync {
    /// Store the current body of `file` (an old version about to be
    /// replaced or deleted); none if it cannot be stored.
    fn image_of(&self, file: &std::fs::File, mode: u32) -> Option<Image>;
    /// Store a new version the write layer hashed as it wrote it.
    fn image_of_new(
        &self,
        file: &std::fs::File,
        digest: &[u8],
        size: u64,
        mode: u32,
    ) -> Option<Image>;
    /// The version of `file` without storing its body (over the cap).
    fn version_only(&self, file: &std::fs::File, mode: u32) -> Option<Image>;
    /// `file` (now in place) holds `image`'s bytes: its next change need
    /// not read them again.
    fn remember(&self, file: &std::fs::File, image: &Image);
    /// Record a completed change; the `fsync` of `dirs` (the mutation's own
    /// directories) makes it durable, and is the recorder's to run (beside
    /// its own flush). Done when this returns.
    #[allow(clippy::too_many_arguments)]
    fn record(
        &self,
        kind: ChangeKind,
        path: &Path,
        from: Option<&Path>,
        before: Option<Image>,
        after: Option<Image>,
        dirs: &[BorrowedFd<'_>],
    );
    /// Record many deletions (a removed tree) at once.
    fn record_deletions(&self, removed: Vec<(PathBuf, Image)>);
    /// The most body bytes the recorder keeps (the write layer stops
    /// storing bodies of a removed tree past it).
    fn max_blob_bytes(&self) -> u64;
}

/// What a change did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ChangeKind {
    Created,
    Modified,
    Deleted,
    Moved,
}

/// One side of a change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Version {
    /// SHA-256 hex of the exact bytes.
    pub revision: String,
    pub size: u64,
    /// Permission bits.
    pub mode: u32,
    /// Whether the body was stored (false: over the blob cap).
    #[serde(default)]
    pub stored: bool,
}

/// A body captured by the write layer: its version and where its blob is.
#[derive(Debug, Clone)]
pub struct Image {
    pub version: Version,
    /// The recorder's name for the stored body (its blob hash), when stored.
    pub blob: Option<String>,
    /// A blob written for this image whose data must reach the disk before
    /// the record naming it.
    pub pending: Option<Arc<std::fs::File>>,
}

impl Image {
    /// Whether this image's body was just stored and is not flushed yet.
    pub fn is_pending(&self) -> bool {
        self.pending.is_some()
    }

    /// Flush a body written for this image (if any); afterwards the record
    /// naming it needs no flush of its own. The write layer calls this
    /// beside the new version's own flush, so the two share a commit of the
    /// filesystem's journal instead of following each other.
    pub fn flush_body(&mut self) -> std::io::Result<()> {
        if let Some(f) = self.pending.take() {
            f.sync_data()?;
        }
        Ok(())
    }
}

/// The kind of a write, from whether the target existed.
pub fn write_kind(before: &Option<Image>) -> ChangeKind {
    if before.is_some() {
        ChangeKind::Modified
    } else {
        ChangeKind::Created
    }
}
