//! GPU memory nearly full: the job is sized to the limit, or the caching allocator holds what
//! it freed, and the next larger step fails with out-of-memory.

use super::thresholds::{dur, Section};
use super::{Ctx, Metric, OnMig, Rule, RuleId, Severity, Verdict, Watching};
use crate::model::demo::{Demo, Frame, Level, Workload, BUSY, STOCK};
use crate::model::stack::StackClass;
use crate::model::GIB;
use crate::text::fixed;
use crate::text::span_words;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// When memory is called full.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct MemFullThresholds {
    #[serde(rename = "mem_full_window", with = "dur")]
    pub window: Duration,
    #[serde(rename = "mem_full_pct")]
    pub pct: f32,
}

impl Default for MemFullThresholds {
    fn default() -> Self {
        MemFullThresholds {
            window: Duration::from_secs(15),
            pct: 95.0,
        }
    }
}

impl Section for MemFullThresholds {}

pub const MEM_FULL: Rule = Rule {
    id: RuleId::MemFull,
    glance: None,
    mig: OnMig::Instance,
    title: "GPU memory nearly full",
    severity: Severity::Warning,
    window: |t| t.mem_full.window,
    check: check_full,
    cause: false,
    after_startup: false,
    busy_but_idle: false,
    watch: Watching::No,
    demo: Demo {
        name: "mem-full",
        about: "training sized to the limit: 137.5 of 140.4 GiB in use (98 %), steady",
        level: |_, _| Level {
            mem_gib: 137.5,
            ..BUSY
        },
        facts: STOCK,
        // One process holds nearly all of it (the context and other processes the rest).
        workload: Some(Workload {
            cmdline: "python3 train.py --model llama-8b --batch 48 --seq 8192",
            cpu_pct: 105.0,
            gpu_mem_gib: 136,
            workers: 8,
            ranks: 1,
            one_job: false,
            sleeping: false,
            stack: (StackClass::GpuWork, 8, &FULL_STACK),
        }),
        trouble: None,
    },
};

/// A training step's backward pass, as its stack reads.
const FULL_STACK: [Frame; 2] = [
    (
        "Tensor.backward",
        "torch/_tensor.py",
        631,
        "torch.autograd.backward(",
    ),
    ("train", "/home/alice/train.py", 118, "loss.backward()"),
];

/// Bytes in GiB, for the evidence.
pub(super) fn gib(b: f32) -> f32 {
    b / GIB as f32
}

/// What fragmentation needs, whether memory is full or growing.
pub(super) const ALLOC_ADVICE: &str = "Reduce fragmentation: `PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True` (or `max_split_size_mb:128`); inspect with `torch.cuda.memory_summary()`";

fn check_full(c: &Ctx) -> Option<Verdict> {
    let w = c.window_ms;
    let total = c.dev.info.memory_total_bytes? as f32;
    if total <= 0.0 {
        return None;
    }
    let used = c.stats(w, Metric::MemUsedBytes);
    if used.n == 0 || used.min < total * c.thresholds.mem_full.pct / 100.0 {
        return None;
    }
    if !c.wording {
        return Some(Verdict::held(None));
    }
    Some(Verdict {
        evidence: vec![format!("{} of {} GiB used ({} %) for {}", fixed(gib(used.median), 1), fixed(gib(total), 1), fixed(used.median / total * 100.0, 0), span_words(w))],
        causes: vec![
            "The job is sized to the limit (batch, sequence length, activations); the next larger step will fail with out-of-memory".into(),
            "The caching allocator holds freed blocks; fragmentation leaves no large free block".into(),
        ],
        actions: vec![
            ALLOC_ADVICE.into(),
            "Lower the batch size, enable activation checkpointing, or use bf16 (`torch.autocast`)".into(),
        ],
        pids: c.dev.processes.iter().map(|p| p.pid).collect(),
        signals: "memory used against total".into(),
        ..Verdict::default()
    })
}
