//! Sync / launch-bound: utilization medium or fluctuating while the SMs are nearly idle and
//! power sits at the floor. Each kernel is too small to fill the GPU and the host waits on it
//! (`.item()`, `.cpu()`, `torch.cuda.synchronize()`), so GPU-Util counts time but no work is
//! done. Fires wrongly on: a legitimately small model served with batch size 1 (still
//! launch-bound, still worth knowing).

use super::thresholds::{dur, Section};
use super::{stacks, Ctx, Metric, OnMig, Rule, RuleId, Severity, Verdict, Watching};
use crate::model::demo::{Demo, Level, Workload, FLOOR, STOCK};
use crate::model::stack::StackClass;
use crate::text::fixed;
use crate::text::span_words;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// When a GPU is called launch-bound.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SyncThresholds {
    /// Launch-bound work is judged over this window.
    #[serde(rename = "sync_window", with = "dur")]
    pub window: Duration,
    /// GPM SM activity below this share of utilization means kernels too small to fill the GPU.
    #[serde(rename = "sync_sm_to_util_max")]
    pub sm_to_util_max: f32,
    /// Without GPM, launch-bound work keeps power within this share of TDP of the floor, while
    /// starved work draws more in its bursts.
    #[serde(rename = "sync_power_margin_pct_of_tdp")]
    pub power_margin_pct_of_tdp: f32,
}

impl Default for SyncThresholds {
    fn default() -> Self {
        SyncThresholds {
            window: Duration::from_secs(10),
            sm_to_util_max: 0.25,
            power_margin_pct_of_tdp: 3.0,
        }
    }
}

impl Section for SyncThresholds {}

pub const SYNC: Rule = Rule {
    id: RuleId::Sync,
    glance: None,
    mig: OnMig::Neither,
    title: "Launch-bound: tiny kernels and host syncs",
    severity: Severity::Warning,
    window: |t| t.sync.window,
    check,
    cause: true,
    after_startup: true,
    busy_but_idle: true,
    watch: Watching::Check,
    demo: Demo {
        name: "sync",
        about: "tiny kernels and a host sync each step: util 24 %, power at the floor",
        level: |_, _| Level {
            util: 24.0,
            power: 122.0,
            sm: 0.2,
            pcie_rx_kib: 200_000.0,
            mem_gib: 10.0,
            ..FLOOR
        },
        facts: STOCK,
        workload: Some(Workload {
            cmdline: "python3 train.py --batch 8 --log-every-step",
            cpu_pct: 100.0,
            gpu_mem_gib: 10,
            workers: 2,
            ranks: 1,
            one_job: false,
            sleeping: false,
            // The main thread in `.item()` in 7 samples of 10.
            stack: (
                StackClass::HostSync,
                7,
                &[
                    (
                        "train",
                        "/home/alice/train.py",
                        97,
                        "running_loss += loss.item()",
                    ),
                    ("<module>", "/home/alice/train.py", 140, "train()"),
                ],
            ),
        }),
        trouble: None,
    },
};

#[allow(clippy::too_many_lines)] // the verdict is assembled in one pass over the figures it just read; its parts are already functions
fn check(c: &Ctx) -> Option<Verdict> {
    let w = c.window_ms;
    if c.dev.processes.is_empty() {
        return None;
    }
    let util = c.stats(w, Metric::Util);
    let power = c.stats(w, Metric::Power);
    let util_max = if c.open { 95.0 } else { 90.0 };
    // Util and power rule out most GPUs; memory is asked only of those left.
    if util.n == 0
        || util.median < 5.0
        || util.median > util_max
        || power.n == 0
        || power.median > c.near_floor_w()
        || !c.memory_settled(w)
    {
        return None;
    }
    let (u1, u2) = c.halves(w, Metric::Util);
    if [u1, u2]
        .iter()
        .any(|h| h.n == 0 || h.median < 5.0 || h.median > util_max)
    {
        return None;
    }
    let sm = c.stats(w, Metric::SmActive);
    let mut fit: f32 = 0.6;
    // Worded only when asked (`Ctx::wording`): an open finding worded lately only holds.
    let mut evidence = Vec::new();
    let mut say = |line: &dyn Fn() -> String| {
        if c.wording {
            evidence.push(line());
        }
    };
    say(&|| {
        format!(
            "util median {} % over {} (range {}–{} %)",
            fixed(util.median, 0),
            span_words(w),
            fixed(util.min, 0),
            fixed(util.max, 0)
        )
    });
    say(&|| c.power_evidence(power.median));
    let signals = if sm.n > 0 {
        if sm.median > 5.0 || sm.median > c.thresholds.sync.sm_to_util_max * util.median {
            return None;
        }
        say(&|| {
            format!("SM activity {} % (GPM) while util says {} %: kernels far too small to fill the GPU", fixed(sm.median, 1), fixed(util.median, 0))
        });
        fit += 0.2 * (1.0 - sm.median / (c.thresholds.sync.sm_to_util_max * util.median).max(0.1));
        "utilization against GPM SM activity, power against the idle floor"
    } else {
        // Without GPM: steady medium util with power flat at the floor (starvation is burstier
        // and draws more while its kernels run).
        let margin = c.tdp_w().unwrap_or(0.0) * c.thresholds.sync.power_margin_pct_of_tdp / 100.0;
        if util.variation() >= 0.5 || power.median > c.floor_w + margin {
            return None;
        }
        say(&|| {
            format!(
                "steady util (variation {}) at floor power; no GPM, so SM activity is unknown",
                fixed(util.variation(), 2)
            )
        });
        "utilization steadiness, power against the idle floor (no GPM)"
    };
    let rx = c.stats(w, Metric::PcieRx);
    let tx = c.stats(w, Metric::PcieTx);
    if rx.n > 0 {
        say(&|| {
            format!(
                "PCIe rx {} MiB/s, tx {} MiB/s for little work",
                fixed(rx.median / 1024.0, 1),
                fixed(tx.median / 1024.0, 1)
            )
        });
        // GiB/s coming in now: the steps wait on copies, not on syncs (the transfer rule's,
        // which sees it a second or two later: GPM's PCIe rate needs two slow readings).
        let (_, rx_now) = c.halves(w, Metric::PcieRx);
        if rx_now.median >= c.thresholds.transfer.rx_min_gib_s * 1024.0 * 1024.0 {
            return None;
        }
    }
    // The launching thread is busy on a CPU: Python and launch overhead set the pace.
    let busy = c
        .dev
        .processes
        .iter()
        .filter_map(|p| p.host.as_ref())
        .find(|h| {
            h.cpu_pct.unwrap_or(0.0) >= c.thresholds.starved.host_cpu_min_pct
                && h.state != Some('D')
        });
    if let Some(h) = busy {
        say(&|| {
            format!(
                "the process ({}) runs at {} % CPU: it launches and waits, step after step",
                h.name,
                fixed(h.cpu_pct.unwrap_or(0.0), 0)
            )
        });
        fit += 0.2;
    }
    let seen = stacks::of_gpu(c);
    let benign = seen.as_ref().and_then(stacks::benign_class);
    if !c.wording {
        // Held at the severity of this reading: a benign one (its stacks) held at the rule's
        // warning would read as raised, and be worded anew at every judging.
        return Some(Verdict::held(benign.map(|_| Severity::Info)));
    }
    Some(with_stacks(
        c,
        (seen, benign),
        evidence,
        signals,
        (fit, util.median),
    ))
}

