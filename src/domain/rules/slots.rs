//! One evaluation's decisions across a device's rules: which symptoms are being timed, the one
//! cause per GPU, and each slot's finding opened, held, escalated or cleared.

use super::engine::Slot;
use super::Thresholds;
use super::{
    hints, measures, ms, Ctx, Finding, Judging, Rule, Severity, Stats, Verdict, Watching, WATCH_MS,
};
use crate::history::DeviceHistory;
use crate::text::fixed;

/// A GPU with a process that drew less than half its TDP over the last `WATCH_MS`.
pub(super) fn under_used(dev: &DeviceHistory) -> bool {
    let Some(tdp) = dev.info.tdp_w().filter(|t| *t > 0.0) else {
        return false;
    };
    let power = Stats::of(dev.samples.last(WATCH_MS).filter_map(|s| s.power_w));
    !dev.processes.is_empty() && power.n > 0 && power.median < tdp * 0.5
}

/// A rule being timed needs its whole window before "nothing found" means it: the GPU is
/// judged in full only once the longest watched window is covered.
pub(super) fn needs_watched_windows(
    rules: &[Rule],
    slots: &[Slot],
    judging: &mut Judging,
    t: &Thresholds,
) {
    for (rule, slot) in rules.iter().zip(slots) {
        if slot.watch_since_ms.is_some() {
            judging.needed_ms = judging.needed_ms.max(rule.needed_ms(t));
        }
    }
}

impl Rule {
    /// How much history the rule needs to decide: its window, or the longer one its watch
    /// names.
    #[must_use]
    pub fn needed_ms(&self, t: &Thresholds) -> u64 {
        let window = ms((self.window)(t));
        match self.watch {
            Watching::With { needs, .. } => window.max(ms(needs(t))),
            _ => window,
        }
    }
}

/// For each rule whose finding is not open and whose window did not hold: is its symptom
/// building (`Rule::watch`)? Then it is being timed (`Slot::watch_since_ms`).
pub(super) fn watch_rules(
    rules: &[Rule],
    slots: &mut [Slot],
    verdicts: &[Option<Verdict>],
    ctx: &mut Ctx,
    judged_from_ms: u64,
) {
    for (r, rule) in rules.iter().enumerate() {
        let slot = &mut slots[r];
        if slot.open.is_some() || verdicts[r].is_some() {
            slot.watch_since_ms = None;
            continue;
        }
        let window = ms((rule.window)(ctx.thresholds));
        ctx.open = false;
        // Whether it holds is all that is asked here: its words would be dropped.
        ctx.wording = false;
        ctx.judged_from_ms = if rule.after_startup {
            judged_from_ms
        } else {
            0
        };
        let holds = match rule.watch {
            _ if !rule.mig.judges(&ctx.dev.info) => false,
            Watching::No => false,
            Watching::Check => {
                ctx.window_ms = window.min(WATCH_MS);
                ctx.covers(ctx.window_ms) && (rule.check)(ctx).is_some()
            }
            Watching::With { building, needs } => {
                // Over what has been judged of the window so far.
                let first = ctx.dev.samples.iter().next().map_or(ctx.now_ms, |s| s.t_ms);
                ctx.window_ms = ctx
                    .now_ms
                    .saturating_sub(first.max(ctx.judged_from_ms))
                    .min(ms(needs(ctx.thresholds)).max(window));
                ctx.window_ms >= WATCH_MS && building(ctx)
            }
        };
        slot.watch_since_ms = if holds {
            Some(
                // Since the start of the span it was seen to hold over.
                slot.watch_since_ms
                    .unwrap_or(ctx.now_ms.saturating_sub(ctx.window_ms)),
            )
        } else {
            None
        };
    }
}

