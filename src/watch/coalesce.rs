//! The 200 ms window: raw events per path merged toward the visible outcome.
//!
//! Pure bookkeeping, no I/O: the feed notes every raw event it keeps and
//! takes the window when it closes. Memory is bounded by the cap: past it
//! the window forgets its paths and only remembers that it must announce a
//! `rescan`.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Instant;

/// A visible kind of change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Created,
    Modified,
    Deleted,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Created => "created",
            Kind::Modified => "modified",
            Kind::Deleted => "deleted",
        }
    }
}

/// Merge a new raw kind into what the window holds for a path; `None` is
/// "nothing visible happened" (a path created and deleted inside one window).
pub fn merge(prev: Option<Kind>, next: Kind) -> Option<Kind> {
    use Kind::*;
    match (prev, next) {
        (None, k) => Some(k),
        // a create plus the writes that fill it is a create
        (Some(Created), Created | Modified) => Some(Created),
        // created and gone again inside the window: nothing to see
        (Some(Created), Deleted) => None,
        (Some(Modified), Modified) => Some(Modified),
        // replaced by a rename or recreated: a new file stands there
        (Some(Modified), Created) => Some(Created),
        // a deletion supersedes what came before
        (Some(Modified | Deleted), Deleted) => Some(Deleted),
        // a create after a delete is a create (so is a write after one)
        (Some(Deleted), Created | Modified) => Some(Created),
    }
}

/// What the window holds for one path.
#[derive(Debug, Clone)]
struct Pending {
    kind: Kind,
    dir: bool,
    first: Instant,
}

/// One change, as the window hands it out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// Relative to the watched root.
    pub rel: PathBuf,
    pub kind: Kind,
    /// A directory (never for a deletion).
    pub dir: bool,
    /// When the window first saw this path.
    pub first: Instant,
}

/// Everything one window collected.
#[derive(Debug, Default)]
pub struct Batch {
    /// Changes in path order (empty when `rescan` is set).
    pub changes: Vec<Change>,
    /// Something was lost (an overflow, a watch that could not be added, or
    /// more paths than the cap): re-list, do not trust the feed.
    pub rescan: bool,
    /// `.git/HEAD`, `.git/index` or `.git/refs/**` changed.
    pub git: bool,
}

impl Batch {
    pub fn is_empty(&self) -> bool {
        self.changes.is_empty() && !self.rescan && !self.git
    }
}

/// The open window of one watcher.
#[derive(Debug)]
pub struct Window {
    cap: usize,
    paths: BTreeMap<PathBuf, Pending>,
    opened: Option<Instant>,
    rescan: bool,
    git: bool,
}

impl Window {
    /// A window that holds at most `cap` distinct paths (at least 1).
    pub fn new(cap: usize) -> Window {
        Window {
            cap: cap.max(1),
            paths: BTreeMap::new(),
            opened: None,
            rescan: false,
            git: false,
        }
    }

    /// When the window opened (its first note since the last take).
    pub fn opened(&self) -> Option<Instant> {
        self.opened
    }

    fn open(&mut self, now: Instant) {
        self.opened.get_or_insert(now);
    }

    /// Note one raw change of `rel`.
    pub fn note(&mut self, rel: PathBuf, kind: Kind, dir: bool, now: Instant) {
        self.open(now);
        if self.rescan {
            return;
        }
        match self.paths.get_mut(&rel) {
            Some(p) => match merge(Some(p.kind), kind) {
                Some(k) => {
                    p.kind = k;
                    p.dir = dir && k != Kind::Deleted;
                }
                None => {
                    self.paths.remove(&rel);
                }
            },
            None => {
                if self.paths.len() >= self.cap {
                    self.overflow(now);
                    return;
                }
                self.paths.insert(
                    rel,
                    Pending {
                        kind,
                        dir: dir && kind != Kind::Deleted,
                        first: now,
                    },
                );
            }
        }
    }

    /// Something was lost: the window ends in one `rescan`, and forgets the
    /// paths it held (memory stays bounded whatever the burst).
    pub fn overflow(&mut self, now: Instant) {
        self.open(now);
        self.rescan = true;
        self.paths = BTreeMap::new();
    }

