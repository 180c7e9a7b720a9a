//! `shell::workspace::*`: the console's workspace picker and its chunked
//! byte reads, through the one policy (the original accepted any host
//! directory, even outside the jail; this one refuses what the policy
//! refuses, with the same redaction).

use crate::error::{Class, Failure, Surface, quote};
use crate::function::{Ctx, Flags, FunctionDef, function};
use crate::policy::{Mode, Resolved, Tail};
use base64::Engine;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::os::unix::fs::FileExt;
use std::path::PathBuf;

/// Largest chunk of `read-bytes` (raw bytes).
pub const READ_BYTES_MAX_CHUNK: u64 = 4 << 20;
const LIST_DEFAULT_PAGE: usize = 500;
const LIST_MAX_PAGE: usize = 5000;

pub fn defs() -> Vec<FunctionDef> {
    vec![roots_def(), list_def(), validate_def(), read_bytes_def()]
}

// ───────────────────────────── roots ─────────────────────────────

#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(title = "WorkspaceRootsRequest")]
pub struct WorkspaceRootsRequest {}

#[derive(Debug, Serialize, JsonSchema)]
#[schemars(title = "WorkspaceRootsResponse")]
pub struct WorkspaceRootsResponse {
    pub roots: Vec<String>,
}

fn roots_def() -> FunctionDef {
    function(
        "shell::workspace::roots",
        "Console-only workspace picker control plane: return canonical host directory anchors \
         that an operator can browse before choosing a per-session working directory.",
        Flags::NONE,
        |ctx: Ctx, _req: WorkspaceRootsRequest| async move {
            crate::runtime::blocking(move || Ok(roots(&ctx))).await
        },
    )
}

/// Jailed: the jail roots. Unjailed: the working directory, `$HOME` and
/// `/`. Each only when the policy accepts it as a directory.
fn roots(ctx: &Ctx) -> WorkspaceRootsResponse {
    let policy = &ctx.runtime.policy;
    let candidates: Vec<PathBuf> = match policy.mode() {
        Mode::Jailed => policy.jail_roots().to_vec(),
        Mode::Unjailed => [
            Some(ctx.runtime.working_dir.clone()),
            std::env::var_os("HOME").map(PathBuf::from),
            Some(PathBuf::from("/")),
        ]
        .into_iter()
        .flatten()
        .collect(),
    };
    let mut roots: Vec<String> = Vec::new();
    for c in candidates {
        if let Ok(r) = directory(ctx, &c.display().to_string()) {
            let p = r.path.display().to_string();
            if !roots.contains(&p) {
                roots.push(p);
            }
        }
    }
    WorkspaceRootsResponse { roots }
}

/// An existing directory the policy allows (211 redacted, 212 not a dir).
fn directory(ctx: &Ctx, raw: &str) -> Result<Resolved, Failure> {
    let r = ctx
        .runtime
        .policy
        .resolve_existing(raw, Surface::Shell, Tail::Follow, None)?;
    let st = r.loc().lstat().map_err(|e| Failure::from_io(raw, &e))?;
    if !crate::jail::is_dir_mode(st.st_mode) {
        return Err(Failure::new(
            Class::WrongType,
            format!(
                "{} is not a directory; pick a directory (shell::workspace::list shows them)",
                quote(raw)
            ),
        ));
    }
    Ok(r)
}

// ───────────────────────────── validate ─────────────────────────────

#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(title = "WorkspaceValidateRequest")]
pub struct WorkspaceValidateRequest {
    pub path: String,
}

#[derive(Debug, Serialize, JsonSchema)]
#[schemars(title = "WorkspaceValidateResponse")]
pub struct WorkspaceValidateResponse {
    pub path: String,
}

fn validate_def() -> FunctionDef {
    function(
        "shell::workspace::validate",
        "Console-only workspace picker control plane: validate that `path` is an existing host \
         directory and return its canonical path.",
        Flags::NONE,
        |ctx: Ctx, req: WorkspaceValidateRequest| async move {
            crate::runtime::blocking(move || {
                directory(&ctx, &req.path).map(|r| WorkspaceValidateResponse {
                    path: r.path.display().to_string(),
                })
            })
            .await
        },
    )
}

// ───────────────────────────── list ─────────────────────────────

#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(title = "WorkspaceListRequest")]
pub struct WorkspaceListRequest {
    pub path: String,
    #[serde(default)]
    pub page_size: Option<usize>,
    /// `next_cursor` of the previous page (the last name it listed).
    #[serde(default)]
    pub cursor: Option<String>,
}

#[derive(Debug, Clone, Copy, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum WorkspaceEntryKind {
    Dir,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct WorkspaceEntry {
    pub kind: WorkspaceEntryKind,
    pub name: String,
    pub path: String,
}

#[derive(Debug, Serialize, JsonSchema)]
#[schemars(title = "WorkspaceListResponse")]
pub struct WorkspaceListResponse {
    pub entries: Vec<WorkspaceEntry>,
    pub path: String,
    /// More directories follow: pass `next_cursor` as `cursor`.
    pub truncated: bool,
    pub next_cursor: Option<String>,
}

