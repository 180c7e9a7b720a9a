//! The one path policy.
//!
//! [`Policy::resolve`] is the only way any surface turns a wire path into a
//! filesystem path. It owns jailed vs unjailed mode, relative-path anchoring,
//! symlink and `..` resolution (component by component against the real
//! filesystem, like `realpath`, continuing lexically once a component is
//! missing), jail containment, the per-call scope, `fs.denylist_paths`,
//! `code.non_accessible_globs` and existence redaction. Surfaces operate on the
//! [`Resolved`] path it returns and never canonicalize anything themselves.
//!
//! Redaction: a path that is missing, unreadable (permission denied), under the
//! operator denylist or matched by a protected glob yields the same
//! [`Failure::not_found`] — same code, same words — so nobody can probe for a
//! denied path.

mod walk;

use crate::config::Config;
use crate::error::{Class, Failure, Surface, quote};
use crate::jail::{Anchor, Loc, Parent};
use globset::{Glob, GlobSet, GlobSetBuilder};
use std::path::{Path, PathBuf};

/// Whether paths are confined to roots.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// `fs.host_roots` set: every path must resolve inside a root.
    Jailed,
    /// `fs.allow_unjailed: true` with no roots: deny-only.
    Unjailed,
}

/// What the caller will do with the final path component.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tail {
    /// Follow a symlink at the tail (read, write, list, cwd). A dangling one
    /// is refused.
    Follow,
    /// Address the entry itself (stat, remove, rename, chmod of a link).
    Entry,
}

/// A wire path after the policy accepted it, and where to operate on it:
/// every filesystem operation goes through [`Resolved::loc`] (the handle
/// layer, [`crate::jail`]), never through `path` as a string.
#[derive(Debug, Clone)]
pub struct Resolved {
    /// Absolute path with every existing symlink resolved (the tail too,
    /// unless resolved with [`Tail::Entry`]). For messages and matching.
    pub path: PathBuf,
    /// The allowed root containing `path`, if any.
    pub root: Option<PathBuf>,
    /// Whether `path` existed when it was resolved.
    pub exists: bool,
    loc: Loc,
}

impl PartialEq for Resolved {
    fn eq(&self, other: &Resolved) -> bool {
        self.path == other.path && self.root == other.root && self.exists == other.exists
    }
}

impl Resolved {
    /// A resolved location built from a handle location (tests and walks,
    /// whose entries were reached by handle).
    pub fn from_loc(loc: Loc, root: Option<PathBuf>, exists: bool) -> Resolved {
        Resolved {
            path: loc.abs(),
            root,
            exists,
            loc,
        }
    }

    /// Where the operation happens: the canonical path below a root handle.
    pub fn loc(&self) -> &Loc {
        &self.loc
    }

    /// The entry's directory handle and name, for `*at()` changes.
    pub fn parent(&self) -> std::io::Result<Parent> {
        self.loc.parent()
    }

    /// A path below this one, reached by handle (`name` is one component).
    pub fn child(&self, name: &std::ffi::OsStr) -> Resolved {
        Resolved::from_loc(self.loc.child(name), self.root.clone(), true)
    }

    /// A path below this one (`rel` is canonical and relative: an entry a
    /// handle walk met), opened from the same root handle.
    pub fn below(&self, rel: &Path) -> Resolved {
        Resolved::from_loc(self.loc.below(rel), self.root.clone(), true)
    }
}

/// Longest path accepted (bytes), like the kernel's `PATH_MAX`.
const MAX_PATH_BYTES: usize = 4096;
/// Longest path component accepted (bytes), like `NAME_MAX`.
const MAX_NAME_BYTES: usize = 255;

/// The compiled policy of one runtime snapshot.
#[derive(Debug)]
pub struct Policy {
    mode: Mode,
    /// Jail roots (canonical). Empty when unjailed.
    jail_roots: Vec<PathBuf>,
    /// Roots the coder surface anchors relative paths at: the jail roots, or
    /// (unjailed) the working directory then `/tmp`.
    coder_roots: Vec<PathBuf>,
    /// `fs.denylist_paths`, each as written and canonicalized.
    denylist: Vec<PathBuf>,
    non_accessible: GlobSet,
    /// `code.non_accessible_globs` as written, by index in `non_accessible`.
    non_accessible_patterns: Vec<String>,
    default_exclude: GlobSet,
    /// The `…/**` default excludes with the `/**` dropped: they name
    /// directories whose whole content is noise, so the directory itself
    /// is pruned (`**/node_modules/**` → `**/node_modules`).
    default_exclude_dirs: GlobSet,
    allow_special_bits: bool,
    /// A handle per jail root (same order), or on `/` when unjailed: every
    /// operation starts from one of these.
    anchors: Vec<Anchor>,
}

