//! `coder::definition`: where the identifier at a position is defined —
//! the same file's scopes first (the innermost enclosing definition's
//! children before the file's others), then the files whose path matches
//! what the file imports, then the rest of the roots.

use super::find_symbol;
use super::source;
use super::{blocking, resolve, resolve_scope};
use crate::code::names::Pattern;
use crate::error::Failure;
use crate::function::{Ctx, Flags, FunctionDef, function};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

const MAX_LOCATIONS: usize = 20;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "DefinitionInput")]
pub struct DefinitionInput {
    /// The file of the identifier.
    pub path: String,
    /// 1-based line.
    pub line: u32,
    /// 1-based byte column (any byte of the identifier, or just past it).
    pub column: u32,
    /// Largest answer in bytes (default 32768): locations past it are left out (`stop_reason: "budget"`).
    #[serde(default)]
    pub max_answer_bytes: Option<u32>,
    /// Optional per-call session working directory.
    #[serde(default)]
    pub base_dir: Option<String>,
}

/// One place the name is defined.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Location {
    pub path: String,
    pub line: u32,
    pub column: u32,
    pub end_line: u32,
    pub kind: String,
    pub name_path: String,
    pub signature: String,
    /// Why it ranks where it does: `server` (the language server's answer), `same_file`, `imported` (a file whose path matches an import of this file) or `roots`.
    pub found_in: String,
    /// True for a place outside every root (a library, the standard library): its path and position only, columns as the server counts them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outside_roots: Option<bool>,
}

#[derive(Debug, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "DefinitionOutput")]
pub struct DefinitionOutput {
    /// The identifier at the position.
    pub name: String,
    /// Best first (at most 20); empty when no definition of that name is found.
    pub locations: Vec<Location>,
    /// `semantic`: the language server's answer; `syntactic`: definitions with that name, ranked by scope and imports (not type-checked).
    pub precision: String,
    /// The language server that answered (semantic answers).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub language_server: Option<String>,
    /// Why the answer is syntactic although the file's language has a server (none installed, it crashed, timed out, or found nothing); or, on a semantic answer, how long ide waited for a busy server and for what.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Why locations were left out: `max_results` (more than 20) or `budget`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
}

pub fn def() -> FunctionDef {
    function(
        "coder::definition",
        "Where the identifier at a position is defined. Send {path, line, column} of an identifier; get {name, \
         locations: [{path, line, column, end_line, kind, name_path, signature, found_in, \
         outside_roots?}], precision, language_server?, note?, stop_reason?} — the file's \
         language server's answer (precision \"semantic\") when it has one, else \
         (\"syntactic\", note says why) definitions of that name: the same file's enclosing \
         scopes first, then files matching its imports, then the roots. A position on no \
         identifier is C210 naming what is there. Lines are 1-based; columns are 1-based byte \
         offsets in the line, as in coder::search.",
        Flags::NONE,
        |ctx: Ctx, req: DefinitionInput| async move { definition(&ctx, req).await },
    )
}

