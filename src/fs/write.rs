//! `shell::fs::write`: write whole files, atomically.
//!
//! Single form `{path, content, mode?, parents?}` or batch form
//! `{files: [{path, content, mode?, parents?}]}` — never both (S210).
//! `content` is an inline string (host only; S210 on a sandbox target) or
//! a [`ContentRef`] naming a channel the caller writes into; the bytes are
//! streamed into a temp file beside the target in bounded memory and
//! counted against `fs.max_write_bytes` (S218 as soon as they pass it).
//!
//! Every file is replaced atomically ([`crate::jail::atomic`]): temp file, exact
//! mode, fsync, rename, directory fsync. A failed or interrupted write leaves
//! the previous file intact. A batch stages every file before swapping any
//! in, so a failure while receiving or writing any of them changes nothing;
//! the swaps themselves are renames, one per file, so a failure of a later
//! rename (rare: the staged files are already on disk) leaves the earlier
//! files replaced and is reported. `parents: true` creates missing
//! directories before the content arrives.
//!
//! Mode: an explicit `mode` wins (special bits only with
//! `fs.allow_special_bits`); without one an existing file keeps its
//! permission bits (minus setuid/setgid/sticky unless allowed) and its owner
//! where the worker may restore it, and a new file gets `0644`.
//!
//! A channel closed by its writer ends the file: the engine closes a reader
//! the same way whether the writer finished or vanished, so a caller that
//! may die mid-upload should check `bytes_written`.

use crate::error::{Class, Failure, Surface};
use crate::function::{Ctx, Flags, FunctionDef, function};
use crate::jail::atomic::{Sealed, Staged};
use crate::jail::record::Recorder;
use crate::policy::Resolved;
use crate::policy::Tail;
use crate::sandbox::Target;
use crate::stream::{ByteSource, ContentRef};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::path::Path;

/// Write content: a plain string is written inline (host target only); an object is a streaming ContentRef { channel_id, access_key, direction }.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum WriteContentWire {
    /// Inline UTF-8 text, written verbatim. HOST target only.
    Inline(String),
    /// Open write-stream channel ref. Required for sandbox targets and large or streamed payloads.
    Stream(ContentRef),
}

/// One file in a batch `shell::fs::write` (`files: [...]`).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct WriteFileSpec {
    /// Jail-relative when fs.host_roots are set, else absolute.
    pub path: String,
    /// Inline string (recommended) or a streaming ContentRef.
    pub content: WriteContentWire,
    /// Octal permission string, e.g. "0644".
    #[serde(default)]
    #[schemars(with = "String", default = "default_file_mode")]
    pub mode: Option<String>,
    /// Create missing parent directories.
    #[serde(default)]
    pub parents: bool,
}

