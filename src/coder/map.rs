//! `coder::map`: the repository at a glance — the definitions that matter
//! most, ranked by how the code uses them, as a compact outline within a
//! byte budget.
//!
//! The ranking is a personalised PageRank over files: a file that uses an
//! identifier another file defines links to it (weighted by how specific
//! the name is: a name defined in many files says little; one the caller
//! focuses on says more). A file's rank flows to the definitions its users
//! name. Served by the symbol index, which holds every file's definitions
//! and the identifiers it uses; before it is ready the files are parsed
//! for this answer (up to [`SCAN_FILES`]).

use super::source;
use super::{blocking, resolve_scope};
use crate::error::Failure;
use crate::function::{Ctx, Flags, FunctionDef, function};
use crate::index::symbols::{FileSyms, Table};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};
use std::path::Path;

const DEFAULT_BUDGET: u32 = 4096;
/// A name defined in more files than this links nothing (`new`, `get`).
const MAX_DEFINERS: usize = 32;
/// A name with more definitions than this anywhere is not followed.
const COMMON_NAME: usize = 4 * MAX_DEFINERS;
/// Definitions looked at, best first, to fill the budget (at least; one
/// per 8 bytes of budget past it).
const MIN_CONSIDERED: usize = 1_000;
const ITERATIONS: usize = 30;
const DAMPING: f64 = 0.85;

/// What to focus on.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Focus {
    /// Files (or folders) the agent is working on: the ranking starts from them, so what they use ranks first; they are listed first too.
    #[serde(default)]
    pub paths: Vec<String>,
    /// Identifiers the agent cares about: links through them weigh ten times more.
    #[serde(default)]
    pub symbols: Vec<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "MapInput")]
pub struct MapInput {
    /// Bytes of `map` at most (default 4096).
    #[serde(default)]
    pub budget_bytes: Option<u32>,
    #[serde(default)]
    pub focus: Option<Focus>,
    /// Folder to map (default: the primary root).
    #[serde(default)]
    pub path: Option<String>,
    /// Optional per-call session working directory.
    #[serde(default)]
    pub base_dir: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "MapOutput")]
pub struct MapOutput {
    /// The outline: each file (path relative to the mapped folder, then `:`), then its ranked definitions as `  <line>: <signature>`, most important files first.
    pub map: String,
    /// Source files ranked.
    pub files: u32,
    /// Definitions listed in `map`.
    pub listed: u32,
    /// Definitions ranked (listed or not).
    pub ranked: u32,
    /// `symbol_index`, or `scan` (the files were parsed for this answer; `note` says why).
    pub served_by: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

pub fn def() -> FunctionDef {
    function(
        "coder::map",
        "The repository at a glance. Send {} (or budget_bytes, default 4096; focus: {paths, \
         symbols}; path: a folder); get {map, files, listed, ranked, served_by, note?}: \
         `map` is a compact outline — file, then its most used definitions' signatures with \
         their line — ranked by a PageRank over which files use which definitions, \
         personalised to the focus, cut to fit the budget. Lines are 1-based.",
        Flags::NONE,
        |ctx: Ctx, req: MapInput| async move { map(&ctx, req).await },
    )
}

async fn map(ctx: &Ctx, req: MapInput) -> Result<MapOutput, Failure> {
    let scope = resolve_scope(ctx, req.base_dir.as_deref())?;
    let raw = req.path.clone().unwrap_or_else(|| ".".into());
    let at = super::resolve(ctx, &raw, scope.as_ref())?;
    if !at.exists {
        return Err(Failure::not_found(&raw));
    }
    let rt = ctx.runtime.clone();
    let services = ctx.services.clone();
    blocking(move || {
        if !at.loc().metadata().is_ok_and(|m| m.is_dir()) {
            return Err(Failure::new(
                crate::error::Class::WrongType,
                format!("{raw:?} is not a folder; coder::map maps a folder (coder::symbols outlines a file)"),
            ));
        }
        let focus = req.focus.unwrap_or_default();
        let budget = req.budget_bytes.unwrap_or(DEFAULT_BUDGET) as usize;
        let served = services.symbols.with(&services.index, &rt, &at, |t, lease, round| {
            let base = &at.path;
            let files: Vec<(u32, &FileSyms)> = t.files_met(round).collect();
            let root = &lease.root_at().path;
            render(t, &files, root, base, &focus, budget, |f, start| {
                signature_at(&lease.root_at().below(&f.rel), start)
            })
        });
        match served {
            Ok(mut out) => {
                out.served_by = "symbol_index".into();
                Ok(out)
            }
            Err(crate::index::symbols::NotReady(why)) => {
                let (table, root, note) = scan_table(&rt, &services, &raw, req.base_dir.as_deref())?;
                let files: Vec<(u32, &FileSyms)> = table.files_met(table.round()).collect();
                let root_at = rt.policy.resolve_existing(
                    &root.display().to_string(),
                    crate::error::Surface::Coder,
                    crate::policy::Tail::Follow,
                    None,
                )?;
                let mut out = render(&table, &files, &root, &at.path, &focus, budget, |f, start| {
                    signature_at(&root_at.below(&f.rel), start)
                });
                out.served_by = "scan".into();
                out.note = Some(match note {
                    Some(n) => format!("{why}. {n}"),
                    None => why,
                });
                Ok(out)
            }
        }
    })
    .await
}

/// At most this many files are parsed for one answer when no symbol index
/// is ready.
pub const SCAN_FILES: usize = 5_000;

/// A table of the source files under `raw`, parsed now (no index ready).
fn scan_table(
    rt: &std::sync::Arc<crate::runtime::Runtime>,
    services: &crate::services::Services,
    raw: &str,
    base_dir: Option<&str>,
) -> Result<(Table, std::path::PathBuf, Option<String>), Failure> {
    let search = super::search::SearchInput {
        path: raw.to_string(),
        base_dir: base_dir.map(str::to_string),
        ..super::search::SearchInput::files_only()
    };
    let (files, _) = super::search::candidate_files(
        rt,
        Some(&services.index),
        &search,
        "",
        std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false)),
    )?;
    let mut files: Vec<_> = files
        .into_iter()
        .filter(|(p, _)| crate::code::lang::detect(p, None).is_some())
        .collect();
    let note = (files.len() > SCAN_FILES).then(|| {
        format!(
            "only the first {SCAN_FILES} of {} source files were ranked; ask again when the \
             symbol index is ready (coder::info)",
            files.len()
        )
    });
    files.truncate(SCAN_FILES);
    let root = rt
        .policy
        .resolve_existing(
            raw,
            crate::error::Surface::Coder,
            crate::policy::Tail::Follow,
            None,
        )
        .map(|r| r.path)
        .unwrap_or_default();
    let max_read = rt.config.fs.max_read_bytes;
    let parsed = crate::code::parallel(&files, |(p, at)| {
        let rel = p.strip_prefix(&root).ok()?.to_path_buf();
        Some((rel, crate::index::symbols::parse_at(at, max_read)?))
    });
    let mut table = Table::default();
    for (rel, p) in parsed.into_iter().flatten() {
        table.add(rel, p);
    }
    Ok((table, root, note))
}