    /// The repository's refs, HEAD or index changed.
    pub fn git(&mut self, now: Instant) {
        self.open(now);
        self.git = true;
    }

    /// Close the window and hand out what it holds.
    pub fn take(&mut self) -> Batch {
        self.opened = None;
        let paths = std::mem::take(&mut self.paths);
        let rescan = std::mem::replace(&mut self.rescan, false);
        let git = std::mem::replace(&mut self.git, false);
        let changes = if rescan {
            Vec::new()
        } else {
            paths
                .into_iter()
                .map(|(rel, p)| Change {
                    rel,
                    kind: p.kind,
                    dir: p.dir,
                    first: p.first,
                })
                .collect()
        };
        Batch {
            changes,
            rescan,
            git,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Kind::*;
    use super::*;

    fn run(cap: usize, raw: &[(&str, Kind, bool)]) -> Batch {
        let mut w = Window::new(cap);
        let now = Instant::now();
        for (p, k, d) in raw {
            w.note(PathBuf::from(p), *k, *d, now);
        }
        w.take()
    }

    fn kinds(b: &Batch) -> Vec<(String, Kind, bool)> {
        b.changes
            .iter()
            .map(|c| (c.rel.display().to_string(), c.kind, c.dir))
            .collect()
    }

    #[test]
    fn merge_rules_follow_the_visible_outcome() {
        assert_eq!(merge(Some(Created), Modified), Some(Created));
        assert_eq!(merge(Some(Created), Deleted), None);
        assert_eq!(merge(Some(Deleted), Created), Some(Created));
        assert_eq!(merge(Some(Modified), Deleted), Some(Deleted));
        assert_eq!(merge(Some(Modified), Modified), Some(Modified));
        assert_eq!(merge(Some(Modified), Created), Some(Created));
        assert_eq!(merge(Some(Deleted), Deleted), Some(Deleted));
        assert_eq!(merge(Some(Deleted), Modified), Some(Created));
    }

    #[test]
    fn a_window_merges_per_path() {
        let b = run(
            10,
            &[
                ("a", Created, false),
                ("a", Modified, false),
                ("b", Modified, false),
                ("b", Deleted, false),
                ("c", Created, false),
                ("c", Deleted, false),
                ("d", Deleted, false),
                ("d", Created, true),
                ("e", Created, false),
                ("e", Deleted, false),
                ("e", Created, false),
            ],
        );
        assert_eq!(
            kinds(&b),
            vec![
                ("a".into(), Created, false),
                ("b".into(), Deleted, false),
                ("d".into(), Created, true),
                ("e".into(), Created, false),
            ]
        );
        assert!(!b.rescan && !b.git);
    }

    #[test]
    fn past_the_cap_one_rescan_and_no_paths() {
        let raw: Vec<(String, Kind, bool)> =
            (0..11).map(|i| (format!("f{i}"), Created, false)).collect();
        let raw: Vec<(&str, Kind, bool)> =
            raw.iter().map(|(p, k, d)| (p.as_str(), *k, *d)).collect();
        let b = run(10, &raw);
        assert!(b.rescan);
        assert!(b.changes.is_empty());
        // exactly the cap is still delivered path by path
        let b = run(10, &raw[..10]);
        assert!(!b.rescan);
        assert_eq!(b.changes.len(), 10);
    }

    #[test]
    fn a_deleted_path_is_never_a_directory() {
        let b = run(10, &[("d", Created, true), ("d", Deleted, true)]);
        assert!(b.is_empty());
        let b = run(10, &[("d", Modified, true), ("d", Deleted, true)]);
        assert_eq!(kinds(&b), vec![("d".into(), Deleted, false)]);
    }

    #[test]
    fn take_reopens_a_clean_window() {
        let mut w = Window::new(2);
        let now = Instant::now();
        w.overflow(now);
        w.git(now);
        assert!(w.opened().is_some());
        let b = w.take();
        assert!(b.rescan && b.git);
        assert!(w.opened().is_none());
        w.note("x".into(), Modified, false, now);
        let b = w.take();
        assert!(!b.rescan && !b.git);
        assert_eq!(b.changes.len(), 1);
    }
}
