//! One row per GPU: util, power as % of TDP, memory, temperature, clock and a diagnosis badge.
//! A GPU whose util says busy while a busy-but-idle finding is open gets a badge that survives
//! without colour (symbol, bold, reverse).

use std::fmt::Write;

use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::Span;
use ratatui::Frame;

use super::badge::{badge, NARROW_BADGE, WIDE_BADGE};
use super::format::write_bar;
use super::pen::{push_fit, Pen};
use super::theme::Theme;
use crate::app::{AppState, Pane};
use crate::history::DeviceHistory;
use crate::store::Store;

/// Where the overview's GPU rows landed.
pub struct Drawn {
    /// Screen row of the first GPU row, how many were drawn, and the first one's position.
    pub top: u16,
    pub rows: u16,
    pub first: usize,
}

/// Draws the overview: bordered, or `compact` (one title line over the rows, no borders) when
/// that is what lets every GPU have a row.
pub fn render(
    frame: &mut Frame,
    area: Rect,
    state: &AppState,
    store: &Store,
    compact: bool,
    theme: &Theme,
) -> Drawn {
    let focused = state.focus == Pane::Overview && state.view == crate::app::View::Main;
    let devices = &store.history().devices;
    let n = devices.len();
    // Every GPU has a row when the rows under the header hold them all (compact: no borders).
    let height = usize::from(if compact {
        area.height
    } else {
        area.height.saturating_sub(2)
    });
    let fits = height > n;
    let inner = if compact {
        area
    } else {
        bordered(frame, area, (store, n, fits, focused), theme)
    };
    let wide = inner.width >= 118;
    // Narrow rows take 75 columns: from 93 the SM clock and PCIe link fit after them.
    let links = wide || inner.width >= 93;
    // The clock events come whole or not at all: one letter past PCIE says nothing.
    let events = wide && inner.width >= 139;
    let band_rows = u16::from(compact && !fits);
    if band_rows == 1 && inner.height > 0 {
        band_row(
            frame,
            Rect { height: 1, ..inner },
            (store, n, focused),
            theme,
        );
    }
    if band_rows < inner.height {
        let row = Rect {
            y: inner.y + band_rows,
            height: 1,
            ..inner
        };
        column_names(
            frame,
            row,
            (compact && fits && focused, (wide, links, events)),
            theme,
        );
    }
    let header_rows = usize::from(band_rows) + 1;
    let rows = usize::from(inner.height).saturating_sub(header_rows);
    let first = scroll_start(state.selected_gpu, rows, n);
    let mut pen = Pen::new(frame.buffer_mut(), inner);
    let picked = theme
        .selected()
        .remove_modifier(ratatui::style::Modifier::REVERSED)
        .add_modifier(ratatui::style::Modifier::BOLD);
    for (y, (i, dev)) in
        (inner.y + header_rows as u16..).zip(devices.iter().enumerate().skip(first).take(rows))
    {
        let selected = i == state.selected_gpu;
        pen.row(y, selected.then_some(picked));
        row(&mut pen, dev, selected, (wide, links, events), store, theme);
    }
    Drawn {
        top: inner.y + header_rows as u16,
        rows: rows.min(n - first) as u16,
        first,
    }
}

/// The overview's border; returns what is inside it. The title names the flagged GPUs when
/// not every row `fits`.
fn bordered(
    frame: &mut Frame,
    area: Rect,
    (store, n, fits, focused): (&Store, usize, bool, bool),
    theme: &Theme,
) -> Rect {
    let border = if focused {
        theme.focus_border()
    } else {
        theme.border()
    };
    super::pen::with_strings(|[text, culprits, list]| {
        let title: super::border::Title = if fits {
            let _ = write!(text, " GPUs ({n}) ");
            Span::styled(text.as_str(), theme.title()).into()
        } else {
            // The title runs between the corners.
            let width = usize::from(area.width.saturating_sub(2));
            let band = band(store, (n, focused, width), theme, [text, culprits, list]);
            super::border::Title::Pieces(band, ratatui::layout::Alignment::Left)
        };
        super::border::Border::new(title, border).render(area, frame.buffer_mut());
    });
    super::border::Border::inner(area)
}

/// The column names, always there: a table of bars without them is a puzzle. Their style is
/// on their text only, as a `Paragraph` of the line drew it; `title` where a compact overview
/// that has the focus shows no other title.
fn column_names(
    frame: &mut Frame,
    row: Rect,
    (title, cols): (bool, (bool, bool, bool)),
    theme: &Theme,
) {
    let mut style = theme.label();
    if title {
        style = style.patch(theme.title());
    }
    let header = header_text(cols);
    super::pen::set_str(
        frame.buffer_mut(),
        row.x,
        row.y,
        header,
        row.width.into(),
        style,
    );
}

