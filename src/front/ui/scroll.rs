//! Text longer than its pane, scrolled by lines: the pane draws from the offset the app state
//! holds, says on its bottom border that there is more, and reports how far it can scroll so
//! that `update` (the state's one writer) can keep the offset in range.

use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::Block;
use ratatui::Frame;
use unicode_width::UnicodeWidthChar;

use super::theme::Theme;

/// Draws `lines` wrapped inside `block` from line `offset`; returns the largest useful offset
/// (0 when everything fits).
pub fn render(
    frame: &mut Frame,
    area: Rect,
    block: Block<'static>,
    lines: Vec<Line<'_>>,
    offset: usize,
    theme: &Theme,
) -> usize {
    let inner = block.inner(area);
    let width = usize::from(inner.width).max(1);
    // Wrapped here, once: every line then fits, so the pane draws only the lines it shows. (A
    // `Paragraph` with wrapping segmented all of the text into graphemes twice a frame, once to
    // count its lines and once to draw: half of a frame's instructions.)
    let mut wrapped = Vec::with_capacity(lines.len());
    for line in lines {
        hang_into(line, width, &mut wrapped);
    }
    let total = wrapped.len();
    let visible = inner.height as usize;
    let max = total.saturating_sub(visible);
    let offset = offset.min(max);
    let mut block = block;
    if max > 0 {
        let below = total - visible - offset;
        let mark = match (offset > 0, below > 0) {
            (_, true) => format!(
                " ▼ {below} more line{} (↓) ",
                if below == 1 { "" } else { "s" }
            ),
            (true, false) => " ▲ end (↑) ".to_string(),
            (false, false) => String::new(),
        };
        block = block.title_bottom(Line::styled(mark, theme.title()).right_aligned());
    }
    frame.render_widget(block, area);
    for (row, line) in (inner.y..inner.bottom()).zip(wrapped.iter().skip(offset)) {
        frame.render_widget(line, Rect::new(inner.x, row, inner.width, 1));
    }
    max
}

/// `line` wrapped to `width` cells at spaces, each continuation indented past the line's own
/// leading spaces and marker ("   → ", "  - "), so that a wrapped piece of evidence still reads
/// as part of the item above it. Styles stay with their characters.
#[cfg(test)]
#[must_use]
pub fn hang(line: Line<'static>, width: usize) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    hang_into(line, width, &mut out);
    out
}

fn cell_width(c: char) -> usize {
    c.width().unwrap_or(0)
}

/// `hang`, adding to `out`. A line that fits is moved as it is, without looking at its
/// characters one by one.
pub fn hang_into<'a>(line: Line<'a>, width: usize, out: &mut Vec<Line<'a>>) {
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
    let w = cell_width;
    // Indent: the leading spaces, and a marker after them ("→", "-", "‼": one or two cells,
    // no letter or digit).
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
    let mut start = 0;
    let mut first = true;
    while start < cells.len() {
        let room = if first { width } else { width - indent };
        // The longest run that fits, cut at its last space (or mid-word if it has none).
        let mut used = 0;
        let mut end = start;
        let mut last_space = None;
        while end < cells.len() && used + w(cells[end].0) <= room {
            if cells[end].0 == ' ' {
                last_space = Some(end);
            }
            used += w(cells[end].0);
            end += 1;
        }
        if end < cells.len() {
            if let Some(sp) = last_space.filter(|&sp| sp > start) {
                end = sp + 1;
            }
        }
        // A character wider than the whole room still moves on (never an endless loop).
        if end == start {
            end = start + 1;
        }
        let mut spans = Vec::new();
        if !first {
            spans.push(Span::raw(" ".repeat(indent)));
        }
        spans.extend(runs(&cells[start..end]));
        out.push(Line::from(spans));
        start = end;
        // The spaces a break fell on are not carried to the next line.
        while start < cells.len() && cells[start].0 == ' ' {
            start += 1;
        }
        first = false;
    }
}

/// Consecutive characters of one style, as spans.
fn runs(cells: &[(char, Style)]) -> Vec<Span<'static>> {
    let mut spans: Vec<Span<'static>> = Vec::new();
    for (c, st) in cells {
        match spans.last_mut() {
            Some(last) if last.style == *st => last.content.to_mut().push(*c),
            _ => spans.push(Span::styled(c.to_string(), *st)),
        }
    }
    spans
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(lines: &[Line]) -> Vec<String> {
        lines.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn wrapped_evidence_keeps_its_indent_and_advice_hangs_past_its_arrow() {
        let l = Line::raw("   power 121 W = 17 % of the 700 W TDP, +2 W from the idle floor");
        assert_eq!(
            text(&hang(l, 30)),
            [
                "   power 121 W = 17 % of the ",
                "     700 W TDP, +2 W from the ",
                "     idle floor"
            ]
        );
        let l = Line::raw("   → Make hangs fail loudly: TORCH_NCCL_ASYNC_ERROR_HANDLING=1");
        assert_eq!(
            text(&hang(l, 32)),
            [
                "   → Make hangs fail loudly: ",
                "       TORCH_NCCL_ASYNC_ERROR_HA",
                "       NDLING=1"
            ]
        );
        let short = Line::raw("fits");
        assert_eq!(text(&hang(short, 10)), ["fits"]);
    }
}