/// Keeps one cause per GPU: the open one while it still holds (no flapping between two
/// explanations), else the best fit; the runner-up is named in the winner's evidence.
pub(super) fn one_cause(rules: &[Rule], slots: &[Slot], verdicts: &mut [Option<Verdict>]) {
    let holds = |r: usize| rules[r].cause && verdicts[r].is_some();
    if (0..rules.len()).filter(|&r| holds(r)).count() < 2 {
        return;
    }
    let held: Vec<usize> = (0..rules.len()).filter(|&r| holds(r)).collect();
    let fit = |r: usize| verdicts[r].as_ref().map_or(0.0, |v| v.fit);
    let winner = held
        .iter()
        .copied()
        .find(|&r| slots[r].open.is_some())
        .unwrap_or_else(|| {
            held.iter()
                .copied()
                .max_by(|&a, &b| fit(a).total_cmp(&fit(b)))
                .expect("two or more held")
        });
    let runner_up = held
        .iter()
        .copied()
        .filter(|&r| r != winner)
        .max_by(|&a, &b| fit(a).total_cmp(&fit(b)))
        .expect("two or more held");
    let other = verdicts[runner_up].take().expect("held");
    for r in held {
        if r != winner {
            verdicts[r] = None;
        }
    }
    if let Some(v) = verdicts[winner].as_mut() {
        v.evidence.push(format!(
            "also consistent with \"{}\" ({}), judged less likely (fit {} against {})",
            rules[runner_up].title,
            other.summary,
            fixed(other.fit, 2),
            fixed(v.fit, 2)
        ));
        v.summary = format!("{}; runner-up: {}", v.summary, rules[runner_up].id);
        v.culprit = v.culprit.take().or(other.culprit);
        v.alternative = Some(rules[runner_up].id);
    }
}

/// A cause may take over from another only once the newer half of its window is clear of the
/// other's symptoms: when a job ends, the last seconds of input copies must not read as syncs.
pub(super) fn not_from_another_causes_window(
    rules: &[Rule],
    last: &mut Option<(usize, u64)>,
    verdicts: &mut [Option<Verdict>],
    now_ms: u64,
    t: &Thresholds,
) {
    for r in 0..rules.len() {
        if !rules[r].cause || verdicts[r].is_none() {
            continue;
        }
        match *last {
            // Half its window: the newer half, where the rules look for the symptom now.
            Some((other, held_ms))
                if other != r && held_ms + ms((rules[r].window)(t)) / 2 > now_ms =>
            {
                verdicts[r] = None;
            }
            _ => *last = Some((r, now_ms)),
        }
    }
}

/// Closes every open cause on a device except `keep`.
pub(super) fn close_other_causes(
    rules: &[Rule],
    slots: &mut [Slot],
    keep: usize,
    now_ms: u64,
    cleared: &mut Vec<Finding>,
) {
    for (r, slot) in slots.iter_mut().enumerate() {
        if r != keep && rules[r].cause {
            if let Some(mut f) = slot.open.take() {
                f.cleared_ms = Some(now_ms);
                f.symptom_ended = false;
                cleared.push(f);
            }
        }
    }
}

