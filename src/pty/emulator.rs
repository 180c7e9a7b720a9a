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
    regions: Regions,
    /// Output bytes the shortcut did not feed to the emulator.
    pub skipped: u64,
}

/// Whether either grid may have a scroll region narrower than the screen,
/// followed by a second `vte` parser over exactly the bytes the emulator
/// gets. Errs on "maybe": a wrong "maybe" only costs a skipped shortcut.
struct Regions {
    parser: vte::Parser,
    seen: RegionSeen,
}

#[derive(Default)]
struct RegionSeen {
    /// `(main grid, alternate grid)` may have a region.
    narrowed: (bool, bool),
    alternate: bool,
    rows: u16,
    /// Characters printed: a print happens only in the ground state.
    prints: u64,
}

impl RegionSeen {
    fn current(&mut self) -> &mut bool {
        if self.alternate {
            &mut self.narrowed.1
        } else {
            &mut self.narrowed.0
        }
    }
}

impl vte::Perform for RegionSeen {
    fn print(&mut self, _: char) {
        self.prints += 1;
    }

    fn csi_dispatch(&mut self, params: &vte::Params, inter: &[u8], _: bool, action: char) {
        let first = |i: usize| {
            params
                .iter()
                .nth(i)
                .and_then(|p| p.first().copied())
                .unwrap_or(0)
        };
        match (inter, action) {
            ([], 'r') => {
                let rows = self.rows;
                // the whole screen: no or default parameters (as vt100 reads them)
                *self.current() = !(first(0) <= 1 && (first(1) == 0 || first(1) >= rows));
            }
            (_, 'r') => *self.current() = true,
            ([b'?'], 'h' | 'l') => {
                for p in params.iter() {
                    match p.first() {
                        Some(47) | Some(1049) => {
                            self.alternate = action == 'h';
                            if action == 'h' && p.first() == Some(&1049) {
                                // 1049 clears the alternate grid
                                self.narrowed.1 = false;
                            }
                        }
                        _ => {}
                    }
                }
            }
            _ => {}
        }
    }

    fn esc_dispatch(&mut self, inter: &[u8], _: bool, byte: u8) {
        if inter.is_empty() && byte == b'c' {
            // full reset: one fresh screen
            self.narrowed = (false, false);
            self.alternate = false;
        }
    }
}

/// A run of output that cannot leave the parser's ground state: printable
/// text, tab, CR, LF, and UTF-8 above the C1 range.
fn plain(b: u8) -> bool {
    matches!(b, 0x20..=0x7e | b'\t' | b'\r' | b'\n' | 0x80..)
}

/// Bytes looked at at once by the scans below: a fixed-size block with no
/// early exit inside compiles to vector compares, so finding where a
/// megabyte of text ends costs a few hundred microseconds less than asking
/// byte by byte (the scans run on every byte a session prints).
const LANE: usize = 32;

/// Where the plain run starting at `from` ends: the first byte at or after
/// `from` that is not [`plain`], or the length.
fn plain_end(bytes: &[u8], from: usize) -> usize {
    let mut at = from;
    for block in bytes[from..].chunks_exact(LANE) {
        // `!plain(b)` as masks: a C0 control other than tab, LF, CR, or DEL
        let mut stop = 0u8;
        for &b in block {
            let c0 = (b < 0x20) & (b != b'\t') & (b != b'\n') & (b != b'\r');
            stop |= u8::from(c0 | (b == 0x7f));
        }
        if stop != 0 {
            break;
        }
        at += LANE;
    }
    bytes[at..]
        .iter()
        .position(|&b| !plain(b))
        .map_or(bytes.len(), |p| at + p)
}

/// Whether any byte is above ASCII.
fn has_high(bytes: &[u8]) -> bool {
    let blocks = bytes.chunks_exact(LANE);
    let rest = blocks.remainder();
    blocks
        .map(|block| block.iter().fold(0u8, |acc, &b| acc | b))
        .chain(rest.iter().copied())
        .any(|b| b >= 0x80)
}

/// Output skipped by the shortcut is at least this long.
const SKIP_MIN: usize = 4096;

