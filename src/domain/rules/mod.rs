//! The rule engine: diagnoses evaluated over the history, not one sample.
//!
//! Each rule looks at a window of one device's history and either holds (with its evidence)
//! or not. A finding opens when its rule holds (the rule itself demands the symptom for its
//! whole onset window) and closes only after the rule has not held for `clear_after`, so a
//! finding does not flap. Nothing here knows about NVML, tokio or the terminal.

mod conclusions;
mod hang;
mod hardware;
mod health;
mod hints;
mod host;
mod id;
mod memory;
mod stacks;
mod stats;
mod sync;
mod transfer;

use serde::{Deserialize, Serialize};

use crate::config::Thresholds;
use crate::history::{DeviceHistory, History};
pub use conclusions::Conclusions;
pub use id::RuleId;
pub use stats::Stats;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Info,
    Warning,
    Critical,
}

impl Severity {
    /// A marker that does not need colour.
    #[must_use]
    pub fn marker(self) -> &'static str {
        match self {
            Severity::Info => "i",
            Severity::Warning => "!",
            Severity::Critical => "‼",
        }
    }
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Critical => "critical",
        }
    }
}

/// What a rule found on one device, with the numbers that show it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    pub rule: String,
    pub title: String,
    pub severity: Severity,
    pub device: u32,
    /// When the symptom began (ms): the start of the window that first satisfied the rule.
    pub since_ms: u64,
    /// The last time the rule held (ms).
    pub last_ms: u64,
    /// When the rule first held and the finding was raised (ms).
    pub opened_ms: u64,
    /// When the finding was closed (ms), for recently cleared findings.
    pub cleared_ms: Option<u64>,
    pub evidence: Vec<String>,
    /// Probable causes, most likely first.
    pub causes: Vec<String>,
    /// What to do: commands and code.
    pub actions: Vec<String>,
    /// PIDs of the processes involved.
    pub pids: Vec<u32>,
    /// Which signals decided ("GPM SM activity", or the fallbacks used without GPM).
    pub signals: String,
    /// The rank the others wait for (a hang across GPUs of one job). Once named it stays, so a
    /// report written after the job ended still names it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub culprit: Option<Culprit>,
    /// The runner-up cause whose symptoms also matched, if any (a rule id); the evidence says
    /// why it was judged less likely.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alternative: Option<String>,
    /// The evidence's figures as numbers, for scripts: the GPU over the rule's window at the
    /// finding's strongest moment (absent in files from before they were kept).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub measures: Vec<Measure>,
    /// Joules the GPU used from `since_ms` to `last_ms`: what this symptom cost (absent where
    /// power was not read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub energy_j: Option<f64>,
}

/// A finding whose rule did not hold at the last evaluation has ended: the rules evaluate at
/// least every 200 ms of sample time, so a `last_ms` older than this says so within one tick.
const ENDED_AFTER_MS: u64 = 200;

impl Finding {
    /// How long ago its symptom ended, at sample time `now_ms`; `None` while it still holds.
    /// An ended finding stays open for `clear_after` (so it does not flap), kept for the
    /// culprit it names and for snapshots, and says that it ended.
    #[must_use]
    pub fn ended_ago_ms(&self, now_ms: u64) -> Option<u64> {
        let ago = now_ms.saturating_sub(self.last_ms);
        (self.cleared_ms.is_none() && ago > ENDED_AFTER_MS).then_some(ago)
    }
}

/// One figure a finding was judged on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Measure {
    /// As `gpuwatch query` names it: `utilization.gpu`, `power.draw`, `power.idle_floor`,
    /// `power.tdp_ratio`, `gpm.sm_active`, `memory.used`, `window`.
    pub name: String,
    /// The median over the window (`memory.used`: its largest value; `window`: its length).
    pub value: f64,
    /// `%`, `W`, `MiB` or `s`.
    pub unit: String,
}

