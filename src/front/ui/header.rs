//! The header: where the data comes from and what watching costs.

use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::Frame;

use super::theme::Theme;
use crate::app::AppState;
use crate::store::Store;

pub fn render(frame: &mut Frame, area: Rect, _state: &AppState, store: &Store, theme: &Theme) {
    let s = store.system();
    let opt = |v: &Option<String>| v.clone().unwrap_or_else(|| "?".into());
    let cost = store.cost();
    let cpu = cost.cpu_pct.map_or("–".into(), |c| format!("{c:.1}%"));
    let tick = cost
        .tick_ms_median
        .map_or("–".into(), |t| format!("{t:.2}ms"));
    let rss = cost
        .rss_bytes
        .map_or("–".into(), |b| format!("{}M", b / (1024 * 1024)));
    let source = format!(
        "{} · every {}ms · {}",
        s.host,
        store.interval().as_millis() as u64,
        store.source_label()
    );
    let versions = format!(
        " · driver {} · CUDA {}",
        opt(&s.driver_version),
        opt(&s.cuda_driver_version)
    );
    let cost = format!(" · self: CPU {cpu} · tick {tick} · RSS {rss}");
    // What is watched comes first and goes last: on a narrow terminal the cost goes, then the
    // versions, then the source is cut with an ellipsis.
    let room = usize::from(area.width).saturating_sub("gpuwatch ".len());
    let fits = |parts: &[&str]| parts.iter().map(|p| p.chars().count()).sum::<usize>() <= room;
    let driver = format!(" · driver {}", opt(&s.driver_version));
    let (versions, cost) = if fits(&[&source, &versions, &cost]) {
        (versions, cost)
    } else if fits(&[&source, &versions]) {
        (versions, String::new())
    } else if fits(&[&source, &driver]) {
        (driver, String::new())
    } else {
        (String::new(), String::new())
    };
    let line = Line::from(vec![
        Span::styled("gpuwatch ", theme.title()),
        Span::raw(crate::text::clip(&source, room)),
        Span::raw(versions),
        Span::styled(cost, theme.dim()),
    ]);
    // One line, without a style of its own, that fits (the parts were chosen to): what a
    // `Paragraph` of it drew, without splitting its text into graphemes.
    super::pen::put_line(frame.buffer_mut(), area, &line);
}
