//! The selected GPU over time: util %, power as % of TDP, GPM SM activity and memory %, so the
//! gap between util and power shows at a glance. Spans where a busy-but-idle finding was open
//! are marked on the chart itself, as a band across its top.

use super::border::{Border, Pieces, Title};
use ratatui::layout::{Alignment, Rect};
use ratatui::style::Style;
use ratatui::symbols::Marker;
use ratatui::text::Span;
use ratatui::Frame;
use std::fmt::Write;

use super::plot::{Layout, Plot};
use super::theme::Theme;
use crate::app::AppState;
use crate::history::DeviceHistory;
use crate::model::DeviceSample;
use crate::rules::Finding;
use crate::store::Store;

/// A metric's name, style and points (split at gaps).
pub(super) type Metric = (&'static str, Style, Segments);

/// A series' points, one vector per stretch without a gap.
pub(super) type Segments = Vec<Vec<(f64, f64)>>;

/// Points of one metric, split where it has gaps (a value missing, or no sample for longer
/// than `gap_ms`: sampling stopped, the program was suspended, a recording has a hole), averaged
/// down to about `max_points`. (The chart writes over kept vectors: `series_into`.)
#[cfg(test)]
pub fn series(
    dev: &DeviceHistory,
    span: (u64, u64),
    max_points: usize,
    gap_ms: u64,
    metric: impl Fn(&DeviceSample) -> Option<f32>,
) -> Segments {
    let mut out = Vec::new();
    series_into(dev, span, max_points, gap_ms, metric, &mut out);
    out
}

/// `series` written over `out`, whose vectors are reused (the chart keeps them from frame to
/// frame: 28 of a frame's allocations were these).
pub fn series_into(
    dev: &DeviceHistory,
    (from_ms, to_ms): (u64, u64),
    max_points: usize,
    gap_ms: u64,
    metric: impl Fn(&DeviceSample) -> Option<f32>,
    out: &mut Segments,
) {
    let n = dev.samples.window(from_ms, to_ms).count();
    let per = n.div_ceil(max_points.max(1)).max(1);
    // `out[..used]` are this call's segments; the last is the one being drawn. A new one is
    // started only when that one has points: a segment is never empty but maybe the last.
    let mut used = 0usize;
    let start = |out: &mut Segments, used: &mut usize| {
        if *used > 0 && out[*used - 1].is_empty() {
            return;
        }
        match out.get_mut(*used) {
            Some(kept) => kept.clear(),
            None => out.push(Vec::new()),
        }
        *used += 1;
    };
    start(out, &mut used);
    let (mut sum, mut count, mut t_sum, mut in_bucket) = (0.0f64, 0usize, 0.0f64, 0usize);
    let mut last_ms: Option<u64> = None;
    for s in dev.samples.window(from_ms, to_ms) {
        let x = (s.t_ms as f64 - to_ms as f64) / 1000.0;
        if last_ms.is_some_and(|t| s.t_ms.saturating_sub(t) > gap_ms) {
            // No sample for a while: what was averaged so far ends its line, and the next
            // line starts after the hole instead of bridging it.
            if count > 0 {
                out[used - 1].push((t_sum / count as f64, sum / count as f64));
            }
            start(out, &mut used);
            (sum, count, t_sum, in_bucket) = (0.0, 0, 0.0, 0);
        }
        last_ms = Some(s.t_ms);
        if let Some(v) = metric(s) {
            sum += f64::from(v);
            t_sum += x;
            count += 1;
        } else {
            // A gap ends the current segment: unsupported or lost data is not drawn as 0.
            start(out, &mut used);
            (sum, count, t_sum) = (0.0, 0, 0.0);
        }
        in_bucket += 1;
        if in_bucket == per {
            if count > 0 {
                out[used - 1].push((t_sum / count as f64, sum / count as f64));
            }
            (sum, count, t_sum, in_bucket) = (0.0, 0, 0.0, 0);
        }
    }
    if count > 0 {
        out[used - 1].push((t_sum / count as f64, sum / count as f64));
    }
    if out[used - 1].is_empty() {
        used -= 1;
    }
    out.truncate(used);
}

thread_local! {
    /// The four series' points, kept from frame to frame for `series_into` to write over
    /// (only the drawing thread draws).
    static POINTS: std::cell::RefCell<[Segments; 4]> = std::cell::RefCell::default();
    /// The findings' spans' buffer, kept from frame to frame (as the frame's spans borrow its
    /// findings, it is kept emptied, of a type of the same layout).
    static SPANS: std::cell::RefCell<Vec<(f64, f64, usize)>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Longer than this without a sample is a hole in a chart's line, not part of it: five
/// intervals, and at least 2 s (a process's trail has a point a second).
pub fn hole_ms(store: &Store) -> u64 {
    (store.interval().as_millis() as u64 * 5).max(2_000)
}

/// The visible part of each busy-but-idle finding on this GPU: (start s, end s, finding),
/// written over `out`.
fn finding_spans_into<'s>(
    store: &'s Store,
    device: u32,
    (from_ms, to_ms): (u64, u64),
    out: &mut Vec<(f64, f64, &'s Finding)>,
) {
    out.clear();
    let open = store.findings().active_on(device);
    let cleared = store
        .findings()
        .cleared()
        .iter()
        .filter(|f| f.device == device);
    let spans = open
        .chain(cleared)
        // Spans are marked for the rules where util says busy but the GPU is not working.
        .filter(|f| crate::rules::is_busy_but_idle(&f.rule))
        .filter_map(|f| {
            // An open finding whose symptom ended is marked up to its end, not up to now.
            let ended = f.symptom_ended.then_some(f.last_ms);
            let end = f.cleared_ms.or(ended).unwrap_or(to_ms).min(to_ms);
            let start = f.since_ms.max(from_ms);
            (start < end).then(|| {
                (
                    (start as f64 - to_ms as f64) / 1000.0,
                    (end as f64 - to_ms as f64) / 1000.0,
                    f,
                )
            })
        });
    out.extend(spans);
}

/// Draws the selected GPU's chart; returns how many points it shows across (0: none drawn),
/// from which the loop knows how often new data can move it.
#[allow(clippy::too_many_lines)] // one chart: series, spans, marks and axes that depend on each other; strips and titles are already their own
pub fn render(
    frame: &mut Frame,
    area: Rect,
    state: &AppState,
    store: &Store,
    theme: &Theme,
) -> u16 {
    let Some(dev) = store.history().devices.get(state.selected_gpu) else {
        return 0;
    };
    let to = dev.samples.latest().map_or(0, |s| s.t_ms);
    let window = state.window_ms();
    let from = to.saturating_sub(window);
    let width = area.width.saturating_sub(10) as usize * 2;
    let span = (from, to);
    let gap = hole_ms(store);
    let tdp = dev.info.tdp_w();
    let total = dev.info.memory_total_bytes;
    let mut kept = POINTS.take();
    series_into(dev, span, width, gap, |s| s.util_gpu_pct, &mut kept[0]);
    let power = |s: &DeviceSample| s.power_w.zip(tdp).map(|(p, t)| p / t * 100.0);
    series_into(dev, span, width, gap, power, &mut kept[1]);
    series_into(dev, span, width, gap, |s| s.gpm.sm_active_pct, &mut kept[2]);
    let memory = |s: &DeviceSample| {
        s.mem_used_bytes
            .zip(total)
            .map(|(u, t)| u as f32 / t as f32 * 100.0)
    };
    series_into(dev, span, width, gap, memory, &mut kept[3]);
    let [util, power, sm, memory] = kept;
    let metrics: [Metric; 4] = [
        ("util", theme.util(), util),
        ("power %TDP", theme.power(), power),
        ("SM active", theme.sm(), sm),
        ("memory", theme.mem(), memory),
    ];
    // A kept `Vec` of another frame's spans, of the same layout (`pen::recycled`).
    let mut spans: Vec<(f64, f64, &Finding)> = super::pen::recycled(SPANS.take());
    finding_spans_into(store, dev.info.index, (from, to), &mut spans);
    let points = u16::try_from(width).unwrap_or(u16::MAX);
    'draw: {
        if area.height < super::strips::STRIPS_BELOW_ROWS {
            super::strips::strips(frame, area, dev, (window, gap), &metrics, &spans, theme);
            break 'draw;
        }
        // Without colour (NO_COLOR) the series are told apart by their marks, as the title shows.
        let marks: [(Marker, &str); 4] = if theme.color {
            [(Marker::Braille, "━"); 4]
        } else {
            [
                (Marker::Braille, "⠒"),
                (Marker::Dot, "•"),
                (Marker::Bar, "▄"),
                (Marker::Block, "█"),
            ]
        };
        let secs = window as f64 / 1000.0;
        let plot_area = super::pen::with_strings(|pieces| {
            super::pen::with_strings(|health| {
                let title = chart_title(
                    pieces,
                    dev.info.index,
                    window,
                    &metrics,
                    &marks,
                    &spans,
                    theme,
                );
                let bottom = health_line(dev, area.width, theme, health);
                let pane = Border::new(title, theme.border()).bottom(bottom);
                axes(frame, area, pane, window, theme)
            })
        });
        let Some(plot_area) = plot_area else {
            break 'draw;
        };
        let mut plot = Plot::new(plot_area, [-secs, 0.0], [0.0, 100.0]);
        // Drawn memory, SM, util, power: where two share a cell the later wins, and power, the
        // signal this tool reads, must never be hidden (the legend says it is on top).
        for i in [3, 2, 0, 1] {
            let ((_, style, segments), (marker, _)) = (&metrics[i], marks[i]);
            let color = style.fg.unwrap_or(ratatui::style::Color::Reset);
            for seg in segments {
                plot.series(frame.buffer_mut(), seg, color, marker);
            }
        }
        mark_axis(frame, plot_area, &spans, window, theme);
    }
    POINTS.set(metrics.map(|(_, _, points)| points));
    SPANS.set(super::pen::recycled(spans));
    points
}

/// The span whose finding the title names: an open one, else the latest.
pub(super) fn current_span<'s, 'f>(
    spans: &'s [(f64, f64, &'f Finding)],
) -> Option<&'s (f64, f64, &'f Finding)> {
    spans
        .iter()
        .find(|(_, _, f)| f.cleared_ms.is_none())
        .or(spans.last())
}

