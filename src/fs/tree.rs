//! The walk behind `shell::fs::grep` and `shell::fs::sed`.
//!
//! Starts at a directory the policy already resolved and yields regular files
//! only: symlinks are never followed (a link inside the jail may point out of
//! it), special files (FIFOs, devices) are skipped, and every entry the
//! policy calls protected — denylisted or matched by a protected glob — is
//! pruned before anything opens it. No ignore files and no hidden-file
//! filter: this is the raw surface; `coder::search` is the filtered one.
//!
//! `include_glob` / `exclude_glob` (globset syntax, `*` crosses `/`) match the
//! path relative to the walked root; an excluded directory is pruned whole.

use crate::error::Failure;
use crate::runtime::Runtime;
use globset::{Glob, GlobSet, GlobSetBuilder};
use ignore::{DirEntry, WalkBuilder};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Compiled include/exclude filters.
#[derive(Clone)]
pub struct Filter {
    include: Option<GlobSet>,
    exclude: Option<GlobSet>,
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
            exclude: compile("exclude_glob", exclude)?,
        })
    }

    /// Whether a file at `rel` (relative to the walked root) is wanted.
    pub fn wants_file(&self, rel: &Path) -> bool {
        if let Some(ex) = &self.exclude {
            if ex.is_match(rel) {
                return false;
            }
        }
        match &self.include {
            Some(inc) => inc.is_match(rel),
            None => true,
        }
    }

    fn prunes_dir(&self, rel: &Path) -> bool {
        self.exclude
            .as_ref()
            .is_some_and(|ex| !rel.as_os_str().is_empty() && ex.is_match(rel))
    }
}

/// A walk over one resolved root.
pub struct Tree {
    pub root: PathBuf,
    pub recursive: bool,
    pub filter: Filter,
    pub runtime: Arc<Runtime>,
}

/// One file the walk yields.
pub struct Found {
    pub abs: PathBuf,
    /// Relative to the walked root (empty when the root is the file).
    pub rel: PathBuf,
}

impl Tree {
    fn builder(&self) -> WalkBuilder {
        let mut b = WalkBuilder::new(&self.root);
        b.standard_filters(false)
            .follow_links(false)
            .max_depth(if self.recursive { None } else { Some(1) });
        let runtime = self.runtime.clone();
        let filter = self.filter.clone();
        let root = self.root.clone();
        b.filter_entry(move |e| {
            if e.depth() == 0 {
                return true;
            }
            if runtime.policy.is_protected(e.path()) {
                return false;
            }
            let is_dir = e.file_type().is_some_and(|t| t.is_dir());
            !(is_dir && filter.prunes_dir(e.path().strip_prefix(&root).unwrap_or(e.path())))
        });
        b
    }

    /// Whether a walked entry is a file to visit.
    fn accept(&self, e: &DirEntry) -> Option<Found> {
        if !e.file_type().is_some_and(|t| t.is_file()) {
            return None;
        }
        let abs = e.path().to_path_buf();
        if self.runtime.policy.is_protected(&abs) {
            return None;
        }
        let rel = abs.strip_prefix(&self.root).unwrap_or(&abs).to_path_buf();
        let subject = if rel.as_os_str().is_empty() {
            abs.file_name().map(PathBuf::from).unwrap_or_default()
        } else {
            rel.clone()
        };
        self.filter
            .wants_file(&subject)
            .then_some(Found { abs, rel })
    }

    /// Visit files in name order, one thread. `visit` returns false to stop.
    pub fn for_each_sorted(&self, mut visit: impl FnMut(Found) -> bool) {
        let mut b = self.builder();
        b.sort_by_file_name(|a, b| a.cmp(b));
        for entry in b.build().flatten() {
            if let Some(found) = self.accept(&entry) {
                if !visit(found) {
                    break;
                }
            }
        }
    }

    /// Visit files on several threads. `make_visitor` builds one visitor a
    /// thread; a visitor returns false to stop the whole walk.
    pub fn for_each_parallel<F>(&self, make_visitor: impl Fn() -> F + Sync)
    where
        F: FnMut(Found) -> bool + Send,
    {
        let tree = self;
        self.builder().build_parallel().run(|| {
            let mut visit = make_visitor();
            Box::new(move |entry| {
                let Ok(entry) = entry else {
                    return ignore::WalkState::Continue;
                };
                match tree.accept(&entry) {
                    Some(found) => {
                        if visit(found) {
                            ignore::WalkState::Continue
                        } else {
                            ignore::WalkState::Quit
                        }
                    }
                    None => ignore::WalkState::Continue,
                }
            })
        });
    }
}

/// Whether the first 8 KiB of a file hold a NUL byte (the usual "binary"
/// heuristic of grep and git).
pub fn looks_binary(path: &Path) -> std::io::Result<bool> {
    use std::io::Read;
    let mut f = std::fs::File::open(path)?;
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
