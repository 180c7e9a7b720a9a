//! One watcher: its watches, its filter, its window, its thread.
//!
//! Watches are per directory and non-recursive, added from an ignore-aware
//! walk by directory handles ([`crate::jail::walk`]): an ignored or noise
//! directory is never watched unless the binding includes ignored paths,
//! so a `node_modules` cannot exhaust the watch limit. A directory that
//! appears later is watched at once and then listed, so entries created in
//! it before its watch existed are reported too (a duplicate merges away in
//! the window).

use super::coalesce::{Batch, Kind, Window};
use super::source::{Raw, Source, Wd};
use crate::jail::Loc;
use crate::jail::dir::Kind as NodeKind;
use crate::jail::walk::{self, DirRules, Node, Options, Step};
use crate::journal::marks::OwnWrites;
use crate::runtime::LiveRuntime;
use nix::fcntl::OFlag;
use nix::sys::inotify::AddWatchFlags as F;
use std::collections::{BTreeMap, HashMap};
use std::ffi::OsStr;
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// The coalescing window.
pub const WINDOW: Duration = Duration::from_millis(200);

/// Ignored outside a repository (with the root's own `.gitignore`).
const OUTSIDE_REPO_RULES: &str = "data/\nconfig/\n.iii/\nnode_modules/\n";

/// One change as delivered (before the per-binding `seq`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Out {
    pub path: String,
    pub kind: &'static str,
    pub dir: bool,
    pub change_id: Option<String>,
}

/// Where a watcher's windows go.
pub trait Sink: Send + Sync {
    fn deliver(&self, events: Vec<Out>);
}

/// What a watcher watches and how.
pub struct Setup {
    pub loc: Loc,
    pub include_ignored: bool,
    /// Most distinct paths one window delivers; past it, one `rescan`.
    pub cap: usize,
    /// The marks of the worker's own writes (events carry their change id).
    pub marks: Arc<OwnWrites>,
}

/// Where `rel` lies with respect to git internals.
#[derive(Debug, PartialEq, Eq)]
enum Git {
    No,
    /// Inside the watched root's own `.git`.
    Root,
    /// Inside a nested repository's `.git`.
    Nested,
}

fn git_part(rel: &Path) -> Git {
    let mut comps = rel.components();
    if comps.next().is_some_and(|c| c.as_os_str() == ".git") {
        return Git::Root;
    }
    if comps.any(|c| c.as_os_str() == ".git") {
        Git::Nested
    } else {
        Git::No
    }
}

/// `.git/HEAD`, `.git/index` and `.git/refs/**` (lock files left out).
fn is_git_signal(rel: &Path) -> bool {
    if rel.extension() == Some(OsStr::new("lock")) {
        return false;
    }
    rel == Path::new(".git/HEAD") || rel == Path::new(".git/index") || rel.starts_with(".git/refs")
}

/// Wire form of a relative path: `/` separators (lossy for non-UTF-8).
pub fn wire(rel: &Path) -> String {
    rel.to_string_lossy().into_owned()
}

/// `loc` itself for an empty `rel` (no trailing separator).
fn below(loc: &Loc, rel: &Path) -> Loc {
    if rel.as_os_str().is_empty() {
        loc.clone()
    } else {
        loc.below(rel)
    }
}

pub struct Feed {
    source: Box<dyn Source>,
    loc: Loc,
    root: PathBuf,
    include_ignored: bool,
    live: Arc<LiveRuntime>,
    wds: HashMap<Wd, PathBuf>,
    dirs: BTreeMap<PathBuf, Wd>,
    rules: HashMap<PathBuf, DirRules>,
    ancestors: Vec<DirRules>,
    builtin: Option<DirRules>,
    window: Window,
    cap: usize,
    /// A loss was logged in the open window (one line per window).
    lost_logged: bool,
    marks: Arc<OwnWrites>,
}

