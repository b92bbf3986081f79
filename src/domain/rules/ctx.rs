//! What a rule reads: one device's history, the box's, the thresholds and the learned floor,
//! with window statistics computed once per evaluation.

use super::Thresholds;
use super::{Floor, Metric, Stats};
use crate::history::{DeviceHistory, History};
use crate::text::fixed;
use std::fmt::Write as _;

/// Everything a rule may read about one device.
pub struct Ctx<'a> {
    pub dev: &'a DeviceHistory,
    pub all: &'a History,
    pub thresholds: &'a Thresholds,
    /// This GPU's idle floor in watts (learned, or the documented fallback).
    pub floor_w: f32,
    pub floor: Floor,
    pub now_ms: u64,
    /// Samples before this (ms) are not judged by rules that wait out start-up: the newest
    /// process on the GPU was still starting.
    pub judged_from_ms: u64,
    /// True when this rule's finding is open on this device: a rule may hold it with looser
    /// thresholds than it opened with (hysteresis), so a finding does not flap.
    pub open: bool,
    /// The rule's window, ms: the history covers it whenever the rule is asked.
    pub window_ms: u64,
    /// False when the rule's finding is open and was worded more lately than its age asks
    /// (`engine::reword_every`), or when only whether its symptom holds is asked (timing one
    /// that builds): the rule may then only say whether it holds, and how severe
    /// (`Verdict::held`), and leave its evidence as it was worded. Wording a hang's evidence
    /// (where every rank is, who they wait for, figures formatted anew) at every judging was
    /// a third of what judging 64 GPUs cost.
    pub wording: bool,
    /// This GPU's windows as kept between evaluations, with their statistics: several rules
    /// read the same metric over the same span (util over 10 s by four of them), and
    /// computing a window's statistics was most of what judging cost.
    pub(super) windows: std::cell::RefCell<super::window::Windows>,
}

impl Ctx<'_> {
    #[must_use]
    pub fn tdp_w(&self) -> Option<f32> {
        self.dev.info.tdp_w()
    }
    /// The power below which a GPU counts as "near its idle floor".
    #[must_use]
    pub fn near_floor_w(&self) -> f32 {
        let margin = self.tdp_w().map_or(0.0, |tdp| {
            tdp * self.thresholds.engine.floor_margin_pct_of_tdp / 100.0
        });
        self.floor_w + margin.max(self.thresholds.engine.floor_margin_min_w)
    }
    /// True when GPU memory held steady over the last `span_ms` (within 512 MiB or 2 %): a
    /// process still laying out its memory — loading a model, cuDNN autotune trying
    /// workspaces, the allocator warming up — is starting, whatever its util looks like. A
    /// steady training loop reuses its cached blocks. Unknown memory counts as steady.
    #[must_use]
    pub fn memory_settled(&self, span_ms: u64) -> bool {
        let used = self.stats(span_ms, Metric::MemUsedBytes);
        used.n == 0 || used.max - used.min <= (512.0 * 1024.0 * 1024.0f32).max(used.max * 0.02)
    }

    /// True when the history reaches back at least `span_ms` from now, past start-up.
    #[must_use]
    pub fn covers(&self, span_ms: u64) -> bool {
        self.dev
            .samples
            .iter()
            .next()
            .is_some_and(|s| s.t_ms.max(self.judged_from_ms) + span_ms <= self.now_ms)
    }
    /// Statistics of `metric` over the last `span_ms`, computed once per evaluation.
    pub fn stats(&self, span_ms: u64, metric: Metric) -> Stats {
        let to = self.dev.samples.latest().map_or(0, |s| s.t_ms);
        self.window_stats(span_ms, 0, metric, (to.saturating_sub(span_ms), to))
    }
    /// Share of the samples over the last `span_ms` where `metric` (a clock event's, 0 or 1)
    /// is 1; `None` where none was read.
    pub fn share(&self, span_ms: u64, metric: Metric) -> Option<f32> {
        let s = self.stats(span_ms, metric);
        (s.n > 0).then_some(s.mean)
    }
    /// Stats of the older and the newer half of the window. A symptom must show in both, so a
    /// window that straddles two different workloads does not pass for a third.
    pub fn halves(&self, span_ms: u64, metric: Metric) -> (Stats, Stats) {
        let half = span_ms / 2;
        let older = (
            self.now_ms.saturating_sub(span_ms),
            self.now_ms.saturating_sub(half),
        );
        let older = self.window_stats(span_ms, 1, metric, older);
        (older, self.stats(half, metric))
    }
    /// The statistics of `metric` over the samples with `from_ms <= t_ms <= to_ms`, from the
    /// window kept since the last evaluation (`Windows`).
    fn window_stats(&self, span_ms: u64, part: u8, metric: Metric, bounds: (u64, u64)) -> Stats {
        let key = (span_ms, part, metric);
        self.windows
            .borrow_mut()
            .stats(self.dev, key, metric, bounds)
    }
    /// "power 121 W = 17 % of the 700 W TDP, +2 W from this GPU's idle floor (…)", written
    /// in one string: the rules word it once a second per open finding.
    #[must_use]
    pub fn power_evidence(&self, w: f32) -> String {
        let mut out = String::with_capacity(160);
        // Rounded first, so a reading a fraction below the floor does not print "-0 W".
        let above = (w - self.floor_w).round() + 0.0;
        let _ = write!(out, "power {} W", fixed(w, 0));
        if let Some(tdp) = self.tdp_w().filter(|tdp| *tdp > 0.0) {
            let pct = fixed(w / tdp * 100.0, 0);
            let _ = write!(out, " = {pct} % of the {} W TDP", fixed(tdp, 0));
        }
        let _ = write!(out, ", {:+} W from ", fixed(above, 0));
        self.write_floor(&mut out);
        out
    }

    /// Which idle floor `floor_w` is, and how it was found.
    fn write_floor(&self, out: &mut String) {
        let floor = fixed(self.floor_w, 0);
        let e = &self.thresholds.engine;
        let _ = if self.floor.context.is_some() {
            write!(out, "this GPU's idle floor with a CUDA context ({floor} W)")
        } else if let Some(bare) = self.floor.bare {
            write!(
                out,
                "this GPU's idle floor with a context, estimated ({floor} W: {} W seen with no process, plus {} % of TDP for a context)",
                fixed(bare, 0),
                fixed(e.context_floor_extra_pct_of_tdp, 0)
            )
        } else {
            write!(
                out,
                "the assumed idle floor ({floor} W, {} % of TDP; no idle seen yet)",
                fixed(e.floor_fallback_pct_of_tdp, 0)
            )
        };
    }
}