/// The figures of `ctx`'s GPU over `window_ms`, what every rule judges from.
fn measures(ctx: &Ctx, window_ms: u64) -> Vec<Measure> {
    let m = |name: &str, value: Option<f32>, unit: &str| {
        value.map(|v| Measure {
            name: name.into(),
            value: (f64::from(v) * 100.0).round() / 100.0,
            unit: unit.into(),
        })
    };
    let median = |f: fn(&crate::model::DeviceSample) -> Option<f32>| {
        let s = ctx.stats(window_ms, f);
        (s.n > 0).then_some(s.median)
    };
    let power = median(|s| s.power_w);
    let mem = ctx.stats(window_ms, |s| s.mem_used_bytes.map(|b| (b >> 20) as f32));
    [
        m("utilization.gpu", median(|s| s.util_gpu_pct), "%"),
        m("power.draw", power, "W"),
        m("power.idle_floor", Some(ctx.floor_w), "W"),
        m(
            "power.tdp_ratio",
            power.zip(ctx.tdp_w()).map(|(p, t)| p / t * 100.0),
            "%",
        ),
        m("gpm.sm_active", median(|s| s.gpm.sm_active_pct), "%"),
        m("memory.used", (mem.n > 0).then_some(mem.max), "MiB"),
        m("window", Some(window_ms as f32 / 1000.0), "s"),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// The rank of a job that the others wait for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Culprit {
    /// The GPU it ran on (NVML index).
    pub device: u32,
    pub pid: u32,
    pub rank: Option<u32>,
    /// `exited` (its process left the GPU) or `idle` (its GPU idles while the others spin).
    pub reason: String,
    /// When that was seen (ms).
    pub at_ms: u64,
    /// The sentence for the evidence list.
    pub text: String,
}

/// A rule's verdict for one evaluation.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Verdict {
    pub evidence: Vec<String>,
    pub causes: Vec<String>,
    pub actions: Vec<String>,
    pub pids: Vec<u32>,
    pub signals: String,
    /// Raises the rule's severity (e.g. hardware power brake).
    pub severity: Option<Severity>,
    /// A title for this stage of the finding ("hang suspected" before it is confirmed).
    pub title: Option<String>,
    /// How well the symptoms fit this cause, 0–1: when several causes match one GPU, the
    /// best fit is shown and the runner-up named in its evidence.
    pub fit: f32,
    /// Why this cause, in one line, for a runner-up's mention.
    pub summary: String,
    pub culprit: Option<Culprit>,
    /// Set by the engine: the runner-up cause.
    pub alternative: Option<RuleId>,
}

/// Everything a rule may read about one device.
pub struct Ctx<'a> {
    pub dev: &'a DeviceHistory,
    pub all: &'a History,
    pub thresholds: &'a Thresholds,
    /// This GPU's idle floor in watts (learned, or the documented fallback).
    pub floor_w: f32,
    pub floor: Floor,
    pub now_ms: u64,
    /// Samples before this (ms) are not judged by rules that wait out start-up: the newest
    /// process on the GPU was still starting.
    pub judged_from_ms: u64,
    /// True when this rule's finding is open on this device: a rule may hold it with looser
    /// thresholds than it opened with (hysteresis), so a finding does not flap.
    pub open: bool,
    /// The rule's window, ms: the history covers it whenever the rule is asked.
    pub window_ms: u64,
    /// Statistics already computed for this GPU in this evaluation: several rules read the
    /// same metric over the same span (util over 10 s by four of them), and computing a
    /// window's statistics was most of what judging cost.
    memo: Memo,
}

/// (span ms, which part of it, the metric's function) → its statistics.
type Memo = std::cell::RefCell<Vec<(u64, u8, usize, Stats)>>;

/// A metric of a sample, as the statistics of a window read it.
pub type Metric = fn(&crate::model::DeviceSample) -> Option<f32>;