impl Feed {
    /// Walk the root and install its watches.
    pub fn new(source: Box<dyn Source>, setup: Setup, live: Arc<LiveRuntime>) -> Feed {
        let root = setup.loc.abs();
        let ancestors = DirRules::ancestors(&setup.loc);
        let mut feed = Feed {
            source,
            root,
            include_ignored: setup.include_ignored,
            live,
            wds: HashMap::new(),
            dirs: BTreeMap::new(),
            rules: HashMap::new(),
            ancestors,
            builtin: None,
            window: Window::new(setup.cap),
            cap: setup.cap,
            lost_logged: false,
            marks: setup.marks,
            loc: setup.loc,
        };
        feed.add_tree(Path::new(""), false, Instant::now());
        feed
    }

    /// Number of directories watched.
    pub fn watched(&self) -> usize {
        self.wds.len()
    }

    /// Serve until `stop` is set (and the source woken).
    pub fn run(mut self, sink: Arc<dyn Sink>, stop: Arc<AtomicBool>) {
        let mut raw = Vec::new();
        loop {
            let timeout = self
                .window
                .opened()
                .map(|t| (t + WINDOW).saturating_duration_since(Instant::now()));
            if let Err(e) = self.source.wait(timeout, &mut raw) {
                self.lose(
                    &format!("reading inotify events failed: {e}"),
                    Instant::now(),
                );
                std::thread::sleep(Duration::from_millis(50));
            }
            if stop.load(Ordering::Acquire) {
                return;
            }
            let now = Instant::now();
            for r in raw.drain(..) {
                self.process(r, now);
            }
            if self.window.opened().is_some_and(|t| now >= t + WINDOW) {
                let batch = self.window.take();
                if batch.rescan && !self.lost_logged {
                    tracing::warn!(
                        root = %self.root.display(),
                        "change feed sends a rescan: more than {} paths changed within one \
                         window (watch.max_paths_per_window)",
                        self.cap
                    );
                }
                self.lost_logged = false;
                let events = self.render(batch);
                if !events.is_empty() {
                    sink.deliver(events);
                }
            }
        }
    }

    fn render(&self, batch: Batch) -> Vec<Out> {
        let mut out = Vec::with_capacity(batch.changes.len() + 2);
        if batch.rescan {
            out.push(Out {
                path: String::new(),
                kind: "rescan",
                dir: true,
                change_id: None,
            });
        }
        if batch.git {
            out.push(Out {
                path: ".git".to_string(),
                kind: Kind::Modified.as_str(),
                dir: true,
                change_id: None,
            });
        }
        for c in batch.changes {
            let change_id = self.marks.change_id_of(&self.root.join(&c.rel), c.first);
            out.push(Out {
                path: wire(&c.rel),
                kind: c.kind.as_str(),
                dir: c.dir,
                change_id,
            });
        }
        out
    }

    /// Events were lost: the window ends in `rescan`, and the log says why.
    fn lose(&mut self, why: &str, now: Instant) {
        if !self.lost_logged {
            tracing::warn!(
                root = %self.root.display(),
                "change feed lost track, subscribers get a rescan: {why}"
            );
            self.lost_logged = true;
        }
        self.window.overflow(now);
    }

    fn process(&mut self, r: Raw, now: Instant) {
        let Some(wd) = r.wd.filter(|_| !r.mask.contains(F::IN_Q_OVERFLOW)) else {
            self.lose(
                "the kernel's inotify queue overflowed (fs.inotify.max_queued_events)",
                now,
            );
            // re-add whatever watches the lost events would have added
            self.add_tree(Path::new(""), false, now);
            return;
        };
        if r.mask.contains(F::IN_IGNORED) {
            if let Some(rel) = self.wds.remove(&wd) {
                if self.dirs.get(&rel) == Some(&wd) {
                    self.dirs.remove(&rel);
                    self.rules.remove(&rel);
                }
                if rel.as_os_str().is_empty() {
                    self.lose("the watched directory itself was removed", now);
                }
            }
            return;
        }
        let Some(dir_rel) = self.wds.get(&wd).cloned() else {
            return;
        };
        let Some(name) = r.name else {
            if dir_rel.as_os_str().is_empty()
                && r.mask.intersects(F::IN_DELETE_SELF | F::IN_MOVE_SELF)
            {
                self.lose("the watched directory itself was deleted or moved", now);
            }
            return;
        };
        if crate::jail::is_staging_name(&name) {
            return;
        }
        let rel = dir_rel.join(&name);
        let is_dir = r.mask.contains(F::IN_ISDIR);
        let kind = if r.mask.intersects(F::IN_CREATE | F::IN_MOVED_TO) {
            Kind::Created
        } else if r.mask.intersects(F::IN_DELETE | F::IN_MOVED_FROM) {
            Kind::Deleted
        } else if r.mask.intersects(F::IN_MODIFY | F::IN_ATTRIB) {
            Kind::Modified
        } else {
            return;
        };
        match git_part(&rel) {
            Git::Nested => return,
            Git::Root => return self.git_event(&rel, kind, is_dir, now),
            Git::No => {}
        }
        let abs = self.root.join(&rel);
        if self.live.snapshot().policy.is_denylisted(&abs) {
            return;
        }
        if name == ".gitignore" || name == ".ignore" {
            self.reload_rules(&dir_rel);
        }
        if !self.include_ignored && self.is_ignored(&rel, is_dir) {
            return;
        }
        // the directory itself first, then what the scan of it finds
        self.window.note(rel.clone(), kind, is_dir, now);
        if is_dir {
            match kind {
                Kind::Created => self.add_tree(&rel, true, now),
                Kind::Deleted => self.drop_tree(&rel),
                Kind::Modified => {}
            }
        }
    }

