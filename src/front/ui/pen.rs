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
            self.x = self.buf.set_stringn(self.x, self.y, s, room, style).0;
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
}
