//! Named keys an agent can send (`shell::pty::send`'s `keys`), in the
//! encoding the program asked for: a program that switched the cursor keys
//! to application mode (`ESC [ ? 1 h`: less, vim, readline's vi mode) gets
//! `ESC O A` for up, as a real terminal would send, not `ESC [ A`.

use crate::error::{Failure, quote};

/// The terminal modes that change what a key sends, as the session's
/// screen emulator last saw them set.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Modes {
    /// DECCKM: cursor keys (and home/end) send `ESC O x`.
    pub application_cursor: bool,
    /// DECKPAM: the keypad sends application sequences (none of the named
    /// keys is a keypad key, so it changes nothing they send).
    pub application_keypad: bool,
}

/// What a cursor key sends in application cursor mode.
const APPLICATION_CURSOR: &[(&str, &[u8])] = &[
    ("up", b"\x1bOA"),
    ("down", b"\x1bOB"),
    ("right", b"\x1bOC"),
    ("left", b"\x1bOD"),
    ("home", b"\x1bOH"),
    ("end", b"\x1bOF"),
];

/// Every key name, with the bytes a terminal sends for it.
pub const KEYS: &[(&str, &[u8])] = &[
    ("enter", b"\r"),
    ("tab", b"\t"),
    ("backspace", b"\x7f"),
    ("esc", b"\x1b"),
    ("space", b" "),
    ("up", b"\x1b[A"),
    ("down", b"\x1b[B"),
    ("right", b"\x1b[C"),
    ("left", b"\x1b[D"),
    ("home", b"\x1b[H"),
    ("end", b"\x1b[F"),
    ("pageup", b"\x1b[5~"),
    ("pagedown", b"\x1b[6~"),
    ("delete", b"\x1b[3~"),
];

/// The bytes for one key name (a name above, or `ctrl-<letter>`) under
/// the terminal's current `modes`.
pub fn bytes_in(name: &str, modes: Modes) -> Result<Vec<u8>, Failure> {
    let lower = name.to_ascii_lowercase();
    if modes.application_cursor
        && let Some((_, b)) = APPLICATION_CURSOR.iter().find(|(n, _)| *n == lower)
    {
        return Ok(b.to_vec());
    }
    bytes_of(&lower)
}

/// The bytes for one key name in the default (normal) modes.
pub fn bytes_of(name: &str) -> Result<Vec<u8>, Failure> {
    let lower = name.to_ascii_lowercase();
    if let Some((_, b)) = KEYS.iter().find(|(n, _)| *n == lower) {
        return Ok(b.to_vec());
    }
    if let Some(rest) = lower.strip_prefix("ctrl-") {
        let mut chars = rest.chars();
        if let (Some(c), None) = (chars.next(), chars.next()) {
            let code = match c {
                'a'..='z' => Some(c as u8 - b'a' + 1),
                '[' => Some(0x1b),
                '\\' => Some(0x1c),
                ']' => Some(0x1d),
                _ => None,
            };
            if let Some(code) = code {
                return Ok(vec![code]);
            }
        }
    }
    let names: Vec<&str> = KEYS.iter().map(|(n, _)| *n).collect();
    Err(Failure::bad_input(format!(
        "unknown key {}; use one of [{}] or ctrl-<letter> (ctrl-c, ctrl-d, …), and send \
         ordinary characters as `text`",
        quote(name),
        names.join(", ")
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_map_to_terminal_bytes() {
        assert_eq!(bytes_of("enter").unwrap(), b"\r");
        assert_eq!(bytes_of("ctrl-c").unwrap(), [3]);
        assert_eq!(bytes_of("Ctrl-D").unwrap(), [4]);
        assert_eq!(bytes_of("up").unwrap(), b"\x1b[A");
        assert_eq!(bytes_of("esc").unwrap(), [0x1b]);
        let err = bytes_of("ctrl-1").unwrap_err();
        assert!(err.message.contains("ctrl-<letter>"));
        assert!(bytes_of("hyper").is_err());
    }

    #[test]
    fn cursor_keys_follow_application_cursor_mode() {
        let app = Modes {
            application_cursor: true,
            ..Modes::default()
        };
        assert_eq!(bytes_in("up", app).unwrap(), b"\x1bOA");
        assert_eq!(bytes_in("Left", app).unwrap(), b"\x1bOD");
        assert_eq!(bytes_in("home", app).unwrap(), b"\x1bOH");
        assert_eq!(bytes_in("pageup", app).unwrap(), b"\x1b[5~");
        assert_eq!(bytes_in("enter", app).unwrap(), b"\r");
        assert_eq!(bytes_in("up", Modes::default()).unwrap(), b"\x1b[A");
    }
}
