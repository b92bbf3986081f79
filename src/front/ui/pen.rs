//! A line of text written straight into the frame's buffer, piece by piece, left to right and
//! clipped at its right edge: what a `Paragraph` of `Span`s drew, without a `String`, a `Span`
//! and a `Vec` for every piece of every frame (most of what a frame allocated).

use std::cell::RefCell;
use std::fmt::Write;

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;

pub struct Pen<'b> {
    buf: &'b mut Buffer,
    left: u16,
    right: u16,
    x: u16,
    y: u16,
    /// The piece being formatted: kept from piece to piece and row to row.
    pub text: String,
}

impl<'b> Pen<'b> {
    /// A pen at the top left of `area`, writing no further right than its right edge.
    pub fn new(buf: &'b mut Buffer, area: Rect) -> Self {
        Pen {
            buf,
            left: area.x,
            right: area.right(),
            x: area.x,
            y: area.y,
            text: kept_string(),
        }
    }

    /// Goes to the start of screen row `y`; `style` (if any) is laid over the whole row first,
    /// under what is written, as a `Line`'s own style was.
    pub fn row(&mut self, y: u16, style: Option<Style>) {
        (self.x, self.y) = (self.left, y);
        if let Some(style) = style {
            let area = Rect::new(self.left, y, self.right - self.left, 1);
            self.buf.set_style(area, style);
        }
    }

    /// Writes `s` in `style` where the last piece ended.
    pub fn put(&mut self, s: &str, style: Style) {
        let room = usize::from(self.right.saturating_sub(self.x));
        if room > 0 {
            self.x = set_str(self.buf, self.x, self.y, s, room, style);
        }
    }

    /// Writes what `text` holds (and empties it).
    pub fn put_text(&mut self, style: Style) {
        let text = std::mem::take(&mut self.text);
        self.put(&text, style);
        self.text = text;
        self.text.clear();
    }

    /// Formats and writes one piece.
    pub fn fmt(&mut self, args: std::fmt::Arguments<'_>, style: Style) {
        self.text.clear();
        let _ = self.text.write_fmt(args);
        self.put_text(style);
    }
}

impl Drop for Pen<'_> {
    fn drop(&mut self) {
        give_back(std::mem::take(&mut self.text));
    }
}

thread_local! {
    /// Strings that text is formatted into while drawing, kept from frame to frame: once they
    /// have grown to the longest text they hold, formatting allocates nothing.
    static KEPT: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
}

fn kept_string() -> String {
    let mut s = KEPT.with_borrow_mut(Vec::pop).unwrap_or_default();
    s.clear();
    s
}

fn give_back(s: String) {
    if s.capacity() > 0 {
        KEPT.with_borrow_mut(|kept| kept.push(s));
    }
}

/// Runs `f` with `N` empty strings kept from frame to frame, to format a frame's text into
/// without allocating it anew each frame.
pub fn with_strings<const N: usize, R>(f: impl FnOnce(&mut [String; N]) -> R) -> R {
    let mut strings: [String; N] = std::array::from_fn(|_| kept_string());
    let r = f(&mut strings);
    strings.into_iter().for_each(give_back);
    r
}

/// `v`'s allocation, emptied, as a `Vec` of another type of the same size and alignment (the
/// same rows of another frame's lifetime): collecting an emptied `vec::IntoIter` through `map`
/// reuses its buffer. Of any other type, the buffer is freed and an empty `Vec` returned.
pub fn recycled<T, U>(mut v: Vec<T>) -> Vec<U> {
    v.clear();
    v.into_iter().map(|_| unreachable!("emptied")).collect()
}

/// True when every character of `s` takes one cell and stands alone as a grapheme: one
/// character, one column, one cell, whatever comes before or after it. Printable ASCII, and
/// the symbols the screen draws with (Latin-1 letters, dashes, the middle dot, arrows, box
/// drawing, blocks, triangles, braille): none of them is a control character, a combining
/// mark or a joiner, none extends the character before it, and none is drawn as a wide emoji.
pub fn one_cell_each(s: &str) -> bool {
    s.chars().all(one_cell)
}

/// See `one_cell_each`. `set_str_draws_what_set_stringn_draws` holds every character here
/// to what ratatui's grapheme and width rules make of it.
fn one_cell(c: char) -> bool {
    matches!(c,
        ' '..='~'
        // Latin-1 without the soft hyphen (a format character).
        | '\u{a0}'..='\u{ac}' | '\u{ae}'..='\u{ff}'
        // Dashes, quotes, bullets, the ellipsis; not the separators or joiners around them.
        | '\u{2010}'..='\u{2027}' | '\u{2030}'..='\u{203b}'
        | '\u{2190}'..='\u{2193}'
        // Box drawing, block elements, geometric shapes up to ◁ (none drawn as emoji).
        | '\u{2500}'..='\u{25c1}' | '\u{25cb}' | '\u{2713}'
        | '\u{2800}'..='\u{28ff}')
}

