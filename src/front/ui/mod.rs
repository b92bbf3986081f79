//! Drawing: `render` lays the screen out and each pane draws itself as a pure function of the
//! app state and what was observed. Nothing here changes state except the hit areas a click
//! needs, which `render` returns.

mod badge;
mod border;
mod chart;
mod findings;
mod format;
mod header;
mod help;
mod overview;
mod pen;
mod plot;
mod process_curves;
mod process_view;
mod processes;
mod scroll;
mod split;
mod stacks;
mod strips;
pub mod theme;

use std::fmt::Write as _;

use ratatui::layout::{Constraint, Rect};
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};
use ratatui::Frame;

use crate::app::{AppState, HitAreas, View, SIGNALS};
use crate::store::Store;
use theme::Theme;

pub use badge::diagnosis_text;

/// Every key and what it does, as the help overlay lists them.
pub fn help_keys() -> impl Iterator<Item = &'static str> {
    help::KEYS.iter().map(|k| k.keys)
}

/// README's key table as the one key table writes it (a test keeps README in step).
pub fn help_markdown() -> String {
    help::markdown_table()
}

/// Every key with what it does, then every symbol with what it means (the manual's KEYS).
pub fn help_table() -> (
    impl Iterator<Item = (&'static str, &'static str)>,
    impl Iterator<Item = (&'static str, &'static str)>,
) {
    (
        help::KEYS.iter().map(|k| (k.keys, k.does)),
        help::LEGEND.iter().copied(),
    )
}

pub const MIN_WIDTH: u16 = 80;
pub const MIN_HEIGHT: u16 = 24;

/// Draws the whole screen; returns where clickable rows landed.
pub fn render(frame: &mut Frame, state: &AppState, store: &Store) -> HitAreas {
    let area = frame.area();
    let theme = Theme { color: state.color };
    if area.width < MIN_WIDTH || area.height < MIN_HEIGHT {
        let msg = format!("gpuwatch needs at least {MIN_WIDTH}×{MIN_HEIGHT}; this terminal is {}×{}. Enlarge it, or press q to quit.", area.width, area.height);
        frame.render_widget(Paragraph::new(msg).wrap(Wrap { trim: true }), area);
        return HitAreas {
            too_small: true,
            ..HitAreas::default()
        };
    }
    let stop = stop_doc(state, store, area.width);
    let status_rows = stop.as_ref().map_or(1, |(_, rows)| *rows);
    let [head, body, status] = split::vertical(
        [
            Constraint::Length(1),
            Constraint::Min(0),
            Constraint::Length(status_rows),
        ],
        area,
    );
    header::render(frame, head, state, store, &theme);
    let mut hits = match state.view {
        View::Main | View::Help => main_screen(frame, body, state, store, &theme),
        View::Process { device, pid } => HitAreas {
            process_findings_max: process_view::render(
                frame, body, state, store, device, pid, &theme,
            ),
            ..HitAreas::default()
        },
    };
    match &stop {
        Some((doc, _)) => scroll::render_plain(frame.buffer_mut(), status, doc),
        None => status_line(frame, status, state, store, &theme),
    }
    if state.view == View::Help {
        hits.help_max = help::render(frame, body, state.help_scroll, &theme);
    }
    if let Some(prompt) = &state.kill {
        kill_prompt(frame, body, prompt, &theme);
    }
    hits
}

/// Rows the chart needs to say anything (borders, a line of plot, the axis and its labels).
const CHART_MIN_ROWS: u16 = 5;

/// How the main screen's rows are shared: every GPU gets a row before the chart gets any; the
/// GPU table loses its borders (one title line) before it loses a GPU; what does not fit
/// scrolls, with the flagged GPUs named in its title.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Rows {
    overview: u16,
    compact: bool,
    lower: u16,
}

fn share_rows(height: u16, width: u16, gpus: u16) -> Rows {
    let gpus = gpus.max(1);
    let lower = match (height >= 40, width >= 150) {
        (true, true) => 16,
        (true, false) => 20,
        (false, _) if height >= 28 => 10,
        (false, _) => 8,
    };
    let room = height.saturating_sub(lower + CHART_MIN_ROWS);
    // Bordered (title, header and two borders) when every GPU fits so; else the header line
    // over the rows, no borders; when even that does not fit, a line naming the flagged GPUs
    // over the header, and the rows scroll.
    if gpus + 3 <= room {
        return Rows {
            overview: gpus + 3,
            compact: false,
            lower,
        };
    }
    Rows {
        overview: if gpus < room { gpus + 1 } else { room.max(3) },
        compact: true,
        lower,
    }
}