fn compile_globs(key: &str, globs: &[String]) -> Result<GlobSet, String> {
    let mut b = GlobSetBuilder::new();
    for g in globs {
        let glob = Glob::new(g).map_err(|e| format!("{key}: invalid glob {g:?}: {e}"))?;
        b.add(glob);
    }
    b.build().map_err(|e| format!("{key}: {e}"))
}

impl Policy {
    /// Compile the path policy of `cfg`. `cwd` is the worker's working
    /// directory (the coder surface's first fallback root when unjailed).
    pub fn build(cfg: &Config, cwd: &Path) -> Result<Policy, String> {
        let fs = &cfg.fs;
        let mut jail_roots = Vec::new();
        for root in &fs.host_roots {
            if !root.is_absolute() {
                return Err(format!(
                    "fs.host_roots entry {root:?} is not absolute; list absolute directories"
                ));
            }
            let canon = std::fs::canonicalize(root).map_err(|e| {
                format!("fs.host_roots entry {root:?} cannot be resolved ({e}); create it or remove it from the list")
            })?;
            if !canon.is_dir() {
                return Err(format!("fs.host_roots entry {root:?} is not a directory"));
            }
            if !jail_roots.contains(&canon) {
                jail_roots.push(canon);
            }
        }
        let mode = if jail_roots.is_empty() {
            if !fs.allow_unjailed {
                return Err(
                    "fs.host_roots is empty and fs.allow_unjailed is not true: refusing to start \
                     unjailed: set fs.host_roots to at least one directory, or set \
                     fs.allow_unjailed: true"
                        .to_string(),
                );
            }
            Mode::Unjailed
        } else {
            Mode::Jailed
        };
        let coder_roots = match mode {
            Mode::Jailed => jail_roots.clone(),
            Mode::Unjailed => {
                let mut roots = Vec::new();
                for candidate in [cwd.to_path_buf(), PathBuf::from("/tmp")] {
                    if let Ok(c) = std::fs::canonicalize(&candidate) {
                        if !roots.contains(&c) {
                            roots.push(c);
                        }
                    }
                }
                if roots.is_empty() {
                    roots.push(PathBuf::from("/"));
                }
                roots
            }
        };
        let mut denylist = Vec::new();
        for p in &fs.denylist_paths {
            if !p.is_absolute() {
                return Err(format!("fs.denylist_paths entry {p:?} is not absolute"));
            }
            denylist.push(walk::lexical(p));
            if let Ok(c) = std::fs::canonicalize(p) {
                if !denylist.contains(&c) {
                    denylist.push(c);
                }
            }
        }
        let anchor_paths = match mode {
            Mode::Jailed => jail_roots.clone(),
            Mode::Unjailed => vec![PathBuf::from("/")],
        };
        let mut anchors = Vec::new();
        for p in &anchor_paths {
            anchors.push(
                Anchor::open(p).map_err(|e| format!("cannot open root {}: {e}", p.display()))?,
            );
        }
        Ok(Policy {
            anchors,
            mode,
            jail_roots,
            coder_roots,
            denylist,
            non_accessible: compile_globs(
                "code.non_accessible_globs",
                &cfg.code.non_accessible_globs,
            )?,
            non_accessible_patterns: cfg.code.non_accessible_globs.clone(),
            default_exclude: compile_globs(
                "code.default_exclude_globs",
                &cfg.code.default_exclude_globs,
            )?,
            default_exclude_dirs: compile_globs(
                "code.default_exclude_globs",
                &cfg.code
                    .default_exclude_globs
                    .iter()
                    .filter_map(|g| g.strip_suffix("/**").map(str::to_string))
                    .filter(|g| !g.is_empty())
                    .collect::<Vec<_>>(),
            )?,
            allow_special_bits: fs.allow_special_bits,
        })
    }

    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// The jail roots (empty when unjailed).
    pub fn jail_roots(&self) -> &[PathBuf] {
        &self.jail_roots
    }