/// The band on a row of its own (a borderless, compact overview).
fn band_row(
    frame: &mut Frame,
    row: Rect,
    (store, n, focused): (&Store, usize, bool),
    theme: &Theme,
) {
    super::pen::with_strings(|[head, culprits, list]| {
        let width = usize::from(row.width);
        let band = band(store, (n, focused, width), theme, [head, culprits, list]);
        super::pen::put_spans(frame.buffer_mut(), row, band.as_slice());
    });
}

/// "GPUs (64) · ◀ culprit GPU 6 · findings on GPU 2-5 · ↑↓ or 0-9 to scroll": the line over
/// a table that does not fit, in `width` columns, its words written into `head`, `culprits`
/// and `list` (kept from frame to frame). The GPUs a hang waits for come first, then those
/// with findings, each list cut at a whole number with "…"; the keys only where they fit.
fn band<'a>(
    store: &Store,
    (n, focused, width): (usize, bool, usize),
    theme: &Theme,
    [head, culprits, list]: [&'a mut String; 3],
) -> super::border::Pieces<'a> {
    const KEYS: &str = " · ↑↓ or 0-9 to scroll ";
    let style = if focused {
        theme.title()
    } else {
        theme.label()
    };
    let _ = write!(head, "GPUs ({n}) · ");
    let active = store.findings().active();
    let mut room = width.saturating_sub(head.chars().count());
    FLAGGED.with_borrow_mut(|flagged| {
        gpus_into(
            flagged,
            active
                .iter()
                .filter_map(|f| f.culprit.as_ref())
                .map(|c| c.device),
        );
        if !flagged.is_empty() {
            // Half the room at most: a culprit comes from an open finding, whose GPUs follow.
            culprits.push_str("◀ culprit GPU ");
            write_ranges_within(culprits, flagged, (room / 2).saturating_sub(17));
            culprits.push_str(" · ");
            room = room.saturating_sub(culprits.chars().count());
        }
        gpus_into(flagged, active.iter().map(|f| f.device));
        if !flagged.is_empty() {
            list.push_str("findings on GPU ");
            write_ranges_within(list, flagged, room.saturating_sub(16));
        }
    });
    let mut spans = super::border::Pieces::default();
    spans.push(Span::styled(head.as_str(), style));
    let worst = active.iter().map(|f| f.severity).max();
    let flagged_style = worst.map_or(theme.label(), |s| theme.severity(s));
    if !culprits.is_empty() {
        spans.push(Span::styled(culprits.as_str(), flagged_style));
    }
    let used = if list.is_empty() {
        spans.push(Span::styled("no findings", theme.dim()));
        "no findings".len()
    } else {
        spans.push(Span::styled(list.as_str(), flagged_style));
        list.chars().count()
    };
    if used + KEYS.chars().count() <= room {
        spans.push(Span::styled(KEYS, theme.dim()));
    }
    spans
}

/// `gpus`, sorted and each once, into `out`.
fn gpus_into(out: &mut Vec<u32>, gpus: impl Iterator<Item = u32>) {
    out.clear();
    out.extend(gpus);
    out.sort_unstable();
    out.dedup();
}

thread_local! {
    /// The GPUs with findings, kept from frame to frame.
    static FLAGGED: std::cell::RefCell<Vec<u32>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// As `write_ranges`, within `room` characters: the ranges that fit whole, then "…" where
/// some are left out.
fn write_ranges_within(out: &mut String, sorted: &[u32], room: usize) {
    let start = out.len();
    write_ranges(out, sorted);
    if out.len() - start <= room {
        return;
    }
    // Back to the last whole range that leaves room for " …" (the text is ASCII).
    let keep = out[start..start + room.saturating_sub(1).min(out.len() - start)]
        .rfind(' ')
        .unwrap_or(0);
    out.truncate(start + keep);
    out.push_str(if keep == 0 { "…" } else { " …" });
}

/// "2-5 10 12-13": sorted GPU numbers, runs written as ranges so 64 GPUs fit on a line, onto
/// `out`.
fn write_ranges(out: &mut String, sorted: &[u32]) {
    let mut i = 0;
    while i < sorted.len() {
        let mut j = i;
        // MIG instances are listed one by one ("0:9"), never as a range.
        let gpu = |n: u32| n < crate::model::MIG_INDEX_BASE;
        while j + 1 < sorted.len() && gpu(sorted[j + 1]) && sorted[j + 1] == sorted[j] + 1 {
            j += 1;
        }
        let sep = if i == 0 { "" } else { " " };
        let _ = if j == i {
            write!(out, "{sep}{}", crate::model::gpu_label(sorted[i]))
        } else {
            write!(out, "{sep}{}-{}", sorted[i], sorted[j])
        };
        i = j + 1;
    }
}

/// The first row shown so that the selected GPU is visible.
pub fn scroll_start(selected: usize, rows: usize, n: usize) -> usize {
    if rows == 0 || n <= rows {
        0
    } else {
        selected.saturating_sub(rows - 1).min(n - rows)
    }
}

fn header_text((wide, links, events): (bool, bool, bool)) -> &'static str {
    match (wide, links, events) {
        (true, _, true) => "  # NAME         DIAGNOSIS        UTIL              POWER %TDP             MEMORY                  TEMP   SM CLK  PCIE   CLOCK EVENTS",
        (true, _, false) => "  # NAME         DIAGNOSIS        UTIL              POWER %TDP             MEMORY                  TEMP   SM CLK  PCIE",
        (false, true, _) => "  # NAME  DIAGNOSIS  UTIL         POWER %TDP        MEMORY           TEMP   SM CLK  PCIE",
        (false, false, _) => "  # NAME  DIAGNOSIS  UTIL         POWER %TDP        MEMORY           TEMP",
    }
}

