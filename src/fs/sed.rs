//! `shell::fs::sed`: find-and-replace across files, one atomic rewrite each.
//!
//! Files come from `files` (each resolved through the policy on its own) or
//! from a `path` walk ([`super::tree`]: `recursive`, globs, never through a
//! symlink, never a protected entry; binary files are skipped) — exactly one
//! of the two (S210). `pattern` is a Rust regex (`$1`/`${name}` expand in
//! `replacement`) or, with `regex: false`, a literal; `ignore_case` and
//! `first_only` (first match per file) apply to both.
//!
//! Like sed(1), matching is per line (a match never spans a line break), and
//! files are streamed: each line is read, rewritten and written to a temp
//! file beside the original, which replaces it atomically
//! ([`crate::jail::atomic`]) only when something changed — mode and owner kept.
//! Memory is bounded by the longest line, which may not exceed
//! `fs.max_write_bytes` (or 64 MiB when that is unlimited), and the output
//! may not exceed `fs.max_write_bytes` (S218 for that file).
//!
//! Per-file results: a failure (S211, S218, ...) is reported in that file's
//! `error` and leaves it untouched while the others are still edited. An
//! explicit `files` list gets one result per entry; a `path` walk reports
//! the files it changed or failed on. A bad pattern fails the whole call
//! (S217) before any file is touched.

use super::tree::{Filter, Tree};
use crate::error::{Class, Failure, Surface};
use crate::function::{Ctx, Flags, FunctionDef, function};
use crate::jail::atomic::Staged;
use crate::journal::Scope;
use crate::policy::Resolved;
use crate::policy::Tail;
use crate::sandbox::Target;
use regex::bytes::{Regex, RegexBuilder};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::io::BufRead;
use std::os::unix::fs::MetadataExt;

/// Longest line handled when `fs.max_write_bytes` is 0 (unlimited).
pub const MAX_LINE_UNLIMITED: u64 = 64 * 1024 * 1024;

#[derive(Debug, Deserialize, JsonSchema)]
pub struct SedRequest {
    /// Change history: groups this call's changes into one turn (`shell::turns::list` / `revert`); without it each change is its own turn.
    #[serde(default)]
    pub turn_id: Option<String>,
    /// Change history: the session the changes belong to (a filter of `shell::turns::list`).
    #[serde(default)]
    pub session_id: Option<String>,
    /// Rust regex by default; set regex:false for a literal string.
    pub pattern: String,
    /// String to substitute for each match.
    pub replacement: String,
    /// Explicit list of file paths to edit; provide either this or `path`, not both.
    #[serde(default)]
    pub files: Vec<String>,
    /// Root path to walk for files; used with `recursive`, `include_glob`, `exclude_glob`.
    #[serde(default)]
    pub path: Option<String>,
    /// Descend into subdirectories when `path` is set (default true).
    #[serde(default = "yes")]
    pub recursive: bool,
    /// Glob filters restricting which file paths are edited, matched relative to `path` (e.g. `path: "py"` with `calcpkg/**/*.py`); when they match no file, `note` says so.
    #[serde(default)]
    pub include_glob: Vec<String>,
    /// Glob filters excluding file paths from editing, matched relative to `path`; an excluded directory is not descended into.
    #[serde(default)]
    pub exclude_glob: Vec<String>,
    /// Treat pattern as a regex (default true) or a literal string (false).
    #[serde(default = "yes")]
    pub regex: bool,
    /// Replace only the first match per file instead of all matches.
    #[serde(default)]
    pub first_only: bool,
    /// Match pattern case-insensitively.
    #[serde(default)]
    pub ignore_case: bool,
    /// host (default) or { kind: "sandbox", sandbox_id }.
    #[serde(default)]
    pub target: Target,
}

