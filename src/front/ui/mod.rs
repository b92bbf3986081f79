//! Drawing: `render` lays the screen out and each pane draws itself as a pure function of the
//! app state and what was observed. Nothing here changes state except the hit areas a click
//! needs, which `render` returns.

mod badge;
mod border;
mod chart;
mod findings;
mod format;
mod header;
mod help;
mod overview;
mod pen;
mod plot;
mod process_curves;
mod process_view;
mod processes;
mod scroll;
mod split;
mod stacks;
mod status;
mod strips;
pub mod theme;

use ratatui::layout::{Constraint, Rect};
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};
use ratatui::Frame;

use crate::app::{AppState, HitAreas, View, SIGNALS};
use crate::store::Store;
use theme::Theme;

pub use badge::diagnosis_text;
pub use status::clock_shown;

/// Every key and what it does, as the help overlay lists them.
pub fn help_keys() -> impl Iterator<Item = &'static str> {
    help::KEYS.iter().map(|k| k.keys)
}

/// README's key table as the one key table writes it (a test keeps README in step).
pub fn help_markdown() -> String {
    help::markdown_table()
}

/// Every key with what it does, then every symbol with what it means (the manual's KEYS).
pub fn help_table() -> (
    impl Iterator<Item = (&'static str, &'static str)>,
    impl Iterator<Item = (&'static str, &'static str)>,
) {
    (
        help::KEYS.iter().map(|k| (k.keys, k.does)),
        help::LEGEND.iter().copied(),
    )
}

pub const MIN_WIDTH: u16 = 80;
pub const MIN_HEIGHT: u16 = 24;

/// Draws the whole screen; returns where clickable rows landed.
pub fn render(frame: &mut Frame, state: &AppState, store: &Store) -> HitAreas {
    let area = frame.area();
    let theme = Theme { color: state.color };
    if area.width < MIN_WIDTH || area.height < MIN_HEIGHT {
        let msg = format!("gpuwatch needs at least {MIN_WIDTH}×{MIN_HEIGHT}; this terminal is {}×{}. Enlarge it, or press q to quit.", area.width, area.height);
        frame.render_widget(Paragraph::new(msg).wrap(Wrap { trim: true }), area);
        return HitAreas {
            too_small: true,
            ..HitAreas::default()
        };
    }
    let stop = status::stop_doc(state, store, area.width);
    let status_rows = stop.as_ref().map_or(1, |(_, rows)| *rows);
    let [head, body, status] = split::vertical(
        [
            Constraint::Length(1),
            Constraint::Min(0),
            Constraint::Length(status_rows),
        ],
        area,
    );
    header::render(frame, head, state, store, &theme);
    let mut hits = match state.view {
        View::Main | View::Help => main_screen(frame, body, state, store, &theme),
        View::Process { device, pid } => HitAreas {
            process_findings_max: process_view::render(
                frame, body, state, store, device, pid, &theme,
            ),
            ..HitAreas::default()
        },
    };
    match &stop {
        Some((doc, _)) => scroll::render_plain(frame.buffer_mut(), status, doc),
        None => status::render(frame, status, state, store, &theme),
    }
    if state.view == View::Help {
        hits.help_max = help::render(frame, body, state.help_scroll, &theme);
    }
    if let Some(prompt) = &state.kill {
        kill_prompt(frame, body, prompt, &theme);
    }
    hits
}

/// Rows the chart needs to say anything (borders, a line of plot, the axis and its labels).
const CHART_MIN_ROWS: u16 = 5;

/// How the main screen's rows are shared: every GPU gets a row before the chart gets any; the
/// GPU table loses its borders (one title line) before it loses a GPU; what does not fit
/// scrolls, with the flagged GPUs named in its title.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Rows {
    overview: u16,
    compact: bool,
    lower: u16,
}

fn share_rows(height: u16, width: u16, gpus: u16) -> Rows {
    let gpus = gpus.max(1);
    let lower = match (height >= 40, width >= 150) {
        (true, true) => 16,
        (true, false) => 20,
        (false, _) if height >= 28 => 10,
        (false, _) => 8,
    };
    let room = height.saturating_sub(lower + CHART_MIN_ROWS);
    // Bordered (title, header and two borders) when every GPU fits so; else the header line
    // over the rows, no borders; when even that does not fit, a line naming the flagged GPUs
    // over the header, and the rows scroll.
    if gpus + 3 <= room {
        return Rows {
            overview: gpus + 3,
            compact: false,
            lower,
        };
    }
    Rows {
        overview: if gpus < room { gpus + 1 } else { room.max(3) },
        compact: true,
        lower,
    }
}

