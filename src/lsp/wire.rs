//! The base protocol of LSP: each message is `Content-Length: N` (other
//! headers allowed and ignored), an empty line, and N bytes of JSON.
//!
//! A peer that breaks it — a header line without a colon, no length, a
//! length over [`MAX_MESSAGE_BYTES`], a body that is not JSON — gets
//! [`WireError::Garbage`]: the connection cannot be resynchronised, so the
//! server is killed (it writes something else than LSP on its stdout).

use serde_json::Value;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncReadExt};

/// The largest message read (a workspace symbol dump of a huge project
/// fits; a runaway server does not take the worker's memory).
pub const MAX_MESSAGE_BYTES: usize = 64 << 20;
/// The longest header line accepted.
const MAX_HEADER_LINE: usize = 1024;

#[derive(Debug)]
pub enum WireError {
    /// Reading failed (the pipe broke).
    Io(std::io::Error),
    /// What was read is not the protocol; says what it was.
    Garbage(String),
}

impl std::fmt::Display for WireError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WireError::Io(e) => write!(f, "reading its output failed: {e}"),
            WireError::Garbage(what) => write!(f, "it wrote something that is not LSP: {what}"),
        }
    }
}

/// The next message, or `None` at end of file between messages.
pub async fn read<R: AsyncBufRead + Unpin>(r: &mut R) -> Result<Option<Value>, WireError> {
    let mut length: Option<usize> = None;
    let mut line = Vec::new();
    let mut first = true;
    loop {
        line.clear();
        let n = (&mut *r)
            .take(MAX_HEADER_LINE as u64 + 1)
            .read_until(b'\n', &mut line)
            .await
            .map_err(WireError::Io)?;
        if n == 0 {
            return if first {
                Ok(None)
            } else {
                Err(WireError::Garbage("end of output inside a header".into()))
            };
        }
        first = false;
        if line.last() != Some(&b'\n') {
            return Err(WireError::Garbage(format!(
                "a header line longer than {MAX_HEADER_LINE} bytes: {}",
                preview(&line)
            )));
        }
        let text = String::from_utf8_lossy(&line);
        let text = text.trim_end_matches(['\r', '\n']);
        if text.is_empty() {
            break;
        }
        let Some((key, value)) = text.split_once(':') else {
            return Err(WireError::Garbage(format!(
                "a header line without a colon: {}",
                preview(&line)
            )));
        };
        if key.trim().eq_ignore_ascii_case("content-length") {
            let n: usize = value.trim().parse().map_err(|_| {
                WireError::Garbage(format!("Content-Length {:?} is not a number", value.trim()))
            })?;
            length = Some(n);
        }
    }
    let Some(n) = length else {
        return Err(WireError::Garbage(
            "a message without Content-Length".into(),
        ));
    };
    if n > MAX_MESSAGE_BYTES {
        return Err(WireError::Garbage(format!(
            "a message of {n} bytes (at most {MAX_MESSAGE_BYTES} are read)"
        )));
    }
    let mut body = vec![0u8; n];
    r.read_exact(&mut body).await.map_err(WireError::Io)?;
    serde_json::from_slice(&body).map(Some).map_err(|e| {
        WireError::Garbage(format!("a body that is not JSON ({e}): {}", preview(&body)))
    })
}

/// `message` framed for the wire.
pub fn frame(message: &Value) -> Vec<u8> {
    let body = message.to_string();
    let mut out = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
    out.extend_from_slice(body.as_bytes());
    out
}

fn preview(bytes: &[u8]) -> String {
    let cut = &bytes[..bytes.len().min(80)];
    format!("{:?}", String::from_utf8_lossy(cut))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    async fn read_all(bytes: &[u8]) -> Vec<Result<Option<Value>, String>> {
        let mut r = tokio::io::BufReader::new(bytes);
        let mut out = Vec::new();
        loop {
            let m = read(&mut r).await.map_err(|e| e.to_string());
            let stop = !matches!(m, Ok(Some(_)));
            out.push(m);
            if stop {
                return out;
            }
        }
    }

    #[tokio::test]
    async fn frames_round_trip_with_extra_headers() {
        let a = json!({"jsonrpc": "2.0", "id": 1, "result": "ü"});
        let mut bytes = frame(&a);
        bytes.extend_from_slice(
            b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\ncontent-length: 2\r\n\r\n{}",
        );
        let got = read_all(&bytes).await;
        assert_eq!(got[0].as_ref().unwrap().as_ref().unwrap(), &a);
        assert_eq!(got[1].as_ref().unwrap().as_ref().unwrap(), &json!({}));
        assert!(matches!(got[2], Ok(None)));
    }

    #[tokio::test]
    async fn garbage_is_named() {
        for (bytes, says) in [
            (&b"hello world\n"[..], "without a colon"),
            (b"Content-Length: x\r\n\r\n", "not a number"),
            (b"Foo: 1\r\n\r\n", "without Content-Length"),
            (b"Content-Length: 3\r\n\r\nabc", "not JSON"),
            (b"Content-Length: 999999999999\r\n\r\n", "at most"),
            (b"Content-Length: 3\r\n", "inside a header"),
        ] {
            let got = read_all(bytes).await;
            let last = got.last().unwrap().as_ref().unwrap_err();
            assert!(last.contains(says), "{last}");
        }
        let long = vec![b'a'; 5000];
        let got = read_all(&long).await;
        assert!(got[0].as_ref().unwrap_err().contains("longer than"));
    }
}