impl Ctx<'_> {
    #[must_use]
    pub fn tdp_w(&self) -> Option<f32> {
        self.dev.info.tdp_w()
    }
    /// The power below which a GPU counts as "near its idle floor".
    #[must_use]
    pub fn near_floor_w(&self) -> f32 {
        let margin = self.tdp_w().map_or(0.0, |tdp| {
            tdp * self.thresholds.floor_margin_pct_of_tdp / 100.0
        });
        self.floor_w + margin.max(self.thresholds.floor_margin_min_w)
    }
    /// True when GPU memory held steady over the last `span_ms` (within 512 MiB or 2 %): a
    /// process still laying out its memory — loading a model, cuDNN autotune trying
    /// workspaces, the allocator warming up — is starting, whatever its util looks like. A
    /// steady training loop reuses its cached blocks. Unknown memory counts as steady.
    #[must_use]
    pub fn memory_settled(&self, span_ms: u64) -> bool {
        let used = self.stats(span_ms, |s| s.mem_used_bytes.map(|b| b as f32));
        used.n == 0 || used.max - used.min <= (512.0 * 1024.0 * 1024.0f32).max(used.max * 0.02)
    }

    /// True when the history reaches back at least `span_ms` from now, past start-up.
    #[must_use]
    pub fn covers(&self, span_ms: u64) -> bool {
        self.dev
            .samples
            .iter()
            .next()
            .is_some_and(|s| s.t_ms.max(self.judged_from_ms) + span_ms <= self.now_ms)
    }
    /// Statistics of `metric` over the last `span_ms`, computed once per evaluation.
    pub fn stats(&self, span_ms: u64, metric: Metric) -> Stats {
        self.memoized(span_ms, 0, metric, || {
            Stats::of(self.dev.samples.last(span_ms).filter_map(metric))
        })
    }
    /// `stats` of a metric that needs more than the sample (a share of this GPU's TDP): not
    /// kept for other rules.
    pub fn stats_of(
        &self,
        span_ms: u64,
        metric: impl Fn(&crate::model::DeviceSample) -> Option<f32>,
    ) -> Stats {
        Stats::of(self.dev.samples.last(span_ms).filter_map(metric))
    }
    /// Stats of the older and the newer half of the window. A symptom must show in both, so a
    /// window that straddles two different workloads does not pass for a third.
    pub fn halves(&self, span_ms: u64, metric: Metric) -> (Stats, Stats) {
        let half = span_ms / 2;
        let older = self.memoized(span_ms, 1, metric, || {
            Stats::of(
                self.dev
                    .samples
                    .window(
                        self.now_ms.saturating_sub(span_ms),
                        self.now_ms.saturating_sub(half),
                    )
                    .filter_map(metric),
            )
        });
        (older, self.stats(half, metric))
    }
    fn memoized(
        &self,
        span_ms: u64,
        part: u8,
        metric: Metric,
        compute: impl FnOnce() -> Stats,
    ) -> Stats {
        let key = metric as usize;
        let known = self
            .memo
            .borrow()
            .iter()
            .find(|(s, p, k, _)| *s == span_ms && *p == part && *k == key)
            .map(|e| e.3);
        known.unwrap_or_else(|| {
            let stats = compute();
            self.memo.borrow_mut().push((span_ms, part, key, stats));
            stats
        })
    }
    #[must_use]
    pub fn floor_text(&self) -> String {
        if self.floor.context.is_some() {
            format!(
                "this GPU's idle floor with a CUDA context ({:.0} W)",
                self.floor_w
            )
        } else if let Some(bare) = self.floor.bare {
            format!(
                "this GPU's idle floor with a context, estimated ({:.0} W: {bare:.0} W seen with no process, plus {:.0} % of TDP for a context)",
                self.floor_w, self.thresholds.context_floor_extra_pct_of_tdp
            )
        } else {
            format!(
                "the assumed idle floor ({:.0} W, {:.0} % of TDP; no idle seen yet)",
                self.floor_w, self.thresholds.floor_fallback_pct_of_tdp
            )
        }
    }
    /// "power 121 W = 17 % of the 700 W TDP, +2 W from this GPU's idle floor (…)".
    #[must_use]
    pub fn power_evidence(&self, w: f32) -> String {
        // Rounded first, so a reading a fraction below the floor does not print "-0 W".
        let above = (w - self.floor_w).round();
        format!(
            "power {}, {:+.0} W from {}",
            self.pct_of_tdp(w),
            above + 0.0,
            self.floor_text()
        )
    }

    #[must_use]
    pub fn pct_of_tdp(&self, w: f32) -> String {
        match self.tdp_w() {
            Some(tdp) if tdp > 0.0 => {
                format!("{w:.0} W = {:.0} % of the {tdp:.0} W TDP", w / tdp * 100.0)
            }
            _ => format!("{w:.0} W"),
        }
    }
}

