//! The terminal as the monitor draws on it: each frame is rendered into ratatui's buffer, and
//! only the cells that differ from what the terminal shows are sent.
//!
//! ratatui's `Terminal::draw` finds those cells with `Buffer::diff`, which measures every
//! cell's width before it compares the cell and compares symbols first (a `memcmp` call a
//! cell): a third of a 200×50 frame's time in a criterion profile (2026-12-04), on cells that
//! mostly did not change. `Changes` sends exactly the cells ratatui's diff sends (a test holds
//! it to ratatui's on random screens), comparing the cheap fields first and measuring the width
//! only of a cell that changed or may be wide.

use ratatui::backend::Backend;
use ratatui::buffer::{Buffer, Cell, CellDiffOption, CellWidth};
use ratatui::layout::Rect;
use ratatui::{Frame, Terminal};

/// A terminal and what it shows.
pub struct Screen<B: Backend> {
    terminal: Terminal<B>,
    /// The last frame sent: what the terminal shows now.
    shown: Buffer,
    frames: usize,
}

impl<B: Backend> Screen<B> {
    /// Takes over `terminal`; its first frame is sent whole, whatever it showed before.
    pub fn new(terminal: Terminal<B>) -> Self {
        let mut screen = Screen {
            terminal,
            shown: Buffer::default(),
            frames: 0,
        };
        screen.shown = screen.take_spare();
        screen.forget_shown();
        screen
    }

    /// ratatui's terminal keeps a second buffer to diff against; this diffs against `shown`
    /// instead, so that buffer is taken out of the terminal (kept there, three buffers of
    /// the screen's size were held: half a MiB more resident at 200×50, H200 runs 45-46).
    fn take_spare(&mut self) -> Buffer {
        // `swap_buffers` makes the spare the current one (and resets the other, which is
        // reset before each frame anyway); the second swap makes it current again.
        self.terminal.swap_buffers();
        let spare = std::mem::take(self.terminal.current_buffer_mut());
        self.terminal.swap_buffers();
        spare
    }

    /// Renders a frame with `render` and sends what changed.
    pub fn draw(&mut self, render: impl FnOnce(&mut Frame)) -> Result<(), B::Error> {
        self.terminal.current_buffer_mut().reset();
        render(&mut self.terminal.get_frame());
        let next = std::mem::take(self.terminal.current_buffer_mut());
        if next.area != self.shown.area {
            self.forget_shown_in(next.area);
        }
        let sent = self.send(&next);
        // The buffer shown until now is the one the next frame is rendered into.
        *self.terminal.current_buffer_mut() = std::mem::replace(&mut self.shown, next);
        if sent.is_err() {
            // Some of it may have reached the terminal: send the next frame whole.
            self.forget_shown();
        }
        sent?;
        self.frames += 1;
        Ok(())
    }

    fn send(&mut self, next: &Buffer) -> Result<(), B::Error> {
        let backend = self.terminal.backend_mut();
        backend.draw(Changes::new(&self.shown, next))?;
        // As `Terminal::draw` does with no cursor set (the monitor sets none).
        self.terminal.hide_cursor()?;
        self.terminal.backend_mut().flush()
    }

    /// The terminal is now `area` (cleared): the next frame is sent whole.
    pub fn resize(&mut self, area: Rect) -> Result<(), B::Error> {
        let resized = self.terminal.resize(area);
        // The terminal made its spare buffer again, at the new size: it goes.
        drop(self.take_spare());
        self.forget_shown();
        resized
    }

    /// The terminal's size as its backend reports it.
    pub fn size(&mut self) -> Result<ratatui::layout::Size, B::Error> {
        self.terminal.size()
    }

    /// Frames sent since the start.
    pub fn frames(&self) -> usize {
        self.frames
    }

    /// Sends what the backend still holds (a frame cut short by an error).
    pub fn flush(&mut self) -> Result<(), B::Error> {
        self.terminal.backend_mut().flush()
    }

    pub fn backend(&self) -> &B {
        self.terminal.backend()
    }

    fn forget_shown(&mut self) {
        let area = self.terminal.get_frame().area();
        self.forget_shown_in(area);
    }

    /// What the terminal shows is not known: every cell is marked to be sent.
    fn forget_shown_in(&mut self, area: Rect) {
        let mut unknown = Cell::EMPTY;
        unknown.diff_option = CellDiffOption::AlwaysUpdate;
        self.shown.resize(area);
        self.shown.content.fill(unknown);
    }
}