/// The columns `s` takes: its character count when each is one cell (nearly all the screen's
/// text), else its Unicode width.
#[must_use]
pub fn cols(s: &str) -> usize {
    if s.is_ascii() && s.bytes().all(|b| (0x20..0x7f).contains(&b)) {
        s.len()
    } else if one_cell_each(s) {
        s.chars().count()
    } else {
        unicode_width::UnicodeWidthStr::width(s)
    }
}

/// `Buffer::set_stringn`: `s` at (`x`, `y`) in at most `max` columns, clipped at the buffer's
/// edge; returns the column after it. Text of one cell per character goes straight into the
/// row's cells: splitting it into graphemes and looking up their widths was 17 % of a frame
/// (200×50, 8 GPUs, 2026-12-03) for what is one cell per byte, and the titles' middle dots and
/// the strips' blocks still took that path (run 42).
pub fn set_str(buf: &mut Buffer, x: u16, y: u16, s: &str, max: usize, style: Style) -> u16 {
    if !one_cell_each(s) {
        return buf.set_stringn(x, y, s, max, style).0;
    }
    let room = usize::from(buf.area.right().saturating_sub(x)).min(max);
    let n = s.chars().count().min(room);
    // A row outside the buffer draws nothing (`set_stringn` would panic on its first cell).
    if n == 0 || !buf.area.contains(ratatui::layout::Position::new(x, y)) {
        return x;
    }
    let start = buf.index_of(x, y);
    for (cell, c) in buf.content[start..start + n].iter_mut().zip(s.chars()) {
        cell.set_char(c).set_style(style);
    }
    // `n` is at most the room left on a row of a `u16`-wide buffer.
    x + u16::try_from(n).unwrap_or(u16::MAX)
}

/// Draws `line` in `area` as `Line::render` draws it: its style laid over the area, then each
/// span in its style, one-cell text written with `set_str` and anything else by `Span::render`
/// itself, each span placed where its width says. Only a line that fits and starts at the
/// area's left (left-aligned, or exactly as wide as the area) is drawn here; any other is left
/// to `Line::render`, which places and clips it by its alignment.
pub fn put_line(buf: &mut Buffer, area: Rect, line: &ratatui::text::Line) {
    use ratatui::layout::Alignment;
    use ratatui::widgets::Widget as _;
    let area = area.intersection(buf.area);
    if area.is_empty() {
        return;
    }
    let area = Rect { height: 1, ..area };
    let (width, room) = (line.width(), usize::from(area.width));
    let from_left = matches!(line.alignment, None | Some(Alignment::Left)) || width == room;
    if width > room || !from_left {
        line.render(area, buf);
        return;
    }
    if width == 0 {
        return;
    }
    buf.set_style(area, line.style);
    put_spans(buf, area, &line.spans);
}

/// `spans` one after another from the left of `area` (one row), each in its style and placed
/// where the widths before it say, cut at the area's right edge as `Line::render` cuts a
/// left-aligned line: a span that no longer fits is drawn as far as it goes (one-cell text cell
/// by cell, anything else by `Span::render`, which drops a wide character that would cross the
/// edge), and nothing after it.
pub fn put_spans(buf: &mut Buffer, area: Rect, spans: &[ratatui::text::Span]) {
    use ratatui::widgets::Widget;
    let area = area.intersection(buf.area);
    if area.is_empty() {
        return;
    }
    let area = Rect { height: 1, ..area };
    let mut x = area.x;
    for span in spans {
        let w = span.width();
        // As `Line::render`: a span without width is skipped, and the next one goes where
        // this one's width ends (a control character counts one column but draws nothing).
        if w == 0 {
            continue;
        }
        if x >= area.right() {
            break;
        }
        if one_cell_each(&span.content) {
            set_str(
                buf,
                x,
                area.y,
                &span.content,
                usize::from(area.right() - x),
                span.style,
            );
        } else {
            span.render(Rect::new(x, area.y, area.right() - x, 1), buf);
        }
        x = x.saturating_add(u16::try_from(w).unwrap_or(u16::MAX));
    }
}

