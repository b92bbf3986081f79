//! Input copies: the host-to-device link is busy (GiB/s of `PCIe` receive) while the SMs do
//! little. Copies from pageable memory go through a staging buffer and block the copying
//! thread, so the GPU waits for its input to arrive rather than for it to be prepared.
//! Fires wrongly on: a job that streams data on purpose with little compute per byte (a
//! checkpoint load, a data-movement benchmark), which is still "the GPU waits on the link".

use super::thresholds::{dur, Section};
use super::{Ctx, Metric, OnMig, Rule, RuleId, Severity, Stats, Verdict, Watching};
use crate::model::demo::{Demo, Frame, Level, Workload, FLOOR, STOCK};
use crate::model::stack::StackClass;
use crate::model::GIB;
use crate::text::fixed;
use crate::text::span_words;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// When a GPU is called bound by its input copies.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TransferThresholds {
    /// Copy-bound work is judged over this window.
    #[serde(rename = "transfer_window", with = "dur")]
    pub window: Duration,
    /// Host-to-device traffic at or above this (GiB/s) with little SM work is input copying.
    #[serde(rename = "transfer_rx_min_gib_s")]
    pub rx_min_gib_s: f32,
    /// GPM SM activity below this while copying means the copies, not kernels, set the pace.
    #[serde(rename = "transfer_sm_max_pct")]
    pub sm_max_pct: f32,
}

impl Default for TransferThresholds {
    fn default() -> Self {
        TransferThresholds {
            window: Duration::from_secs(10),
            rx_min_gib_s: 1.0,
            sm_max_pct: 20.0,
        }
    }
}

impl Section for TransferThresholds {}

pub const TRANSFER: Rule = Rule {
    id: RuleId::Transfer,
    glance: None,
    mig: OnMig::Neither,
    title: "GPU waits on host-to-device copies",
    severity: Severity::Warning,
    window: |t| t.transfer.window,
    check,
    cause: true,
    after_startup: true,
    busy_but_idle: false,
    watch: Watching::Check,
    demo: Demo {
        name: "transfer",
        about: "training whose batches are copied from pageable memory: 8.5 GiB/s in over PCIe, util 18 %, the SMs idle, power at the floor",
        level: demo_level,
        facts: STOCK,
        workload: Some(Workload {
            cmdline: "python3 train.py --batch 256 --pin-memory 0",
            cpu_pct: 45.0,
            gpu_mem_gib: 12,
            workers: 4,
            ranks: 1,
            one_job: false,
            sleeping: false,
            stack: (StackClass::HostCopy, 8, &DEMO_STACK),
        }),
        trouble: None,
    },
};

/// An H200 copying 1 GiB of pageable input a step (docs/diagnoses.md: 8–9 GiB/s of `PCIe`
/// receive, util 16–20 %, SM 0.2 %, power at the floor).
fn demo_level(_t_s: f32, _burst: f32) -> Level {
    Level {
        util: 18.0,
        mem_util: 3.0,
        power: 140.0,
        sm: 0.2,
        occ: 0.1,
        tensor: 0.0,
        dram: 2.0,
        pcie_rx_kib: 8.5 * KIB_PER_GIB,
        temp: 36.0,
        mem_gib: 12.0,
        ..FLOOR
    }
}

/// Its main thread in the copy of a batch to the GPU, in 8 samples of 10.
const DEMO_STACK: [Frame; 2] = [
    (
        "train_step",
        "/home/alice/train.py",
        47,
        "x, y = x.to(dev), y.to(dev)",
    ),
    (
        "<module>",
        "/home/alice/train.py",
        88,
        "train_step(model, batch)",
    ),
];

const KIB_PER_GIB: f32 = (GIB / 1024) as f32;