/// The signature line at byte `start` of a file.
fn signature_at(at: &crate::policy::Resolved, start: u32) -> String {
    use std::os::unix::fs::FileExt;
    let mut buf = vec![0u8; 512];
    let n = at
        .loc()
        .open_read()
        .and_then(|f| f.read_at(&mut buf, u64::from(start)))
        .unwrap_or(0);
    crate::code::outline::signature(&buf[..n], 0)
}

/// How much a link through the name `name` (defined in `definers` files)
/// says: a long, structured name (`parse_expr`, `ParserState`) names one
/// thing, a short or common one (`path`, `get`) many; a private one
/// (`_x`) is an implementation detail; a focused one matters most.
fn weight(name: &str, definers: usize, focused: bool) -> f64 {
    let structured = name.contains('_') || name.chars().skip(1).any(|c| c.is_ascii_uppercase());
    let mut w = 1.0 / (definers as f64).sqrt();
    if structured && name.len() >= 8 {
        w *= 10.0;
    }
    if name.starts_with('_') || name.len() < 3 {
        w *= 0.1;
    }
    if definers > 5 {
        w *= 0.1;
    }
    if focused {
        w *= 10.0;
    }
    w
}

/// Languages whose files use each other's names (TypeScript, TSX and
/// JavaScript; C and C++).
fn family(lang: u8) -> &'static str {
    match crate::code::lang::LANGS[lang as usize].name {
        "typescript" | "tsx" | "javascript" => "ecma",
        "c" | "cpp" => "c",
        other => other,
    }
}

/// Kinds worth a line of the map.
fn mapped(kind: &str) -> bool {
    !matches!(kind, "field" | "enum_member" | "variable" | "prototype")
}