/// The GPU's health and what it used, on the chart's bottom border, right-aligned: a
/// standing problem first in its colour ("reset needed (row remap pending)"), else the counters
/// the GPU reports (ECC, `PCIe` replays, `NVLink` links up), then its energy since watching
/// began. Counters a GPU does not report are left out, not shown as 0.
pub(super) fn health_line<'a>(
    dev: &crate::history::DeviceHistory,
    width: u16,
    theme: &Theme,
    [problem, counters, energy, shown]: &'a mut [String; 4],
) -> Title<'a> {
    let mut spans = Pieces::default();
    let Some(h) = dev.samples.latest().map(|s| s.health) else {
        return Title::Pieces(spans, Alignment::Right);
    };
    if let Some(p) = h.standing_problem() {
        let _ = write!(problem, " ‼ {p} ");
    }
    let (ends, n) = write_counters(&h, counters);
    // The energy since gpuwatch first saw the GPU, with the span it covers: alone under a
    // "last 30s" chart it read as the window's.
    let j = dev.energy.total_j();
    if j > 0.0 {
        let _ = write!(
            energy,
            "{} in {}",
            crate::text::EnergyWords(j),
            crate::text::Compact(dev.energy.span_ms())
        );
    }
    let counters: &str = counters;
    let piece = |i: usize| &counters[if i == 0 { 0 } else { ends[i - 1] }..ends[i]];
    // What does not fit goes, the counters first: the problem and the energy stay longest.
    let room = usize::from(width.saturating_sub(4));
    let energy_cols = if energy.is_empty() {
        0
    } else {
        energy.chars().count() + 3
    };
    let fixed = problem.chars().count() + energy_cols;
    let fits =
        |k: usize| fixed + (0..k).map(|i| piece(i).chars().count() + 3).sum::<usize>() <= room;
    let mut kept = n;
    while kept > 0 && !fits(kept) {
        kept -= 1;
    }
    let energy = (!energy.is_empty()).then_some(energy.as_str());
    for (i, part) in (0..kept).map(piece).chain(energy).enumerate() {
        shown.push_str(if i == 0 { " " } else { " · " });
        shown.push_str(part);
    }
    if !shown.is_empty() {
        shown.push(' ');
    }
    if !problem.is_empty() {
        spans.push(Span::styled(
            problem.as_str(),
            theme.severity(crate::rules::Severity::Critical),
        ));
    }
    if !shown.is_empty() {
        spans.push(Span::styled(shown.as_str(), theme.dim()));
    }
    Title::Pieces(spans, Alignment::Right)
}

