//! Walking a tree by directory handles.
//!
//! Every directory is opened from its parent's handle with
//! `openat(parent, name, O_DIRECTORY | O_NOFOLLOW)`, never by re-resolving a
//! path string, so a directory swapped for a symlink mid-walk is not
//! entered (the open fails and the entry is skipped) and nothing outside the
//! walked root can be listed or read. Entries come out depth-first with each
//! directory's names sorted (byte order), i.e. in component-wise path order.
//!
//! Ignore rules keep the `ignore` crate's semantics and matchers (its
//! `gitignore` module): nested `.gitignore` files, `.git/info/exclude` and
//! the ancestors' `.gitignore` up to the repository root, applied only
//! inside a git repository; `.ignore` files everywhere, above `.gitignore`
//! in precedence; the deepest directory's rules win, a whitelist (`!x`)
//! included. The rule files themselves are read through the same handles.

use super::dir::{self, Entry, Kind};
use super::{Loc, is_staging_name};
use ignore::Match;
use ignore::gitignore::{Gitignore, GitignoreBuilder};
use nix::fcntl::OFlag;
use nix::sys::stat::Mode;
use std::ffi::{OsStr, OsString};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Largest ignore file read (bigger ones are skipped).
const MAX_IGNORE_FILE: u64 = 1 << 20;

/// One entry met by a walk.
pub struct Node<'a> {
    /// The handle of the directory holding the entry.
    pub dir: &'a Arc<OwnedFd>,
    pub name: &'a OsStr,
    pub kind: Kind,
    /// Absolute canonical path (for policy checks and answers).
    pub path: &'a Path,
    /// Path relative to the walked root (empty for the root itself).
    pub rel: &'a Path,
    /// 0 for the root, 1 for its entries, …
    pub depth: usize,
}

impl Node<'_> {
    /// The entry's own status (never following it).
    pub fn lstat(&self) -> std::io::Result<nix::sys::stat::FileStat> {
        Ok(nix::sys::stat::fstatat(
            self.dir.as_fd(),
            self.name,
            nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW,
        )?)
    }

    /// Open the entry (never following it) with `flags`.
    pub fn open(&self, flags: OFlag) -> std::io::Result<OwnedFd> {
        open_child(self.dir.as_fd(), self.name, flags)
    }

    /// Open a regular file for reading, without blocking on a FIFO.
    pub fn open_read(&self) -> std::io::Result<std::fs::File> {
        Ok(self.open(OFlag::O_RDONLY | OFlag::O_NONBLOCK)?.into())
    }
}

/// `openat(dir, name, flags | O_NOFOLLOW)`; `.` for the walk root.
pub fn open_child(dir: BorrowedFd<'_>, name: &OsStr, flags: OFlag) -> std::io::Result<OwnedFd> {
    Ok(nix::fcntl::openat(
        dir,
        name,
        flags | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
        Mode::empty(),
    )?)
}

/// What the visitor wants next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Go on (and, for a directory, go into it).
    Descend,
    /// Go on, but not into this directory.
    Skip,
    /// End the walk.
    Stop,
}

/// How a walk filters.
#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
    /// Deepest level visited (1 = the root's entries only).
    pub max_depth: Option<usize>,
    /// Leave out names starting with `.`.
    pub skip_hidden: bool,
    /// Apply `.gitignore` (inside a repository), `.git/info/exclude` and
    /// `.ignore` rules.
    pub ignore_files: bool,
}

/// One level of ignore rules: the matchers of one directory, highest
/// precedence first.
struct Rules {
    matchers: Vec<Gitignore>,
    /// This directory is inside a git repository.
    in_repo: bool,
}

struct Frame {
    dir: Arc<OwnedFd>,
    path: PathBuf,
    rel: PathBuf,
    depth: usize,
    entries: std::vec::IntoIter<Entry>,
    /// Whether this frame pushed a level of ignore rules.
    pushed_rules: bool,
}

