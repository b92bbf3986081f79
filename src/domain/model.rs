//! What gpuwatch knows about a GPU: static facts (`DeviceInfo`), one tick of readings
//! (`DeviceSample`), and the processes on it (`ProcessSample`).
//!
//! Units are in the field names. A metric the GPU or driver does not support is `None`,
//! never 0: a gap is drawn as a gap and written as `null`.

use serde::{Deserialize, Serialize};

pub mod container;
pub mod demo;
pub mod health;
mod plausible;
mod process;
pub mod software;
pub mod stack;

pub use health::{EventKind, GpuEvent, Health};
pub use process::{ChildProcess, HostProcess, JobInfo, ProcessSample};

/// Where a run's samples come from, as the store is told it: which machine and GPUs, at what
/// interval, named how, and whether they are played back. A source describes itself so
/// (`collect::source`), which keeps the store, here, from knowing what a source is.
pub struct Origin<'a> {
    pub system: &'a SystemInfo,
    pub devices: &'a [DeviceInfo],
    pub interval: std::time::Duration,
    pub label: String,
    /// Process PIDs belong to this machine (signals can be sent to them).
    pub pids_are_local: bool,
    /// A recording or a snapshot played back, not GPUs sampled now.
    pub replay: bool,
}

/// What can say where its samples come from.
pub trait Describe {
    fn origin(&self) -> Origin<'_>;
}

/// Facts about the machine, read once.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SystemInfo {
    pub host: String,
    pub driver_version: Option<String>,
    pub nvml_version: Option<String>,
    /// CUDA driver API version, e.g. "13.0".
    pub cuda_driver_version: Option<String>,
}

/// Facts about one GPU that do not change while gpuwatch runs.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DeviceInfo {
    pub index: u32,
    pub uuid: String,
    pub name: String,
    pub pci_bus_id: String,
    pub memory_total_bytes: Option<u64>,
    /// The default power limit: what this project calls the TDP.
    pub power_limit_default_w: Option<f32>,
    /// The limit in force when gpuwatch started (admin or out-of-band caps included).
    pub power_limit_enforced_w: Option<f32>,
    pub power_limit_min_w: Option<f32>,
    pub power_limit_max_w: Option<f32>,
    pub max_sm_clock_mhz: Option<u32>,
    pub max_mem_clock_mhz: Option<u32>,
    pub temp_slowdown_c: Option<u32>,
    pub pcie_max_gen: Option<u32>,
    pub pcie_max_width: Option<u32>,
    pub persistence_mode: Option<bool>,
    pub mig_mode: Option<bool>,
    pub gpm_supported: bool,
    /// Set on a MIG instance: the part of a GPU it is. Its `index` is then `mig_index(…)`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mig: Option<MigInfo>,
}

/// A MIG instance: a GPU instance (its memory and SM slices) and the compute instance in it
/// that NVML hands out as a device. NVML reports no utilization, power or temperature for it:
/// those stay its parent GPU's, and its activity comes from GPM per GPU instance.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MigInfo {
    /// NVML index of the GPU it is carved from.
    pub parent: u32,
    pub parent_uuid: String,
    /// The GPU instance id (`GPU_I_ID` in dcgm-exporter's labels, `GI ID` in nvidia-smi).
    pub gpu_instance: u32,
    /// The compute instance id within it (`CI ID`).
    pub compute_instance: u32,
    /// The profile, as nvidia-smi names it: `1g.18gb`, `3g.71gb`.
    pub profile: String,
    pub sm_count: Option<u32>,
}

/// Where the numbers of MIG instances start: GPUs are numbered from 0 by NVML, so an instance
/// numbered from here never meets one.
pub const MIG_INDEX_BASE: u32 = 100_000;

/// The largest TDP taken as one (a GB300 is 1.4 kW): past it a recording's value is damage.
pub const MAX_TDP_W: f32 = 10_000.0;

/// The number gpuwatch keeps a MIG instance under (findings, history, recordings): it encodes
/// its parent, GPU instance and compute instance, so that `gpu_label` can name it anywhere.
#[must_use]
pub fn mig_index(parent: u32, gpu_instance: u32, compute_instance: u32) -> u32 {
    MIG_INDEX_BASE + parent.min(999) * 1000 + gpu_instance.min(99) * 10 + compute_instance.min(9)
}