/// The counters a GPU reports, one after another in `counters`: piece `i` ends at `ends[i]`,
/// and there are `n` of them.
fn write_counters(h: &crate::model::Health, counters: &mut String) -> ([usize; 3], usize) {
    let (mut ends, mut n) = ([0usize; 3], 0);
    let mut end_piece = |counters: &String| {
        if counters.len() > ends[..n].last().copied().unwrap_or(0) {
            ends[n] = counters.len();
            n += 1;
        }
    };
    match h.ecc_uncorrected_volatile {
        Some(0) => counters.push_str("ECC ok"),
        Some(e) => _ = write!(counters, "ECC {e} uncorrected"),
        None => {}
    }
    end_piece(counters);
    if let Some(r) = h.pcie_replays {
        let _ = write!(counters, "PCIe replays {r}");
    }
    end_piece(counters);
    if let (Some(a), Some(l)) = (h.nvlink_active, h.nvlink_links) {
        let _ = write!(counters, "NVLink {a}/{l}");
    }
    end_piece(counters);
    (ends, n)
}

/// The chart's title: the GPU and window, each series' mark and name (power on top), and the
/// finding whose span is marked under the axis.
fn chart_title<'a>(
    pieces: &'a mut [String; 6],
    gpu: u32,
    window: u64,
    metrics: &[Metric; 4],
    marks: &[(Marker, &str); 4],
    spans: &[(f64, f64, &Finding)],
    theme: &Theme,
) -> Title<'a> {
    let [head, shown @ .., named] = pieces;
    let _ = write!(
        head,
        " GPU {} · last {} ",
        crate::model::gpu_label(gpu),
        crate::text::Compact(window)
    );
    for (((name, _, segments), (_, mark)), text) in metrics.iter().zip(marks).zip(shown.iter_mut())
    {
        let on_top = if *name == "power %TDP" {
            " (on top)"
        } else {
            ""
        };
        let _ = if segments.is_empty() {
            write!(text, "{name} n/a ")
        } else {
            write!(text, "{mark} {name}{on_top} ")
        };
    }
    let current = current_span(spans).map(|(_, _, f)| f);
    if let Some(f) = current {
        // The span's mark under the axis, ▀, is what stands for it (memory draws █ without
        // colour).
        let _ = write!(named, "▀ {} {} ", f.severity.marker(), f.rule);
    }
    let pieces: &'a [String; 6] = pieces;
    let mut title = Pieces::default();
    title.push(Span::styled(pieces[0].as_str(), theme.title()));
    for ((_, style, _), text) in metrics.iter().zip(&pieces[1..5]) {
        title.push(Span::styled(text.as_str(), *style));
    }
    if let Some(f) = current {
        title.push(Span::styled(pieces[5].as_str(), theme.severity(f.severity)));
    }
    Title::Pieces(title, Alignment::Left)
}

