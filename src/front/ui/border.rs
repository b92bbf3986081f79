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
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Widget};

pub struct Border<'a> {
    title: Title<'a>,
    bottom: Option<Title<'a>>,
    style: Style,
}

/// What a border's title is. A `Line` owns a `Vec` of its spans, made anew each frame; a title
/// of one span, or of spans the caller keeps in an array, needs none.
#[allow(clippy::large_enum_variant)] // on the stack for one draw: boxing the pieces is the allocation avoided
pub enum Title<'a> {
    /// Placed by the line's own alignment.
    Line(Line<'a>),
    /// One span, from the left or ending at the right.
    Span(Span<'a>, Alignment),
    /// A few spans held in place, from the left or ending at the right.
    Pieces(Pieces<'a>, Alignment),
}

/// Up to `Pieces::MAX` spans in an array: a title of a few styled pieces without a `Vec`.
#[derive(Default)]
pub struct Pieces<'a> {
    spans: [Span<'a>; Pieces::MAX],
    len: usize,
}

impl<'a> Pieces<'a> {
    /// The most pieces a title has: the chart's (its GPU, four metrics, the current finding).
    pub const MAX: usize = 6;

    /// `span` after the others; one past `MAX` would be a programming error, and is dropped.
    pub fn push(&mut self, span: Span<'a>) {
        debug_assert!(
            self.len < Self::MAX,
            "a title of more than {} pieces",
            Self::MAX
        );
        if let Some(slot) = self.spans.get_mut(self.len) {
            *slot = span;
            self.len += 1;
        }
    }

    #[must_use]
    pub fn as_slice(&self) -> &[Span<'a>] {
        &self.spans[..self.len]
    }
}

impl<'a> From<Line<'a>> for Title<'a> {
    fn from(line: Line<'a>) -> Self {
        Title::Line(line)
    }
}

impl<'a> From<Span<'a>> for Title<'a> {
    fn from(span: Span<'a>) -> Self {
        Title::Span(span, Alignment::Left)
    }
}

impl<'a> From<&'a str> for Title<'a> {
    fn from(text: &'a str) -> Self {
        Title::Span(Span::raw(text), Alignment::Left)
    }
}

impl From<String> for Title<'_> {
    fn from(text: String) -> Self {
        Title::Span(Span::raw(text), Alignment::Left)
    }
}

impl<'a> Border<'a> {
    /// A pane titled `title` whose border is drawn in `border`.
    #[must_use]
    pub fn new(title: impl Into<Title<'a>>, border: Style) -> Self {
        Border {
            title: title.into(),
            bottom: None,
            style: border,
        }
    }

    /// A title on the bottom border.
    #[must_use]
    pub fn bottom(mut self, title: impl Into<Title<'a>>) -> Self {
        self.bottom = Some(title.into());
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
        if let Some(t) = &self.bottom {
            title(buf, row(bottom), t);
        }
    }
}

fn title(buf: &mut Buffer, row: Rect, title: &Title) {
    match title {
        Title::Line(line) => title_line(buf, row, line),
        Title::Span(span, alignment) => {
            title_spans(buf, row, std::slice::from_ref(span), *alignment);
        }
        Title::Pieces(pieces, alignment) => title_spans(buf, row, pieces.as_slice(), *alignment),
    }
}

/// Spans where `Block` puts a line of them with `alignment`. Those that fit, and those that
/// do not from the left (cut at the right, as `Line::render` cuts them), are drawn here; a
/// centred title, or a right one cut at its left, goes through a `Line` as before.
fn title_spans(buf: &mut Buffer, row: Rect, spans: &[Span], alignment: Alignment) {
    if row.is_empty() {
        return;
    }
    let width: usize = spans.iter().map(Span::width).sum();
    let x = match alignment {
        Alignment::Left => row.left(),
        Alignment::Right if width <= usize::from(row.width) => {
            row.right() - u16::try_from(width).unwrap_or(u16::MAX)
        }
        _ => {
            let line = Line::from(spans.to_vec()).alignment(alignment);
            return title_line(buf, row, &line);
        }
    };
    let at = Rect {
        x,
        width: u16::try_from(width).unwrap_or(u16::MAX).min(row.width),
        ..row
    };
    super::pen::put_spans(buf, at, spans);
}