/// Where device `index` sorts among GPUs and instances: a GPU, then its instances by GPU and
/// compute instance (0, 0:2, 0:10, 1), not by the number they are kept under (1 came before
/// 0:2, numbered 100020).
#[must_use]
pub fn gpu_order(index: u32) -> (u32, u32) {
    match index.checked_sub(MIG_INDEX_BASE) {
        Some(mig) => (mig / 1000, mig % 1000 + 1),
        None => (index, 0),
    }
}

/// 0, −700 or 1e30 W is no power limit to judge power against.
fn plausible_w(w: &f32) -> bool {
    w.is_finite() && *w > 0.0 && *w <= MAX_TDP_W
}

/// The first thing wrong with a list of devices read from a file: two with one number, or a
/// number that disagrees with what the device says it is (a MIG instance's number encodes its
/// GPU and instance ids; a whole GPU's is below `MIG_INDEX_BASE`). Findings are filed by number,
/// so either would put one device's findings on another.
#[must_use]
pub fn devices_inconsistent(devices: &[DeviceInfo]) -> Option<String> {
    let mut seen = std::collections::HashSet::new();
    for d in devices {
        if let Some(bytes) = d.memory_total_bytes.filter(|b| *b > 1 << 50) {
            return Some(format!(
                "device {} says it has {bytes} bytes of memory, more than 1 PiB",
                d.index
            ));
        }
        if !seen.insert(d.index) {
            return Some(format!("two devices are numbered {}", d.index));
        }
        match &d.mig {
            None if d.index >= MIG_INDEX_BASE => {
                return Some(format!(
                    "device {} has a MIG instance's number but no \"mig\" facts",
                    d.index
                ));
            }
            Some(m) if m.parent > 999 || m.gpu_instance > 99 || m.compute_instance > 9 => {
                return Some(format!(
                    "device {} says it is MIG instance {}:{}:{}, beyond what a GPU has (GPU up to 999, GPU instance up to 99, compute instance up to 9)",
                    d.index, m.parent, m.gpu_instance, m.compute_instance
                ));
            }
            Some(m) if d.index != mig_index(m.parent, m.gpu_instance, m.compute_instance) => {
                return Some(format!(
                    "device {} says it is MIG instance {}:{}:{}, which is numbered {}",
                    d.index,
                    m.parent,
                    m.gpu_instance,
                    m.compute_instance,
                    mig_index(m.parent, m.gpu_instance, m.compute_instance)
                ));
            }
            _ => {}
        }
    }
    None
}

/// How a device is named to users: `3` for a GPU, `0:9` for GPU instance 9 of GPU 0 (and
/// `0:9:1` for its compute instance 1, when it is not the first), as nvidia-smi writes them.
#[must_use]
pub fn gpu_label(index: u32) -> GpuLabel {
    GpuLabel(index)
}

/// Sorted device numbers as users read them: GPUs as runs ("0-3, 5"), MIG instances ("0:9")
/// one by one.
#[must_use]
pub fn gpus_named(sorted: &[u32]) -> String {
    if sorted.iter().all(|&d| d < MIG_INDEX_BASE) {
        return crate::text::runs(sorted);
    }
    let labels: Vec<String> = sorted.iter().map(|&d| gpu_label(d).to_string()).collect();
    labels.join(", ")
}

/// `gpu_label`'s value: formats without allocating.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GpuLabel(pub u32);

impl GpuLabel {
    /// (parent, GPU instance, compute instance) of a MIG instance's number.
    #[must_use]
    pub fn mig_parts(self) -> Option<(u32, u32, u32)> {
        let n = self.0.checked_sub(MIG_INDEX_BASE)?;
        Some((n / 1000, n % 1000 / 10, n % 10))
    }
}

impl GpuLabel {
    /// How many cells it takes on screen, without formatting it.
    #[must_use]
    pub fn width(self) -> usize {
        let digits = |n: u32| n.checked_ilog10().map_or(1, |d| d as usize + 1);
        match self.mig_parts() {
            None => digits(self.0),
            Some((gpu, gi, 0)) => digits(gpu) + 1 + digits(gi),
            Some((gpu, gi, ci)) => digits(gpu) + 1 + digits(gi) + 1 + digits(ci),
        }
    }
}