    fn git_event(&mut self, rel: &Path, kind: Kind, is_dir: bool, now: Instant) {
        if is_dir
            && kind == Kind::Created
            && (rel == Path::new(".git") || rel.starts_with(".git/refs"))
        {
            self.add_tree(rel, false, now);
        }
        if is_dir && kind == Kind::Deleted {
            self.drop_tree(rel);
        }
        if rel == Path::new(".git") || is_git_signal(rel) {
            self.window.git(now);
        }
    }

    fn reload_rules(&mut self, dir_rel: &Path) {
        if !self.rules.contains_key(dir_rel) {
            return;
        }
        let loc = below(&self.loc, dir_rel);
        if let Ok(fd) = loc.open_dir() {
            let rules = DirRules::read(fd.as_fd(), &loc.abs(), self.parent_in_repo(dir_rel));
            self.rules.insert(dir_rel.to_path_buf(), rules);
        }
        if dir_rel.as_os_str().is_empty() {
            self.builtin = self.outside_repo_rules();
        }
    }

    fn parent_in_repo(&self, rel: &Path) -> bool {
        let from_ancestors = || self.ancestors.last().is_some_and(|r| r.in_repo());
        match rel.parent() {
            None => from_ancestors(),
            Some(p) => self
                .rules
                .get(p)
                .map(|r| r.in_repo())
                .unwrap_or_else(from_ancestors),
        }
    }

    /// Outside a repository: the noise directories and the root's own
    /// `.gitignore`.
    fn outside_repo_rules(&self) -> Option<DirRules> {
        if self.rules.get(Path::new("")).is_some_and(|r| r.in_repo()) {
            return None;
        }
        let mut lines = OUTSIDE_REPO_RULES.to_string();
        if let Ok(mut f) = self.loc.child(OsStr::new(".gitignore")).open_read() {
            use std::io::Read;
            let mut s = String::new();
            if f.metadata()
                .is_ok_and(|m| m.is_file() && m.len() <= 1 << 20)
                && f.read_to_string(&mut s).is_ok()
            {
                lines.push_str(&s);
            }
        }
        Some(DirRules::from_lines(&self.root, &lines, false))
    }

    fn is_ignored(&self, rel: &Path, is_dir: bool) -> bool {
        let mut levels: Vec<&DirRules> = self.ancestors.iter().collect();
        levels.extend(self.builtin.as_ref());
        let mut prefix = PathBuf::new();
        levels.extend(self.rules.get(&prefix));
        if let Some(parent) = rel.parent() {
            for c in parent.components() {
                prefix.push(c);
                levels.extend(self.rules.get(&prefix));
            }
        }
        walk::is_ignored(&levels, &self.root.join(rel), is_dir)
    }