/// Draws `text` in `area` aligned as `Line::raw(text).alignment(alignment).render` draws it,
/// without the `Line`: one-cell text that fits is placed by its alignment; anything else is
/// left to `Line::render`.
pub fn put_aligned(
    buf: &mut Buffer,
    area: Rect,
    text: &str,
    alignment: ratatui::layout::Alignment,
    style: Style,
) {
    use ratatui::layout::Alignment;
    let area = area.intersection(buf.area);
    let width = text.chars().count();
    let room = usize::from(area.width);
    if !one_cell_each(text) || width > room {
        use ratatui::widgets::Widget;
        let line = ratatui::text::Line::styled(text, style).alignment(alignment);
        return line.render(area, buf);
    }
    if area.is_empty() || width == 0 {
        return;
    }
    let indent = match alignment {
        Alignment::Center => (room - width) / 2,
        Alignment::Right => room - width,
        Alignment::Left => 0,
    };
    // `Line::styled` lays its style over the whole row it is given, then writes the text.
    buf.set_style(Rect { height: 1, ..area }, style);
    let x = area.x + u16::try_from(indent).unwrap_or(u16::MAX);
    set_str(buf, x, area.y, text, width, Style::default());
}

/// `s` onto `out` cut to `n` characters with an ellipsis, then padded with spaces to `pad`
/// characters: `format!("{:<pad$}", clip(s, n))` without the two strings.
pub fn push_fit(out: &mut String, s: &str, n: usize, pad: usize) {
    let len = s.chars().count();
    let written = if len <= n {
        out.push_str(s);
        len
    } else {
        out.extend(s.chars().take(n.saturating_sub(1)));
        out.push('…');
        n.max(1)
    };
    out.extend(std::iter::repeat_n(' ', pad.saturating_sub(written)));
}

