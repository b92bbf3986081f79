//! One row per GPU: util, power as % of TDP, memory, temperature, clock and a diagnosis badge.
//! A GPU whose util says busy while a busy-but-idle finding is open gets a badge that survives
//! without colour (symbol, bold, reverse).

use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};
use ratatui::Frame;

use super::format::{bar, clip};
use super::theme::Theme;
use crate::app::{AppState, Pane};
use crate::history::DeviceHistory;
use crate::model::DeviceStatus;
use crate::rules::RuleId;
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
        // Bordered: the title names the flagged GPUs when not every row fits.
        let title = if fits {
            Line::styled(format!(" GPUs ({n}) "), theme.title())
        } else {
            band(store, n, focused, theme)
        };
        let block = Block::default()
            .borders(Borders::ALL)
            .title(title)
            .border_style(if focused {
                theme.focus_border()
            } else {
                theme.border()
            });
        let inner = block.inner(area);
        frame.render_widget(block, area);
        inner
    };
    let wide = inner.width >= 118;
    // Narrow rows take 75 columns: from 93 the SM clock and PCIe link fit after them.
    let links = wide || inner.width >= 93;
    // The clock events come whole or not at all: one letter past PCIE says nothing.
    let events = wide && inner.width >= 139;
    let mut lines = Vec::new();
    if compact && !fits {
        lines.push(band(store, n, focused, theme));
    }
    // The column names are always there: a table of bars without them is a puzzle.
    let header = header_line((wide, links, events), theme);
    lines.push(if compact && fits && focused {
        header.patch_style(theme.title())
    } else {
        header
    });
    let header_rows = lines.len();
    let rows = usize::from(inner.height).saturating_sub(header_rows);
    let first = scroll_start(state.selected_gpu, rows, n);
    for (i, dev) in devices.iter().enumerate().skip(first).take(rows) {
        lines.push(row(
            dev,
            i == state.selected_gpu,
            (wide, links, events),
            store,
            theme,
        ));
    }
    frame.render_widget(Paragraph::new(lines), inner);
    Drawn {
        top: inner.y + header_rows as u16,
        rows: rows.min(n - first) as u16,
        first,
    }
}

/// "GPUs (64) · findings on 3 17 42 · ↑↓ scrolls": the line over a table that does not fit.
fn band<'a>(store: &Store, n: usize, focused: bool, theme: &Theme) -> Line<'a> {
    let mut flagged: Vec<u32> = store.findings().active().iter().map(|f| f.device).collect();
    flagged.sort_unstable();
    flagged.dedup();
    let style = if focused {
        theme.title()
    } else {
        theme.label()
    };
    let mut spans = vec![Span::styled(format!("GPUs ({n}) · "), style)];
    if flagged.is_empty() {
        spans.push(Span::styled("no findings", theme.dim()));
    } else {
        let worst = store.findings().active().iter().map(|f| f.severity).max();
        spans.push(Span::styled(
            format!("findings on GPU {}", ranges(&flagged)),
            worst.map_or(theme.label(), |s| theme.severity(s)),
        ));
    }
    spans.push(Span::styled(" · ↑↓ or 0-9 to scroll ", theme.dim()));
    Line::from(spans)
}

/// "2-5 10 12-13": sorted GPU numbers, runs written as ranges so 64 GPUs fit on a line.
fn ranges(sorted: &[u32]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < sorted.len() {
        let mut j = i;
        // MIG instances are listed one by one ("0:9"), never as a range.
        let gpu = |n: u32| n < crate::model::MIG_INDEX_BASE;
        while j + 1 < sorted.len() && gpu(sorted[j + 1]) && sorted[j + 1] == sorted[j] + 1 {
            j += 1;
        }
        out.push(if j == i {
            crate::model::gpu_label(sorted[i]).to_string()
        } else {
            format!("{}-{}", sorted[i], sorted[j])
        });
        i = j + 1;
    }
    out.join(" ")
}

/// The first row shown so that the selected GPU is visible.
pub fn scroll_start(selected: usize, rows: usize, n: usize) -> usize {
    if rows == 0 || n <= rows {
        0
    } else {
        selected.saturating_sub(rows - 1).min(n - rows)
    }
}

