//! The header: where the data comes from and what watching costs.

use std::fmt::Write;

use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::Frame;

use super::pen::Pen;
use super::theme::Theme;
use crate::app::AppState;
use crate::store::Store;

pub fn render(frame: &mut Frame, area: Rect, _state: &AppState, store: &Store, theme: &Theme) {
    super::pen::with_strings(|[source, versions, driver, cost]| {
        write_parts(store, [source, versions, driver, cost]);
        // What is watched comes first and goes last: on a narrow terminal the cost goes, then
        // the versions, then the source is cut with an ellipsis.
        let room = usize::from(area.width).saturating_sub("gpuwatch ".len());
        let fits = |parts: &[&str]| parts.iter().map(|p| p.chars().count()).sum::<usize>() <= room;
        let (versions, cost): (&str, &str) = if fits(&[source, versions, cost]) {
            (versions, cost)
        } else if fits(&[source, versions]) {
            (versions, "")
        } else if fits(&[source, driver]) {
            (driver, "")
        } else {
            crate::text::clip_in_place(source, room);
            ("", "")
        };
        // One line that fits (the parts were chosen to), piece by piece.
        let mut pen = Pen::new(frame.buffer_mut(), area);
        pen.put("gpuwatch ", theme.title());
        pen.put(source, Style::default());
        pen.put(versions, Style::default());
        pen.put(cost, theme.dim());
    });
}

/// The header's parts: where the data comes from, the driver's and CUDA's versions (and the
/// driver's alone, for a narrower terminal), what watching costs.
fn write_parts(store: &Store, [source, versions, driver, cost]: [&mut String; 4]) {
    let s = store.system();
    let _ = write!(
        source,
        "{} · every {}ms · {}",
        s.host,
        store.interval().as_millis() as u64,
        store.source_label()
    );
    let _ = write!(
        versions,
        " · driver {} · CUDA {}",
        or_unknown(s.driver_version.as_deref()),
        or_unknown(s.cuda_driver_version.as_deref())
    );
    let _ = write!(
        driver,
        " · driver {}",
        or_unknown(s.driver_version.as_deref())
    );
    let c = store.cost();
    cost.push_str(" · self: CPU ");
    let _ = match c.cpu_pct {
        Some(v) => write!(cost, "{v:.1}%"),
        None => write!(cost, "–"),
    };
    cost.push_str(" · tick ");
    let _ = match c.tick_ms_median {
        Some(t) => write!(cost, "{t:.2}ms"),
        None => write!(cost, "–"),
    };
    cost.push_str(" · RSS ");
    let _ = match c.rss_bytes {
        Some(b) => write!(cost, "{}M", b / (1024 * 1024)),
        None => write!(cost, "–"),
    };
}

fn or_unknown(v: Option<&str>) -> &str {
    v.unwrap_or("?")
}
