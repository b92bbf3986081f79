//! Hang: util pinned near 100 % while power sits at the idle floor and (with GPM) the SMs do
//! almost nothing. One spinning kernel reads 100 % util; so does a collective (NCCL) waiting on
//! a peer that never arrives, which keeps a few more warps busy, hence a SM ceiling well above
//! 1 %. Suspected (warning) after `hang_suspect_window`, confirmed (critical) after
//! `hang_window`, or at once when a rank of the same job left its GPU. Fires wrongly on: a long,
//! genuinely tiny kernel that is meant to spin (rare), and on GPUs without GPM whose power
//! floor was not learned. The rank the others wait for — one that exited, or one whose GPU
//! idles — is named as the culprit and kept after the job ends.

mod culprit;
mod demo;

use super::thresholds::{dur, Section};
use super::{ms, Ctx, Metric, OnMig, Rule, RuleId, Severity, Stats, Verdict, Watching};
use crate::text::fixed;
use crate::text::span_words;
use culprit::{lost_rank, outside_the_collective, ranks_with_stacks, straggler, where_ranks_are};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// When a GPU that looks busy is called hung.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct HangThresholds {
    /// A hang is suspected (warning) once its symptoms held this long…
    #[serde(rename = "hang_suspect_window", with = "dur")]
    pub suspect_window: Duration,
    /// …and confirmed (critical) once they held this long, or at once when the job lost a rank.
    #[serde(rename = "hang_window", with = "dur")]
    pub window: Duration,
    /// Utilization at or above this for the whole window counts as pinned.
    #[serde(rename = "hang_util_min_pct")]
    pub util_min_pct: f32,
    /// GPM SM activity below this is not real work (NVIDIA: < 50 % is ineffective use; a hung
    /// collective spins on a few SMs, so this is set well above one kernel's ~1 %).
    #[serde(rename = "hang_sm_max_pct")]
    pub sm_max_pct: f32,
}

impl Default for HangThresholds {
    fn default() -> Self {
        HangThresholds {
            suspect_window: Duration::from_secs(8),
            window: Duration::from_secs(25),
            util_min_pct: 95.0,
            sm_max_pct: 25.0,
        }
    }
}

impl Section for HangThresholds {
    /// The confirmed window holds the suspicion's: shorter, a hang would be confirmed
    /// before it was suspected.
    fn check(&self) -> Result<(), super::thresholds::Refusal> {
        let default = Self::default();
        super::thresholds::WindowOrder {
            short: (
                "hang_suspect_window",
                self.suspect_window,
                default.suspect_window,
            ),
            long: ("hang_window", self.window, default.window),
        }
        .check(true)
    }
}

pub const HANG: Rule = Rule {
    id: RuleId::Hang,
    glance: Some(still_spinning),
    mig: OnMig::Instance,
    title: "Busy but idle: GPU looks hung",
    severity: Severity::Warning,
    window: |t| t.hang.suspect_window,
    check,
    cause: true,
    after_startup: true,
    busy_but_idle: true,
    watch: Watching::Check,
    demo: demo::DEMO,
};

/// How far before the stall a rank's exit still counts as its cause.
const DEPARTURE_LOOKBACK_MS: u64 = 60_000;

/// SM, tensor and DRAM activity over a window (GPM).
type Gpm = (Stats, Stats, Stats);

/// Least SM activity of a kernel resident on a MIG instance (one block of a spin holds 1 of a
/// 1g profile's 16 SMs: 6 %; of a 7g's 132: 0.8 %); an idle instance reads 0.
const MIG_SPIN_SM_MIN_PCT: f32 = 0.3;
/// Real work moves tensor cores or memory; a spin on a flag does neither.
const MIG_SPIN_WORK_MAX_PCT: f32 = 1.0;