/// The cells of `next` to send over `prev`, in order: ratatui's `BufferDiff` with the same
/// handling of wide characters and skipped cells, and a cheaper test for cells that did not
/// change.
pub struct Changes<'p, 'n> {
    prev: &'p [Cell],
    next: &'n [Cell],
    area: Rect,
    pos: usize,
    trailing: Option<Trailing>,
}

/// The columns after a wide character still to look at: all sent (`force`, when the character
/// it replaced left its style on them), or those whose symbol changed.
struct Trailing {
    next_index: usize,
    end: usize,
    force: bool,
}

/// Modifiers that show on a blank cell.
const VISIBLE_ON_BLANK: ratatui::style::Modifier = ratatui::style::Modifier::REVERSED
    .union(ratatui::style::Modifier::UNDERLINED)
    .union(ratatui::style::Modifier::SLOW_BLINK)
    .union(ratatui::style::Modifier::RAPID_BLINK)
    .union(ratatui::style::Modifier::CROSSED_OUT);

impl<'p, 'n> Changes<'p, 'n> {
    /// # Panics
    /// When the buffers do not start at the same cell or differ in width, as ratatui's does.
    pub fn new(prev: &'p Buffer, next: &'n Buffer) -> Self {
        assert!(
            prev.area.x == next.area.x
                && prev.area.y == next.area.y
                && prev.area.width == next.area.width,
            "buffers of different shapes: {:?} and {:?}",
            prev.area,
            next.area
        );
        let mut area = prev.area;
        area.height = area.height.min(next.area.height);
        Changes {
            prev: &prev.content,
            next: &next.content,
            area,
            pos: 0,
            trailing: None,
        }
    }

    fn at(&self, index: usize) -> (u16, u16, &'n Cell) {
        let w = usize::from(self.area.width);
        let x = index % w + usize::from(self.area.x);
        let y = index / w + usize::from(self.area.y);
        (x as u16, y as u16, &self.next[index])
    }

    /// The next of the trailing columns to send, if any is left.
    fn next_trailing(&mut self, len: usize) -> Option<(u16, u16, &'n Cell)> {
        let t = self.trailing.as_mut()?;
        while t.next_index < t.end {
            let j = t.next_index;
            // Past this cell, and past its own trailing columns if it is wide.
            t.next_index += usize::from(self.next[j].cell_width().max(1));
            t.end = t.end.max(t.next_index).min(len);
            if !is_skip(&self.next[j])
                && (t.force || self.prev[j].symbol() != self.next[j].symbol())
            {
                return Some(self.at(j));
            }
        }
        self.pos = t.end;
        self.trailing = None;
        None
    }

    /// Cell `i` changed (or is always sent): where the diff goes on after it.
    fn changed(&mut self, i: usize, len: usize) {
        let current = &self.next[i];
        let previous = &self.prev[i];
        let width = usize::from(current.cell_width());
        let previous_width = usize::from(previous.cell_width());
        if width > 1 && current.symbol().contains('\u{FE0F}') {
            // Terminals that fail to clear an emoji sequence's trailing column: its changed
            // symbols there are sent.
            self.trailing = Some(Trailing {
                next_index: i + 1,
                end: (i + width).min(len),
                force: false,
            });
        } else if width > 1 {
            self.pos += width - 1;
        } else if previous_width > width
            && (previous.bg != ratatui::style::Color::Reset
                || previous.modifier.intersects(VISIBLE_ON_BLANK))
        {
            self.trailing = Some(Trailing {
                next_index: i + 1,
                // ratatui's does not stop at the end: a wide character in the last column
                // (never drawn, but possible in a buffer) would read past it.
                end: (i + previous_width).min(len),
                force: true,
            });
        }
    }
}