fn list_def() -> FunctionDef {
    function(
        "shell::workspace::list",
        "Console-only workspace picker control plane: list child directories under an existing \
         host directory. Returns canonical paths and never returns files.",
        Flags::NONE,
        |ctx: Ctx, req: WorkspaceListRequest| async move {
            crate::runtime::blocking(move || list(&ctx, req)).await
        },
    )
}

fn list(ctx: &Ctx, req: WorkspaceListRequest) -> Result<WorkspaceListResponse, Failure> {
    let dir = directory(ctx, &req.path)?;
    let page = req
        .page_size
        .unwrap_or(LIST_DEFAULT_PAGE)
        .clamp(1, LIST_MAX_PAGE);
    let fd = dir
        .loc()
        .open_dir()
        .map_err(|e| Failure::from_io(&req.path, &e))?;
    let policy = &ctx.runtime.policy;
    let mut names: Vec<String> = crate::jail::dir::read_sorted(std::os::fd::AsFd::as_fd(&fd))
        .map_err(|e| Failure::from_io(&req.path, &e))?
        .into_iter()
        .filter(|e| e.kind == crate::jail::dir::Kind::Dir)
        .map(|e| e.name.to_string_lossy().into_owned())
        .filter(|n| !policy.is_denylisted(&dir.path.join(n)))
        .collect();
    if let Some(after) = &req.cursor {
        names.retain(|n| n.as_str() > after.as_str());
    }
    let truncated = names.len() > page;
    names.truncate(page);
    let next_cursor = truncated.then(|| names.last().cloned()).flatten();
    Ok(WorkspaceListResponse {
        entries: names
            .into_iter()
            .map(|name| WorkspaceEntry {
                kind: WorkspaceEntryKind::Dir,
                path: dir.path.join(&name).display().to_string(),
                name,
            })
            .collect(),
        path: dir.path.display().to_string(),
        truncated,
        next_cursor,
    })
}

// ───────────────────────────── read-bytes ─────────────────────────────

#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(title = "WorkspaceReadBytesRequest")]
pub struct WorkspaceReadBytesRequest {
    /// Absolute path, or relative to the primary root (same rules as coder::read-file).
    pub path: String,
    /// First byte of the range (default 0).
    #[serde(default)]
    pub offset: u64,
    /// Bytes to return; omitted or over the cap = `READ_BYTES_MAX_CHUNK`.
    #[serde(default)]
    pub length: Option<u64>,
}

#[derive(Debug, Serialize, JsonSchema)]
#[schemars(title = "WorkspaceReadBytesResponse")]
pub struct WorkspaceReadBytesResponse {
    /// The chunk, base64 (standard alphabet, padded).
    pub content: String,
    /// True when `offset + length` reached the end of the file.
    pub eof: bool,
    /// Raw bytes in this chunk (before base64).
    pub length: u64,
    /// Last-modified time as a Unix epoch in seconds.
    pub mtime: i64,
    /// Offset the returned range starts at.
    pub offset: u64,
    /// Canonical absolute path.
    pub path: String,
    /// Size of the whole file in bytes.
    pub size: u64,
}

fn read_bytes_def() -> FunctionDef {
    function(
        "shell::workspace::read-bytes",
        "Console-only: one bounded byte range of a file, base64 (at most 4 MiB raw per call), so \
         a page can stream a large image without one oversized frame.",
        Flags {
            internal: true,
            ..Flags::NONE
        },
        |ctx: Ctx, req: WorkspaceReadBytesRequest| async move {
            crate::runtime::blocking(move || read_bytes(&ctx, req)).await
        },
    )
}

fn read_bytes(
    ctx: &Ctx,
    req: WorkspaceReadBytesRequest,
) -> Result<WorkspaceReadBytesResponse, Failure> {
    let raw = req.path.as_str();
    // Relative paths anchor like coder::read-file's.
    let r = ctx
        .runtime
        .policy
        .resolve_existing(raw, Surface::Coder, Tail::Follow, None)?;
    let (file, md) = r.loc().open_regular(raw)?;
    // Size and bytes come from the same open file: a file that shrinks or
    // grows between calls answers consistently for this call.
    let size = md.len();
    let want = req
        .length
        .unwrap_or(READ_BYTES_MAX_CHUNK)
        .min(READ_BYTES_MAX_CHUNK);
    let mut buf = vec![0u8; want.min(size.saturating_sub(req.offset)) as usize];
    let mut got = 0;
    while got < buf.len() {
        let n = file
            .read_at(&mut buf[got..], req.offset + got as u64)
            .map_err(|e| Failure::from_io(raw, &e))?;
        if n == 0 {
            break;
        }
        got += n;
    }
    buf.truncate(got);
    let length = got as u64;
    Ok(WorkspaceReadBytesResponse {
        content: base64::engine::general_purpose::STANDARD.encode(&buf),
        eof: req.offset + length >= size,
        length,
        mtime: crate::coder::mtime_secs(&md),
        offset: req.offset,
        path: r.path.display().to_string(),
        size,
    })
}

