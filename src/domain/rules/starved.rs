//! The starved rule: util low and power near the floor while the kernels that do run fill the
//! SMs: the GPU waits for input. The host side says for what: the process (or its `DataLoader`
//! workers) busy on a CPU preparing batches, or the process sleeping / in I/O wait with little
//! CPU (slow storage, a remote source); its Python stacks, where read, say which. Fires wrongly
//! on: a job that is legitimately CPU-heavy between short GPU steps (e.g. RL environments),
//! which is still worth knowing.

mod demo;
mod host_side;

use super::thresholds::{dur, Section};
use crate::text::fixed;
use host_side::{host_evidence, Kind};
use serde::{Deserialize, Serialize};
use std::time::Duration;

use super::{stacks, Ctx, Metric, OnMig, Rule, RuleId, Severity, Verdict, Watching};
use crate::model::stack::StackClass;
use crate::text::span_words;

/// When a GPU is called starved of input.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct StarvedThresholds {
    /// Starvation is judged over this window…
    #[serde(rename = "starved_window", with = "dur")]
    pub window: Duration,
    /// …when the median utilization is at most this.
    #[serde(rename = "starved_util_max_median_pct")]
    pub util_max_median_pct: f32,
    /// Power above the floor that starvation may still draw (bursts), as a share of TDP.
    #[serde(rename = "starved_power_margin_pct_of_tdp")]
    pub power_margin_pct_of_tdp: f32,
    /// The owning process (or one of its workers) counts as busy on the host above this CPU %.
    #[serde(rename = "starved_host_cpu_min_pct")]
    pub host_cpu_min_pct: f32,
}

impl Default for StarvedThresholds {
    fn default() -> Self {
        StarvedThresholds {
            window: Duration::from_secs(10),
            util_max_median_pct: 50.0,
            power_margin_pct_of_tdp: 15.0,
            host_cpu_min_pct: 70.0,
        }
    }
}

impl Section for StarvedThresholds {}

pub const STARVED: Rule = Rule {
    id: RuleId::Starved,
    glance: None,
    mig: OnMig::Instance,
    title: "GPU starved: waiting for input",
    severity: Severity::Warning,
    window: |t| t.starved.window,
    check: check_starved,
    cause: true,
    after_startup: true,
    busy_but_idle: true,
    watch: Watching::Check,
    demo: demo::DEMO,
};

/// Share of samples with GPM SM activity above zero (or util above zero, at half this) that
/// tells a GPU fed a little from an idle one. On H200s: SM above zero in 0.93-1.0 of the
/// samples of starved loaders (even one waiting on storage at 0-1 % util), at most 0.23 for
/// idle processes holding a context, start-ups and transitions; util above zero in 0.3-1.0
/// for loaders with visible bursts, at most 0.07 for the quiet phases.
const STARVED_ACTIVE_SHARE: f32 = 0.6;

/// A process below this CPU % that sleeps (S) or waits on I/O (D) is waiting, not computing.
const WAITING_CPU_MAX_PCT: f32 = 40.0;

/// Above its counters' ceiling, a GPU still counts as starved when its process's stacks show it
/// waiting on its input most of the time: a loader that keeps the GPU a quarter busy draws
/// well above the idle floor (230-320 W on an H200) and looks healthy to counters alone.
const STACKED_POWER_MARGIN_PCT_OF_TDP: f32 = 40.0;

/// The window's counters, as the starved rule reads them.
struct Counters {
    util: super::Stats,
    power: super::Stats,
    sm: super::Stats,
    /// Within the counters' own thresholds (the strict reading, no stacks needed).
    strict: bool,
    signals: &'static str,
    fit: f32,
}