fn check(c: &Ctx) -> Option<Verdict> {
    let w = c.window_ms;
    if c.dev.processes.is_empty() {
        return None;
    }
    let relax = if c.open { 0.7 } else { 1.0 };
    let min_kib = c.thresholds.transfer.rx_min_gib_s * KIB_PER_GIB * relax;
    // The receive rate's halves rule out most GPUs; the rest is asked only of those left.
    let (r1, r2) = c.halves(w, Metric::PcieRx);
    if r1.median < min_kib || r2.median < min_kib {
        return None;
    }
    let rx = c.stats(w, Metric::PcieRx);
    if rx.n == 0 || !c.memory_settled(w) {
        return None;
    }
    let util = c.stats(w, Metric::Util);
    let power = c.stats(w, Metric::Power);
    let sm = c.stats(w, Metric::SmActive);
    // With GPM, SM activity says the kernels wait; without it utilization is kernel time, so
    // copies leave it low.
    let gpm = sm.n > 0;
    if gpm && sm.median > c.thresholds.transfer.sm_max_pct
        || !gpm && (util.n == 0 || util.median >= c.thresholds.starved.util_max_median_pct)
    {
        return None;
    }
    if !c.wording {
        return Some(Verdict::held(None));
    }
    let (signals, work) = work(gpm, sm.median, util.median);
    let evidence = evidence(c, rx.median, work, power);
    Some(Verdict {
        evidence,
        causes: vec![
            "Batches copied from pageable host memory: each `.to(device)` / `.cuda()` stages through a bounce buffer and blocks the step".into(),
            "Data created on the host every step that could be made (or kept) on the GPU".into(),
        ],
        actions: vec![
            "`DataLoader(..., pin_memory=True)` and `x.to(device, non_blocking=True)`, so copies overlap compute".into(),
            "Keep reused tensors on the GPU; generate random or synthetic inputs there (`torch.randn(..., device=\"cuda\")`)".into(),
            "Send less: uint8 or bf16 instead of fp32 over the link, decode on the GPU (NVIDIA DALI, nvJPEG)".into(),
        ],
        pids: c.dev.processes.iter().map(|p| p.pid).collect(),
        signals: signals.into(),
        // More GiB/s, more certainly the copies: 0.9 at the threshold, 1.0 from 4× it.
        fit: 0.9 + 0.1 * (rx.median / (4.0 * min_kib / relax)).min(1.0),
        summary: format!("{} GiB/s of host-to-device copies", fixed(rx.median / KIB_PER_GIB, 1)),
        ..Verdict::default()
    })
}

/// What the kernels do meanwhile, as GPM's SM activity or (without GPM) utilization says, and
/// the signals that said it.
fn work(gpm: bool, sm_pct: f32, util_pct: f32) -> (&'static str, String) {
    if gpm {
        (
            "PCIe receive rate, GPM SM activity",
            format!(
                "SM activity {sm_pct_1} % (GPM): the kernels wait for the copies",
                sm_pct_1 = fixed(sm_pct, 1)
            ),
        )
    } else {
        (
            "PCIe receive rate, utilization (no GPM)",
            format!(
                "util {util_pct_0} %: little kernel time between the copies",
                util_pct_0 = fixed(util_pct, 0)
            ),
        )
    }
}

/// The copies' rate, what the kernels do meanwhile, the power and the link.
fn evidence(c: &Ctx, rx_kib_s: f32, work: String, power: Stats) -> Vec<String> {
    let mut evidence = vec![
        format!(
            "host-to-device {} GiB/s over {} (PCIe receive, median)",
            fixed(rx_kib_s / KIB_PER_GIB, 1),
            span_words(c.window_ms)
        ),
        work,
    ];
    if power.n > 0 {
        evidence.push(c.power_evidence(power.median));
    }
    if let (Some(gen), Some(width)) = c
        .dev
        .samples
        .latest()
        .map(|s| (s.pcie_gen, s.pcie_width))
        .unwrap_or_default()
    {
        evidence.push(format!("link Gen{gen} x{width}"));
    }
    evidence
}
