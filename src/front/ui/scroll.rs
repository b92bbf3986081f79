//! Text longer than its pane, scrolled by lines: the pane draws from the offset the app state
//! holds, says on its bottom border that there is more, and reports how far it can scroll so
//! that `update` (the state's one writer) can keep the offset in range.
//!
//! The text is a `Doc`: its characters in one `String` and its styled pieces and lines as
//! ranges of it, kept by its pane from frame to frame, so that drawing the findings allocates
//! nothing once the document has grown to its size (a `Vec` of `Line`s of `Span`s, wrapped
//! into new ones, was a third of what a frame allocated). Pieces are drawn as ratatui's
//! `Span`s borrowing the document, cell for cell what a `Paragraph` of `Line`s drew.

use std::fmt::Write;

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::Span;
use ratatui::widgets::Widget;
use ratatui::Frame;

use super::border::Border;
use super::pen::{cols, one_cell_each, set_str};
use super::theme::Theme;

mod rows;
#[cfg(test)]
use rows::cell_width;
use rows::rows;

/// Lines of styled text for a scrolled pane.
#[derive(Debug, Default)]
pub struct Doc {
    text: String,
    /// Where each piece ends in `text`, and its style.
    pieces: Vec<(usize, Style)>,
    /// The first piece of each line, and the line's own style (laid under its pieces).
    lines: Vec<(usize, Style)>,
    /// Each line's hanging indent where one was set (`hang`); 0 or none: from its marker.
    hangs: Vec<u16>,
    /// The bottom border's "▼ 3 more lines", kept with the text.
    mark: String,
    /// How many rows each line wraps to, kept from the frame before.
    wrapped: Wrapped,
}

/// Each line's rows at one width, and the text they were counted on: a line unchanged since
/// the frame before is not wrapped again to count them. With 64 GPUs the findings run to
/// hundreds of lines, and wrapping all of them each frame to count the rows (and again up to
/// the offset) was a quarter of what drawing cost (callgrind, `--demo --gpus 64`).
#[derive(Debug, Default)]
struct Wrapped {
    /// The width counted at.
    width: usize,
    /// Whether they were counted on the text as it stands (none added since).
    fresh: bool,
    text: String,
    /// Each line's range in `text`, and its rows.
    lines: Vec<(std::ops::Range<usize>, usize)>,
}