impl<'n> Iterator for Changes<'_, 'n> {
    type Item = (u16, u16, &'n Cell);

    fn next(&mut self) -> Option<Self::Item> {
        let len = self.next.len().min(self.prev.len());
        if self.trailing.is_some() {
            if let Some(cell) = self.next_trailing(len) {
                return Some(cell);
            }
        }
        // The scan runs in locals and decodes each symbol once: most cells did not change,
        // and this loop visits every cell of every frame (44 % of the drawing thread's
        // instructions at 200×50, callgrind).
        let (next, prev) = (self.next, self.prev);
        let mut i = self.pos;
        while i < len {
            let (current, previous) = (&next[i], &prev[i]);
            i += 1;
            match current.diff_option {
                CellDiffOption::None => {
                    if is_skip(current) {
                        continue;
                    }
                    let symbol = current.symbol();
                    if same_style(current, previous) && same_symbol(symbol, previous.symbol()) {
                        // An unchanged wide character's columns are its own.
                        i += one_cell_or_width(current, symbol).saturating_sub(1);
                        continue;
                    }
                }
                CellDiffOption::Skip => continue,
                CellDiffOption::ForcedWidth(width) => {
                    i += usize::from(width.get()) - 1;
                    if current == previous {
                        continue;
                    }
                    self.pos = i;
                    return Some(self.at(i - usize::from(width.get())));
                }
                CellDiffOption::AlwaysUpdate => {}
            }
            self.pos = i;
            self.changed(i - 1, len);
            return Some(self.at(i - 1));
        }
        self.pos = i;
        None
    }
}

#[allow(deprecated)] // ratatui's diff still honours the old `skip` flag
const fn is_skip(cell: &Cell) -> bool {
    matches!(cell.diff_option, CellDiffOption::Skip)
        || (cell.skip && matches!(cell.diff_option, CellDiffOption::None))
}

/// `Cell::eq` but for the symbol, cheapest fields first (of a cell whose diff option is
/// `None`: the other's must be too).
#[allow(deprecated)] // `skip` is part of `Cell::eq`
fn same_style(a: &Cell, b: &Cell) -> bool {
    a.fg == b.fg
        && a.bg == b.bg
        && a.modifier == b.modifier
        && a.diff_option == b.diff_option
        && a.underline_color == b.underline_color
        && a.skip == b.skip
}

/// Two symbols alike, a short one compared without a call to `memcmp`.
fn same_symbol(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && if a.len() <= 4 {
            a.bytes().zip(b.bytes()).all(|(x, y)| x == y)
        } else {
            a == b
        }
}

