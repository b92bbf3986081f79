//! Text longer than its pane, scrolled by lines: the pane draws from the offset the app state
//! holds, says on its bottom border that there is more, and reports how far it can scroll so
//! that `update` (the state's one writer) can keep the offset in range.

use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::{Block, Paragraph, Wrap};
use ratatui::Frame;

use super::theme::Theme;

/// Draws `lines` wrapped inside `block` from line `offset`; returns the largest useful offset
/// (0 when everything fits).
pub fn render(
    frame: &mut Frame,
    area: Rect,
    block: Block<'static>,
    lines: Vec<Line<'static>>,
    offset: usize,
    theme: &Theme,
) -> usize {
    let inner = block.inner(area);
    let para = Paragraph::new(lines).wrap(Wrap { trim: false });
    let total = para.line_count(inner.width);
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
    frame.render_widget(
        para.block(block)
            .scroll((offset.min(u16::MAX as usize) as u16, 0)),
        area,
    );
    max
}