fn main_screen(
    frame: &mut Frame,
    area: Rect,
    state: &AppState,
    store: &Store,
    theme: &Theme,
) -> HitAreas {
    let gpus = store.history().devices.len() as u16;
    let rows = share_rows(area.height, area.width, gpus);
    let side_by_side = area.width >= 150;
    // The findings pane, focused on a terminal under 40 rows, grows into the chart's rows:
    // forty lines of evidence do not read through a slot of two.
    let grow = state.focus == crate::app::Pane::Findings && area.height < 40 && !side_by_side;
    let [ov, chart_area, lower] = split::vertical(
        [
            Constraint::Length(rows.overview),
            Constraint::Min(0),
            Constraint::Length(rows.lower),
        ],
        area,
    );
    let drawn = overview::render(frame, ov, state, store, rows.compact, theme);
    let mut chart_points = 0;
    let lower = if grow {
        Rect {
            y: chart_area.y,
            height: chart_area.height + lower.height,
            ..lower
        }
    } else {
        if chart_area.height > 0 {
            chart_points = chart::render(frame, chart_area, state, store, theme);
        }
        lower
    };
    let (find_area, proc_area) = if side_by_side {
        let [a, b] = split::horizontal(
            [Constraint::Percentage(45), Constraint::Percentage(55)],
            lower,
        );
        (a, b)
    } else {
        // Grown, the findings leave the processes a row to show (borders, header, one).
        let [a, b] = if grow {
            split::vertical([Constraint::Min(0), Constraint::Length(4)], lower)
        } else {
            split::vertical(
                [Constraint::Percentage(50), Constraint::Percentage(50)],
                lower,
            )
        };
        (a, b)
    };
    let findings_max = findings::render(frame, find_area, state, store, theme);
    let (proc_rows, processes_first) = processes::render(frame, proc_area, state, store, theme);
    HitAreas {
        overview: (drawn.top, drawn.rows),
        overview_first: drawn.first,
        processes: (proc_area.y + 2, proc_rows),
        processes_first,
        findings_max,
        chart_points,
        ..HitAreas::default()
    }
}

fn kill_prompt(frame: &mut Frame, area: Rect, prompt: &crate::app::KillPrompt, theme: &Theme) {
    let w = 60.min(area.width);
    let r = Rect {
        x: area.x + (area.width - w) / 2,
        y: area.y + area.height / 3,
        width: w,
        height: 5,
    };
    let signals: Vec<String> = SIGNALS
        .iter()
        .enumerate()
        .map(|(i, (n, _))| {
            if i == prompt.signal {
                format!("[{n}]")
            } else {
                format!(" {n} ")
            }
        })
        .collect();
    let lines = vec![
        Line::raw(format!(
            "Send a signal to pid {} ({})?",
            prompt.pid,
            format::clip(&prompt.command, 30)
        )),
        Line::raw(format!(
            "signal: {}   ←/→ choose · y/Enter send · n/Esc cancel",
            signals.join("")
        )),
    ];
    frame.render_widget(Clear, r);
    frame.render_widget(
        Paragraph::new(lines).block(
            Block::default()
                .borders(Borders::ALL)
                .title(" send signal ")
                .border_style(theme.severity(crate::rules::Severity::Warning)),
        ),
        r,
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_gpu_gets_a_row_before_the_chart_grows() {
        // 80×24: 22 rows under the header; 8 GPUs in one title line + 8 rows.
        let r = share_rows(22, 80, 8);
        assert_eq!((r.overview, r.compact), (9, true));
        assert!(22 - r.overview - r.lower >= CHART_MIN_ROWS);
        // 100×30 and 120×40: bordered, every GPU.
        assert_eq!(
            share_rows(28, 100, 8),
            Rows {
                overview: 11,
                compact: false,
                lower: 10
            }
        );
        assert_eq!(share_rows(38, 120, 8).overview, 11);
        // 64 GPUs at 80×24: as many as fit, the chart keeps its minimum.
        let r = share_rows(22, 80, 64);
        assert_eq!(r.overview, 22 - r.lower - CHART_MIN_ROWS);
    }
}
