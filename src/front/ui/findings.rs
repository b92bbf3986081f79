//! Open findings in their severity's style with a marker that needs no colour, their evidence
//! and the first thing to do; recently cleared findings dimmed below.

use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::Frame;

use super::format::duration;
use super::theme::Theme;
use crate::app::{AppState, Pane};
use crate::store::Store;

/// Draws the findings from the state's line offset; returns how far the pane can scroll.
pub fn render(
    frame: &mut Frame,
    area: Rect,
    state: &AppState,
    store: &Store,
    theme: &Theme,
) -> usize {
    let found = store.findings();
    let now = store.history().latest_ms().unwrap_or(0);
    // A GPU whose symptom is being timed says so once: its "judging" line (how much data the
    // rules have) beside "5s of the 10s" read as a second, different count.
    let judging: Vec<_> = found
        .pending()
        .filter(|j| !found.watching().iter().any(|w| w.device == j.device))
        .collect();
    let block = theme.pane(title(found, now), state.focus == Pane::Findings);
    let mut lines: Vec<Line<'_>> = Vec::new();
    // What matters first: warnings and criticals, then what is being timed and not yet judged,
    // then the infos.
    let (alarms, infos): (Vec<_>, Vec<_>) = found
        .active()
        .iter()
        .partition(|f| f.severity >= crate::rules::Severity::Warning);
    for f in alarms {
        finding_lines(f, found, now, theme, &mut lines);
    }
    pending_lines(found.watching(), &judging, now, theme, &mut lines);
    // "Nothing wrong" is earned: no finding, nothing being timed, every GPU judged.
    if found.active().is_empty() && judging.is_empty() && found.watching().is_empty() {
        lines.push(Line::styled(
            "✓ nothing wrong seen: every GPU that looks busy is doing work",
            theme.dim(),
        ));
    }
    for f in infos {
        finding_lines(f, found, now, theme, &mut lines);
    }
    for f in found.cleared().iter().rev().take(5) {
        let ago = duration(now.saturating_sub(f.cleared_ms.unwrap_or(now)));
        lines.push(Line::styled(
            format!(
                "✓ GPU {} {} cleared {ago} ago (lasted {})",
                crate::model::gpu_label(f.device),
                f.rule,
                duration(f.cleared_ms.unwrap_or(now).saturating_sub(f.since_ms))
            ),
            theme.dim(),
        ));
    }
    super::scroll::render(frame, area, block, lines, state.findings_scroll, theme)
}

/// " Findings (2 open, 1 ended, 1 being timed) ": an ended finding is kept (dimmed) until it
/// clears, but is not counted as open.
fn title(found: &crate::rules::Conclusions, now: u64) -> String {
    let active = found.active();
    let ended = active
        .iter()
        .filter(|f| found.ended_ago_ms(f, now).is_some())
        .count();
    let mut counts = vec![format!("{} open", active.len() - ended)];
    if ended > 0 {
        counts.push(format!("{ended} ended"));
    }
    if !found.watching().is_empty() {
        counts.push(format!("{} being timed", found.watching().len()));
    }
    format!(" Findings ({}) ", counts.join(", "))
}

/// What is being timed, then the GPUs still without a verdict.
fn pending_lines(
    watching: &[crate::rules::Watch],
    judging: &[&crate::rules::Judging],
    now: u64,
    theme: &Theme,
    lines: &mut Vec<Line<'_>>,
) {
    for w in watching {
        lines.push(Line::styled(
            format!(
                "? GPU {} {}? {} — its symptom for {} of the {} it needs: being timed",
                crate::model::gpu_label(w.device),
                w.rule.to_uppercase(),
                w.title,
                duration(now.saturating_sub(w.since_ms)),
                duration(w.window_ms)
            ),
            theme.severity(crate::rules::Severity::Warning),
        ));
    }
    for j in judging {
        lines.push(Line::styled(
            format!(
                "… GPU {} {}: no verdict yet",
                crate::model::gpu_label(j.device),
                crate::report::judging_text(j)
            ),
            theme.dim(),
        ));
    }
}

/// A finding's head, evidence and first action; dimmed, with when it ended, once its symptom
/// has ended.
fn finding_lines<'a>(
    f: &'a crate::rules::Finding,
    found: &crate::rules::Conclusions,
    now: u64,
    theme: &Theme,
    lines: &mut Vec<Line<'a>>,
) {
    let ended = found.ended_ago_ms(f, now);
    let when = match ended {
        Some(ago) => format!("ended {} ago", duration(ago)),
        None => duration(now.saturating_sub(f.since_ms)),
    };
    let head = format!(
        "{} GPU {} {} · {} · {when}",
        f.severity.marker(),
        crate::model::gpu_label(f.device),
        f.rule.to_uppercase(),
        f.title,
    );
    let style = if ended.is_some() {
        theme.dim()
    } else {
        theme.severity(f.severity)
    };
    lines.push(Line::styled(head, style));
    for e in &f.evidence {
        // Borrowed from the store for the frame: no copy of every piece of evidence.
        let e = Span::raw(e.as_str());
        lines.push(Line::from(vec![
            Span::raw("   "),
            if ended.is_some() {
                e.style(theme.dim())
            } else {
                e
            },
        ]));
    }
    if let Some(energy) = crate::report::energy_line(f) {
        lines.push(Line::styled(format!("   energy: {energy}"), theme.dim()));
    }
    if let Some(a) = f.actions.first() {
        lines.push(Line::from(vec![
            Span::styled("   → ", theme.title()),
            Span::raw(a.as_str()),
        ]));
    }
}
