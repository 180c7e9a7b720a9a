//! The one failure enum of the worker.
//!
//! Every failure a function can report is a [`Failure`]: a failure class
//! ([`Class`]) plus a message. The class has a number that means the same
//! thing on both surfaces and renders as `C2xx` on `coder::*` and `S2xx` on
//! `shell::*` ([`Surface`]); the wire envelope is `{code, message}`.
//!
//! Messages name the problem, the actual values, and the next call that will
//! work. Existence redaction lives here too: [`Failure::not_found`] is the only
//! way to build a 211, so "missing", "permission denied", "protected glob" and
//! "operator denylist" cannot drift apart in wording.

use serde::{Deserialize, Serialize};
use std::fmt;

/// Which function family a call belongs to; decides the code prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Surface {
    /// `coder::*`: agent-ergonomic code surface, codes `C2xx`.
    Coder,
    /// `shell::*`: byte-level surface and control plane, codes `S2xx`.
    Shell,
}

impl Surface {
    /// The surface a function id belongs to.
    pub fn of(function_id: &str) -> Surface {
        if function_id.starts_with("coder::") {
            Surface::Coder
        } else {
            Surface::Shell
        }
    }

    fn prefix(self) -> char {
        match self {
            Surface::Coder => 'C',
            Surface::Shell => 'S',
        }
    }
}

/// A failure class. Equal numbers mean the same class on both surfaces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Class {
    /// 200: the command failed inside a sandbox VM.
    SandboxExec,
    /// 210: malformed or invalid request.
    BadInput,
    /// 211: not found, or not accessible (redacted: one wording for all).
    NotFound,
    /// 212: wrong file type for the operation.
    WrongType,
    /// 213: target already exists.
    Exists,
    /// 214: directory not empty.
    NotEmpty,
    /// 215: path escapes the jail roots.
    JailEscape,
    /// 216: I/O or internal failure.
    Io,
    /// 217: invalid regular expression.
    BadRegex,
    /// 218: a size cap was exceeded.
    TooLarge,
    /// 220: inside an allowed root but outside the per-call scope.
    OutsideScope,
    /// 221: optimistic-concurrency conflict (`expected_revision` is stale).
    RevisionConflict,
    /// An engine / sandbox code passed through verbatim (`S001`..`S004`,
    /// `S100`..`S102`, `S300`, `S400`).
    Engine(String),
}

impl Class {
    /// The numeric class, when it has one.
    pub fn number(&self) -> Option<u16> {
        Some(match self {
            Class::SandboxExec => 200,
            Class::BadInput => 210,
            Class::NotFound => 211,
            Class::WrongType => 212,
            Class::Exists => 213,
            Class::NotEmpty => 214,
            Class::JailEscape => 215,
            Class::Io => 216,
            Class::BadRegex => 217,
            Class::TooLarge => 218,
            Class::OutsideScope => 220,
            Class::RevisionConflict => 221,
            Class::Engine(_) => return None,
        })
    }
}

/// A failure of one call (or of one entry of a batched call).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    pub class: Class,
    pub message: String,
}

/// The wire error envelope: `{code, message}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct WireError {
    /// Stable error code, e.g. `C211` or `S210`.
    pub code: String,
    /// What went wrong, the actual values, and the corrective next call.
    pub message: String,
}

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

/// How much of any caller input a message quotes.
pub const QUOTE_CHARS: usize = 200;
/// Longest message a failure carries (a safety net behind [`quote`]).
const MAX_MESSAGE_BYTES: usize = 4096;

/// Quote caller input for a message (Rust string syntax), cut to
/// [`QUOTE_CHARS`] characters with the full length said: a 10 MB path must
/// not become a 10 MB message.
pub fn quote(s: &str) -> String {
    if s.chars().count() <= QUOTE_CHARS {
        return format!("{s:?}");
    }
    let head: String = s.chars().take(QUOTE_CHARS).collect();
    format!("{head:?}… ({} bytes in all)", s.len())
}

/// Shorten every double-quoted run (a `{:?}`-quoted input) longer than
/// [`QUOTE_CHARS`] characters, so no message repeats a huge input whatever
/// call site built it.
fn shorten_quotes(message: String) -> String {
    if message.len() <= QUOTE_CHARS {
        return message;
    }
    let mut out = String::with_capacity(message.len().min(MAX_MESSAGE_BYTES));
    let mut chars = message.chars().peekable();
    while let Some(c) = chars.next() {
        out.push(c);
        if c != '"' {
            continue;
        }
        // Inside a quoted run: copy up to QUOTE_CHARS, skip the rest.
        let (mut kept, mut dropped) = (0usize, 0usize);
        let mut escaped = false;
        for c in chars.by_ref() {
            let closes = c == '"' && !escaped;
            escaped = c == '\\' && !escaped;
            if closes {
                if dropped > 0 {
                    out.push_str(&format!("…\" ({dropped} more characters)"));
                } else {
                    out.push('"');
                }
                break;
            }
            if kept < QUOTE_CHARS {
                out.push(c);
                kept += 1;
            } else {
                dropped += 1;
            }
        }
    }
    out
}

/// Cut a message to [`MAX_MESSAGE_BYTES`] on a character boundary.
fn bounded(message: String) -> String {
    let mut message = shorten_quotes(message);
    if message.len() > MAX_MESSAGE_BYTES {
        let mut end = MAX_MESSAGE_BYTES;
        while !message.is_char_boundary(end) {
            end -= 1;
        }
        message.truncate(end);
        message.push_str("… (message cut)");
    }
    message
}

