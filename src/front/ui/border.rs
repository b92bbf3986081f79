//! A bordered pane with a title on its top border and, at times, a mark on its bottom one:
//! what ratatui's `Block` with `Borders::ALL` draws, cell for cell, without first laying the
//! block's style (the default, which changes nothing) over every cell of its area. `Block`
//! does that for each pane of each frame, a write to every cell of the screen (10 000 at
//! 200×50): 8 % of the drawing thread's time (perf, docs/performance.md). The titles land and
//! clip where `Block` puts them.

use ratatui::buffer::Buffer;
use ratatui::layout::{Alignment, Rect};
use ratatui::style::Style;
use ratatui::symbols::border::PLAIN;
use ratatui::text::Line;
use ratatui::widgets::{Block, Widget};

pub struct Border<'a> {
    title: Line<'a>,
    bottom: Option<Line<'a>>,
    style: Style,
}

impl<'a> Border<'a> {
    /// A pane titled `title` whose border is drawn in `border`.
    #[must_use]
    pub fn new(title: impl Into<Line<'a>>, border: Style) -> Self {
        Border {
            title: title.into(),
            bottom: None,
            style: border,
        }
    }

    /// A title on the bottom border (its alignment its own).
    #[must_use]
    pub fn bottom(mut self, line: Line<'a>) -> Self {
        self.bottom = Some(line);
        self
    }

    /// Where the pane's content goes: inside the border.
    #[must_use]
    pub fn inner(area: Rect) -> Rect {
        let mut inner = area;
        inner.x = inner.x.saturating_add(1).min(inner.right());
        inner.width = inner.width.saturating_sub(1);
        inner.y = inner.y.saturating_add(1).min(inner.bottom());
        inner.height = inner.height.saturating_sub(1);
        inner.width = inner.width.saturating_sub(1);
        inner.height = inner.height.saturating_sub(1);
        inner
    }

    /// Draws the border and the titles over `area`, in `Block`'s order: the sides, then the
    /// corners, then the top titles and the bottom ones (in a pane one row high the corners
    /// and the bottom title are what stays, as with `Block`).
    pub fn render(self, area: Rect, buf: &mut Buffer) {
        let area = area.intersection(buf.area);
        if area.is_empty() {
            return;
        }
        let (left, top) = (area.left(), area.top());
        let (right, bottom) = (area.right() - 1, area.bottom() - 1);
        let mut put = |x: u16, y: u16, symbol: &str| {
            buf[(x, y)].set_symbol(symbol).set_style(self.style);
        };
        for y in top..=bottom {
            put(left, y, PLAIN.vertical_left);
        }
        for x in left..=right {
            put(x, top, PLAIN.horizontal_top);
        }
        for y in top..=bottom {
            put(right, y, PLAIN.vertical_right);
        }
        for x in left..=right {
            put(x, bottom, PLAIN.horizontal_bottom);
        }
        put(right, bottom, PLAIN.bottom_right);
        put(right, top, PLAIN.top_right);
        put(left, bottom, PLAIN.bottom_left);
        put(left, top, PLAIN.top_left);
        let row = |y: u16| Rect::new(left.saturating_add(1), y, area.width.saturating_sub(2), 1);
        title(buf, row(top), &self.title);
        if let Some(line) = &self.bottom {
            title(buf, row(bottom), line);
        }
    }
}

/// Writes `line` into `row` where `Block` puts a title of its alignment: from the left, or
/// ending at the right (clipped as `Block` clips it). A centred one is left to `Block`.
fn title(buf: &mut Buffer, row: Rect, line: &Line) {
    if row.is_empty() {
        return;
    }
    let width = u16::try_from(line.width()).unwrap_or(u16::MAX);
    let x = match line.alignment {
        Some(Alignment::Center) => {
            Block::new().title(line.clone()).render(row, buf);
            return;
        }
        Some(Alignment::Right) => row.right().saturating_sub(width).max(row.left()),
        _ => row.left(),
    };
    let at = Rect {
        x,
        width: width.min(row.width),
        ..row
    };
    // An area of the line's own width when it fits: drawn from its left, whatever its alignment.
    super::pen::put_line(buf, at, line);
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::style::Color;
    use ratatui::widgets::Borders;

    /// Every size from 0×0 to 7×4 and two wider, a title wider than some of them (left-aligned,
    /// centred, or of two styled pieces under a style of its own),
    /// with and without a right-aligned bottom mark, on a buffer with something already in it,
    /// inside the buffer and across its right and bottom edges: the same cells and styles as
    /// `Block::bordered()` and the same inner area.
    #[test]
    fn draws_what_a_bordered_block_draws() {
        let border = Style::default().fg(Color::Cyan);
        let title = || Line::styled(" GPUs (8) ", Style::default().fg(Color::Yellow));
        let centred = || Line::from(" ECC ok ").centered();
        let mark = || Line::styled(" ▼ 3 more ", Style::default().fg(Color::Red)).right_aligned();
        let pieces = || {
            Line::from(vec![
                ratatui::text::Span::styled(" GPU 0 ", Style::default().fg(Color::Yellow)),
                ratatui::text::Span::raw("· ok "),
            ])
            .style(Style::default().bg(Color::Blue))
        };
        let sizes = (0..=7)
            .chain([12, 16])
            .flat_map(|w| (0..=4).map(move |h| (w, h)));
        for ((w, h), (x, y)) in sizes.flat_map(|s| [(1, 1), (5, 3)].map(|at| (s, at))) {
            for (with_mark, top) in [(false, 0), (true, 0), (true, 1), (true, 2)] {
                let title = || match top {
                    0 => title(),
                    1 => centred(),
                    _ => pieces(),
                };
                let area = Rect::new(x, y, w, h);
                let mut theirs = Buffer::empty(Rect::new(0, 0, 20, 6));
                theirs.set_string(
                    0,
                    2,
                    "0123456789abcdefghij",
                    Style::default().fg(Color::Green),
                );
                let mut ours = theirs.clone();
                let mut block = Block::default()
                    .borders(Borders::ALL)
                    .title(title())
                    .border_style(border);
                let mut pane = Border::new(title(), border);
                if with_mark {
                    block = block.title_bottom(mark());
                    pane = pane.bottom(mark());
                }
                assert_eq!(Border::inner(area), block.inner(area), "{w}×{h} at {x},{y}");
                block.render(area, &mut theirs);
                pane.render(area, &mut ours);
                assert_eq!(
                    ours, theirs,
                    "{w}×{h} at {x},{y}, mark {with_mark}, title {top}"
                );
            }
        }
    }
}