impl Doc {
    /// Empties the document, keeping its buffers.
    pub fn clear(&mut self) {
        self.text.clear();
        self.pieces.clear();
        self.lines.clear();
        self.hangs.clear();
        self.wrapped.fresh = false;
    }
    /// Starts a line whose `style` lies under its pieces, as a `Line::styled`'s does.
    pub fn line(&mut self, style: Style) {
        self.wrapped.fresh = false;
        self.lines.push((self.pieces.len(), style));
    }
    /// Continues the current line's wrapped rows from column `n` (a table's second column),
    /// where its leading spaces and marker would not say where that is.
    pub fn hang(&mut self, n: u16) {
        self.wrapped.fresh = false;
        self.hangs.resize(self.lines.len(), 0);
        if let Some(last) = self.hangs.last_mut() {
            *last = n;
        }
    }
    /// Line `i`'s hanging indent, 0 where none was set.
    fn hang_of(&self, i: usize) -> usize {
        self.hangs.get(i).map_or(0, |&n| usize::from(n))
    }
    /// Adds `s` in `style` to the current line.
    pub fn push(&mut self, s: &str, style: Style) {
        self.wrapped.fresh = false;
        self.text.push_str(s);
        self.pieces.push((self.text.len(), style));
    }
    /// Adds formatted text in `style` to the current line.
    pub fn fmt(&mut self, args: std::fmt::Arguments<'_>, style: Style) {
        self.wrapped.fresh = false;
        let _ = self.text.write_fmt(args);
        self.pieces.push((self.text.len(), style));
    }
    /// A line of one piece in `style`: `Line::styled`.
    pub fn styled(&mut self, s: &str, style: Style) {
        self.line(style);
        self.push(s, Style::default());
    }
    /// A line of formatted text in `style`.
    pub fn styled_fmt(&mut self, args: std::fmt::Arguments<'_>, style: Style) {
        self.line(style);
        self.fmt(args, Style::default());
    }
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }
    /// How many lines it holds (the rows it takes where lines are cut, not wrapped).
    #[must_use]
    pub fn len(&self) -> usize {
        self.lines.len()
    }
    /// Keeps its first `n` lines.
    pub fn truncate(&mut self, n: usize) {
        let Some(&(first, _)) = self.lines.get(n) else {
            return;
        };
        self.text.truncate(self.piece_start(first));
        self.pieces.truncate(first);
        self.lines.truncate(n);
        self.hangs.truncate(n);
        self.wrapped.fresh = false;
    }

    /// Line `i`: its style, its pieces' range in `pieces`, and its text's range in `text`.
    fn line_at(&self, i: usize) -> (Style, std::ops::Range<usize>, std::ops::Range<usize>) {
        line_of(&self.lines, &self.pieces, i)
    }

    /// How many rows the document takes wrapped to `width` cells, each line's count kept for
    /// `draw_wrapped` and the next frame: a line equal to the same line of the frame before,
    /// at the same width, keeps its count.
    fn count_rows(&mut self, width: usize) -> usize {
        let Doc {
            text,
            pieces,
            lines,
            hangs,
            wrapped: w,
            ..
        } = self;
        let same_width = w.width == width;
        // Grown as the document's own buffers grew: no allocation of its own after theirs.
        w.text.reserve(text.capacity().saturating_sub(w.text.len()));
        w.lines
            .reserve(lines.capacity().saturating_sub(w.lines.len()));
        let mut total = 0;
        for i in 0..lines.len() {
            let range = line_of(lines, pieces, i).2;
            let line = &text[range.clone()];
            // Line `i` of the frame before is read before its place is taken.
            let before = w.lines.get(i).filter(|_| same_width);
            let kept = before.filter(|(r, _)| w.text.get(r.clone()) == Some(line));
            let hang = hangs.get(i).map_or(0, |&n| usize::from(n));
            let n = kept.map_or_else(|| rows(line, width, hang).count(), |k| k.1);
            match w.lines.get_mut(i) {
                Some(slot) => *slot = (range, n),
                None => w.lines.push((range, n)),
            }
            total += n;
        }
        w.lines.truncate(lines.len());
        w.text.clone_from(text);
        (w.width, w.fresh) = (width, true);
        total
    }

    /// Line `i`'s rows at `width`, if counted on the text as it stands.
    fn rows_of(&self, i: usize, width: usize) -> Option<usize> {
        let w = &self.wrapped;
        (w.fresh && w.width == width).then(|| w.lines[i].1)
    }
    /// Where piece `p` starts in `text`.
    fn piece_start(&self, p: usize) -> usize {
        p.checked_sub(1).map_or(0, |q| self.pieces[q].0)
    }
}

/// Line `i` of a document's `lines` over its `pieces`: its style, its pieces' range, and its
/// text's range.
fn line_of(
    lines: &[(usize, Style)],
    pieces: &[(usize, Style)],
    i: usize,
) -> (Style, std::ops::Range<usize>, std::ops::Range<usize>) {
    let (first, style) = lines[i];
    let last = lines.get(i + 1).map_or(pieces.len(), |l| l.0);
    let start = first.checked_sub(1).map_or(0, |p| pieces[p].0);
    let end = last
        .checked_sub(1)
        .map_or(start, |p| pieces[p].0.max(start));
    (style, first..last, start..end)
}