    /// The roots the coder surface reports and anchors at.
    pub fn coder_roots(&self) -> &[PathBuf] {
        &self.coder_roots
    }

    fn roots_for(&self, surface: Surface) -> &[PathBuf] {
        match surface {
            Surface::Coder => &self.coder_roots,
            Surface::Shell => &self.jail_roots,
        }
    }

    /// Resolve a wire path for `surface`. `scope` is a per-call session
    /// directory (already resolved with [`Policy::resolve_scope`]): relative
    /// paths anchor there and the result must stay inside it.
    pub fn resolve(
        &self,
        raw: &str,
        surface: Surface,
        tail: Tail,
        scope: Option<&Path>,
    ) -> Result<Resolved, Failure> {
        if raw.is_empty() {
            return Err(Failure::bad_input(
                "path is empty; pass a file or directory path (coder::info lists the roots)",
            ));
        }
        if raw.contains('\0') {
            return Err(Failure::bad_input(format!(
                "path {} contains a NUL byte",
                quote(raw)
            )));
        }
        if raw.len() > MAX_PATH_BYTES {
            return Err(Failure::bad_input(format!(
                "path {} is {} bytes long; the limit is {MAX_PATH_BYTES} bytes",
                quote(raw),
                raw.len()
            )));
        }
        if let Some(long) = raw.split('/').find(|c| c.len() > MAX_NAME_BYTES) {
            return Err(Failure::bad_input(format!(
                "path {} has a component of {} bytes ({}); a file name is at most \
                 {MAX_NAME_BYTES} bytes",
                quote(raw),
                long.len(),
                quote(long)
            )));
        }
        let wire = Path::new(raw);
        let absolute = if wire.is_absolute() {
            wire.to_path_buf()
        } else if let Some(scope) = scope {
            scope.join(wire)
        } else {
            match (surface, self.mode) {
                (Surface::Shell, Mode::Unjailed) => {
                    return Err(Failure::bad_input(format!(
                        "relative path {} is not accepted while unjailed (fs.host_roots is \
                         empty): pass an absolute, already-expanded path (\"~\" is never expanded)",
                        quote(raw)
                    )));
                }
                _ => self.roots_for(surface)[0].join(wire),
            }
        };
        // Protection is checked on the path as written first, so that every
        // later failure (escape, loop, dangling link) of a protected path
        // still reads as "not found".
        let lexical = walk::lexical(&absolute);
        if self.is_denylisted(&lexical) {
            return Err(Failure::not_found(raw));
        }
        // A glob protects a spelling, whatever exists: naming the glob
        // (public in coder::info) says nothing about the tree.
        if let Some(glob) = self.protecting_glob(&lexical) {
            return Err(Failure::protected(raw, glob));
        }
        let walked = walk::resolve(&absolute, tail).map_err(|e| match e {
            walk::WalkError::Denied => Failure::not_found(raw),
            walk::WalkError::Loop => Failure::bad_input(format!(
                "path {} has too many levels of symbolic links",
                quote(raw)
            )),
            walk::WalkError::Io(err) => Failure::from_io(raw, &err),
        })?;
        let root = self.containing_root(&walked.path);
        if self.mode == Mode::Jailed && root.is_none() {
            return Err(self.escape(raw, surface));
        }
        if let Some(scope) = scope {
            if !walked.path.starts_with(scope) {
                return Err(Failure::new(
                    Class::OutsideScope,
                    format!(
                        "path {} resolves outside the session directory {} (base_dir); pass a \
                         path inside it, or omit base_dir to address the allowed roots",
                        quote(raw),
                        scope.display()
                    ),
                ));
            }
        }
        // A link whose target is missing reads exactly like a link to a
        // denied target and like a missing path: nothing tells them apart.
        if walked.dangling_tail
            || self.is_denylisted(&walked.path)
            || self.is_inside_non_accessible(&walked.path)
        {
            return Err(Failure::not_found(raw));
        }
        let loc = self
            .anchor_of(&walked.path)
            .and_then(|a| a.locate(&walked.path))
            .ok_or_else(|| self.escape(raw, surface))?;
        Ok(Resolved {
            path: walked.path,
            root,
            exists: walked.exists,
            loc,
        })
    }