/// Util low and power near the floor while what runs fills the SMs; `None` when the counters
/// rule starvation out whatever the stacks say (busy GPU, launch-bound kernels, a phase change).
fn starved_counters(c: &Ctx) -> Option<Counters> {
    if c.dev.info.mig.is_some() {
        return starved_counters_on_instance(c);
    }
    let w = c.window_ms;
    // Some work arrives, a little: NVML's averaging smooths a starved loader's bursts into a
    // steady 10-20 % on an H200, and a loader that waits on slow storage shows 0-1 %, with
    // GPM SM activity above zero (0.02 %) in nearly every sample where an idle process shows
    // exactly 0. Both halves must be low, so a phase change (idle, then a saturated job) is
    // not starvation.
    let util_max = c.thresholds.starved.util_max_median_pct + if c.open { 10.0 } else { 0.0 };
    let util = c.stats(w, Metric::Util);
    // A busy GPU, the usual one, is told by this one window: the others are asked only when
    // it is low (each asked is kept up to date, 8 of them a GPU at each judging).
    if util.n == 0 || util.median >= util_max {
        return None;
    }
    let power = c.stats(w, Metric::Power);
    let tdp = c.tdp_w().unwrap_or(0.0);
    let power_ceiling = c.floor_w + tdp * c.thresholds.starved.power_margin_pct_of_tdp / 100.0;
    let sm = c.stats(w, Metric::SmActive);
    // In both halves: a start-up that ends in full load has activity in its newer half only.
    let (u1, u2) = c.halves(w, Metric::Util);
    let (s1, s2) = c.halves(w, Metric::SmActive);
    let kernels_run = u1.nonzero_share.min(u2.nonzero_share) >= STARVED_ACTIVE_SHARE / 2.0
        || (sm.n > 0 && s1.nonzero_share.min(s2.nonzero_share) >= STARVED_ACTIVE_SHARE);
    if !kernels_run
        || util.n == 0
        || power.n == 0
        || [u1.median, u2.median, util.median]
            .iter()
            .any(|m| *m >= util_max)
        || power.median > c.floor_w + tdp * STACKED_POWER_MARGIN_PCT_OF_TDP / 100.0
    {
        return None;
    }
    let mut fit: f32 = 0.5;
    // Where util is low but not negligible, what the kernels do tells starvation (kernels fill
    // the SMs while they run, then the GPU waits) from launch-bound work (tiny kernels: SM far
    // below util, the sync rule's). Below a few % there is nothing to compare.
    let comparable = util.median >= 5.0;
    let signals = if sm.n > 0 {
        if comparable && sm.median < c.thresholds.sync.sm_to_util_max * util.median {
            return None;
        }
        if comparable {
            fit += (sm.median / util.median).min(1.0) * 0.2;
        }
        "low utilization, power against the idle floor, GPM SM activity, host side of the process"
    } else {
        // Without GPM: the GPU must draw above the floor while its kernels run; launch-bound
        // work does not (a utilization-variation test was tried and caught phase changes).
        let margin = tdp * c.thresholds.sync.power_margin_pct_of_tdp / 100.0;
        if comparable && power.median <= c.floor_w + margin {
            return None;
        }
        "low utilization, power against the idle floor, host side of the process (no GPM)"
    };
    Some(Counters {
        util,
        power,
        sm,
        strict: power.median <= power_ceiling,
        signals,
        fit,
    })
}

/// On a MIG instance NVML reports no utilization or power: its own GPM SM activity stands in
/// for both. Low in both halves of the window, above zero in most samples of each (some work
/// arrives), and not held flat above zero (a resident spinning kernel: the hang's).
fn starved_counters_on_instance(c: &Ctx) -> Option<Counters> {
    let w = c.window_ms;
    let sm = c.stats(w, Metric::SmActive);
    let (s1, s2) = c.halves(w, Metric::SmActive);
    let max = c.thresholds.starved.util_max_median_pct + if c.open { 10.0 } else { 0.0 };
    let some_work = sm.n > 0 && s1.nonzero_share.min(s2.nonzero_share) >= STARVED_ACTIVE_SHARE;
    let low = [s1.median, s2.median, sm.median].iter().all(|m| *m < max);
    let resident = sm.p10 >= 0.3 && sm.sd <= (sm.median * 0.25).max(0.5);
    (some_work && low && !resident).then_some(Counters {
        util: sm,
        power: super::Stats::default(),
        sm,
        strict: true,
        signals: "GPM SM activity of the MIG instance (no utilization or power on MIG), host side of the process",
        fit: 0.5,
    })
}

fn check_starved(c: &Ctx) -> Option<Verdict> {
    if c.dev.processes.is_empty() {
        return None;
    }
    let n = starved_counters(c)?;
    if !c.memory_settled(c.window_ms) {
        return None;
    }
    let seen = stacks::of_gpu(c);
    let loading = seen
        .as_ref()
        .is_some_and(|s| s.mostly() == Some(StackClass::DataLoading));
    if !n.strict && !loading {
        return None;
    }
    if seen.as_ref().is_some_and(busy_elsewhere) {
        return None;
    }
    if let Some(v) = seen.as_ref().and_then(|s| not_input(c, &n, s)) {
        return Some(v);
    }
    if !c.wording {
        // Open and worded lately: it still holds, at the rule's severity (below, nothing
        // raises it); its host side and stacks are worded again in a second.
        return Some(Verdict::held(None));
    }
    let host = host_evidence(&c.dev.processes, c.thresholds.starved.host_cpu_min_pct);
    let mut fit = n.fit
        + match host.kind {
            Kind::Computing | Kind::Waiting => 0.3,
            Kind::Unknown => 0.1,
            Kind::Idle => 0.0,
        };
    let mut evidence = counter_evidence(c, &n);
    evidence.extend(host.lines);
    let (title, mut causes) = starved_causes(host.kind, host.workers);
    let mut actions = starved_actions(host.kind);
    let mut signals = n.signals.to_string();
    let read = from_stacks(c, seen.as_ref(), loading);
    evidence.extend(read.lines);
    if let Some((cause, action)) = read.first {
        fit += 0.3;
        signals.push_str(", Python stacks");
        causes.insert(0, cause);
        actions.insert(0, action);
    }
    Some(Verdict {
        evidence,
        causes,
        actions,
        pids: host.pids,
        signals,
        title: Some(title.into()),
        fit: fit.min(1.0),
        summary: starved_summary(c, &n, host.kind, loading),
        ..Verdict::default()
    })
}

