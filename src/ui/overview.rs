//! One row per GPU: util, power as % of TDP, memory, temperature, clock and a diagnosis badge.
//! A GPU whose util says busy while a busy-but-idle finding is open gets a badge that survives
//! without colour (symbol, bold, reverse).

use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use super::format::{bar, clip};
use super::theme::Theme;
use crate::app::{AppState, Pane};
use crate::history::DeviceHistory;
use crate::model::DeviceStatus;
use crate::store::StoreView;

/// Draws the overview; returns how many GPU rows were drawn.
pub fn render(
    frame: &mut Frame,
    area: Rect,
    state: &AppState,
    obs: &StoreView,
    theme: &Theme,
) -> u16 {
    let focused = state.focus == Pane::Overview && state.view == crate::app::View::Main;
    let n = obs.history().devices.len();
    let title = format!(" GPUs ({n}) ");
    let block = theme.pane(title, focused);
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let rows = inner.height.saturating_sub(1) as usize;
    let first = scroll_start(state.selected_gpu, rows, n);
    let wide = inner.width >= 110;
    let mut lines = vec![header_line(wide, theme)];
    for (i, dev) in obs
        .history()
        .devices
        .iter()
        .enumerate()
        .skip(first)
        .take(rows)
    {
        lines.push(row(dev, i == state.selected_gpu, wide, obs, theme));
    }
    frame.render_widget(Paragraph::new(lines), inner);
    rows.min(n - first) as u16
}

/// The first row shown so that the selected GPU is visible.
pub fn scroll_start(selected: usize, rows: usize, n: usize) -> usize {
    if rows == 0 || n <= rows {
        0
    } else {
        selected.saturating_sub(rows - 1).min(n - rows)
    }
}

fn header_line(wide: bool, theme: &Theme) -> Line<'static> {
    let text = if wide {
        "  # NAME           UTIL              POWER %TDP             MEMORY          TEMP   SM CLK  PCIE   CLOCK EVENTS   DIAGNOSIS"
    } else {
        "  # NAME  UTIL          POWER %TDP         MEMORY     TEMP DIAGNOSIS"
    };
    Line::styled(text, theme.label())
}

fn row<'a>(
    dev: &DeviceHistory,
    selected: bool,
    wide: bool,
    obs: &StoreView,
    theme: &Theme,
) -> Line<'a> {
    let s = dev.samples.latest().copied().unwrap_or_default();
    let i = dev.info.index;
    let name = dev
        .info
        .name
        .trim_start_matches("NVIDIA ")
        .replace(" (simulated)", "*");
    let tdp = dev.info.tdp_w();
    let power_pct = s.power_w.zip(tdp).map(|(p, t)| p / t * 100.0);
    let mem_pct = s
        .mem_used_bytes
        .zip(dev.info.memory_total_bytes)
        .map(|(u, t)| u as f32 / t as f32 * 100.0);
    let (bw, name_w) = if wide { (12, 12) } else { (7, 5) };
    let pct = |v: Option<f32>| v.map_or("  –%".into(), |v| format!("{v:3.0}%"));
    let mut spans = vec![
        Span::styled(if selected { "▶" } else { " " }, theme.title()),
        Span::raw(format!("{i:>2} {:<name_w$} ", clip(&name, name_w))),
        Span::styled(bar(s.util_gpu_pct, bw), theme.util()),
        Span::raw(format!(" {} ", pct(s.util_gpu_pct))),
        Span::styled(bar(power_pct, bw), theme.power()),
        Span::raw(format!(
            " {}{} ",
            pct(power_pct),
            s.power_w.map_or("     ".into(), |w| format!(" {w:>3.0}W"))
        )),
        Span::styled(bar(mem_pct, if wide { 8 } else { 4 }), theme.mem()),
        Span::raw(format!(" {} ", pct(mem_pct))),
        Span::raw(s.temp_c.map_or(" –°C".into(), |t| format!("{t:>3.0}°C"))),
    ];
    if wide {
        spans.push(Span::raw(
            s.sm_clock_mhz
                .map_or("        –".into(), |c| format!(" {c:>4}MHz")),
        ));
        let link = s
            .pcie_gen
            .zip(s.pcie_width)
            .map_or("  –    ".into(), |(g, w)| format!(" G{g}x{w:<3}"));
        // The reasons clocks are held down (power cap, thermal…), which nvidia-smi hides in -q.
        let events = s.clock_events.map_or("–".into(), |e| {
            crate::model::clock_event::names(e).join(",")
        });
        spans.push(Span::raw(format!("{link} {:<14}", clip(&events, 14))));
    }
    spans.push(Span::raw(" "));
    spans.push(badge(dev, obs, theme));
    let line = Line::from(spans);
    if selected {
        line.patch_style(
            theme
                .selected()
                .remove_modifier(ratatui::style::Modifier::REVERSED)
                .add_modifier(ratatui::style::Modifier::BOLD),
        )
    } else {
        line
    }
}

fn badge<'a>(dev: &DeviceHistory, obs: &StoreView, theme: &Theme) -> Span<'a> {
    if let DeviceStatus::Lost { .. } = dev.status {
        return Span::styled("‼ LOST", theme.severity(crate::rules::Severity::Critical));
    }
    match obs.findings().worst_on(dev.info.index) {
        Some(f) => {
            let more = obs
                .findings()
                .active_on(dev.info.index)
                .count()
                .saturating_sub(1);
            let extra = if more > 0 {
                format!(" +{more}")
            } else {
                String::new()
            };
            Span::styled(
                format!("{} {}{extra}", f.severity.marker(), f.rule.to_uppercase()),
                theme.severity(f.severity),
            )
        }
        // Not "ok" before the rules could judge: a hang looks fine for its first seconds.
        None => match obs
            .findings()
            .judging(dev.info.index)
            .filter(|j| j.pending())
        {
            Some(j) => Span::styled(
                format!("… {}/{}s", j.covered_ms / 1000, j.needed_ms / 1000),
                theme.dim(),
            ),
            None => Span::styled("✓ ok", theme.dim()),
        },
    }
}
