//! The time chart as rows of bars, for areas too short to plot: a braille chart of one or two
//! rows lets the series drawn last hide the others.

use std::fmt::Write;

use ratatui::layout::{Alignment, Rect};
use ratatui::text::Span;
use ratatui::Frame;

use super::border::{Pieces, Title};
use super::chart::{current_span, health_line, Metric};
use super::theme::Theme;
use crate::rules::Finding;

/// Under this many rows a braille chart has one or two lines of plot where four series
/// collapse into one; each series gets a row of bars of its own instead.
pub(super) const STRIPS_BELOW_ROWS: u16 = 8;

/// The series as rows of bars (▁ to █, a column per slice of the window, blank where there is
/// no data), power first, each named with its latest value, none once the series has stopped
/// for longer than `gap_ms` (a lost GPU read its last power beside "LOST"); finding spans tint
/// the columns.
pub(super) fn strips(
    frame: &mut Frame,
    area: Rect,
    dev: &crate::history::DeviceHistory,
    (window, gap_ms): (u64, u64),
    metrics: &[Metric; 4],
    spans: &[(f64, f64, &Finding)],
    theme: &Theme,
) {
    let gpu = dev.info.index;
    let inner = super::border::Border::inner(area);
    super::pen::with_strings(|[head, named]| {
        let _ = write!(
            head,
            " GPU {} · last {} ",
            crate::model::gpu_label(gpu),
            crate::text::Compact(window)
        );
        let mut title = Pieces::default();
        title.push(Span::styled(head.as_str(), theme.title()));
        if let Some((_, _, f)) = current_span(spans) {
            let _ = write!(named, "{} {} ", f.severity.marker(), f.rule);
            title.push(Span::styled(named.as_str(), theme.severity(f.severity)));
        }
        super::pen::with_strings(|health| {
            super::border::Border::new(Title::Pieces(title, Alignment::Left), theme.border())
                .bottom(health_line(dev, area.width, theme, health))
                .render(area, frame.buffer_mut());
        });
    });
    let secs = window as f64 / 1000.0;
    let (label_w, value_w) = (7u16, 5u16);
    let bars_w = inner.width.saturating_sub(label_w + value_w);
    // Row by row with `put_spans`: what a `Paragraph` of these lines drew, without collecting
    // them or splitting their text into graphemes.
    super::pen::with_strings(|[label, bars, value]| {
        for (y, &i) in (inner.y..inner.bottom()).zip(&[1, 0, 2, 3]) {
            let (name, style, segments) = &metrics[i];
            let short = name.split(' ').next().unwrap_or(name);
            let last = segments.last().and_then(|s| s.last());
            let stopped = last.is_some_and(|p| p.0 < -(gap_ms as f64 / 1000.0));
            label.clear();
            bars.clear();
            value.clear();
            let _ = write!(label, "{short:<6} ");
            write_bar_row(bars, segments, secs, bars_w as usize);
            // "n/a": never read here (a MIG instance's power); "–": no longer read.
            let _ = match last {
                Some(_) if stopped => write!(value, "   –"),
                Some(p) => write!(value, "{:>4.0}%", p.1),
                None => write!(value, " n/a"),
            };
            let line = [&*label, &*bars, &*value].map(|s| Span::styled(s.as_str(), *style));
            super::pen::put_spans(frame.buffer_mut(), Rect { y, ..inner }, &line);
        }
    });
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

thread_local! {
    /// Each column's sum and count, kept from row to row and frame to frame.
    static SUMS: std::cell::RefCell<Vec<(f64, u32)>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// One series as `width` bars over the last `secs` seconds, each the mean of its points,
/// written onto `out`.
pub(super) fn write_bar_row(
    out: &mut String,
    segments: &[Vec<(f64, f64)>],
    secs: f64,
    width: usize,
) {
    const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    SUMS.with_borrow_mut(|sums| {
        sums.clear();
        sums.resize(width, (0.0, 0));
        sum_columns(sums, segments, secs);
        out.extend(sums.iter().map(|&(sum, n)| {
            if n == 0 {
                ' '
            } else {
                let level = (sum / f64::from(n) / 100.0 * 7.0).round().clamp(0.0, 7.0);
                BARS[level as usize]
            }
        }));
    });
}

/// Each column's sum and count of the points that fall in it (`sums.len()` columns).
fn sum_columns(sums: &mut [(f64, u32)], segments: &[Vec<(f64, f64)>], secs: f64) {
    let width = sums.len();
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
}