/// One diagnosis. Rules are plain values; their state lives in the engine.
#[derive(Clone)]
pub struct Rule {
    pub id: RuleId,
    pub title: &'static str,
    pub severity: Severity,
    /// How long the symptom must last before the finding opens. The engine judges a rule
    /// only once the history covers this window, and passes it as `Ctx::window_ms`.
    pub window: fn(&Thresholds) -> std::time::Duration,
    pub check: fn(&Ctx) -> Option<Verdict>,
    /// One of the causes of "busy but idle" (hang, starved, sync, transfer): at most one is
    /// open on a GPU at a time.
    pub cause: bool,
    /// Judges only what a GPU did after its processes' start-up (import, load, autotune).
    pub after_startup: bool,
    /// The GPU looks busy and is not (its spans are tinted on the chart).
    pub busy_but_idle: bool,
    /// How to tell that its symptom is building before its window has run: the screen says
    /// the rule is being timed, and a run that ends before the window did was not judged in
    /// full.
    pub watch: Watching,
    /// Where it judges on a GPU in MIG mode (docs/diagnoses.md says why, rule by rule).
    pub mig: OnMig,
}

/// Where a rule judges on a GPU in MIG mode. A GPU without MIG is judged by every rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnMig {
    /// On each instance, from what it has: GPM activity, memory, processes and their host
    /// side (NVML reports no utilization or power for an instance).
    Instance,
    /// On the GPU: power, temperature, clocks, links and health are the whole GPU's.
    Parent,
    /// Nowhere: it needs utilization, or counters the instances share.
    Neither,
}

impl OnMig {
    /// Whether a rule of this kind judges device `info`.
    #[must_use]
    pub fn judges(self, info: &crate::model::DeviceInfo) -> bool {
        matches!(
            (self, info.mig.is_some(), info.is_mig_parent()),
            (OnMig::Instance, true, _) | (OnMig::Parent, _, true) | (_, false, false)
        )
    }

    /// How docs/diagnoses.md says it.
    #[must_use]
    pub fn words(self) -> &'static str {
        match self {
            OnMig::Instance => "each instance",
            OnMig::Parent => "the GPU",
            OnMig::Neither => "not judged",
        }
    }
}

/// How a rule's building symptom is seen (`Rule::watch`).
#[derive(Clone, Copy)]
pub enum Watching {
    /// Its own check holds over the last `WATCH_MS`.
    Check,
    /// `building` holds over what has been judged so far (`Ctx::window_ms` is that span, up to
    /// `needs`), and the rule needs `needs` of it to decide (a slow leak's window, longer than
    /// the fast one the engine judges the rule at).
    With {
        building: fn(&Ctx) -> bool,
        needs: fn(&Thresholds) -> std::time::Duration,
    },
    /// Not watched: its window is short, or its symptom is not a state that builds.
    No,
}

/// Every rule gpuwatch knows, in the order findings are listed.
#[must_use]
pub fn all_rules() -> Vec<Rule> {
    RULES.to_vec()
}

/// True when rule `id` is one of the "busy but idle" diagnoses.
#[must_use]
pub fn is_busy_but_idle(id: &str) -> bool {
    RULES.iter().any(|r| r.id.as_str() == id && r.busy_but_idle)
}

/// The registry: adding a rule is its file, a line here and its thresholds.
static RULES: [Rule; 17] = [
    hardware::LOST,
    health::XID,
    health::ECC,
    health::REMAP,
    hang::HANG,
    host::STARVED,
    sync::SYNC,
    transfer::TRANSFER,
    hardware::POWERCAP,
    hardware::THERMAL,
    hardware::PCIE,
    health::PCIE_REPLAY,
    health::NVLINK,
    memory::FULL,
    memory::GROWTH,
    host::IDLE_MEM,
    hardware::PERSISTENCE,
];

/// Per device and rule: the open finding, if any.
#[derive(Debug, Clone, Default)]
struct Slot {
    open: Option<Finding>,
    /// The best fit the open finding's verdicts had: its evidence is the one seen then.
    best_fit: f32,
    /// Findings this rule has opened on this device since the start.
    opened: u64,
    /// A cause rule whose symptom holds over `WATCH_MS` but not yet its window: since when.
    watch_since_ms: Option<u64>,
    /// The GPU's energy meter at the open finding's `since_ms`, J.
    energy_base_j: f64,
    /// Joules used while this rule's earlier findings on this device were open.
    energy_closed_j: f64,
}

