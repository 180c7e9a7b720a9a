//! The walk: decides which entries exist for this search (policy, excludes,
//! hidden, gitignore, globs), collects path matches, and hands the files to
//! scan to the content scanner as it goes.
//!
//! The walk is depth-first with every directory's entries sorted by name, so
//! entries come out already in result order (component-wise path order):
//! the scanner can start on the first file at once and never waits for a
//! sort. It reads directories only, never file contents, and never follows
//! a symlink: it descends by directory handles ([`crate::jail::walk`]).

use super::paths::{PathHit, PathScorer};
use super::{Filters, PathMatchKind, Plan};
use crate::error::Surface;
use crate::index::Verdict;
use crate::index::tree::Seen;
use crate::jail;
use crate::jail::dir::Kind;
use crate::jail::walk::{Options, Step};
use crate::policy::Tail;
use crate::runtime::Runtime;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A file the walk hands the content scan.
pub(crate) enum FileRef<'a> {
    /// The searched path itself is the file.
    Root,
    /// A file below the searched folder (relative to it), with what the
    /// index proved about it ([`Verdict::Read`] when nothing).
    Below(&'a Path, Verdict),
}

/// What a walk found besides the files it handed over.
#[derive(Debug, Default)]
pub(crate) struct Walked {
    /// Path matches, in path order (unranked ones cut just past
    /// `max_matches`).
    pub hits: Vec<PathHit>,
    /// Some file passed the include globs (true without include globs).
    pub include_matched: bool,
    /// The first visible file, relative to the glob anchor (for the note
    /// of include globs that matched nothing).
    pub first_file: Option<PathBuf>,
}

/// Walk `plan.root` in path order. Each regular file to scan for content
/// goes to `on_file` until it returns false (the content answer is settled);
/// the walk then goes on only as long as path matching needs it.
pub(crate) fn walk(
    rt: &Arc<Runtime>,
    plan: &Plan,
    index: Option<&crate::index::Lease>,
    mut on_file: impl FnMut(FileRef<'_>) -> bool,
) -> Walked {
    let mut include_matched = plan.filters.include.is_empty();
    let mut first_file: Option<PathBuf> = None;
    let mut scorer = plan.paths.as_ref().map(PathScorer::new);
    // Unranked path hits arrive in result order: past the cap, the list is
    // certainly cut and no later hit can enter it.
    let hit_cap = match &plan.paths {
        Some(q) if !q.fuzzy() => plan.max_matches.saturating_add(1),
        _ => usize::MAX,
    };
    let mut hits = Vec::new();
    let mut content_open = plan.content.is_some();
    let root_kind = plan
        .root_at
        .loc()
        .lstat()
        .map(|st| Kind::of_mode(st.st_mode))
        .unwrap_or(Kind::Other);
    if root_kind == Kind::File {
        // A file as the search root: the walk is that one file.
        if content_open && !rt.policy.is_protected(&plan.root) {
            on_file(FileRef::Root);
        }
        if let Some(scorer) = scorer.as_mut() {
            let name = plan.root.file_name().unwrap_or_default();
            if let Some(score) = scorer.score(name, Path::new(name)) {
                hits.push(PathHit {
                    path: plan.root.clone(),
                    kind: PathMatchKind::File,
                    score,
                    depth: 1,
                });
            }
        }
        // A file named as the root is searched whatever the globs say.
        return Walked {
            hits,
            include_matched: true,
            first_file: None,
        };
    }
    let opts = Options {
        max_depth: None,
        skip_hidden: !plan.include_hidden,
        ignore_files: plan.respect_gitignore,
    };
    let mut visit = |node: &Seen<'_>| {
        if plan.cancelled() || (!content_open && (scorer.is_none() || hits.len() >= hit_cap)) {
            return Step::Stop;
        }
        if node.depth == 0 {
            return Step::Descend;
        }
        if prunes(rt, &plan.filters, node) {
            return Step::Skip;
        }
        if node.kind == Kind::Other {
            return Step::Descend;
        }
        let path = node.path;
        // Protected entries never appear; a protected directory is still
        // walked, since the policy judges each path on its own.
        let protected = match node.known {
            Some(k) => k.protected,
            None => rt.policy.is_protected(path),
        };
        if protected {
            return Step::Descend;
        }
        let f = &plan.filters;
        if node.kind == Kind::File && first_file.is_none() {
            first_file = path.strip_prefix(&f.anchor).ok().map(Path::to_path_buf);
        }
        if !f.include.is_empty() {
            match path.strip_prefix(&f.anchor) {
                Ok(rel) if f.include.is_match(rel) => include_matched |= node.kind == Kind::File,
                _ => return Step::Descend,
            }
        }
        // Once the content answer is settled the walk goes on for paths only.
        if node.kind == Kind::File && content_open {
            // what the index proves about the file, if it serves the walk
            let verdict = match (index, &plan.ngrams, node.known) {
                (Some(_), Some(q), Some(_)) => {
                    crate::index::verdict(node.summary, q, plan.max_read_bytes)
                }
                _ => Verdict::Read,
            };
            if !on_file(FileRef::Below(node.rel, verdict)) {
                content_open = false;
            }
        }
        if let Some(scorer) = scorer.as_mut().filter(|_| hits.len() < hit_cap) {
            if let Some(hit) = match_path(rt, plan, scorer, node) {
                hits.push(hit);
            }
        }
        Step::Descend
    };
    // The index's snapshot replays exactly the entries this walk meets
    // (it never serves ignore files); otherwise the disk is walked.
    let replayed = match index {
        Some(lease) if !opts.ignore_files => {
            let ahead = plan.ngrams.as_ref().and_then(|q| q.first_key());
            lease.replay(
                &plan.index_rel,
                &plan.root,
                opts.skip_hidden,
                ahead,
                &mut visit,
            )
        }
        _ => false,
    };
    if !replayed {
        jail::walk::walk(plan.root_at.loc(), opts, |node| {
            visit(&Seen {
                name: node.name,
                kind: node.kind,
                path: node.path,
                rel: node.rel,
                depth: node.depth,
                known: None,
                summary: None,
            })
        });
    }
    Walked {
        hits,
        include_matched,
        first_file,
    }
}