async fn definition(ctx: &Ctx, req: DefinitionInput) -> Result<DefinitionOutput, Failure> {
    let scope = resolve_scope(ctx, req.base_dir.as_deref())?;
    let at = resolve(ctx, &req.path, scope.as_ref())?;
    if !at.exists {
        return Err(Failure::not_found(&req.path));
    }
    // the identifier first: a position on none is an error either way
    let (raw, at2) = (req.path.clone(), at.clone());
    let max_read = ctx.runtime.config.fs.max_read_bytes;
    let (line, column) = (req.line, req.column);
    let (name, lang) =
        blocking(move || super::references::name_at(&raw, &at2, line, column, max_read)).await?;
    let note = match semantic(ctx, &req, &at, &name).await? {
        Ok(out) => return Ok(out),
        Err(note) => note,
    };
    if lang.is_none() {
        // no structural answer either: the parser's own error, and why no server answered
        let (raw, at2) = (req.path.clone(), at.clone());
        let e = blocking(move || {
            super::references::identifier_at(&raw, &at2, line, column, max_read).map(|_| ())
        })
        .await
        .err()
        .unwrap_or_else(|| Failure::bad_input("no identifier there"));
        return Err(match note {
            Some(n) => Failure::new(e.class, format!("{}; {n}", e.message)),
            None => e,
        });
    }
    let rt = ctx.runtime.clone();
    let services = ctx.services.clone();
    let mut out = blocking(move || {
        let max_read = rt.config.fs.max_read_bytes;
        let (name, lang, src, _) =
            super::references::identifier_at(&req.path, &at, req.line, req.column, max_read)?;
        let off = source::offset_of(&req.path, &src.bytes, req.line, req.column)?;
        let here = source::shown(&at.path);
        let tree = crate::code::outline::parse(lang, &src.bytes)
            .map_err(|e| Failure::bad_input(e.note()))?;
        let o = crate::code::outline::of_tree(lang, &tree, &src.bytes);
        let mut out: Vec<Location> = Vec::new();
        // same file: definitions whose scope holds the position, innermost first
        // visible from the position (its parent's range holds it) first,
        // the innermost scope first, then the file's others in order
        let in_scope = |i: usize| {
            o.syms[i].parent.is_none_or(|p| {
                let ps = &o.syms[p as usize];
                ps.start <= off && off < ps.end
            })
        };
        let mut local: Vec<((bool, std::cmp::Reverse<usize>), usize)> = (0..o.syms.len())
            .filter(|i| o.syms[*i].name == name)
            .map(|i| ((!in_scope(i), std::cmp::Reverse(o.depth(i))), i))
            .collect();
        local.sort();
        for (_, i) in local {
            let s = &o.syms[i];
            out.push(Location {
                path: here.clone(),
                line: s.line,
                column: s.column,
                end_line: s.end_line,
                kind: s.kind.to_string(),
                name_path: o.name_path(i),
                signature: s.signature.clone(),
                found_in: "same_file".into(),
                outside_roots: None,
            });
        }
        // the roots, files matching an import first
        let imports = import_words(lang, &tree, &src.bytes);
        let pattern = Pattern::parse(&name).map_err(Failure::bad_input)?;
        let (found, ..) = find_symbol::matches(
            &rt,
            &services,
            &find_symbol::Query {
                path: None,
                base_dir: req.base_dir.as_deref(),
                pattern: &pattern,
                substring: false,
                kinds: &[],
                keep: 8 * MAX_LOCATIONS,
            },
        )?;
        let mut elsewhere: Vec<(u8, Location)> = found
            .into_iter()
            .filter(|f| f.path != here && f.language == lang.lang.name)
            .take(4 * MAX_LOCATIONS)
            .map(|f| {
                let imported = imports.iter().any(|w| path_mentions(&f.path, w));
                (
                    u8::from(!imported),
                    Location {
                        signature: f.signature(),
                        path: f.path,
                        line: f.line,
                        column: f.column,
                        end_line: f.end_line,
                        kind: f.kind.to_string(),
                        name_path: f.name_path,
                        found_in: if imported { "imported" } else { "roots" }.into(),
                        outside_roots: None,
                    },
                )
            })
            .collect();
        elsewhere.sort_by_key(|(r, _)| *r);
        out.extend(elsewhere.into_iter().map(|(_, l)| l));
        let mut stop_reason = None;
        if out.len() > MAX_LOCATIONS {
            out.truncate(MAX_LOCATIONS);
            stop_reason = Some("max_results".to_string());
        }
        let budget = req
            .max_answer_bytes
            .unwrap_or(super::symbols::DEFAULT_ANSWER_BYTES) as usize;
        fit_budget(&mut out, budget, 200 + name.len(), &mut stop_reason);
        Ok(DefinitionOutput {
            name,
            locations: out,
            precision: "syntactic".into(),
            language_server: None,
            note: None,
            stop_reason,
        })
    })
    .await?;
    out.note = note;
    Ok(out)
}

/// Keep the locations that fit `budget` bytes of answer.
fn fit_budget(out: &mut Vec<Location>, budget: usize, base: usize, stop: &mut Option<String>) {
    let mut used = base;
    let fit = out
        .iter()
        .take_while(|l| {
            used += source::json_len(l) + 1;
            used <= budget
        })
        .count();
    if fit < out.len() {
        out.truncate(fit);
        *stop = Some("budget".to_string());
    }
}