/// The symptoms over the last `span_ms`: util pinned, power at the floor, no SM work.
fn spinning(c: &Ctx, span_ms: u64) -> Option<(Stats, Stats, Option<Gpm>)> {
    if c.dev.info.mig.is_some() {
        return spinning_on_instance(c, span_ms)
            .map(|g| (Stats::default(), Stats::default(), Some(g)));
    }
    let util = c.stats(span_ms, Metric::Util);
    let power = c.stats(span_ms, Metric::Power);
    // Once open, a little slack so one lower sample does not close it (hysteresis).
    let util_min = c.thresholds.hang.util_min_pct - if c.open { 10.0 } else { 0.0 };
    // Percentiles, not extremes: one odd sample must not open or close a hang.
    if util.n == 0 || util.p10 < util_min || power.n == 0 || power.p90 > c.near_floor_w() {
        return None;
    }
    // The window's percentiles outlive the present: a job that exited leaves util at 0 while
    // 90 % of the window still reads 100. The newest two samples both unpinned end it (one
    // odd sample does not), so the row says "ended" within a tick instead of "‼ HANG" at 0 %.
    let newest_unpinned = c
        .dev
        .samples
        .iter()
        .rev()
        .take(2)
        .filter(|s| s.util_gpu_pct.is_some_and(|u| u < util_min))
        .count();
    if newest_unpinned == 2 {
        return None;
    }
    let sm = c.stats(span_ms, Metric::SmActive);
    if sm.n == 0 {
        // Without GPM, a power trace flat at the floor is what tells a spin from real work.
        return (power.sd <= 3.0).then_some((util, power, None));
    }
    let tensor = c.stats(span_ms, Metric::TensorActive);
    let dram = c.stats(span_ms, Metric::DramBw);
    if sm.median > c.thresholds.hang.sm_max_pct || tensor.median > 10.0 || dram.median > 10.0 {
        return None;
    }
    Some((util, power, Some((sm, tensor, dram))))
}

/// On a MIG instance NVML reports neither utilization nor power: what is left of a hang's
/// signature is a kernel resident on the same few SMs in every sample (SM activity above zero
/// and flat) with no tensor or DRAM work. An instance idle between requests reads 0 and a
/// working one moves memory.
fn spinning_on_instance(c: &Ctx, span_ms: u64) -> Option<Gpm> {
    let sm = c.stats(span_ms, Metric::SmActive);
    let tensor = c.stats(span_ms, Metric::TensorActive);
    let dram = c.stats(span_ms, Metric::DramBw);
    let floor = MIG_SPIN_SM_MIN_PCT * if c.open { 0.5 } else { 1.0 };
    let flat = sm.sd <= (sm.median * 0.25).max(0.5);
    let ended = c
        .dev
        .samples
        .iter()
        .rev()
        .take(2)
        .filter(|s| s.gpm.sm_active_pct.is_some_and(|v| v < floor))
        .count()
        == 2;
    let resident = sm.n > 0 && sm.p10 >= floor && sm.median <= c.thresholds.hang.sm_max_pct;
    let idle_work = tensor.median <= MIG_SPIN_WORK_MAX_PCT && dram.median <= MIG_SPIN_WORK_MAX_PCT;
    (resident && flat && idle_work && !ended).then_some((sm, tensor, dram))
}

/// Every sample after `since_ms` still shows an open hang: util pinned (with the open
/// finding's slack), power at the floor, no GPM work. Such samples cannot end it: its window's
/// percentiles and medians only move towards a hang while they arrive (without GPM its
/// power's spread may still grow: the full judging, at the quiet cadence, says so), and the
/// GPU waits for that judging. One that does not, and it is judged at once: the newest two
/// unpinned end it (`spinning`), in the tick that shows it. On a MIG instance (no util or
/// power) a hang is judged at every turn.
fn still_spinning(c: &Ctx, since_ms: u64) -> bool {
    if c.dev.info.mig.is_some() {
        return false;
    }
    let util_min = c.thresholds.hang.util_min_pct - 10.0;
    let (near_floor_w, sm_max) = (c.near_floor_w(), c.thresholds.hang.sm_max_pct);
    let idle = |v: Option<f32>, max: f32| v.is_none_or(|v| v <= max);
    c.dev
        .samples
        .iter()
        .rev()
        .take_while(|s| s.t_ms > since_ms)
        .all(|s| {
            s.util_gpu_pct.is_some_and(|u| u >= util_min)
                && s.power_w.is_some_and(|w| w <= near_floor_w)
                && idle(s.gpm.sm_active_pct, sm_max)
                && idle(s.gpm.tensor_active_pct, 10.0)
                && idle(s.gpm.dram_bw_pct, 10.0)
        })
}