/// Writes GPU `dev`'s row where the pen is.
fn row(
    pen: &mut Pen,
    dev: &DeviceHistory,
    selected: bool,
    (wide, links, events): (bool, bool, bool),
    store: &Store,
    theme: &Theme,
) {
    let s = dev.samples.latest().copied().unwrap_or_default();
    let i = dev.info.index;
    let tdp = dev.info.tdp_w();
    let power_pct = s.power_w.zip(tdp).map(|(p, t)| p / t * 100.0);
    let total = dev.info.memory_total_bytes;
    let mem_pct = s
        .mem_used_bytes
        .zip(total)
        .map(|(u, t)| u as f32 / t as f32 * 100.0);
    let (bw, name_w) = if wide { (12, 12) } else { (6, 5) };
    // A GPU that looks busy and is not: its util bar takes the finding's colour.
    let util_style = store
        .findings()
        .worst_on(i)
        .filter(|f| crate::rules::is_busy_but_idle(&f.rule))
        .map_or(theme.util(), |f| theme.severity(f.severity));
    pen.put(if selected { "▶" } else { " " }, theme.title());
    ident(pen, dev, wide, name_w);
    // The diagnosis comes right after the name: the last thing a narrow terminal clips.
    let badge_w = if wide { WIDE_BADGE } else { NARROW_BADGE };
    let style = badge(dev, store, wide, theme, &mut pen.text);
    fit_in_place(&mut pen.text, badge_w);
    let used = pen.text.chars().count();
    pen.put_text(style);
    pen.put(&SPACES[..=badge_w.saturating_sub(used)], Style::default());
    if let Some(m) = dev.info.mig.as_ref() {
        instance_activity(pen, &s, m.parent, (wide, bw), util_style, theme);
    } else {
        util_and_power(pen, &s, power_pct, (bw, util_style), theme);
    }
    write_bar(&mut pen.text, mem_pct, if wide { 8 } else { 4 });
    pen.put_text(theme.mem());
    let gib = |b: u64| b as f64 / crate::model::GIB as f64;
    match s.mem_used_bytes.zip(total) {
        Some((u, t)) => pen.fmt(
            format_args!(" {} {:>3.0}/{:<3.0}G ", Pct(mem_pct), gib(u), gib(t)),
            Style::default(),
        ),
        None => pen.fmt(
            format_args!(" {}      –   ", Pct(mem_pct)),
            Style::default(),
        ),
    }
    match s.temp_c {
        Some(t) => pen.fmt(format_args!("{t:>3.0}°C"), Style::default()),
        None => pen.put(" –°C", Style::default()),
    }
    if links {
        link_cells(pen, &s, events);
    }
}

/// The util and power bars, each with its figure.
fn util_and_power(
    pen: &mut Pen,
    s: &crate::model::DeviceSample,
    power_pct: Option<f32>,
    (bw, util_style): (usize, Style),
    theme: &Theme,
) {
    write_bar(&mut pen.text, s.util_gpu_pct, bw);
    pen.put_text(util_style);
    pen.fmt(format_args!(" {} ", Pct(s.util_gpu_pct)), Style::default());
    write_bar(&mut pen.text, power_pct, bw);
    pen.put_text(theme.power());
    match s.power_w {
        Some(w) => pen.fmt(
            format_args!(" {} {w:>3.0}W ", Pct(power_pct)),
            Style::default(),
        ),
        None => pen.fmt(format_args!(" {}      ", Pct(power_pct)), Style::default()),
    }
}

/// Spaces to pad with (wider than any badge cell).
const SPACES: &str = "                                ";

/// `text` cut in place to `n` characters, with an ellipsis (`clip` without a new string).
fn fit_in_place(text: &mut String, n: usize) {
    if text.chars().count() > n {
        let cut = text
            .char_indices()
            .nth(n.saturating_sub(1))
            .map_or(text.len(), |(at, _)| at);
        text.truncate(cut);
        text.push('…');
    }
}