/// What a GPU is still being judged for: until the rules' windows are covered past its
/// processes' start-up, "nothing found" does not mean "all clear".
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Judging {
    pub device: u32,
    /// Judged from here (ms): the first sample, or the end of the newest process's start-up.
    pub from_ms: u64,
    /// How much has been judged and how much the causes' windows need, ms.
    pub covered_ms: u64,
    pub needed_ms: u64,
    /// Processes still in their start-up.
    pub starting_pids: Vec<u32>,
}

impl Judging {
    /// True while the windows are not covered yet.
    #[must_use]
    pub fn pending(&self) -> bool {
        self.covered_ms < self.needed_ms
    }
}

/// A busy-but-idle symptom present now whose finding has not opened yet: it is being timed.
/// "ok" is not what such a GPU is (issue 25), and its processes' stacks are read as evidence
/// while it is timed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Watch {
    pub device: u32,
    /// The cause rule whose symptom holds over the watch span.
    pub rule: String,
    pub title: String,
    /// Since when it has held (ms), and how long its window is (ms).
    pub since_ms: u64,
    pub window_ms: u64,
}

/// How long a cause's symptom must hold to be "watched": long enough that one odd sample is
/// not a symptom, short enough to be said in the first seconds of a hang.
pub const WATCH_MS: u64 = 3_000;

/// When each process was first seen on a device, to tell start-up from steady state.
#[derive(Debug, Clone, Default)]
struct Arrivals {
    /// (pid, when it arrived), sorted by pid.
    seen: Vec<(u32, u64)>,
    /// The pids of the latest evaluation, sorted (kept to be reused, not reallocated).
    present: Vec<u32>,
}

/// Evaluates every rule on every device, with hysteresis and one cause per GPU.
#[derive(Clone)]
pub struct Engine {
    rules: Vec<Rule>,
    pub thresholds: Thresholds,
    slots: Vec<Vec<Slot>>,
    floors: Vec<Floor>,
    arrivals: Vec<Arrivals>,
    verdicts: Vec<Option<Verdict>>,
    /// The statistics buffer each GPU's `Ctx` borrows (kept: nothing allocated per evaluation).
    memo: Vec<(u64, u8, usize, Stats)>,
    /// Per device: the cause that held last and when (rule position, ms).
    last_cause: Vec<Option<(usize, u64)>>,
    /// The devices as of the last evaluation, in history order (for their floors).
    infos: Vec<crate::model::DeviceInfo>,
    /// Per device: the sample time it was last judged at.
    judged_ms: Vec<Option<u64>>,
    /// What readers read: the findings and the rest, as of the last evaluation. The only
    /// place they are queried.
    out: Conclusions,
}

const KEEP_CLEARED: usize = 256;
/// The idle power a GPU has shown: with no process at all, and with a process holding a CUDA
/// context but running no kernel (higher: ~80 W against ~121 W on an H200). A hung kernel sits
/// at the second, so that is the floor the rules judge against once it has been seen.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Floor {
    pub bare: Option<f32>,
    pub context: Option<f32>,
}

impl Floor {
    #[must_use]
    pub fn best(&self) -> Option<f32> {
        self.context.or(self.bare)
    }
}

/// At most how long a quiet GPU goes unjudged, and how often the store judges while something
/// is being timed (`store::EVALUATE_QUIET_EVERY_MS`, `store::EVALUATE_EVERY_MS`).
const QUIET_JUDGE_MS: u64 = 500;
const BUSY_JUDGE_MS: u64 = 200;

