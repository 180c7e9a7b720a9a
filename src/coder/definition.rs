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
    /// Why it ranks where it does: `same_file`, `imported` (a file whose path matches an import of this file) or `roots`.
    pub found_in: String,
}

#[derive(Debug, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "DefinitionOutput")]
pub struct DefinitionOutput {
    /// The identifier at the position.
    pub name: String,
    /// Best first (at most 20); empty when no definition of that name is found.
    pub locations: Vec<Location>,
    /// `syntactic`: definitions with that name, ranked by scope and imports (not type-checked).
    pub precision: String,
    /// Why locations were left out: `max_results` (more than 20) or `budget`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
}

pub fn def() -> FunctionDef {
    function(
        "coder::definition",
        "Where the identifier at a position is defined. Send {path, line, column} of an identifier; get {name, \
         locations: [{path, line, column, end_line, kind, name_path, signature, found_in: \
         same_file|imported|roots}], precision: \"syntactic\", stop_reason?} — definitions of that name, the \
         same file's enclosing scopes first, then files matching the file's imports, then \
         the roots. A position on no identifier is C210 naming what is there. Lines are \
         1-based; columns are 1-based byte offsets in the line, as in coder::search.",
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
    let rt = ctx.runtime.clone();
    let services = ctx.services.clone();
    blocking(move || {
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
        let mut used = 200 + name.len();
        let fit = out
            .iter()
            .take_while(|l| {
                used += source::json_len(l) + 1;
                used <= budget
            })
            .count();
        if fit < out.len() {
            out.truncate(fit);
            stop_reason = Some("budget".to_string());
        }
        Ok(DefinitionOutput {
            name,
            locations: out,
            precision: "syntactic".into(),
            stop_reason,
        })
    })
    .await
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