fn header_line((wide, links, events): (bool, bool, bool), theme: &Theme) -> Line<'static> {
    let text = match (wide, links, events) {
        (true, _, true) => "  # NAME         DIAGNOSIS        UTIL              POWER %TDP             MEMORY                  TEMP   SM CLK  PCIE   CLOCK EVENTS",
        (true, _, false) => "  # NAME         DIAGNOSIS        UTIL              POWER %TDP             MEMORY                  TEMP   SM CLK  PCIE",
        (false, true, _) => "  # NAME  DIAGNOSIS  UTIL         POWER %TDP        MEMORY           TEMP   SM CLK  PCIE",
        (false, false, _) => "  # NAME  DIAGNOSIS  UTIL         POWER %TDP        MEMORY           TEMP",
    };
    Line::styled(text, theme.label())
}

/// Width of the diagnosis column, which comes before the bars so that it is the last thing a
/// narrow terminal clips.
const NARROW_BADGE: usize = 10;
const WIDE_BADGE: usize = 16;

/// A rule's short name, for where its name does not fit: "? STARV 5s" in ten cells. A rule
/// this build does not know (a newer recording's) is shown by its id.
fn short(rule: &str) -> String {
    RuleId::parse(rule).map_or_else(|| rule.to_uppercase(), |id| id.short().into())
}

fn row<'a>(
    dev: &DeviceHistory,
    selected: bool,
    (wide, links, events): (bool, bool, bool),
    store: &Store,
    theme: &Theme,
) -> Line<'a> {
    let s = dev.samples.latest().copied().unwrap_or_default();
    let i = dev.info.index;
    // `*` marks a simulated GPU (the demo), as the header says.
    let name = dev
        .info
        .name
        .trim_start_matches("NVIDIA ")
        .replace(" (simulated)", "*");
    let tdp = dev.info.tdp_w();
    let power_pct = s.power_w.zip(tdp).map(|(p, t)| p / t * 100.0);
    let total = dev.info.memory_total_bytes;
    let mem_pct = s
        .mem_used_bytes
        .zip(total)
        .map(|(u, t)| u as f32 / t as f32 * 100.0);
    let gib = |b: u64| b as f64 / crate::model::GIB as f64;
    let mem_gib = s
        .mem_used_bytes
        .zip(total)
        .map_or("     –  ".into(), |(u, t)| {
            format!("{:>3.0}/{:<3.0}G", gib(u), gib(t))
        });
    let (bw, name_w) = if wide { (12, 12) } else { (6, 5) };
    let pct = |v: Option<f32>| v.map_or("  –%".into(), |v| format!("{v:3.0}%"));
    let badge = badge(dev, store, wide, theme);
    // A GPU that looks busy and is not: its util bar takes the finding's colour.
    let util_style = store
        .findings()
        .worst_on(i)
        .filter(|f| crate::rules::is_busy_but_idle(&f.rule))
        .map_or(theme.util(), |f| theme.severity(f.severity));
    let mig = dev.info.mig.as_ref();
    let ident = ident(dev, &name, wide, name_w);
    // Room for every span of the widest row at once: growing it cost an allocation a row.
    let mut spans = Vec::with_capacity(16);
    spans.extend([
        Span::styled(if selected { "▶" } else { " " }, theme.title()),
        Span::raw(ident),
    ]);
    // The diagnosis comes right after the name: the last thing a narrow terminal clips.
    let badge_w = if wide { WIDE_BADGE } else { NARROW_BADGE };
    let text = clip(&badge.content, badge_w);
    let pad = badge_w.saturating_sub(text.chars().count()) + 1;
    spans.push(Span::styled(text, badge.style));
    spans.push(Span::raw(" ".repeat(pad)));
    match mig {
        Some(m) => spans.extend(instance_activity(
            &s,
            m.parent,
            (wide, bw),
            util_style,
            theme,
        )),
        None => spans.extend([
            Span::styled(bar(s.util_gpu_pct, bw), util_style),
            Span::raw(format!(" {} ", pct(s.util_gpu_pct))),
            Span::styled(bar(power_pct, bw), theme.power()),
            Span::raw(format!(
                " {}{} ",
                pct(power_pct),
                s.power_w.map_or("     ".into(), |w| format!(" {w:>3.0}W"))
            )),
        ]),
    }
    spans.extend([
        Span::styled(bar(mem_pct, if wide { 8 } else { 4 }), theme.mem()),
        Span::raw(format!(" {} {mem_gib} ", pct(mem_pct))),
        Span::raw(s.temp_c.map_or(" –°C".into(), |t| format!("{t:>3.0}°C"))),
    ]);
    if links {
        link_spans(&s, events, &mut spans);
    }
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

