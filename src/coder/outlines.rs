//! The outlines of files parsed before, so that a repeat `find-symbol`,
//! `references` or folder outline does not parse again a file that has
//! not changed: kept under the file's identity and stamp with the rules of
//! the revision cache ([`super::search::revisions`]): kept only when the
//! change time was settled when the bytes were read, used only when the
//! stamp is the same before and after this read. Bounded: at most [`CAP`]
//! files; when full it starts over.

use super::search::revisions::Stamp;
use super::source::{self, Source};
use crate::code::outline::Outline;
use crate::policy::Resolved;
use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::sync::{Arc, LazyLock, Mutex};
use std::time::SystemTime;

/// The most files kept.
pub const CAP: usize = 65_536;

type Key = (u64, u64);
type Kept = HashMap<Key, (Stamp, Arc<Outline>)>;

static KEPT: LazyLock<Mutex<Kept>> = LazyLock::new(|| Mutex::new(HashMap::new()));

/// A file's outline (parsed, or kept from before), and its bytes when they
/// were read. `None` for a file in no language ide parses, unreadable, too
/// large, or gone. Blocking.
pub fn of(raw: &str, at: &Resolved, max_read: u64) -> Option<(Arc<Outline>, Option<Source>)> {
    of_holding(raw, at, max_read, None)
}

/// [`of`], for a file that holds `needle`: a file read here that does not
/// is not parsed (`None`), so a scan for a name parses only the files
/// that can define it.
pub fn of_holding(
    raw: &str,
    at: &Resolved,
    max_read: u64,
    needle: Option<&str>,
) -> Option<(Arc<Outline>, Option<Source>)> {
    let (file, md) = at.loc().open_regular(raw).ok()?;
    if crate::code::lang::detect(&at.path, None).is_none() && at.path.extension().is_some() {
        return None;
    }
    let key = (md.dev(), md.ino());
    let stamp = Stamp::of(&md);
    let kept = KEPT
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .get(&key)
        .filter(|(s, _)| *s == stamp)
        .map(|(_, o)| o.clone());
    if let Some(o) = kept {
        return Some((o, None));
    }
    let read_at = SystemTime::now();
    let src = source::read_open(raw, &at.path, file.try_clone().ok()?, &md, max_read).ok()?;
    if let Some(n) = needle.filter(|n| !n.is_empty()) {
        memchr::memmem::find(&src.bytes, n.as_bytes())?;
    }
    let outline = Arc::new(source::outline_of(&src).ok()?);
    // the bytes are those of the stamp only if it did not move meanwhile
    let after = file.metadata().ok()?;
    if Stamp::of(&after) == stamp && stamp.settled_at(read_at) {
        let mut kept = KEPT.lock().unwrap_or_else(|p| p.into_inner());
        if kept.len() >= CAP {
            kept.clear();
        }
        kept.insert(key, (stamp, outline.clone()));
    }
    Some((outline, Some(src)))
}

/// Outlines by the revision of the bytes they were parsed from: exact for
/// any read that has its bytes' revision (every `coder::symbols` of a
/// file hashes what it read). At most [`BY_REVISION`] kept; when full it
/// starts over.
static BY_REVISION: LazyLock<Mutex<HashMap<String, Arc<Outline>>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

/// Outlines kept by revision.
pub const BY_REVISION_CAP: usize = 1024;

/// The outline of a source as read (parsed, or kept from a read of the
/// same bytes); `Err` is the note that says why there is none. Blocking.
pub fn of_source(src: &Source) -> Result<Arc<Outline>, String> {
    if let Some(o) = BY_REVISION
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .get(&src.revision)
    {
        return Ok(o.clone());
    }
    let o = Arc::new(source::outline_of(src)?);
    let mut kept = BY_REVISION.lock().unwrap_or_else(|p| p.into_inner());
    if kept.len() >= BY_REVISION_CAP {
        kept.clear();
    }
    kept.insert(src.revision.clone(), o.clone());
    Ok(o)
}