/// Draws `doc` wrapped inside `pane` from line `offset`; returns the largest useful offset
/// (0 when everything fits).
pub fn render(
    frame: &mut Frame,
    area: Rect,
    pane: Border<'_>,
    doc: &mut Doc,
    offset: usize,
    theme: &Theme,
) -> usize {
    let inner = Border::inner(area);
    // Rows counted without being built: only the visible ones are drawn.
    let total = doc.count_rows(usize::from(inner.width).max(1));
    let visible = inner.height as usize;
    let max = total.saturating_sub(visible);
    let offset = offset.min(max);
    doc.mark.clear();
    if max > 0 {
        let below = total - visible - offset;
        if below > 0 {
            let _ = write!(
                doc.mark,
                " ▼ {below} more line{} (↓) ",
                if below == 1 { "" } else { "s" }
            );
        } else {
            doc.mark.push_str(" ▲ end (↑) ");
        }
    }
    let doc = &*doc;
    let mut pane = pane;
    if !doc.mark.is_empty() {
        pane = pane.bottom(super::border::Title::Span(
            ratatui::text::Span::styled(doc.mark.as_str(), theme.title()),
            ratatui::layout::Alignment::Right,
        ));
    }
    pane.render(area, frame.buffer_mut());
    draw_wrapped(frame.buffer_mut(), inner, doc, offset);
    max
}

/// How many rows `doc` takes wrapped to `width` cells.
#[must_use]
pub fn wrapped_rows(doc: &Doc, width: usize) -> usize {
    (0..doc.lines.len())
        .map(|i| rows(&doc.text[doc.line_at(i).2], width.max(1), doc.hang_of(i)).count())
        .sum()
}

/// Draws `doc` wrapped inside `pane` from its first line, with no mark of more: a pane sized
/// to its text (the process's header), whose rows past its bottom are cut.
pub fn render_fixed(frame: &mut Frame, area: Rect, pane: Border<'_>, doc: &Doc) {
    pane.render(area, frame.buffer_mut());
    draw_wrapped(frame.buffer_mut(), Border::inner(area), doc, 0);
}

/// Draws `doc` wrapped into `area` from its first line, with no border: rows past its bottom
/// are cut.
pub fn render_plain(buf: &mut Buffer, area: Rect, doc: &Doc) {
    draw_wrapped(buf, area, doc, 0);
}

/// Draws each line of `doc` on one row inside `pane`, cut at its right edge: what a
/// `Paragraph` of the same lines draws without wrapping.
pub fn render_cut(frame: &mut Frame, area: Rect, pane: Border<'_>, doc: &Doc) {
    pane.render(area, frame.buffer_mut());
    let inner = Border::inner(area);
    let buf = frame.buffer_mut();
    for (i, y) in (0..doc.lines.len()).zip(inner.y..inner.bottom()) {
        let (style, pieces, _) = doc.line_at(i);
        let mut x = inner.x;
        for p in pieces {
            let text = &doc.text[doc.piece_start(p)..doc.pieces[p].0];
            let Some(next) = put_cut(buf, (x, y, inner), text, style.patch(doc.pieces[p].1)) else {
                break;
            };
            x = next;
        }
    }
}

/// One piece of a cut line from column `x`: its graphemes in `style`, as a `Paragraph`'s
/// truncating composer lays them (one wider than the whole row skipped, the first that does
/// not fit ending the line, those of no width left out). `None` once the line is full.
fn put_cut(
    buf: &mut Buffer,
    (x, y, inner): (u16, u16, Rect),
    text: &str,
    style: Style,
) -> Option<u16> {
    use ratatui::buffer::CellWidth;
    let mut x = x;
    if one_cell_each(text) {
        for c in text.chars() {
            if x >= inner.right() {
                return None;
            }
            buf[(x, y)].set_char(c).set_style(style);
            x += 1;
        }
        return Some(x);
    }
    for g in Span::styled(text, style).styled_graphemes(Style::default()) {
        let w = g.symbol.cell_width();
        if w > inner.width {
            continue;
        }
        if x + w > inner.right() {
            return None;
        }
        if w > 0 {
            let symbol = if g.symbol.is_empty() { " " } else { g.symbol };
            buf[(x, y)].set_symbol(symbol).set_style(g.style);
            x += w;
        }
    }
    Some(x)
}