/// "  42%" for a percentage, "  –%" for a gap.
struct Pct(Option<f32>);

impl std::fmt::Display for Pct {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            Some(v) => write!(f, "{v:3.0}%"),
            None => f.write_str("  –%"),
        }
    }
}

/// The SM clock, the `PCIe` link and, with `events`, the clock-event reasons.
fn link_cells(pen: &mut Pen, s: &crate::model::DeviceSample, events: bool) {
    match s.sm_clock_mhz {
        Some(c) => pen.fmt(format_args!(" {c:>4}MHz"), Style::default()),
        None => pen.put("        –", Style::default()),
    }
    match s.pcie_gen.zip(s.pcie_width) {
        Some((g, w)) => pen.fmt(format_args!(" G{g}x{w:<3}"), Style::default()),
        None => pen.put("  –    ", Style::default()),
    }
    if events {
        // The reasons clocks are held down (power cap, thermal…), which nvidia-smi hides in -q.
        pen.text.clear();
        match s.clock_events {
            Some(e) => super::pen::with_strings(|[names]| {
                for (k, name) in crate::model::clock_event::each(e).enumerate() {
                    if k > 0 {
                        names.push(',');
                    }
                    names.push_str(name);
                }
                pen.text.push(' ');
                push_fit(&mut pen.text, names, 20, 0);
            }),
            None => pen.text.push_str(" –"),
        }
        pen.put_text(Style::default());
    }
}

/// The row's number and name; a MIG instance's GPU instance id and profile under its GPU, as
/// nvidia-smi lists them ("└9 1g.18gb"; at 80 columns "└9 1g.18").
fn ident(pen: &mut Pen, dev: &DeviceHistory, wide: bool, name_w: usize) {
    let Some(m) = &dev.info.mig else {
        // `*` marks a simulated GPU (the demo), as the header says.
        let name = dev.info.name.trim_start_matches("NVIDIA ");
        let start = pen.text.len();
        let _ = write!(pen.text, "{:>2} ", dev.info.index);
        // A number wider than the header's two digits (a recording's GPU 1234) takes its
        // room from the name, so that the columns after it stay under their headings.
        let name_w = name_w.saturating_sub((pen.text.len() - start).saturating_sub(3));
        match name.strip_suffix(" (simulated)") {
            Some(stem) => super::pen::with_strings(|[marked]| {
                marked.push_str(stem);
                marked.push('*');
                push_fit(&mut pen.text, marked, name_w, name_w);
            }),
            None => push_fit(&mut pen.text, name, name_w, name_w),
        }
        pen.text.push(' ');
        return pen.put_text(Style::default());
    };
    let profile = if wide {
        m.profile.as_str()
    } else {
        m.profile.trim_end_matches("gb")
    };
    super::pen::with_strings(|[text]| {
        let _ = write!(text, "└{} {profile}", m.gpu_instance);
        push_fit(&mut pen.text, text, name_w + 3, name_w + 3);
    });
    pen.text.push(' ');
    pen.put_text(Style::default());
}

/// NVML has no utilization or power for a MIG instance: its own SM activity (GPM) stands
/// where util would, and the power columns say whose power it is.
fn instance_activity(
    pen: &mut Pen,
    s: &crate::model::DeviceSample,
    parent: u32,
    (wide, bw): (bool, usize),
    util_style: Style,
    theme: &Theme,
) {
    let sm = s.gpm.sm_active_pct;
    write_bar(&mut pen.text, sm, bw);
    pen.put_text(util_style);
    pen.fmt(format_args!(" {} ", Pct(sm)), Style::default());
    super::pen::with_strings(|[whose]| {
        let sm = if wide { "SM active" } else { "SM act" };
        let _ = write!(whose, "{sm} · W: GPU {parent}");
        push_fit(&mut pen.text, whose, bw + 10, bw + 10);
    });
    pen.text.push(' ');
    pen.put_text(theme.dim());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gpu_numbers_are_written_as_ranges_and_instances_one_by_one() {
        let written = |sorted: &[u32]| {
            let mut out = String::new();
            write_ranges(&mut out, sorted);
            out
        };
        assert_eq!(written(&[2, 3, 4, 5, 10, 12, 13]), "2-5 10 12-13");
        assert_eq!(written(&[7]), "7");
        assert_eq!(written(&[]), "");
        let mig = crate::model::MIG_INDEX_BASE;
        let (a, b) = (mig + 9, mig + 10);
        assert_eq!(
            written(&[0, 1, a, b]),
            format!(
                "0-1 {} {}",
                crate::model::gpu_label(a),
                crate::model::gpu_label(b)
            )
        );
    }
}