fn main_screen(
    frame: &mut Frame,
    area: Rect,
    state: &AppState,
    store: &Store,
    theme: &Theme,
) -> HitAreas {
    let gpus = store.history().devices.len() as u16;
    let rows = share_rows(area.height, area.width, gpus);
    let side_by_side = area.width >= 150;
    // The findings pane, focused on a terminal under 40 rows, grows into the chart's rows:
    // forty lines of evidence do not read through a slot of two.
    let grow = state.focus == crate::app::Pane::Findings && area.height < 40 && !side_by_side;
    let [ov, chart_area, lower] = split::vertical(
        [
            Constraint::Length(rows.overview),
            Constraint::Min(0),
            Constraint::Length(rows.lower),
        ],
        area,
    );
    let drawn = overview::render(frame, ov, state, store, rows.compact, theme);
    let mut chart_points = 0;
    let lower = if grow {
        Rect {
            y: chart_area.y,
            height: chart_area.height + lower.height,
            ..lower
        }
    } else {
        if chart_area.height > 0 {
            chart_points = chart::render(frame, chart_area, state, store, theme);
        }
        lower
    };
    let (find_area, proc_area) = if side_by_side {
        let [a, b] = split::horizontal(
            [Constraint::Percentage(45), Constraint::Percentage(55)],
            lower,
        );
        (a, b)
    } else {
        // Grown, the findings leave the processes a row to show (borders, header, one).
        let [a, b] = if grow {
            split::vertical([Constraint::Min(0), Constraint::Length(4)], lower)
        } else {
            split::vertical(
                [Constraint::Percentage(50), Constraint::Percentage(50)],
                lower,
            )
        };
        (a, b)
    };
    let findings_max = findings::render(frame, find_area, state, store, theme);
    let proc_rows = processes::render(frame, proc_area, state, store, theme);
    HitAreas {
        overview: (drawn.top, drawn.rows),
        overview_first: drawn.first,
        processes: (proc_area.y + 2, proc_rows),
        findings_max,
        chart_points,
        ..HitAreas::default()
    }
}

/// The most rows why sampling or a replay stopped may take.
const STOP_ROWS: usize = 3;

/// Why sampling or a replay stopped, when it needs more than the status line's one row: every
/// part of it matters (what happened, where, what to do), and one row of 80 columns cut a
/// joined recording's advice in two. Wrapped over up to three rows, without its "(…)" if that
/// is what fits; `None` where one row holds it or three cannot (then it is cut on one).
fn stop_doc(state: &AppState, store: &Store, width: u16) -> Option<(scroll::Doc, u16)> {
    if state.status.is_some() || state.editing_filter {
        return None;
    }
    let e = store.error()?;
    let what = if store.is_replay() {
        "replay stopped: "
    } else {
        "sampling stopped: "
    };
    let width = usize::from(width);
    if what.chars().count() + e.chars().count() <= width {
        return None;
    }
    let theme = Theme { color: state.color };
    let wrap = |text: &str| {
        let mut doc = scroll::Doc::default();
        doc.line(ratatui::style::Style::default());
        doc.push(what, theme.label());
        doc.push(text, theme.label());
        let rows = scroll::wrapped_rows(&doc, width);
        (rows <= STOP_ROWS).then_some((doc, rows as u16))
    };
    // Its first word (most often the file) on the first row, beside "replay stopped:", where
    // a text can be cut so: a row of "replay stopped:" alone was a row lost.
    let first_fits = |t: &String| {
        what.chars().count() + t.split(' ').next().map_or(0, |w| w.chars().count()) <= width
    };
    stop_texts(e, width)
        .filter(first_fits)
        .find_map(|text| wrap(&text))
        .or_else(|| stop_texts(e, width).find_map(|text| wrap(&text)))
}

/// What a stop message may be cut to, longest first: whole; without its "(…)"; its path's
/// directories dropped one by one from the left ("…/node17.jsonl:83: …"), so that the file and
/// its line stay; then cut in its middle, shorter each time.
fn stop_texts(e: &str, width: usize) -> impl Iterator<Item = String> + '_ {
    let without = without_why(e);
    let base = without.clone().unwrap_or_else(|| e.to_owned());
    let paths = shorter_paths(&base);
    let clips = (1..=8 * STOP_ROWS).map(move |k| {
        let mut cut = String::new();
        let room = (STOP_ROWS * width).saturating_sub(k * (width / 8)).max(1);
        crate::text::push_clip_middle(&mut cut, &base, room);
        cut
    });
    std::iter::once(e.to_owned())
        .chain(without)
        .chain(paths)
        .chain(clips)
}

