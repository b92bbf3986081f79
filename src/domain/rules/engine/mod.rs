//! The engine's state and its evaluation: per device and rule a slot (the open finding, the
//! symptom being timed), the learned idle floors, process arrivals, and the cadence.

mod floor;
mod thresholds;
mod turn;
mod wants;

pub use floor::Floor;
pub use thresholds::EngineThresholds;

use super::slots::{
    close_other_causes, needs_watched_windows, not_from_another_causes_window, one_cause,
    update_slot, watch_rules,
};
use super::Thresholds;
use super::{all_rules, ms, Conclusions, Ctx, Finding, Judging, Rule, Verdict, Watch};
use crate::history::{DeviceHistory, History};

/// Per device and rule: the open finding, if any.
#[derive(Debug, Clone, Default)]
pub(super) struct Slot {
    pub(super) open: Option<Finding>,
    /// The best fit the open finding's verdicts had: its evidence is the one seen then.
    pub(super) best_fit: f32,
    /// Findings this rule has opened on this device since the start.
    pub(super) opened: u64,
    /// A cause rule whose symptom holds over `WATCH_MS` but not yet its window: since when.
    pub(super) watch_since_ms: Option<u64>,
    /// The GPU's energy meter at the open finding's `since_ms`, J.
    pub(super) energy_base_j: f64,
    /// Joules used while this rule's earlier findings on this device were open.
    pub(super) energy_closed_j: f64,
    /// When the open finding's verdict was last worded (sample time), and that verdict's fit.
    pub(super) worded_ms: Option<u64>,
    pub(super) worded_fit: f32,
}

impl Slot {
    /// The open finding's words are due again: it was never worded, its cadence passed
    /// (`reword_every`), or time went back.
    fn words_due(&self, now_ms: u64, every_ms: u64) -> bool {
        let age_ms = self
            .open
            .as_ref()
            .map_or(0, |f| now_ms.saturating_sub(f.since_ms));
        let every_ms = reword_every(every_ms, age_ms);
        self.worded_ms
            .is_none_or(|at| now_ms < at || now_ms - at >= every_ms)
    }
}

/// How often an open finding's evidence is worded anew, at most, while its symptom is young
/// (sample time; older, `reword_every`): the figures a person reads move slower than the rules
/// judge (a hung GPU every 400 ms, glanced at every 200). A verdict that raises the finding's
/// severity is worded at once, and the last judging of a run words every finding.
pub const REWORD_MS: u64 = 1_000;
/// How often, at most, once the symptom has held a while (`reword_every`).
pub const REWORD_OLD_MS: u64 = 5_000;

/// An open finding's words are as fresh as its age asks: every `every_ms` while its symptom
/// is young, then a tenth of its age, never rarer than `REWORD_OLD_MS`. A symptom of ten
/// minutes moves little from one second to the next, and its figures are read as such ("held
/// 10 min"); wording every open finding once a second was a fifth of what judging the 64-GPU
/// demo cost (docs/performance.md). `every_ms` 0 words every verdict (tests).
pub fn reword_every(every_ms: u64, age_ms: u64) -> u64 {
    if every_ms == 0 {
        return 0;
    }
    (age_ms / 10).clamp(every_ms, REWORD_OLD_MS.max(every_ms))
}

/// How long a cause's symptom must hold to be "watched": long enough that one odd sample is
/// not a symptom, short enough to be said in the first seconds of a hang.
pub const WATCH_MS: u64 = 3_000;

/// When each process was first seen on a device, to tell start-up from steady state.
#[derive(Debug, Clone, Default)]
pub(super) struct Arrivals {
    /// (pid, when it arrived), sorted by pid.
    seen: Vec<(u32, u64)>,
    /// The pids of the latest evaluation, sorted (kept to be reused, not reallocated).
    present: Vec<u32>,
}

