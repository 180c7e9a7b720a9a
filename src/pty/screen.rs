//! The server-side screen: every byte a session prints also goes through a
//! terminal emulator (`vt100`), so a replay that lost frames can begin with
//! a redraw of the current screen instead of mid-escape-sequence, and an
//! agent can read the rendered screen.

use std::num::NonZeroU16;

/// Remembers the window title (OSC 0/2).
#[derive(Default)]
pub struct Titles {
    pub title: String,
}

impl vt100::Callbacks for Titles {
    fn set_window_title(&mut self, _: &mut vt100::Screen, title: &[u8]) {
        // bounded: a title is a line of text, not a payload
        let t = String::from_utf8_lossy(&title[..title.len().min(1024)]);
        self.title = t.into_owned();
    }
}

pub struct Screen {
    parser: vt100::Parser<Titles>,
}

fn nz(v: u16) -> NonZeroU16 {
    NonZeroU16::new(v).unwrap_or(NonZeroU16::MIN)
}

/// The rendered screen, as `shell::pty::screen` reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendered {
    pub rows: Vec<String>,
    pub cursor_row: u16,
    pub cursor_col: u16,
    pub cursor_visible: bool,
    pub alternate_screen: bool,
    pub title: String,
    pub cols: u16,
    pub height: u16,
}

impl Screen {
    pub fn new(cols: u16, rows: u16) -> Screen {
        Screen {
            parser: vt100::Parser::new_with_callbacks(nz(rows), nz(cols), 0, Titles::default()),
        }
    }

    pub fn process(&mut self, bytes: &[u8]) {
        self.parser.process(bytes);
    }

    pub fn resize(&mut self, cols: u16, rows: u16) {
        self.parser.set_size(nz(rows), nz(cols));
    }

    /// Bytes that turn a freshly reset terminal into this screen: contents,
    /// attributes, cursor, alternate screen, input modes (bracketed paste,
    /// application cursor/keypad, mouse) and title.
    pub fn redraw(&self) -> Vec<u8> {
        let s = self.parser.screen();
        let mut out = String::from("\x1bc"); // full reset first
        if s.alternate_screen() {
            out.push_str("\x1b[?1049h");
        }
        out.push_str(&s.state_formatted());
        let title = &self.parser.callbacks().title;
        if !title.is_empty() {
            out.push_str("\x1b]2;");
            out.push_str(&title.replace(['\x07', '\x1b'], ""));
            out.push('\x07');
        }
        out.into_bytes()
    }

    pub fn render(&self) -> Rendered {
        let s = self.parser.screen();
        let (height, cols) = s.size();
        let (cursor_row, cursor_col) = s.cursor_position();
        Rendered {
            rows: s.rows(0, cols.get()).collect(),
            cursor_row,
            cursor_col,
            cursor_visible: !s.hide_cursor(),
            alternate_screen: s.alternate_screen(),
            title: self.parser.callbacks().title.clone(),
            cols: cols.get(),
            height: height.get(),
        }
    }
}

/// Terminal output as plain text: escape sequences and control characters
/// dropped, `\r\n` and lone `\r` turned into what a reader expects.
pub fn strip_ansi(bytes: &[u8]) -> String {
    struct Plain(String);
    impl vte::Perform for Plain {
        fn print(&mut self, c: char) {
            self.0.push(c);
        }
        fn execute(&mut self, byte: u8) {
            match byte {
                b'\n' => {
                    if self.0.ends_with('\r') {
                        self.0.pop();
                    }
                    self.0.push('\n')
                }
                b'\t' => self.0.push('\t'),
                b'\r' => self.0.push('\r'),
                _ => {}
            }
        }
    }
    let mut plain = Plain(String::with_capacity(bytes.len()));
    vte::Parser::new().advance(&mut plain, bytes);
    plain.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_redraw_reproduces_the_screen_and_its_modes() {
        let mut s = Screen::new(40, 10);
        s.process(b"hello \x1b[1;31mred\x1b[0m\r\nline two\x1b]2;my title\x07");
        s.process(b"\x1b[?2004h\x1b[?1049h\x1b[5;7Halt screen text\x1b[3;3H");
        let want = s.render();
        let mut fresh = Screen::new(40, 10);
        fresh.process(b"garbage before \x1b[?25l");
        fresh.process(&s.redraw());
        assert_eq!(fresh.render(), want);
        assert!(want.alternate_screen);
        assert_eq!(want.title, "my title");
        assert_eq!((want.cursor_row, want.cursor_col), (2, 2));
        assert!(fresh.parser.screen().bracketed_paste());
        assert!(want.rows[4].contains("alt screen text"));
    }

    #[test]
    fn the_normal_screen_redraws_too() {
        let mut s = Screen::new(20, 5);
        for i in 0..30 {
            s.process(format!("row {i}\r\n").as_bytes());
        }
        let mut fresh = Screen::new(20, 5);
        fresh.process(&s.redraw());
        assert_eq!(fresh.render(), s.render());
        assert!(s.render().rows[3].starts_with("row 29"));
    }

    #[test]
    fn strip_ansi_keeps_the_text() {
        let raw = b"\x1b[1;32mok\x1b[0m done\r\n\x1b]0;t\x07next\x1b[K line\r\n";
        assert_eq!(strip_ansi(raw), "ok done\nnext line\n");
    }
}