impl Failure {
    pub fn new(class: Class, message: impl Into<String>) -> Self {
        Failure {
            class,
            message: bounded(message.into()),
        }
    }

    pub fn bad_input(message: impl Into<String>) -> Self {
        Self::new(Class::BadInput, message)
    }

    pub fn io(message: impl Into<String>) -> Self {
        Self::new(Class::Io, message)
    }

    /// The redacted 211. The wording depends only on the path as the caller
    /// wrote it, never on why it is unreachable.
    pub fn not_found(raw_path: &str) -> Self {
        Self::new(
            Class::NotFound,
            format!(
                "path not found or not accessible: {}. Check the spelling and list the \
                 parent directory to see what exists (coder::list-folder or shell::fs::ls); \
                 coder::info shows the allowed roots and protected globs.",
                quote(raw_path)
            ),
        )
    }

    /// The 211 of a path a protected glob matches as written: the redacted
    /// wording plus the glob (public in `coder::info`). It depends only on
    /// the spelling: an existing and a missing path of it read the same.
    pub fn protected(raw_path: &str, glob: &str) -> Self {
        let mut f = Self::not_found(raw_path);
        f.message.push_str(&format!(
            " It matches the protected glob `{glob}` (code.non_accessible_globs): such paths are \
             listed but never read, written, created or removed through coder::* or shell::fs::*."
        ));
        f
    }

    /// Map an I/O error met while touching `raw_path`. Missing and
    /// permission-denied fold into the redacted 211.
    pub fn from_io(raw_path: &str, err: &std::io::Error) -> Self {
        use std::io::ErrorKind;
        let q = quote(raw_path);
        // ELOOP: the handle layer met a symlink (or a way out of its root)
        // that was not there when the policy decided: redacted.
        if err.raw_os_error() == Some(nix::libc::ELOOP) {
            return Self::not_found(raw_path);
        }
        if err.raw_os_error() == Some(nix::libc::ENAMETOOLONG) {
            return Self::bad_input(format!(
                "path {q} is too long for the filesystem (a name is at most 255 bytes)"
            ));
        }
        match err.kind() {
            ErrorKind::NotFound | ErrorKind::PermissionDenied => Self::not_found(raw_path),
            ErrorKind::AlreadyExists => {
                Self::new(Class::Exists, format!("path already exists: {q}"))
            }
            ErrorKind::DirectoryNotEmpty => Self::new(
                Class::NotEmpty,
                format!(
                    "directory not empty: {q}; pass recursive: true to remove it with its contents"
                ),
            ),
            ErrorKind::NotADirectory => Self::new(
                Class::WrongType,
                format!("a component of {q} is not a directory"),
            ),
            ErrorKind::IsADirectory => Self::new(
                Class::WrongType,
                format!("{q} is a directory, expected a file"),
            ),
            _ => Self::io(format!("I/O error on {q}: {err}")),
        }
    }

    /// Render for a surface.
    pub fn to_wire(&self, surface: Surface) -> WireError {
        let code = match &self.class {
            Class::Engine(code) => code.clone(),
            class => format!("{}{}", surface.prefix(), class.number().unwrap_or(216)),
        };
        WireError {
            code,
            message: self.message.clone(),
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.class.number() {
            Some(n) => write!(f, "[{n}] {}", self.message),
            None => write!(f, "{}", self.message),
        }
    }
}

impl std::error::Error for Failure {}

/// Short form for handler results.
pub type Result<T> = std::result::Result<T, Failure>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_digits_render_per_surface() {
        let f = Failure::not_found("a/b");
        assert_eq!(f.to_wire(Surface::Coder).code, "C211");
        assert_eq!(f.to_wire(Surface::Shell).code, "S211");
        let r = Failure::new(Class::RevisionConflict, "stale");
        assert_eq!(r.to_wire(Surface::Coder).code, "C221");
        let e = Failure::new(Class::Engine("S300".into()), "vm");
        assert_eq!(e.to_wire(Surface::Shell).code, "S300");
    }

    #[test]
    fn permission_denied_reads_exactly_like_missing() {
        let missing = std::io::Error::from(std::io::ErrorKind::NotFound);
        let denied = std::io::Error::from(std::io::ErrorKind::PermissionDenied);
        assert_eq!(
            Failure::from_io("x", &missing),
            Failure::from_io("x", &denied)
        );
    }

    #[test]
    fn messages_quote_at_most_a_bounded_part_of_any_input() {
        let huge = "a/".repeat(5_000_000);
        let f = Failure::not_found(&huge);
        assert!(f.message.len() < 1000, "{}", f.message.len());
        assert!(f.message.contains("bytes in all"));
        let g = Failure::bad_input(format!("x {:?} y", "b".repeat(10_000)));
        assert!(g.message.len() < 400, "{}", g.message);
        assert!(g.message.ends_with(" more characters) y"), "{}", g.message);
        // short quotes are kept verbatim, escapes included
        let h = Failure::bad_input(format!("{:?} {}", "q\"x", "z".repeat(300)));
        assert!(h.message.starts_with("\"q\\\"x\" "), "{}", h.message);
    }

    #[test]
    fn surface_follows_function_id() {
        assert_eq!(Surface::of("coder::info"), Surface::Coder);
        assert_eq!(Surface::of("shell::fs::ls"), Surface::Shell);
    }
}
