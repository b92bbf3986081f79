//! Sync / launch-bound: utilization medium or fluctuating while the SMs are nearly idle and
//! power sits at the floor. Each kernel is too small to fill the GPU and the host waits on it
//! (`.item()`, `.cpu()`, `torch.cuda.synchronize()`), so GPU-Util counts time but no work is
//! done. Fires wrongly on: a legitimately small model served with batch size 1 (still
//! launch-bound, still worth knowing).

use super::{Ctx, Rule, Severity, Verdict};
use crate::text::span_words;

pub const SYNC: Rule = Rule {
    id: "sync",
    title: "Launch-bound: tiny kernels and host syncs",
    severity: Severity::Warning,
    window: |t| t.sync_window,
    check,
    cause: true,
    after_startup: true,
    busy_but_idle: true,
};

fn check(c: &Ctx) -> Option<Verdict> {
    let w = c.window_ms;
    if c.dev.processes.is_empty() || !c.memory_settled(w) {
        return None;
    }
    let util = c.stats(w, |s| s.util_gpu_pct);
    let power = c.stats(w, |s| s.power_w);
    let util_max = if c.open { 95.0 } else { 90.0 };
    if util.n == 0
        || util.median < 5.0
        || util.median > util_max
        || power.n == 0
        || power.median > c.near_floor_w()
    {
        return None;
    }
    let (u1, u2) = c.halves(w, |s| s.util_gpu_pct);
    if [u1, u2]
        .iter()
        .any(|h| h.n == 0 || h.median < 5.0 || h.median > util_max)
    {
        return None;
    }
    let sm = c.stats(w, |s| s.gpm.sm_active_pct);
    let mut fit: f32 = 0.6;
    let mut evidence = vec![
        format!(
            "util median {:.0} % over {} (range {:.0}–{:.0} %)",
            util.median,
            span_words(w),
            util.min,
            util.max
        ),
        c.power_evidence(power.median),
    ];
    let signals = if sm.n > 0 {
        if sm.median > 5.0 || sm.median > c.thresholds.sync_sm_to_util_max * util.median {
            return None;
        }
        evidence.push(format!("SM activity {:.1} % (GPM) while util says {:.0} %: kernels far too small to fill the GPU", sm.median, util.median));
        fit += 0.2 * (1.0 - sm.median / (c.thresholds.sync_sm_to_util_max * util.median).max(0.1));
        "utilization against GPM SM activity, power against the idle floor"
    } else {
        // Without GPM: steady medium util with power flat at the floor (starvation is burstier
        // and draws more while its kernels run).
        let margin = c.tdp_w().unwrap_or(0.0) * c.thresholds.sync_power_margin_pct_of_tdp / 100.0;
        if util.variation() >= 0.5 || power.median > c.floor_w + margin {
            return None;
        }
        evidence.push(format!(
            "steady util (variation {:.2}) at floor power; no GPM, so SM activity is unknown",
            util.variation()
        ));
        "utilization steadiness, power against the idle floor (no GPM)"
    };
    let rx = c.stats(w, |s| s.pcie_rx_kib_s);
    let tx = c.stats(w, |s| s.pcie_tx_kib_s);
    if rx.n > 0 {
        evidence.push(format!(
            "PCIe rx {:.1} MiB/s, tx {:.1} MiB/s for little work",
            rx.median / 1024.0,
            tx.median / 1024.0
        ));
        // GiB/s coming in now: the steps wait on copies, not on syncs (the transfer rule's,
        // which sees it a second or two later: GPM's PCIe rate needs two slow readings).
        let (_, rx_now) = c.halves(w, |s| s.pcie_rx_kib_s);
        if rx_now.median >= c.thresholds.transfer_rx_min_gib_s * 1024.0 * 1024.0 {
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
            h.cpu_pct.unwrap_or(0.0) >= c.thresholds.starved_host_cpu_min_pct
                && h.state != Some('D')
        });
    if let Some(h) = busy {
        evidence.push(format!(
            "the process ({}) runs at {:.0} % CPU: it launches and waits, step after step",
            h.name,
            h.cpu_pct.unwrap_or(0.0)
        ));
        fit += 0.2;
    }
    Some(Verdict {
        evidence,
        causes: causes(),
        actions: actions(),
        pids: c.dev.processes.iter().map(|p| p.pid).collect(),
        signals: signals.into(),
        fit: fit.clamp(0.0, 1.0),
        summary: format!("util {:.0} %, SM far below it", util.median),
        ..Verdict::default()
    })
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
        "Raise the batch size; use AMP (`torch.autocast`) and TF32 (`torch.backends.cuda.matmul.allow_tf32 = True`)".into(),
        "Convolutions with fixed input shapes: `torch.backends.cudnn.benchmark = True` picks the fastest kernels once".into(),
        "Profile one step: `torch.profiler` or `nsys profile -t cuda,nvtx python train.py`".into(),
    ]
}
