//! The DIAGNOSIS cell of a GPU row: its worst finding, the culprit another GPU's hang waits
//! for, a symptom being timed, a finding whose symptom ended, or whether the rules could judge
//! yet — each in the cell's width at 80 columns and on a wide screen.

use std::fmt::Write;

use ratatui::style::Style;

use super::pen::push_upper;
use super::theme::Theme;
use crate::history::DeviceHistory;
use crate::model::DeviceStatus;
use crate::rules::RuleId;
use crate::store::Store;

/// Width of the diagnosis column, which comes before the bars so that it is the last thing a
/// narrow terminal clips.
pub const NARROW_BADGE: usize = 10;
pub const WIDE_BADGE: usize = 16;

/// A rule's short name, for where its name does not fit: "? STARV 5s" in ten cells. A rule
/// this build does not know (a newer recording's) is shown by its id.
fn short(rule: &str) -> std::borrow::Cow<'static, str> {
    RuleId::parse(rule).map_or_else(|| rule.to_uppercase().into(), |id| id.short().into())
}

/// Writes GPU `dev`'s diagnosis onto `out`; returns its style.
pub fn badge(
    dev: &DeviceHistory,
    store: &Store,
    wide: bool,
    theme: &Theme,
    out: &mut String,
) -> Style {
    out.clear();
    if let DeviceStatus::Lost { .. } = dev.status {
        out.push_str("‼ LOST");
        return theme.severity(crate::rules::Severity::Critical);
    }
    let index = dev.info.index;
    let now = dev.samples.latest().map_or(0, |s| s.t_ms);
    let found = store.findings();
    let worst = found.worst_on(index);
    let width = if wide { WIDE_BADGE } else { NARROW_BADGE };
    let finding = |f: &crate::rules::Finding, out: &mut String| {
        // A finding whose symptom ended (kept open a while so it does not flap) says so, dim.
        if found.ended_ago_ms(f, now).is_some() {
            ended_badge(&f.rule, width, out);
            return theme.dim();
        }
        let more = found.active_on(index).count().saturating_sub(1);
        // The rule's own name where it fits ("! STARVED" in ten cells), else its short one.
        let _ = write!(out, "{} ", f.severity.marker());
        let at = out.len();
        push_upper(out, &f.rule);
        if more > 0 {
            let _ = write!(out, " +{more}");
        }
        if out.chars().count() > width {
            out.truncate(at);
            out.push_str(&short(&f.rule));
            if more > 0 {
                let _ = write!(out, " +{more}");
            }
        }
        theme.severity(f.severity)
    };
    if let Some(f) = worst.filter(|f| {
        f.severity >= crate::rules::Severity::Warning && found.ended_ago_ms(f, now).is_none()
    }) {
        return finding(f, out);
    }
    // The straggler another GPU's hang waits for looks idle and fine on its own: say so, for
    // as long as the hang it explains.
    if let Some(f) = hang_waiting_on(index, store) {
        out.push_str("◀ CULPRIT");
        return theme.severity(f.severity);
    }
    // A symptom present whose window has not run out is being timed, not fine.
    if let Some(w) = found.watching_on(index) {
        watching_badge(w, now, width, out);
        return theme
            .severity(crate::rules::Severity::Warning)
            .remove_modifier(ratatui::style::Modifier::BOLD | ratatui::style::Modifier::REVERSED);
    }
    if let Some(f) = worst {
        return finding(f, out);
    }
    // Not "ok" before the rules could judge: a hang looks fine for its first seconds.
    match found.judging(index).filter(|j| j.pending()) {
        // Power cannot tell busy from idle here: not "ok", and no count that will not end.
        Some(j) if j.blind.is_some() => {
            let _ = write!(out, "– {}", j.blind_short().unwrap_or_default());
        }
        Some(j) => {
            let _ = write!(out, "… {}/{}s", j.covered_ms / 1000, j.needed_ms / 1000);
        }
        // No reading at all (a recording torn in its first tick) is not "ok" either.
        None if dev.samples.is_empty() => out.push_str("– no data"),
        None => out.push_str("✓ ok"),
    }
    theme.dim()
}

/// "? HANG? 4/8s": a symptom being timed, the seconds before the name go, the name's short
/// form before the seconds.
fn watching_badge(w: &crate::rules::Watch, now: u64, width: usize, out: &mut String) {
    let held = now.saturating_sub(w.since_ms) / 1000;
    let (need, short) = (w.window_ms / 1000, short(&w.rule));
    let candidates: [&dyn Fn(&mut String); 6] = [
        &|o| {
            o.push_str("? ");
            push_upper(o, &w.rule);
            let _ = write!(o, "? {held}/{need}s");
        },
        &|o| {
            let _ = write!(o, "? {short} {held}/{need}s");
        },
        &|o| {
            let _ = write!(o, "? {short} {held}s");
        },
        &|o| {
            let _ = write!(o, "?{short} {held}s");
        },
        &|o| {
            o.push_str("? ");
            push_upper(o, &w.rule);
            o.push('?');
        },
        &|o| {
            let _ = write!(o, "? {short}");
        },
    ];
    for write in candidates {
        out.clear();
        write(out);
        if out.chars().count() <= width {
            return;
        }
    }
    out.clear();
    let _ = write!(out, "?{short}");
}

/// An open finding whose symptom ended, in `width` cells: "STARVED ended" where it fits, else
/// "STARV ended", else "○ STARV" (the help's legend says what ○ is).
fn ended_badge(rule: &str, width: usize, out: &mut String) {
    out.clear();
    push_upper(out, rule);
    out.push_str(" ended");
    if out.chars().count() <= width {
        return;
    }
    out.clear();
    let _ = write!(out, "{} ended", short(rule));
    if out.chars().count() <= width {
        return;
    }
    out.clear();
    let _ = write!(out, "○ {}", short(rule));
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
    let mut out = String::new();
    badge(dev, store, true, &Theme { color: false }, &mut out);
    Some(out)
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

    fn ended_badge(rule: &str, width: usize) -> String {
        let mut out = String::new();
        super::ended_badge(rule, width, &mut out);
        out
    }

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
