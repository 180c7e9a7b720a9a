//! Phase one: the parallel walk. Decides which entries exist for this search
//! (policy, excludes, hidden, gitignore, globs), collects path matches, and
//! the files whose content phase two scans. Reads directories only, never
//! file contents, and never follows a symlink.

use super::PathMatchKind;
use super::Plan;
use super::paths::{PathHit, PathScorer};
use crate::error::Surface;
use crate::policy::Tail;
use crate::runtime::Runtime;
use ignore::{DirEntry, ParallelVisitor, ParallelVisitorBuilder, WalkBuilder, WalkState};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// What the walk found.
#[derive(Debug, Default)]
pub(crate) struct Walked {
    /// Regular files to scan for content (unsorted).
    pub files: Vec<PathBuf>,
    /// Entries whose path matched the query (unsorted).
    pub path_hits: Vec<PathHit>,
}

/// Walk `plan.root` on the `ignore` crate's thread pool.
pub(crate) fn walk(rt: &Runtime, plan: &Plan) -> Walked {
    let mut b = WalkBuilder::new(&plan.root);
    b.standard_filters(false)
        .follow_links(false)
        .hidden(!plan.include_hidden)
        .parents(plan.respect_gitignore)
        .ignore(plan.respect_gitignore)
        .git_ignore(plan.respect_gitignore)
        .git_exclude(plan.respect_gitignore)
        .git_global(false)
        .require_git(true);
    let out = Mutex::new(Walked::default());
    let mut builder = Builder {
        rt,
        plan,
        out: &out,
    };
    b.build_parallel().visit(&mut builder);
    out.into_inner().unwrap_or_else(|p| p.into_inner())
}

struct Builder<'s> {
    rt: &'s Runtime,
    plan: &'s Plan,
    out: &'s Mutex<Walked>,
}

impl<'s> ParallelVisitorBuilder<'s> for Builder<'s> {
    fn build(&mut self) -> Box<dyn ParallelVisitor + 's> {
        Box::new(Visitor {
            rt: self.rt,
            plan: self.plan,
            out: self.out,
            scorer: self.plan.paths.as_ref().map(PathScorer::new),
            found: Walked::default(),
        })
    }
}

/// One walker thread: collects locally, merges once when the walk ends.
struct Visitor<'s> {
    rt: &'s Runtime,
    plan: &'s Plan,
    out: &'s Mutex<Walked>,
    scorer: Option<PathScorer<'s>>,
    found: Walked,
}

impl Drop for Visitor<'_> {
    fn drop(&mut self) {
        let mut out = self.out.lock().unwrap_or_else(|p| p.into_inner());
        out.files.append(&mut self.found.files);
        out.path_hits.append(&mut self.found.path_hits);
    }
}

impl ParallelVisitor for Visitor<'_> {
    fn visit(&mut self, entry: Result<DirEntry, ignore::Error>) -> WalkState {
        // An unreadable directory or a vanished entry is simply not there.
        let Ok(entry) = entry else {
            return WalkState::Continue;
        };
        self.entry(&entry)
    }
}

/// What an entry is, without following it.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Dir,
    File,
    Symlink,
    Other,
}

impl Visitor<'_> {
    fn entry(&mut self, entry: &DirEntry) -> WalkState {
        let kind = match entry.file_type() {
            Some(t) if t.is_symlink() => Kind::Symlink,
            Some(t) if t.is_dir() => Kind::Dir,
            Some(t) if t.is_file() => Kind::File,
            _ => Kind::Other,
        };
        // The searched folder itself is the scope, not a result.
        if entry.depth() == 0 && kind == Kind::Dir {
            return WalkState::Continue;
        }
        let prune = if kind == Kind::Dir {
            WalkState::Skip
        } else {
            WalkState::Continue
        };
        let path = entry.path();
        let policy = &self.rt.policy;
        if kind == Kind::Other {
            return WalkState::Continue;
        }
        // Protected entries never appear; a protected directory is still
        // walked, since the policy judges each path on its own.
        if policy.is_protected(path) {
            return WalkState::Continue;
        }
        if self.plan.use_default_excludes && policy.is_excluded(path) {
            return prune;
        }
        let Ok(rel) = path.strip_prefix(&self.plan.anchor) else {
            return prune;
        };
        if self.plan.exclude.is_match(rel)
            || (kind == Kind::Dir && self.plan.exclude_subtree.is_match(rel))
        {
            return prune;
        }
        let included = self.plan.include.is_empty() || self.plan.include.is_match(rel);
        if !included {
            return WalkState::Continue;
        }
        if kind == Kind::File && self.plan.content.is_some() {
            self.found.files.push(path.to_path_buf());
        }
        if self.scorer.is_some() {
            self.match_path(entry, path, kind);
        }
        WalkState::Continue
    }

    fn match_path(&mut self, entry: &DirEntry, path: &Path, kind: Kind) {
        let Some(scorer) = self.scorer.as_mut() else {
            return;
        };
        let below = if entry.depth() == 0 {
            Path::new(entry.file_name())
        } else {
            path.strip_prefix(&self.plan.root).unwrap_or(path)
        };
        let Some(score) = scorer.score(entry.file_name(), below) else {
            return;
        };
        let kind = match kind {
            Kind::Dir => PathMatchKind::Dir,
            Kind::File => PathMatchKind::File,
            Kind::Symlink => match self.symlink_target_kind(path) {
                Some(k) => k,
                None => return,
            },
            Kind::Other => return,
        };
        self.found.path_hits.push(PathHit {
            path: path.to_path_buf(),
            kind,
            score,
            depth: below.components().count(),
        });
    }

    /// A symlink is listed only when the policy accepts where it leads; it
    /// then reports its target's kind. Never descended, never read.
    fn symlink_target_kind(&self, path: &Path) -> Option<PathMatchKind> {
        let raw = path.to_str()?;
        let resolved = self
            .rt
            .policy
            .resolve_existing(
                raw,
                Surface::Coder,
                Tail::Follow,
                self.plan.scope.as_deref(),
            )
            .ok()?;
        let md = std::fs::metadata(&resolved.path).ok()?;
        if md.is_dir() {
            Some(PathMatchKind::Dir)
        } else if md.is_file() {
            Some(PathMatchKind::File)
        } else {
            None
        }
    }
}