/// The verdict, with what the main thread's stacks say (a benign reading at info level, the
/// host sync or the launching that sets the pace, named by its line).
fn with_stacks(
    c: &Ctx,
    (seen, benign): (Option<stacks::Seen>, Option<stacks::Benign>),
    mut evidence: Vec<String>,
    signals: &str,
    (mut fit, util): (f32, f32),
) -> Verdict {
    if let (Some(s), Some(b)) = (seen.as_ref(), benign) {
        return stacks::benign(s, b, evidence, signals);
    }
    let mut causes = causes();
    let mut actions = actions();
    let mut signals = signals.to_string();
    match seen.as_ref() {
        Some(s) => {
            signals.push_str(", Python stacks");
            let (why, cause, action) = where_the_host_is(s);
            evidence.push(if why.is_empty() {
                s.line()
            } else {
                format!("{}: {why}", s.line())
            });
            if let Some((cause, action)) = cause.zip(action) {
                fit += 0.1;
                // The generic cause of the same kind goes: the named one replaces it.
                causes.remove(usize::from(s.main.class != StackClass::HostSync));
                causes.insert(0, cause);
                actions.insert(0, action);
            }
        }
        None => {
            evidence.extend(stacks::unreadable(c).map(|m| format!("Python stacks not read: {m}")));
        }
    }
    Verdict {
        evidence,
        causes,
        actions,
        pids: c.dev.processes.iter().map(|p| p.pid).collect(),
        signals,
        fit: fit.clamp(0.0, 1.0),
        summary: format!("util {util_0} %, SM far below it", util_0 = fixed(util, 0)),
        ..Verdict::default()
    }
}

/// What the main thread's stacks say of a launch-bound GPU: the host sync that stalls each step
/// (its line named), or the Python and launches that set the pace.
fn where_the_host_is(s: &stacks::Seen) -> (&'static str, Option<String>, Option<String>) {
    let place = s.place().map(stacks::quoted);
    let sync = s.share(StackClass::HostSync);
    match (s.main.class, place) {
        (StackClass::HostSync, Some(p)) => (
            "the host waits on the GPU there, step after step",
            Some(format!("A host sync in the loop: {p} waits for the GPU every time it runs")),
            Some(format!("Take the sync out of the loop at {p}: keep the value on the GPU and read it every N steps, or use `non_blocking=True` copies into pinned memory")),
        ),
        (StackClass::GpuWork | StackClass::PythonBusy, Some(p)) if sync < 0.2 => (
            "the host is busy launching small kernels: Python and launch overhead set the pace",
            Some(format!("Launch-bound: the host spends the step launching at {p}; each kernel is too small to fill the GPU")),
            Some("Fewer, larger kernels: a bigger batch, `torch.compile(model, mode=\"reduce-overhead\")` (CUDA graphs) to launch a step at once".to_string()),
        ),
        _ => ("", None, None),
    }
}

fn causes() -> Vec<String> {
    vec![
        "A host sync every step: `.item()`, `.cpu()`, `print(tensor)`, `torch.cuda.synchronize()` in the loop".into(),
        "Launch-bound: Python and launch overhead dominate tiny kernels (small batch, many small ops)".into(),
    ]
}

fn actions() -> Vec<String> {
    vec![
        "Find the syncs: `torch.cuda.set_sync_debug_mode(\"warn\")`; log losses every N steps, kept on the GPU".into(),
        "Fuse and capture: `torch.compile(model, mode=\"reduce-overhead\")` or CUDA graphs (`torch.cuda.graphs`)".into(),
        "Raise the batch size; use AMP (`torch.autocast`, with `torch.amp.GradScaler` for fp16) and TF32 (`torch.set_float32_matmul_precision(\"high\")`)".into(),
        "Convolutions with fixed input shapes: `torch.backends.cudnn.benchmark = True` picks the fastest kernels once".into(),
        "Profile one step: `torch.profiler` or `nsys profile -t cuda,nvtx python train.py`".into(),
    ]
}