/// Evaluates every rule on every device, with hysteresis and one cause per GPU.
#[derive(Clone)]
pub struct Engine {
    pub(super) rules: Vec<Rule>,
    pub thresholds: Thresholds,
    pub(super) slots: Vec<Vec<Slot>>,
    pub(super) floors: Vec<Floor>,
    pub(super) arrivals: Vec<Arrivals>,
    pub(super) verdicts: Vec<Option<Verdict>>,
    /// Per device (history order): its windows' values, kept sorted between evaluations.
    pub(super) windows: Vec<super::window::Windows>,
    /// Per device (history order): the sample time it was last judged at (`rests`).
    pub(super) judged_ms: Vec<Option<u64>>,
    /// Per device: the cause that held last and when (rule position, ms).
    pub(super) last_cause: Vec<Option<(usize, u64)>>,
    /// The devices as of the last evaluation, in history order (for their floors).
    pub(super) infos: Vec<crate::model::DeviceInfo>,
    /// What readers read: the findings and the rest, as of the last evaluation. The only
    /// place they are queried.
    pub(super) out: Conclusions,
    /// Where the open findings are (device, rule), in the order readers get them: kept
    /// between evaluations so that ordering them allocates nothing.
    pub(super) open_order: Vec<(usize, usize)>,
    /// `REWORD_MS`; 0 words every verdict (tests compare the two).
    pub(super) reword_ms: u64,
}

pub(super) const KEEP_CLEARED: usize = 256;

impl Engine {
    #[must_use]
    pub fn new(thresholds: Thresholds) -> Self {
        Engine {
            rules: all_rules(),
            thresholds,
            slots: Vec::new(),
            floors: Vec::new(),
            arrivals: Vec::new(),
            verdicts: Vec::new(),
            windows: Vec::new(),
            judged_ms: Vec::new(),
            last_cause: Vec::new(),
            infos: Vec::new(),
            out: Conclusions::default(),
            open_order: Vec::new(),
            reword_ms: REWORD_MS,
        }
    }

    /// How many windows the rules have asked of GPU `device` (history order) and keep moving.
    #[cfg(test)]
    pub(crate) fn windows_kept(&self, device: usize) -> usize {
        self.windows
            .get(device)
            .map_or(0, super::window::Windows::len)
    }

    #[must_use]
    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    /// What the rules concluded at the last evaluation: what every reader reads.
    #[must_use]
    pub fn conclusions(&self) -> &Conclusions {
        &self.out
    }

    /// The position in the history of the GPU with NVML index `device`. Every per-device
    /// query takes the NVML index, as `Finding::device` does: a recording whose indices are
    /// not 0, 1, 2… (a subset of a node's GPUs) must not show one GPU's finding on another.
    fn position(&self, device: u32) -> Option<usize> {
        self.out.indices.iter().position(|&i| i == device)
    }