/// Whether an entry (and, for a directory, everything below it) is left out
/// of the walk: default excludes and the caller's exclude globs.
fn prunes(rt: &Runtime, f: &Filters, node: &Seen<'_>) -> bool {
    let path = node.path;
    if f.from_fs_root
        && node.depth == 1
        && ["/proc", "/sys", "/dev"]
            .iter()
            .any(|p| path == Path::new(p))
    {
        return true;
    }
    if f.use_default_excludes
        && match node.known {
            Some(k) => k.excluded,
            None => rt.policy.is_excluded(path),
        }
    {
        return true;
    }
    if f.exclude.is_empty() {
        return false;
    }
    let Ok(rel) = path.strip_prefix(&f.anchor) else {
        return true;
    };
    f.exclude.is_match(rel) || (node.kind == Kind::Dir && f.exclude_subtree.is_match(rel))
}

fn match_path(
    rt: &Runtime,
    plan: &Plan,
    scorer: &mut PathScorer<'_>,
    node: &Seen<'_>,
) -> Option<PathHit> {
    let score = scorer.score(node.name, node.rel)?;
    let kind = match node.kind {
        Kind::Dir => PathMatchKind::Dir,
        Kind::File => PathMatchKind::File,
        Kind::Symlink => symlink_target_kind(rt, plan, node.path)?,
        Kind::Other => return None,
    };
    Some(PathHit {
        path: node.path.to_path_buf(),
        kind,
        score,
        depth: node.rel.components().count(),
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
    let st = resolved.loc().lstat().ok()?;
    match Kind::of_mode(st.st_mode) {
        Kind::Dir => Some(PathMatchKind::Dir),
        Kind::File => Some(PathMatchKind::File),
        _ => None,
    }
}
