//! `shell::fs::read`: stream a file's bytes out through an engine channel.
//!
//! The call answers at once with the reader's [`ContentRef`] and the file's
//! size, mode and mtime; the bytes follow on the channel. The file is opened
//! before answering (so S211/S212/S218 are reported on the call, not on the
//! stream) and exactly `size` bytes — the size at open time — are streamed
//! from that open handle, so a file that grows meanwhile is not followed and
//! one swapped by a rename is not mixed in.
//!
//! Memory is constant for any file size: a blocking thread reads
//! [`CHUNK`]-sized blocks into a queue of [`QUEUE`] blocks, and the channel's
//! own back-pressure paces it. A consumer that stops reading for
//! [`IDLE_TIMEOUT`] aborts the stream; an aborted stream ends short of
//! `size`, which is how a consumer tells it from a complete one (the engine
//! closes a channel the same way in both cases).

use crate::error::{Class, Failure, Surface};
use crate::function::{Ctx, Flags, FunctionDef, function};
use crate::policy::Tail;
use crate::sandbox::Target;
use crate::stream::{ByteSink, ContentRef};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::time::Duration;

/// Bytes read from disk per block.
pub const CHUNK: usize = 256 * 1024;
/// Blocks queued between the disk thread and the channel.
pub const QUEUE: usize = 4;
/// A consumer that accepts nothing for this long aborts the stream.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(300);

