//! Open findings in their severity's style with a marker that needs no colour, their evidence
//! and the first thing to do; recently cleared findings dimmed below.

use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::Frame;

use super::format::duration;
use super::theme::Theme;
use crate::app::{AppState, Pane};
use crate::store::StoreView;

/// Draws the findings from the state's line offset; returns how far the pane can scroll.
pub fn render(
    frame: &mut Frame,
    area: Rect,
    state: &AppState,
    obs: &StoreView,
    theme: &Theme,
) -> usize {
    let active = obs.findings().active();
    let now = obs.history().latest_ms().unwrap_or(0);
    let focused = state.focus == Pane::Findings;
    let title = format!(" Findings ({} open) ", active.len());
    let block = theme.pane(title, focused);
    let mut lines: Vec<Line<'static>> = Vec::new();
    let judging: Vec<_> = obs.findings().pending().collect();
    for j in &judging {
        lines.push(Line::styled(
            format!(
                "… GPU {} {}: no verdict yet",
                j.device,
                crate::report::judging_text(j)
            ),
            theme.dim(),
        ));
    }
    if active.is_empty() && judging.is_empty() {
        lines.push(Line::styled(
            "✓ nothing wrong seen: every GPU that looks busy is doing work",
            theme.dim(),
        ));
    }
    for f in active {
        let head = format!(
            "{} GPU {} {} · {} · {}",
            f.severity.marker(),
            f.device,
            f.rule.to_uppercase(),
            f.title,
            duration(now.saturating_sub(f.since_ms))
        );
        lines.push(Line::styled(head, theme.severity(f.severity)));
        for e in &f.evidence {
            lines.push(Line::from(vec![Span::raw("   "), Span::raw(e.clone())]));
        }
        if let Some(a) = f.actions.first() {
            lines.push(Line::from(vec![
                Span::styled("   → ", theme.title()),
                Span::raw(a.clone()),
            ]));
        }
    }
    for f in obs.findings().cleared().iter().rev().take(5) {
        let ago = duration(now.saturating_sub(f.cleared_ms.unwrap_or(now)));
        lines.push(Line::styled(
            format!(
                "✓ GPU {} {} cleared {ago} ago (lasted {})",
                f.device,
                f.rule,
                duration(f.cleared_ms.unwrap_or(now).saturating_sub(f.since_ms))
            ),
            theme.dim(),
        ));
    }
    super::scroll::render(frame, area, block, lines, state.findings_scroll, theme)
}
