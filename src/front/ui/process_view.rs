//! One process: its own curves (kernel time %, GPU memory, host CPU %), its Python threads
//! (where they are, from its newest stack burst), its children (`DataLoader` workers) with their
//! CPU, its command line, and the findings that involve it.

use ratatui::layout::{Constraint, Rect};
use ratatui::symbols::Marker;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Wrap};
use ratatui::Frame;

use super::chart::Segments;
use super::format::{clip, gib};
use super::theme::Theme;
use crate::app::{find_process, AppState};
use crate::store::Store;

/// What the process runs with, from /proc (read once): its framework and CUDA libraries, the
/// allow-listed settings, its container.
fn runs_with(h: &crate::model::HostProcess, theme: &Theme) -> Vec<Line<'static>> {
    let mut lines = Vec::new();
    let label = |l: &str| Span::styled(format!("{l:<10}"), theme.label());
    if let Some(sw) = h.software.as_deref() {
        // The settings first: they are what explains a slow job (CUDA_LAUNCH_BLOCKING=1).
        let settings = match (&sw.unreadable, sw.settings_text(|s| s, " · ")) {
            (Some(why), _) => why.clone(),
            (None, Some(text)) => text,
            (None, None) => "none of the settings gpuwatch reads (docs/diagnoses.md, Hints)".into(),
        };
        lines.push(Line::from(vec![label("settings"), Span::raw(settings)]));
        let summary = sw.summary();
        if !summary.is_empty() {
            lines.push(Line::from(vec![label("runs"), Span::raw(summary)]));
        }
    }
    if let Some(c) = h.container.as_deref() {
        lines.push(Line::from(vec![
            label("container"),
            Span::raw(c.describe()),
        ]));
    }
    lines
}

/// What this process and its job used: "energy 12.3 kJ since seen (all of GPU 0's) · job
/// torchelastic:run-7: 48.1 kJ, 4 ranks". A GPU shared with others is split by kernel time.
fn energy_text(
    store: &Store,
    device: u32,
    pid: u32,
    h: Option<&crate::model::HostProcess>,
) -> Option<String> {
    use std::fmt::Write as _;
    let history = store.history();
    let trail = history.trail(device, pid).filter(|t| t.energy_j > 0.0)?;
    let device = crate::model::gpu_label(device);
    let whose = if trail.energy_shared {
        format!("its share of GPU {device}'s by kernel time")
    } else {
        format!("all of GPU {device}'s")
    };
    let mut text = format!(
        "energy {} since seen ({whose})",
        crate::text::energy_words(trail.energy_j)
    );
    if let Some(job) = h.and_then(|h| h.job.as_ref()) {
        let ranks: Vec<f64> = history
            .devices
            .iter()
            .flat_map(|d| d.processes.iter().map(move |p| (d.info.index, p)))
            .filter(|(_, p)| {
                p.host
                    .as_ref()
                    .and_then(|h| h.job.as_ref())
                    .is_some_and(|j| j.key == job.key)
            })
            .filter_map(|(d, p)| history.trail(d, p.pid).map(|t| t.energy_j))
            .collect();
        if ranks.len() > 1 {
            let _ = write!(
                text,
                " · job {}: {}, {} ranks",
                crate::text::printable(&job.key),
                crate::text::energy_words(ranks.iter().sum()),
                ranks.len()
            );
        }
    }
    Some(text)
}