fn yes() -> bool {
    true
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct FsSedFileResult {
    /// Change-history id of the change (`coder::change-diff`); null when none was journaled (sandbox targets, nothing changed).
    #[serde(default)]
    pub change_id: Option<String>,
    pub path: String,
    pub replacements: u64,
    pub success: bool,
    pub error: Option<String>,
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct SedResponse {
    /// Per-file replacement details.
    pub results: Vec<FsSedFileResult>,
    /// Sum of replacements made across all files.
    pub total_replacements: u64,
    /// How many files failed (each carries its own `error`); 0 when none did. When every file fails, the call itself fails instead, with the file's error (one file) or each file's error in its message.
    #[serde(default)]
    pub failed: u64,
    /// Present when a `path` walk's `include_glob` matched no file: names the folder the globs were matched against (`path`) and how a file there is spelt for them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

pub fn def() -> FunctionDef {
    function(
        "shell::fs::sed",
        "Takes `pattern`, `replacement`, and `files` or `path`. Find-and-replace across files. `pattern` is a Rust regex (regex: false for a literal). \
         Provide either `files` or `path` (+ recursive). Returns { results, total_replacements }. \
         Errors return { code, message }; common: S217 bad regex, S211 not found, S215 jail \
         escape.",
        Flags::NONE,
        sed,
    )
}

/// How one line is rewritten.
struct Edit {
    re: Regex,
    replacement: Vec<u8>,
    /// Expand `$1`-style references (regex mode with a `$` in the replacement).
    expand: bool,
    first_only: bool,
    max_line: u64,
    max_out: u64,
    /// The call's scope: its writes are recorded, each file's change id
    /// reported.
    scope: Scope,
}

impl Edit {
    fn new(req: &SedRequest, max_write: u64, scope: Scope) -> Result<Edit, Failure> {
        if req.pattern.is_empty() {
            return Err(Failure::bad_input(
                "pattern is empty; pass the text (regex: false) or Rust regex to replace",
            ));
        }
        let source = if req.regex {
            req.pattern.clone()
        } else {
            regex::escape(&req.pattern)
        };
        let re = RegexBuilder::new(&source)
            .case_insensitive(req.ignore_case)
            .build()
            .map_err(|e| super::grep::bad_regex(&req.pattern, &e.to_string()))?;
        Ok(Edit {
            scope,
            re,
            replacement: req.replacement.as_bytes().to_vec(),
            expand: req.regex && req.replacement.contains('$'),
            first_only: req.first_only,
            max_line: if max_write > 0 {
                max_write
            } else {
                MAX_LINE_UNLIMITED
            },
            max_out: max_write,
        })
    }

    /// Rewrite `line` (without its `\n`) into `out`; returns replacements,
    /// or `None` as soon as the rewritten line outgrows `max_line` (a pattern
    /// matching the empty string at every byte could otherwise multiply a
    /// long line by the replacement's size before any check ran).
    fn line(&self, line: &[u8], out: &mut Vec<u8>, budget: u64) -> Option<u64> {
        let cap = self.max_line as usize;
        let mut last = 0;
        let mut n = 0u64;
        if self.expand {
            for caps in self.re.captures_iter(line) {
                if n >= budget {
                    break;
                }
                let m = caps.get(0).expect("group 0 always matches");
                out.extend_from_slice(&line[last..m.start()]);
                caps.expand(&self.replacement, out);
                last = m.end();
                n += 1;
                if out.len() > cap {
                    return None;
                }
            }
        } else {
            for m in self.re.find_iter(line) {
                if n >= budget {
                    break;
                }
                out.extend_from_slice(&line[last..m.start()]);
                out.extend_from_slice(&self.replacement);
                last = m.end();
                n += 1;
                if out.len() > cap {
                    return None;
                }
            }
        }
        out.extend_from_slice(&line[last..]);
        Some(n)
    }

    /// Edit one file in place (atomically); returns replacements made.
    fn file(&self, raw: &str, abs: &Resolved) -> Result<u64, Failure> {
        let io = |e: std::io::Error| Failure::from_io(raw, &e);
        let src = abs.loc().open_read().map_err(io)?;
        let md = src.metadata().map_err(io)?;
        if !md.is_file() {
            return Err(super::wrong_type(format!(
                "{raw:?} is not a regular file; shell::fs::sed edits files"
            )));
        }
        let mut reader = std::io::BufReader::with_capacity(64 * 1024, src);
        let mut staged: Option<Staged> = None;
        let mut buf = Vec::new();
        let mut out = Vec::new();
        let mut total = 0u64;
        let mut written = 0u64;
        loop {
            buf.clear();
            let n = read_line(&mut reader, &mut buf, self.max_line).map_err(io)?;
            if n == 0 {
                break;
            }
            if n as u64 > self.max_line {
                return Err(Failure::new(
                    Class::TooLarge,
                    format!(
                        "{raw:?} has a line longer than {} bytes; shell::fs::sed edits line by \
                         line and leaves it untouched",
                        self.max_line
                    ),
                ));
            }
            let (body, newline) = match buf.strip_suffix(b"\n") {
                Some(b) => (b, true),
                None => (&buf[..], false),
            };
            out.clear();
            let budget = if self.first_only {
                u64::from(total == 0)
            } else {
                u64::MAX
            };
            let made = if budget > 0 {
                self.line(body, &mut out, budget).ok_or_else(|| {
                    Failure::new(
                        Class::TooLarge,
                        format!(
                            "{raw:?}: a rewritten line would exceed {} bytes; nothing was \
                             written — narrow the pattern (does it match the empty string?)",
                            self.max_line
                        ),
                    )
                })?
            } else {
                0
            };
            if made == 0 {
                out.clear();
                out.extend_from_slice(body);
            }
            if newline {
                out.push(b'\n');
            }
            total += made;
            if total > 0 && staged.is_none() {
                // First change: copy what was already read (unchanged) so far.
                // From the same open file: a file replaced under our feet
                // must not lend its prefix to this one's tail.
                let mut s = Staged::new(abs.loc(), &self.scope.recorder()).map_err(io)?;
                copy_prefix(reader.get_ref(), &mut s, written).map_err(io)?;
                staged = Some(s);
            }
            written += out.len() as u64;
            if total > 0 && self.max_out > 0 && written > self.max_out {
                return Err(Failure::new(
                    Class::TooLarge,
                    format!(
                        "the edited {raw:?} would exceed fs.max_write_bytes ({} bytes); left \
                         untouched",
                        self.max_out
                    ),
                ));
            }
            if let Some(s) = staged.as_mut() {
                s.write_all(&out).map_err(io)?;
            }
        }
        if let Some(s) = staged {
            // Refuse to replace a file that changed (or was replaced) while
            // it was being edited: the other writer's update would be lost.
            let now = abs.loc().lstat().map_err(io)?;
            if (
                now.st_dev,
                now.st_ino,
                now.st_size as u64,
                now.st_mtime,
                now.st_mtime_nsec,
            ) != (md.dev(), md.ino(), md.len(), md.mtime(), md.mtime_nsec())
            {
                return Err(Failure::io(format!(
                    "{raw:?} changed while it was being edited; nothing was written — run the \
                     sed again"
                )));
            }
            s.commit(md.mode() & 0o7777, Some((md.uid(), md.gid())))
                .map_err(io)?;
        }
        Ok(total)
    }
}

/// Read one line (with its `\n`) into `buf`, reading at most `max + 1`
/// bytes of it so a huge line cannot exhaust memory. Returns bytes read.
fn read_line(r: &mut impl BufRead, buf: &mut Vec<u8>, max: u64) -> std::io::Result<usize> {
    use std::io::Read;
    let mut limited = r.take(max.saturating_add(1));
    limited.read_until(b'\n', buf)
}

/// Copy the first `n` bytes of the original into the stage.
fn copy_prefix(file: &std::fs::File, s: &mut Staged, n: u64) -> std::io::Result<()> {
    use std::os::unix::fs::FileExt;
    let mut buf = vec![0u8; 64 * 1024];
    let mut at = 0u64;
    while at < n {
        let want = buf.len().min((n - at) as usize);
        let got = file.read_at(&mut buf[..want], at)?;
        if got == 0 {
            break;
        }
        s.write_all(&buf[..got])?;
        at += got as u64;
    }
    Ok(())
}

pub async fn sed(ctx: Ctx, req: SedRequest) -> Result<SedResponse, Failure> {
    let edit = Edit::new(
        &req,
        ctx.runtime.config.fs.max_write_bytes,
        ctx.scope.clone(),
    )?;
    let filter = Filter::new(&req.include_glob, &req.exclude_glob)?;
    match (&req.path, req.files.is_empty()) {
        (Some(_), false) => {
            return Err(Failure::bad_input(
                "both files and path were given; pass either files: [...] or path (+ recursive, \
                 include_glob, exclude_glob), not both",
            ));
        }
        (None, true) => {
            return Err(Failure::bad_input(
                "nothing to edit: pass files: [...] or a path to walk",
            ));
        }
        _ => {}
    }
    if let Some(id) = super::sandbox_of(&ctx, &req.target, &[])? {
        let mut payload = serde_json::json!({
            "sandbox_id": id,
            "pattern": req.pattern,
            "replacement": req.replacement,
            "regex": req.regex,
            "first_only": req.first_only,
            "ignore_case": req.ignore_case,
        });
        match &req.path {
            Some(path) => {
                payload["path"] = path.clone().into();
                payload["recursive"] = req.recursive.into();
                payload["include_glob"] = req.include_glob.clone().into();
                payload["exclude_glob"] = req.exclude_glob.clone().into();
            }
            None => payload["files"] = req.files.clone().into(),
        }
        let mut answer: SedResponse = super::forward(&ctx, "sandbox::fs::sed", payload).await?;
        // the sandbox's entries count and fail the same way as the host's
        answer.failed = crate::batch::settle_texts(
            answer
                .results
                .iter()
                .map(|r| (r.path.as_str(), r.error.as_deref())),
            "was changed",
        )?;
        return Ok(answer);
    }
    // The filter, as the caller spelt `path`, and the walked root: for the
    // note of include globs that matched nothing.
    let mut walked = None;
    let results = match req.path.clone() {
        Some(raw) => {
            let resolved =
                ctx.runtime
                    .policy
                    .resolve_existing(&raw, Surface::Shell, Tail::Follow, None)?;
            let tree = Tree {
                root: resolved,
                recursive: req.recursive,
                filter,
                runtime: ctx.runtime.clone(),
            };
            walked = Some((tree.filter.clone(), raw.clone(), tree.root.path.clone()));
            super::blocking(move || {
                let mut results = Vec::new();
                tree.for_each_sorted(|found| {
                    if super::tree::looks_binary(&found.at).unwrap_or(true) {
                        return true;
                    }
                    let display = super::display_path(&raw, &found.rel);
                    let r = outcome(&edit.scope, display, edit.file(&raw, &found.at));
                    if r.replacements > 0 || !r.success {
                        results.push(r);
                    }
                    true
                });
                Ok(results)
            })
            .await?
        }
        None => {
            let policy = &ctx.runtime.policy;
            let targets: Vec<(String, Result<Resolved, Failure>)> = req
                .files
                .iter()
                .map(|raw| {
                    let r = policy.resolve_existing(raw, Surface::Shell, Tail::Follow, None);
                    (raw.clone(), r)
                })
                .collect();
            super::blocking(move || {
                Ok(targets
                    .into_iter()
                    .map(|(raw, abs)| {
                        let res = abs.and_then(|abs| edit.file(&raw, &abs));
                        outcome(&edit.scope, raw, res)
                    })
                    .collect())
            })
            .await?
        }
    };
    let total_replacements = results.iter().map(|r| r.replacements).sum();
    let note = walked.and_then(
        |(filter, raw, root): (Filter, String, std::path::PathBuf)| {
            filter.include_note(&raw, &root)
        },
    );
    let failed = crate::batch::settle_texts(
        results
            .iter()
            .map(|r| (r.path.as_str(), r.error.as_deref())),
        "was changed",
    )?;
    Ok(SedResponse {
        results,
        total_replacements,
        failed,
        note,
    })
}

fn outcome(scope: &Scope, path: String, r: Result<u64, Failure>) -> FsSedFileResult {
    match r {
        Ok(n) => FsSedFileResult {
            change_id: scope.take_first(),
            path,
            replacements: n,
            success: true,
            error: None,
        },
        Err(f) => {
            let wire = f.to_wire(Surface::Shell);
            FsSedFileResult {
                change_id: scope.take_first(),
                path,
                replacements: 0,
                success: false,
                error: Some(format!("{}: {}", wire.code, wire.message)),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testkit::*;
    use serde_json::json;
    use std::os::unix::fs::PermissionsExt;

    #[tokio::test]
    async fn regex_and_literal_replacements_over_files() {
        let k = Kit::jailed();
        k.file("a.txt", "foo bar foo\nfoo\nend");
        k.file("b.txt", "a.b a.b\n");
        std::fs::set_permissions(k.root.join("a.txt"), std::fs::Permissions::from_mode(0o640))
            .unwrap();
        let r = k
            .ok(
                "shell::fs::sed",
                json!({"files": ["a.txt"], "pattern": "f(o+)", "replacement": "g$1"}),
            )
            .await;
        assert_eq!(
            r,
            json!({"results": [{"path": "a.txt", "replacements": 3, "success": true, "error": null}], "total_replacements": 3, "failed": 0})
        );
        assert_eq!(k.read("a.txt"), "goo bar goo\ngoo\nend");
        let m = std::fs::metadata(k.root.join("a.txt"))
            .unwrap()
            .permissions()
            .mode()
            & 0o7777;
        assert_eq!(m, 0o640);
        let r = k
            .ok("shell::fs::sed", json!({"files": ["b.txt"], "pattern": "a.b", "replacement": "$x", "regex": false, "first_only": true}))
            .await;
        assert_eq!(r["total_replacements"], 1);
        assert_eq!(k.read("b.txt"), "$x a.b\n");
        let r = k
            .ok("shell::fs::sed", json!({"files": ["a.txt"], "pattern": "GOO", "replacement": "x", "ignore_case": true, "first_only": true}))
            .await;
        assert_eq!(r["total_replacements"], 1);
        assert_eq!(k.read("a.txt"), "x bar goo\ngoo\nend");
        // first_only counts per file; a later line keeps its match
        k.file("c.txt", "no\nyes yes\nyes\n");
        k.ok(
            "shell::fs::sed",
            json!({"files": ["c.txt"], "pattern": "yes", "replacement": "Y", "first_only": true}),
        )
        .await;
        assert_eq!(k.read("c.txt"), "no\nY yes\nyes\n");
    }

    #[tokio::test]
    async fn a_failing_file_is_reported_and_the_others_are_done() {
        let k = Kit::jailed();
        k.file("a", "x\n");
        k.file("b", "x\n");
        let r = k
            .ok("shell::fs::sed", json!({"files": ["a", "missing", ".env", "b", "../out"], "pattern": "x", "replacement": "y"}))
            .await;
        let res = r["results"].as_array().unwrap();
        assert_eq!(res.len(), 5);
        assert_eq!(res[0]["success"], true);
        assert_eq!(res[1]["success"], false);
        assert!(res[1]["error"].as_str().unwrap().starts_with("S211"));
        assert!(res[2]["error"].as_str().unwrap().starts_with("S211"));
        assert_eq!(res[3]["replacements"], 1);
        assert!(res[4]["error"].as_str().unwrap().starts_with("S215"));
        assert_eq!(r["total_replacements"], 2);
        assert_eq!(r["failed"], 3, "{r}");
        assert_eq!(k.read("a"), "y\n");
        assert_eq!(k.read("b"), "y\n");
        // a file without matches is not rewritten
        k.file("same", "zzz\n");
        let t = std::fs::metadata(k.root.join("same"))
            .unwrap()
            .modified()
            .unwrap();
        let r = k
            .ok(
                "shell::fs::sed",
                json!({"files": ["same"], "pattern": "x", "replacement": "y"}),
            )
            .await;
        assert_eq!(r["results"][0]["replacements"], 0);
        assert_eq!(r["failed"], 0);
        assert_eq!(
            std::fs::metadata(k.root.join("same"))
                .unwrap()
                .modified()
                .unwrap(),
            t
        );
    }

    #[tokio::test]
    async fn walk_globs_match_relative_to_path_and_say_when_they_match_nothing() {
        let k = Kit::jailed();
        k.file("py/calcpkg/core.py", "old\n");
        k.file("py/setup.py", "old\n");
        let r = k
            .ok("shell::fs::sed", json!({"path": "py", "pattern": "old", "replacement": "new", "include_glob": ["calcpkg/**/*.py"]}))
            .await;
        assert_eq!(r["total_replacements"], 1, "{r}");
        assert_eq!(k.read("py/calcpkg/core.py"), "new\n");
        assert_eq!(k.read("py/setup.py"), "old\n");
        assert!(r.get("note").is_none(), "{r}");
        let r = k
            .ok("shell::fs::sed", json!({"path": "py", "pattern": "old", "replacement": "new", "include_glob": ["py/**"]}))
            .await;
        assert_eq!(r["total_replacements"], 0, "{r}");
        let note = r["note"].as_str().unwrap();
        assert!(note.contains("matched no file"), "{note}");
        assert!(
            note.contains(&k.root.join("py").display().to_string()),
            "{note}"
        );
        assert_eq!(k.read("py/setup.py"), "old\n");
    }

    #[tokio::test]
    async fn path_walks_skip_binary_and_protected_files() {
        let k = Kit::jailed();
        k.file("t/a.rs", "old\n");
        k.file("t/sub/b.rs", "old old\n");
        k.file("t/c.md", "old\n");
        k.file("t/.env", "old\n");
        std::fs::write(k.root.join("t/bin"), b"old\0").unwrap();
        let r = k
            .ok("shell::fs::sed", json!({"path": "t", "pattern": "old", "replacement": "new", "include_glob": ["*.rs"]}))
            .await;
        assert_eq!(
            r,
            json!({"results": [
                {"path": "t/a.rs", "replacements": 1, "success": true, "error": null},
                {"path": "t/sub/b.rs", "replacements": 2, "success": true, "error": null},
            ], "total_replacements": 3, "failed": 0})
        );
        let r = k
            .ok(
                "shell::fs::sed",
                json!({"path": "t", "pattern": "old", "replacement": "new", "recursive": false}),
            )
            .await;
        assert_eq!(r["total_replacements"], 1);
        assert_eq!(k.read("t/c.md"), "new\n");
        assert_eq!(k.read("t/.env"), "old\n");
        assert_eq!(std::fs::read(k.root.join("t/bin")).unwrap(), b"old\0");
    }

    #[tokio::test]
    async fn caps_leave_the_file_untouched() {
        let k = Kit::build(|c, root| {
            c.fs.allow_unjailed = false;
            c.fs.host_roots = vec![root.to_path_buf()];
            c.fs.max_write_bytes = 10;
        });
        k.file("grow", "a\na\n");
        k.file("long", &"a".repeat(20));
        // every file failed: the call fails, each file's error listed
        let e = k
            .err(
                "shell::fs::sed",
                json!({"files": ["grow", "long"], "pattern": "a", "replacement": "aaaaaa"}),
            )
            .await;
        assert_eq!(e.code, "S218", "{e}");
        assert!(
            e.message
                .contains("every entry of the batch failed (2 of 2), nothing was changed"),
            "{e}"
        );
        assert!(e.message.contains("grow: S218 "), "{e}");
        assert!(e.message.contains("long: S218 "), "{e}");
        assert_eq!(k.read("grow"), "a\na\n");
        assert_eq!(std::fs::read_dir(&k.root).unwrap().count(), 2);
        // beside a file that was edited, each refusal is its file's error
        k.file("fits", "a\n");
        let r = k
            .ok(
                "shell::fs::sed",
                json!({"files": ["grow", "long", "fits"], "pattern": "a", "replacement": "aaaaaa"}),
            )
            .await;
        assert_eq!(r["failed"], 2, "{r}");
        for i in 0..2 {
            let error = r["results"][i]["error"].as_str().unwrap();
            assert!(error.starts_with("S218"), "{error}");
        }
        assert_eq!(r["results"][2]["replacements"], 1);
        assert_eq!(k.read("fits"), "aaaaaa\n");
        assert_eq!(k.read("grow"), "a\na\n");
        assert_eq!(k.read("long"), "a".repeat(20));
        assert_eq!(std::fs::read_dir(&k.root).unwrap().count(), 3);
    }

    #[tokio::test]
    async fn sed_errors() {
        let k = Kit::jailed();
        k.file("f", "x");
        for (payload, code) in [
            (
                json!({"files": ["f"], "pattern": "(", "replacement": ""}),
                "S217",
            ),
            (
                json!({"files": ["f"], "pattern": "", "replacement": ""}),
                "S210",
            ),
            (
                json!({"files": ["f"], "path": ".", "pattern": "x", "replacement": ""}),
                "S210",
            ),
            (json!({"pattern": "x", "replacement": ""}), "S210"),
            (
                json!({"path": "nope", "pattern": "x", "replacement": ""}),
                "S211",
            ),
            (
                json!({"path": "..", "pattern": "x", "replacement": ""}),
                "S215",
            ),
            (json!({"files": ["f"], "pattern": "x"}), "S210"),
        ] {
            assert_eq!(
                k.err("shell::fs::sed", payload.clone()).await.code,
                code,
                "{payload}"
            );
        }
        assert_eq!(k.read("f"), "x");
    }

    #[tokio::test]
    async fn denied_path_reads_exactly_like_missing_path() {
        redaction_holds(
            "shell::fs::sed",
            |p| json!({"path": p, "pattern": "x", "replacement": "y"}),
        )
        .await;
        // a files list of one fails the call with the file's error: the
        // same redaction
        redaction_holds(
            "shell::fs::sed",
            |p| json!({"files": [p], "pattern": "x", "replacement": "y"}),
        )
        .await;
        // per-file errors beside a file that was edited are redacted the
        // same way
        for k in [Kit::jailed(), Kit::unjailed()] {
            let denied = denied_fixtures(&k);
            let ok = k.file("ok", "x\n").display().to_string();
            let error_of = |r: &serde_json::Value, path: &str| {
                assert_eq!(r["failed"], 1, "{r}");
                assert_eq!(r["results"][1]["success"], true, "{r}");
                r["results"][0]["error"]
                    .as_str()
                    .unwrap()
                    .replace(&format!("{path:?}"), "P")
            };
            for d in denied {
                let missing = missing_twin(&k, "nope", &d);
                let r = k
                    .ok(
                        "shell::fs::sed",
                        json!({"files": [missing, ok], "pattern": "x", "replacement": "x"}),
                    )
                    .await;
                let want = error_of(&r, &missing);
                assert!(want.starts_with("S211: "), "{want}");
                let r = k
                    .ok(
                        "shell::fs::sed",
                        json!({"files": [d, ok], "pattern": "x", "replacement": "x"}),
                    )
                    .await;
                assert_eq!(error_of(&r, &d), want);
            }
        }
    }

    #[tokio::test]
    async fn a_sandbox_answer_counts_and_fails_like_the_host() {
        let k = Kit::jailed();
        let entry = |path: &str, error: Option<&str>| {
            json!({"path": path, "replacements": if error.is_none() { 1 } else { 0 },
                   "success": error.is_none(), "error": error})
        };
        k.sandbox_answers(
            "sandbox::fs::sed",
            Ok(
                json!({"results": [entry("/a", None), entry("/b", Some("S211: /b: not found"))],
                      "total_replacements": 1}),
            ),
        );
        let r = k
            .ok("shell::fs::sed", json!({"files": ["/a", "/b"], "pattern": "x", "replacement": "y", "target": sandbox_target()}))
            .await;
        assert_eq!(r["failed"], 1, "{r}");
        k.sandbox_answers(
            "sandbox::fs::sed",
            Ok(json!({"results": [entry("/b", Some("S211: /b: not found"))], "total_replacements": 0})),
        );
        let e = k
            .err("shell::fs::sed", json!({"files": ["/b"], "pattern": "x", "replacement": "y", "target": sandbox_target()}))
            .await;
        assert_eq!(e.code, "S211", "{e:?}");
        assert_eq!(e.message, "/b: not found");
    }

    #[tokio::test]
    async fn sandbox_forwards_exactly_one_of_files_or_path() {
        let k = Kit::jailed();
        let answer = json!({"results": [{"path": "/a", "replacements": 2, "success": true, "error": null}], "total_replacements": 2});
        k.sandbox_answers("sandbox::fs::sed", Ok(answer.clone()));
        let r = k
            .ok("shell::fs::sed", json!({"files": ["/a"], "pattern": "x", "replacement": "y", "target": sandbox_target()}))
            .await;
        let mut want = answer;
        want["failed"] = json!(0);
        assert_eq!(r, want);
        assert_eq!(
            k.sandbox_calls()[0].1,
            json!({"sandbox_id": SANDBOX_ID, "pattern": "x", "replacement": "y", "regex": true,
                   "first_only": false, "ignore_case": false, "files": ["/a"]})
        );
    }
}
