//! What the semantic functions share: a file read through the policy and
//! handed to its language server (synced to those bytes), positions turned
//! both ways, and the server's locations filtered by the policy.
//!
//! A location the server gives is kept only if the policy would let a
//! caller read it: inside a root, it must resolve and not be protected
//! (else it is dropped — a protected file reads like a missing one here
//! too); outside every root it is answered with `outside_roots: true`, its
//! path and position only (no line text, and its column is the server's
//! character + 1, since ide does not read the file).

use super::source;
use crate::error::{Failure, Surface};
use crate::function::Ctx;
use crate::lsp::server::{self, Conn};
use crate::lsp::text::{self, Encoding};
use crate::lsp::{Servers, Unavailable};
use crate::policy::{Resolved, Tail};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// A file open in its server, at the bytes just read.
pub struct Opened {
    pub conn: Arc<Conn>,
    pub path: PathBuf,
    pub text: Arc<Vec<u8>>,
    pub revision: String,
    pub version: i64,
    pub seq: u64,
}

impl Opened {
    pub fn encoding(&self) -> Encoding {
        *self.conn.encoding.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// `{textDocument, position}` for a 1-based line and byte column.
    pub fn position(&self, line: u32, column: u32) -> Value {
        let l = text::line_text(&self.text, line as usize - 1).unwrap_or(b"");
        json!({
            "textDocument": {"uri": text::uri_of(&self.path)},
            "position": {"line": line - 1,
                         "character": text::character_of(l, column as usize - 1, self.encoding())},
        })
    }

    /// The request timeout configured for this server.
    pub fn timeout(&self, rt: &crate::runtime::Runtime) -> Duration {
        let ms = rt
            .config
            .code
            .servers()
            .0
            .get(&self.conn.name)
            .map_or(15_000, |c| c.request_timeout_ms);
        Duration::from_millis(ms.max(1))
    }
}

/// Read `at` (named `raw`) through the policy and sync it to its server.
/// The outer error is the file's (missing, protected, too large); the
/// inner one says why no server answers for it.
pub async fn open(
    ctx: &Ctx,
    raw: &str,
    at: &Resolved,
) -> Result<Result<Opened, Unavailable>, Failure> {
    if !at.exists {
        return Err(Failure::not_found(raw));
    }
    let max_read = ctx.runtime.config.fs.max_read_bytes;
    let (raw2, at2) = (raw.to_string(), at.clone());
    let (src, stamp) = super::blocking(move || {
        let src = source::read(&raw2, &at2, max_read)?;
        let stamp = at2.loc().metadata().ok().map(|m| server::stamp_of(&m));
        Ok((src, stamp))
    })
    .await?;
    let root = at
        .root
        .clone()
        .or_else(|| at.path.parent().map(Path::to_path_buf))
        .unwrap_or_else(|| PathBuf::from("/"));
    let conn = match ctx
        .services
        .servers
        .for_file(&ctx.services.feeds(), &ctx.runtime, &root, &at.path)
        .await
    {
        Ok(c) => c,
        Err(u) => return Ok(Err(u)),
    };
    refresh(&ctx.runtime, &conn).await;
    let text = Arc::new(src.bytes);
    let (version, seq) = conn.sync(&at.path, text.clone(), stamp).await;
    Ok(Ok(Opened {
        conn,
        path: at.path.clone(),
        text,
        revision: src.revision,
        version,
        seq,
    }))
}

/// Bring the server's open documents up to the disk: each one whose file
/// changed since it was read (its stamp differs) is read again through
/// the policy and sent; one that is gone or now protected is closed. The
/// change feed tells the server about files it does not hold open, but a
/// server reads an open document only from what it was sent.
pub async fn refresh(rt: &Arc<crate::runtime::Runtime>, conn: &Arc<Conn>) {
    let docs = conn.open_docs().await;
    let rt2 = rt.clone();
    let Ok(changes) = super::blocking(move || {
        let mut out = Vec::new();
        for (path, stamp) in docs {
            let Some(raw) = path.to_str().map(str::to_string) else {
                continue;
            };
            let at = rt2
                .policy
                .resolve(&raw, Surface::Coder, Tail::Follow, None)
                .ok()
                .filter(|r| r.exists && !rt2.policy.is_protected(&r.path));
            let Some(at) = at else {
                out.push((path, None));
                continue;
            };
            let now = at.loc().metadata().ok().map(|m| server::stamp_of(&m));
            if now.is_some() && now == stamp {
                continue;
            }
            match source::read(&raw, &at, rt2.config.fs.max_read_bytes) {
                Ok(src) => out.push((path, Some((src.bytes, now)))),
                Err(_) => out.push((path, None)),
            }
        }
        Ok(out)
    })
    .await
    else {
        return;
    };
    for (path, got) in changes {
        match got {
            Some((bytes, stamp)) => {
                conn.sync(&path, Arc::new(bytes), stamp).await;
            }
            None => conn.close(&path).await,
        }
    }
}

/// Files opened in a server before a references or rename request.
const RELATED: usize = 48;

/// For a server configured with `open_related`: open in it the files of
/// its extensions under its root that hold `name` (the content index
/// narrows them, as for a search of the word), and wait — within `wait` —
/// until it has published diagnostics for each, i.e. checked it: such a
/// server answers references and renames only from what it has checked.
pub async fn open_related(ctx: &Ctx, o: &Opened, name: &str, wait: Duration) {
    let rt = ctx.runtime.clone();
    let Some(cfg) = rt.config.code.servers().0.get(&o.conn.name).cloned() else {
        return;
    };
    if !cfg.open_related {
        return;
    }
    let index = ctx.services.index.clone();
    let root = o.conn.root.display().to_string();
    let word = name.to_string();
    let asked = o.path.clone();
    let Ok(files) = super::blocking(move || {
        let search = super::search::SearchInput {
            path: root,
            ..super::search::SearchInput::files_only()
        };
        let (files, _) = super::search::candidate_files(
            &rt,
            Some(&index),
            &search,
            &word,
            Arc::new(std::sync::atomic::AtomicBool::new(false)),
        )?;
        let mut out = Vec::new();
        for (path, at) in files {
            if out.len() >= RELATED {
                break;
            }
            let ext = path
                .extension()
                .and_then(|e| e.to_str())
                .unwrap_or("")
                .to_ascii_lowercase();
            if path == asked || !cfg.extensions.contains(&ext) {
                continue;
            }
            let raw = source::shown(&path);
            let Ok(src) = source::read(&raw, &at, rt.config.fs.max_read_bytes) else {
                continue;
            };
            if memchr::memmem::find(&src.bytes, word.as_bytes()).is_none() {
                continue;
            }
            let stamp = at.loc().metadata().ok().map(|m| server::stamp_of(&m));
            out.push((path, src.bytes, stamp));
        }
        Ok(out)
    })
    .await
    else {
        return;
    };
    let mut opened = Vec::new();
    for (path, bytes, stamp) in files {
        let (version, seq) = o.conn.sync(&path, Arc::new(bytes), stamp).await;
        opened.push((path, version, seq));
    }
    let waits = opened
        .iter()
        .map(|(p, v, seq)| o.conn.diagnostics(p, *v, *seq, wait));
    futures_util::future::join_all(waits).await;
}

/// A place a server named, as the policy lets it be shown.
#[derive(Debug, Clone)]
pub struct Place {
    pub path: String,
    pub abs: PathBuf,
    pub line: u32,
    pub column: u32,
    pub end_line: u32,
    pub end_column: u32,
    /// The file's bytes (inside the roots only).
    pub text: Option<Arc<Vec<u8>>>,
    pub outside_roots: bool,
}

/// Turns a server's `{uri, range}`s into [`Place`]s, reading each file
/// once (through the policy) to convert its columns.
pub struct Placer<'a> {
    rt: &'a crate::runtime::Runtime,
    enc: Encoding,
    files: HashMap<PathBuf, Option<Arc<Vec<u8>>>>,
    /// Locations dropped (protected or unreadable).
    pub dropped: usize,
}

