//! Open findings in their severity's style with a marker that needs no colour, their evidence
//! and the first thing to do; recently cleared findings dimmed below.

use std::fmt::Write;

use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::Frame;

use super::scroll::Doc;
use super::theme::Theme;
use crate::app::{AppState, Pane};
use crate::model::gpu_label;
use crate::rules::{Conclusions, Finding, Judging, Severity, Watch};
use crate::store::Store;
use crate::text::{Compact, Upper};

/// The pane's text and title, kept from frame to frame: drawing the findings allocates
/// nothing once they have grown to their size.
#[derive(Default)]
struct Kept {
    doc: Doc,
    title: String,
}

thread_local! {
    static KEPT: std::cell::RefCell<Kept> = std::cell::RefCell::default();
}

/// Draws the findings from the state's line offset; returns how far the pane can scroll.
pub fn render(
    frame: &mut Frame,
    area: Rect,
    state: &AppState,
    store: &Store,
    theme: &Theme,
) -> usize {
    KEPT.with(|kept| match kept.try_borrow_mut() {
        Ok(mut kept) => draw(frame, area, (state, store, theme), &mut kept),
        // Only if drawing the pane drew the pane (it does not).
        Err(_) => draw(frame, area, (state, store, theme), &mut Kept::default()),
    })
}

fn draw(
    frame: &mut Frame,
    area: Rect,
    (state, store, theme): (&AppState, &Store, &Theme),
    kept: &mut Kept,
) -> usize {
    let found = store.findings();
    let now = store.history().latest_ms().unwrap_or(0);
    let Kept { doc, title } = kept;
    doc.clear();
    // A GPU whose symptom is being timed says so once: its "judging" line (how much data the
    // rules have) beside "5s of the 10s" read as a second, different count.
    let judging = || {
        found
            .pending()
            .filter(|j| !found.watching().iter().any(|w| w.device == j.device))
    };
    // What matters first: warnings and criticals, then what is being timed and not yet judged,
    // then the infos.
    let alarm = |f: &&Finding| f.severity >= Severity::Warning;
    for f in found.active().iter().filter(alarm) {
        finding_lines(f, found, now, theme, doc);
    }
    pending_lines(found.watching(), judging(), now, theme, doc);
    // "Nothing wrong" is earned: no finding, nothing being timed, every GPU judged, and a
    // reading to judge (a recording torn in its first tick has none).
    if store.history().ticks() == 0 {
        doc.styled(
            if store.ended() {
                "nothing to judge: the recording holds no whole tick"
            } else {
                "no reading yet"
            },
            theme.dim(),
        );
    } else if found.active().is_empty() && judging().next().is_none() && found.watching().is_empty()
    {
        doc.styled(
            "✓ nothing wrong seen: every GPU that looks busy is doing work",
            theme.dim(),
        );
    }
    for f in found.active().iter().filter(|f| !alarm(f)) {
        finding_lines(f, found, now, theme, doc);
    }
    for f in found.cleared().iter().rev().take(5) {
        let cleared = f.cleared_ms.unwrap_or(now);
        doc.styled_fmt(
            format_args!(
                "✓ GPU {} {} cleared {} ago (lasted {})",
                gpu_label(f.device),
                f.rule,
                Compact(now.saturating_sub(cleared)),
                Compact(cleared.saturating_sub(f.since_ms))
            ),
            theme.dim(),
        );
    }
    write_title(title, found, now);
    let block = theme.pane(title.as_str(), state.focus == Pane::Findings);
    super::scroll::render(frame, area, block, doc, state.findings_scroll, theme)
}

/// " Findings (2 open, 1 ended, 1 being timed) ": an ended finding is kept (dimmed) until it
/// clears, but is not counted as open.
fn write_title(out: &mut String, found: &Conclusions, now: u64) {
    let active = found.active();
    let ended = active
        .iter()
        .filter(|f| found.ended_ago_ms(f, now).is_some())
        .count();
    out.clear();
    let _ = write!(out, " Findings ({} open", active.len() - ended);
    if ended > 0 {
        let _ = write!(out, ", {ended} ended");
    }
    if !found.watching().is_empty() {
        let _ = write!(out, ", {} being timed", found.watching().len());
    }
    out.push_str(") ");
}

/// What is being timed, then the GPUs still without a verdict.
fn pending_lines<'j>(
    watching: &[Watch],
    judging: impl Iterator<Item = &'j Judging>,
    now: u64,
    theme: &Theme,
    doc: &mut Doc,
) {
    for w in watching {
        doc.styled_fmt(
            format_args!(
                "? GPU {} {}? {} — its symptom for {} of the {} it needs: being timed",
                gpu_label(w.device),
                Upper(&w.rule),
                w.title,
                Compact(now.saturating_sub(w.since_ms)),
                Compact(w.window_ms)
            ),
            theme.severity(Severity::Warning),
        );
    }
    for j in judging {
        doc.styled_fmt(
            format_args!(
                "… GPU {} {}: no verdict yet",
                gpu_label(j.device),
                crate::report::judging_text(j)
            ),
            theme.dim(),
        );
    }
}

/// A finding's head, evidence and first action; dimmed, with when it ended, once its symptom
/// has ended.
fn finding_lines(f: &Finding, found: &Conclusions, now: u64, theme: &Theme, doc: &mut Doc) {
    let ended = found.ended_ago_ms(f, now);
    let (style, text) = match ended {
        Some(_) => (theme.dim(), theme.dim()),
        None => (theme.severity(f.severity), Style::default()),
    };
    let (marker, gpu, rule) = (f.severity.marker(), gpu_label(f.device), Upper(&f.rule));
    match ended {
        Some(ago) => doc.styled_fmt(
            format_args!(
                "{marker} GPU {gpu} {rule} · {} · ended {} ago",
                f.title,
                Compact(ago)
            ),
            style,
        ),
        None => doc.styled_fmt(
            format_args!(
                "{marker} GPU {gpu} {rule} · {} · {}",
                f.title,
                Compact(now.saturating_sub(f.since_ms))
            ),
            style,
        ),
    }
    for e in &f.evidence {
        doc.line(Style::default());
        doc.push("   ", Style::default());
        doc.push(e, text);
    }
    if let Some(energy) = crate::report::finding_energy(f) {
        doc.styled_fmt(format_args!("   energy: {energy}"), theme.dim());
    }
    if let Some(a) = f.actions.first() {
        doc.line(Style::default());
        doc.push("   → ", theme.title());
        doc.push(a, Style::default());
    }
}