#[cfg(test)]
mod tests {
    use crate::fs::testkit::{Kit, denied_fixtures};
    use base64::Engine;
    use serde_json::json;

    #[tokio::test]
    async fn roots_validate_and_list_go_through_the_policy() {
        let k = Kit::jailed();
        let root = k.root.display().to_string();
        let r = k.ok("shell::workspace::roots", json!({})).await;
        assert_eq!(r["roots"], json!([root]));
        k.dir("b");
        k.dir("a");
        k.file("file.txt", "x");
        k.dir("blocked"); // denylisted
        let l = k.ok("shell::workspace::list", json!({"path": root})).await;
        let names: Vec<&str> = l["entries"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, vec!["a", "b"]);
        assert_eq!(l["truncated"], false);
        // paging with a cursor
        let p1 = k
            .ok(
                "shell::workspace::list",
                json!({"path": root, "page_size": 1}),
            )
            .await;
        assert_eq!(p1["truncated"], true);
        assert_eq!(p1["entries"][0]["name"], "a");
        let p2 = k
            .ok(
                "shell::workspace::list",
                json!({"path": root, "page_size": 1, "cursor": p1["next_cursor"]}),
            )
            .await;
        assert_eq!(p2["entries"][0]["name"], "b");
        assert_eq!(p2["truncated"], false);
        // validate refuses what the policy refuses
        let outside = k.outside.path().display().to_string();
        assert_eq!(
            k.err("shell::workspace::validate", json!({"path": outside}))
                .await
                .code,
            "S215"
        );
        assert_eq!(
            k.err("shell::workspace::validate", json!({"path": "file.txt"}))
                .await
                .code,
            "S212"
        );
        let v = k
            .ok("shell::workspace::validate", json!({"path": "a"}))
            .await;
        assert_eq!(v["path"], k.root.join("a").display().to_string());
        crate::fs::testkit::redaction_holds("shell::workspace::validate", |p| json!({"path": p}))
            .await;
        crate::fs::testkit::redaction_holds("shell::workspace::list", |p| json!({"path": p})).await;
    }

    #[tokio::test]
    async fn unjailed_roots_are_the_working_dir_home_and_slash_minus_denied() {
        let k = Kit::unjailed();
        let r = k.ok("shell::workspace::roots", json!({})).await;
        let roots: Vec<&str> = r["roots"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        assert!(roots.contains(&"/"), "{roots:?}");
        let wd = k
            .services
            .live
            .snapshot()
            .working_dir
            .canonicalize()
            .unwrap();
        assert_eq!(roots[0], wd.display().to_string());
        // unjailed, validate takes absolute paths outside the denylist
        let v = k
            .ok("shell::workspace::validate", json!({"path": "/"}))
            .await;
        assert_eq!(v["path"], "/");
        let denied = k.root.join("blocked");
        std::fs::create_dir_all(&denied).unwrap();
        assert_eq!(
            k.err(
                "shell::workspace::validate",
                json!({"path": denied.display().to_string()})
            )
            .await
            .code,
            "S211"
        );
        // a listing of the parent leaves the denylisted directory out
        let l = k
            .ok(
                "shell::workspace::list",
                json!({"path": k.root.display().to_string()}),
            )
            .await;
        assert!(!l.to_string().contains("\"blocked\""), "{l}");
    }

    #[tokio::test]
    async fn read_bytes_chunks_a_file_and_redacts_like_missing() {
        let k = Kit::jailed();
        let body: Vec<u8> = (0..10_000u32).map(|i| (i % 251) as u8).collect();
        std::fs::write(k.root.join("img.bin"), &body).unwrap();
        let mut got = Vec::new();
        let mut offset = 0u64;
        loop {
            let r = k
                .ok(
                    "shell::workspace::read-bytes",
                    json!({"path": "img.bin", "offset": offset, "length": 4096}),
                )
                .await;
            assert_eq!(r["size"], 10_000);
            let chunk = base64::engine::general_purpose::STANDARD
                .decode(r["content"].as_str().unwrap())
                .unwrap();
            offset += chunk.len() as u64;
            got.extend(chunk);
            if r["eof"] == true {
                break;
            }
        }
        assert_eq!(got, body);
        // the file shrinks between calls: past the end is an empty eof chunk
        std::fs::write(k.root.join("img.bin"), b"tiny").unwrap();
        let r = k
            .ok(
                "shell::workspace::read-bytes",
                json!({"path": "img.bin", "offset": 8192}),
            )
            .await;
        assert_eq!(
            (r["length"].as_u64(), r["eof"].as_bool()),
            (Some(0), Some(true))
        );
        // a protected file reads exactly like a missing one
        let denied = denied_fixtures(&k);
        let missing = k
            .err("shell::workspace::read-bytes", json!({"path": "nope"}))
            .await;
        for d in denied.iter().filter(|d| !d.ends_with("blocked")) {
            let e = k
                .err("shell::workspace::read-bytes", json!({"path": d}))
                .await;
            assert_eq!(e.code, missing.code);
            assert_eq!(
                e.message.replace(d.as_str(), "<P>"),
                missing.message.replace("nope", "<P>")
            );
        }
    }
}