/// The language server's answer, or the note saying why there is none
/// (the file's own errors are errors).
async fn semantic(
    ctx: &Ctx,
    req: &DefinitionInput,
    at: &crate::policy::Resolved,
    name: &str,
) -> Result<Result<DefinitionOutput, Option<String>>, Failure> {
    let o = match super::semantic::open(ctx, &req.path, at).await? {
        Ok(o) => o,
        Err(u) if u.reason == "no_server" => return Ok(Err(None)),
        Err(u) => return Ok(Err(Some(super::semantic::fallback_note(&u.message)))),
    };
    let (v, waited) = match ctx
        .services
        .servers
        .request_settled(
            &o.conn,
            "textDocument/definition",
            o.position(req.line, req.column),
            o.timeout(&ctx.runtime),
            |v| v.is_null() || v.as_array().is_some_and(|a| a.is_empty()),
        )
        .await
    {
        Ok(v) => v,
        Err(f) => return Ok(Err(Some(super::semantic::fallback_note(&f.message)))),
    };
    let rt = ctx.runtime.clone();
    let enc = o.encoding();
    let (path, text) = (o.path.clone(), o.text.clone());
    let server = o.conn.name.clone();
    let name = name.to_string();
    let budget = req
        .max_answer_bytes
        .unwrap_or(super::symbols::DEFAULT_ANSWER_BYTES) as usize;
    blocking(move || {
        let mut placer = super::semantic::Placer::new(&rt, enc);
        placer.know(&path, text);
        let mut out: Vec<Location> = super::semantic::locations(&v)
            .iter()
            .filter_map(|(uri, range)| placer.place(uri, range))
            .map(|p| {
                let sym = p
                    .text
                    .as_ref()
                    .and_then(|t| symbol_at(&p.abs, t, p.line, p.column));
                let (kind, name_path, signature, end_line) = match sym {
                    Some(s) => s,
                    None => (String::new(), String::new(), String::new(), p.end_line),
                };
                Location {
                    path: p.path,
                    line: p.line,
                    column: p.column,
                    end_line,
                    kind,
                    name_path,
                    signature,
                    found_in: "server".into(),
                    outside_roots: p.outside_roots.then_some(true),
                }
            })
            .collect();
        if out.is_empty() {
            let why = if placer.dropped > 0 {
                "the server's answer pointed only at files the policy does not show"
            } else {
                "the server found no definition there"
            };
            return Ok(Err(Some(format!("structural answer ({server}: {why})"))));
        }
        let mut stop_reason = None;
        if out.len() > MAX_LOCATIONS {
            out.truncate(MAX_LOCATIONS);
            stop_reason = Some("max_results".to_string());
        }
        fit_budget(&mut out, budget, 200 + name.len(), &mut stop_reason);
        Ok(Ok(DefinitionOutput {
            name,
            locations: out,
            precision: "semantic".into(),
            language_server: Some(server),
            note: waited,
            stop_reason,
        }))
    })
    .await
}

/// The definition whose name is at (line, column) of a file, else the
/// innermost one holding that line: (kind, name_path, signature, end_line).
pub(crate) fn symbol_at(
    path: &std::path::Path,
    text: &[u8],
    line: u32,
    column: u32,
) -> Option<(String, String, String, u32)> {
    let lang = crate::code::lang::detect(path, Some(text))?;
    let tree = crate::code::outline::parse(lang, text).ok()?;
    let o = crate::code::outline::of_tree(lang, &tree, text);
    let exact = (0..o.syms.len()).find(|&i| o.syms[i].line == line && o.syms[i].column == column);
    let i = exact.or_else(|| {
        (0..o.syms.len())
            .filter(|&i| o.syms[i].line <= line && line <= o.syms[i].end_line)
            .max_by_key(|&i| o.depth(i))
    })?;
    let s = &o.syms[i];
    Some((
        s.kind.to_string(),
        o.name_path(i),
        s.signature.clone(),
        s.end_line,
    ))
}

/// The words of the file's import statements (module and path parts).
fn import_words(
    lang: &crate::code::lang::Compiled,
    tree: &tree_sitter::Tree,
    text: &[u8],
) -> Vec<String> {
    let mut out = Vec::new();
    crate::code::occurrences::preorder(tree, |n| {
        if !lang.import.contains(&n.kind_id()) {
            return true;
        }
        let t = String::from_utf8_lossy(&text[n.byte_range()]);
        out.extend(
            t.split(|ch: char| !(ch.is_alphanumeric() || ch == '_'))
                .filter(|w| w.len() > 1)
                .map(str::to_string),
        );
        false
    });
    out.sort();
    out.dedup();
    out
}

/// Whether a file's path has `word` as a whole component or file stem.
fn path_mentions(path: &str, word: &str) -> bool {
    std::path::Path::new(path).iter().any(|c| {
        let c = c.to_string_lossy();
        c == word || c.split('.').next() == Some(word)
    })
}
