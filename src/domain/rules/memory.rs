//! Memory nearly full, or growing steadily (a leak, or a cache that never stops).

use super::thresholds::{dur, Section};
use super::{ms, Ctx, Metric, OnMig, Rule, RuleId, Severity, Verdict, Watching};
use crate::model::demo::{Demo, Frame, Level, Workload, BUSY};
use crate::model::stack::StackClass;
use crate::model::GIB;
use crate::text::span_words;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// When memory is called full, or leaking.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct MemoryThresholds {
    #[serde(rename = "mem_full_window", with = "dur")]
    pub full_window: Duration,
    #[serde(rename = "mem_full_pct")]
    pub full_pct: f32,
    #[serde(rename = "mem_growth_window", with = "dur")]
    pub growth_window: Duration,
    /// Growth over the window, as a share of total memory, that counts as a leak.
    #[serde(rename = "mem_growth_min_pct")]
    pub growth_min_pct: f32,
    /// A fast leak is judged by its rate over this shorter window…
    #[serde(rename = "mem_growth_fast_window", with = "dur")]
    pub growth_fast_window: Duration,
    /// …when memory grew at least this fast (MiB/s)…
    #[serde(rename = "mem_growth_min_mib_s")]
    pub growth_min_mib_s: f32,
    /// …and by at least this much (GiB) within it.
    #[serde(rename = "mem_growth_fast_min_gib")]
    pub growth_fast_min_gib: f32,
}

impl Default for MemoryThresholds {
    fn default() -> Self {
        MemoryThresholds {
            full_window: Duration::from_secs(15),
            full_pct: 95.0,
            growth_window: Duration::from_secs(120),
            growth_min_pct: 5.0,
            growth_fast_window: Duration::from_secs(10),
            growth_min_mib_s: 200.0,
            growth_fast_min_gib: 2.0,
        }
    }
}

impl Section for MemoryThresholds {}