/// `s` with the directories of its first path dropped from the left, one more each time:
/// "/a/b/c.jsonl:8: …" gives "…/b/c.jsonl:8: …", then "…/c.jsonl:8: …".
fn shorter_paths(s: &str) -> Vec<String> {
    let Some(slash) = s.find('/') else {
        return Vec::new();
    };
    let start = s[..slash].rfind(' ').map_or(0, |i| i + 1);
    let end = s[start..].find(' ').map_or(s.len(), |i| start + i);
    let slashes: Vec<usize> = s[start..end]
        .match_indices('/')
        .map(|(i, _)| start + i)
        .filter(|&i| i > start)
        .collect();
    slashes
        .iter()
        .map(|&at| format!("{}…{}", &s[..start], &s[at..]))
        .collect()
}

fn status_line(frame: &mut Frame, area: Rect, state: &AppState, store: &Store, theme: &Theme) {
    pen::with_strings(|[text]| {
        write_status(text, usize::from(area.width), state, store);
        crate::text::clip_in_place(text, usize::from(area.width));
        // The style on the text's cells only, as the `Paragraph` this was drew it (a styled
        // `Line` would lay it over the whole row).
        let span = ratatui::text::Span::styled(text.as_str(), theme.label());
        pen::put_spans(frame.buffer_mut(), area, std::slice::from_ref(&span));
    });
}

/// The status line's text onto `text`: a message, the filter being edited, why sampling
/// stopped, or where a replay is and the keys that work here.
fn write_status(text: &mut String, width: usize, state: &AppState, store: &Store) {
    // A message's end (a file name, a pid) matters as much as its start: cut in the middle.
    if let Some(s) = &state.status {
        crate::text::push_clip_middle(text, s, width);
        return;
    }
    let _ = if state.editing_filter {
        write!(
            text,
            "filter: {}▏ (Enter keeps it, Esc clears)",
            state.filter
        )
    } else if let Some(e) = store.error() {
        let what = if store.is_replay() {
            "replay stopped: "
        } else {
            "sampling stopped: "
        };
        text.push_str(what);
        fit_words(text, e, width.saturating_sub(what.chars().count()));
        Ok(())
    } else {
        Ok(())
    };
    if !text.is_empty() {
        return;
    }
    let ctx = help::Context {
        process_view: matches!(state.view, View::Process { .. }),
        paused: state.paused,
    };
    // A replay that ended before its first tick: no position, but where it was cut.
    if let (None, true) = (store.position(), store.ended() && store.is_replay()) {
        text.push_str("■ end: no whole tick read");
        if let Some(cut) = store.cut() {
            text.push_str(" · cut: ");
            let room = width.saturating_sub(text.chars().count());
            fit_words(text, cut, room);
        }
        return;
    }
    if let Some(pos) = store.position() {
        position_bar(text, pos, store, state.paused, width);
        // A recording cut off ends early: say where, in the keys' place (`?` still lists them).
        if let Some(cut) = store.cut().filter(|_| store.ended()) {
            text.push_str(" · cut: ");
            let room = width.saturating_sub(text.chars().count());
            fit_words(text, cut, room);
            return;
        }
        text.push_str(" · ");
        let room = width.saturating_sub(text.chars().count());
        help::write_footer(text, room, ctx);
    } else {
        if state.paused {
            text.push_str("PAUSED (space resumes) · ");
        }
        let room = width.saturating_sub(text.chars().count());
        help::write_footer(text, room, ctx);
    }
}

/// `s` onto `out` in `room` columns: whole where it fits, else without its first "(…)" (the
/// why, where the what and what to do are outside it: "corrupt tick (…); delete line 41 to
/// read past it"), else cut in the middle.
fn fit_words(out: &mut String, s: &str, room: usize) {
    if s.chars().count() <= room {
        out.push_str(s);
        return;
    }
    let without = without_why(s);
    match without {
        Some(w) if w.chars().count() <= room => out.push_str(&w),
        Some(w) => crate::text::push_clip_middle(out, &w, room),
        None => crate::text::push_clip_middle(out, s, room),
    }
}