fn check(c: &Ctx) -> Option<Verdict> {
    // No process listed is no alibi: inside a container NVML may list none, and a snapshot
    // replayed after the job ended has only its last (empty) process list.
    let w = c.window_ms;
    let (util, power, gpm) = spinning(c, w)?;
    let confirm = ms(c.thresholds.hang.window);
    let confirmed = c.covers(confirm) && spinning(c, confirm).is_some();
    let lost = lost_rank(c);
    if !c.wording {
        // Open and worded lately: whether it still holds, and whether it is critical (the
        // same test as below: confirmed, or a rank exited), is all that is decided now.
        let critical = confirmed || lost.is_some();
        return Some(Verdict::held(critical.then_some(Severity::Critical)));
    }
    let held = if confirmed { confirm } else { w };
    let mut v = Verdict {
        // Where the ranks are, when their stacks were read, is the better evidence: kept over
        // a later reading without it (their processes gone at the end of the job).
        fit: 0.9,
        summary: format!("util {} % at idle power", fixed(util.median, 0)),
        ..Verdict::default()
    };
    counter_evidence(c, (util, power, gpm), (confirmed, held), &mut v);
    v.pids = c.dev.processes.iter().map(|p| p.pid).collect();
    let ranks = ranks_with_stacks(c);
    if let Some(line) = where_ranks_are(&ranks) {
        v.evidence.push(line);
        v.signals.push_str(", Python stacks of the ranks");
        // Read as their processes leave (/proc gone: ranks unknown), they say less.
        let known = ranks.iter().all(|r| r.process.host.is_some());
        v.fit = if known { 1.0 } else { 0.93 };
    } else if let Some(m) = super::stacks::unreadable(c) {
        v.evidence.push(format!("Python stacks not read: {m}"));
    }
    v.culprit = lost
        .or_else(|| outside_the_collective(c, &ranks))
        .or_else(|| straggler(c, w));
    say_culprit(&mut v);
    let is_critical = confirmed || v.culprit.as_ref().is_some_and(|k| k.reason == "exited");
    if is_critical {
        v.severity = Some(Severity::Critical);
        v.title = Some("Busy but idle: GPU hung".into());
    } else {
        v.title = Some("Busy but idle: hang suspected".into());
        v.evidence.push(format!(
            "suspected: confirmed once it lasts {} or a rank of the job is gone",
            span_words(confirm)
        ));
    }
    after_xid(c, &mut v);
    v.causes.extend([
        "A collective (NCCL all-reduce, all-gather, barrier) waiting on a peer: a crashed, stuck or slower rank, or ranks calling collectives in a different order".into(),
        "A deadlock in the job (a rank stuck in data loading, checkpointing or an exception handler)".into(),
        "A kernel spinning on a flag that is never set".into(),
    ]);
    v.actions = vec![
        "See where every rank is stuck: `gpuwatch stacks` (every GPU process's Python threads), or `py-spy dump --pid PID`; native frames: `gdb -p PID -batch -ex 'thread apply all bt'`".into(),
        "Make hangs fail loudly: `TORCH_NCCL_ASYNC_ERROR_HANDLING=1` and `init_process_group(..., timeout=timedelta(minutes=5))`".into(),
        "Record the collectives: `NCCL_DEBUG=INFO TORCH_NCCL_TRACE_BUFFER_SIZE=2000 TORCH_NCCL_DUMP_ON_TIMEOUT=1`".into(),
        "Look at the process tree: `ps -o pid,stat,pcpu,cmd --ppid PPID` (in the monitor: Enter on its process row)".into(),
        "If collectives are slow rather than stuck (it clears by itself): fewer, larger all-reduces overlapped with backward, `DDP(model, bucket_cap_mb=100, gradient_as_bucket_view=True)` (small batches: `bucket_cap_mb=25`, or `dist.all_reduce(t, async_op=True)` and `.wait()` later)".into(),
    ];
    Some(v)
}