impl std::fmt::Display for GpuLabel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Padded as a `str`, so `{:>4}` lines it up as it does a number.
        match self.mig_parts() {
            None => self.0.fmt(f),
            Some((gpu, gi, 0)) => crate::text::padded(f, format_args!("{gpu}:{gi}")),
            Some((gpu, gi, ci)) => crate::text::padded(f, format_args!("{gpu}:{gi}:{ci}")),
        }
    }
}

impl DeviceInfo {
    /// TDP in watts: the default power limit, else the enforced one.
    #[must_use]
    pub fn tdp_w(&self) -> Option<f32> {
        self.default_limit_w()
            .or(self.power_limit_enforced_w.filter(plausible_w))
    }

    /// The default power limit, where it is one a GPU can have: a recording may say anything,
    /// and 1e30 W made a false "capped below its default" warning.
    #[must_use]
    pub fn default_limit_w(&self) -> Option<f32> {
        self.power_limit_default_w.filter(plausible_w)
    }

    /// A GPU whose MIG mode is on: its instances carry the processes and the activity.
    #[must_use]
    pub fn is_mig_parent(&self) -> bool {
        self.mig.is_none() && self.mig_mode == Some(true)
    }

    #[must_use]
    pub fn label(&self) -> GpuLabel {
        gpu_label(self.index)
    }
}

/// GPM (Hopper and newer) activity between two GPM samples, all in %.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct GpmMetrics {
    pub sm_active_pct: Option<f32>,
    pub sm_occupancy_pct: Option<f32>,
    pub tensor_active_pct: Option<f32>,
    pub dram_bw_pct: Option<f32>,
    /// GPM `GRAPHICS_UTIL`. Kept for older recordings; no longer read live (it cost 0.75 ms of
    /// CPU per read on an H200 and repeats `util_gpu_pct`), so new data has it as a gap.
    pub engine_active_pct: Option<f32>,
    pub fp16_active_pct: Option<f32>,
    pub fp32_active_pct: Option<f32>,
    pub fp64_active_pct: Option<f32>,
}

/// Clock-event ("throttle") reason bits, as NVML defines them.
pub mod clock_event {
    pub const GPU_IDLE: u64 = 0x1;
    pub const APPLICATIONS_CLOCKS: u64 = 0x2;
    pub const SW_POWER_CAP: u64 = 0x4;
    pub const HW_SLOWDOWN: u64 = 0x8;
    pub const SYNC_BOOST: u64 = 0x10;
    pub const SW_THERMAL: u64 = 0x20;
    pub const HW_THERMAL: u64 = 0x40;
    pub const HW_POWER_BRAKE: u64 = 0x80;
    pub const DISPLAY_CLOCKS: u64 = 0x100;

    /// Every reason NVML reports, with its short name.
    pub const ALL: [(u64, &str); 9] = [
        (GPU_IDLE, "idle"),
        (APPLICATIONS_CLOCKS, "app-clocks"),
        (SW_POWER_CAP, "sw-power-cap"),
        (HW_SLOWDOWN, "hw-slowdown"),
        (SYNC_BOOST, "sync-boost"),
        (SW_THERMAL, "sw-thermal"),
        (HW_THERMAL, "hw-thermal"),
        (HW_POWER_BRAKE, "hw-power-brake"),
        (DISPLAY_CLOCKS, "display-clocks"),
    ];

    /// Short names of the bits set in `bits`, for evidence and the screen.
    #[must_use]
    pub fn names(bits: u64) -> Vec<&'static str> {
        each(bits).collect()
    }

    /// The same names one by one, without collecting them (the overview's every frame).
    pub fn each(bits: u64) -> impl Iterator<Item = &'static str> {
        ALL.iter()
            .filter(move |(bit, _)| bits & bit != 0)
            .map(|(_, name)| *name)
    }
}