#[allow(clippy::too_many_lines)] // one pane: header, curves, children, findings
pub fn render(
    frame: &mut Frame,
    area: Rect,
    state: &AppState,
    store: &Store,
    device: u32,
    pid: u32,
    theme: &Theme,
) -> usize {
    let Some(p) = find_process(store, device, pid) else {
        let device = crate::model::gpu_label(device);
        let msg = format!("pid {pid} no longer holds GPU {device} (it exited or released its context). Esc goes back.");
        frame.render_widget(
            Paragraph::new(msg).block(Block::default().borders(Borders::ALL).title(" process ")),
            area,
        );
        return 0;
    };
    let h = p.host.as_ref();
    let mut head = vec![
        Line::from(vec![
            Span::styled(format!("pid {pid}"), theme.title()),
            Span::raw(format!(
                " on GPU {} · user {} · state {} · {} threads · RSS {} · CPU {} · GPU mem {} · kernel time {} (NVML, per process)",
                crate::model::gpu_label(device),
                h.and_then(|h| h.user.clone()).unwrap_or_else(|| "?".into()),
                h.and_then(|h| h.state).unwrap_or('?'),
                h.and_then(|h| h.threads).map_or("?".into(), |t| t.to_string()),
                gib(h.and_then(|h| h.rss_bytes)),
                h.and_then(|h| h.cpu_pct).map_or("?".into(), |c| format!("{c:.0}%")),
                gib(p.gpu_mem_bytes),
                p.sm_pct.map_or("–".into(), |v| format!("{v:.0}%")),
            )),
        ]),
        Line::raw(h.map_or("its PID does not resolve on this machine, so its host side is unknown".into(), |h| format!("$ {}", h.cmdline))),
    ];
    head.extend(energy_text(store, device, pid, h).map(|t| Line::styled(t, theme.dim())));
    head.extend(h.map(|h| runs_with(h, theme)).unwrap_or_default());
    // As many rows as the lines take once wrapped, up to half the screen; the curves keep 4.
    let inner_w = usize::from(area.width.saturating_sub(2)).max(1);
    let wrapped: usize = head
        .iter()
        .map(|l| l.width().max(1).div_ceil(inner_w))
        .sum();
    let burst = store.history().stacks_of(pid);
    // Stacks take a few more rows than the children alone.
    // Below the curves, the threads (stacks, children) and the findings: side by side on a
    // wide terminal, one over the other on a narrow one, where each gets the whole width.
    let side_by_side = area.width >= 120;
    let lower_rows = match (side_by_side, area.height >= 30) {
        (true, true) => 14,
        (true, false) => 10,
        (false, true) => 18,
        (false, false) => 12,
    };
    let info_rows = (wrapped as u16 + 2).min(area.height / 2);
    let [info, curves, lower] = super::split::vertical(
        [
            Constraint::Length(info_rows),
            Constraint::Min(4),
            Constraint::Length(lower_rows),
        ],
        area,
    );
    frame.render_widget(
        Paragraph::new(head)
            .wrap(Wrap { trim: false })
            .block(theme.block(" process (Esc back, K signal) ", true)),
        info,
    );
    curves_chart(frame, curves, state, store, device, pid, theme);
    let [kids, finds] = if side_by_side {
        super::split::horizontal(
            [Constraint::Percentage(50), Constraint::Percentage(50)],
            lower,
        )
    } else {
        super::split::vertical(
            [Constraint::Percentage(55), Constraint::Percentage(45)],
            lower,
        )
    };
    let mut child_lines: Vec<Line> = match h {
        Some(h) if !h.children.is_empty() => h
            .children
            .iter()
            .map(|c| {
                Line::raw(format!(
                    "{:>7} {:<24} {:>5} {}",
                    c.pid,
                    clip(&c.name, 24),
                    c.cpu_pct.map_or("–".into(), |v| format!("{v:.0}%")),
                    c.state.unwrap_or('?')
                ))
            })
            .collect(),
        Some(_) => vec![Line::styled(
            "no child processes (a DataLoader with num_workers=0 has none)",
            theme.dim(),
        )],
        None => vec![Line::styled("unknown", theme.dim())],
    };
    child_lines.insert(
        0,
        Line::styled("    PID NAME                      CPU% S", theme.label()),
    );
    let now = store.history().latest_ms().unwrap_or(0);
    let mut thread_lines = super::stacks::lines(burst, now, store.pids_are_local(), theme);
    thread_lines.append(&mut child_lines);
    frame.render_widget(
        Paragraph::new(thread_lines).block(theme.block(" threads · children (p: stacks) ", false)),
        kids,
    );
    let plain = ratatui::style::Style::default();
    let mut doc = FINDINGS.take();
    doc.clear();
    for f in store
        .findings()
        .active()
        .iter()
        .filter(|f| f.pids.contains(&pid))
    {
        // The GPU the finding is on: a straggler's own GPU may be fine while it is named the
        // culprit of another's hang.
        doc.styled_fmt(
            format_args!(
                "{} GPU {} {} · {}",
                f.severity.marker(),
                crate::model::gpu_label(f.device),
                f.rule.to_uppercase(),
                f.title
            ),
            theme.severity(f.severity),
        );
        for e in &f.evidence {
            doc.styled_fmt(format_args!("  {e}"), plain);
        }
        for a in f.actions.iter().take(2) {
            doc.styled_fmt(format_args!("  → {a}"), plain);
        }
    }
    if doc.is_empty() {
        doc.styled("no open finding involves this process", theme.dim());
    }
    let max = super::scroll::render(
        frame,
        finds,
        theme.pane(" findings (↑↓ scroll) ", false),
        &mut doc,
        state.process_scroll,
        theme,
    );
    FINDINGS.set(doc);
    max
}