/// A cell's width, without a Unicode lookup for ASCII and for the characters the monitor draws
/// most (box drawing, block elements, braille), all one column wide.
fn one_cell_or_width(cell: &Cell, symbol: &str) -> usize {
    let one_cell = symbol.len() == 1
        || (symbol.len() == 3
            && symbol
                .chars()
                .next()
                .is_some_and(|c| matches!(c, '\u{2500}'..='\u{259F}' | '\u{2800}'..='\u{28FF}')));
    if one_cell {
        1
    } else {
        usize::from(cell.cell_width())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::style::{Color, Modifier};
    use std::num::NonZeroU16;

    /// A small deterministic generator (xorshift), so a failure names its seed.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn pick<T: Copy>(&mut self, from: &[T]) -> T {
            from[(self.next() % from.len() as u64) as usize]
        }
    }

    /// Symbols of every kind the diff treats apart: ASCII, one-column Unicode, wide (CJK),
    /// emoji with VS16, zero-width, halfwidth sound marks.
    const SYMBOLS: &[&str] = &[
        " ", "a", "b", "─", "█", "⣿", "⠁", "▶", "✓", "·", "°", "コ", "日", "❤️", "👍", "ﾞ",
        "e\u{301}", "",
    ];

    /// A cell set directly, as `pen` sets them: one column or less (wide symbols go through
    /// `set_stringn`, which blanks the columns they cover, so the buffer stays as ratatui
    /// assumes it is).
    fn random_cell(rng: &mut Rng) -> Cell {
        let mut cell = Cell::EMPTY;
        let narrow: Vec<&str> = SYMBOLS
            .iter()
            .copied()
            .filter(|s| s.cell_width() <= 1)
            .collect();
        cell.set_symbol(rng.pick(&narrow));
        cell.fg = rng.pick(&[Color::Reset, Color::Red, Color::Indexed(8)]);
        cell.bg = rng.pick(&[Color::Reset, Color::Reset, Color::Blue]);
        cell.modifier = rng.pick(&[Modifier::empty(), Modifier::BOLD, Modifier::REVERSED]);
        cell.diff_option = match rng.next() % 12 {
            0 => CellDiffOption::Skip,
            1 => CellDiffOption::AlwaysUpdate,
            2 => CellDiffOption::ForcedWidth(NonZeroU16::new(2).unwrap()),
            3 => CellDiffOption::ForcedWidth(NonZeroU16::MIN),
            _ => CellDiffOption::None,
        };
        cell
    }

    /// A buffer written as the widgets write one: wide symbols through `set_stringn`, which
    /// blanks the columns they cover; some cells random.
    fn random_buffer(rng: &mut Rng, area: Rect, like: Option<&Buffer>) -> Buffer {
        let mut buf = like.cloned().unwrap_or_else(|| Buffer::empty(area));
        let changes = if like.is_some() { rng.next() % 12 } else { 40 };
        for _ in 0..changes {
            let x = area.x + (rng.next() % u64::from(area.width)) as u16;
            let y = area.y + (rng.next() % u64::from(area.height)) as u16;
            let last = x + 1 == area.right() && y + 1 == area.bottom();
            if rng.next().is_multiple_of(3) {
                let cell = random_cell(rng);
                // A forced width of two in the very last cell makes ratatui's diff read past
                // the buffer's end (ours stops there).
                if !(last && cell.cell_width() > 1) {
                    buf[(x, y)] = cell;
                }
            } else {
                let style = random_cell(rng).style();
                buf.set_stringn(x, y, rng.pick(SYMBOLS), usize::MAX, style);
            }
        }
        buf
    }

    /// On random screens and random changes to them, the cells sent are ratatui's.
    #[test]
    fn sends_the_cells_ratatuis_diff_sends() {
        for seed in 1..3000u64 {
            let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
            let area = Rect::new(
                (rng.next() % 3) as u16,
                (rng.next() % 3) as u16,
                1 + (rng.next() % 9) as u16,
                1 + (rng.next() % 5) as u16,
            );
            let prev = random_buffer(&mut rng, area, None);
            let next = random_buffer(&mut rng, area, Some(&prev));
            let ours: Vec<_> = Changes::new(&prev, &next).collect();
            let theirs = prev.diff(&next);
            assert_eq!(ours, theirs, "seed {seed}");
            let unrelated = random_buffer(&mut rng, area, None);
            let ours: Vec<_> = Changes::new(&prev, &unrelated).collect();
            assert_eq!(ours, prev.diff(&unrelated), "seed {seed}, unrelated");
        }
    }

    /// The characters taken as one column without a lookup are one column to ratatui.
    #[test]
    fn the_shortcut_widths_are_ratatuis() {
        for c in ('\u{2500}'..='\u{259F}').chain('\u{2800}'..='\u{28FF}') {
            let mut cell = Cell::EMPTY;
            cell.set_char(c);
            assert_eq!(cell.cell_width(), 1, "{c:?}");
            assert_eq!(one_cell_or_width(&cell, cell.symbol()), 1, "{c:?}");
        }
        let mut wide = Cell::EMPTY;
        wide.set_symbol("コ");
        assert_eq!(one_cell_or_width(&wide, wide.symbol()), 2);
    }

    /// What the terminal showed before is not known: the first frame is sent whole, and so is
    /// the first after a resize (which clears the terminal).
    #[test]
    fn the_first_frame_and_the_one_after_a_resize_are_sent_whole() {
        use ratatui::backend::TestBackend;
        let backend = TestBackend::with_lines(["zzzzzz", "zzzzzz"]);
        let mut screen = Screen::new(Terminal::new(backend).unwrap());
        let ab = |f: &mut Frame| {
            f.buffer_mut()
                .set_string(0, 0, "ab", ratatui::style::Style::new());
        };
        screen.draw(ab).unwrap();
        screen.backend().assert_buffer_lines(["ab    ", "      "]);
        screen.resize(Rect::new(0, 0, 6, 2)).unwrap();
        screen.backend().assert_buffer_lines(["      ", "      "]);
        screen.draw(ab).unwrap();
        screen.backend().assert_buffer_lines(["ab    ", "      "]);
        assert_eq!(screen.frames(), 2);
    }

    /// The terminal keeps one buffer of the screen's size (the frame being drawn) beside
    /// `shown`, not ratatui's two: after drawing and after a resize.
    #[test]
    fn the_terminal_keeps_no_spare_buffer() {
        use ratatui::backend::TestBackend;
        let mut screen = Screen::new(Terminal::new(TestBackend::new(20, 5)).unwrap());
        let spare_len = |s: &mut Screen<TestBackend>| s.take_spare().content.len();
        screen.draw(|_| {}).unwrap();
        assert_eq!(spare_len(&mut screen), 0);
        screen.resize(Rect::new(0, 0, 10, 4)).unwrap();
        assert_eq!(spare_len(&mut screen), 0);
        screen.draw(|_| {}).unwrap();
        assert_eq!(screen.shown.content.len(), 40);
        assert_eq!(screen.terminal.current_buffer_mut().content.len(), 40);
    }
}