/// Draws a time chart's `pane` and its axes as `Chart` would: the last `window_ms` across,
/// labelled in time before now, and 0–100 % up. Returns where the series go (`ui/plot.rs`
/// says why they are not a `Chart`'s datasets).
pub fn axes(
    frame: &mut Frame,
    area: Rect,
    pane: Border<'_>,
    window_ms: u64,
    theme: &Theme,
) -> Option<Rect> {
    axes_widened(frame, area, pane, (window_ms, 0), theme)
}

/// `axes` with `extra` more columns for the y labels, where a caller writes a second scale
/// right-aligned beside the percentages (the process view's CPU).
pub fn axes_widened(
    frame: &mut Frame,
    area: Rect,
    pane: Border<'_>,
    (window_ms, extra): (u64, u16),
    theme: &Theme,
) -> Option<Rect> {
    let inner = Border::inner(area);
    pane.render(area, frame.buffer_mut());
    super::pen::with_strings(|[oldest, middle]| {
        let _ = write!(oldest, "-{}", crate::text::Compact(window_ms));
        let first_width = u16::try_from(unicode_width::UnicodeWidthStr::width(oldest.as_str()))
            .unwrap_or(u16::MAX);
        let layout = Layout::of(inner, PERCENTS_WIDTH + extra, first_width)?;
        let _ = write!(middle, "-{}", crate::text::Compact(window_ms / 2));
        layout.draw_axes(
            frame.buffer_mut(),
            [oldest, middle, "now"],
            PERCENTS,
            theme.label(),
        );
        Some(layout.plot)
    })
}

