//! The revisions of files a search hashed before, so that a repeat search
//! does not hash again a file that has not changed.
//!
//! Every content match carries its file's revision (SHA-256 of the whole
//! file), and a common word matches in thousands of files: hashing them was
//! the largest single cost of a repeat search for `TODO` (13 % of its CPU).
//! A file's revision is kept here under its identity (device, inode) and
//! its stamp (size, modification and change time), the way git's index
//! trusts a file's stat data:
//!
//! - **Kept** only when the file's change time was at least [`RACY`] old when
//!   its bytes were read: a write in the same clock tick as the stamp could
//!   leave the stamp as it was. Any later write sets the change time to the
//!   time of that write, which no process can set back (only the system
//!   clock can), so the stamp of a file kept here changes with any write.
//! - **Used** only when the stamp is the same before the search reads the
//!   file and after (a write during the read is caught), so the revision is
//!   always that of exactly the bytes searched.
//!
//! Bounded: at most [`CAP`] files (about 5 MB); when full it starts over.

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// How old a file's change time must be when its bytes are read for its
/// revision to be kept.
pub const RACY: Duration = crate::index::persist::RACY;

/// The most files kept.
pub const CAP: usize = 32_768;

/// What moves when a file's content changes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stamp {
    size: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl Stamp {
    pub fn of(md: &std::fs::Metadata) -> Stamp {
        Stamp {
            size: md.len(),
            mtime: (md.mtime(), md.mtime_nsec()),
            ctime: (md.ctime(), md.ctime_nsec()),
        }
    }

    /// Whether the change time was at least [`RACY`] before `read_at`.
    pub fn settled_at(&self, read_at: SystemTime) -> bool {
        let Ok(now) = read_at.duration_since(UNIX_EPOCH) else {
            return false;
        };
        let (secs, nanos) = self.ctime;
        let Ok(secs) = u64::try_from(secs) else {
            // before 1970: not a time a write today can have left
            return true;
        };
        let ctime = Duration::new(secs, u32::try_from(nanos).unwrap_or(0));
        now.checked_sub(ctime).is_some_and(|age| age >= RACY)
    }
}

/// The file's identity.
type Key = (u64, u64);

/// The cache (one per process: a file is the same file for every root).
pub struct Revisions {
    kept: Mutex<HashMap<Key, (Stamp, String)>>,
}

impl Revisions {
    pub fn new() -> Revisions {
        Revisions {
            kept: Mutex::new(HashMap::new()),
        }
    }

    /// The revision kept for the file `md` describes, if its stamp is the
    /// one it was kept with. The caller still checks the stamp after its
    /// read ([`Stamp::of`] again) before it trusts the answer.
    pub fn get(&self, md: &std::fs::Metadata) -> Option<String> {
        let kept = self.kept.lock().unwrap_or_else(|p| p.into_inner());
        let (stamp, revision) = kept.get(&(md.dev(), md.ino()))?;
        (*stamp == Stamp::of(md)).then(|| revision.clone())
    }

    /// Keep `revision`, the hash of the bytes of the file `md` describes
    /// (its stamp before the read) that were read from `read_at` on — when
    /// the stamp was settled by then.
    pub fn keep(&self, md: &std::fs::Metadata, read_at: SystemTime, revision: &str) {
        let stamp = Stamp::of(md);
        if !stamp.settled_at(read_at) {
            return;
        }
        let mut kept = self.kept.lock().unwrap_or_else(|p| p.into_inner());
        if kept.len() >= CAP {
            kept.clear();
        }
        kept.insert((md.dev(), md.ino()), (stamp, revision.to_string()));
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.kept.lock().unwrap().len()
    }
}

/// The process's cache.
pub static REVISIONS: std::sync::LazyLock<Revisions> = std::sync::LazyLock::new(Revisions::new);

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs::{File, FileTimes};
    use std::io::Write;

    fn md(p: &std::path::Path) -> std::fs::Metadata {
        std::fs::metadata(p).unwrap()
    }

    #[test]
    fn a_settled_file_is_kept_and_any_write_after_is_seen() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.txt");
        std::fs::write(&p, "one TODO\n").unwrap();
        let cache = Revisions::new();
        let before = md(&p);
        // read "now": the file was written a moment ago, so not kept
        cache.keep(&before, SystemTime::now(), "r1");
        assert_eq!(cache.len(), 0);
        assert_eq!(cache.get(&before), None);
        // read well after its change time: kept, and found for that stamp
        let later = SystemTime::now() + RACY + Duration::from_millis(1);
        cache.keep(&before, later, "r1");
        assert_eq!(cache.get(&before).as_deref(), Some("r1"));
        // rewritten to the same size, its modification time put back: the
        // change time still moves, so the kept revision is not used
        let mtime = before.modified().unwrap();
        let mut f = std::fs::OpenOptions::new().write(true).open(&p).unwrap();
        f.write_all(b"one FIXM\n").unwrap();
        f.set_times(FileTimes::new().set_modified(mtime)).unwrap();
        drop(f);
        let after = md(&p);
        assert_eq!(after.len(), before.len());
        assert_eq!(after.modified().unwrap(), mtime);
        assert_ne!(Stamp::of(&after), Stamp::of(&before));
        assert_eq!(cache.get(&after), None);
        // another file with another identity is another entry
        let q = dir.path().join("b.txt");
        File::create(&q).unwrap();
        assert_eq!(cache.get(&md(&q)), None);
    }

    #[test]
    fn the_cache_is_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.txt");
        std::fs::write(&p, "x").unwrap();
        let m = md(&p);
        let cache = Revisions::new();
        let later = SystemTime::now() + RACY + Duration::from_millis(1);
        {
            let mut kept = cache.kept.lock().unwrap();
            for i in 0..CAP as u64 {
                kept.insert((u64::MAX, i), (Stamp::of(&m), String::new()));
            }
        }
        cache.keep(&m, later, "r");
        assert_eq!(cache.len(), 1, "full: it starts over");
        assert_eq!(cache.get(&m).as_deref(), Some("r"));
    }
}