fn default_file_mode() -> String {
    "0644".to_string()
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct WriteRequest {
    /// Change history: groups this call's changes into one turn (`shell::turns::list` / `revert`); without it each change is its own turn.
    #[serde(default)]
    pub turn_id: Option<String>,
    /// Change history: the session the changes belong to (a filter of `shell::turns::list`).
    #[serde(default)]
    pub session_id: Option<String>,
    /// Single-file form: the path to write. Jail-relative when fs.host_roots are set, else absolute. Omit when using `files`.
    #[serde(default)]
    pub path: Option<String>,
    /// Single-file content: an inline string (host only) or a ContentRef { channel_id, access_key, direction } for an open write stream; omit with `files`.
    pub content: Option<WriteContentWire>,
    /// Octal permission string for the single-file form, e.g. "0644" (the default); omit when using `files`.
    #[serde(default)]
    pub mode: Option<String>,
    /// Create missing parent directories (single-file form, default false); omit when using `files`.
    #[serde(default)]
    pub parents: Option<bool>,
    /// Batch form: write several files in one call. When present, the single-file fields (`path`/`content`/`mode`/`parents`) must be omitted.
    pub files: Option<Vec<WriteFileSpec>>,
    /// host (default) or { kind: "sandbox", sandbox_id }.
    #[serde(default)]
    pub target: Target,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct WriteFileResult {
    /// Path of the written file.
    pub path: String,
    /// Bytes written to this file.
    pub bytes_written: u64,
    /// Change-history id of this file's write (`coder::change-diff`).
    #[serde(default)]
    pub change_id: Option<String>,
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct WriteResponse {
    /// Bytes written: this file for a single write; the sum across `files` for a batch write.
    pub bytes_written: u64,
    /// Path written for a single write; empty for a batch (see `files`).
    pub path: String,
    /// Per-file results for a batch (`files: [...]`) write; empty for a single-file write.
    #[serde(default)]
    pub files: Vec<WriteFileResult>,
    /// Change-history id of a single write (per file in `files` for a batch).
    #[serde(default)]
    pub change_id: Option<String>,
}

pub fn def() -> FunctionDef {
    function(
        "shell::fs::write",
        "Write a file. A string `content` is written inline (host only); large payloads or a \
         sandbox target need a ContentRef { channel_id, access_key, direction } from a write \
         stream channel. `files: [...]` writes several files (host, inline). Errors return { \
         code, message }; common: S210 bad mode or inline-on-sandbox, S218 over \
         max_write_bytes.",
        Flags::NONE,
        |ctx: Ctx, req: WriteRequest| async move { write(ctx, req).await },
    )
}

/// The request as a list of files, after the form checks.
fn specs(req: &mut WriteRequest) -> Result<(Vec<WriteFileSpec>, bool), Failure> {
    if let Some(files) = req.files.take() {
        let mut single = Vec::new();
        for (name, present) in [
            ("path", req.path.is_some()),
            ("content", req.content.is_some()),
            ("mode", req.mode.is_some()),
            ("parents", req.parents.is_some()),
        ] {
            if present {
                single.push(name);
            }
        }
        if !single.is_empty() {
            return Err(Failure::bad_input(format!(
                "both the batch form (files) and single-file fields ({}) were given; send either \
                 files: [{{path, content, mode?, parents?}}, ...] or path + content, not both",
                single.join(", ")
            )));
        }
        if files.is_empty() {
            return Err(Failure::bad_input(
                "files is empty; list at least one {path, content} or use the single-file form",
            ));
        }
        return Ok((files, true));
    }
    match (req.path.take(), req.content.take()) {
        (Some(path), Some(content)) => Ok((
            vec![WriteFileSpec {
                path,
                content,
                mode: req.mode.take(),
                parents: req.parents.unwrap_or(false),
            }],
            false,
        )),
        (None, _) => Err(Failure::bad_input(
            "path is required: send {path, content} (or files: [...] for several files)",
        )),
        (Some(_), None) => Err(Failure::bad_input(
            "content is required: an inline string, or a ContentRef {channel_id, access_key, \
             direction} of a channel you write the bytes into",
        )),
    }
}

pub async fn write(ctx: Ctx, mut req: WriteRequest) -> Result<WriteResponse, Failure> {
    let (files, batch) = specs(&mut req)?;
    let inline = files
        .iter()
        .any(|f| matches!(f.content, WriteContentWire::Inline(_)));
    let modes = files
        .iter()
        .map(|f| {
            f.mode
                .as_deref()
                .map(|m| super::checked_mode(&ctx, m))
                .transpose()
        })
        .collect::<Result<Vec<Option<u32>>, Failure>>()?;
    if let Some(id) = super::sandbox_of(&ctx, &req.target, &[("content", inline)])? {
        return write_sandbox(&ctx, id, files, batch).await;
    }
    let cap = ctx.runtime.config.fs.max_write_bytes;
    let mut staged: Vec<(Sealed, String)> = Vec::with_capacity(files.len());
    for (i, (spec, mode)) in files.into_iter().zip(modes).enumerate() {
        let at = |f: Failure| {
            if batch {
                Failure::new(f.class, format!("files[{i}]: {}", f.message))
            } else {
                f
            }
        };
        let sealed = stage_one(&ctx, &spec, mode, cap).await.map_err(at)?;
        staged.push((sealed, spec.path));
    }
    // Every file is complete and durable: swap them in.
    let scope = ctx.scope.clone();
    let results = super::blocking(move || {
        let mut out = Vec::with_capacity(staged.len());
        for (sealed, path) in staged {
            let n = sealed
                .commit()
                .map_err(|e| Failure::io(format!("cannot replace {path:?}: {e}")))?;
            out.push(WriteFileResult {
                path,
                bytes_written: n,
                change_id: scope.take_first(),
            });
        }
        Ok(out)
    })
    .await?;
    Ok(WriteResponse::from_results(results, batch))
}

/// Where and how one file will be written.
struct Plan {
    target: Resolved,
    mode: u32,
    owner: Option<(u32, u32)>,
}

fn plan(
    raw: &str,
    target: Resolved,
    mode: Option<u32>,
    parents: bool,
    special_ok: bool,
) -> Result<Plan, Failure> {
    let q = crate::error::quote(raw);
    match target.loc().lstat() {
        Ok(st) => {
            if crate::jail::is_dir_mode(st.st_mode) {
                return Err(super::wrong_type(format!(
                    "{q} is a directory; shell::fs::write writes files"
                )));
            }
            if !crate::jail::is_file_mode(st.st_mode) {
                return Err(super::wrong_type(format!(
                    "{q} is not a regular file (a FIFO, socket or device); shell::fs::write \
                     replaces regular files only"
                )));
            }
            let kept = st.st_mode & if special_ok { 0o7777 } else { 0o777 };
            Ok(Plan {
                target,
                mode: mode.unwrap_or(kept),
                owner: Some((st.st_uid, st.st_gid)),
            })
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            match target.parent() {
                Ok(_) => {}
                Err(e) if e.raw_os_error() == Some(nix::libc::ENOTDIR) => {
                    return Err(super::wrong_type(format!(
                        "the parent of {q} is not a directory"
                    )));
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound && parents => {
                    target
                        .loc()
                        .make_parents(0o755)
                        .map_err(|e| Failure::from_io(raw, &e))?;
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    return Err(parents_hint(Failure::from_io(raw, &e)));
                }
                Err(e) => return Err(Failure::from_io(raw, &e)),
            }
            Ok(Plan {
                target,
                mode: mode.unwrap_or(0o644),
                owner: None,
            })
        }
        Err(e) => Err(Failure::from_io(raw, &e)),
    }
}

/// A missing parent directory: say how to have it created.
fn parents_hint(mut f: Failure) -> Failure {
    f.message
        .push_str(" To create missing parent directories, pass parents: true.");
    f
}

/// A path the policy refused, which reads as missing: it carries the
/// parents hint exactly when a missing path spelt the same way would, i.e.
/// unless its parent is an allowed, existing directory (a denied parent
/// reads as a missing one, and a denied leaf as a leaf that cannot be
/// created, whether or not it exists).
fn refused(runtime: &crate::runtime::Runtime, raw: &str, f: Failure) -> Failure {
    if f.class != Class::NotFound {
        return f;
    }
    let parent = match Path::new(raw).parent() {
        Some(p) if p.as_os_str().is_empty() => Path::new("."),
        Some(p) => p,
        None => return f,
    };
    let parent_is_dir = runtime
        .policy
        .resolve(
            &parent.to_string_lossy(),
            Surface::Shell,
            Tail::Follow,
            None,
        )
        .is_ok_and(|p| {
            p.loc()
                .lstat()
                .is_ok_and(|st| crate::jail::is_dir_mode(st.st_mode))
        });
    if parent_is_dir { f } else { parents_hint(f) }
}

fn too_large(raw: &str, cap: u64, what: &str) -> Failure {
    Failure::new(
        Class::TooLarge,
        format!(
            "{what} for {raw:?} is over fs.max_write_bytes ({cap} bytes); nothing was written. \
             Split the content, or ask the operator to raise fs.max_write_bytes"
        ),
    )
}

/// Receive one file into a sealed temp file beside its target.
async fn stage_one(
    ctx: &Ctx,
    spec: &WriteFileSpec,
    mode: Option<u32>,
    cap: u64,
) -> Result<Sealed, Failure> {
    let raw = spec.path.clone();
    let resolved = match ctx
        .runtime
        .policy
        .resolve(&raw, Surface::Shell, Tail::Follow, None)
    {
        Ok(r) => r,
        Err(f) => {
            let (runtime, raw) = (ctx.runtime.clone(), raw.clone());
            return Err(super::blocking(move || Ok(refused(&runtime, &raw, f))).await?);
        }
    };
    let special_ok = ctx.runtime.config.fs.allow_special_bits;
    let parents = spec.parents;
    match &spec.content {
        WriteContentWire::Inline(text) => {
            if cap > 0 && text.len() as u64 > cap {
                return Err(too_large(
                    &raw,
                    cap,
                    &format!("content of {} bytes", text.len()),
                ));
            }
            let text = text.clone();
            let rec = ctx.scope.recorder();
            super::blocking(move || {
                let plan = plan(&raw, resolved, mode, parents, special_ok)?;
                let io = |e: std::io::Error| Failure::from_io(&raw, &e);
                let mut staged = Staged::new(plan.target.loc(), &rec).map_err(io)?;
                staged.write_all(text.as_bytes()).map_err(io)?;
                staged.seal(plan.mode, plan.owner).map_err(io)
            })
            .await
        }
        WriteContentWire::Stream(channel) => {
            let plan = {
                let raw = raw.clone();
                super::blocking(move || plan(&raw, resolved, mode, parents, special_ok)).await?
            };
            let Some(out) = &ctx.services.outbound else {
                return Err(Failure::io(
                    "a ContentRef content streams through an engine channel and needs the \
                     engine; pass inline content, or call over the bus",
                ));
            };
            let source = out
                .open_incoming_stream(channel)
                .await
                .map_err(|e| Failure::io(format!("cannot open the channel for {raw:?}: {e}")))?;
            receive(raw, plan, source, cap, ctx.scope.recorder()).await
        }
    }
}

/// Drain a channel into a staged file: the async side reads chunks, a
/// blocking thread writes them, a queue of a few chunks between them.
async fn receive(
    raw: String,
    plan: Plan,
    mut source: Box<dyn ByteSource>,
    cap: u64,
    rec: Recorder,
) -> Result<Sealed, Failure> {
    let (tx, mut rx) = tokio::sync::mpsc::channel::<Vec<u8>>(super::read::QUEUE);
    let disk_raw = raw.clone();
    let disk = tokio::task::spawn_blocking(move || -> Result<Staged, Failure> {
        let io = |e: std::io::Error| Failure::from_io(&disk_raw, &e);
        let mut staged = Staged::new(plan.target.loc(), &rec).map_err(io)?;
        while let Some(chunk) = rx.blocking_recv() {
            staged.write_all(&chunk).map_err(io)?;
        }
        Ok(staged)
    });
    let mut received: u64 = 0;
    let outcome: Result<(), Failure> = async {
        loop {
            let next = tokio::time::timeout(super::read::IDLE_TIMEOUT, source.next_chunk())
                .await
                .map_err(|_| {
                    Failure::io(format!(
                        "the channel for {raw:?} sent nothing for {:?}; nothing was written",
                        super::read::IDLE_TIMEOUT
                    ))
                })?
                .map_err(|e| {
                    Failure::io(format!(
                        "the channel for {raw:?} failed ({e}); nothing was written"
                    ))
                })?;
            let Some(chunk) = next else { return Ok(()) };
            received += chunk.len() as u64;
            if cap > 0 && received > cap {
                return Err(too_large(
                    &raw,
                    cap,
                    &format!("more than {cap} bytes of streamed content"),
                ));
            }
            if tx.send(chunk).await.is_err() {
                // The disk side stopped: its error is reported below.
                return Ok(());
            }
        }
    }
    .await;
    drop(tx);
    let staged = disk
        .await
        .map_err(|e| Failure::io(format!("filesystem task failed: {e}")))?;
    outcome?;
    let staged = staged?;
    let io_raw = raw.clone();
    super::blocking(move || {
        staged
            .seal(plan.mode, plan.owner)
            .map_err(|e| Failure::from_io(&io_raw, &e))
    })
    .await
}

async fn write_sandbox(
    ctx: &Ctx,
    id: &str,
    files: Vec<WriteFileSpec>,
    batch: bool,
) -> Result<WriteResponse, Failure> {
    #[derive(Deserialize)]
    struct Written {
        bytes_written: u64,
    }
    let mut results = Vec::with_capacity(files.len());
    for spec in files {
        let mut payload = json!({
            "sandbox_id": id,
            "path": spec.path,
            "content": spec.content,
            "parents": spec.parents,
        });
        if let Some(mode) = &spec.mode {
            payload["mode"] = Value::String(mode.clone());
        }
        let w: Written = super::forward(ctx, "sandbox::fs::write", payload).await?;
        results.push(WriteFileResult {
            change_id: None,
            path: spec.path,
            bytes_written: w.bytes_written,
        });
    }
    Ok(WriteResponse::from_results(results, batch))
}

impl WriteResponse {
    /// The answer shape: a batch lists its files; a single write names its
    /// path and leaves `files` empty.
    fn from_results(results: Vec<WriteFileResult>, batch: bool) -> WriteResponse {
        let bytes_written = results.iter().map(|r| r.bytes_written).sum();
        if batch {
            WriteResponse {
                bytes_written,
                path: String::new(),
                files: results,
                change_id: None,
            }
        } else {
            WriteResponse {
                bytes_written,
                path: results.first().map(|r| r.path.clone()).unwrap_or_default(),
                change_id: results.first().and_then(|r| r.change_id.clone()),
                files: Vec::new(),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testkit::*;
    use serde_json::json;
    use std::os::unix::fs::PermissionsExt;

    fn mode_of(p: &std::path::Path) -> u32 {
        std::fs::metadata(p).unwrap().permissions().mode() & 0o7777
    }

    #[tokio::test]
    async fn inline_write_creates_with_default_mode_and_replaces_keeping_mode() {
        let k = Kit::jailed();
        let r = k
            .ok(
                "shell::fs::write",
                json!({"path": "a.txt", "content": "hello"}),
            )
            .await;
        assert_eq!(r, json!({"bytes_written": 5, "path": "a.txt", "files": []}));
        assert_eq!(k.read("a.txt"), "hello");
        assert_eq!(mode_of(&k.root.join("a.txt")), 0o644);
        std::fs::set_permissions(k.root.join("a.txt"), std::fs::Permissions::from_mode(0o600))
            .unwrap();
        k.ok(
            "shell::fs::write",
            json!({"path": "a.txt", "content": "bye"}),
        )
        .await;
        assert_eq!(k.read("a.txt"), "bye");
        assert_eq!(mode_of(&k.root.join("a.txt")), 0o600);
        k.ok(
            "shell::fs::write",
            json!({"path": "a.txt", "content": "x", "mode": "0755"}),
        )
        .await;
        assert_eq!(mode_of(&k.root.join("a.txt")), 0o755);
        // no temp files left behind
        assert_eq!(std::fs::read_dir(&k.root).unwrap().count(), 1);
    }

    #[tokio::test]
    async fn parents_and_symlinks() {
        let k = Kit::jailed();
        let e = k
            .err(
                "shell::fs::write",
                json!({"path": "x/y/z.txt", "content": "1"}),
            )
            .await;
        assert_eq!(e.code, "S211");
        assert!(e.message.contains("parents: true"));
        k.ok(
            "shell::fs::write",
            json!({"path": "x/y/z.txt", "content": "1", "parents": true}),
        )
        .await;
        assert_eq!(k.read("x/y/z.txt"), "1");
        // writing through a link replaces the target and keeps the link
        k.file("real.txt", "old");
        std::os::unix::fs::symlink("real.txt", k.root.join("link")).unwrap();
        k.ok(
            "shell::fs::write",
            json!({"path": "link", "content": "new"}),
        )
        .await;
        assert_eq!(k.read("real.txt"), "new");
        assert!(
            std::fs::symlink_metadata(k.root.join("link"))
                .unwrap()
                .file_type()
                .is_symlink()
        );
        // a link leading out of the jail is an escape
        std::os::unix::fs::symlink(k.outside.path(), k.root.join("out")).unwrap();
        let e = k
            .err("shell::fs::write", json!({"path": "out/f", "content": "1"}))
            .await;
        assert_eq!(e.code, "S215");
        assert_eq!(std::fs::read_dir(k.outside.path()).unwrap().count(), 0);
    }

    #[tokio::test]
    async fn form_and_policy_errors() {
        let k = Kit::jailed();
        k.dir("d");
        let cases = [
            (
                json!({"path": "a", "content": "1", "files": [{"path": "b", "content": "2"}]}),
                "S210",
            ),
            (
                json!({"mode": "0644", "files": [{"path": "b", "content": "2"}]}),
                "S210",
            ),
            (json!({"files": []}), "S210"),
            (json!({"path": "a"}), "S210"),
            (json!({"content": "x"}), "S210"),
            (json!({"path": "a", "content": "1", "mode": "9z"}), "S210"),
            (json!({"path": "a", "content": "1", "mode": "4755"}), "S210"),
            (json!({"path": "d", "content": "1"}), "S212"),
            (json!({"path": "/etc/x", "content": "1"}), "S215"),
            (json!({"path": "a", "content": 5}), "S210"),
        ];
        for (payload, code) in cases {
            assert_eq!(
                k.err("shell::fs::write", payload.clone()).await.code,
                code,
                "{payload}"
            );
        }
        assert!(!k.root.join("a").exists());
    }

    #[tokio::test]
    async fn special_bits_when_allowed() {
        let k = Kit::build(|c, root| {
            c.fs.allow_unjailed = false;
            c.fs.host_roots = vec![root.to_path_buf()];
            c.fs.allow_special_bits = true;
        });
        k.ok(
            "shell::fs::write",
            json!({"path": "s", "content": "1", "mode": "2755"}),
        )
        .await;
        assert_eq!(mode_of(&k.root.join("s")), 0o2755);
    }

    #[tokio::test]
    async fn over_the_cap_is_218_and_leaves_the_old_file() {
        let k = Kit::build(|c, root| {
            c.fs.allow_unjailed = false;
            c.fs.host_roots = vec![root.to_path_buf()];
            c.fs.max_write_bytes = 4;
        });
        k.file("f", "old");
        let e = k
            .err("shell::fs::write", json!({"path": "f", "content": "12345"}))
            .await;
        assert_eq!(e.code, "S218");
        let up = k.upload(vec![b"12".to_vec(), b"345".to_vec()]);
        let e = k
            .err("shell::fs::write", json!({"path": "f", "content": up}))
            .await;
        assert_eq!(e.code, "S218");
        assert_eq!(k.read("f"), "old");
        assert_eq!(std::fs::read_dir(&k.root).unwrap().count(), 1);
    }

    #[tokio::test]
    async fn streamed_write_through_a_channel() {
        let k = Kit::jailed();
        let chunks: Vec<Vec<u8>> = (0..40u8).map(|i| vec![i; 100_000]).collect();
        let want: Vec<u8> = chunks.concat();
        let up = k.upload(chunks);
        let r = k
            .ok(
                "shell::fs::write",
                json!({"path": "big.bin", "content": up, "mode": "0600"}),
            )
            .await;
        assert_eq!(r["bytes_written"], want.len());
        assert_eq!(std::fs::read(k.root.join("big.bin")).unwrap(), want);
        assert_eq!(mode_of(&k.root.join("big.bin")), 0o600);
        // an unknown channel is an I/O failure, and nothing is written
        let bogus = json!({"channel_id": "nope", "access_key": "k", "direction": "read"});
        let e = k
            .err(
                "shell::fs::write",
                json!({"path": "n.bin", "content": bogus}),
            )
            .await;
        assert_eq!(e.code, "S216");
        assert!(!k.root.join("n.bin").exists());
    }

    #[tokio::test]
    async fn batch_writes_every_file_or_none() {
        let k = Kit::jailed();
        let r = k
            .ok(
                "shell::fs::write",
                json!({"files": [
                    {"path": "a", "content": "1"},
                    {"path": "n/b", "content": "22", "parents": true, "mode": "0600"},
                ]}),
            )
            .await;
        assert_eq!(
            r,
            json!({"bytes_written": 3, "path": "", "files": [
                {"path": "a", "bytes_written": 1}, {"path": "n/b", "bytes_written": 2}]})
        );
        assert_eq!(mode_of(&k.root.join("n/b")), 0o600);
        // the second file fails: the first is not touched
        let e = k
            .err(
                "shell::fs::write",
                json!({"files": [
                    {"path": "a", "content": "changed"},
                    {"path": "missing/b", "content": "x"},
                ]}),
            )
            .await;
        assert_eq!(e.code, "S211");
        assert!(e.message.starts_with("files[1]"), "{}", e.message);
        assert_eq!(k.read("a"), "1");
    }

    /// The redaction contract for a function that creates what is missing:
    /// a denied path fails alike whether it exists or not (a missing path
    /// would be created, so "like a missing one" means like the same denied
    /// path before it exists), single and batch form, and the parents hint
    /// appears exactly when a parent is missing or denied, as for a plainly
    /// missing path.
    #[tokio::test]
    async fn a_denied_path_reads_the_same_existing_or_not_and_hints_parents_only_when_one_is_missing()
     {
        type Make = fn(&str) -> serde_json::Value;
        let single: Make = |p| json!({"path": p, "content": "x"});
        let batch: Make = |p| json!({"files": [{"path": p, "content": "x"}]});
        for (k, write) in [
            (Kit::jailed(), single),
            (Kit::unjailed(), single),
            (Kit::jailed(), batch),
        ] {
            let denied = denied_fixtures(&k);
            let before: Vec<_> = {
                let mut v = Vec::new();
                for d in &denied {
                    v.push(k.err("shell::fs::write", write(d)).await);
                }
                v
            };
            for (d, e) in denied.iter().zip(&before) {
                assert_eq!(e.code, "S211", "{d}: {e}");
                // its parent is an allowed directory: nothing to create
                let parent_exists = !d.ends_with("blocked/f.txt");
                assert_eq!(
                    e.message.contains("parents: true"),
                    !parent_exists,
                    "{d}: {}",
                    e.message
                );
            }
            // The same paths once they do not exist: the same answers.
            for d in &denied {
                let _ = std::fs::remove_dir_all(d).or_else(|_| std::fs::remove_file(d));
            }
            for (d, e) in denied.iter().zip(&before) {
                let again = k.err("shell::fs::write", write(d)).await;
                assert_eq!((&again.code, &again.message), (&e.code, &e.message), "{d}");
            }
            // a plainly missing parent hints; an existing one needs no hint
            let m = k
                .err("shell::fs::write", write(&k.p("no/such/x.txt")))
                .await;
            assert!(m.message.contains("parents: true"), "{}", m.message);
            // a denied directory's new child reads as a missing parent's
            let under = k
                .err("shell::fs::write", write(&k.p("blocked/new/x.txt")))
                .await;
            let twin = k
                .err("shell::fs::write", write(&k.p("nope/new/x.txt")))
                .await;
            assert_eq!(
                under.message.replace("blocked/", "nope/"),
                twin.message,
                "denied parent vs missing parent"
            );
        }
    }

    #[tokio::test]
    async fn sandbox_write_needs_a_channel_and_forwards_it() {
        let k = Kit::jailed();
        let e = k
            .err(
                "shell::fs::write",
                json!({"path": "/a", "content": "x", "target": sandbox_target()}),
            )
            .await;
        assert_eq!(e.code, "S210");
        k.sandbox_answers(
            "sandbox::fs::write",
            Ok(json!({"bytes_written": 7, "path": "/a"})),
        );
        let chan = json!({"channel_id": "c", "access_key": "k", "direction": "read"});
        let r = k
            .ok(
                "shell::fs::write",
                json!({"path": "/a", "content": chan, "target": sandbox_target()}),
            )
            .await;
        assert_eq!(r, json!({"bytes_written": 7, "path": "/a", "files": []}));
        assert_eq!(
            k.sandbox_calls()[0].1,
            json!({"sandbox_id": SANDBOX_ID, "path": "/a", "content": chan, "parents": false})
        );
    }
}
