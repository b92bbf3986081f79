//! The terminal backend: crossterm's, but for how a frame's changed cells are written.
//! `CrosstermBackend::draw` sets each text attribute with crossterm's `SetAttribute`, whose
//! `Attribute::sgr` formats its number into a new `String`: ten allocations a frame of the
//! 200×50 screen with 8 GPUs, all that a frame still allocated (tests/cost.rs). `Ansi` writes
//! the same bytes, the attributes' numbers from a table; everything else is crossterm's.

use std::io::{self, Write};

use ratatui::backend::{Backend, ClearType, CrosstermBackend, IntoCrossterm, WindowSize};
use ratatui::buffer::Cell;
use ratatui::crossterm::cursor::MoveTo;
use ratatui::crossterm::queue;
use ratatui::crossterm::style::{Colors, Print, SetColors, SetUnderlineColor};
use ratatui::layout::{Position, Size};
use ratatui::style::{Color, Modifier};

pub struct Ansi<W: Write>(CrosstermBackend<W>);

impl<W: Write> Ansi<W> {
    pub fn new(writer: W) -> Self {
        Ansi(CrosstermBackend::new(writer))
    }
}

/// The SGR numbers of the attributes `draw` sets, as crossterm's `Attribute::sgr` gives them.
mod sgr {
    pub const RESET: &str = "0";
    pub const BOLD: &str = "1";
    pub const DIM: &str = "2";
    pub const ITALIC: &str = "3";
    pub const UNDERLINED: &str = "4";
    pub const SLOW_BLINK: &str = "5";
    pub const RAPID_BLINK: &str = "6";
    pub const REVERSE: &str = "7";
    pub const HIDDEN: &str = "8";
    pub const CROSSED_OUT: &str = "9";
    pub const NORMAL_INTENSITY: &str = "22";
    pub const NO_ITALIC: &str = "23";
    pub const NO_UNDERLINE: &str = "24";
    pub const NO_BLINK: &str = "25";
    pub const NO_REVERSE: &str = "27";
    pub const NO_HIDDEN: &str = "28";
    pub const NOT_CROSSED_OUT: &str = "29";
}

fn set(w: &mut impl Write, code: &str) -> io::Result<()> {
    write!(w, "\x1b[{code}m")
}

/// The attributes that take the terminal from `from` to `to`, in the order and with the
/// codes ratatui's crossterm backend writes them (its `ModifierDiff::queue`).
fn modifier_diff(w: &mut impl Write, from: Modifier, to: Modifier) -> io::Result<()> {
    let removed = from - to;
    if removed.contains(Modifier::REVERSED) {
        set(w, sgr::NO_REVERSE)?;
    }
    let reset_intensity = removed.intersects(Modifier::BOLD | Modifier::DIM);
    if reset_intensity {
        // Bold and dim are both undone by normal intensity: what stays is set again.
        set(w, sgr::NORMAL_INTENSITY)?;
        if to.contains(Modifier::DIM) {
            set(w, sgr::DIM)?;
        }
        if to.contains(Modifier::BOLD) {
            set(w, sgr::BOLD)?;
        }
    }
    let undo = [
        (Modifier::ITALIC, sgr::NO_ITALIC),
        (Modifier::UNDERLINED, sgr::NO_UNDERLINE),
        (Modifier::CROSSED_OUT, sgr::NOT_CROSSED_OUT),
        (Modifier::HIDDEN, sgr::NO_HIDDEN),
    ];
    for (m, code) in undo {
        if removed.contains(m) {
            set(w, code)?;
        }
    }
    if removed.intersects(Modifier::SLOW_BLINK | Modifier::RAPID_BLINK) {
        set(w, sgr::NO_BLINK)?;
    }
    let added = to - from;
    let bold_dim = if reset_intensity {
        Modifier::empty()
    } else {
        Modifier::BOLD | Modifier::DIM
    };
    let add = [
        (Modifier::REVERSED, sgr::REVERSE),
        (Modifier::BOLD & bold_dim, sgr::BOLD),
        (Modifier::ITALIC, sgr::ITALIC),
        (Modifier::UNDERLINED, sgr::UNDERLINED),
        (Modifier::DIM & bold_dim, sgr::DIM),
        (Modifier::CROSSED_OUT, sgr::CROSSED_OUT),
        (Modifier::HIDDEN, sgr::HIDDEN),
        (Modifier::SLOW_BLINK, sgr::SLOW_BLINK),
        (Modifier::RAPID_BLINK, sgr::RAPID_BLINK),
    ];
    for (m, code) in add {
        if !m.is_empty() && added.contains(m) {
            set(w, code)?;
        }
    }
    Ok(())
}

impl<W: Write> Write for Ansi<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.write(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        Write::flush(&mut self.0)
    }
}

impl<W: Write> Backend for Ansi<W> {
    type Error = io::Error;