/// What the stacks add to a starved reading: lines of evidence, and when they show data
/// loading, the cause and action they name first.
struct FromStacks {
    lines: Vec<String>,
    first: Option<(String, String)>,
}

fn from_stacks(c: &Ctx, seen: Option<&stacks::Seen>, loading: bool) -> FromStacks {
    match seen {
        Some(s) if loading => {
            let mut lines = vec![format!(
                "{}: {}",
                s.line(),
                if s.loads_in_process() {
                    "it makes its own input (the dataset's code, in the training process) while the GPU waits"
                } else {
                    "it waits on its workers for input, not on the GPU"
                }
            )];
            lines.extend(s.workers_line());
            FromStacks {
                lines,
                first: Some(loading_cause(s)),
            }
        }
        // Read, but no frame tells input from requests: said, so the reader knows the stacks
        // were looked at (a `python -c` loop has no source lines to go by).
        Some(s) => FromStacks {
            lines: vec![format!(
                "{}: not in data loading, and nothing there tells waiting for input from waiting for requests",
                s.line()
            )],
            first: None,
        },
        None => FromStacks {
            lines: stacks::unreadable(c)
                .map(|m| format!("Python stacks not read: {m}"))
                .into_iter()
                .collect(),
            first: None,
        },
    }
}

/// Why starved, in one line, for a runner-up's mention.
fn starved_summary(c: &Ctx, n: &Counters, host: Kind, loading: bool) -> String {
    format!(
        "{}, host {}{}",
        if c.dev.info.mig.is_some() {
            format!("SM {:.1} % (MIG, no util)", n.sm.median)
        } else {
            format!("util {:.0} %, SM tracks it", n.util.median)
        },
        host.word(),
        if loading {
            ", stacks in data loading"
        } else {
            ""
        }
    )
}

/// The main thread is busy with the GPU, not waiting for input: launching its work, waiting
/// on it, in a collective or copying to it, and never in data loading. Then the GPU does not
/// wait for input, whatever its counters look like (a launch-bound loop's last seconds read as
/// starved on 1 s ticks).
fn busy_elsewhere(s: &stacks::Seen) -> bool {
    s.share(StackClass::DataLoading) < 0.2
        && matches!(
            s.mostly(),
            Some(
                StackClass::GpuWork
                    | StackClass::HostSync
                    | StackClass::Collective
                    | StackClass::HostCopy
            )
        )
}

/// The counters' lines of evidence.
fn counter_evidence(c: &Ctx, n: &Counters) -> Vec<String> {
    if c.dev.info.mig.is_some() {
        return vec![format!(
            "a MIG instance, without utilization or power in NVML: its SM activity (GPM) median {} % over {} (range {}–{} %), above zero in {} % of the samples: a little work arrives, then it waits",
            fixed(n.sm.median, 1),
            span_words(c.window_ms),
            fixed(n.sm.min, 1),
            fixed(n.sm.max, 1),
            fixed(n.sm.nonzero_share * 100.0, 0)
        )];
    }
    let mut evidence = vec![
        format!(
            "util median {} % over {} (range {}–{} %; some kernel ran in {} % of the samples)",
            fixed(n.util.median, 0),
            span_words(c.window_ms),
            fixed(n.util.min, 0),
            fixed(n.util.max, 0),
            fixed(n.util.nonzero_share * 100.0, 0)
        ),
        c.power_evidence(n.power.median),
    ];
    if n.sm.n > 0 && n.util.median >= 5.0 {
        evidence.push(format!(
            "SM activity {} % (GPM): kernels fill the GPU while they run, then it waits",
            fixed(n.sm.median, 1)
        ));
    } else if n.sm.n > 0 {
        evidence.push(format!(
            "SM activity {} % (GPM), above zero in {} % of samples: a little work arrives, then the GPU waits",
            fixed(n.sm.median, 2),
            fixed(n.sm.nonzero_share * 100.0, 0)
        ));
    }
    evidence
}