/// The percent axis's labels, and the widest of them.
const PERCENTS: [&str; 3] = ["0%", "50%", "100%"];
const PERCENTS_WIDTH: u16 = 4;

/// Marks each finding's span on the plot: the x-axis line below it turns into '▀' in the
/// finding's style (readable without colour), and with colour the plot behind it is tinted.
fn mark_axis(
    frame: &mut Frame,
    plot: Rect,
    spans: &[(f64, f64, &Finding)],
    window_ms: u64,
    theme: &Theme,
) {
    let secs = window_ms as f64 / 1000.0;
    if secs <= 0.0 {
        return;
    }
    let (x0, w) = (plot.x, plot.width);
    let axis_row = plot.bottom();
    let inner_top = plot.y;
    for (a, b, f) in spans {
        let col = |t: f64| {
            x0 + (((t + secs) / secs) * f64::from(w)).clamp(0.0, f64::from(w) - 1.0) as u16
        };
        for x in col(*a)..=col(*b) {
            let buf = frame.buffer_mut();
            if let Some(cell) = buf.cell_mut((x, axis_row)) {
                cell.set_symbol("▀").set_style(theme.severity(f.severity));
            }
            if let Some(bg) = theme.tint(f.severity) {
                for y in inner_top..axis_row {
                    if let Some(cell) = buf.cell_mut((x, y)) {
                        cell.set_bg(bg);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::History;
    use crate::model::{DeviceInfo, DeviceReading, Tick};

    /// A GPU sampled every 250 ms at 40 % util, except for the seconds in `hole`.
    fn sampled(secs: u64, hole: std::ops::Range<u64>) -> History {
        let mut h = History::new(&[DeviceInfo::default()], 1_000);
        for t_ms in (0..secs * 1000).step_by(250) {
            if hole.contains(&(t_ms / 1000)) {
                continue;
            }
            let mut reading = DeviceReading::default();
            reading.sample.t_ms = t_ms;
            reading.sample.util_gpu_pct = Some(40.0);
            h.push(&Tick {
                t_ms,
                devices: vec![reading],
                ..Tick::default()
            });
        }
        h
    }

    /// A stretch without samples is a hole in the line, not a straight bridge over it; a
    /// tick late by less than the gap is not.
    #[test]
    fn a_stretch_without_samples_breaks_the_line() {
        let util = |h: &History| series(&h.devices[0], (0, 30_000), 120, 2_000, |s| s.util_gpu_pct);
        let whole = util(&sampled(30, 0..0));
        assert_eq!(whole.len(), 1);
        let holed = util(&sampled(30, 10..20));
        assert_eq!(holed.len(), 2, "{holed:?}");
        assert!(holed[0].last().unwrap().0 < -20.0 && holed[1][0].0 > -10.5);
        assert_eq!(util(&sampled(30, 10..11)).len(), 1, "a one-second hole");
    }

    /// Written over vectors kept from other histories (more segments, fewer, none), the
    /// points are what a fresh call gives.
    #[test]
    fn series_into_kept_vectors_is_a_fresh_series() {
        let util = |s: &DeviceSample| s.util_gpu_pct;
        let histories = [
            sampled(30, 10..20),
            sampled(30, 0..0),
            sampled(30, 3..5),
            sampled(0, 0..0),
            sampled(30, 10..20),
        ];
        let mut kept = Vec::new();
        for h in &histories {
            series_into(&h.devices[0], (0, 30_000), 120, 2_000, util, &mut kept);
            assert_eq!(kept, series(&h.devices[0], (0, 30_000), 120, 2_000, util));
        }
    }
}