/// Walk the directory at `root` (which the caller resolved through the
/// policy). `visit` sees the root first (depth 0), then every entry in
/// path order; it decides whether to descend into directories. Symlinks are
/// reported, never followed. Unreadable directories are skipped.
pub fn walk(root: &Loc, opts: Options, mut visit: impl FnMut(&Node<'_>) -> Step) {
    let Ok(fd) = root.open_dir() else {
        return;
    };
    let root_dir = Arc::new(fd);
    let root_path = root.abs();
    // The root node: addressed in its own handle as ".".
    let root_node = Node {
        dir: &root_dir,
        name: OsStr::new("."),
        kind: Kind::Dir,
        path: &root_path,
        rel: Path::new(""),
        depth: 0,
    };
    if visit(&root_node) != Step::Descend {
        return;
    }
    let mut rules: Vec<Rules> = Vec::new();
    if opts.ignore_files {
        rules = ancestor_rules(root, &root_path);
    }
    let mut stack: Vec<Frame> = Vec::new();
    let Some(frame) = enter(root_dir, root_path, PathBuf::new(), 0, opts, &mut rules) else {
        return;
    };
    stack.push(frame);
    while let Some(top) = stack.last_mut() {
        let Some(entry) = top.entries.next() else {
            let done = stack.pop().expect("a frame is on the stack");
            if done.pushed_rules {
                rules.pop();
            }
            continue;
        };
        if opts.skip_hidden && entry.name.as_bytes().first() == Some(&b'.') {
            continue;
        }
        let path = top.path.join(&entry.name);
        if opts.ignore_files && ignored(&rules, &path, entry.kind == Kind::Dir) {
            continue;
        }
        let rel = top.rel.join(&entry.name);
        let depth = top.depth + 1;
        let node = Node {
            dir: &top.dir,
            name: &entry.name,
            kind: entry.kind,
            path: &path,
            rel: &rel,
            depth,
        };
        match visit(&node) {
            Step::Stop => return,
            Step::Skip => continue,
            Step::Descend => {}
        }
        if entry.kind != Kind::Dir || opts.max_depth.is_some_and(|m| depth >= m) {
            continue;
        }
        let Ok(fd) = open_child(
            top.dir.as_fd(),
            &entry.name,
            OFlag::O_RDONLY | OFlag::O_DIRECTORY,
        ) else {
            continue;
        };
        if let Some(frame) = enter(Arc::new(fd), path, rel, depth, opts, &mut rules) {
            stack.push(frame);
        }
    }
}

/// Read a directory for the walk and push its ignore rules.
fn enter(
    dir: Arc<OwnedFd>,
    path: PathBuf,
    rel: PathBuf,
    depth: usize,
    opts: Options,
    rules: &mut Vec<Rules>,
) -> Option<Frame> {
    let entries = dir::read_sorted(dir.as_fd()).ok()?;
    let mut pushed_rules = false;
    if opts.ignore_files {
        let parent_in_repo = rules.last().is_some_and(|r| r.in_repo);
        let has_git = entries.iter().any(|e| e.name == ".git");
        let has = |n: &str| entries.iter().any(|e| e.name == n && e.kind == Kind::File);
        let level = dir_rules(dir.as_fd(), &path, &has, parent_in_repo || has_git, has_git);
        if !level.matchers.is_empty() || level.in_repo != parent_in_repo {
            rules.push(level);
            pushed_rules = true;
        }
    }
    Some(Frame {
        dir,
        path,
        rel,
        depth,
        entries: entries.into_iter(),
        pushed_rules,
    })
}

/// The deepest rule that matches decides (a whitelist un-ignores).
fn ignored(rules: &[Rules], path: &Path, is_dir: bool) -> bool {
    ignored_in(rules.iter(), path, is_dir)
}

fn ignored_in<'a>(
    levels: impl DoubleEndedIterator<Item = &'a Rules>,
    path: &Path,
    is_dir: bool,
) -> bool {
    for level in levels.rev() {
        for m in &level.matchers {
            match m.matched(path, is_dir) {
                Match::Ignore(_) => return true,
                Match::Whitelist(_) => return false,
                Match::None => {}
            }
        }
    }
    false
}