#[derive(Debug, Deserialize, JsonSchema)]
pub struct ReadRequest {
    /// Jail-relative when fs.host_roots are set, else absolute.
    pub path: String,
    /// host (default) or { kind: "sandbox", sandbox_id }.
    #[serde(default)]
    pub target: Target,
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct ReadResponseWire {
    /// Channel reference for streaming the file content back to the caller.
    pub content: ContentRef,
    /// File size in bytes at the time of the read.
    pub size: u64,
    /// Octal permission string of the file, e.g. "0644".
    pub mode: String,
    /// Last-modified time as a Unix timestamp (seconds).
    pub mtime: i64,
}

pub fn def() -> FunctionDef {
    function(
        "shell::fs::read",
        "Takes `path` (a file). Stream a file: returns a ContentRef handle (channel_id/access_key) plus size/mode/mtime, \
         NOT the text — for text use coder::read-file, which returns content inline. Errors \
         return { code, message }; common: S211 not found or not accessible, S212 is a \
         directory, S218 over max_read_bytes, S216 channel/IO error.",
        Flags::NONE,
        read,
    )
}

pub async fn read(ctx: Ctx, req: ReadRequest) -> Result<ReadResponseWire, Failure> {
    if let Some(id) = super::sandbox_of(&ctx, &req.target, &[])? {
        let answer: ReadResponseWire = super::forward(
            &ctx,
            "sandbox::fs::read",
            serde_json::json!({"sandbox_id": id, "path": req.path}),
        )
        .await?;
        // The same cap as on the host: the caller is told before it drains.
        let cap = ctx.runtime.config.fs.max_read_bytes;
        if cap > 0 && answer.size > cap {
            return Err(Failure::new(
                Class::TooLarge,
                format!(
                    "{:?} in the sandbox is {} bytes, over fs.max_read_bytes ({cap}); nothing \
                     should be read from the returned channel",
                    req.path, answer.size
                ),
            ));
        }
        return Ok(answer);
    }
    let resolved =
        ctx.runtime
            .policy
            .resolve_existing(&req.path, Surface::Shell, Tail::Follow, None)?;
    let raw = req.path.clone();
    let cap = ctx.runtime.config.fs.max_read_bytes;
    let (file, md) = super::blocking(move || {
        let file = resolved
            .loc()
            .open_read()
            .map_err(|e| Failure::from_io(&raw, &e))?;
        let md = file.metadata().map_err(|e| Failure::from_io(&raw, &e))?;
        if md.is_dir() {
            return Err(super::wrong_type(format!(
                "{raw:?} is a directory; shell::fs::read streams files (use shell::fs::ls to \
                 list a directory)"
            )));
        }
        if !md.is_file() {
            return Err(super::wrong_type(format!(
                "{raw:?} is not a regular file (a FIFO, socket or device); shell::fs::read \
                 streams regular files only"
            )));
        }
        if cap > 0 && md.len() > cap {
            return Err(Failure::new(
                Class::TooLarge,
                format!(
                    "{raw:?} is {} bytes, over fs.max_read_bytes ({cap}); read a part of it with \
                     coder::read-file (line_from/line_to), or ask the operator to raise \
                     fs.max_read_bytes",
                    md.len()
                ),
            ));
        }
        Ok((file, md))
    })
    .await?;
    let Some(out) = &ctx.services.outbound else {
        return Err(Failure::io(
            "shell::fs::read streams through an engine channel and needs the engine: call it \
             over the bus (ide call has no engine)",
        ));
    };
    let (content, sink) = out
        .create_outgoing_stream()
        .await
        .map_err(|e| Failure::io(format!("cannot open a channel for {:?}: {e}", req.path)))?;
    let size = md.len();
    let path = req.path.clone();
    tokio::spawn(async move {
        if let Err(e) = pump(file, size, sink).await {
            tracing::warn!(path = %path, error = %e, "shell::fs::read stream aborted");
        }
    });
    Ok(ReadResponseWire {
        content,
        size,
        mode: super::mode_string(md.mode()),
        mtime: super::mtime_secs(&md),
    })
}

/// Copy `size` bytes of `file` into `sink`, then close it.
async fn pump(file: std::fs::File, size: u64, mut sink: Box<dyn ByteSink>) -> Result<(), String> {
    let (tx, mut rx) = tokio::sync::mpsc::channel::<std::io::Result<Vec<u8>>>(QUEUE);
    let disk = tokio::task::spawn_blocking(move || {
        let mut reader = file.take(size);
        loop {
            let mut buf = vec![0u8; CHUNK];
            let mut filled = 0;
            let res = loop {
                match reader.read(&mut buf[filled..]) {
                    Ok(0) => break Ok(()),
                    Ok(n) => {
                        filled += n;
                        if filled == CHUNK {
                            break Ok(());
                        }
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(e) => break Err(e),
                }
            };
            if let Err(e) = res {
                let _ = tx.blocking_send(Err(e));
                return;
            }
            if filled == 0 {
                return;
            }
            buf.truncate(filled);
            if tx.blocking_send(Ok(buf)).is_err() {
                return;
            }
        }
    });
    while let Some(block) = rx.recv().await {
        let block = block.map_err(|e| format!("read failed: {e}"))?;
        tokio::time::timeout(IDLE_TIMEOUT, sink.write(block))
            .await
            .map_err(|_| format!("the consumer accepted nothing for {IDLE_TIMEOUT:?}"))?
            .map_err(|e| e.to_string())?;
    }
    let _ = disk.await;
    sink.finish().await.map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::super::testkit::*;
    use serde_json::json;

    #[tokio::test]
    async fn streams_the_bytes_and_reports_metadata() {
        let k = Kit::jailed();
        let body: Vec<u8> = (0..(super::CHUNK * 3 + 17))
            .map(|i| (i % 251) as u8)
            .collect();
        std::fs::write(k.root.join("blob.bin"), &body).unwrap();
        let r = k.ok("shell::fs::read", json!({"path": "blob.bin"})).await;
        assert_eq!(r["size"], body.len());
        assert_eq!(r["content"]["direction"], "read");
        assert!(r["mode"].is_string());
        assert!(r["mtime"].as_i64().unwrap() > 0);
        assert_eq!(k.drain(&r["content"]).await, body);
    }

    #[tokio::test]
    async fn empty_file_streams_nothing() {
        let k = Kit::jailed();
        k.file("e", "");
        let r = k.ok("shell::fs::read", json!({"path": "e"})).await;
        assert_eq!(r["size"], 0);
        assert!(k.drain(&r["content"]).await.is_empty());
    }

    #[tokio::test]
    async fn read_errors() {
        let k = Kit::build(|c, root| {
            c.fs.allow_unjailed = false;
            c.fs.host_roots = vec![root.to_path_buf()];
            c.fs.max_read_bytes = 4;
        });
        k.file("big", "12345");
        k.file("ok", "1234");
        k.dir("d");
        assert_eq!(
            k.err("shell::fs::read", json!({"path": "big"})).await.code,
            "S218"
        );
        assert_eq!(
            k.err("shell::fs::read", json!({"path": "d"})).await.code,
            "S212"
        );
        assert_eq!(
            k.err("shell::fs::read", json!({"path": "nope"})).await.code,
            "S211"
        );
        assert_eq!(
            k.err("shell::fs::read", json!({"path": "/etc/hostname"}))
                .await
                .code,
            "S215"
        );
        let r = k.ok("shell::fs::read", json!({"path": "ok"})).await;
        assert_eq!(k.drain(&r["content"]).await, b"1234");
    }

    #[tokio::test]
    async fn without_an_engine_read_says_so() {
        let dir = tempfile::TempDir::new().unwrap();
        std::fs::write(dir.path().join("f"), "x").unwrap();
        let services = crate::services::Services::standalone(
            crate::runtime::Runtime::build(crate::config::Config::zero_config()).unwrap(),
        );
        let e = crate::catalog::Catalog::standard()
            .call(
                &services,
                "shell::fs::read",
                json!({"path": dir.path().join("f")}),
            )
            .await
            .unwrap_err();
        assert_eq!(e.code, "S216");
        assert!(e.message.contains("engine"));
    }

    #[tokio::test]
    async fn denied_path_reads_exactly_like_missing_path() {
        redaction_holds("shell::fs::read", |p| json!({"path": p})).await;
    }

    #[tokio::test]
    async fn sandbox_read_is_forwarded_and_body_dropped() {
        let k = Kit::jailed();
        let content = json!({"channel_id": "c1", "access_key": "k1", "direction": "read"});
        k.sandbox_answers(
            "sandbox::fs::read",
            Ok(json!({"content": content, "body": "hi", "size": 2, "mode": "0644", "mtime": 5})),
        );
        let r = k
            .ok(
                "shell::fs::read",
                json!({"path": "/x", "target": sandbox_target()}),
            )
            .await;
        assert_eq!(
            r,
            json!({"content": content, "size": 2, "mode": "0644", "mtime": 5})
        );
    }

    #[tokio::test]
    async fn sandbox_reads_over_the_cap_are_refused() {
        let k = Kit::build(|cfg, root| {
            cfg.fs.allow_unjailed = false;
            cfg.fs.host_roots = vec![root.to_path_buf()];
            cfg.fs.max_read_bytes = 10;
        });
        let content = json!({"channel_id": "c1", "access_key": "k1", "direction": "read"});
        k.sandbox_answers(
            "sandbox::fs::read",
            Ok(json!({"content": content, "size": 11, "mode": "0644", "mtime": 5})),
        );
        let e = k
            .err(
                "shell::fs::read",
                json!({"path": "/x", "target": sandbox_target()}),
            )
            .await;
        assert_eq!(e.code, "S218");
    }
}
