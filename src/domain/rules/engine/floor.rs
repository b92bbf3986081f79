//! The idle floor each GPU has shown, learned from its quiet stretches: the power the rules
//! judge "near idle" against.

use super::Engine;
use crate::history::DeviceHistory;
use crate::rules::Stats;

/// The idle power a GPU has shown: with no process at all, and with a process holding a CUDA
/// context but running no kernel (higher: ~80 W against ~121 W on an H200). A hung kernel sits
/// at the second, so that is the floor the rules judge against once it has been seen.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Floor {
    pub bare: Option<f32>,
    pub context: Option<f32>,
}

impl Floor {
    #[must_use]
    pub fn best(&self) -> Option<f32> {
        self.context.or(self.bare)
    }
}

/// A stretch of no activity this long teaches the engine the GPU's idle floor.
const FLOOR_SPAN_MS: u64 = 5_000;

/// True when `dev` was idle through its last `span_ms`: util read and 0 in every sample, SM
/// activity (where read) at most 1 %. A scan that stops at the first busy sample: a working
/// GPU, asked at every judging, is told by its newest sample (the statistics of the span
/// were 5 % of what judging 64 GPUs cost).
fn idle_through(dev: &DeviceHistory, span_ms: u64) -> bool {
    let mut util_read = false;
    for s in dev.samples.last(span_ms) {
        let busy = s.util_gpu_pct.is_some_and(|u| u > 0.0 || u.is_nan())
            || s.gpm.sm_active_pct.is_some_and(|v| v > 1.0 || v.is_nan());
        if busy {
            return false;
        }
        util_read |= s.util_gpu_pct.is_some();
    }
    util_read
}

impl Engine {
    /// The learned idle floors of a device (NVML index; none until it has been idle a while).
    #[must_use]
    pub fn floors(&self, device: u32) -> Floor {
        self.position(device)
            .and_then(|p| self.floors.get(p))
            .copied()
            .unwrap_or_default()
    }

    /// The idle floor the rules judge a device against, in watts: the floor seen with a
    /// context; else the bare floor plus what a context adds; else a share of TDP.
    #[must_use]
    pub fn floor_w(&self, info: &crate::model::DeviceInfo) -> f32 {
        let t = &self.thresholds;
        let f = self.floors(info.index);
        let tdp = info.tdp_w().unwrap_or(0.0);
        f.context
            .or(f
                .bare
                .map(|b| b + tdp * t.engine.context_floor_extra_pct_of_tdp / 100.0))
            .unwrap_or(tdp * t.engine.floor_fallback_pct_of_tdp / 100.0)
    }

    /// Why device `i`'s power cannot tell busy from idle, if it cannot: no power in its newest
    /// samples, or neither a TDP nor an idle floor learned to judge it against (the floor read
    /// 0 W then, and a hung GPU at 120 W looked busy: "nothing found", exit 0). MIG instances
    /// are judged without power.
    pub(super) fn blind(&self, i: usize, dev: &DeviceHistory) -> Option<&'static str> {
        // A lost GPU reads nothing, and its own finding says so.
        let lost = dev.status != crate::model::DeviceStatus::Ok;
        if lost || dev.info.mig.is_some() || dev.info.is_mig_parent() {
            return None;
        }
        if dev
            .samples
            .iter()
            .rev()
            .take(8)
            .all(|s| s.power_w.is_none())
        {
            return Some(
                "no power reading, and power is what tells a busy GPU from an idle one (a \
                 longer run would not help)",
            );
        }
        let floor = self.floors[i];
        (dev.info.tdp_w().is_none() && floor.best().is_none()).then_some(
            "no TDP reading, and no idle stretch yet to learn its idle power from (5 s with \
                 no kernel running teaches it)",
        )
    }

    /// The floor is the lowest power held through a stretch with no kernels running.
    pub(super) fn learn_floor(&mut self, i: usize, dev: &DeviceHistory) {
        let Some(latest) = dev.samples.latest() else {
            return;
        };
        if dev
            .samples
            .iter()
            .next()
            .is_none_or(|s| s.t_ms + FLOOR_SPAN_MS > latest.t_ms)
        {
            return;
        }
        if !idle_through(dev, FLOOR_SPAN_MS) {
            return;
        }
        let power = Stats::of(dev.samples.last(FLOOR_SPAN_MS).filter_map(|s| s.power_w));
        // NVML sets the GpuIdle clock-event bit while no context is resident (the GPU parks its
        // clocks): that is the bare floor, whatever the process list says in the same second.
        let parked = Stats::of(dev.samples.last(FLOOR_SPAN_MS).filter_map(|s| {
            s.clock_events
                .map(|e| f32::from(u8::from(e & crate::model::clock_event::GPU_IDLE != 0)))
        }));
        if power.n > 0 {
            let f = &mut self.floors[i];
            let with_context = !dev.processes.is_empty() && parked.max == 0.0;
            let slot = if with_context {
                &mut f.context
            } else {
                &mut f.bare
            };
            *slot = Some(slot.map_or(power.median, |old: f32| old.min(power.median)));
        }
    }
}
