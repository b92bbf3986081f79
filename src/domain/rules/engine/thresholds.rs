//! The engine's own thresholds: the idle floor, start-up, what counts as busy, and how long a
//! finding outlives its symptom.

use super::super::thresholds::{dur, Refusal, Section, MAX_WINDOW};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// What the engine judges every rule by: the idle floor, start-up, what counts as busy,
/// and how long a finding outlives its symptom.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct EngineThresholds {
    /// Assumed idle-with-context power as a share of TDP until the GPU shows its own floor.
    pub floor_fallback_pct_of_tdp: f32,
    /// What a resident CUDA context adds to the bare idle floor, as a share of TDP (H200: 79 →
    /// 121 W); used until the GPU has been seen idle with a context.
    pub context_floor_extra_pct_of_tdp: f32,
    /// "Near the floor" means within this share of TDP above it…
    pub floor_margin_pct_of_tdp: f32,
    /// …or within this many watts, whichever is larger.
    pub floor_margin_min_w: f32,
    /// A process's first seconds on a GPU (import, model load, autotune, compile) are its
    /// start-up: the "busy but idle" causes and memory growth judge only what comes after.
    #[serde(with = "dur")]
    pub startup_grace: Duration,
    /// Work counts as "busy" above this utilization (the power-cap, thermal and `PCIe` rules, the
    /// exporter's state).
    pub busy_util_min_pct: f32,
    /// A finding clears only after its condition has been false this long (hysteresis).
    #[serde(with = "dur")]
    pub clear_after: Duration,
}

impl Default for EngineThresholds {
    fn default() -> Self {
        EngineThresholds {
            floor_fallback_pct_of_tdp: 17.0,
            context_floor_extra_pct_of_tdp: 6.0,
            floor_margin_pct_of_tdp: 8.0,
            floor_margin_min_w: 25.0,
            startup_grace: Duration::from_secs(5),
            busy_util_min_pct: 50.0,
            clear_after: Duration::from_secs(10),
        }
    }
}

impl Section for EngineThresholds {
    fn check(&self) -> Result<(), Refusal> {
        // Not windows by name, and as bounded as one: a grace or a hold longer than the
        // history would never end.
        let over = [
            ("startup_grace", self.startup_grace),
            ("clear_after", self.clear_after),
        ]
        .into_iter()
        .find(|(_, d)| *d > MAX_WINDOW);
        over.map_or(Ok(()), |(key, d)| {
            let d = humantime::format_duration(d);
            Err(Refusal::new(key, format!(" = {d} must be at most 1h")))
        })
    }
}
