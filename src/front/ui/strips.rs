//! The time chart as rows of bars, for areas too short to plot: a braille chart of one or two
//! rows lets the series drawn last hide the others.

use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::Frame;

use super::chart::{current_span, health_line, Metric};
use super::theme::Theme;
use crate::rules::Finding;

/// Under this many rows a braille chart has one or two lines of plot where four series
/// collapse into one; each series gets a row of bars of its own instead.
pub(super) const STRIPS_BELOW_ROWS: u16 = 8;

/// The series as rows of bars (▁ to █, a column per slice of the window, blank where there is
/// no data), power first, each named with its latest value; finding spans tint the columns.
pub(super) fn strips(
    frame: &mut Frame,
    area: Rect,
    dev: &crate::history::DeviceHistory,
    window: u64,
    metrics: &[Metric; 4],
    spans: &[(f64, f64, &Finding)],
    theme: &Theme,
) {
    let gpu = dev.info.index;
    let mut title = vec![Span::styled(
        format!(
            " GPU {} · last {} ",
            crate::model::gpu_label(gpu),
            super::format::duration(window)
        ),
        theme.title(),
    )];
    if let Some((_, _, f)) = current_span(spans) {
        title.push(Span::styled(
            format!("{} {} ", f.severity.marker(), f.rule),
            theme.severity(f.severity),
        ));
    }
    let inner = super::border::Border::inner(area);
    super::pen::with_strings(|health| {
        super::border::Border::new(title, theme.border())
            .bottom(health_line(dev, area.width, theme, health))
            .render(area, frame.buffer_mut());
    });
    let secs = window as f64 / 1000.0;
    let (label_w, value_w) = (7u16, 5u16);
    let bars_w = inner.width.saturating_sub(label_w + value_w);
    // Row by row with `put_line`: what a `Paragraph` of these lines drew, without collecting
    // them or splitting their text into graphemes.
    for (y, &i) in (inner.y..inner.bottom()).zip(&[1, 0, 2, 3]) {
        let (name, style, segments) = &metrics[i];
        let short = name.split(' ').next().unwrap_or(name);
        let latest = segments.last().and_then(|s| s.last()).map(|p| p.1);
        let value = latest.map_or_else(|| " n/a".to_string(), |v| format!("{v:>4.0}%"));
        let line = Line::from(vec![
            Span::styled(format!("{short:<6} "), *style),
            Span::styled(bar_row(segments, secs, bars_w as usize), *style),
            Span::styled(value, *style),
        ]);
        super::pen::put_line(frame.buffer_mut(), Rect { y, ..inner }, &line);
    }
    if let Some(bg) = spans.iter().find_map(|(_, _, f)| theme.tint(f.severity)) {
        for (a, b, _) in spans {
            let col =
                |t: f64| ((t + secs) / secs * f64::from(bars_w)).clamp(0.0, f64::from(bars_w));
            for x in col(*a) as u16..col(*b).ceil() as u16 {
                for y in inner.y..inner.y + inner.height {
                    if let Some(cell) = frame.buffer_mut().cell_mut((inner.x + label_w + x, y)) {
                        cell.set_bg(bg);
                    }
                }
            }
        }
    }
}

/// One series as `width` bars over the last `secs` seconds: each the mean of its points.
pub(super) fn bar_row(segments: &[Vec<(f64, f64)>], secs: f64, width: usize) -> String {
    const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    let mut sums = vec![(0.0f64, 0u32); width];
    // The column of a point; the newest sits exactly at "now", the right edge.
    let column = |x: f64| {
        let col = ((x + secs) / secs * width as f64).floor();
        (col >= 0.0 && col as usize <= width && width > 0).then(|| (col as usize).min(width - 1))
    };
    for &(x, y) in segments.iter().flatten() {
        if let Some(col) = column(x) {
            let c = &mut sums[col];
            *c = (c.0 + y, c.1 + 1);
        }
    }
    // Points sparser than columns (a process's trail, a point a second) leave columns empty
    // inside a line: they carry the point before them, so only real gaps stay blank.
    for seg in segments {
        for pair in seg.windows(2) {
            if let (Some(a), Some(b)) = (column(pair[0].0), column(pair[1].0)) {
                for c in sums.iter_mut().take(b).skip(a + 1) {
                    if c.1 == 0 {
                        *c = (pair[0].1, 1);
                    }
                }
            }
        }
    }
    sums.iter()
        .map(|&(sum, n)| {
            if n == 0 {
                ' '
            } else {
                let level = (sum / f64::from(n) / 100.0 * 7.0).round().clamp(0.0, 7.0);
                BARS[level as usize]
            }
        })
        .collect()
}