    /// Resolve an existing path; a missing one is the redacted 211.
    pub fn resolve_existing(
        &self,
        raw: &str,
        surface: Surface,
        tail: Tail,
        scope: Option<&Path>,
    ) -> Result<Resolved, Failure> {
        let r = self.resolve(raw, surface, tail, scope)?;
        if r.exists {
            Ok(r)
        } else {
            Err(Failure::not_found(raw))
        }
    }

    /// Resolve a per-call `base_dir`: an existing directory the policy allows.
    pub fn resolve_scope(&self, raw: &str, surface: Surface) -> Result<PathBuf, Failure> {
        let r = self.resolve_existing(raw, surface, Tail::Follow, None)?;
        if !r.path.is_dir() {
            return Err(Failure::new(
                Class::WrongType,
                format!("base_dir {} is not a directory", quote(raw)),
            ));
        }
        Ok(r.path)
    }

    fn escape(&self, raw: &str, surface: Surface) -> Failure {
        let roots: Vec<String> = self
            .roots_for(surface)
            .iter()
            .map(|r| r.display().to_string())
            .collect();
        Failure::new(
            Class::JailEscape,
            format!(
                "path {} escapes the fs jail roots [{}] (lexically or through a symlink); \
                 pass a path inside one of them (relative paths resolve against {})",
                quote(raw),
                roots.join(", "),
                roots
                    .first()
                    .map(String::as_str)
                    .unwrap_or("the primary root")
            ),
        )
    }

    /// The handle an absolute path is operated on from: the deepest jail
    /// root holding it, or `/` when unjailed.
    fn anchor_of(&self, p: &Path) -> Option<&Anchor> {
        self.anchors
            .iter()
            .filter(|a| p.starts_with(a.path()))
            .max_by_key(|a| a.path().as_os_str().len())
    }

    /// Resolve an absolute path the worker itself chose (a root, a
    /// configured directory): the same decision as a wire path.
    pub fn locate(&self, abs: &Path) -> Option<Resolved> {
        let raw = abs.to_str()?;
        self.resolve(raw, Surface::Shell, Tail::Follow, None).ok()
    }

    /// Hide one of the worker's own directories (the change journal's data
    /// directory) from every surface, like an `fs.denylist_paths` entry: it
    /// reads exactly like a missing path and is left out of every listing,
    /// search, walk and watch, even when it lies inside a root. `abs` need
    /// not exist yet: its existing part is canonicalized and the rest
    /// appended, so the name it will have is denied too.
    pub fn deny_own(&mut self, abs: &Path) {
        let lexical = walk::lexical(abs);
        let mut existing = lexical.clone();
        let mut rest = Vec::new();
        let canonical = loop {
            if let Ok(c) = std::fs::canonicalize(&existing) {
                break Some(rest.iter().rev().fold(c, |p: PathBuf, n| p.join(n)));
            }
            match (
                existing.file_name().map(|n| n.to_os_string()),
                existing.parent(),
            ) {
                (Some(name), Some(parent)) => {
                    rest.push(name);
                    existing = parent.to_path_buf();
                }
                _ => break None,
            }
        };
        for d in [Some(lexical), canonical].into_iter().flatten() {
            if !self.denylist.contains(&d) {
                self.denylist.push(d);
            }
        }
    }

    /// Whether `dir` is, or contains, a path of `fs.denylist_paths` —
    /// decided from the list, not from what exists, so refusing to move or
    /// delete it reveals nothing about hidden entries.
    pub fn holds_denylisted(&self, dir: &Path) -> bool {
        self.denylist.iter().any(|d| d.starts_with(dir))
    }

    fn containing_root(&self, p: &Path) -> Option<PathBuf> {
        let roots = if self.mode == Mode::Jailed {
            &self.jail_roots
        } else {
            &self.coder_roots
        };
        roots
            .iter()
            .filter(|r| p.starts_with(r))
            .max_by_key(|r| r.as_os_str().len())
            .cloned()
    }

    /// Whether `path` is, or contains, a root the surface anchors at — the
    /// jail roots, the coder roots, or `/` — so removing or moving it would
    /// take a root with it.
    pub fn holds_a_root(&self, path: &Path, surface: Surface) -> bool {
        let coder = match surface {
            Surface::Coder => self.coder_roots.as_slice(),
            Surface::Shell => &[],
        };
        path == Path::new("/")
            || coder
                .iter()
                .chain(&self.jail_roots)
                .any(|root| root.starts_with(path))
    }