/// Rank and render.
fn render(
    t: &Table,
    files: &[(u32, &FileSyms)],
    root: &Path,
    base: &Path,
    focus: &Focus,
    budget: usize,
    signature: impl Fn(&FileSyms, u32) -> String,
) -> MapOutput {
    let n = files.len();
    let pos: HashMap<u32, usize> = files
        .iter()
        .enumerate()
        .map(|(i, (id, _))| (*id, i))
        .collect();
    let focus_ids: HashSet<u32> = focus.symbols.iter().filter_map(|s| t.id_of(s)).collect();
    let focused_file = |f: &FileSyms| {
        let abs = root.join(&f.rel);
        focus.paths.iter().any(|p| {
            let p = Path::new(p);
            let p = if p.is_absolute() {
                p.to_path_buf()
            } else {
                base.join(p)
            };
            abs.starts_with(&p)
        })
    };
    // edges: user file -> (defining file, name, weight)
    let mut out_edges: Vec<Vec<(usize, u32, f64)>> = vec![Vec::new(); n];
    for (i, (_, f)) in files.iter().enumerate() {
        for r in f.refs.iter() {
            let defs = t.defining(*r);
            // a name defined in that many places links nothing in
            // particular (and following it would cost the most)
            if defs.len() > COMMON_NAME {
                continue;
            }
            let mut definers: Vec<usize> = defs
                .iter()
                .filter(|(fid, s)| {
                    t.file(*fid).is_some_and(|d| {
                        mapped(crate::code::lang::KINDS[d.syms[*s as usize].kind as usize])
                    })
                })
                .filter_map(|(fid, _)| pos.get(fid).copied())
                .filter(|d| *d != i)
                .collect();
            definers.retain(|d| family(files[*d].1.lang) == family(f.lang));
            definers.sort_unstable();
            definers.dedup();
            if definers.is_empty() || definers.len() > MAX_DEFINERS {
                continue;
            }
            let w = weight(t.name(*r), definers.len(), focus_ids.contains(r));
            for d in definers {
                out_edges[i].push((d, *r, w));
            }
        }
    }
    // the personalisation: the focused files, or every file alike
    let mut start: Vec<f64> = files
        .iter()
        .map(|(_, f)| f64::from(u8::from(focused_file(f))))
        .collect();
    if start.iter().all(|v| *v == 0.0) {
        start.fill(1.0);
    }
    let total: f64 = start.iter().sum();
    start
        .iter_mut()
        .for_each(|v| *v /= total.max(f64::MIN_POSITIVE));
    let out_weight: Vec<f64> = out_edges
        .iter()
        .map(|e| e.iter().map(|(_, _, w)| w).sum())
        .collect();
    let mut rank = start.clone();
    for _ in 0..ITERATIONS {
        let mut next: Vec<f64> = start.iter().map(|s| (1.0 - DAMPING) * s).collect();
        let mut dangling = 0.0;
        for i in 0..n {
            if out_weight[i] == 0.0 {
                dangling += rank[i];
                continue;
            }
            for (d, _, w) in &out_edges[i] {
                next[*d] += DAMPING * rank[i] * w / out_weight[i];
            }
        }
        for (v, s) in next.iter_mut().zip(&start) {
            *v += DAMPING * dangling * s;
        }
        rank = next;
    }
    // a file's rank flows to the definitions its users name
    let mut def_rank: HashMap<(usize, u32), f64> = HashMap::new();
    for i in 0..n {
        if out_weight[i] == 0.0 {
            continue;
        }
        for (d, name, w) in &out_edges[i] {
            *def_rank.entry((*d, *name)).or_default() += rank[i] * w / out_weight[i];
        }
    }
    // every definition with its rank (an unused one ranks by its file)
    let mut defs: Vec<(f64, usize, u32)> = Vec::new();
    for (i, (_, f)) in files.iter().enumerate() {
        for (s, sym) in f.syms.iter().enumerate() {
            if !mapped(crate::code::lang::KINDS[sym.kind as usize]) {
                continue;
            }
            let r = def_rank.get(&(i, sym.name)).copied().unwrap_or(0.0) + rank[i] * 1e-3;
            defs.push((r, i, s as u32));
        }
    }
    defs.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
    let ranked = defs.len() as u32;
    // take definitions best first while the rendering fits
    // (a signature is read from the file: only the best few are looked at)
    let mut chosen: HashMap<usize, Vec<(u32, String)>> = HashMap::new();
    let mut file_order: Vec<usize> = Vec::new();
    let mut used = 0usize;
    let mut listed = 0u32;
    let considered = MIN_CONSIDERED.max(budget / 8);
    for (_, i, s) in defs.into_iter().take(considered) {
        let f = files[i].1;
        let sym = &f.syms[s as usize];
        let sig = signature(f, sym.start);
        let line = format!("  {}: {}\n", sym.line, sig);
        let head = if chosen.contains_key(&i) {
            0
        } else {
            shown(root, base, &f.rel).len() + 2
        };
        if used + head + line.len() > budget {
            if used + 40 > budget {
                break;
            }
            continue;
        }
        used += head + line.len();
        if !chosen.contains_key(&i) {
            file_order.push(i);
        }
        chosen.entry(i).or_default().push((s, line));
        listed += 1;
    }
    let mut map = String::with_capacity(used);
    for i in file_order {
        let f = files[i].1;
        map.push_str(&shown(root, base, &f.rel));
        map.push_str(":\n");
        let mut syms = chosen.remove(&i).unwrap_or_default();
        syms.sort_by_key(|(s, _)| f.syms[*s as usize].line);
        for (_, line) in syms {
            map.push_str(&line);
        }
    }
    MapOutput {
        map,
        files: n as u32,
        listed,
        ranked,
        served_by: String::new(),
        note: None,
    }
}

/// A file's path relative to the mapped folder.
fn shown(root: &Path, base: &Path, rel: &Path) -> String {
    let abs = root.join(rel);
    source::shown(abs.strip_prefix(base).unwrap_or(&abs))
}
