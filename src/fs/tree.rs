//! The walk behind `shell::fs::grep` and `shell::fs::sed`.
//!
//! Starts at a directory the policy already resolved and walks it by
//! directory handles ([`crate::jail::walk`]), yielding regular files
//! only: symlinks are never followed (a link inside the jail may point out of
//! it), special files (FIFOs, devices) are skipped, and every entry the
//! policy calls protected — denylisted or matched by a protected glob — is
//! pruned before anything opens it. No ignore files and no hidden-file
//! filter: this is the raw surface; `coder::search` is the filtered one.
//!
//! `include_glob` / `exclude_glob` (globset syntax, `*` crosses `/`) match the
//! path relative to the walked root — the caller's `path` (for a file, its
//! name); an excluded directory is pruned whole. When include globs match no
//! file, [`Filter::include_note`] says so for the answer.

use crate::error::Failure;
use crate::jail::dir::Kind;
use crate::jail::walk::{self, Options, Step};
use crate::policy::Resolved;
use crate::runtime::Runtime;
use globset::{Glob, GlobSet, GlobSetBuilder};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// Compiled include/exclude filters. Clones share what the walk saw, for
/// [`Filter::include_note`].
#[derive(Clone)]
pub struct Filter {
    include: Option<GlobSet>,
    include_globs: Vec<String>,
    exclude: Option<GlobSet>,
    seen: Arc<Seen>,
}

/// What the filter was asked about during a walk.
#[derive(Default)]
struct Seen {
    /// Some file matched the include globs.
    included: AtomicBool,
    /// The first file not excluded, relative to the walked root.
    first: Mutex<Option<PathBuf>>,
}

fn compile(key: &str, globs: &[String]) -> Result<Option<GlobSet>, Failure> {
    if globs.is_empty() {
        return Ok(None);
    }
    let mut b = GlobSetBuilder::new();
    for g in globs {
        let glob = Glob::new(g).map_err(|e| {
            Failure::bad_input(format!(
                "{key}: invalid glob {g:?} ({e}); use globset syntax such as \"*.rs\" or \"src/**\""
            ))
        })?;
        b.add(glob);
    }
    b.build()
        .map(Some)
        .map_err(|e| Failure::bad_input(format!("{key}: {e}")))
}

impl Filter {
    pub fn new(include: &[String], exclude: &[String]) -> Result<Filter, Failure> {
        Ok(Filter {
            include: compile("include_glob", include)?,
            include_globs: include.to_vec(),
            exclude: compile("exclude_glob", exclude)?,
            seen: Arc::default(),
        })
    }

    /// Whether a file at `rel` (relative to the walked root) is wanted.
    pub fn wants_file(&self, rel: &Path) -> bool {
        if let Some(ex) = &self.exclude {
            if ex.is_match(rel) {
                return false;
            }
        }
        let Some(inc) = &self.include else {
            return true;
        };
        {
            let mut first = self.seen.first.lock().unwrap_or_else(|p| p.into_inner());
            if first.is_none() {
                *first = Some(rel.to_path_buf());
            }
        }
        let wanted = inc.is_match(rel);
        if wanted {
            self.seen.included.store(true, Ordering::Relaxed);
        }
        wanted
    }

    /// After a walk of `root` (spelt `raw` by the caller): the answer's note
    /// when include globs matched no file, naming what they were matched
    /// against and how a file there is spelt for them.
    pub fn include_note(&self, raw: &str, root: &Path) -> Option<String> {
        if self.include.is_none() || self.seen.included.load(Ordering::Relaxed) {
            return None;
        }
        let first = self.seen.first.lock().unwrap_or_else(|p| p.into_inner());
        let example = match first.as_deref() {
            Some(rel) if rel.as_os_str().is_empty() => String::new(),
            Some(rel) => format!(
                "; a file there, {}, is matched as {:?}",
                root.join(rel).display(),
                rel.display().to_string()
            ),
            None => "; no file was found there at all".to_string(),
        };
        Some(format!(
            "include_glob {:?} matched no file: globs match the path relative to `path` ({raw:?} \
             = {}){example}. Adjust the globs to that folder, or walk a different path",
            self.include_globs,
            root.display()
        ))
    }

