//! The rule engine: diagnoses evaluated over the history, not one sample.
//!
//! Each rule looks at a window of one device's history and either holds (with its evidence)
//! or not. A finding opens when its rule holds (the rule itself demands the symptom for its
//! whole onset window) and closes only after the rule has not held for `clear_after`, so a
//! finding does not flap. Nothing here knows about NVML, tokio or the terminal.

mod conclusions;
mod copy;
mod ctx;
mod engine;
mod fp32;
mod hang;
mod health;
mod hints;
mod id;
mod idle_mem;
mod lost;
mod mem_full;
mod mem_growth;
mod metric;
mod pcie;
mod persistence;
mod powercap;
mod shared;
mod slots;
mod stacks;
mod starved;
mod stats;
mod sync;
mod thermal;
mod thresholds;
mod transfer;
mod window;

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

pub use conclusions::{Conclusions, Judging, Watch};
pub use ctx::Ctx;
use engine::KEEP_CLEARED;
pub use engine::{reword_every, Engine, Floor, REWORD_MS, REWORD_OLD_MS, WATCH_MS};
pub use metric::Metric;
pub use stats::Stats;

use crate::model::demo::Demo;
pub use thresholds::{dur, Refusal, Section, MAX_WINDOW};

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
#[derive(Debug, PartialEq, Serialize, Deserialize)]
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
    /// The rule did not hold the last time its GPU was judged: the symptom ended at `last_ms`,
    /// and the finding stays open for `clear_after` (so it does not flap) to see whether it
    /// comes back. Absent (false) while it holds, once it is closed, and in files from before
    /// it was kept.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub symptom_ended: bool,
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

/// One figure a finding was judged on. Its name and unit are the engine's own words
/// (borrowed, so an open finding's figures are refreshed and copied without allocating) or,
/// read back from a file, owned.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Measure {
    /// As `gpuwatch query` names it: `utilization.gpu`, `power.draw`, `power.idle_floor`,
    /// `power.tdp_ratio`, `gpm.sm_active`, `memory.used`, `window`.
    pub name: Cow<'static, str>,
    /// The median over the window (`memory.used`: its largest value; `window`: its length).
    pub value: f64,
    /// `%`, `W`, `MiB` or `s`.
    pub unit: Cow<'static, str>,
}

/// The figures of `ctx`'s GPU over `window_ms`, what every rule judges from, written over
/// `out` (its buffer kept: an open finding's figures are refreshed at each judging).
fn measures(ctx: &Ctx, window_ms: u64, out: &mut Vec<Measure>) {
    let m = |name: &'static str, value: Option<f32>, unit: &'static str| {
        value.map(|v| Measure {
            name: Cow::Borrowed(name),
            value: (f64::from(v) * 100.0).round() / 100.0,
            unit: Cow::Borrowed(unit),
        })
    };
    let median = |f: Metric| {
        let s = ctx.stats(window_ms, f);
        (s.n > 0).then_some(s.median)
    };
    let power = median(Metric::Power);
    let mem = ctx.stats(window_ms, Metric::MemUsedMib);
    let figures = [
        m("utilization.gpu", median(Metric::Util), "%"),
        m("power.draw", power, "W"),
        m("power.idle_floor", Some(ctx.floor_w), "W"),
        m(
            "power.tdp_ratio",
            power.zip(ctx.tdp_w()).map(|(p, t)| p / t * 100.0),
            "%",
        ),
        m("gpm.sm_active", median(Metric::SmActive), "%"),
        m("memory.used", (mem.n > 0).then_some(mem.max), "MiB"),
        m("window", Some(window_ms as f32 / 1000.0), "s"),
    ];
    out.clear();
    out.extend(figures.into_iter().flatten());
}

/// The rank of a job that the others wait for.
#[derive(Debug, PartialEq, Serialize, Deserialize)]
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
    /// The finding still holds, at `severity`; its words are those of its last worded
    /// verdict (the rule was asked without `Ctx::wording`). Its fit is that verdict's too.
    pub held: bool,
}