/// A series' name, style, lines and the scale from the axis's percent to its own unit.
type BarRow<'a> = (&'a str, ratatui::style::Style, &'a Segments, f64);

/// A process's series as one row of bars each (▁ to █ over the window), named, with the
/// latest value (`scale` turns the axis's percent back into the series' own: CPU in % of a
/// core).
fn bars(
    frame: &mut Frame,
    area: Rect,
    title: Line,
    rows: &[BarRow],
    window_ms: u64,
    theme: &Theme,
) {
    let inner = super::border::Border::inner(area);
    super::border::Border::new(title, theme.border()).render(area, frame.buffer_mut());
    let (label_w, value_w) = (7u16, 6u16);
    let width = usize::from(inner.width.saturating_sub(label_w + value_w));
    let secs = window_ms as f64 / 1000.0;
    let lines: Vec<Line> = rows
        .iter()
        .take(usize::from(inner.height))
        .map(|(name, style, lines, scale)| {
            let latest = lines.last().and_then(|l| l.last()).map(|p| p.1 * scale);
            let value = latest.map_or_else(|| "  n/a".to_string(), |v| format!("{v:>5.0}%"));
            Line::from(vec![
                Span::styled(format!("{name:<6} "), *style),
                Span::styled(super::strips::bar_row(lines, secs, width), *style),
                Span::styled(value, *style),
            ])
        })
        .collect();
    frame.render_widget(Paragraph::new(lines), inner);
}

/// One series of a process's trail as lines (x in seconds before `to_ms`), split where a value
/// is missing or no point came for longer than `gap_ms`.
#[cfg(test)]
fn trail_lines<'p>(
    points: impl Iterator<Item = &'p crate::history::ProcessPoint>,
    to_ms: u64,
    gap_ms: u64,
    f: &dyn Fn(&crate::history::ProcessPoint) -> Option<f64>,
) -> Segments {
    let mut lines = Vec::new();
    trail_lines_into(points, (to_ms, gap_ms), f, &mut lines);
    lines
}

/// `trail_lines` written over `lines`, whose vectors are kept from frame to frame.
fn trail_lines_into<'p>(
    points: impl Iterator<Item = &'p crate::history::ProcessPoint>,
    (to_ms, gap_ms): (u64, u64),
    f: &dyn Fn(&crate::history::ProcessPoint) -> Option<f64>,
    lines: &mut Segments,
) {
    // `lines[..used]` are this call's lines; the last is the one being drawn (maybe empty).
    let mut used = 1;
    match lines.first_mut() {
        Some(first) => first.clear(),
        None => lines.push(Vec::new()),
    }
    let mut last: Option<u64> = None;
    for p in points {
        let value = f(p);
        let hole = last.is_some_and(|t| p.t_ms.saturating_sub(t) > gap_ms);
        if (value.is_none() || hole) && !lines[used - 1].is_empty() {
            match lines.get_mut(used) {
                Some(kept) => kept.clear(),
                None => lines.push(Vec::new()),
            }
            used += 1;
        }
        if let Some(v) = value {
            let x = (p.t_ms as f64 - to_ms as f64) / 1000.0;
            lines[used - 1].push((x, v));
        }
        last = Some(p.t_ms);
    }
    if lines[used - 1].is_empty() {
        used -= 1;
    }
    lines.truncate(used);
}

thread_local! {
    /// The three series' lines, kept from frame to frame for `trail_lines_into` to write over.
    static TRAILS: std::cell::RefCell<[Segments; 3]> = std::cell::RefCell::default();
    /// The findings pane's text, kept from frame to frame.
    static FINDINGS: std::cell::RefCell<super::scroll::Doc> = std::cell::RefCell::default();
}

/// Host CPU in % of one core can exceed 100: scaled onto the axis by whole cores (top =
/// 100, 200… the most seen in the window from `from` on), and the legend says by how much.
fn cpu_axis_top<'a>(
    points: impl IntoIterator<Item = &'a crate::history::ProcessPoint>,
    from: u64,
) -> f64 {
    let cpu_max = points
        .into_iter()
        .filter(|p| p.t_ms >= from)
        .filter_map(|p| p.cpu_pct)
        .fold(0.0f32, f32::max);
    (f64::from(cpu_max) / 100.0).ceil().clamp(1.0, 64.0) * 100.0
}

