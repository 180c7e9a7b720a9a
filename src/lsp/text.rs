//! Where LSP and ide meet: file URIs and positions.
//!
//! ide's positions are 1-based lines and 1-based *byte* columns (as
//! `coder::search` has them); LSP's are 0-based lines and characters
//! counted in the encoding the server chose (UTF-16 code units unless it
//! accepted UTF-8, which ide offers first).

use std::path::{Path, PathBuf};

/// The unit of an LSP `character`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    Utf8,
    Utf16,
}

impl Encoding {
    /// The encoding a server's `capabilities.positionEncoding` names.
    pub fn of(capabilities: &serde_json::Value) -> Encoding {
        match capabilities["positionEncoding"].as_str() {
            Some("utf-8") => Encoding::Utf8,
            _ => Encoding::Utf16,
        }
    }
}

/// `file://` URI of an absolute path (every byte outside the unreserved
/// set and `/` percent-encoded).
pub fn uri_of(path: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let mut out = String::from("file://");
    for &b in path.as_os_str().as_bytes() {
        if b.is_ascii_alphanumeric() || b"/-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The path of a `file://` URI (`None` for another scheme or a bad escape).
pub fn path_of(uri: &str) -> Option<PathBuf> {
    use std::os::unix::ffi::OsStringExt;
    let rest = uri.strip_prefix("file://")?;
    // an authority (`file://localhost/x`) is the local host or nothing
    let rest = match rest.strip_prefix("localhost") {
        Some(r) if r.starts_with('/') => r,
        _ => rest,
    };
    if !rest.starts_with('/') {
        return None;
    }
    let bytes = rest.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    Some(PathBuf::from(std::ffi::OsString::from_vec(out)))
}

/// The byte range of each line of `text` (without its terminator).
pub fn line_text(text: &[u8], line0: usize) -> Option<&[u8]> {
    let mut start = 0;
    for _ in 0..line0 {
        start += memchr::memchr(b'\n', &text[start..])? + 1;
    }
    let end = memchr::memchr(b'\n', &text[start..]).map_or(text.len(), |e| start + e);
    let l = &text[start..end];
    Some(l.strip_suffix(b"\r").unwrap_or(l))
}

/// LSP character of a 0-based byte column in `line`.
pub fn character_of(line: &[u8], byte: usize, enc: Encoding) -> u32 {
    let byte = byte.min(line.len());
    match enc {
        Encoding::Utf8 => byte as u32,
        Encoding::Utf16 => String::from_utf8_lossy(&line[..byte])
            .chars()
            .map(|c| c.len_utf16() as u32)
            .sum(),
    }
}

/// 0-based byte column of an LSP character in `line` (clamped to its end).
pub fn byte_of(line: &[u8], character: u32, enc: Encoding) -> usize {
    match enc {
        Encoding::Utf8 => (character as usize).min(line.len()),
        Encoding::Utf16 => {
            let mut units = 0u32;
            let mut at = 0usize;
            let text = String::from_utf8_lossy(line);
            // lossy: a bad byte counts as one U+FFFD (one unit, three
            // bytes in the lossy text): walk the original bytes instead
            if text.len() != line.len() {
                return (character as usize).min(line.len());
            }
            for c in text.chars() {
                if units >= character {
                    break;
                }
                units += c.len_utf16() as u32;
                at += c.len_utf8();
            }
            at
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_round_trip_odd_names() {
        for p in ["/a/b.py", "/tmp/with space/ü.ts", "/x/%41#?.c", "/a+b/c@d"] {
            let u = uri_of(Path::new(p));
            assert!(u.starts_with("file:///"), "{u}");
            assert_eq!(path_of(&u).unwrap(), PathBuf::from(p), "{u}");
        }
        assert_eq!(path_of("file:///a%20b").unwrap(), PathBuf::from("/a b"));
        assert_eq!(path_of("file://localhost/a").unwrap(), PathBuf::from("/a"));
        assert!(path_of("untitled:1").is_none());
        assert!(path_of("file:///a%zz").is_none());
    }

    #[test]
    fn columns_convert_in_both_units() {
        let line = "é😀x = 1".as_bytes();
        // bytes: é=2, 😀=4; UTF-16: é=1, 😀=2
        assert_eq!(character_of(line, 6, Encoding::Utf16), 3);
        assert_eq!(byte_of(line, 3, Encoding::Utf16), 6);
        assert_eq!(character_of(line, 6, Encoding::Utf8), 6);
        assert_eq!(byte_of(line, 99, Encoding::Utf16), line.len());
        assert_eq!(line_text(b"a\r\nbc\n", 1).unwrap(), b"bc");
        assert_eq!(line_text(b"a\r\nbc\n", 0).unwrap(), b"a");
        assert_eq!(line_text(b"a\n", 1).unwrap(), b"");
        assert!(line_text(b"a", 1).is_none());
    }
}
