//! A line of text written straight into the frame's buffer, piece by piece, left to right and
//! clipped at its right edge: what a `Paragraph` of `Span`s drew, without a `String`, a `Span`
//! and a `Vec` for every piece of every frame (most of what a frame allocated).

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
            text: String::with_capacity(64),
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

/// True when every byte of `s` is printable ASCII: one character, one column, one cell.
pub fn printable_ascii(s: &str) -> bool {
    s.bytes().all(|b| (0x20..0x7f).contains(&b))
}

/// The columns `s` takes: its length for printable ASCII (nearly all the screen's text),
/// else its Unicode width.
#[must_use]
pub fn cols(s: &str) -> usize {
    if printable_ascii(s) {
        s.len()
    } else {
        unicode_width::UnicodeWidthStr::width(s)
    }
}

/// `Buffer::set_stringn`: `s` at (`x`, `y`) in at most `max` columns, clipped at the buffer's
/// edge; returns the column after it. Printable ASCII goes straight into the row's cells:
/// splitting it into graphemes and looking up their widths was 17 % of a frame (200×50, 8
/// GPUs, 2026-12-03) for what is one cell per byte.
pub fn set_str(buf: &mut Buffer, x: u16, y: u16, s: &str, max: usize, style: Style) -> u16 {
    if !printable_ascii(s) {
        return buf.set_stringn(x, y, s, max, style).0;
    }
    let room = usize::from(buf.area.right().saturating_sub(x)).min(max);
    let n = s.len().min(room);
    // A row outside the buffer draws nothing (`set_stringn` would panic on its first cell).
    if n == 0 || !buf.area.contains(ratatui::layout::Position::new(x, y)) {
        return x;
    }
    let start = buf.index_of(x, y);
    for (cell, b) in buf.content[start..start + n].iter_mut().zip(s.bytes()) {
        cell.set_char(char::from(b)).set_style(style);
    }
    // `n` is at most the room left on a row of a `u16`-wide buffer.
    x + u16::try_from(n).unwrap_or(u16::MAX)
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
        assert!(!printable_ascii("tab\there"));
    }
}