/// The rows of `doc` from row `offset` on, wrapped into `inner`.
fn draw_wrapped(buf: &mut Buffer, inner: Rect, doc: &Doc, offset: usize) {
    let width = usize::from(inner.width).max(1);
    let mut y = inner.y;
    let mut skip = offset;
    'lines: for i in 0..doc.lines.len() {
        // A line counted whole above the offset is passed without wrapping it.
        if let Some(n) = doc.rows_of(i, width).filter(|&n| n <= skip) {
            skip -= n;
            continue;
        }
        let (style, pieces, range) = doc.line_at(i);
        let line = &doc.text[range.clone()];
        for row in rows(line, width, doc.hang_of(i)) {
            if skip > 0 {
                skip -= 1;
                continue;
            }
            if y >= inner.bottom() {
                break 'lines;
            }
            let area = Rect::new(inner.x, y, inner.width, 1);
            let at = |r: std::ops::Range<usize>| (range.start + r.start)..(range.start + r.end);
            let part = (at(row.text), row.indent, row.whole);
            draw_row(buf, area, doc, (style, pieces.clone()), part);
            y += 1;
        }
    }
}

/// What a continuation's indent is drawn from.
const SPACES: &str = "                                ";

/// Draws one row: a whole line as ratatui draws a `Line` (its style over the row, then its
/// pieces), a wrapped row as the `Line` of runs it was wrapped into (its indent, then its
/// characters in runs of one style, the line's style under each).
fn draw_row(
    buf: &mut Buffer,
    area: Rect,
    doc: &Doc,
    (style, pieces): (Style, std::ops::Range<usize>),
    (text, indent, whole): (std::ops::Range<usize>, Option<usize>, bool),
) {
    // The pieces of the row as (text range, style): the line's own pieces when whole, else
    // runs of one style (the line's under the piece's).
    let parts = pieces.filter_map(|p| {
        let (a, b) = (
            doc.piece_start(p).max(text.start),
            doc.pieces[p].0.min(text.end),
        );
        let st = doc.pieces[p].1;
        (a < b || whole).then_some((a..b.max(a), if whole { st } else { style.patch(st) }))
    });
    let width = |r: &std::ops::Range<usize>| cols(&doc.text[r.clone()]);
    let indent = indent.unwrap_or(0);
    // A `Line` without width draws nothing, not even its style.
    if indent + parts.clone().map(|(r, _)| width(&r)).sum::<usize>() == 0 {
        return;
    }
    if whole {
        buf.set_style(area, style);
    }
    let mut x = area.x;
    let mut put = |buf: &mut Buffer, s: &str, st: Style| {
        let w = cols(s);
        // A `Line` skips pieces without width, and stops at its area's edge.
        if w == 0 || x >= area.right() {
            return;
        }
        if one_cell_each(s) {
            // What the `Span` draws, cell by cell, for text of one cell per character.
            set_str(buf, x, area.y, s, usize::from(area.right() - x), st);
        } else {
            Span::styled(s, st).render(Rect::new(x, area.y, area.right() - x, 1), buf);
        }
        x = x.saturating_add(u16::try_from(w).unwrap_or(u16::MAX));
    };
    let mut left = indent;
    while left > 0 {
        let n = left.min(SPACES.len());
        put(buf, &SPACES[..n], Style::default());
        left -= n;
    }
    if whole {
        for (r, st) in parts {
            put(buf, &doc.text[r], st);
        }
        return;
    }
    // Consecutive pieces of one style are one run, as the wrapped `Line` had them.
    let mut run: Option<(std::ops::Range<usize>, Style)> = None;
    for (r, st) in parts {
        match &mut run {
            Some((r0, s0)) if *s0 == st => r0.end = r.end,
            _ => {
                if let Some((r0, s0)) = run.replace((r, st)) {
                    put(buf, &doc.text[r0], s0);
                }
            }
        }
    }
    if let Some((r0, s0)) = run {
        put(buf, &doc.text[r0], s0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::backend::TestBackend;
    use ratatui::style::{Color, Modifier};
    use ratatui::text::Line;
    use ratatui::Terminal;

    /// `s` as one plain line, wrapped: each row's text as drawn.
    fn wrapped(s: &str, width: usize) -> Vec<String> {
        rows(s, width, 0)
            .map(|r| " ".repeat(r.indent.unwrap_or(0)) + &s[r.text])
            .collect()
    }

    /// "4.9 │ kJ": a row's end fell between a number and its unit (a helper's find).
    #[test]
    fn a_row_never_ends_between_a_number_and_its_unit() {
        let l = "  energy: 4.9 kJ over 30 s while it held, 163 W mean";
        for width in 12..l.len() {
            let rows = wrapped(l, width);
            for (a, b) in rows.iter().zip(&rows[1..]) {
                let unit = b.trim_start().split(' ').next().unwrap();
                assert!(
                    !(a.trim_end().ends_with(|c: char| c.is_ascii_digit())
                        && ["kJ", "s", "W"].contains(&unit)),
                    "at {width}: {rows:?}"
                );
            }
        }
        // At 14 it read "  energy: 4.9 " and "kJ over 30 s ".
        assert_eq!(wrapped(l, 14)[..2], ["  energy: ", "    4.9 kJ "]);
    }

    #[test]
    fn wrapped_evidence_keeps_its_indent_and_advice_hangs_past_its_arrow() {
        let l = "   power 121 W = 17 % of the 700 W TDP, +2 W from the idle floor";
        assert_eq!(
            wrapped(l, 30),
            [
                "   power 121 W = 17 % of the ",
                "     700 W TDP, +2 W from the ",
                "     idle floor"
            ]
        );
        let l = "   → Make hangs fail loudly: TORCH_NCCL_ASYNC_ERROR_HANDLING=1";
        assert_eq!(
            wrapped(l, 32),
            [
                "   → Make hangs fail loudly: ",
                "       TORCH_NCCL_ASYNC_ERROR_HA",
                "       NDLING=1"
            ]
        );
        assert_eq!(wrapped("fits", 10), ["fits"]);
        // A word that ends at the edge stays on its row (it went down with the space before it).
        assert_eq!(wrapped("ab cd ef", 5), ["ab cd", " ef"]);
        assert_eq!(wrapped("CPU 97% · GPU", 9), ["CPU 97% ·", "  GPU"]);
    }

    /// What the pane drew before it kept a `Doc`: `Line`s wrapped into new `Line`s of runs of
    /// one style, each drawn by ratatui. The reference the `Doc` is held to, cell by cell.
    #[allow(clippy::too_many_lines)] // the old wrapping kept whole, as it was, so it can be the reference
    fn hang_into<'a>(line: Line<'a>, width: usize, out: &mut Vec<Line<'a>>) {
        let fits = line
            .spans
            .iter()
            .map(|s| s.content.chars().map(cell_width).sum::<usize>())
            .sum::<usize>()
            <= width;
        if fits {
            out.push(line);
            return;
        }
        let cells: Vec<(char, Style)> = line
            .spans
            .iter()
            .flat_map(|s| {
                s.content
                    .chars()
                    .map(move |c| (c, line.style.patch(s.style)))
            })
            .collect();
        let lead = cells.iter().take_while(|(c, _)| *c == ' ').count();
        let marker = cells[lead..]
            .iter()
            .position(|(c, _)| *c == ' ')
            .filter(|&m| {
                m <= 2
                    && cells[lead..lead + m]
                        .iter()
                        .all(|(c, _)| !c.is_alphanumeric())
            })
            .map_or(0, |m| m + 1);
        let indent = (lead + marker + 2).min(width / 3);
        // Where a space may break: not between a number and its unit.
        let text: String = cells.iter().map(|(c, _)| *c).collect();
        let breaks: Vec<bool> = text
            .char_indices()
            .map(|(b, c)| c == ' ' && crate::text::breaks_at(&text, b))
            .collect();
        let (mut start, mut first) = (0, true);
        while start < cells.len() {
            let room = if first { width } else { width - indent };
            let (mut used, mut end, mut last_space) = (0, start, None);
            while end < cells.len() && used + cell_width(cells[end].0) <= room {
                if breaks[end] {
                    last_space = Some(end);
                }
                used += cell_width(cells[end].0);
                end += 1;
            }
            if end < cells.len() && !breaks[end] {
                if let Some(sp) = last_space.filter(|&sp| sp > start) {
                    end = sp + 1;
                }
            }
            if end == start {
                end = start + 1;
            }
            let mut spans = Vec::new();
            if !first {
                spans.push(Span::raw(" ".repeat(indent)));
            }
            let mut runs: Vec<Span<'static>> = Vec::new();
            for (c, st) in &cells[start..end] {
                match runs.last_mut() {
                    Some(last) if last.style == *st => last.content.to_mut().push(*c),
                    _ => runs.push(Span::styled(c.to_string(), *st)),
                }
            }
            spans.extend(runs);
            out.push(Line::from(spans));
            start = end;
            while start < cells.len() && cells[start].0 == ' ' {
                start += 1;
            }
            first = false;
        }
    }

    /// Lines of every kind a pane shows, and the text that has tripped panes before: a styled
    /// head, evidence in pieces of several styles, advice behind an arrow, CJK, emoji, a
    /// zero-width joiner, a combining mark, control characters, spaces only, nothing at all.
    fn samples() -> Vec<Vec<(&'static str, Style, Style)>> {
        let red = Style::default().fg(Color::Red).add_modifier(Modifier::BOLD);
        let dim = Style::default().fg(Color::DarkGray);
        let blue = Style::default().fg(Color::Blue);
        let n = Style::default();
        vec![
            vec![("‼ GPU 3 HANG · Busy but idle: GPU hung · 41s", red, n)],
            vec![("   ", n, n), ("util 100 % for 25 s while power sat at 121 W = 17 % of the 700 W TDP, +2 W from this GPU's idle floor", n, dim)],
            vec![("   → ", n, blue), ("Make hangs fail loudly: TORCH_NCCL_ASYNC_ERROR_HANDLING=1 and a NCCL timeout", n, n)],
            vec![("   ", dim, n), ("python train.py --config 訓練設定.yaml 🚀🚀 family 👨‍👩‍👧 café", dim, blue)],
            vec![("  - ", n, n), ("tab\there, escape \u{1b}[31m and bell \u{7}, then a very long word: ", n, n), ("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", red, blue)],
            vec![("", n, n)],
            vec![("      ", red, n)],
            vec![("✓ nothing wrong seen: every GPU that looks busy is doing work", dim, n)],
            vec![("x", n, n), ("", red, n), ("\u{200b}", n, red), ("y z", n, dim)],
        ]
    }

    fn draw(width: u16, height: u16, f: impl FnOnce(&mut Frame)) -> ratatui::buffer::Buffer {
        let mut term = Terminal::new(TestBackend::new(width, height)).unwrap();
        term.draw(f).unwrap();
        term.backend().buffer().clone()
    }

    /// `render_cut` draws what a `Paragraph` of the same lines drew without wrapping, cell for
    /// cell, at widths from 1 to 62 and at heights that cut the lines off at the bottom.
    #[test]
    fn a_cut_doc_draws_what_an_unwrapped_paragraph_drew() {
        let lines = samples();
        let mut doc = Doc::default();
        for l in &lines {
            doc.line(l[0].1);
            for (t, _, st) in l {
                doc.push(t, *st);
            }
        }
        for width in 1..=62u16 {
            for height in [1, 3, 7, 12] {
                let area = Rect::new(0, 0, width, height);
                let old = draw(width, height, |f| {
                    let text: Vec<Line> = lines
                        .iter()
                        .map(|l| {
                            Line::from(
                                l.iter()
                                    .map(|(t, _, st)| Span::styled(*t, *st))
                                    .collect::<Vec<_>>(),
                            )
                            .style(l[0].1)
                        })
                        .collect();
                    let block = ratatui::widgets::Block::bordered();
                    f.render_widget(ratatui::widgets::Paragraph::new(text).block(block), area);
                });
                let new = draw(width, height, |f| {
                    render_cut(f, area, Border::new("", Style::default()), &doc);
                });
                assert_eq!(new, old, "width {width}, height {height}");
            }
        }
    }

    /// A document kept from frame to frame (its rows counted on the frame before) draws what
    /// one filled afresh draws, as lines change, come, go and move, the width changes and the
    /// offset moves, and says the same scroll limit.
    #[test]
    fn a_kept_doc_draws_what_a_fresh_one_draws() {
        let theme = Theme { color: true };
        let n = Style::default();
        let fill = |doc: &mut Doc, frame: usize| {
            doc.clear();
            let lines = samples();
            let len = lines.len();
            // Rotated, one line left out, and one line's text changed each frame.
            for (k, l) in lines.iter().cycle().skip(frame % len).take(len).enumerate() {
                if k == frame % 4 {
                    continue;
                }
                doc.line(l[0].1);
                for (t, _, st) in l {
                    doc.push(t, *st);
                }
                if k == frame % 3 {
                    doc.fmt(format_args!(" ({frame}s ago, and a few more words)"), n);
                }
            }
        };
        let mut kept = Doc::default();
        for frame in 0..40 {
            let width = [20u16, 20, 20, 33, 33, 61, 7][frame % 7];
            let offset = [0, 2, 5, 9, 40][frame % 5];
            let area = Rect::new(0, 0, width, 12);
            let mut max = [0, 0];
            let mut screens = Vec::new();
            for (which, doc) in [&mut kept, &mut Doc::default()].into_iter().enumerate() {
                fill(doc, frame);
                let pane = Border::new("", n);
                screens.push(draw(width, 12, |f| {
                    max[which] = render(f, area, pane, doc, offset, &theme);
                }));
            }
            assert_eq!(max[0], max[1], "frame {frame}");
            assert_eq!(screens[0], screens[1], "frame {frame}");
            // Drawn from an offset without counting, after the text changed: the counts of
            // the text before are not used (`render` counts first; this draws directly).
            let inner = Border::inner(area);
            let direct: Vec<_> = [&mut kept, &mut Doc::default()]
                .into_iter()
                .map(|doc| {
                    fill(doc, frame + 1);
                    draw(width, 12, |f| {
                        draw_wrapped(f.buffer_mut(), inner, doc, offset);
                    })
                })
                .collect();
            assert_eq!(
                direct[0], direct[1],
                "frame {frame}, drawn without counting"
            );
        }
    }

    /// Every cell and style the `Doc` draws equals what the wrapped `Line`s drew, at widths
    /// from 1 to 60 and every offset, and the scroll limit is the same.
    #[test]
    fn a_doc_draws_what_the_wrapped_lines_drew() {
        let theme = Theme { color: true };
        let lines = samples();
        for width in 3..=62u16 {
            for offset in [0, 1, 3, 7, 40] {
                let area = Rect::new(0, 0, width, 12);
                let mut old_max = 0;
                let old = draw(width, 12, |f| {
                    let block = ratatui::widgets::Block::bordered();
                    let inner = block.inner(area);
                    let w = usize::from(inner.width).max(1);
                    let mut wrapped = Vec::new();
                    for l in &lines {
                        let line = Line::from(
                            l.iter()
                                .map(|(t, _, st)| Span::styled(*t, *st))
                                .collect::<Vec<_>>(),
                        )
                        .style(l[0].1);
                        hang_into(line, w, &mut wrapped);
                    }
                    let total = wrapped.len();
                    old_max = total.saturating_sub(inner.height as usize);
                    let offset = offset.min(old_max);
                    f.render_widget(block, area);
                    for (row, line) in (inner.y..inner.bottom()).zip(wrapped.iter().skip(offset)) {
                        f.render_widget(line, Rect::new(inner.x, row, inner.width, 1));
                    }
                });
                let mut new_max = 0;
                let new = draw(width, 12, |f| {
                    let mut doc = Doc::default();
                    for l in &lines {
                        doc.line(l[0].1);
                        for (t, _, st) in l {
                            doc.push(t, *st);
                        }
                    }
                    new_max = render(
                        f,
                        area,
                        Border::new("", Style::default()),
                        &mut doc,
                        offset,
                        &theme,
                    );
                });
                assert_eq!(new_max, old_max, "width {width}");
                // Inside the border (the reference drew no "more lines" mark on it).
                for y in 1..11 {
                    for x in 1..width - 1 {
                        assert_eq!(
                            new[(x, y)],
                            old[(x, y)],
                            "width {width}, offset {offset}, cell {x},{y}"
                        );
                    }
                }
            }
        }
    }
}
