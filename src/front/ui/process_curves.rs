//! A process's curves: kernel time %, GPU memory and host CPU % over the window, as a braille
//! chart with the CPU on its own scale, or as rows of bars when the pane is short.

use ratatui::layout::Rect;
use ratatui::symbols::Marker;
use ratatui::text::Span;
use ratatui::Frame;

use super::border::{Pieces, Title};
use super::chart::Segments;
use super::theme::Theme;
use crate::app::AppState;
use crate::store::Store;

/// A series' name, style, lines and the scale from the axis's percent to its own unit.
type BarRow<'a> = (&'a str, ratatui::style::Style, &'a Segments, f64);

/// A process's series as one row of bars each (▁ to █ over the window), named, with the
/// latest value (`scale` turns the axis's percent back into the series' own: CPU in % of a
/// core).
fn bars(
    frame: &mut Frame,
    area: Rect,
    title: Title,
    rows: &[BarRow],
    window_ms: u64,
    theme: &Theme,
) {
    use std::fmt::Write as _;
    let inner = super::border::Border::inner(area);
    super::border::Border::new(title, theme.border()).render(area, frame.buffer_mut());
    let (label_w, value_w) = (7u16, 6u16);
    let width = usize::from(inner.width.saturating_sub(label_w + value_w));
    let secs = window_ms as f64 / 1000.0;
    // Row by row with `put_spans`, as the GPU's strips: what a `Paragraph` of these lines drew.
    super::pen::with_strings(|[label, bar, value]| {
        for (y, (name, style, lines, scale)) in (inner.y..inner.bottom()).zip(rows) {
            let latest = lines.last().and_then(|l| l.last()).map(|p| p.1 * scale);
            label.clear();
            bar.clear();
            value.clear();
            let _ = write!(label, "{name:<6} ");
            super::strips::write_bar_row(bar, lines, secs, width);
            let _ = match latest {
                Some(v) => write!(value, "{v:>5.0}%"),
                None => write!(value, "  n/a"),
            };
            let line = [&*label, &*bar, &*value].map(|s| Span::styled(s.as_str(), *style));
            super::pen::put_spans(frame.buffer_mut(), Rect { y, ..inner }, &line);
        }
    });
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
    /// The three series' lines, kept from frame to frame for `trail_lines_into` to write over,
    /// and the legend's words for the CPU.
    static TRAILS: std::cell::RefCell<([Segments; 3], String)> = std::cell::RefCell::default();
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

/// The widest of the CPU scale's labels ("6400%").
fn cpu_label_width(cpu_top: f64) -> u16 {
    if cpu_top >= 1000.0 {
        5
    } else {
        4
    }
}

/// The CPU scale's labels (0, half its top, its top), right-aligned in `labels`'s column on
/// the rows of the percentages' (`plot::Layout::draw_axes`), in the CPU series' style.
fn cpu_labels(
    buf: &mut ratatui::buffer::Buffer,
    (labels, plot): (Rect, Rect),
    cpu_top: f64,
    style: ratatui::style::Style,
) {
    use std::fmt::Write as _;
    super::pen::with_strings(|[text]| {
        for (i, value) in (0u16..).zip([0.0, cpu_top / 2.0, cpu_top]) {
            let dy = i * (plot.height - 1) / 2;
            text.clear();
            let _ = write!(text, "{value:.0}%");
            // Only the label's own cells take its style (the percentage beside it keeps its own).
            let width = u16::try_from(text.len())
                .unwrap_or(u16::MAX)
                .min(labels.width);
            let at = Rect::new(labels.right() - width, plot.bottom() - 1 - dy, width, 1);
            super::pen::put_aligned(buf, at, text, ratatui::layout::Alignment::Right, style);
        }
    });
}

/// The process chart's legend for the first `shown` series (a short chart draws a row of bars
/// each, as many as fit: at 80×24 the CPU's did not, and its legend was there all the same);
/// CPU in % of one core, as the header gives it, on the axis scaled to its top (its words
/// written into `cpu`, kept from frame to frame).
fn curves_title<'a>(cpu_top: f64, shown: u16, theme: &Theme, cpu: &'a mut String) -> Title<'a> {
    use std::fmt::Write as _;
    cpu.clear();
    if cpu_top > 100.0 {
        let _ = write!(cpu, "━ host CPU % (axis top = {cpu_top:.0} %) ");
    } else {
        cpu.push_str("━ host CPU % ");
    }
    let mut title = Pieces::default();
    title.push(Span::styled(" this process · ", theme.title()));
    let legends = [
        Span::styled("━ kernel time % ", theme.sm()),
        Span::styled("━ GPU memory % ", theme.mem()),
        Span::styled(cpu.as_str(), theme.power()),
    ];
    for legend in legends.into_iter().take(usize::from(shown)) {
        title.push(legend);
    }
    Title::Pieces(title, ratatui::layout::Alignment::Left)
}

pub(super) fn curves_chart(
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
    let (trails, words) = &mut kept;
    let [sm, mem, cpu] = trails;
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
    // Bars take a row each inside the border; a plot draws all three.
    let shown = if area.height < super::strips::STRIPS_BELOW_ROWS {
        super::border::Border::inner(area).height.min(3)
    } else {
        3
    };
    let title = curves_title(cpu_top, shown, theme, words);
    draw_curves(frame, area, (state, theme, title), cpu_top, trails);
    TRAILS.set(kept);
}

/// The process's three series in `area`: a braille chart, or rows of bars when it is short.
fn draw_curves(
    frame: &mut Frame,
    area: Rect,
    (state, theme, title): (&AppState, &Theme, Title),
    cpu_top: f64,
    [sm, mem, cpu]: &[Segments; 3],
) {
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
    // CPU above one core has a scale of its own: its labels beside the percentages.
    let cpu_scale = cpu_top > 100.0;
    let extra = if cpu_scale {
        cpu_label_width(cpu_top) + 1
    } else {
        0
    };
    let axes = super::chart::axes_widened(frame, area, border, (window, extra), theme);
    if let Some(plot_area) = axes {
        if cpu_scale {
            let labels = Rect {
                width: (plot_area.x - area.x).saturating_sub(2),
                ..super::border::Border::inner(area)
            };
            cpu_labels(
                frame.buffer_mut(),
                (labels, plot_area),
                cpu_top,
                theme.power(),
            );
        }
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

    /// CPU's own scale (0, half, top) is written right-aligned in its label column, on the
    /// rows of the percentages' labels (bottom, middle, top of the plot), in CPU's style.
    #[test]
    fn cpu_labels_stand_on_the_percentages_rows_in_cpus_style() {
        use ratatui::style::{Color, Style};
        let mut buf = ratatui::buffer::Buffer::empty(Rect::new(0, 0, 20, 7));
        let style = Style::default().fg(Color::Magenta);
        let (labels, plot) = (Rect::new(0, 0, 9, 7), Rect::new(10, 0, 10, 5));
        cpu_labels(&mut buf, (labels, plot), 400.0, style);
        let row = |y: u16| -> String { (0..9).map(|x| buf[(x, y)].symbol()).collect() };
        assert_eq!(
            [row(0), row(2), row(4)],
            ["     400%", "     200%", "       0%"]
        );
        assert_eq!([row(1), row(3), row(5)], ["         "; 3]);
        assert_eq!(buf[(5, 0)].fg, Color::Magenta);
        // The cells left of it (the percentages' own) keep their style.
        assert_eq!(buf[(4, 0)].fg, Color::Reset);
        assert_eq!(cpu_label_width(6400.0), 5);
        assert_eq!(cpu_label_width(200.0), 4);
    }

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