/// The SM clock, the `PCIe` link and, with `events`, the clock-event reasons.
fn link_spans(s: &crate::model::DeviceSample, events: bool, out: &mut Vec<Span<'_>>) {
    out.push(Span::raw(
        s.sm_clock_mhz
            .map_or("        –".into(), |c| format!(" {c:>4}MHz")),
    ));
    let link = s
        .pcie_gen
        .zip(s.pcie_width)
        .map_or("  –    ".into(), |(g, w)| format!(" G{g}x{w:<3}"));
    out.push(Span::raw(link));
    if events {
        // The reasons clocks are held down (power cap, thermal…), which nvidia-smi hides in -q.
        let names = s.clock_events.map_or("–".into(), |e| {
            crate::model::clock_event::names(e).join(",")
        });
        out.push(Span::raw(format!(" {}", clip(&names, 20))));
    }
}

/// The row's number and name; a MIG instance's GPU instance id and profile under its GPU, as
/// nvidia-smi lists them ("└9 1g.18gb"; at 80 columns "└9 1g.18").
fn ident(dev: &DeviceHistory, name: &str, wide: bool, name_w: usize) -> String {
    let Some(m) = &dev.info.mig else {
        return format!("{:>2} {:<name_w$} ", dev.info.index, clip(name, name_w));
    };
    let profile = if wide {
        m.profile.as_str()
    } else {
        m.profile.trim_end_matches("gb")
    };
    let text = format!("└{} {profile}", m.gpu_instance);
    format!("{:<w$} ", clip(&text, name_w + 3), w = name_w + 3)
}

/// NVML has no utilization or power for a MIG instance: its own SM activity (GPM) stands
/// where util would, and the power columns say whose power it is.
fn instance_activity<'a>(
    s: &crate::model::DeviceSample,
    parent: u32,
    (wide, bw): (bool, usize),
    util_style: ratatui::style::Style,
    theme: &Theme,
) -> [Span<'a>; 3] {
    let sm = s.gpm.sm_active_pct;
    let whose = if wide {
        format!("SM active · W: GPU {parent}")
    } else {
        format!("SM act · W: GPU {parent}")
    };
    [
        Span::styled(bar(sm, bw), util_style),
        Span::raw(format!(
            " {} ",
            sm.map_or("  –%".into(), |v| format!("{v:3.0}%"))
        )),
        Span::styled(
            format!("{:<w$} ", clip(&whose, bw + 10), w = bw + 10),
            theme.dim(),
        ),
    ]
}