impl Verdict {
    /// An open finding that still holds, at `severity` (none: the rule's), not worded anew.
    #[must_use]
    pub fn held(severity: Option<Severity>) -> Verdict {
        Verdict {
            held: true,
            severity,
            ..Verdict::default()
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
    /// For a rule whose findings can be critical: whether every sample after the given time
    /// still shows the open finding's symptom, from those samples alone. A GPU whose critical
    /// findings all say so waits for the quiet cadence to be judged in full; one that does
    /// not is judged at once, so an end is said as soon as its samples show it
    /// (`Engine::turn`). `None`: a critical finding of this rule is judged at the busy rate.
    pub glance: Option<fn(&Ctx, u64) -> bool>,
    /// Where it judges on a GPU in MIG mode (docs/diagnoses.md says why, rule by rule).
    pub mig: OnMig,
    /// Its simulated scenario (`--demo NAME`): levels, the settings NVML reports once, the
    /// processes each GPU runs, the trouble its counters and events show (a GPU that falls
    /// off the bus among them). Stories that need more (a MIG split, a straggler beside a
    /// hang, the worn GPU) are written in the simulator, out of the rules' scenarios.
    pub demo: Demo,
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

impl Rule {
    /// The span of history the rule reads to decide under `t`: its window, or the longer one
    /// a slow symptom is timed over.
    #[must_use]
    pub fn span(&self, t: &Thresholds) -> std::time::Duration {
        let needs = match self.watch {
            Watching::With { needs, .. } => needs(t),
            _ => std::time::Duration::ZERO,
        };
        needs.max((self.window)(t))
    }
}

/// The longest span of history any rule reads under `t`, and the rule: a history shorter than
/// this never judges that rule, and a screen watching it says "being timed" for ever.
#[must_use]
pub fn longest_span(t: &Thresholds) -> (std::time::Duration, &'static Rule) {
    let longest = RULES.iter().max_by_key(|r| r.span(t));
    let longest = longest.unwrap_or(&RULES[0]);
    (longest.span(t), longest)
}

/// The least history in which every rule is judged with samples every `interval`: a window is
/// covered once its oldest sample is that old, and a history's samples reach back one
/// interval less than it, whole intervals only.
#[must_use]
pub fn least_history(interval: std::time::Duration, t: &Thresholds) -> std::time::Duration {
    let (span, _) = longest_span(t);
    let every = ms(interval).max(1);
    std::time::Duration::from_millis((ms(span).div_ceil(every) + 1).saturating_mul(every))
}

/// Refuses a history (`--history`, `GPUWATCH_HISTORY`) too short for some rule to be judged
/// with samples every `interval`: `--history 5s` left every finding "being timed" for ever
/// ("24s of the 10s it needs", helper-39).
pub fn history_holds(
    history: std::time::Duration,
    interval: std::time::Duration,
    t: &Thresholds,
) -> Result<(), String> {
    let least = least_history(interval, t);
    let every = ms(interval).max(1);
    // Whole intervals, in u64: a history of 2^30 s once wrapped to "too short".
    if (ms(history) / every).max(2) >= ms(least) / every {
        return Ok(());
    }
    let (span, rule) = longest_span(t);
    // Spaceless, as a flag's value is typed: "2m250ms", not "2m 250ms".
    let shown = |d| humantime::format_duration(d).to_string().replace(' ', "");
    let needed = shown(least);
    Err(format!(
        "a history of {} (--history or GPUWATCH_HISTORY) is shorter than what the rules read: \
         {:?} decides over {}, and would never be judged. Keep at least {needed} (--history \
         {needed})",
        shown(history),
        rule.title,
        shown(span)
    ))
}

/// The scenario rule `id` declares for the simulator.
#[must_use]
pub fn demo(id: RuleId) -> &'static Demo {
    // The registry declares `RuleId` and `RULES` from one list in one order
    // (`id::tests::the_registry_lists_every_rule_at_its_ids_place`).
    &RULES[id as usize].demo
}

/// Every rule's own scenario, with its rule, in the registry's order.
pub fn demos() -> impl Iterator<Item = (RuleId, &'static Demo)> {
    RULES.iter().map(|r| (r.id, &r.demo))
}

/// True when rule `id` is one of the "busy but idle" diagnoses.
#[must_use]
pub fn is_busy_but_idle(id: &str) -> bool {
    RULES.iter().any(|r| r.id.as_str() == id && r.busy_but_idle)
}

// The thresholds, a section per rule file that has any (flat in the config file).
thresholds::thresholds! {
    engine: engine::EngineThresholds,
    hang: hang::HangThresholds,
    starved: starved::StarvedThresholds,
    sync: sync::SyncThresholds,
    transfer: transfer::TransferThresholds,
    powercap: powercap::PowercapThresholds,
    thermal: thermal::ThermalThresholds,
    pcie: pcie::PcieThresholds,
    idle_mem: idle_mem::IdleMemThresholds,
    fp32: fp32::Fp32Thresholds,
    shared: shared::SharedThresholds,
    mem_full: mem_full::MemFullThresholds,
    mem_growth: mem_growth::MemGrowthThresholds,
    health: health::HealthThresholds,
}

// The registry: adding a rule is its file, its `mod` line above, a line here (its typed id,
// its name in files and findings, its short name for narrow screens, and the rule) and, if it
// has thresholds, a line in `thresholds!` above. The order is the order findings are listed in.
id::registry! {
    Lost = "lost", "LOST" => lost::LOST;
    Xid = "xid", "XID" => health::xid::XID;
    Ecc = "ecc", "ECC" => health::ecc::ECC;
    RowRemap = "row-remap", "REMAP" => health::remap::REMAP;
    Hang = "hang", "HANG" => hang::HANG;
    Starved = "starved", "STARV" => starved::STARVED;
    Sync = "sync", "SYNC" => sync::SYNC;
    Transfer = "transfer", "XFER" => transfer::TRANSFER;
    Powercap = "powercap", "PWRCAP" => powercap::POWERCAP;
    Thermal = "thermal", "THERM" => thermal::THERMAL;
    Pcie = "pcie", "PCIE" => pcie::PCIE;
    PcieReplay = "pcie-replay", "REPLAY" => health::pcie_replay::PCIE_REPLAY;
    Nvlink = "nvlink", "NVLINK" => health::nvlink::NVLINK;
    MemFull = "mem-full", "MEMFULL" => mem_full::MEM_FULL;
    MemGrowth = "mem-growth", "MEMGROW" => mem_growth::MEM_GROWTH;
    IdleMem = "idle-mem", "IDLEMEM" => idle_mem::IDLE_MEM;
    Fp32 = "fp32", "FP32" => fp32::FP32;
    Shared = "shared", "SHARED" => shared::SHARED;
    Persistence = "persistence", "PERSIST" => persistence::PERSISTENCE;
}

pub(crate) fn ms(d: std::time::Duration) -> u64 {
    d.as_millis() as u64
}