/// One directory's ignore rules, for a caller that keeps its own stack
/// instead of walking (the change feed keeps one per watched directory and
/// asks it about every event path). Same files, matchers and precedence as
/// [`walk`] with `ignore_files`.
pub struct DirRules(Rules);

impl DirRules {
    /// Read the rules of the directory open as `dir` (at canonical `path`):
    /// `.ignore`, and inside a repository (`parent_in_repo`, or a `.git`
    /// here) `.gitignore` and, at a repository root, `.git/info/exclude`.
    pub fn read(dir: BorrowedFd<'_>, path: &Path, parent_in_repo: bool) -> DirRules {
        let is_file = |n: &str| {
            nix::sys::stat::fstatat(dir, n, nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW)
                .is_ok_and(|st| super::is_file_mode(st.st_mode))
        };
        let has_git =
            nix::sys::stat::fstatat(dir, ".git", nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW).is_ok();
        DirRules(dir_rules(
            dir,
            path,
            &is_file,
            parent_in_repo || has_git,
            has_git,
        ))
    }

    /// Extra rules in gitignore syntax, anchored at `dir_path`.
    pub fn from_lines(dir_path: &Path, lines: &str, in_repo: bool) -> DirRules {
        DirRules(Rules {
            matchers: matcher(dir_path, lines).into_iter().collect(),
            in_repo,
        })
    }

    /// The levels that apply to `root` from above it (outermost first).
    pub fn ancestors(root: &Loc) -> Vec<DirRules> {
        ancestor_rules(root, &root.abs())
            .into_iter()
            .map(DirRules)
            .collect()
    }

    /// This directory is inside a git repository.
    pub fn in_repo(&self) -> bool {
        self.0.in_repo
    }
}

/// Whether `path` is ignored under `levels` (outermost first; the deepest
/// matching rule decides, a whitelist un-ignores).
pub fn is_ignored(levels: &[&DirRules], path: &Path, is_dir: bool) -> bool {
    ignored_in(levels.iter().map(|l| &l.0), path, is_dir)
}

/// Read one ignore file from a directory handle (never through a link).
fn read_rule_file(dir: BorrowedFd<'_>, name: &str) -> Option<String> {
    use std::io::Read;
    let fd = open_child(dir, OsStr::new(name), OFlag::O_RDONLY | OFlag::O_NONBLOCK).ok()?;
    let mut file = std::fs::File::from(fd);
    let md = file.metadata().ok()?;
    if !md.is_file() || md.len() > MAX_IGNORE_FILE {
        return None;
    }
    let mut s = String::new();
    file.read_to_string(&mut s).ok()?;
    Some(s)
}

fn matcher(dir_path: &Path, content: &str) -> Option<Gitignore> {
    let mut b = GitignoreBuilder::new(dir_path);
    for line in content.lines() {
        let _ = b.add_line(None, line);
    }
    let m = b.build().ok()?;
    (!m.is_empty()).then_some(m)
}

/// The rules of one directory: `.ignore`, then (in a repository)
/// `.gitignore`, then (at a repository root) `.git/info/exclude`.
fn dir_rules(
    dir: BorrowedFd<'_>,
    path: &Path,
    has: &dyn Fn(&str) -> bool,
    in_repo: bool,
    repo_root: bool,
) -> Rules {
    let mut matchers = Vec::new();
    if has(".ignore") {
        if let Some(m) = read_rule_file(dir, ".ignore").and_then(|c| matcher(path, &c)) {
            matchers.push(m);
        }
    }
    if in_repo && has(".gitignore") {
        if let Some(m) = read_rule_file(dir, ".gitignore").and_then(|c| matcher(path, &c)) {
            matchers.push(m);
        }
    }
    if repo_root {
        let exclude = open_child(dir, OsStr::new(".git"), OFlag::O_PATH | OFlag::O_DIRECTORY)
            .ok()
            .and_then(|git| {
                open_child(
                    git.as_fd(),
                    OsStr::new("info"),
                    OFlag::O_PATH | OFlag::O_DIRECTORY,
                )
                .ok()
            })
            .and_then(|info| read_rule_file(info.as_fd(), "exclude"));
        if let Some(m) = exclude.and_then(|c| matcher(path, &c)) {
            matchers.push(m);
        }
    }
    Rules { matchers, in_repo }
}