fn badge<'a>(dev: &DeviceHistory, store: &Store, wide: bool, theme: &Theme) -> Span<'a> {
    if let DeviceStatus::Lost { .. } = dev.status {
        return Span::styled("‼ LOST", theme.severity(crate::rules::Severity::Critical));
    }
    let index = dev.info.index;
    let now = dev.samples.latest().map_or(0, |s| s.t_ms);
    let worst = store.findings().worst_on(index);
    let width = if wide { WIDE_BADGE } else { NARROW_BADGE };
    // The rule's own name where it fits ("! STARVED" in ten cells), else its short one.
    let named = |marker: &str, rule: &str, extra: &str| {
        let full = format!("{marker} {}{extra}", rule.to_uppercase());
        if full.chars().count() <= width {
            full
        } else {
            format!("{marker} {}{extra}", short(rule))
        }
    };
    let finding = |f: &crate::rules::Finding| {
        let more = store.findings().active_on(index).count().saturating_sub(1);
        let extra = if more > 0 {
            format!(" +{more}")
        } else {
            String::new()
        };
        // A finding whose symptom ended (kept open a while so it does not flap) says so, dim.
        if store.findings().ended_ago_ms(f, now).is_some() {
            return Span::styled(ended_badge(&f.rule, width), theme.dim());
        }
        Span::styled(
            named(f.severity.marker(), &f.rule, &extra),
            theme.severity(f.severity),
        )
    };
    if let Some(f) = worst.filter(|f| {
        f.severity >= crate::rules::Severity::Warning
            && store.findings().ended_ago_ms(f, now).is_none()
    }) {
        return finding(f);
    }
    // The straggler another GPU's hang waits for looks idle and fine on its own: say so, for
    // as long as the hang it explains.
    if let Some(f) = hang_waiting_on(index, store) {
        return Span::styled("◀ CULPRIT", theme.severity(f.severity));
    }
    // A symptom present whose window has not run out is being timed, not fine.
    if let Some(w) = store.findings().watching_on(index) {
        let held = now.saturating_sub(w.since_ms) / 1000;
        let (need, full, short) = (w.window_ms / 1000, w.rule.to_uppercase(), short(&w.rule));
        // The seconds go before the name does, the name's short form before the seconds.
        let text = [
            format!("? {full}? {held}/{need}s"),
            format!("? {short} {held}/{need}s"),
            format!("? {short} {held}s"),
            format!("?{short} {held}s"),
            format!("? {full}?"),
            format!("? {short}"),
        ]
        .into_iter()
        .find(|t| t.chars().count() <= width)
        .unwrap_or_else(|| format!("?{short}"));
        return Span::styled(
            text,
            theme
                .severity(crate::rules::Severity::Warning)
                .remove_modifier(
                    ratatui::style::Modifier::BOLD | ratatui::style::Modifier::REVERSED,
                ),
        );
    }
    if let Some(f) = worst {
        return finding(f);
    }
    // Not "ok" before the rules could judge: a hang looks fine for its first seconds.
    match store.findings().judging(index).filter(|j| j.pending()) {
        Some(j) => Span::styled(
            format!("… {}/{}s", j.covered_ms / 1000, j.needed_ms / 1000),
            theme.dim(),
        ),
        None => Span::styled("✓ ok", theme.dim()),
    }
}

/// An open finding whose symptom ended, in `width` cells: "STARVED ended" where it fits, else
/// "STARV ended", else "○ STARV" (the help's legend says what ○ is).
fn ended_badge(rule: &str, width: usize) -> String {
    let (full, short) = (rule.to_uppercase(), short(rule));
    [format!("{full} ended"), format!("{short} ended")]
        .into_iter()
        .find(|t| t.chars().count() <= width)
        .unwrap_or_else(|| format!("○ {short}"))
}

/// What GPU `index`'s DIAGNOSIS cell reads on a wide screen: for checks of the screen against
/// what happened (tests/corpus.rs reads it at every moment of the real recordings).
#[must_use]
pub fn diagnosis_text(store: &Store, index: u32) -> Option<String> {
    let dev = store
        .history()
        .devices
        .iter()
        .find(|d| d.info.index == index)?;
    Some(
        badge(dev, store, true, &Theme { color: false })
            .content
            .into_owned(),
    )
}

/// An open finding on another GPU that names this one as its culprit.
fn hang_waiting_on(index: u32, store: &Store) -> Option<&crate::rules::Finding> {
    store
        .findings()
        .active()
        .iter()
        .filter(|f| f.device != index)
        .find(|f| f.culprit.as_ref().is_some_and(|c| c.device == index))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_ended_badge_fits_its_cell_and_still_names_the_rule() {
        assert_eq!(ended_badge("starved", WIDE_BADGE), "STARVED ended");
        assert_eq!(ended_badge("mem-growth", WIDE_BADGE), "MEM-GROWTH ended");
        assert_eq!(ended_badge("pcie-replay", WIDE_BADGE), "REPLAY ended");
        assert_eq!(ended_badge("hang", NARROW_BADGE), "HANG ended");
        // "STARV ended" is 11 cells: at 80 columns it was cut to "STARV ende".
        assert_eq!(ended_badge("starved", NARROW_BADGE), "○ STARV");
        for id in RuleId::ALL {
            for width in [NARROW_BADGE, WIDE_BADGE] {
                let text = ended_badge(id.as_str(), width);
                assert!(text.chars().count() <= width, "{text} in {width}");
            }
        }
    }
}
