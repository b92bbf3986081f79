//! The bottom line: a message, the filter being edited, why sampling or a replay stopped
//! (over up to four rows: what, where and what to do all matter), or where a replay is and
//! the keys that work here.

use std::fmt::Write as _;

use ratatui::layout::Rect;
use ratatui::Frame;

use super::theme::Theme;
use super::{help, pen, scroll};
use crate::app::{AppState, View};
use crate::store::Store;

/// What stopped; paused there, it says so (space at an error changed nothing on screen).
fn stop_prefix(state: &AppState, store: &Store) -> &'static str {
    match (store.is_replay(), state.paused) {
        (true, true) => "‖ PAUSED · replay stopped: ",
        (true, false) => "replay stopped: ",
        (false, _) => "sampling stopped: ",
    }
}

/// The most rows why sampling or a replay stopped may take: a gzip file's advice, its path
/// written twice, needs four at 80 columns.
const STOP_ROWS: usize = 4;

/// Why sampling or a replay stopped, when it needs more than the status line's one row: every
/// part of it matters (what happened, where, what to do), and one row of 80 columns cut a
/// joined recording's advice in two. Wrapped over up to four rows, without its "(…)" if that
/// is what fits, its path shortened, or at last cut in its middle; `None` where one row holds it.
pub fn stop_doc(state: &AppState, store: &Store, width: u16) -> Option<(scroll::Doc, u16)> {
    if state.status.is_some() || state.editing_filter {
        return None;
    }
    let e = store.error()?;
    let what = stop_prefix(state, store);
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
    // Else on a row of its own (a word wider than a row is broken inside).
    let first_word = |t: &String| t.split(' ').next().map_or(0, |w| w.chars().count());
    let beside = |t: &String| what.chars().count() + first_word(t) <= width;
    let own_row = |t: &String| first_word(t) + 4 <= width;
    let whole = || stop_texts(e);
    whole()
        .filter(beside)
        .find_map(|text| wrap(&text))
        .or_else(|| whole().filter(own_row).find_map(|text| wrap(&text)))
        .or_else(|| whole().find_map(|text| wrap(&text)))
        .or_else(|| clips(e, width).find_map(|text| wrap(&text)))
}

/// What a stop message may be cut to, longest first: whole; without its "(…)"; its path's
/// directories dropped one by one from the left ("…/node17.jsonl:83: …"), so that the file and
/// its line stay.
fn stop_texts(e: &str) -> impl Iterator<Item = String> + '_ {
    let without = without_why(e);
    let paths = shorter_paths(without.as_deref().unwrap_or(e));
    std::iter::once(e.to_owned()).chain(without).chain(paths)
}

/// The last resort: the message without its "(…)" cut in its middle, shorter each time; its
/// end (what to do) stays.
fn clips(e: &str, width: usize) -> impl Iterator<Item = String> + '_ {
    let base = without_why(e).unwrap_or_else(|| e.to_owned());
    (1..=8 * STOP_ROWS).map(move |k| {
        let mut cut = String::new();
        let room = (STOP_ROWS * width).saturating_sub(k * (width / 8)).max(1);
        crate::text::push_clip_middle(&mut cut, &base, room);
        cut
    })
}

/// `s` with the directories of its first path dropped from the left, one more each time, in
/// every place the path is written (an advice's command repeats it): "/a/b/c.jsonl:8: …" gives
/// "…/b/c.jsonl:8: …", then "…/c.jsonl:8: …".
fn shorter_paths(s: &str) -> Vec<String> {
    let Some(slash) = s.find('/') else {
        return Vec::new();
    };
    let start = s[..slash].rfind([' ', '`']).map_or(0, |i| i + 1);
    let end = s[start..].find(' ').map_or(s.len(), |i| start + i);
    s[start..end]
        .match_indices('/')
        .map(|(i, _)| start + i)
        .filter(|&i| i > start)
        .map(|at| s.replace(&s[start..at], "…"))
        .collect()
}

pub fn render(frame: &mut Frame, area: Rect, state: &AppState, store: &Store, theme: &Theme) {
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
        let what = stop_prefix(state, store);
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
/// How far a replay has played: its latest tick's time from its first.
fn played_ms(pos: crate::store::Position, store: &Store) -> u64 {
    store
        .history()
        .latest_ms()
        .map_or(0, |t| t.saturating_sub(pos.first_ms))
}

/// What the replay's clock shows, counted in the unit it shows (tenths under 10 s, minutes
/// past an hour, else seconds); `None` outside a replay. A change is worth a frame of its own:
/// drawn only as the chart moved, the clock at 80x24 showed a second up to 0.43 s late
/// (helper-35).
#[must_use]
pub fn clock_shown(store: &Store) -> Option<u64> {
    let pos = store.position()?;
    let played = played_ms(pos, store);
    let unit = match pos.end_ms.map(|end| end.saturating_sub(pos.first_ms)) {
        Some(0..10_000) => 100,
        Some(3_600_000..) => 60_000,
        None if played >= 3_600_000 => 60_000,
        _ => 1000,
    };
    Some(played / unit)
}

fn position_bar(
    out: &mut String,
    pos: crate::store::Position,
    store: &Store,
    paused: bool,
    width: usize,
) {
    let played = played_ms(pos, store);
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
    // A gzip file's end is known once played to it (the source keeps it for later plays).
    let end = pos
        .end_ms
        .or_else(|| store.ended().then(|| store.history().latest_ms())?);
    let Some(end) = end.filter(|e| *e > pos.first_ms) else {
        let _ = write!(out, "{mark} {played_words} played {back} seek");
        return;
    };
    let length = end - pos.first_ms;
    let cells: usize = if width >= 120 { 24 } else { 12 };
    let done = ((played.min(length) as f64 / length as f64) * cells as f64).round() as usize;
    let _ = write!(out, "{mark} ");
    if length < 10_000 {
        // Whole seconds would read "0s / 0s" for a recording of a few ticks: tenths, as a
        // stopwatch counts them (truncated), one digit before the point either way.
        let tenths = |ms: u64| (ms / 1000, ms / 100 % 10);
        let ((ps, pt), (ls, lt)) = (tenths(played.min(length)), tenths(length));
        let _ = write!(out, "{ps}.{pt}s / {ls}.{lt}s ");
    } else {
        // The time played as wide as the length, so that the bar and the keys after it do not
        // move as it grows ("9s" to "10s").
        let total = crate::text::Compact(length);
        let wide = out.len();
        let _ = write!(out, "{total}");
        let w = out[wide..].chars().count();
        out.truncate(wide);
        let played_words = played_words.like(length);
        let _ = write!(out, "{played_words:>w$} / {total} ");
    }
    out.extend((0..cells).map(|i| match i.cmp(&done) {
        std::cmp::Ordering::Less => '━',
        std::cmp::Ordering::Equal => '╸',
        std::cmp::Ordering::Greater => '─',
    }));
    let _ = write!(out, " {back} seek");
}