/// The process chart's legend; CPU in % of one core, as the header gives it, on the axis
/// scaled to its top.
fn curves_title(cpu_top: f64, theme: &Theme) -> Line<'static> {
    Line::from(vec![
        Span::styled(" this process · ", theme.title()),
        Span::styled("━ kernel time % ", theme.sm()),
        Span::styled("━ GPU memory % ", theme.mem()),
        // CPU in % of one core, as the header gives it, on the axis scaled to its top.
        Span::styled(
            if cpu_top > 100.0 {
                format!("━ host CPU % (axis top = {cpu_top:.0} %) ")
            } else {
                "━ host CPU % ".to_string()
            },
            theme.power(),
        ),
    ])
}

fn curves_chart(
    frame: &mut Frame,
    area: Rect,
    state: &AppState,
    store: &Store,
    device: u32,
    pid: u32,
    theme: &Theme,
) {
    let Some(trail) = store.history().trail(device, pid) else {
        return;
    };
    let to = store.history().latest_ms().unwrap_or(0);
    let from = to.saturating_sub(state.window_ms());
    let total = store
        .history()
        .devices
        .iter()
        .find(|d| d.info.index == device)
        .and_then(|d| d.info.memory_total_bytes);
    let gap = super::chart::hole_ms(store);
    let pts = |f: &dyn Fn(&crate::history::ProcessPoint) -> Option<f64>, out: &mut _| {
        let points = trail.points.iter().filter(|p| p.t_ms >= from);
        trail_lines_into(points, (to, gap), f, out);
    };
    let mut kept = TRAILS.take();
    let [sm, mem, cpu] = &mut kept;
    pts(&|p| p.sm_pct.map(f64::from), sm);
    pts(
        &|p| Some(p.gpu_mem_bytes? as f64 / total? as f64 * 100.0),
        mem,
    );
    let cpu_top = cpu_axis_top(trail.points.iter(), from);
    let cpu_scaled = |p: &crate::history::ProcessPoint| {
        p.cpu_pct
            .map(|c| f64::from(c).min(cpu_top) / cpu_top * 100.0)
    };
    pts(&cpu_scaled, cpu);
    draw_curves(frame, area, (state, theme), cpu_top, &kept);
    TRAILS.set(kept);
}

/// The process's three series in `area`: a braille chart, or rows of bars when it is short.
fn draw_curves(
    frame: &mut Frame,
    area: Rect,
    (state, theme): (&AppState, &Theme),
    cpu_top: f64,
    [sm, mem, cpu]: &[Segments; 3],
) {
    let title = curves_title(cpu_top, theme);
    let window = state.window_ms();
    if area.height < super::strips::STRIPS_BELOW_ROWS {
        // One or two rows of plot would let the series drawn last hide the others: a row of
        // bars each, as the GPU's chart does.
        let rows = [
            ("kernel", theme.sm(), sm, 1.0),
            ("memory", theme.mem(), mem, 1.0),
            ("CPU", theme.power(), cpu, cpu_top / 100.0),
        ];
        bars(frame, area, title, &rows, window, theme);
        return;
    }
    let border = super::border::Border::new(title, theme.border());
    if let Some(plot_area) = super::chart::axes(frame, area, border, window, theme) {
        let secs = window as f64 / 1000.0;
        let mut plot = super::plot::Plot::new(plot_area, [-secs, 0.0], [0.0, 100.0]);
        for (points, style) in [(sm, theme.sm()), (mem, theme.mem()), (cpu, theme.power())] {
            let color = style.fg.unwrap_or(ratatui::style::Color::Reset);
            for line in points {
                plot.series(frame.buffer_mut(), line, color, Marker::Braille);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::ProcessPoint;

    /// A trail (a point a second) breaks where a value is missing and where no point came
    /// for longer than the gap; otherwise it is one line.
    #[test]
    fn a_trail_breaks_at_missing_values_and_holes() {
        let point = |s: u64, sm: Option<f32>| ProcessPoint {
            t_ms: s * 1000,
            sm_pct: sm,
            ..ProcessPoint::default()
        };
        let sm = |p: &ProcessPoint| p.sm_pct.map(f64::from);
        let lines = |pts: &[ProcessPoint]| trail_lines(pts.iter(), 30_000, 2_000, &sm);
        let steady: Vec<ProcessPoint> = (0..30).map(|s| point(s, Some(50.0))).collect();
        assert_eq!(lines(&steady).len(), 1);
        let holed: Vec<ProcessPoint> = steady
            .iter()
            .copied()
            .filter(|p| !(10_000..20_000).contains(&p.t_ms))
            .collect();
        assert_eq!(lines(&holed).len(), 2);
        let mut missing = steady.clone();
        missing[15].sm_pct = None;
        let split = lines(&missing);
        assert_eq!(split.len(), 2);
        assert_eq!((split[0].len(), split[1].len()), (15, 14));
    }
}
