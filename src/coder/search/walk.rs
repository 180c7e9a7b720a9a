//! The walk: decides which entries exist for this search (policy, excludes,
//! hidden, gitignore, globs), collects path matches, and hands the files to
//! scan to the content scanner as it goes.
//!
//! The walk is depth-first with every directory's entries sorted by name, so
//! entries come out already in result order (component-wise path order):
//! the scanner can start on the first file at once and never waits for a
//! sort. It reads directories only, never file contents, and never follows
//! a symlink.

use super::paths::{PathHit, PathScorer};
use super::{Filters, PathMatchKind, Plan};
use crate::error::Surface;
use crate::policy::Tail;
use crate::runtime::Runtime;
use ignore::{DirEntry, WalkBuilder};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What an entry is, without following it.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Dir,
    File,
    Symlink,
    Other,
}

fn kind_of(entry: &DirEntry) -> Kind {
    match entry.file_type() {
        Some(t) if t.is_symlink() => Kind::Symlink,
        Some(t) if t.is_dir() => Kind::Dir,
        Some(t) if t.is_file() => Kind::File,
        _ => Kind::Other,
    }
}

/// Walk `plan.root` in path order. Each regular file to scan for content
/// goes to `on_file` until it returns false (the content answer is settled);
/// the walk then goes on only as long as path matching needs it. Returns the
/// path matches, in path order (unranked ones cut just past `max_matches`).
pub(crate) fn walk(
    rt: &Arc<Runtime>,
    plan: &Plan,
    mut on_file: impl FnMut(PathBuf) -> bool,
) -> Vec<PathHit> {
    let mut b = WalkBuilder::new(&plan.root);
    b.standard_filters(false)
        .follow_links(false)
        .hidden(!plan.include_hidden)
        .parents(plan.respect_gitignore)
        .ignore(plan.respect_gitignore)
        .git_ignore(plan.respect_gitignore)
        .git_exclude(plan.respect_gitignore)
        .git_global(false)
        .require_git(true)
        .sort_by_file_name(|a, b| a.cmp(b));
    let (rt_prune, filters) = (rt.clone(), plan.filters.clone());
    b.filter_entry(move |e| !prunes(&rt_prune, &filters, e));
    let mut scorer = plan.paths.as_ref().map(PathScorer::new);
    // Unranked path hits arrive in result order: past the cap, the list is
    // certainly cut and no later hit can enter it.
    let hit_cap = match &plan.paths {
        Some(q) if !q.fuzzy() => plan.max_matches.saturating_add(1),
        _ => usize::MAX,
    };
    let mut hits = Vec::new();
    let mut content_open = plan.content.is_some();
    for entry in b.build() {
        if plan.cancelled() || (!content_open && (scorer.is_none() || hits.len() >= hit_cap)) {
            break;
        }
        // An unreadable directory or a vanished entry is simply not there.
        let Ok(entry) = entry else {
            continue;
        };
        let kind = kind_of(&entry);
        // The searched folder itself is the scope, not a result.
        if (entry.depth() == 0 && kind == Kind::Dir) || kind == Kind::Other {
            continue;
        }
        let path = entry.path();
        // Protected entries never appear; a protected directory is still
        // walked, since the policy judges each path on its own.
        if rt.policy.is_protected(path) {
            continue;
        }
        let f = &plan.filters;
        if !f.include.is_empty() {
            match path.strip_prefix(&f.anchor) {
                Ok(rel) if f.include.is_match(rel) => {}
                _ => continue,
            }
        }
        // Once the content answer is settled the walk goes on for paths only.
        if kind == Kind::File && content_open && !on_file(path.to_path_buf()) {
            content_open = false;
        }
        if let Some(scorer) = scorer.as_mut().filter(|_| hits.len() < hit_cap) {
            if let Some(hit) = match_path(rt, plan, scorer, &entry, kind) {
                hits.push(hit);
            }
        }
    }
    hits
}

/// Whether an entry (and, for a directory, everything below it) is left out
/// of the walk: default excludes and the caller's exclude globs.
fn prunes(rt: &Runtime, f: &Filters, entry: &DirEntry) -> bool {
    if entry.depth() == 0 {
        return false;
    }
    let path = entry.path();
    if f.from_fs_root
        && entry.depth() == 1
        && ["/proc", "/sys", "/dev"]
            .iter()
            .any(|p| path == Path::new(p))
    {
        return true;
    }
    if f.use_default_excludes && rt.policy.is_excluded(path) {
        return true;
    }
    if f.exclude.is_empty() {
        return false;
    }
    let Ok(rel) = path.strip_prefix(&f.anchor) else {
        return true;
    };
    f.exclude.is_match(rel) || (kind_of(entry) == Kind::Dir && f.exclude_subtree.is_match(rel))
}

fn match_path(
    rt: &Runtime,
    plan: &Plan,
    scorer: &mut PathScorer<'_>,
    entry: &DirEntry,
    kind: Kind,
) -> Option<PathHit> {
    let path = entry.path();
    let below = if entry.depth() == 0 {
        Path::new(entry.file_name())
    } else {
        path.strip_prefix(&plan.root).unwrap_or(path)
    };
    let score = scorer.score(entry.file_name(), below)?;
    let kind = match kind {
        Kind::Dir => PathMatchKind::Dir,
        Kind::File => PathMatchKind::File,
        Kind::Symlink => symlink_target_kind(rt, plan, path)?,
        Kind::Other => return None,
    };
    Some(PathHit {
        path: path.to_path_buf(),
        kind,
        score,
        depth: below.components().count(),
    })
}

/// A symlink is listed only when the policy accepts where it leads; it then
/// reports its target's kind. Never descended, never read.
fn symlink_target_kind(rt: &Runtime, plan: &Plan, path: &Path) -> Option<PathMatchKind> {
    let raw = path.to_str()?;
    let resolved = rt
        .policy
        .resolve_existing(raw, Surface::Coder, Tail::Follow, plan.scope.as_deref())
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