/// A stretch of no activity this long teaches the engine the GPU's idle floor.
const FLOOR_SPAN_MS: u64 = 5_000;

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
            memo: Vec::new(),
            last_cause: Vec::new(),
            infos: Vec::new(),
            judged_ms: Vec::new(),
            out: Conclusions::default(),
        }
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
    fn timed(&self) -> impl Iterator<Item = Watch> + '_ {
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
                        window_ms: match rule.watch {
                            Watching::With { needs, .. } => ms(needs(&self.thresholds)),
                            _ => 0,
                        }
                        .max(ms((rule.window)(&self.thresholds))),
                    })
                })
        })
    }

    /// The processes whose Python stacks the rules want, and how soon: as evidence (urgent)
    /// for those on GPUs where a cause is open or being timed and, for a hang, every rank of
    /// the same job wherever it runs (the culprit is on a GPU that looks idle); now and then
    /// (not urgent) for those on a GPU that draws less than half its TDP, where counters alone
    /// cannot tell a starved loop from one idle by demand. Written into `out`, sorted by pid,
    /// one entry a pid.
    pub fn stack_wants(&self, history: &History, out: &mut Vec<(u32, bool)>) {
        out.clear();
        let mut jobs: Vec<&str> = Vec::new();
        for (p, dev) in history.devices.iter().enumerate() {
            let Some(slots) = self.slots.get(p) else {
                continue;
            };
            let mut urgent = false;
            for (slot, rule) in slots.iter().zip(&self.rules) {
                let judged = slot.open.is_some() || slot.watch_since_ms.is_some();
                if !(rule.cause && judged) {
                    continue;
                }
                urgent = true;
                if rule.id == RuleId::Hang {
                    jobs.extend(
                        dev.processes
                            .iter()
                            .filter_map(|pr| pr.host.as_ref()?.job.as_ref())
                            .map(|j| j.key.as_str()),
                    );
                }
            }
            // Now and then: past their start-up only (what a process does while it imports and
            // loads says nothing of its steady state).
            let starting = self
                .out
                .judging
                .get(p)
                .map_or(&[][..], |j| &j.starting_pids[..]);
            if urgent {
                out.extend(dev.processes.iter().map(|pr| (pr.pid, true)));
            } else if under_used(dev) {
                out.extend(
                    dev.processes
                        .iter()
                        .filter(|pr| !starting.contains(&pr.pid))
                        .map(|pr| (pr.pid, false)),
                );
            }
        }
        if !jobs.is_empty() {
            for dev in &history.devices {
                out.extend(dev.processes.iter().filter_map(|pr| {
                    let key = pr.host.as_ref()?.job.as_ref()?.key.as_str();
                    jobs.contains(&key).then_some((pr.pid, true))
                }));
            }
        }
        // Urgent first within a pid, so that dedup keeps it.
        out.sort_unstable_by_key(|(pid, urgent)| (*pid, !*urgent));
        out.dedup_by_key(|(pid, _)| *pid);
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

    /// The learned idle floors of a device (NVML index; none until it has been idle a while).
    #[must_use]
    pub fn floors(&self, device: u32) -> Floor {
        self.position(device)
            .and_then(|p| self.floors.get(p))
            .copied()
            .unwrap_or_default()
    }

    /// The idle floor the rules judge a device against, in watts: the floor seen with a
    /// context; else the bare floor plus what a context adds; else a share of TDP.
    #[must_use]
    pub fn floor_w(&self, info: &crate::model::DeviceInfo) -> f32 {
        let t = &self.thresholds;
        let f = self.floors(info.index);
        let tdp = info.tdp_w().unwrap_or(0.0);
        f.context
            .or(f
                .bare
                .map(|b| b + tdp * t.context_floor_extra_pct_of_tdp / 100.0))
            .unwrap_or(tdp * t.floor_fallback_pct_of_tdp / 100.0)
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
        for (i, dev) in history.devices.iter().enumerate() {
            let now_ms = dev.samples.latest().map(|s| s.t_ms);
            if self.rests(i, now_ms) {
                continue;
            }
            self.judged_ms[i] = now_ms;
            self.evaluate_device(i, dev, history);
        }
        self.conclude();
    }

    /// When device `position` (history order) was last judged, sample time.
    #[must_use]
    pub fn judged_at_ms(&self, position: usize) -> Option<u64> {
        self.judged_ms.get(position).copied().flatten()
    }

    /// Device `i` is quiet (nothing being timed, nothing of warning or worse open) and was
    /// judged recently enough to wait for a later evaluation: it waits its turn
    /// while another GPU's symptom is judged every 200 ms. Judging every GPU of a box at that
    /// rate because one of them is in trouble was most of what the rules cost with many GPUs.
    fn rests(&self, i: usize, now_ms: Option<u64>) -> bool {
        let (Some(now), Some(Some(last))) = (now_ms, self.judged_ms.get(i)) else {
            return false;
        };
        let quiet = self.slots[i].iter().all(|s| {
            s.watch_since_ms.is_none()
                && s.open
                    .as_ref()
                    .is_none_or(|f| f.severity < Severity::Warning)
        });
        // Judged again when waiting for the next evaluation (200 ms on) would leave it more
        // than `QUIET_JUDGE_MS` unjudged: every 400 ms while others are judged every 200.
        quiet && now >= *last && now - last + BUSY_JUDGE_MS <= QUIET_JUDGE_MS
    }

    /// Every rule on device `i`: the verdicts, which are being timed, one cause, the slots.
    fn evaluate_device(&mut self, i: usize, dev: &DeviceHistory, history: &History) {
        self.learn_floor(i, dev);
        let Some(now_ms) = dev.samples.latest().map(|s| s.t_ms) else {
            return;
        };
        let judged_from_ms = self.note_arrivals(i, dev, now_ms);
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
            memo: std::cell::RefCell::new(std::mem::take(&mut self.memo)),
        };
        ctx.memo.get_mut().clear();
        // A buffer kept between evaluations: judging healthy GPUs allocates nothing.
        let verdicts = &mut self.verdicts;
        verdicts.clear();
        for (rule, slot) in self.rules.iter().zip(&self.slots[i]) {
            ctx.judged_from_ms = if rule.after_startup {
                judged_from_ms
            } else {
                0
            };
            ctx.open = slot.open.is_some();
            ctx.window_ms = ms((rule.window)(&self.thresholds));
            // Coverage is checked here, once, for every rule: a rule reads its window.
            let covered = ctx.window_ms == 0 || ctx.covers(ctx.window_ms);
            let judged = covered && rule.mig.judges(&dev.info);
            verdicts.push(judged.then(|| (rule.check)(&ctx)).flatten());
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
        for (r, verdict) in self.verdicts.drain(..).enumerate() {
            let rule = &self.rules[r];
            let opening = verdict.is_some() && self.slots[i][r].open.is_none();
            if rule.cause && opening {
                // A new cause replaces the one still waiting out its hysteresis.
                close_other_causes(
                    &self.rules,
                    &mut self.slots[i],
                    r,
                    now_ms,
                    &mut self.out.cleared,
                );
            }
            if let Some(closed) = update_slot(&mut self.slots[i][r], rule, &ctx, verdict) {
                self.out.cleared.push(closed);
            }
        }
        self.memo = ctx.memo.into_inner();
    }

    /// Tracks when each process arrived on device `i`; returns the time from which the
    /// after-start-up rules may judge it, and updates its `Judging`.
    fn note_arrivals(&mut self, i: usize, dev: &DeviceHistory, now_ms: u64) -> u64 {
        let grace = ms(self.thresholds.startup_grace);
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

    /// The floor is the lowest power held through a stretch with no kernels running.
    fn learn_floor(&mut self, i: usize, dev: &DeviceHistory) {
        let Some(latest) = dev.samples.latest() else {
            return;
        };
        if dev
            .samples
            .iter()
            .next()
            .is_none_or(|s| s.t_ms + FLOOR_SPAN_MS > latest.t_ms)
        {
            return;
        }
        let util = Stats::of(
            dev.samples
                .last(FLOOR_SPAN_MS)
                .filter_map(|s| s.util_gpu_pct),
        );
        let sm = Stats::of(
            dev.samples
                .last(FLOOR_SPAN_MS)
                .filter_map(|s| s.gpm.sm_active_pct),
        );
        let idle = util.n > 0 && util.max <= 0.0 && (sm.n == 0 || sm.max <= 1.0);
        if !idle {
            return;
        }
        let power = Stats::of(dev.samples.last(FLOOR_SPAN_MS).filter_map(|s| s.power_w));
        // NVML sets the GpuIdle clock-event bit while no context is resident (the GPU parks its
        // clocks): that is the bare floor, whatever the process list says in the same second.
        let parked = Stats::of(dev.samples.last(FLOOR_SPAN_MS).filter_map(|s| {
            s.clock_events
                .map(|e| f32::from(u8::from(e & crate::model::clock_event::GPU_IDLE != 0)))
        }));
        if power.n > 0 {
            let f = &mut self.floors[i];
            let with_context = !dev.processes.is_empty() && parked.max == 0.0;
            let slot = if with_context {
                &mut f.context
            } else {
                &mut f.bare
            };
            *slot = Some(slot.map_or(power.median, |old: f32| old.min(power.median)));
        }
    }
}

/// A GPU with a process that drew less than half its TDP over the last `WATCH_MS`.
fn under_used(dev: &DeviceHistory) -> bool {
    let Some(tdp) = dev.info.tdp_w().filter(|t| *t > 0.0) else {
        return false;
    };
    let power = Stats::of(dev.samples.last(WATCH_MS).filter_map(|s| s.power_w));
    !dev.processes.is_empty() && power.n > 0 && power.median < tdp * 0.5
}

/// A rule being timed needs its whole window before "nothing found" means it: the GPU is
/// judged in full only once the longest watched window is covered.
fn needs_watched_windows(rules: &[Rule], slots: &[Slot], judging: &mut Judging, t: &Thresholds) {
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
fn watch_rules(
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
fn one_cause(rules: &[Rule], slots: &[Slot], verdicts: &mut [Option<Verdict>]) {
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
            "also consistent with \"{}\" ({}), judged less likely (fit {:.2} against {:.2})",
            rules[runner_up].title, other.summary, other.fit, v.fit
        ));
        v.summary = format!("{}; runner-up: {}", v.summary, rules[runner_up].id);
        v.culprit = v.culprit.take().or(other.culprit);
        v.alternative = Some(rules[runner_up].id);
    }
}