    fn prunes_dir(&self, rel: &Path) -> bool {
        self.exclude
            .as_ref()
            .is_some_and(|ex| !rel.as_os_str().is_empty() && ex.is_match(rel))
    }
}

/// A walk over one resolved root.
pub struct Tree {
    pub root: Resolved,
    pub recursive: bool,
    pub filter: Filter,
    pub runtime: Arc<Runtime>,
}

/// One file the walk yields.
pub struct Found {
    pub abs: PathBuf,
    /// Relative to the walked root (empty when the root is the file).
    pub rel: PathBuf,
    /// Where to open it: by handle, below the walked root.
    pub at: Resolved,
}

impl Tree {
    /// Visit files in name order, one thread. `visit` returns false to stop.
    pub fn for_each_sorted(&self, mut visit: impl FnMut(Found) -> bool) {
        // A file as the root: the walk is that one file.
        let is_file = self
            .root
            .loc()
            .lstat()
            .is_ok_and(|st| crate::jail::is_file_mode(st.st_mode));
        if is_file {
            let name = self
                .root
                .path
                .file_name()
                .map(PathBuf::from)
                .unwrap_or_default();
            if !self.runtime.policy.is_protected(&self.root.path) && self.filter.wants_file(&name) {
                visit(Found {
                    abs: self.root.path.clone(),
                    rel: PathBuf::new(),
                    at: self.root.clone(),
                });
            }
            return;
        }
        let opts = Options {
            max_depth: if self.recursive { None } else { Some(1) },
            ..Options::default()
        };
        walk::walk(self.root.loc(), opts, |node| {
            if node.depth == 0 {
                return Step::Descend;
            }
            if self.runtime.policy.is_protected(node.path) {
                return Step::Skip;
            }
            match node.kind {
                Kind::Dir if self.filter.prunes_dir(node.rel) => Step::Skip,
                Kind::Dir => Step::Descend,
                Kind::File if self.filter.wants_file(node.rel) => {
                    let found = Found {
                        abs: node.path.to_path_buf(),
                        rel: node.rel.to_path_buf(),
                        at: self.root.below(node.rel),
                    };
                    if visit(found) {
                        Step::Descend
                    } else {
                        Step::Stop
                    }
                }
                _ => Step::Descend,
            }
        });
    }

    /// Visit files on several threads: the walk runs on the calling thread
    /// and hands files to one visitor per worker. `make_visitor` builds one
    /// visitor a thread; a visitor returns false to stop the whole walk.
    pub fn for_each_parallel<F>(&self, make_visitor: impl Fn() -> F + Sync)
    where
        F: FnMut(Found) -> bool + Send,
    {
        let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
        let stop = AtomicBool::new(false);
        let (tx, rx) = std::sync::mpsc::sync_channel::<Found>(1024);
        let rx = Mutex::new(rx);
        std::thread::scope(|scope| {
            for _ in 0..workers {
                let (rx, stop, make_visitor) = (&rx, &stop, &make_visitor);
                scope.spawn(move || {
                    let mut visit = make_visitor();
                    loop {
                        let next = rx.lock().unwrap_or_else(|e| e.into_inner()).recv();
                        let Ok(found) = next else { break };
                        if stop.load(Ordering::Relaxed) {
                            continue;
                        }
                        if !visit(found) {
                            stop.store(true, Ordering::Relaxed);
                        }
                    }
                });
            }
            self.for_each_sorted(|found| !stop.load(Ordering::Relaxed) && tx.send(found).is_ok());
            drop(tx);
        });
    }
}

/// Whether the first 8 KiB of a file hold a NUL byte (the usual "binary"
/// heuristic of grep and git).
pub fn looks_binary(at: &Resolved) -> std::io::Result<bool> {
    use std::io::Read;
    let mut f = at.loc().open_read()?;
    let mut buf = [0u8; 8192];
    let mut filled = 0;
    while filled < buf.len() {
        let n = f.read(&mut buf[filled..])?;
        if n == 0 {
            break;
        }
        filled += n;
    }
    Ok(buf[..filled].contains(&0))
}