/// The culprit, when one was named: its line of evidence, its process, and why it is the cause.
fn say_culprit(v: &mut Verdict) {
    if let Some(cul) = &v.culprit {
        v.evidence.push(cul.text.clone());
        v.pids.push(cul.pid);
        v.causes.push(match cul.reason.as_str() {
            "exited" => "A rank of this job exited (crashed or was killed): the others wait for it in a collective that can never complete".into(),
            "stacks" => match cul.rank {
                Some(r) => format!("Rank {r} (pid {}) never reached the collective the others wait in: where it is instead is said above", cul.pid),
                None => format!("pid {} never reached the collective the others wait in: where it is instead is said above", cul.pid),
            },
            _ => "A rank of this job never reached the collective: the GPU named above is the likely straggler".into(),
        });
    }
}

/// What the counters show, and which decided: util and power against the floor with GPM where
/// read; on a MIG instance, which has neither util nor power, its GPM activity alone.
fn counter_evidence(
    c: &Ctx,
    (util, power, gpm): (Stats, Stats, Option<Gpm>),
    (confirmed, held): (bool, u64),
    v: &mut Verdict,
) {
    if let (Some(m), Some((sm, tensor, dram))) = (&c.dev.info.mig, gpm) {
        v.evidence = vec![
            format!(
                "a MIG instance: NVML reports no utilization or power for it (power and temperature are GPU {}'s); judged by its own GPM activity over {}",
                m.parent,
                span_words(held)
            ),
            format!(
                "SM activity held at {} % (never below {} %, sd {}): a kernel resident on the same SMs; tensor {} %, DRAM {} % (GPM): it does no work",
                fixed(sm.median, 1), fixed(sm.p10, 1), fixed(sm.sd, 2), fixed(tensor.median, 1), fixed(dram.median, 1)
            ),
        ];
        v.signals =
            "GPM SM/tensor/DRAM activity of the MIG instance (no utilization or power on MIG)"
                .into();
        v.summary = format!(
            "SM {} % held, no tensor or DRAM work (MIG)",
            fixed(sm.median, 1)
        );
        return;
    }
    v.evidence = vec![
        util_held(util, confirmed, held),
        c.power_evidence(power.median),
    ];
    if let Some((sm, tensor, dram)) = gpm {
        v.evidence.push(format!(
            "SM activity {} %, tensor {} %, DRAM {} % (GPM)",
            fixed(sm.median, 1),
            fixed(tensor.median, 1),
            fixed(dram.median, 1)
        ));
        v.signals = "utilization, power against the idle floor, GPM SM/tensor/DRAM activity".into();
    } else {
        v.evidence.push(format!(
            "power flat (sd {} W); no GPM on this GPU, so SM activity is unknown",
            fixed(power.sd, 1)
        ));
        v.signals = "utilization and power against the idle floor (no GPM)".into();
    }
}

/// A hang after an Xid on this GPU is most likely that Xid's: the GPU stopped, not a peer.
fn after_xid(c: &Ctx, v: &mut Verdict) {
    if let Some((code, line)) = super::health::preceding_xid(c, c.now_ms, None) {
        v.evidence.push(line);
        v.causes.push(match code {
            Some(code) => format!(
                "{}: the GPU reported it before it stopped making progress",
                crate::xid::name(code)
            ),
            None => "An Xid error the GPU reported before it stopped making progress".into(),
        });
    }
}

/// "util 100 % throughout the last 25 s", or "util ≥ 97 % over the last …" when it was not
/// pinned: the bound floored, since one rounded up ("≥ 100 %" from 99.6) is false for the
/// row's 99 %. The span is the window judged, not the hang's age, which the finding's title
/// says ("GPU hung · 49s"): "for 25 s" beside "· 49s" read as a contradiction.
fn util_held(util: Stats, confirmed: bool, held: u64) -> String {
    let span = if confirmed {
        format!("the last {}", span_words(held))
    } else {
        format!("the {} seen so far", span_words(held))
    };
    let bound = util.p10.floor();
    if bound >= 100.0 {
        format!("util 100 % throughout {span}")
    } else {
        format!(
            "util ≥ {bound_0} % over {span} (median {} %)",
            fixed(util.median, 0),
            bound_0 = fixed(bound, 0)
        )
    }
}
