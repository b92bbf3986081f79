//! Every key, in an overlay.

use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Clear, Paragraph};
use ratatui::Frame;

use super::theme::Theme;

/// The keys, as README's table shows them too.
pub const KEYS: [(&str, &str); 19] = [
    (
        "↑ ↓  j k",
        "move in the focused pane (GPUs, findings, processes)",
    ),
    ("PgUp PgDn Home End", "move faster"),
    ("Tab  Shift-Tab", "next / previous pane"),
    ("1 – 9", "select a GPU"),
    (
        "Enter",
        "open the selected process (focuses the process table first)",
    ),
    ("Esc", "back to the main screen; clears the filter"),
    (
        "+  -",
        "zoom the chart out / in (30 s up to the whole history)",
    ),
    ("space", "pause the display; sampling continues"),
    ("s  S", "cycle the sort column / reverse it"),
    ("/", "filter processes by pid, user or command"),
    ("e", "export a snapshot"),
    (
        "K  F9",
        "send a signal (TERM, INT, KILL) to the selected process, after asking",
    ),
    (
        "mouse",
        "click a GPU or process row to select it; wheel scrolls",
    ),
    ("?", "this help"),
    ("q  Ctrl-C", "quit"),
    ("Ctrl-Z", "suspend to the shell (fg resumes)"),
    ("", ""),
    (
        "badges",
        "‼ critical  ! warning  i info  … 6/10s judging  ✓ ok",
    ),
    (
        "chart",
        "━ util ━ power %TDP ━ SM active ━ memory; ▀ under the axis: a busy-but-idle finding",
    ),
];

pub fn render(frame: &mut Frame, area: Rect, theme: &Theme) {
    let w = 96.min(area.width);
    let h = (KEYS.len() as u16 + 2).min(area.height);
    let r = Rect {
        x: area.x + (area.width - w) / 2,
        y: area.y + (area.height - h) / 2,
        width: w,
        height: h,
    };
    let lines: Vec<Line> = KEYS
        .iter()
        .map(|(k, what)| Line::raw(format!(" {k:<20} {what}")))
        .collect();
    frame.render_widget(Clear, r);
    frame.render_widget(
        Paragraph::new(lines).block(
            Block::default()
                .borders(Borders::ALL)
                .title(" keys (Esc closes) ")
                .border_style(theme.focus_border()),
        ),
        r,
    );
}