/// Opens, refreshes or closes one slot's finding; returns a finding that just closed.
#[allow(clippy::too_many_lines)] // one finding's life (open, hold, raise, end, clear) in the order it happens
pub(super) fn update_slot(
    slot: &mut Slot,
    rule: &Rule,
    ctx: &Ctx,
    verdict: Option<Verdict>,
) -> Option<Finding> {
    let verdict = verdict.map(|mut v| {
        if !v.held {
            hints::apply(rule.id, ctx.dev, &mut v);
            slot.worded_ms = Some(ctx.now_ms);
            slot.worded_fit = v.fit;
        }
        v
    });
    match (verdict, slot.open.as_mut()) {
        (Some(mut v), Some(f)) => {
            still_holds(f, slot.energy_base_j, ctx);
            if v.held {
                // Still holds, as worded last (`check` worded anew one that raises it).
                return None;
            }
            // Severity only rises while a finding is open (a hang once confirmed stays so).
            let escalates = v.severity.unwrap_or(rule.severity) > f.severity;
            f.severity = f.severity.max(v.severity.unwrap_or(rule.severity));
            // The evidence shown is the one of the finding's strongest moment: as a job ends,
            // its process leaves /proc and its last verdicts know less (host side unknown).
            // A different reading of the same cause (the starved process now computing rather
            // than waiting: its teardown) must fit better than the one shown.
            let same_reading = v.title.as_deref().is_none_or(|t| t == f.title);
            let better = if same_reading {
                v.fit >= slot.best_fit - 0.05
            } else {
                v.fit > slot.best_fit + 0.05
            };
            // A re-reading that says the GPU waits for something benign (stacks show a server
            // idle between requests) lowers the finding to its severity.
            if better && !same_reading && v.severity == Some(Severity::Info) {
                f.severity = Severity::Info;
            }
            if better || escalates {
                // The job ended and took its settings with it (NVIDIA_TF32_OVERRIDE=0 seen live
                // was lost from the finding once its process left): keep the hints read.
                if ctx.dev.processes.is_empty() {
                    hints::carry(f, &mut v);
                }
                slot.best_fit = slot.best_fit.max(v.fit);
                measures(ctx, ms((rule.window)(ctx.thresholds)), &mut f.measures);
                f.title = v.title.unwrap_or_else(|| rule.title.into());
                f.evidence = v.evidence;
                f.causes = v.causes;
                f.actions = v.actions;
                f.signals = v.signals;
                f.alternative = v.alternative.map(String::from);
            }
            match (v.culprit, f.culprit.as_ref()) {
                // The same rank, seen as its process leaves (its /proc gone, its rank unknown):
                // what was seen before says more.
                (Some(c), Some(old))
                    if c.pid == old.pid && c.rank.is_none() && old.rank.is_some() => {}
                (Some(c), _) => f.culprit = Some(c),
                // The job ended and took the evidence with it: keep what was seen.
                (None, Some(c)) if !f.evidence.contains(&c.text) => {
                    let seen = match c.reason.as_str() {
                        "exited" => String::new(),
                        _ => format!(" (seen at {} UTC)", crate::text::clock(c.at_ms)),
                    };
                    f.evidence.push(format!("{}{seen}", c.text));
                }
                _ => {}
            }
            for pid in v.pids {
                if !f.pids.contains(&pid) {
                    f.pids.push(pid);
                }
            }
            None
        }
        (Some(v), None) => {
            let window = (rule.window)(ctx.thresholds).as_millis() as u64;
            slot.best_fit = v.fit;
            slot.opened += 1;
            let since_ms = ctx.now_ms.saturating_sub(window);
            slot.energy_base_j = ctx.dev.energy.total_j()
                - crate::energy::integral_since(ctx.dev.samples.iter(), since_ms);
            slot.open = Some(Finding {
                rule: rule.id.into(),
                title: v.title.unwrap_or_else(|| rule.title.into()),
                severity: v.severity.unwrap_or(rule.severity),
                device: ctx.dev.info.index,
                since_ms,
                opened_ms: ctx.now_ms,
                last_ms: ctx.now_ms,
                cleared_ms: None,
                symptom_ended: false,
                evidence: v.evidence,
                causes: v.causes,
                actions: v.actions,
                pids: v.pids,
                signals: v.signals,
                culprit: v.culprit,
                alternative: v.alternative.map(String::from),
                measures: {
                    let mut figures = Vec::new();
                    measures(ctx, window, &mut figures);
                    figures
                },
                energy_j: energy_since(ctx, slot.energy_base_j),
            });
            None
        }
        (None, Some(f))
            if ctx.now_ms.saturating_sub(f.last_ms)
                >= ctx.thresholds.engine.clear_after.as_millis() as u64 =>
        {
            let mut closed = slot.open.take()?;
            closed.cleared_ms = Some(ctx.now_ms);
            // Closed says it all: the flag is for open findings.
            closed.symptom_ended = false;
            slot.energy_closed_j += closed.energy_j.unwrap_or(0.0);
            Some(closed)
        }
        (None, Some(f)) => {
            f.symptom_ended = true;
            None
        }
        (None, None) => None,
    }
}

/// An open finding whose symptom still holds at `ctx.now_ms`, as worded: its time and the
/// energy used while it held move on.
pub(super) fn still_holds(f: &mut Finding, energy_base_j: f64, ctx: &Ctx) {
    f.last_ms = ctx.now_ms;
    f.symptom_ended = false;
    // A GPU that stopped answering used what it used: unknown, not more.
    f.energy_j = match ctx.dev.status {
        crate::model::DeviceStatus::Ok => energy_since(ctx, energy_base_j),
        crate::model::DeviceStatus::Lost { .. } => None,
    };
}

/// Joules since the meter read `base_j`; `None` while none were measured (no power read).
pub(super) fn energy_since(ctx: &Ctx, base_j: f64) -> Option<f64> {
    // To a tenth of a joule: what a file or a screen needs, without float noise.
    let j = ((ctx.dev.energy.total_j() - base_j) * 10.0).round() / 10.0;
    (j > 0.0).then_some(j)
}