/// `s` without its first "(…)" (brackets inside it skipped), if it has one.
fn without_why(s: &str) -> Option<String> {
    let open = s.find(" (")?;
    let mut depth = 0;
    let close = open
        + s[open..].find(|c| {
            depth += match c {
                '(' => 1,
                ')' => -1,
                _ => 0,
            };
            c == ')' && depth == 0
        })?;
    Some(format!("{}{}", &s[..open], &s[close + 1..]))
}

/// Where a replay is, onto `out`: "▶ 1m23s / 5m00s ━━━━━━╸────── [ ] seek".
fn position_bar(
    out: &mut String,
    pos: crate::store::Position,
    store: &Store,
    paused: bool,
    width: usize,
) {
    let played = store
        .history()
        .latest_ms()
        .map_or(0, |t| t.saturating_sub(pos.first_ms));
    // Paused at the end, it says so: a seek back then stays paused.
    let mark = if store.ended() && paused {
        "■ end ‖ PAUSED"
    } else if store.ended() {
        "■ end"
    } else if paused {
        "‖ PAUSED (space plays)"
    } else {
        "▶"
    };
    let back = if pos.can_rewind {
        "[ ] { } < >"
    } else {
        "] } >"
    };
    let played_words = crate::text::Compact(played);
    let Some(end) = pos.end_ms.filter(|e| *e > pos.first_ms) else {
        let _ = write!(out, "{mark} {played_words} played {back} seek");
        return;
    };
    let length = end - pos.first_ms;
    let cells: usize = if width >= 120 { 24 } else { 12 };
    let done = ((played.min(length) as f64 / length as f64) * cells as f64).round() as usize;
    // The time played as wide as the length, so that the bar and the keys after it do not
    // move as it grows ("9s" to "10s").
    let total = crate::text::Compact(length);
    let _ = write!(out, "{mark} ");
    let wide = out.len();
    let _ = write!(out, "{total}");
    let w = out[wide..].chars().count();
    out.truncate(wide);
    let _ = write!(out, "{played_words:>w$} / {total} ");
    out.extend((0..cells).map(|i| match i.cmp(&done) {
        std::cmp::Ordering::Less => '━',
        std::cmp::Ordering::Equal => '╸',
        std::cmp::Ordering::Greater => '─',
    }));
    let _ = write!(out, " {back} seek");
}

fn kill_prompt(frame: &mut Frame, area: Rect, prompt: &crate::app::KillPrompt, theme: &Theme) {
    let w = 60.min(area.width);
    let r = Rect {
        x: area.x + (area.width - w) / 2,
        y: area.y + area.height / 3,
        width: w,
        height: 5,
    };
    let signals: Vec<String> = SIGNALS
        .iter()
        .enumerate()
        .map(|(i, (n, _))| {
            if i == prompt.signal {
                format!("[{n}]")
            } else {
                format!(" {n} ")
            }
        })
        .collect();
    let lines = vec![
        Line::raw(format!(
            "Send a signal to pid {} ({})?",
            prompt.pid,
            format::clip(&prompt.command, 30)
        )),
        Line::raw(format!(
            "signal: {}   ←/→ choose · y/Enter send · n/Esc cancel",
            signals.join("")
        )),
    ];
    frame.render_widget(Clear, r);
    frame.render_widget(
        Paragraph::new(lines).block(
            Block::default()
                .borders(Borders::ALL)
                .title(" send signal ")
                .border_style(theme.severity(crate::rules::Severity::Warning)),
        ),
        r,
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_gpu_gets_a_row_before_the_chart_grows() {
        // 80×24: 22 rows under the header; 8 GPUs in one title line + 8 rows.
        let r = share_rows(22, 80, 8);
        assert_eq!((r.overview, r.compact), (9, true));
        assert!(22 - r.overview - r.lower >= CHART_MIN_ROWS);
        // 100×30 and 120×40: bordered, every GPU.
        assert_eq!(
            share_rows(28, 100, 8),
            Rows {
                overview: 11,
                compact: false,
                lower: 10
            }
        );
        assert_eq!(share_rows(38, 120, 8).overview, 11);
        // 64 GPUs at 80×24: as many as fit, the chart keeps its minimum.
        let r = share_rows(22, 80, 64);
        assert_eq!(r.overview, 22 - r.lower - CHART_MIN_ROWS);
    }
}
