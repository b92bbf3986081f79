//! GPU memory growing steadily: a leak (tensors kept alive across steps) or a cache that never
//! stops, judged by its rate over seconds or its share of memory over minutes.

use super::mem_full::{gib, ALLOC_ADVICE};
use super::thresholds::{dur, Section};
use super::{ms, Ctx, OnMig, Rule, RuleId, Severity, Verdict, Watching};
use crate::model::demo::{Demo, Level, BUSY, STOCK};
use crate::model::GIB;
use crate::text::fixed;
use crate::text::span_words;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// When memory is called leaking.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct MemGrowthThresholds {
    #[serde(rename = "mem_growth_window", with = "dur")]
    pub window: Duration,
    /// Growth over the window, as a share of total memory, that counts as a leak.
    #[serde(rename = "mem_growth_min_pct")]
    pub min_pct: f32,
    /// A fast leak is judged by its rate over this shorter window…
    #[serde(rename = "mem_growth_fast_window", with = "dur")]
    pub fast_window: Duration,
    /// …when memory grew at least this fast (MiB/s)…
    #[serde(rename = "mem_growth_min_mib_s")]
    pub min_mib_s: f32,
    /// …and by at least this much (GiB) within it.
    #[serde(rename = "mem_growth_fast_min_gib")]
    pub fast_min_gib: f32,
}

impl Default for MemGrowthThresholds {
    fn default() -> Self {
        MemGrowthThresholds {
            window: Duration::from_secs(120),
            min_pct: 5.0,
            fast_window: Duration::from_secs(10),
            min_mib_s: 200.0,
            fast_min_gib: 2.0,
        }
    }
}

impl Section for MemGrowthThresholds {
    /// The fast window is the short one: longer than the long window, a fast leak would be
    /// judged over more than the slow one, and called later.
    fn check(&self) -> Result<(), super::thresholds::Refusal> {
        let default = Self::default();
        super::thresholds::WindowOrder {
            short: (
                "mem_growth_fast_window",
                self.fast_window,
                default.fast_window,
            ),
            long: ("mem_growth_window", self.window, default.window),
        }
        .check(false)
    }
}

pub const MEM_GROWTH: Rule = Rule {
    id: RuleId::MemGrowth,
    glance: None,
    mig: OnMig::Instance,
    title: "GPU memory growing steadily",
    severity: Severity::Warning,
    window: |t| t.mem_growth.fast_window,
    check: check_growth,
    cause: false,
    after_startup: true,
    busy_but_idle: false,
    watch: Watching::With {
        building: growth_building,
        needs: |t| t.mem_growth.window,
    },
    demo: Demo {
        name: "leak",
        about:
            "training whose GPU memory grows 0.1 GiB/s: slow enough that it takes the long window",
        // From 20 GiB, until it is nearly full.
        level: |t_s, _| Level {
            mem_gib: (20.0 + t_s * 0.1).min(138.0),
            ..BUSY
        },
        facts: STOCK,
        workload: None,
        trouble: None,
    },
};

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
    let fast = ms(c.thresholds.mem_growth.fast_window);
    let slow = ms(c.thresholds.mem_growth.window);
    // A fast leak by its rate within seconds; a slow one by its share of memory over minutes.
    let (w, (grown, slope, r2)) = growth(
        c,
        fast,
        c.thresholds.mem_growth.fast_min_gib * GIB as f32,
        c.thresholds.mem_growth.min_mib_s * 1024.0 * 1024.0,
    )
    .map(|g| (fast, g))
    .or_else(|| {
        growth(
            c,
            slow,
            total * c.thresholds.mem_growth.min_pct / 100.0,
            0.0,
        )
        .map(|g| (slow, g))
    })?;
    let used = c.dev.samples.latest()?.mem_used_bytes? as f32;
    if !c.wording {
        return Some(Verdict::held(None));
    }
    let to_full = (total - used).max(0.0) / slope;
    Some(Verdict {
        evidence: vec![
            format!("memory grew {} GiB in {} ({} GiB/s, steady: R² {r2_2})", fixed(gib(grown), 1), span_words(w), fixed(slope / GIB as f32, 2), r2_2 = fixed(r2, 2)),
            format!("{} of {} GiB used; full in about {} at this rate", fixed(gib(used), 1), fixed(gib(total), 1), span_words((to_full * 1000.0) as u64)),
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