    /// The causes being timed on each GPU (history order), longest-held first per GPU.
    pub(super) fn timed(&self) -> impl Iterator<Item = Watch> + '_ {
        self.slots.iter().enumerate().flat_map(move |(p, slots)| {
            slots
                .iter()
                .zip(&self.rules)
                .filter_map(move |(slot, rule)| {
                    slot.watch_since_ms.map(|since_ms| Watch {
                        device: self.out.indices.get(p).copied().unwrap_or(p as u32),
                        rule: rule.id.into(),
                        title: rule.title.into(),
                        since_ms,
                        // What it takes at most: a slow leak's longer window, not the
                        // fast one ("41 s of the 10 s it needs").
                        window_ms: ms(rule.span(&self.thresholds)),
                    })
                })
        })
    }

    /// The longest window a cause needs: how long a GPU is "judging" after a start.
    #[must_use]
    pub fn cause_window_ms(&self) -> u64 {
        self.rules
            .iter()
            .filter(|r| r.cause)
            .map(|r| ms((r.window)(&self.thresholds)))
            .max()
            .unwrap_or(0)
    }

    pub fn evaluate(&mut self, history: &History) {
        let n = history.devices.len();
        self.slots
            .resize_with(n, || vec![Slot::default(); self.rules.len()]);
        self.floors.resize(n, Floor::default());
        self.arrivals.resize_with(n, Arrivals::default);
        self.out.judging.resize_with(n, Judging::default);
        self.last_cause.resize(n, None);
        self.out.indices.clear();
        self.out
            .indices
            .extend(history.devices.iter().map(|d| d.info.index));
        if self.infos.len() != n {
            self.infos = history.devices.iter().map(|d| d.info.clone()).collect();
        }
        self.judged_ms.resize(n, None);
        self.windows.resize_with(n, Default::default);
        for (i, dev) in history.devices.iter().enumerate() {
            let now_ms = dev.samples.latest().map(|s| s.t_ms);
            match self.turn(i, now_ms) {
                turn::Turn::Rests => continue,
                turn::Turn::Glanced if self.glance(i, dev, history) => continue,
                turn::Turn::Glanced | turn::Turn::Judged => {}
            }
            // Unjudged since `judge_every_device_next` (a run's last judging) or ever: every
            // open finding is worded anew.
            let word_all = self.judged_ms[i].is_none();
            self.judged_ms[i] = now_ms;
            self.evaluate_device(i, dev, history, word_all);
        }
        self.conclude();
    }

    /// The next evaluation judges every device, none resting, and words every open finding
    /// anew: the end of a run reports what the newest samples say.
    pub fn judge_every_device_next(&mut self) {
        self.judged_ms.iter_mut().for_each(|j| *j = None);
    }

    /// Some open finding's words are older than its device's last judging (it held since,
    /// not worded anew: `REWORD_MS`).
    #[must_use]
    pub fn words_behind(&self) -> bool {
        self.slots
            .iter()
            .zip(&self.judged_ms)
            .any(|(slots, judged)| {
                slots
                    .iter()
                    .any(|s| s.open.is_some() && judged.is_some() && s.worded_ms != *judged)
            })
    }

    /// When device `position` (history order) was last judged, sample time.
    #[must_use]
    pub fn judged_at_ms(&self, position: usize) -> Option<u64> {
        self.judged_ms.get(position).copied().flatten()
    }

    /// Every rule on device `i`: the verdicts, which are being timed, one cause, the slots.
    fn evaluate_device(
        &mut self,
        i: usize,
        dev: &DeviceHistory,
        history: &History,
        word_all: bool,
    ) {
        self.learn_floor(i, dev);
        let Some(now_ms) = dev.samples.latest().map(|s| s.t_ms) else {
            return;
        };
        let judged_from_ms = self.note_arrivals(i, dev, now_ms);
        let blind = self.blind(i, dev);
        let j = &mut self.out.judging[i];
        if j.blind.as_deref() != blind {
            j.blind = blind.map(String::from);
        }
        let mut ctx = Ctx {
            dev,
            all: history,
            thresholds: &self.thresholds,
            floor_w: self.floor_w(&dev.info),
            floor: self.floors[i],
            now_ms,
            judged_from_ms: 0,
            open: false,
            window_ms: 0,
            wording: true,
            windows: std::cell::RefCell::new(std::mem::take(&mut self.windows[i])),
        };
        // A buffer kept between evaluations: judging healthy GPUs allocates nothing.
        let verdicts = &mut self.verdicts;
        verdicts.clear();
        for (rule, slot) in self.rules.iter().zip(&self.slots[i]) {
            let reword_ms = (!word_all).then_some(self.reword_ms);
            verdicts.push(check(rule, slot, &mut ctx, (judged_from_ms, reword_ms)));
        }
        watch_rules(
            &self.rules,
            &mut self.slots[i],
            verdicts,
            &mut ctx,
            judged_from_ms,
        );
        needs_watched_windows(
            &self.rules,
            &self.slots[i],
            &mut self.out.judging[i],
            &self.thresholds,
        );
        one_cause(&self.rules, &self.slots[i], verdicts);
        not_from_another_causes_window(
            &self.rules,
            &mut self.last_cause[i],
            verdicts,
            now_ms,
            &self.thresholds,
        );
        ctx.judged_from_ms = judged_from_ms;
        update_slots(
            &self.rules,
            &mut self.slots[i],
            &mut self.verdicts,
            &mut self.out.cleared,
            &ctx,
        );
        self.windows[i] = ctx.windows.into_inner();
    }

    /// Tracks when each process arrived on device `i`; returns the time from which the
    /// after-start-up rules may judge it, and updates its `Judging`.
    fn note_arrivals(&mut self, i: usize, dev: &DeviceHistory, now_ms: u64) -> u64 {
        let grace = ms(self.thresholds.engine.startup_grace);
        let needed_ms = self.cause_window_ms();
        let first_ms = dev.samples.iter().next().map_or(now_ms, |s| s.t_ms);
        let Arrivals { seen, present } = &mut self.arrivals[i];
        // By binary search on sorted pids: with thousands of processes a scan of each list
        // for each process was most of a replay's time.
        present.clear();
        present.extend(dev.processes.iter().map(|p| p.pid));
        present.sort_unstable();
        seen.retain(|(pid, _)| present.binary_search(pid).is_ok());
        for p in &dev.processes {
            let Err(at) = seen.binary_search_by_key(&p.pid, |(pid, _)| *pid) else {
                continue;
            };
            // A process already running when watching began, and started long enough before,
            // is past its start-up: attaching to a running job judges it at once.
            let started = p.host.as_ref().and_then(|h| h.started_ms);
            let at_start = now_ms == first_ms && started.is_some_and(|s| s + grace <= first_ms);
            seen.insert(
                at,
                (
                    p.pid,
                    if at_start {
                        first_ms.saturating_sub(grace)
                    } else {
                        now_ms
                    },
                ),
            );
        }
        // Windows never reach back before the newest process arrived: what the GPU did before
        // (idle, another job) says nothing about it. Its first `startup_grace` is "starting";
        // no cause window is shorter, so nothing opens on a start-up alone.
        let judged_from = seen
            .iter()
            .map(|(_, t)| *t)
            .max()
            .unwrap_or(0)
            .max(first_ms);
        let j = &mut self.out.judging[i];
        j.device = dev.info.index;
        j.from_ms = judged_from;
        j.covered_ms = now_ms.saturating_sub(judged_from);
        j.needed_ms = needed_ms;
        j.starting_pids.clear();
        j.starting_pids.extend(
            seen.iter()
                .filter(|(_, t)| t + grace > now_ms)
                .map(|(pid, _)| *pid),
        );
        judged_from
    }
}