/// `s` in capitals onto `out` (`to_uppercase` without the string).
pub fn push_upper(out: &mut String, s: &str) {
    out.extend(s.chars().flat_map(char::to_uppercase));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fitted_piece_is_clipped_with_an_ellipsis_and_padded() {
        let fit = |s: &str, n, pad| {
            let mut out = String::new();
            push_fit(&mut out, s, n, pad);
            out
        };
        assert_eq!(fit("H200", 5, 5), "H200 ");
        assert_eq!(fit("H100 80GB HBM3", 5, 5), "H100…");
        assert_eq!(fit("ok", 5, 0), "ok");
        assert_eq!(fit("", 3, 3), "   ");
        assert_eq!(
            fit("H100 80GB HBM3", 5, 5),
            format!("{:<5}", crate::text::clip("H100 80GB HBM3", 5))
        );
    }

    #[test]
    fn a_pen_writes_pieces_in_a_row_and_stops_at_the_edge() {
        let mut buf = Buffer::empty(Rect::new(0, 0, 10, 2));
        let mut pen = Pen::new(&mut buf, Rect::new(1, 0, 8, 2));
        pen.row(1, None);
        pen.put("ab", Style::default());
        pen.fmt(format_args!("{:>4}", 7), Style::default());
        pen.put("xyz", Style::default());
        drop(pen);
        assert_eq!(buf, Buffer::with_lines(["          ", " ab   7xy "]));
    }

    /// The ASCII path writes what `set_stringn` writes, cell for cell, wherever it starts and
    /// however much room it has; other text goes through `set_stringn` itself.
    #[test]
    fn set_str_draws_what_set_stringn_draws() {
        use ratatui::style::{Color, Modifier};
        let texts = [
            "",
            "a",
            "GPU 0  util 100 %",
            "tab\there",
            "bell\u{7}x",
            "\r\nend",
            "déjà vu",
            "日本語",
            "e\u{301}t\u{e9}",
            "~!@#$%^&*()_+{}|:<>?",
            " GPU 0 · H200 · 12.3 kJ – ok… ",
            "━━╸ ▲▼ ▁▂▃▄▅▆▇█ ⣿⠒ ← → ✓ ○",
            "· e\u{301} ·",
        ];
        let styles = [
            Style::default(),
            Style::default().fg(Color::Red).add_modifier(Modifier::BOLD),
        ];
        for text in texts {
            for style in styles {
                for x in [0u16, 3, 9, 11] {
                    for max in [0usize, 1, 4, 40] {
                        let area = Rect::new(0, 0, 12, 2);
                        let (mut theirs, mut ours) = (Buffer::empty(area), Buffer::empty(area));
                        // A styled background under the text, so skipped cells show.
                        theirs.set_string(0, 1, "0123456789ab", Style::default().fg(Color::Green));
                        ours.set_string(0, 1, "0123456789ab", Style::default().fg(Color::Green));
                        let end = theirs.set_stringn(x, 1, text, max, style).0;
                        assert_eq!(
                            set_str(&mut ours, x, 1, text, max, style),
                            end,
                            "{text:?} at {x} in {max}"
                        );
                        assert_eq!(ours, theirs, "{text:?} at {x} in {max}");
                    }
                }
            }
        }
        assert_eq!(cols("util 100 %"), 10);
        assert_eq!(cols("日本"), 4);
        assert!(!one_cell_each("tab\there"));
    }

    /// Lines of styled pieces (one-cell text, a tab, a leading combining accent, wide
    /// characters, a piece without width), each alignment, in areas that fit them, that do
    /// not, that cross the buffer's edges or have no height: what `Line::render` draws.
    /// Aligned text in areas wider, as wide and narrower than it, at the buffer's edge and
    /// outside it, cell for cell what `Line::render` draws.
    #[test]
    fn put_aligned_draws_what_an_aligned_line_draws() {
        use ratatui::layout::Alignment;
        use ratatui::style::{Color, Modifier};
        use ratatui::widgets::Widget;
        let style = Style::new().fg(Color::Red).add_modifier(Modifier::BOLD);
        for text in ["now", "-30s", "100%", "-15m00s", "", "日本", "a·b"] {
            for alignment in [Alignment::Left, Alignment::Center, Alignment::Right] {
                for area in [
                    Rect::new(0, 0, 10, 1),
                    Rect::new(3, 1, 4, 2),
                    Rect::new(7, 0, 6, 1),
                    Rect::new(2, 0, 3, 1),
                    Rect::new(12, 0, 3, 1),
                ] {
                    for style in [Style::default(), style] {
                        let mut ours = Buffer::empty(Rect::new(0, 0, 12, 3));
                        let mut theirs = ours.clone();
                        put_aligned(&mut ours, area, text, alignment, style);
                        ratatui::text::Line::styled(text, style)
                            .alignment(alignment)
                            .render(area, &mut theirs);
                        assert_eq!(ours, theirs, "{text:?} {alignment:?} {area:?} {style:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn put_line_draws_what_line_render_draws() {
        use ratatui::layout::Alignment;
        use ratatui::style::{Color, Modifier};
        use ratatui::text::{Line, Span};
        use ratatui::widgets::Widget;
        let red = Style::default().fg(Color::Red);
        let lines = [
            vec![Span::styled(" GPU 0 ", red), Span::raw("· ok ")],
            vec![Span::raw("a\tb"), Span::styled("c", red)],
            vec![Span::styled("\u{301}x", red), Span::raw("y")],
            vec![Span::raw("日本"), Span::raw(""), Span::styled("z", red)],
        ];
        let alignments = [None, Some(Alignment::Right), Some(Alignment::Center)];
        let areas = [
            Rect::new(1, 1, 14, 1),
            Rect::new(1, 1, 4, 1),
            Rect::new(8, 1, 12, 2),
            Rect::new(1, 0, 14, 0),
            Rect::new(2, 2, 5, 1),
        ];
        for spans in &lines {
            for alignment in alignments {
                let line = Line {
                    spans: spans.clone(),
                    style: Style::default()
                        .bg(Color::Blue)
                        .add_modifier(Modifier::BOLD),
                    alignment,
                };
                // And one exactly as wide as its area, as a border's title gets.
                let exact = Rect::new(3, 1, u16::try_from(line.width()).unwrap(), 1);
                for area in areas.into_iter().chain([exact]) {
                    let buffer = Rect::new(0, 0, 16, 3);
                    let (mut theirs, mut ours) = (Buffer::empty(buffer), Buffer::empty(buffer));
                    theirs.set_string(0, 1, "0123456789abcdef", Style::default().fg(Color::Green));
                    ours.set_string(0, 1, "0123456789abcdef", Style::default().fg(Color::Green));
                    line.clone().render(area, &mut theirs);
                    put_line(&mut ours, area, &line);
                    assert_eq!(ours, theirs, "{line:?} in {area:?}");
                }
            }
        }
    }

    /// Every character the direct path takes is one column wide, and a row of all of them,
    /// in one order and the other (each next to its neighbours in code order, both ways),
    /// draws as `set_stringn` draws it: none joins its neighbour into one grapheme (each is
    /// of the grapheme class Other, which breaks from anything but an extender, and no
    /// extender is among them).
    #[test]
    fn every_one_cell_character_is_one_cell_between_its_neighbours() {
        let all: String = (0..=0x2fff_u32)
            .filter_map(char::from_u32)
            .filter(|&c| one_cell(c))
            .collect();
        for c in all.chars() {
            assert_eq!(unicode_width::UnicodeWidthChar::width(c), Some(1), "{c:?}");
        }
        let reversed: String = all.chars().rev().collect();
        for text in [all.as_str(), reversed.as_str()] {
            let n = text.chars().count();
            let area = Rect::new(0, 0, u16::try_from(n).unwrap() + 2, 1);
            let (mut theirs, mut ours) = (Buffer::empty(area), Buffer::empty(area));
            let end = theirs.set_stringn(1, 0, text, n, Style::default()).0;
            assert_eq!(set_str(&mut ours, 1, 0, text, n, Style::default()), end);
            assert_eq!(ours, theirs);
            assert_eq!(cols(text), n);
        }
    }
}