    /// `CrosstermBackend::draw`, byte for byte (tested below), without its allocations.
    fn draw<'a, I>(&mut self, content: I) -> io::Result<()>
    where
        I: Iterator<Item = (u16, u16, &'a Cell)>,
    {
        // The backend writes through to its writer.
        let w = &mut self.0;
        let (mut fg, mut bg, mut modifier) = (Color::Reset, Color::Reset, Modifier::empty());
        let mut underline = Color::Reset;
        let mut last: Option<Position> = None;
        for (x, y, cell) in content {
            // The cursor moves unless the cell is just right of the last one.
            if !matches!(last, Some(p) if x == p.x + 1 && y == p.y) {
                queue!(w, MoveTo(x, y))?;
            }
            last = Some(Position { x, y });
            if cell.modifier != modifier {
                modifier_diff(w, modifier, cell.modifier)?;
                modifier = cell.modifier;
            }
            if cell.fg != fg || cell.bg != bg {
                let colors = Colors::new(cell.fg.into_crossterm(), cell.bg.into_crossterm());
                queue!(w, SetColors(colors))?;
                (fg, bg) = (cell.fg, cell.bg);
            }
            if cell.underline_color != underline {
                queue!(w, SetUnderlineColor(cell.underline_color.into_crossterm()))?;
                underline = cell.underline_color;
            }
            queue!(w, Print(cell.symbol()))?;
        }
        // As crossterm's: default colours, then every attribute reset.
        write!(w, "\x1b[39m\x1b[49m\x1b[59m")?;
        set(w, sgr::RESET)
    }

    fn append_lines(&mut self, n: u16) -> io::Result<()> {
        self.0.append_lines(n)
    }
    fn hide_cursor(&mut self) -> io::Result<()> {
        self.0.hide_cursor()
    }
    fn show_cursor(&mut self) -> io::Result<()> {
        // Never fails: ratatui's `Terminal` shows the cursor as it drops and `eprintln!`s a
        // failure, which panics where standard error is the terminal that was closed under the
        // monitor (exit status 101). `restore_terminal` shows the cursor again in any case.
        let _ = self.0.show_cursor();
        Ok(())
    }
    fn get_cursor_position(&mut self) -> io::Result<Position> {
        self.0.get_cursor_position()
    }
    fn set_cursor_position<P: Into<Position>>(&mut self, position: P) -> io::Result<()> {
        self.0.set_cursor_position(position)
    }
    fn clear(&mut self) -> io::Result<()> {
        self.0.clear()
    }
    fn clear_region(&mut self, clear_type: ClearType) -> io::Result<()> {
        self.0.clear_region(clear_type)
    }
    fn size(&self) -> io::Result<Size> {
        self.0.size()
    }
    fn window_size(&mut self) -> io::Result<WindowSize> {
        self.0.window_size()
    }
    fn flush(&mut self) -> io::Result<()> {
        Backend::flush(&mut self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;
    use std::rc::Rc;

    /// Bytes written, readable while a backend holds the writer.
    #[derive(Clone, Default)]
    struct Shared(Rc<RefCell<Vec<u8>>>);
    impl Write for Shared {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0.borrow_mut().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    /// Random runs of cells (positions that jump or follow on; every modifier; named, indexed
    /// and RGB colours; wide and one-cell symbols): the bytes `Ansi` writes are the bytes
    /// `CrosstermBackend` writes.
    #[test]
    fn writes_what_crosstermbackend_writes() {
        let mut lcg = crate::testing::Lcg(7);
        let mut rnd = |m: u32| lcg.below(m);
        let colors = [
            Color::Reset,
            Color::Red,
            Color::LightBlue,
            Color::DarkGray,
            Color::Indexed(208),
            Color::Rgb(1, 200, 30),
        ];
        let symbols = ["a", " ", "━", "⣿", "界", "‼"];
        for _ in 0..500 {
            let mut cells = Vec::new();
            let (mut px, mut py) = (0u16, 0u16);
            for _ in 0..rnd(40) {
                if rnd(3) == 0 {
                    (px, py) = (rnd(200) as u16, rnd(50) as u16);
                } else {
                    px += 1;
                }
                let mut cell = Cell::new(symbols[rnd(6) as usize]);
                cell.fg = colors[rnd(6) as usize];
                cell.bg = colors[rnd(6) as usize];
                cell.underline_color = colors[rnd(6) as usize];
                cell.modifier = Modifier::from_bits_truncate(rnd(1 << 9) as u16);
                cells.push((px, py, cell));
            }
            let (ours, theirs) = (Shared::default(), Shared::default());
            let cells = || cells.iter().map(|(x, y, c)| (*x, *y, c));
            Ansi::new(ours.clone()).draw(cells()).unwrap();
            CrosstermBackend::new(theirs.clone()).draw(cells()).unwrap();
            let text = |s: &Shared| String::from_utf8_lossy(&s.0.borrow()).into_owned();
            assert_eq!(
                text(&ours),
                text(&theirs),
                "{:?}",
                cells().collect::<Vec<_>>()
            );
        }
    }
}