    /// Watch `top` and every directory below it the filter keeps; with
    /// `report`, every entry found is noted `created`.
    fn add_tree(&mut self, top: &Path, report: bool, now: Instant) {
        let loc = below(&self.loc, top);
        let top = top.to_path_buf();
        let in_git = git_part(&top) == Git::Root;
        walk::walk(&loc, Options::default(), |node| {
            let rel = if node.rel.as_os_str().is_empty() {
                top.clone()
            } else {
                top.join(node.rel)
            };
            if node.depth == 0 {
                return if self.watch_dir(node, &rel, in_git) {
                    Step::Descend
                } else {
                    Step::Skip
                };
            }
            let is_dir = node.kind == NodeKind::Dir;
            if in_git {
                // only .git itself and .git/refs/** are watched
                let keep = is_dir && (rel.starts_with(".git/refs"));
                return if keep && self.watch_dir(node, &rel, true) {
                    Step::Descend
                } else {
                    Step::Skip
                };
            }
            if node.name == ".git" {
                if rel == Path::new(".git") && is_dir && self.watch_dir(node, &rel, true) {
                    return Step::Descend;
                }
                return Step::Skip;
            }
            if self.live.snapshot().policy.is_denylisted(node.path) {
                return Step::Skip;
            }
            if !self.include_ignored && self.is_ignored(&rel, is_dir) {
                return Step::Skip;
            }
            if report {
                self.window.note(rel.clone(), Kind::Created, is_dir, now);
            }
            if is_dir && !self.watch_dir(node, &rel, false) {
                return Step::Skip;
            }
            Step::Descend
        });
    }

    /// Watch one directory (by its handle) and read its ignore rules.
    fn watch_dir(&mut self, node: &Node<'_>, rel: &Path, git: bool) -> bool {
        let Ok(fd) = node.open(OFlag::O_RDONLY | OFlag::O_DIRECTORY) else {
            return false;
        };
        match self.source.add_dir(fd.as_fd()) {
            Ok(wd) => {
                if let Some(old) = self.dirs.insert(rel.to_path_buf(), wd) {
                    if old != wd {
                        self.wds.remove(&old);
                    }
                }
                self.wds.insert(wd, rel.to_path_buf());
                if !git {
                    let rules = DirRules::read(fd.as_fd(), node.path, self.parent_in_repo(rel));
                    self.rules.insert(rel.to_path_buf(), rules);
                    if rel.as_os_str().is_empty() {
                        self.builtin = self.outside_repo_rules();
                    }
                }
                true
            }
            Err(e) => {
                let why = if e.raw_os_error() == Some(nix::libc::ENOSPC) {
                    format!(
                        "the inotify watch limit is reached (fs.inotify.max_user_watches); {} and \
                         below are not watched",
                        node.path.display()
                    )
                } else {
                    format!("cannot watch {}: {e}", node.path.display())
                };
                self.lose(&why, Instant::now());
                false
            }
        }
    }

    /// Forget the watches of `top` and everything below it.
    fn drop_tree(&mut self, top: &Path) {
        let gone: Vec<(PathBuf, Wd)> = self
            .dirs
            .range(top.to_path_buf()..)
            .take_while(|(p, _)| p.starts_with(top))
            .map(|(p, w)| (p.clone(), *w))
            .collect();
        for (rel, wd) in gone {
            self.source.remove(wd);
            self.wds.remove(&wd);
            self.dirs.remove(&rel);
            self.rules.remove(&rel);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn git_paths_are_sorted_out() {
        assert_eq!(git_part(Path::new(".git/index")), Git::Root);
        assert_eq!(git_part(Path::new(".git")), Git::Root);
        assert_eq!(git_part(Path::new("sub/.git/HEAD")), Git::Nested);
        assert_eq!(git_part(Path::new("src/a.rs")), Git::No);
        assert_eq!(git_part(Path::new(".gitignore")), Git::No);
        assert!(is_git_signal(Path::new(".git/HEAD")));
        assert!(is_git_signal(Path::new(".git/index")));
        assert!(is_git_signal(Path::new(".git/refs/heads/main")));
        assert!(!is_git_signal(Path::new(".git/index.lock")));
        assert!(!is_git_signal(Path::new(".git/objects/ab/cd")));
        assert!(!is_git_signal(Path::new(".git/COMMIT_EDITMSG")));
    }
}