/// The rules that apply to the walk root from above it: every ancestor's
/// `.ignore`, and, when a repository holds the root, the `.gitignore` files
/// from the repository root down and its `.git/info/exclude`. Ancestors
/// inside the anchor are read by handle; above it (a jail root inside a
/// repository) by path, which only the operator controls.
fn ancestor_rules(root: &Loc, root_path: &Path) -> Vec<Rules> {
    let ancestors: Vec<&Path> = root_path.ancestors().skip(1).collect();
    let repo_depth = ancestors
        .iter()
        .position(|a| a.join(".git").symlink_metadata().is_ok());
    let root_is_repo = root_path.join(".git").symlink_metadata().is_ok();
    let mut levels = Vec::new();
    // Outermost first, so the stack's top is the nearest ancestor.
    for (i, dir_path) in ancestors.iter().enumerate().rev() {
        let in_repo = repo_depth.is_some_and(|r| i <= r);
        let dir_fd = open_ancestor(root, dir_path);
        let Some(dir_fd) = dir_fd else {
            continue;
        };
        let level = dir_rules(
            dir_fd.as_fd(),
            dir_path,
            &|_| true,
            in_repo,
            repo_depth == Some(i),
        );
        if !level.matchers.is_empty() || in_repo {
            levels.push(level);
        }
    }
    if root_is_repo || repo_depth.is_some() {
        levels.push(Rules {
            matchers: Vec::new(),
            in_repo: true,
        });
    }
    levels
}

fn open_ancestor(root: &Loc, dir_path: &Path) -> Option<OwnedFd> {
    let flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY;
    match root.anchor().locate(dir_path) {
        Some(loc) => loc.open(flags).ok(),
        None => nix::fcntl::open(
            dir_path,
            flags | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
            Mode::empty(),
        )
        .ok(),
    }
}

/// Visit every staging name ([`super::STAGING_PREFIX`]) under `root` with
/// its directory handle (start-up sweep). Skips nothing else; follows no
/// link.
pub fn for_each_staging_name(root: &Loc, found: &mut dyn FnMut(BorrowedFd<'_>, &OsStr)) {
    let Ok(fd) = root.open_dir() else {
        return;
    };
    let mut stack = vec![fd];
    while let Some(dir) = stack.pop() {
        let dup = match nix::unistd::dup(dir.as_fd()) {
            Ok(d) => d,
            Err(_) => continue,
        };
        let Ok(mut d) = nix::dir::Dir::from_fd(dup) else {
            continue;
        };
        let mut subdirs: Vec<OsString> = Vec::new();
        for ent in d.iter().flatten() {
            let name = OsStr::from_bytes(ent.file_name().to_bytes());
            if name == "." || name == ".." {
                continue;
            }
            if is_staging_name(name) {
                found(dir.as_fd(), name);
            } else if ent.file_type() == Some(nix::dir::Type::Directory) {
                subdirs.push(name.to_os_string());
            }
        }
        for name in subdirs {
            if let Ok(child) = open_child(dir.as_fd(), &name, OFlag::O_RDONLY | OFlag::O_DIRECTORY)
            {
                stack.push(child);
            }
        }
    }
}

/// Visit the staging names directly in the directory open as `dir`.
pub fn for_each_staging_name_in(
    dir: BorrowedFd<'_>,
    found: &mut dyn FnMut(BorrowedFd<'_>, &OsStr),
) {
    let Ok(dup) = nix::unistd::dup(dir) else {
        return;
    };
    let Ok(mut d) = nix::dir::Dir::from_fd(dup) else {
        return;
    };
    let names: Vec<OsString> = d
        .iter()
        .flatten()
        .map(|e| OsStr::from_bytes(e.file_name().to_bytes()).to_os_string())
        .filter(|n| is_staging_name(n))
        .collect();
    for n in names {
        found(dir, &n);
    }
}