/// A cause may take over from another only once the newer half of its window is clear of the
/// other's symptoms: when a job ends, the last seconds of input copies must not read as syncs.
fn not_from_another_causes_window(
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
fn close_other_causes(
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
                cleared.push(f);
            }
        }
    }
}

/// Opens, refreshes or closes one slot's finding; returns a finding that just closed.
#[allow(clippy::too_many_lines)] // one finding's life (open, hold, raise, end, clear) in the order it happens
fn update_slot(
    slot: &mut Slot,
    rule: &Rule,
    ctx: &Ctx,
    verdict: Option<Verdict>,
) -> Option<Finding> {
    let verdict = verdict.map(|mut v| {
        hints::apply(rule.id, ctx.dev, &mut v);
        v
    });
    match (verdict, slot.open.as_mut()) {
        (Some(v), Some(f)) => {
            f.last_ms = ctx.now_ms;
            // A GPU that stopped answering used what it used: unknown, not more.
            f.energy_j = match ctx.dev.status {
                crate::model::DeviceStatus::Ok => energy_since(ctx, slot.energy_base_j),
                crate::model::DeviceStatus::Lost { .. } => None,
            };
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
                slot.best_fit = slot.best_fit.max(v.fit);
                f.measures = measures(ctx, ms((rule.window)(ctx.thresholds)));
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
                evidence: v.evidence,
                causes: v.causes,
                actions: v.actions,
                pids: v.pids,
                signals: v.signals,
                culprit: v.culprit,
                alternative: v.alternative.map(String::from),
                measures: measures(ctx, window),
                energy_j: energy_since(ctx, slot.energy_base_j),
            });
            None
        }
        (None, Some(f))
            if ctx.now_ms.saturating_sub(f.last_ms)
                >= ctx.thresholds.clear_after.as_millis() as u64 =>
        {
            let mut closed = slot.open.take()?;
            closed.cleared_ms = Some(ctx.now_ms);
            slot.energy_closed_j += closed.energy_j.unwrap_or(0.0);
            Some(closed)
        }
        _ => None,
    }
}

/// Joules since the meter read `base_j`; `None` while none were measured (no power read).
fn energy_since(ctx: &Ctx, base_j: f64) -> Option<f64> {
    // To a tenth of a joule: what a file or a screen needs, without float noise.
    let j = ((ctx.dev.energy.total_j() - base_j) * 10.0).round() / 10.0;
    (j > 0.0).then_some(j)
}

pub(crate) fn ms(d: std::time::Duration) -> u64 {
    d.as_millis() as u64
}