    /// Whether a path is under `fs.denylist_paths` (hidden from listings too).
    pub fn is_denylisted(&self, p: &Path) -> bool {
        self.denylist.iter().any(|d| p.starts_with(d))
    }

    /// The strings a glob is matched against: root-relative for a path
    /// inside a root, else the absolute path without its leading `/`.
    fn glob_subjects(&self, p: &Path) -> Vec<PathBuf> {
        let roots = if self.mode == Mode::Jailed {
            &self.jail_roots
        } else {
            &self.coder_roots
        };
        let rels: Vec<PathBuf> = roots
            .iter()
            .filter_map(|r| p.strip_prefix(r).ok())
            .filter(|rel| !rel.as_os_str().is_empty())
            .map(Path::to_path_buf)
            .collect();
        if !rels.is_empty() || roots.iter().any(|r| r == p) {
            return rels;
        }
        p.strip_prefix("/")
            .map(|r| vec![r.to_path_buf()])
            .unwrap_or_default()
    }

    /// Whether an absolute (resolved) path is protected: under the denylist
    /// or matched by `non_accessible_globs`. Listings flag such entries;
    /// everything else treats them as missing.
    pub fn is_protected(&self, p: &Path) -> bool {
        self.is_denylisted(p) || self.is_non_accessible(p)
    }

    /// Whether a path matches `non_accessible_globs` (listed, never opened).
    pub fn is_non_accessible(&self, p: &Path) -> bool {
        self.glob_subjects(p)
            .iter()
            .any(|s| self.non_accessible.is_match(s))
    }

    /// The `non_accessible_globs` pattern that protects `p` (the path or one
    /// of its ancestors below its root), if any.
    pub fn protecting_glob(&self, p: &Path) -> Option<&str> {
        self.glob_subjects(p).iter().find_map(|s| {
            s.ancestors()
                .filter(|a| !a.as_os_str().is_empty())
                .find_map(|a| self.non_accessible.matches(a).first().copied())
                .and_then(|i| self.non_accessible_patterns.get(i).map(String::as_str))
        })
    }

    /// Whether a path or one of its ancestors (below its root) matches
    /// `non_accessible_globs`: a protected directory protects its content
    /// even when the glob names only the directory (`**/private`).
    fn is_inside_non_accessible(&self, p: &Path) -> bool {
        self.glob_subjects(p).iter().any(|s| {
            s.ancestors()
                .filter(|a| !a.as_os_str().is_empty())
                .any(|a| self.non_accessible.is_match(a))
        })
    }

    /// Whether a path is hidden by `default_exclude_globs` (noise, not access).
    pub fn is_excluded(&self, p: &Path) -> bool {
        self.glob_subjects(p)
            .iter()
            .any(|s| self.default_exclude.is_match(s) || self.default_exclude_dirs.is_match(s))
    }

    /// Refuse setuid/setgid/sticky bits unless `fs.allow_special_bits`.
    pub fn check_mode_bits(&self, mode: u32) -> Result<(), Failure> {
        if mode > 0o7777 {
            return Err(Failure::bad_input(format!(
                "mode {mode:o} is out of range; pass an octal mode such as \"0644\""
            )));
        }
        if mode & 0o7000 != 0 && !self.allow_special_bits {
            return Err(Failure::bad_input(format!(
                "mode {mode:04o} carries setuid/setgid/sticky bits, which fs.allow_special_bits \
                 forbids; drop the leading digit (e.g. \"{:04o}\")",
                mode & 0o777
            )));
        }
        Ok(())
    }
}

/// Parse an octal mode string (`"644"`, `"0644"`, `"0o644"`).
pub fn parse_octal_mode(s: &str) -> Result<u32, Failure> {
    let digits = s.trim().trim_start_matches("0o");
    if digits.is_empty() || digits.len() > 5 || !digits.chars().all(|c| ('0'..='7').contains(&c)) {
        return Err(Failure::bad_input(format!(
            "bad octal mode {s:?}; pass octal digits such as \"0644\" or \"0755\""
        )));
    }
    u32::from_str_radix(digits, 8).map_err(|_| Failure::bad_input(format!("bad octal mode {s:?}")))
}

#[cfg(test)]
mod tests;