impl<'a> Placer<'a> {
    pub fn new(rt: &'a crate::runtime::Runtime, enc: Encoding) -> Placer<'a> {
        Placer {
            rt,
            enc,
            files: HashMap::new(),
            dropped: 0,
        }
    }

    /// Seed the bytes of a file already read (the one asked about).
    pub fn know(&mut self, path: &Path, text: Arc<Vec<u8>>) {
        self.files.insert(path.to_path_buf(), Some(text));
    }

    fn bytes_of(&mut self, abs: &Path) -> Option<Arc<Vec<u8>>> {
        if let Some(b) = self.files.get(abs) {
            return b.clone();
        }
        let got = (|| {
            let raw = abs.to_str()?;
            let r = self
                .rt
                .policy
                .resolve(raw, Surface::Coder, Tail::Follow, None)
                .ok()?;
            if !r.exists || self.rt.policy.is_protected(&r.path) {
                return None;
            }
            let src = source::read(raw, &r, self.rt.config.fs.max_read_bytes).ok()?;
            Some(Arc::new(src.bytes))
        })();
        self.files.insert(abs.to_path_buf(), got.clone());
        got
    }

    fn inside_roots(&self, abs: &Path) -> bool {
        self.rt
            .policy
            .coder_roots()
            .iter()
            .any(|r| abs.starts_with(r))
    }

    /// The place of `uri` + LSP `range` (None: dropped). Blocking.
    pub fn place(&mut self, uri: &str, range: &Value) -> Option<Place> {
        let Some(abs) = text::path_of(uri) else {
            self.dropped += 1;
            return None;
        };
        let pos = |p: &Value| {
            (
                p["line"].as_u64().unwrap_or(0) as usize,
                p["character"].as_u64().unwrap_or(0) as u32,
            )
        };
        let (l0, c0) = pos(&range["start"]);
        let (l1, c1) = pos(&range["end"]);
        if !self.inside_roots(&abs) {
            if self.rt.policy.is_protected(&abs) {
                self.dropped += 1;
                return None;
            }
            return Some(Place {
                path: source::shown(&abs),
                abs,
                line: l0 as u32 + 1,
                column: c0 + 1,
                end_line: l1 as u32 + 1,
                end_column: c1 + 1,
                text: None,
                outside_roots: true,
            });
        }
        let Some(bytes) = self.bytes_of(&abs) else {
            self.dropped += 1;
            return None;
        };
        let col = |line: usize, ch: u32| {
            text::line_text(&bytes, line).map(|l| text::byte_of(l, ch, self.enc) as u32 + 1)
        };
        let column = col(l0, c0)?;
        let end_column = col(l1, c1).unwrap_or(column);
        Some(Place {
            path: source::shown(&abs),
            abs,
            line: l0 as u32 + 1,
            column,
            end_line: l1 as u32 + 1,
            end_column,
            text: Some(bytes.clone()),
            outside_roots: false,
        })
    }
}

/// The `{uri, range}` pairs of a definition/references answer (a
/// Location, a list of them, or LocationLinks).
pub fn locations(v: &Value) -> Vec<(String, Value)> {
    let list = match v {
        Value::Array(a) => a.clone(),
        Value::Null => Vec::new(),
        other => vec![other.clone()],
    };
    list.iter()
        .filter_map(|l| {
            if let Some(uri) = l["targetUri"].as_str() {
                let range = if l["targetSelectionRange"].is_object() {
                    l["targetSelectionRange"].clone()
                } else {
                    l["targetRange"].clone()
                };
                return Some((uri.to_string(), range));
            }
            Some((l["uri"].as_str()?.to_string(), l["range"].clone()))
        })
        .collect()
}

/// Why the answer is structural, for its `note`.
pub fn fallback_note(why: &str) -> String {
    format!("structural answer (no language server answered: {why})")
}

/// The server for a path, for `coder::info`-like messages.
pub fn server_name(rt: &crate::runtime::Runtime, path: &Path) -> Option<String> {
    Servers::server_for(rt, path).ok().map(|(n, _)| n)
}