/// 2100-01-01 in ms since the epoch: a sample time after it is no real time (a hostile
/// `u64::MAX` once made a "hang for 25 s" out of no data at all).
pub const LATEST_PLAUSIBLE_MS: u64 = 4_102_444_800_000;

/// One tick of one GPU. `Copy` and fixed-size so the history's ring buffers never allocate.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct DeviceSample {
    /// Milliseconds since the Unix epoch, taken when the tick was read.
    pub t_ms: u64,
    pub util_gpu_pct: Option<f32>,
    pub util_mem_pct: Option<f32>,
    /// NVML's power reading (a 1 s average on Ampere and newer).
    pub power_w: Option<f32>,
    /// Mean power from the energy counter since the previous energy reading.
    pub energy_power_w: Option<f32>,
    /// The power limit enforced now; a cap set below the default shows here.
    pub power_limit_w: Option<f32>,
    pub temp_c: Option<f32>,
    pub sm_clock_mhz: Option<u32>,
    pub mem_clock_mhz: Option<u32>,
    pub mem_used_bytes: Option<u64>,
    pub fan_pct: Option<f32>,
    pub pstate: Option<u8>,
    /// Clock-event reason bits (`clock_event::*`).
    pub clock_events: Option<u64>,
    pub pcie_gen: Option<u32>,
    pub pcie_width: Option<u32>,
    pub pcie_tx_kib_s: Option<f32>,
    pub pcie_rx_kib_s: Option<f32>,
    pub gpm: GpmMetrics,
    /// The GPU's energy counter (mJ since the driver loaded), read once a minute: costly.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub energy_mj: Option<u64>,
    /// ECC, remapped rows, `PCIe` replays, `NVLink`: read on the slow tick.
    #[serde(default, skip_serializing_if = "Health::is_unknown")]
    pub health: Health,
}

/// Whether a device answered on the last tick.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum DeviceStatus {
    #[default]
    Ok,
    /// NVML failed on this device (fell off the bus, reset…); the others carry on.
    Lost { reason: String },
}

/// One device's part of a tick.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DeviceReading {
    pub sample: DeviceSample,
    pub processes: Vec<ProcessSample>,
    pub status: DeviceStatus,
    /// The processes are those of the previous tick, not repeated in `processes` (a snapshot
    /// played back has one list for its whole window): nothing to copy, nothing departed.
    #[serde(skip)]
    pub same_processes: bool,
}

/// Everything read in one tick, one reading per device in `DeviceInfo` order.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Tick {
    pub t_ms: u64,
    pub devices: Vec<DeviceReading>,
    /// Stack bursts of GPU processes that ended since the previous tick (rarely any).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stacks: Vec<stack::StackBurst>,
    /// Events the driver reported since the previous tick (Xid and ECC errors: rarely any).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<GpuEvent>,
}

impl Tick {
    /// A tick with one empty reading per device, to be filled by a source again and again.
    #[must_use]
    pub fn for_devices(count: usize) -> Self {
        Tick {
            t_ms: 0,
            devices: vec![DeviceReading::default(); count],
            stacks: Vec::new(),
            events: Vec::new(),
        }
    }
}

/// Milliseconds since the Unix epoch, now. Only sources call this; everything above them
/// takes time from samples.
#[must_use]
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

pub const MIB: u64 = 1024 * 1024;
pub const GIB: u64 = 1024 * MIB;

/// What watching costs, measured by the sampler on itself.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SelfCost {
    /// gpuwatch's whole process, % of one core, over the last second or so.
    pub cpu_pct: Option<f32>,
    /// Median time the source took per tick (NVML time for the live source), ms.
    pub tick_ms_median: Option<f32>,
    pub tick_ms_max: Option<f32>,
    pub rss_bytes: Option<u64>,
}

#[cfg(test)]
mod tests {
    #[test]
    fn gpus_are_named_as_runs_and_mig_instances_one_by_one() {
        assert_eq!(super::gpus_named(&[0, 1, 2, 5]), "0-2, 5");
        // GPU instance 9 of GPU 0, then 10: not a range of "0:9".
        let mig = [super::MIG_INDEX_BASE + 90, super::MIG_INDEX_BASE + 100];
        assert_eq!(super::gpus_named(&mig), "0:9, 0:10");
    }
}