/// The stacks say the GPU waits for something other than input (requests, a checkpoint,
/// `torch.compile`): an info-level reading, so that a server idle by demand is never a starved
/// warning. Worded only when asked: it was worded at every judging, and dropped when the
/// stacks said otherwise, a sixth of what judging a starved GPU cost.
fn not_input(c: &Ctx, n: &Counters, s: &stacks::Seen) -> Option<Verdict> {
    let benign = stacks::benign_class(s)?;
    if !c.wording {
        // Held at info: a held reading above the finding's severity would be worded anew.
        return Some(Verdict::held(Some(Severity::Info)));
    }
    Some(stacks::benign(s, benign, counter_evidence(c, n), n.signals))
}

/// What the stacks say the input pipeline spends its time on, and the remedy that names it.
fn loading_cause(s: &stacks::Seen) -> (String, String) {
    if s.loads_in_process() {
        let f = s
            .place()
            .map_or("the dataset's code".into(), stacks::quoted);
        return (
            format!("The dataset's code runs in the training process (DataLoader num_workers=0): every batch is made at {f} while the GPU waits"),
            format!("Move it to worker processes: `DataLoader(ds, num_workers=8, persistent_workers=True, pin_memory=True)`; then speed up {f} itself"),
        );
    }
    let busy = s.busy_workers();
    match busy.first().and_then(|t| t.user_frame()) {
        Some(f) => (
            format!(
                "The DataLoader's {} workers cannot keep up: they spend their time in {} ({}), while the training loop waits on their queue",
                s.burst.children.len(),
                crate::text::code_span(&f.function),
                f.place()
            ),
            format!(
                "More workers (`num_workers` up to the free cores), or a cheaper {} ({}): move decode and augmentation to the GPU (torchvision.transforms.v2 on GPU tensors, NVIDIA DALI)",
                crate::text::code_span(&f.function),
                f.place()
            ),
        ),
        None => (
            "The training loop waits on its DataLoader's workers (their stacks were not read)".into(),
            "More workers (`num_workers` up to the free cores), `prefetch_factor=4`, `persistent_workers=True`; see what they do: `gpuwatch stacks PID`".into(),
        ),
    }
}

/// The causes, most likely first, from what the host does: each variant its own, and none that
/// the evidence beside it rules out (no `num_workers=0` for a process that has workers).
fn starved_causes(kind: Kind, workers: usize) -> (&'static str, Vec<String>) {
    let few_workers = if workers == 0 {
        "Batches are made in the training process (DataLoader num_workers=0)".to_string()
    } else {
        format!("Too few loader workers for the work per batch ({workers} now)")
    };
    match kind {
        Kind::Waiting => (
            "GPU starved: the input waits on I/O",
            vec![
                "The training process sleeps or waits on I/O between batches: slow storage, a network filesystem or object store, or too few loader workers to hide the latency".to_string(),
                "Small random reads (many little files, a dataset without sharding)".into(),
                "The loader workers themselves wait (remote reads, a lock, a queue)".into(),
            ],
        ),
        Kind::Computing => (
            "GPU starved: the host prepares the input",
            vec![
                format!("The host is busy making batches (decode, augmentation, tokenisation) faster than it can: {}", few_workers.to_lowercase()),
                "Pageable host-to-device copies that serialise with compute (pin_memory=False)".into(),
                "Python-side work in the step itself (logging, metrics, `.cpu()` conversions)".into(),
            ],
        ),
        Kind::Idle | Kind::Unknown => (
            "GPU starved: waiting for input",
            vec![
                format!("The input pipeline cannot keep up: {}", few_workers.to_lowercase()),
                "Slow reads from storage or network (the process waits on I/O)".into(),
                "Pageable host-to-device copies that serialise with compute (pin_memory=False)".into(),
            ],
        ),
    }
}

fn starved_actions(kind: Kind) -> Vec<String> {
    let mut actions = vec![
        "`DataLoader(ds, num_workers=8, pin_memory=True, prefetch_factor=4, persistent_workers=True)`".to_string(),
        "Copy without blocking: `x.to(device, non_blocking=True)` from pinned memory".into(),
    ];
    if kind == Kind::Waiting {
        actions.extend([
            "Find the slow reads: `iotop -o`, `iostat -x 1`, `gpuwatch stacks PID` (where it sleeps)".to_string(),
            "Pack the data into large sequential shards (WebDataset, LMDB) and cache them on local NVMe".into(),
        ]);
    } else {
        actions.extend([
            "Move decode and augmentation to the GPU (NVIDIA DALI, torchvision.transforms.v2 on GPU tensors)".to_string(),
            "See what the host does: `gpuwatch stacks PID`, or `py-spy top --pid PID`; for I/O, `iostat -x 1`".into(),
        ]);
    }
    actions
}