/// One rule's verdict on the device `ctx` reads: `None` when it does not hold, when its
/// window is not covered yet, or when it does not judge this kind of device (a MIG instance).
fn check(
    rule: &Rule,
    slot: &Slot,
    ctx: &mut Ctx,
    (judged_from_ms, reword_ms): (u64, Option<u64>),
) -> Option<Verdict> {
    ctx.judged_from_ms = if rule.after_startup {
        judged_from_ms
    } else {
        0
    };
    ctx.open = slot.open.is_some();
    ctx.window_ms = ms((rule.window)(ctx.thresholds));
    // `reword_ms` none: every finding is worded (a run's last judging).
    ctx.wording =
        slot.open.is_none() || reword_ms.is_none_or(|every| slot.words_due(ctx.now_ms, every));
    // Coverage is checked here, once, for every rule: a rule reads its window.
    let covered = ctx.window_ms == 0 || ctx.covers(ctx.window_ms);
    let judged = covered && rule.mig.judges(&ctx.dev.info);
    let mut verdict = judged.then(|| (rule.check)(ctx)).flatten()?;
    if verdict.held {
        let shown = slot.open.as_ref().map_or(rule.severity, |f| f.severity);
        if verdict.severity.unwrap_or(rule.severity) > shown {
            // Raised (a hang confirmed): its title and evidence say so now.
            ctx.wording = true;
            return (rule.check)(ctx);
        }
        verdict.fit = slot.worded_fit;
    }
    Some(verdict)
}

/// Opens, holds, escalates or closes each of a device's findings (`slots`) from this
/// evaluation's verdicts, taken out of `verdicts`; a finding closed goes to `cleared`.
fn update_slots(
    rules: &[Rule],
    slots: &mut [Slot],
    verdicts: &mut Vec<Option<Verdict>>,
    cleared: &mut Vec<Finding>,
    ctx: &Ctx,
) {
    for (r, verdict) in verdicts.drain(..).enumerate() {
        let rule = &rules[r];
        let opening = verdict.is_some() && slots[r].open.is_none();
        if rule.cause && opening {
            // A new cause replaces the one still waiting out its hysteresis.
            close_other_causes(rules, slots, r, ctx.now_ms, cleared);
        }
        if let Some(closed) = update_slot(&mut slots[r], rule, ctx, verdict) {
            cleared.push(closed);
        }
    }
}

#[cfg(test)]
mod testing;

#[cfg(test)]
mod tests {
    use super::reword_every;

    /// Once a second while young, a tenth of its age after ten seconds, every five seconds
    /// from fifty on; 0 (every verdict) stays 0, and a cadence above the cap is kept.
    #[test]
    fn an_old_findings_words_are_renewed_less_often() {
        let at = |age_s: u64| reword_every(1_000, age_s * 1_000);
        assert_eq!(
            [at(0), at(9), at(10), at(25), at(49)],
            [1_000, 1_000, 1_000, 2_500, 4_900]
        );
        assert_eq!([at(50), at(600), at(86_400)], [5_000; 3]);
        assert_eq!(reword_every(0, 600_000), 0);
        assert_eq!(reword_every(8_000, 600_000), 8_000);
    }
}