/// Writes `line` into `row` where `Block` puts a title of its alignment: from the left, or
/// ending at the right (clipped as `Block` clips it). A centred one is left to `Block`.
fn title_line(buf: &mut Buffer, row: Rect, line: &Line) {
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

    const YELLOW: Style = Style::new().fg(Color::Yellow);
    const RED: Style = Style::new().fg(Color::Red);

    /// Title `top` as given to `Border`, and as the line given to `Block`: left-aligned,
    /// centred, of styled pieces under a style of its own, one span, `Pieces` without a `Line`.
    fn titles<'a>(top: u8, two: &'a [Span<'a>]) -> (Title<'a>, Line<'a>) {
        let line = match top {
            0 | 3 => Line::styled(" GPUs (8) ", YELLOW),
            1 => Line::from(" ECC ok ").centered(),
            2 => Line::from(two.to_vec()).style(Style::default().bg(Color::Blue)),
            _ => Line::from(two.to_vec()),
        };
        let ours = match top {
            3 => Span::styled(" GPUs (8) ", YELLOW).into(),
            4 => {
                let mut pieces = Pieces::default();
                for s in two {
                    pieces.push(s.clone());
                }
                Title::Pieces(pieces, Alignment::Left)
            }
            _ => line.clone().into(),
        };
        (ours, line)
    }

    /// A bottom mark ending at the right: a right-aligned line, or (`span`) one span.
    fn marks<'a>(span: bool) -> (Title<'a>, Line<'a>) {
        let line = Line::styled(" ▼ 3 more ", RED).right_aligned();
        let ours = if span {
            Title::Span(Span::styled(" ▼ 3 more ", RED), Alignment::Right)
        } else {
            line.clone().into()
        };
        (ours, line)
    }

    /// Every size from 0×0 to 7×4 and two wider, each title above (some wider than the
    /// pane), with and without a bottom mark, on a buffer with something already in it,
    /// inside the buffer and across its right and bottom edges: the same cells and styles as
    /// `Block::bordered()` with the same titles as lines, and the same inner area.
    #[test]
    fn draws_what_a_bordered_block_draws() {
        let border = Style::default().fg(Color::Cyan);
        let two = [
            Span::styled(" GPU 0 ", YELLOW),
            Span::raw("· ok "),
            Span::styled("", RED),
            Span::styled("界 x", RED),
        ];
        let sizes = (0..=7)
            .chain([12, 16])
            .flat_map(|w| (0..=4).map(move |h| (w, h)));
        let tops = [
            (false, 0),
            (true, 0),
            (true, 1),
            (true, 2),
            (false, 3),
            (true, 4),
        ];
        for ((w, h), (x, y)) in sizes.flat_map(|s| [(1, 1), (5, 3)].map(|at| (s, at))) {
            for (with_mark, top) in tops {
                let area = Rect::new(x, y, w, h);
                let mut theirs = Buffer::empty(Rect::new(0, 0, 20, 6));
                let green = Style::default().fg(Color::Green);
                theirs.set_string(0, 2, "0123456789abcdefghij", green);
                let mut ours = theirs.clone();
                let (title, line) = titles(top, &two);
                let mut block = Block::default()
                    .borders(Borders::ALL)
                    .title(line)
                    .border_style(border);
                let mut pane = Border::new(title, border);
                if with_mark {
                    let (mark, line) = marks(top >= 3);
                    block = block.title_bottom(line);
                    pane = pane.bottom(mark);
                }
                assert_eq!(Border::inner(area), block.inner(area), "{w}×{h} at {x},{y}");
                block.render(area, &mut theirs);
                pane.render(area, &mut ours);
                let case = format!("{w}×{h} at {x},{y}, mark {with_mark}, title {top}");
                assert_eq!(ours, theirs, "{case}");
            }
        }
    }
}
