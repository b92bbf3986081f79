//! The metrics the rules read over windows, by name. A window is kept per GPU, span and
//! metric (`window.rs`); when each rule read util through a closure of its own, every closure
//! was a different key, and the same values were kept and updated up to four times over (a
//! third of a GPU's windows were such copies).

use crate::model::{clock_event, DeviceSample};

/// One figure of a sample, as a window's statistics read it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    Util,
    Power,
    PowerLimit,
    SmClock,
    Temp,
    SmActive,
    TensorActive,
    /// GPM FP32 pipe activity.
    Fp32Active,
    DramBw,
    PcieRx,
    PcieTx,
    /// Received and sent together, MiB/s (a sample with both read).
    PcieTrafficMib,
    MemUsedBytes,
    MemUsedMib,
    /// 1 while any of these clock-event bits is among the sample's, 0 while none is.
    ClockEvent(u64),
}

impl Metric {
    pub const THERMAL: Metric = Metric::ClockEvent(
        clock_event::SW_THERMAL | clock_event::HW_THERMAL | clock_event::HW_SLOWDOWN,
    );
    pub const POWER_BRAKE: Metric = Metric::ClockEvent(clock_event::HW_POWER_BRAKE);
    pub const POWER_CAP: Metric = Metric::ClockEvent(clock_event::SW_POWER_CAP);

    /// The metric's value in `s`; none where the sample has a gap.
    #[must_use]
    pub fn read(self, s: &DeviceSample) -> Option<f32> {
        match self {
            Metric::Util => s.util_gpu_pct,
            Metric::Power => s.power_w,
            Metric::PowerLimit => s.power_limit_w,
            Metric::SmClock => s.sm_clock_mhz.map(|m| m as f32),
            Metric::Temp => s.temp_c,
            Metric::SmActive => s.gpm.sm_active_pct,
            Metric::TensorActive => s.gpm.tensor_active_pct,
            Metric::Fp32Active => s.gpm.fp32_active_pct,
            Metric::DramBw => s.gpm.dram_bw_pct,
            Metric::PcieRx => s.pcie_rx_kib_s,
            Metric::PcieTx => s.pcie_tx_kib_s,
            Metric::PcieTrafficMib => s
                .pcie_rx_kib_s
                .zip(s.pcie_tx_kib_s)
                .map(|(r, t)| (r + t) / 1024.0),
            Metric::MemUsedBytes => s.mem_used_bytes.map(|b| b as f32),
            Metric::MemUsedMib => s.mem_used_bytes.map(|b| (b >> 20) as f32),
            Metric::ClockEvent(bits) => s
                .clock_events
                .map(|e| if e & bits != 0 { 1.0 } else { 0.0 }),
        }
    }
}
