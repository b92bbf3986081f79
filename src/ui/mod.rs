//! Drawing: `render` lays the screen out and each pane draws itself as a pure function of the
//! app state and what was observed. Nothing here changes state except the hit areas a click
//! needs, which `render` returns.

mod chart;
mod findings;
mod format;
mod header;
mod help;
mod overview;
mod process_view;
mod processes;
pub mod theme;

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};
use ratatui::Frame;

use crate::app::{AppState, HitAreas, View, SIGNALS};
use crate::store::StoreView;
use theme::Theme;

/// Every key and what it does, as the help overlay lists them.
#[must_use]
pub fn help_keys() -> &'static [(&'static str, &'static str)] {
    &help::KEYS
}

pub const MIN_WIDTH: u16 = 80;
pub const MIN_HEIGHT: u16 = 24;

/// Draws the whole screen; returns where clickable rows landed.
pub fn render(frame: &mut Frame, state: &AppState, obs: &StoreView) -> HitAreas {
    let area = frame.area();
    let theme = Theme { color: state.color };
    if area.width < MIN_WIDTH || area.height < MIN_HEIGHT {
        let msg = format!("gpuwatch needs at least {MIN_WIDTH}×{MIN_HEIGHT}; this terminal is {}×{}. Enlarge it, or press q to quit.", area.width, area.height);
        frame.render_widget(Paragraph::new(msg).wrap(Wrap { trim: true }), area);
        return HitAreas::default();
    }
    let [head, body, status] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Min(0),
        Constraint::Length(1),
    ])
    .areas(area);
    header::render(frame, head, state, obs, &theme);
    let hits = match state.view {
        View::Main | View::Help => main_screen(frame, body, state, obs, &theme),
        View::Process { device, pid } => {
            process_view::render(frame, body, state, obs, device, pid, &theme);
            HitAreas::default()
        }
    };
    status_line(frame, status, state, obs, &theme);
    if state.view == View::Help {
        help::render(frame, body, &theme);
    }
    if let Some(prompt) = &state.kill {
        kill_prompt(frame, body, prompt, &theme);
    }
    hits
}

fn main_screen(
    frame: &mut Frame,
    area: Rect,
    state: &AppState,
    obs: &StoreView,
    theme: &Theme,
) -> HitAreas {
    let gpus = obs.history().devices.len() as u16;
    // Rows for each pane; the chart takes what is left. At 80×24 the overview shows two GPUs
    // (it scrolls); from 40 rows up it shows up to 8, and wide screens put findings beside processes.
    let big = area.height >= 40;
    let overview_rows = gpus.clamp(1, if big { 8 } else { 2 });
    let side_by_side = area.width >= 150;
    let lower_h = match (big, side_by_side) {
        (true, true) => 16,
        (true, false) => 20,
        (false, _) => 10,
    };
    let [ov, chart_area, lower] = Layout::vertical([
        Constraint::Length(overview_rows + 3),
        Constraint::Min(7),
        Constraint::Length(lower_h),
    ])
    .areas(area);
    let overview_rows_drawn = overview::render(frame, ov, state, obs, theme);
    chart::render(frame, chart_area, state, obs, theme);
    let (find_area, proc_area) = if side_by_side {
        let [a, b] = Layout::horizontal([Constraint::Percentage(45), Constraint::Percentage(55)])
            .areas(lower);
        (a, b)
    } else {
        let [a, b] =
            Layout::vertical([Constraint::Percentage(50), Constraint::Percentage(50)]).areas(lower);
        (a, b)
    };
    findings::render(frame, find_area, state, obs, theme);
    let proc_rows = processes::render(frame, proc_area, state, obs, theme);
    HitAreas {
        overview: (ov.y + 2, overview_rows_drawn),
        processes: (proc_area.y + 2, proc_rows),
    }
}

fn status_line(frame: &mut Frame, area: Rect, state: &AppState, obs: &StoreView, theme: &Theme) {
    let text = if let Some(s) = &state.status {
        s.clone()
    } else if state.editing_filter {
        format!("filter: {}▏ (Enter keeps it, Esc clears)", state.filter)
    } else if let Some(e) = obs.error() {
        format!("sampling stopped: {e}")
    } else {
        let paused = if state.paused {
            "PAUSED (space resumes) · "
        } else {
            ""
        };
        let ended = if obs.ended() {
            "recording ended · "
        } else {
            ""
        };
        format!("{paused}{ended}? keys · Tab pane · 1-9 GPU · Enter process · +/- zoom · space pause · e export · q quit")
    };
    frame.render_widget(Paragraph::new(Line::styled(text, theme.label())), area);
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