/// Where, in a plain run `run` printed in the ground state on a screen of
/// `rows` rows whose scroll region is the whole screen, a middle part
/// `run[from..to]` can be replaced by `rows` × CRLF without changing what
/// the emulator ends with: the part starts and ends right after a CRLF and
/// holds at least `rows` line feeds (so the cursor ends on the bottom row,
/// column 0, either way), and what follows holds at least `rows` line feeds
/// and a printed character (so every row the part wrote scrolls away, and
/// `REP` repeats the same character). `from` is past the first CRLF, where
/// the caller checks the ground state.
fn skippable(run: &[u8], rows: usize) -> Option<(usize, usize)> {
    let crlf_end = |at: usize| at >= 2 && &run[at - 2..at] == b"\r\n";
    let from = run.windows(2).position(|w| w == b"\r\n")? + 2;
    // the tail: back from the end until it holds `rows` line feeds and
    // starts right after a CRLF
    let mut lfs = 0;
    let mut to = run.len();
    while to > from {
        if run[to - 1] == b'\n' {
            lfs += 1;
        }
        to -= 1;
        if lfs > rows && crlf_end(to) {
            break;
        }
    }
    if to <= from || to - from < SKIP_MIN || !crlf_end(to) {
        return None;
    }
    let tail = &run[to..];
    if !tail.iter().any(|&b| (0x21..=0x7e).contains(&b)) || tail[0] >= 0x80 {
        return None;
    }
    let part = &run[from..to];
    if part.iter().filter(|&&b| b == b'\n').take(rows).count() < rows {
        return None;
    }
    if has_high(part) {
        // whole characters only, and no C1 controls among them
        let text = std::str::from_utf8(part).ok()?;
        if text.chars().any(|c| ('\u{80}'..='\u{9f}').contains(&c)) {
            return None;
        }
    }
    Some((from, to))
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
            regions: Regions {
                parser: vte::Parser::new(),
                seen: RegionSeen {
                    rows: nz(rows).get(),
                    ..RegionSeen::default()
                },
            },
            skipped: 0,
        }
    }

    /// Both parsers get the same bytes.
    fn feed(&mut self, bytes: &[u8]) {
        self.parser.process(bytes);
        self.regions.parser.advance(&mut self.regions.seen, bytes);
    }

    /// Feed output to the emulator. Bulk text (`cat` of a big file) takes a
    /// shortcut: the part of a long plain run whose rows would all scroll
    /// off before the run ends is replaced by as many line feeds as the
    /// screen has rows, which leaves the emulator in the same state (see
    /// [`skippable`]; a differential test holds it to that) at a fraction of
    /// the cost — the emulator would otherwise be slower than the PTY.
    pub fn process(&mut self, bytes: &[u8]) {
        let mut at = 0;
        while at < bytes.len() {
            let Some(start) = bytes[at..].iter().position(|&b| plain(b)).map(|p| at + p) else {
                break;
            };
            let end = plain_end(bytes, start);
            let rows = self.parser.screen().size().0.get();
            let cut = (end - start >= SKIP_MIN)
                .then(|| skippable(&bytes[start..end], rows.into()))
                .flatten();
            let Some((from, to)) = cut else {
                self.feed(&bytes[at..end]);
                at = end;
                continue;
            };
            let prints = self.regions.seen.prints;
            self.feed(&bytes[at..start + from]);
            let ground = self.regions.seen.prints > prints;
            let whole_screen = !*self.regions.seen.current()
                && self.regions.seen.alternate == self.parser.screen().alternate_screen();
            if ground && whole_screen {
                for _ in 0..rows {
                    self.parser.process(b"\r\n");
                }
                self.skipped += (to - from) as u64;
            } else {
                self.feed(&bytes[start + from..start + to]);
            }
            at = start + to;
        }
        self.feed(&bytes[at..]);
        if self.regions.seen.alternate != self.parser.screen().alternate_screen() {
            // the mirror lost track of the grids: assume the worst of both
            self.regions.seen.alternate = self.parser.screen().alternate_screen();
            self.regions.seen.narrowed = (true, true);
        }
    }

    pub fn resize(&mut self, cols: u16, rows: u16) {
        self.parser.set_size(nz(rows), nz(cols));
        self.regions.seen.rows = nz(rows).get();
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

    /// The key-encoding modes the program set (what `shell::pty::send`'s
    /// named keys follow).
    pub fn key_modes(&self) -> super::keys::Modes {
        let screen = self.parser.screen();
        super::keys::Modes {
            application_cursor: screen.application_cursor(),
            application_keypad: screen.application_keypad(),
        }
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

/// Terminal output as plain text, as a terminal would leave each line:
/// escape sequences and control characters dropped, `\r\n` a line end, a
/// lone `\r` returning to the start of the line so what follows overwrites
/// it (a progress bar ends as its last state, not a wall of every state),
/// backspace, erase-in-line and horizontal cursor moves applied.
pub fn strip_ansi(bytes: &[u8]) -> String {
    /// The text so far, and the line being written with its cursor.
    struct Plain {
        out: String,
        line: Vec<char>,
        col: usize,
    }
    impl Plain {
        fn flush(&mut self) {
            self.out.extend(self.line.drain(..));
            self.col = 0;
        }
        fn put(&mut self, c: char) {
            if self.col < self.line.len() {
                self.line[self.col] = c;
            } else {
                // a cursor moved past the end leaves blanks behind it
                self.line.resize(self.col, ' ');
                self.line.push(c);
            }
            self.col += 1;
        }
    }
    impl vte::Perform for Plain {
        fn print(&mut self, c: char) {
            self.put(c);
        }
        fn execute(&mut self, byte: u8) {
            match byte {
                b'\n' => {
                    self.flush();
                    self.out.push('\n');
                }
                b'\t' => self.put('\t'),
                b'\r' => self.col = 0,
                0x08 => self.col = self.col.saturating_sub(1),
                _ => {}
            }
        }
        fn csi_dispatch(
            &mut self,
            params: &vte::Params,
            intermediates: &[u8],
            _ignore: bool,
            action: char,
        ) {
            if !intermediates.is_empty() {
                return;
            }
            let first = params
                .iter()
                .next()
                .and_then(|p| p.first().copied())
                .unwrap_or(0) as usize;
            // a count or column of 0 means 1, as terminals read it
            let n = first.clamp(1, 4096);
            match action {
                // erase in line: to the end, to the start, all of it
                'K' => match first {
                    0 => self.line.truncate(self.col),
                    1 => {
                        let to = self.col.min(self.line.len());
                        self.line[..to].fill(' ');
                    }
                    _ => self.line.clear(),
                },
                'G' | '`' => self.col = n - 1,
                'C' => self.col += n,
                'D' => self.col = self.col.saturating_sub(n),
                _ => {}
            }
        }
    }
    let mut plain = Plain {
        out: String::with_capacity(bytes.len()),
        line: Vec::new(),
        col: 0,
    };
    vte::Parser::new().advance(&mut plain, bytes);
    plain.flush();
    plain.out
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

    #[test]
    fn strip_ansi_leaves_a_progress_bar_in_its_last_state() {
        // \r rewrites the line, erase-in-line drops what the old state left
        let bar = b"get  10%\rget  55%\rget 100%\x1b[K\r\ndone\r\n";
        assert_eq!(strip_ansi(bar), "get 100%\ndone\n");
        // a shorter rewrite without an erase keeps the tail, as a screen does
        assert_eq!(strip_ansi(b"abcdef\rXY\n"), "XYcdef\n");
        // backspace and a cursor move back overwrite too
        assert_eq!(strip_ansi(b"ab\x08c\n"), "ac\n");
        assert_eq!(strip_ansi(b"12345\x1b[3Dx\x1b[K"), "12x");
        assert_eq!(strip_ansi(b"a\x1b[5Gb"), "a   b");
        // no \r survives, whatever the input
        assert!(!strip_ansi(b"x\ry\r\r\nz\r").contains('\r'));
    }

    /// A tiny deterministic generator (xorshift), so every run tests the
    /// same streams and a failure names its seed.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
    }

    #[test]
    fn the_block_scans_agree_with_a_byte_by_byte_look() {
        let mut r = Rng(0x9e37_79b9_7f4a_7c15);
        // mostly plain bytes, so runs cross block boundaries
        const SOME: [u8; 12] = [
            b'a', b' ', b'~', b'\t', b'\r', b'\n', 0x80, 0xff, 0x1b, 0x7f, 0x00, 0x1f,
        ];
        for _ in 0..5000 {
            let len = r.below(200) as usize;
            let odd = r.below(300).max(1);
            let bytes: Vec<u8> = (0..len)
                .map(|_| match r.below(odd) {
                    0 => SOME[r.below(SOME.len() as u64) as usize],
                    _ => b'x',
                })
                .collect();
            let from = r.below(len as u64 + 1) as usize;
            let naive = bytes[from..]
                .iter()
                .position(|&b| !plain(b))
                .map_or(len, |p| from + p);
            assert_eq!(plain_end(&bytes, from), naive, "{bytes:?} from {from}");
            assert_eq!(
                has_high(&bytes),
                bytes.iter().any(|&b| b >= 0x80),
                "{bytes:?}"
            );
        }
    }

    fn line(r: &mut Rng, out: &mut Vec<u8>) {
        const WORDS: [&str; 9] = [
            "the", "quick", "brown", "fox", "漢字", "e\u{301}", "🦀", "\t", "  ",
        ];
        for _ in 0..r.below(30) {
            out.extend_from_slice(WORDS[r.below(WORDS.len() as u64) as usize].as_bytes());
            out.push(b' ');
        }
        out.extend_from_slice(match r.below(10) {
            0 => b"\n",
            1 => b"\r",
            _ => b"\r\n",
        });
    }

    /// Output with everything that can trip the shortcut: long plain runs
    /// (the shortcut's case), scroll regions set and reset, both grids,
    /// resets, cursor moves, `REP`, titles, wide and combining characters.
    fn stream(r: &mut Rng) -> Vec<u8> {
        let mut out = Vec::new();
        for _ in 0..40 {
            match r.below(16) {
                0..=5 => {
                    // a long run of lines: what `cat` prints
                    for _ in 0..r.below(300) {
                        line(r, &mut out);
                    }
                }
                6 => line(r, &mut out),
                7 => {
                    let (t, b) = (r.below(12), r.below(14));
                    out.extend_from_slice(format!("\x1b[{t};{b}r").as_bytes());
                }
                8 => out.extend_from_slice(b"\x1b[r"),
                9 => out.extend_from_slice(
                    [
                        &b"\x1b[?1049h"[..],
                        b"\x1b[?1049l",
                        b"\x1b[?47h",
                        b"\x1b[?47l",
                    ][r.below(4) as usize],
                ),
                10 => out
                    .extend_from_slice(format!("\x1b[{};{}H", r.below(14), r.below(50)).as_bytes()),
                11 => out.extend_from_slice(
                    format!("\x1b[{}b\x1b[1;3{}m", r.below(5), r.below(8)).as_bytes(),
                ),
                12 => out.extend_from_slice(b"\x1b]2;a title\r\nacross lines\x07"),
                13 => out.extend_from_slice(b"\x1bc"),
                14 => out.extend_from_slice(b"\x1b[2J\x1b7\x1bM\x1b8\x1b[4h\x1b[4l"),
                _ => out.extend_from_slice(b"\x1b[0m"),
            }
        }
        // a probe of hidden state: region, last character, cursor
        out.extend_from_slice(b"\x1b[3b\r\n\r\n\r\n\x1b[1;1HX\x1b[99B\r\n\r\nZ");
        out
    }

    fn same(a: &vt100::Parser<Titles>, b: &vt100::Parser<Titles>, seed: u64) {
        let (sa, sb) = (a.screen(), b.screen());
        assert_eq!(sa.state_formatted(), sb.state_formatted(), "seed {seed}");
        assert_eq!(sa.contents(), sb.contents(), "seed {seed}");
        let (rows, _) = sa.size();
        for row in 0..rows.get() {
            assert_eq!(
                sa.row_wrapped(row),
                sb.row_wrapped(row),
                "seed {seed} row {row}"
            );
        }
        assert_eq!(a.callbacks().title, b.callbacks().title, "seed {seed}");
    }

    #[test]
    fn the_bulk_text_shortcut_ends_in_the_same_state_as_the_emulator() {
        let mut skipped = 0;
        for seed in 1..=120u64 {
            let mut r = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15));
            let (cols, rows) = (20 + r.below(100) as u16, 3 + r.below(40) as u16);
            let mut reference =
                vt100::Parser::new_with_callbacks(nz(rows), nz(cols), 0, Titles::default());
            let mut ours = Screen::new(cols, rows);
            let bytes = stream(&mut r);
            // frames as the worker cuts them: never inside a character
            let text = String::from_utf8(bytes).unwrap();
            let mut rest = text.as_str();
            while !rest.is_empty() {
                let mut n = (1 + r.below(70_000) as usize).min(rest.len());
                while !rest.is_char_boundary(n) {
                    n += 1;
                }
                let (frame, tail) = rest.split_at(n);
                reference.process(frame.as_bytes());
                ours.process(frame.as_bytes());
                same(&reference, &ours.parser, seed);
                if r.below(20) == 0 {
                    let (c, h) = (20 + r.below(100) as u16, 3 + r.below(40) as u16);
                    reference.set_size(nz(h), nz(c));
                    ours.resize(c, h);
                }
                rest = tail;
            }
            skipped += ours.skipped;
        }
        assert!(
            skipped > 1_000_000,
            "the shortcut was taken: {skipped} bytes"
        );
    }
}
