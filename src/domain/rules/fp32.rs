//! FP32 math on CUDA cores: the GPU is busy, and its FP32 pipes do the work while the tensor
//! cores stay idle. `PyTorch` runs FP32 matrix products without TF32 unless told otherwise, so
//! a model trained in FP32 without mixed precision computes its products at a fraction of the
//! speed the GPU has for them (on the H200, an 8192² FP32 product drew 674 W against 693 W for
//! its TF32 twin, and did 50 TFLOP/s against 344: docs/diagnoses.md).
//! Needs GPM (Hopper and newer): utilization and power read the same in both cases.
//! Fires wrongly on: work that is FP32 by nature and has no matrix products to move (FFTs,
//! stencils, reductions, custom kernels), where tensor cores cannot help. It is info for that
//! reason: a hint about speed, never an alarm.

use super::thresholds::{dur, Section};
use super::{Ctx, Metric, OnMig, Rule, RuleId, Severity, Verdict, Watching};
use crate::model::demo::{Demo, Level, BUSY, STOCK};
use crate::text::fixed;
use crate::text::span_words;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// When FP32 math on CUDA cores is named.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Fp32Thresholds {
    /// FP32 math on CUDA cores is judged over this window (GPM)…
    #[serde(rename = "fp32_window", with = "dur")]
    pub window: Duration,
    /// …when the FP32 pipes are active at least this much (median of each half)…
    #[serde(rename = "fp32_pipe_min_pct")]
    pub pipe_min_pct: f32,
    /// …and the tensor pipes at most this much.
    #[serde(rename = "fp32_tensor_max_pct")]
    pub tensor_max_pct: f32,
}

impl Default for Fp32Thresholds {
    fn default() -> Self {
        Fp32Thresholds {
            window: Duration::from_secs(20),
            pipe_min_pct: 25.0,
            tensor_max_pct: 10.0,
        }
    }
}

impl Section for Fp32Thresholds {}

pub const FP32: Rule = Rule {
    id: RuleId::Fp32,
    // GPM activity is per MIG instance, as the rule needs it.
    glance: None,
    mig: OnMig::Instance,
    title: "FP32 math on CUDA cores, tensor cores idle",
    severity: Severity::Info,
    window: |t| t.fp32.window,
    check,
    cause: false,
    after_startup: true,
    busy_but_idle: false,
    watch: Watching::No,
    demo: Demo {
        name: "fp32",
        about:
            "training in FP32 without TF32: busy, the FP32 pipes doing what the tensor cores could",
        level: demo_level,
        facts: STOCK,
        workload: None,
        trouble: None,
    },
};

/// An MLP trained in FP32 with `PyTorch`'s defaults, as read on an H200: 648 W,
/// SM 95 %, FP32 pipes 68 %, tensor 0 %.
fn demo_level(_t_s: f32, _burst: f32) -> Level {
    Level {
        util: 100.0,
        mem_util: 14.0,
        power: 648.0,
        sm_clock: 1980.0,
        sm: 94.5,
        occ: 16.0,
        tensor: 0.0,
        dram: 10.0,
        pcie_rx_kib: 18_000.0,
        temp: 58.0,
        events: 0,
        fp32: Some(68.0),
        ..BUSY
    }
}

fn check(c: &Ctx) -> Option<Verdict> {
    let w = c.window_ms;
    let t = c.thresholds;
    // Hysteresis: an open finding holds until the FP32 pipes fall well below where it opened.
    let relax = if c.open { 0.7 } else { 1.0 };
    let min = t.fp32.pipe_min_pct * relax;
    if !c.open && quiet_now(c, min) {
        return None;
    }
    let (first, second) = c.halves(w, Metric::Fp32Active);
    if first.n == 0 || second.n == 0 || first.median < min || second.median < min {
        return None;
    }
    let tensor = c.stats(w, Metric::TensorActive);
    if tensor.n == 0 || tensor.median > t.fp32.tensor_max_pct {
        return None;
    }
    if !c.wording {
        // Still holds; its words are not due (a long FP32 job would word them every judging).
        return Some(Verdict::held(None));
    }
    let fp32 = c.stats(w, Metric::Fp32Active);
    let evidence = evidence(c, fp32.median, tensor.median);
    Some(Verdict {
        evidence,
        causes: vec![
            "Matrix products in FP32 with TF32 off: PyTorch's default for matmul and linear layers (`torch.backends.cuda.matmul.allow_tf32` is False)".into(),
            "A model trained or served without mixed precision (no autocast, weights in FP32)".into(),
            "Work that is FP32 by nature (FFTs, stencils, reductions, custom kernels): tensor cores cannot help it".into(),
        ],
        actions: vec![
            "`torch.set_float32_matmul_precision(\"high\")` at start-up: FP32 products run as TF32 on the tensor cores".into(),
            "Mixed precision: the forward pass and loss under `torch.autocast(\"cuda\", dtype=torch.bfloat16)`".into(),
            "JAX: `jax.config.update(\"jax_default_matmul_precision\", \"tensorfloat32\")`; TensorFlow: `tf.config.experimental.enable_tensor_float_32_execution(True)`".into(),
            "Compare the step time before and after; keep FP32 where the loss diverges in lower precision".into(),
        ],
        pids: c.dev.processes.iter().map(|p| p.pid).collect(),
        signals: "GPM FP32 and tensor pipe activity, SM activity".into(),
        summary: format!(
            "FP32 pipes {} %, tensor {} %",
            fixed(fp32.median, 0), fixed(tensor.median, 0)
        ),
        ..Verdict::default()
    })
}

/// The FP32 pipes are under `min` in the latest sample (or not read). Most GPUs, most of the
/// time: asking no window then keeps the rule's cost off healthy GPUs (the windows catch up
/// when next asked); it was 4 % of the sampling thread's instructions at 8 GPUs and 100 ms
/// (callgrind). An open finding is judged over its window whatever the latest sample says.
fn quiet_now(c: &Ctx, min: f32) -> bool {
    let now = c
        .dev
        .samples
        .latest()
        .and_then(|s| Metric::Fp32Active.read(s));
    now.is_none_or(|v| v < min)
}

/// What the pipes did over the window, how busy the SMs were, the power.
fn evidence(c: &Ctx, fp32: f32, tensor: f32) -> Vec<String> {
    let w = c.window_ms;
    let sm = c.stats(w, Metric::SmActive);
    let mut evidence = vec![
        format!(
            "FP32 pipes active {fp32_0} %, tensor pipes {tensor_1} % (GPM, medians over {})",
            span_words(w),
            fp32_0 = fixed(fp32, 0),
            tensor_1 = fixed(tensor, 1),
        ),
        format!(
            "SM activity {} %: the GPU is busy, at the speed of its CUDA cores",
            fixed(sm.median, 0)
        ),
    ];
    let power = c.stats(w, Metric::Power);
    if power.n > 0 {
        evidence.push(c.power_evidence(power.median));
    }
    evidence
}
