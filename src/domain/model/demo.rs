//! What a simulated GPU reads, as a rule's demo scenario declares it beside the rule
//! (`Rule::demo`): the mean levels of util, power, clocks and activity at a moment, around
//! which the simulator draws its noise, and the process it runs. `BUSY` and `FLOOR` are an
//! H200 measured at work and idle with a context; a scenario states what differs from one of
//! them.

use super::clock_event;
use super::stack::StackClass;
use super::{EventKind, Health};

/// The mean levels of a simulated GPU at one moment.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Level {
    pub util: f32,
    pub mem_util: f32,
    pub power: f32,
    pub sm_clock: f32,
    pub sm: f32,
    pub occ: f32,
    pub tensor: f32,
    pub dram: f32,
    pub pcie_rx_kib: f32,
    pub temp: f32,
    pub mem_gib: f32,
    /// Clock event reasons (`clock_event`).
    pub events: u64,
    pub pcie_gen: u32,
    pub pcie_width: u32,
    /// FP32 pipe activity; none: a tenth of SM activity.
    pub fp32: Option<f32>,
}

/// An H200 training in bf16 at its power cap.
pub const BUSY: Level = Level {
    util: 99.0,
    mem_util: 24.0,
    power: 692.0,
    sm_clock: 1455.0,
    sm: 96.0,
    occ: 14.0,
    tensor: 93.0,
    dram: 17.0,
    pcie_rx_kib: 16_000.0,
    temp: 62.0,
    mem_gib: 70.0,
    events: clock_event::SW_POWER_CAP,
    pcie_gen: 5,
    pcie_width: 16,
    fp32: None,
};

/// An H200 idle with a CUDA context.
pub const FLOOR: Level = Level {
    util: 0.0,
    mem_util: 0.0,
    power: 121.0,
    sm_clock: 1980.0,
    sm: 0.0,
    occ: 0.0,
    tensor: 0.0,
    dram: 0.0,
    pcie_rx_kib: 430.0,
    temp: 33.0,
    mem_gib: 2.0,
    events: 0,
    pcie_gen: 5,
    pcie_width: 16,
    fp32: None,
};

/// A rule's simulated scenario: `--demo NAME` shows GPUs that read `level` (at `t_s` seconds
/// since the start), each running its `workload` (or a training process), and the rule should
/// raise its finding there.
#[derive(Clone, Copy)]
pub struct Demo {
    /// The scenario's name after `--demo`.
    pub name: &'static str,
    /// What it shows, for `--help`.
    pub about: &'static str,
    /// `burst` is a fresh draw in [0, 1) each tick, for a GPU that works in bursts.
    pub level: fn(t_s: f32, burst: f32) -> Level,
    /// What its GPUs say of themselves where they differ from an H200 as shipped.
    pub facts: Facts,
    /// What runs on its GPUs; none: a training process at work (the simulator's own).
    pub workload: Option<Workload>,
    /// What its GPUs' health counters read, the events their driver sends and whether one
    /// falls off the bus; none: none of that (no health counters, as most simulated GPUs, and
    /// drivers that do not give them).
    pub trouble: Option<Trouble>,
}

/// A simulated GPU's settings, as NVML reports them once at the start.
#[derive(Debug, Clone, Copy)]
pub struct Facts {
    /// The enforced power limit, in watts; none: the default (TDP).
    pub power_limit_w: Option<f32>,
    /// Whether persistence mode is on.
    pub persistence_mode: bool,
}

/// An H200 as shipped: its default power limit, persistence mode on (as on most servers).
pub const STOCK: Facts = Facts {
    power_limit_w: None,
    persistence_mode: true,
};

/// A GPU in trouble as NVML shows it: its health counters, the events its driver sends, and
/// the moment NVML stops answering for it (the health rules' scenarios, and `lost`'s). Until
/// then it works at its scenario's levels.
#[derive(Debug, Clone, Copy)]
pub struct Trouble {
    /// What the counters read `t_s` seconds after the start.
    pub health: fn(t_s: f32) -> Health,
    /// The events the driver sends, each once, as the clock passes its second.
    pub events: &'static [(f32, EventKind)],
    /// When NVML stops answering for the GPU (it fell off the bus), in seconds after the
    /// start; none: it answers throughout.
    pub lost_at_s: Option<f32>,
    /// Only the first GPU is in trouble; the others train healthily beside it.
    pub first_gpu_only: bool,
    /// When its rule can first see it, in seconds after the start, with the default
    /// thresholds: the tests time the rule's onset from here.
    pub shows_at_s: f32,
}

/// A GPU in trouble that runs the simulator's training process at its power cap whatever its
/// counters say: the trouble is in what NVML says of it, not in its levels.
#[must_use]
pub const fn troubled(name: &'static str, about: &'static str, trouble: Trouble) -> Demo {
    Demo {
        name,
        about,
        level: busy,
        facts: STOCK,
        workload: None,
        trouble: Some(trouble),
    }
}

fn busy(_t_s: f32, _burst: f32) -> Level {
    BUSY
}

/// An H200's health counters with nothing wrong (no `NVLink` counted: a `PCIe` card's).
pub const CLEAN: Health = Health {
    ecc_corrected_volatile: Some(0),
    ecc_uncorrected_volatile: Some(0),
    ecc_corrected_aggregate: Some(0),
    ecc_uncorrected_aggregate: Some(0),
    remapped_rows_corrected: Some(0),
    remapped_rows_uncorrected: Some(0),
    remap_pending: Some(false),
    remap_failure: Some(false),
    pcie_replays: Some(0),
    nvlink_active: None,
    nvlink_links: None,
    nvlink_errors: None,
};

/// The process a demo GPU runs: what `ps` and its stacks would show.
#[derive(Clone, Copy)]
pub struct Workload {
    pub cmdline: &'static str,
    pub cpu_pct: f32,
    pub gpu_mem_gib: u64,
    /// `DataLoader` workers, its children.
    pub workers: usize,
    /// How many ranks of one torchrun job run it on each GPU, taking turns there (a job whose
    /// ranks never set their device); 1: one process a GPU (of no job unless `one_job`). Pids leave room
    /// for two ranks of four workers a GPU (`tests/rules.rs` checks each is its own).
    pub ranks: u32,
    /// Its processes on all the GPUs are ranks of one torchrun job, rank N on GPU N (a job
    /// started with `--nproc-per-node`); otherwise each is a job of its own (unless `ranks`).
    pub one_job: bool,
    /// It sleeps (state `S`: waiting for input, as a notebook kernel between cells); it runs
    /// otherwise.
    pub sleeping: bool,
    /// How its main thread's stack reads (`StackClass`), in how many of ten samples, and its
    /// frames, innermost first.
    pub stack: (StackClass, u32, &'static [Frame]),
}

/// A stack frame: function, file (under `torch/`: `PyTorch`'s), line, code.
pub type Frame = (&'static str, &'static str, u32, &'static str);