pub const FULL: Rule = Rule {
    id: RuleId::MemFull,
    mig: OnMig::Instance,
    title: "GPU memory nearly full",
    severity: Severity::Warning,
    window: |t| t.memory.full_window,
    check: check_full,
    cause: false,
    after_startup: false,
    busy_but_idle: false,
    watch: Watching::No,
    demo: Some(Demo {
        name: "mem-full",
        about: "training sized to the limit: 137.5 of 140.4 GiB in use (98 %), steady",
        level: |_, _| Level {
            mem_gib: 137.5,
            ..BUSY
        },
        power_limit_w: None,
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
    }),
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

pub const GROWTH: Rule = Rule {
    id: RuleId::MemGrowth,
    mig: OnMig::Instance,
    title: "GPU memory growing steadily",
    severity: Severity::Warning,
    window: |t| t.memory.growth_fast_window,
    check: check_growth,
    cause: false,
    after_startup: true,
    busy_but_idle: false,
    watch: Watching::With {
        building: growth_building,
        needs: |t| t.memory.growth_window,
    },
    demo: Some(Demo {
        name: "leak",
        about:
            "training whose GPU memory grows 0.1 GiB/s: slow enough that it takes the long window",
        // From 20 GiB, until it is nearly full.
        level: |t_s, _| Level {
            mem_gib: (20.0 + t_s * 0.1).min(138.0),
            ..BUSY
        },
        power_limit_w: None,
        workload: None,
        trouble: None,
    }),
};

fn gib(b: f32) -> f32 {
    b / GIB as f32
}

const ALLOC_ADVICE: &str = "Reduce fragmentation: `PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True` (or `max_split_size_mb:128`); inspect with `torch.cuda.memory_summary()`";

fn check_full(c: &Ctx) -> Option<Verdict> {
    let w = c.window_ms;
    let total = c.dev.info.memory_total_bytes? as f32;
    if total <= 0.0 {
        return None;
    }
    let used = c.stats(w, Metric::MemUsedBytes);
    if used.n == 0 || used.min < total * c.thresholds.memory.full_pct / 100.0 {
        return None;
    }
    Some(Verdict {
        evidence: vec![format!("{:.1} of {:.1} GiB used ({:.0} %) for {}", gib(used.median), gib(total), used.median / total * 100.0, span_words(w))],
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

/// Least-squares slope of memory over time, bytes per second, with the fit's R².
fn trend(c: &Ctx, w: u64) -> Option<(f32, f32)> {
    // Memory that did not change over the window has no trend (every value the same, or
    // none): said without two passes over it, for each GPU at every evaluation.
    let first = c.dev.samples.last(w).next()?;
    if c.dev.mem_changed_ms <= first.t_ms {
        return None;
    }
    // Two passes over the window instead of a collected Vec: no allocation per evaluation.
    let pts = || {
        c.dev
            .samples
            .last(w)
            .filter_map(|s| Some((s.t_ms as f64 / 1000.0, s.mem_used_bytes? as f64)))
    };
    let (n, sx, sy) = pts().fold((0usize, 0.0, 0.0), |(n, sx, sy), (x, y)| {
        (n + 1, sx + x, sy + y)
    });
    if n < 8 {
        return None;
    }
    let (mx, my) = (sx / n as f64, sy / n as f64);
    let (sxy, sxx, syy) = pts().fold((0.0, 0.0, 0.0), |(a, b, c), (x, y)| {
        (
            a + (x - mx) * (y - my),
            b + (x - mx).powi(2),
            c + (y - my).powi(2),
        )
    });
    if sxx <= 0.0 || syy <= 0.0 {
        return None;
    }
    Some(((sxy / sxx) as f32, (sxy * sxy / (sxx * syy)) as f32))
}

/// Growth over `w`: (bytes grown, slope in bytes/s, R²) when it is steady and large enough.
fn growth(c: &Ctx, w: u64, min_bytes: f32, min_rate: f32) -> Option<(f32, f32, f32)> {
    // A process's first seconds build its model and warm the allocator up: the window starts
    // after them (on an H200 a VGG-like job grew 0.5 -> 2.5 GiB in its first 10 s, live).
    if !c.covers(w + ms(c.thresholds.engine.startup_grace)) {
        return None;
    }
    let (slope, r2) = trend(c, w)?;
    let grown = slope * w as f32 / 1000.0;
    // Once open, a leak that slows down is still a leak: hold it at half the rate.
    let relax = if c.open { 0.5 } else { 1.0 };
    let steady = grown >= min_bytes * relax && slope >= min_rate * relax && r2 >= 0.8;
    // A leak grows all along; one allocation (a model loaded, the allocator's first large
    // blocks) is a single step, which a regression over a short window can mistake for one.
    (steady && grows_in_every_third(c, w, grown)).then_some((grown, slope, r2))
}

/// True when memory grew in each third of the window, each time by at least a sixth of the
/// whole growth: a leak grows all along, the allocator's warm-up grows in a step or two.
fn grows_in_every_third(c: &Ctx, w: u64, grown: f32) -> bool {
    let rise = |from: u64, to: u64| {
        let mut it = c
            .dev
            .samples
            .window(from, to)
            .filter_map(|s| s.mem_used_bytes);
        let first = it.next();
        let last = it.next_back().or(first);
        first.zip(last).map_or(0.0, |(a, b)| b as f32 - a as f32)
    };
    let start = c.now_ms.saturating_sub(w);
    (0..3).all(|i| rise(start + w * i / 3, start + w * (i + 1) / 3) >= grown / 6.0)
}

/// Memory rising steadily over what has been seen so far (at least 10 s, 256 MiB, R² 0.8),
/// before the rule's window has run: the screen says it is being timed.
fn growth_building(c: &Ctx) -> bool {
    let w = c.window_ms;
    let growing = |(slope, r2): (f32, f32)| {
        slope > 0.0 && r2 >= 0.8 && slope * w as f32 / 1000.0 >= 256.0 * 1024.0 * 1024.0
    };
    // Still growing now, over the newest quarter at half the rate or more: a job that laid out
    // its memory in its first seconds and then held it (allocator warm-up) is not watched as a
    // leak; on the corpus's healthy jobs it was, for 5-30 s each.
    let recent = (w / 4).max(4_000);
    w >= 10_000
        && trend(c, w)
            .is_some_and(|t| growing(t) && trend(c, recent).is_some_and(|(s, _)| s >= t.0 / 2.0))
}

fn check_growth(c: &Ctx) -> Option<Verdict> {
    let total = c.dev.info.memory_total_bytes? as f32;
    let fast = ms(c.thresholds.memory.growth_fast_window);
    let slow = ms(c.thresholds.memory.growth_window);
    // A fast leak by its rate within seconds; a slow one by its share of memory over minutes.
    let (w, (grown, slope, r2)) = growth(
        c,
        fast,
        c.thresholds.memory.growth_fast_min_gib * GIB as f32,
        c.thresholds.memory.growth_min_mib_s * 1024.0 * 1024.0,
    )
    .map(|g| (fast, g))
    .or_else(|| {
        growth(
            c,
            slow,
            total * c.thresholds.memory.growth_min_pct / 100.0,
            0.0,
        )
        .map(|g| (slow, g))
    })?;
    let used = c.dev.samples.latest()?.mem_used_bytes? as f32;
    let to_full = (total - used).max(0.0) / slope;
    Some(Verdict {
        evidence: vec![
            format!("memory grew {:.1} GiB in {} ({:.2} GiB/s, steady: R² {r2:.2})", gib(grown), span_words(w), slope / GIB as f32),
            format!("{:.1} of {:.1} GiB used; full in about {} at this rate", gib(used), gib(total), span_words((to_full * 1000.0) as u64)),
        ],
        causes: vec![
            "Tensors kept alive across steps: losses appended without `.item()`/`.detach()`, growing caches, graphs retained".into(),
            "Variable input shapes feeding the caching allocator new block sizes (fragmentation)".into(),
        ],
        actions: vec![
            "Store `loss.detach()` or `loss.item()`, not `loss`; check lists and dicts that grow every step".into(),
            "Record allocations: `torch.cuda.memory._record_memory_history()` then `_dump_snapshot()`".into(),
            ALLOC_ADVICE.into(),
        ],
        pids: c.dev.processes.iter().map(|p| p.pid).collect(),
        signals: "trend of memory used (rate over seconds, share over minutes)".into(),
        ..Verdict::default()
    })
}
