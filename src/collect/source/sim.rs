//! Simulated GPUs with scripted scenarios, for `--demo` and for tests.
//!
//! Levels follow what was measured on an H200 (the recordings in `tests/fixtures/h200/`, the
//! figures in `docs/validation.md`); noise is deterministic for a seed. Time is virtual: tick `n` is at `start_ms + n * interval_ms`, so a
//! test can play an hour in a millisecond.

use std::str::FromStr;

use crate::model::{
    DeviceInfo, DeviceReading, DeviceSample, DeviceStatus, GpuEvent, ProcessSample, SystemInfo,
    Tick, MIB,
};
use crate::rules::RuleId;
use crate::source::{Sampled, Source, SourceError};

use super::simlevel::{device_info, draw, level};
use super::simproc::{processes_from, MIG_FIRST_PID};

/// The named scenarios of the demo.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scenario {
    /// Saturated bf16 training at the power cap.
    Healthy,
    /// Healthy memory-bound work, well under TDP with high SM and DRAM activity.
    Membound,
    /// No process at all.
    Idle,
    /// Several GPUs in different states, including a hung job with one straggler.
    Mixed,
    /// The rank of a hung job that never reached the collective: idle GPU, busy host.
    Straggler,
    /// Busy GPUs in trouble, each playing a health rule's scenario (an uncorrectable ECC
    /// error with its Xid and pending row remap, `PCIe` replays, an `NVLink` link down), and
    /// a fourth with only an old GPU's history.
    Health,
    /// GPU 0 split into MIG instances (3g.71gb training, 2g.35gb hung, 1g.18gb starved,
    /// 1g.18gb an idle notebook holding memory); any further GPUs whole and healthy.
    Mig,
    /// Host `host` of `hosts` running one multi-node job (`--demo fleet:H/N`): every rank
    /// spins in a collective except the last host's last rank, which idles on its GPU.
    Fleet { host: u8, hosts: u8 },
    /// A rule's own scenario (`Rule::demo`), declared in the rule's file: its GPUs read the
    /// levels it gives, each with the process it declares (or a training process).
    Rule(RuleId),
}

/// The scenarios written here; `scenarios()` adds those the rules declare.
const BUILT_IN: [(&str, Scenario); 8] = [
    ("healthy", Scenario::Healthy),
    ("membound", Scenario::Membound),
    ("idle", Scenario::Idle),
    ("mixed", Scenario::Mixed),
    ("straggler", Scenario::Straggler),
    ("health", Scenario::Health),
    ("mig", Scenario::Mig),
    ("fleet", Scenario::Fleet { host: 0, hosts: 1 }),
];

/// Every scenario `--demo` knows, by name: those written here, then the rules' own.
#[must_use]
pub fn scenarios() -> Vec<(&'static str, Scenario)> {
    let rules = crate::rules::demos().map(|(id, d)| (d.name, Scenario::Rule(id)));
    BUILT_IN.into_iter().chain(rules).collect()
}

impl FromStr for Scenario {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        if let Some(spec) = s.strip_prefix("fleet:") {
            let bad = || format!("'{s}': fleet:H/N is host H (from 0) of N hosts, N at most 64");
            let (h, n) = spec.split_once('/').ok_or_else(bad)?;
            let (host, hosts): (u8, u8) =
                (h.parse().map_err(|_| bad())?, n.parse().map_err(|_| bad())?);
            return (host < hosts && hosts <= 64)
                .then_some(Scenario::Fleet { host, hosts })
                .ok_or_else(bad);
        }
        let all = scenarios();
        all.iter()
            .find(|(name, _)| *name == s)
            .map(|(_, sc)| *sc)
            .ok_or_else(|| {
                let names: Vec<&str> = all.iter().map(|(n, _)| *n).collect();
                format!(
                    "unknown scenario '{s}'; choose one of: {}",
                    names.join(", ")
                )
            })
    }
}

impl Scenario {
    /// The hang rule's scenario (`--demo hang`), which the GPUs of the straggler, mixed, fleet
    /// and MIG stories whose ranks wait in a collective play.
    pub const HANG: Scenario = Scenario::Rule(RuleId::Hang);

    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Scenario::Fleet { .. } => return "fleet",
            Scenario::Rule(id) => return crate::rules::demo(id).name,
            _ => {}
        }
        BUILT_IN
            .iter()
            .find(|(_, s)| *s == self)
            .map_or("?", |(n, _)| *n)
    }

    /// The process a rule's own scenario declares its GPUs run (`Demo::workload`); none for
    /// the simulator's scenarios and for a rule's that runs the default training process.
    pub(super) fn workload(self) -> Option<crate::model::demo::Workload> {
        self.demo()?.workload
    }

    /// The trouble a rule's scenario declares (`Demo::trouble`).
    pub(super) fn trouble(self) -> Option<crate::model::demo::Trouble> {
        self.demo()?.trouble
    }

    /// The scenario a rule declares (`Rule::demo`); none for the simulator's own.
    pub(super) fn demo(self) -> Option<&'static crate::model::demo::Demo> {
        match self {
            Scenario::Rule(id) => Some(crate::rules::demo(id)),
            _ => None,
        }
    }

    /// How many GPUs the demo shows for this scenario when `--gpus` is not given.
    #[must_use]
    pub fn default_gpus(self) -> usize {
        if self == Scenario::Mixed {
            8
        } else if self == Scenario::Health {
            4
        } else if let Scenario::Fleet { .. } | Scenario::Mig = self {
            2
        } else {
            1
        }
    }

    /// The scenario of GPU `index`: `mixed` deals a fixed cast, the others repeat.
    /// What GPU `index` of `gpus` plays. The straggler demo is a job whose last rank computes
    /// on its host while the others wait for it (with one GPU, its two ranks share it).
    pub(super) fn for_gpu(self, index: usize, gpus: usize) -> Scenario {
        // The health story's fourth GPU plays the story itself: an old GPU's history.
        const HEALTH_CAST: [Scenario; 4] = [
            Scenario::Rule(RuleId::Ecc),
            Scenario::Rule(RuleId::PcieReplay),
            Scenario::Rule(RuleId::Nvlink),
            Scenario::Health,
        ];
        const CAST: [Scenario; 8] = [
            Scenario::Healthy,
            Scenario::Membound,
            Scenario::Rule(RuleId::Starved),
            Scenario::Rule(RuleId::Sync),
            Scenario::HANG,
            Scenario::HANG,
            Scenario::Straggler,
            Scenario::Rule(RuleId::IdleMem),
        ];
        match self {
            Scenario::Mixed => CAST[index % CAST.len()],
            // A scenario whose trouble is the first GPU's: the others carry on.
            sc if index > 0 && sc.trouble().is_some_and(|t| t.first_gpu_only) => Scenario::Healthy,
            Scenario::Fleet { host, hosts } if host + 1 == hosts && index + 1 == gpus => {
                Scenario::Straggler
            }
            Scenario::Fleet { .. } => Scenario::HANG,
            Scenario::Mig => Scenario::Healthy,
            Scenario::Health => HEALTH_CAST[index % HEALTH_CAST.len()],
            Scenario::Straggler if gpus == 1 || index + 1 < gpus => Scenario::HANG,
            other => other,
        }
    }
}

/// Deterministic noise (splitmix64); no dependency, same numbers on every machine.
#[derive(Debug, Clone)]
pub(super) struct Noise(pub(super) u64);

impl Noise {
    pub(super) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    pub(super) fn unit(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 / (1u64 << 24) as f32
    }
    /// Roughly normal, mean 0, standard deviation `sd` (Irwin-Hall of four uniforms).
    pub(super) fn normal(&mut self, sd: f32) -> f32 {
        let s: f32 = (0..4).map(|_| self.unit()).sum::<f32>() - 2.0;
        s * sd * 1.732
    }
    pub(super) fn around(&mut self, mean: f32, sd: f32, lo: f32, hi: f32) -> f32 {
        (mean + self.normal(sd)).clamp(lo, hi)
    }
}

/// The H200 facts a simulated GPU presents.
pub(super) const TDP_W: f32 = 700.0;
pub(super) const MEM_TOTAL: u64 = 143_771 * MIB;
pub(super) const JOB_PARENT_PID: u32 = 4000;

pub(super) struct SimDevice {
    pub(super) scenario: Scenario,
    pub(super) noise: Noise,
    pub(super) processes: Vec<ProcessSample>,
    /// What each process's Python stacks show (a shared GPU's straggler differs from its GPU).
    pub(super) stories: Vec<Scenario>,
    /// Its energy counter, and for a rule's trouble its counters, events and fall.
    pub(super) health: super::simhealth::SimHealth,
    /// The CPU % each process hovers around.
    pub(super) base_cpu: Vec<f32>,
    /// Whole GPU, MIG parent or MIG instance, and what its instances add to its parent.
    pub(super) mig: super::simmig::Part,
}

pub struct SimSource {
    system: SystemInfo,
    devices: Vec<DeviceInfo>,
    sims: Vec<SimDevice>,
    start_ms: u64,
    interval_ms: u64,
    ticks: u64,
    label: String,
    /// Whether the processes give Python stack bursts (every 15 s of simulated time).
    stacks: bool,
}

impl SimSource {
    /// The same GPUs without their stack bursts: what a machine where stacks are not read
    /// shows (and, for the allocation tests, ticks that are all samples).
    #[must_use]
    pub fn without_stacks(mut self) -> Self {
        self.stacks = false;
        self
    }

    /// Keeps only the simulated GPUs at `positions` (`-i`), with their indices.
    pub fn keep(&mut self, positions: &[usize]) {
        let mut i = 0;
        self.devices.retain(|_| {
            i += 1;
            positions.contains(&(i - 1))
        });
        let mut j = 0;
        self.sims.retain(|_| {
            j += 1;
            positions.contains(&(j - 1))
        });
    }

    /// `gpus` simulated GPUs playing `scenario`, ticks `interval_ms` apart from `start_ms`.
    #[must_use]
    pub fn new(
        scenario: Scenario,
        gpus: usize,
        seed: u64,
        start_ms: u64,
        interval_ms: u64,
    ) -> Self {
        let gpus = gpus.clamp(1, 64);
        let devices: Vec<DeviceInfo> = (0..gpus)
            .map(|i| device_info(i, scenario.for_gpu(i, gpus)))
            .collect();
        let sims = (0..gpus)
            .map(|i| SimDevice::new(scenario, i, gpus, seed, start_ms))
            .collect();
        let mut src = SimSource {
            system: SystemInfo {
                host: "demo".into(),
                driver_version: Some("580.159.04 (simulated)".into()),
                nvml_version: Some("13.580.159.04".into()),
                cuda_driver_version: Some("13.0".into()),
            },
            devices,
            sims,
            start_ms,
            interval_ms: interval_ms.max(1),
            ticks: 0,
            label: format!("demo: {}", scenario.name()),
            stacks: true,
        };
        if let Scenario::Fleet { host, hosts } = scenario {
            src.as_fleet_host(host, hosts);
        }
        if scenario == Scenario::Mig {
            src.split_first_gpu(seed, start_ms);
        }
        src
    }

    /// The MIG demo: GPU 0 in MIG mode, its instances listed right after it, each playing
    /// its own scenario with processes of its own; the parent keeps none.
    fn split_first_gpu(&mut self, seed: u64, start_ms: u64) {
        self.devices[0].mig_mode = Some(true);
        let parent = &mut self.sims[0];
        parent.scenario = Scenario::Mig;
        parent.mig = super::simmig::Part::Parent;
        parent.processes.clear();
        parent.stories.clear();
        parent.base_cpu.clear();
        for (k, (info, sc, part)) in super::simmig::instances(&self.devices[0])
            .into_iter()
            .enumerate()
        {
            let position = k + 1;
            let first_pid = MIG_FIRST_PID + k as u32 * 10;
            let mut processes = processes_from(sc, position, 0, first_pid);
            let room = info.memory_total_bytes.unwrap_or(0) * 17 / 20;
            for p in &mut processes {
                p.gpu_mem_bytes = p.gpu_mem_bytes.map(|b| b.min(room));
            }
            for h in processes.iter_mut().filter_map(|p| p.host.as_mut()) {
                h.started_ms = Some(start_ms.saturating_sub(3_600_000));
            }
            let base_cpu = processes
                .iter()
                .map(|p| p.host.as_ref().and_then(|h| h.cpu_pct).unwrap_or(0.0))
                .collect();
            self.devices.insert(position, info);
            self.sims.insert(
                position,
                SimDevice {
                    scenario: sc,
                    noise: Noise(
                        seed ^ (position as u64 + 100).wrapping_mul(0xA24B_AED4_963E_E407),
                    ),
                    stories: vec![sc; processes.len()],
                    processes,
                    base_cpu,
                    health: super::simhealth::SimHealth::new(sc),
                    mig: part,
                },
            );
        }
    }

    /// Makes these GPUs host `host` of `hosts` of one job: its host name, globally numbered
    /// ranks of one torchelastic run, PIDs that differ from the other hosts'.
    fn as_fleet_host(&mut self, host: u8, hosts: u8) {
        let gpus = self.sims.len();
        self.system.host = format!("demo-h{host}");
        self.label = format!("demo: fleet, host {host} of {hosts}");
        for (i, sim) in self.sims.iter_mut().enumerate() {
            for p in &mut sim.processes {
                p.pid += u32::from(host) * 1000;
                if let Some(job) = p.host.as_mut().and_then(|h| h.job.as_mut()) {
                    job.key = "torchelastic:demo-fleet".into();
                    job.rank = Some((usize::from(host) * gpus + i) as u32);
                    job.local_rank = Some(i as u32);
                    job.world_size = Some((usize::from(hosts) * gpus) as u32);
                }
            }
        }
    }
}

impl SimDevice {
    fn read(
        &mut self,
        (t_s, dt_s): (f32, f32),
        t_ms: u64,
        info: &DeviceInfo,
        out: &mut DeviceReading,
        events: &mut Vec<GpuEvent>,
    ) {
        let event = |kind| GpuEvent {
            t_ms,
            device: info.index,
            kind,
        };
        // A GPU that fell off the bus: NVML answers nothing for it from then on.
        if self.health.lost_at_s().is_some_and(|at| t_s >= at) {
            self.health
                .send_events((t_s, dt_s), |kind| events.push(event(kind)));
            out.sample = DeviceSample {
                t_ms,
                ..DeviceSample::default()
            };
            out.processes.clear();
            out.status = DeviceStatus::Lost {
                reason: "GPU is lost (simulated: fell off the bus)".into(),
            };
            return;
        }
        let burst = self.noise.unit();
        let lv = level(self.scenario, t_s, burst);
        out.sample = draw(&lv, &mut self.noise, t_ms, info);
        self.health.read((t_s, dt_s), &mut out.sample, |kind| {
            events.push(event(kind));
        });
        self.mig
            .shape(&mut out.sample, self.scenario == Scenario::HANG);
        out.status = DeviceStatus::Ok;
        self.jitter_processes(lv.util);
        if let super::simmig::Part::Instance { .. } = self.mig {
            // NVML keeps no per-process utilization on MIG.
            for p in &mut self.processes {
                (p.sm_pct, p.mem_pct) = (None, None);
            }
        }
        out.processes.clone_from(&self.processes);
    }
}

impl Source for SimSource {
    fn system(&self) -> &SystemInfo {
        &self.system
    }
    fn interval(&self) -> std::time::Duration {
        std::time::Duration::from_millis(self.interval_ms)
    }
    fn devices(&self) -> &[DeviceInfo] {
        &self.devices
    }
    fn sample(&mut self, tick: &mut Tick) -> Result<Sampled, SourceError> {
        let t_ms = self.start_ms + self.ticks * self.interval_ms;
        let t_s = (self.ticks * self.interval_ms) as f32 / 1000.0;
        let dt_s = self.interval_ms as f32 / 1000.0;
        self.ticks += 1;
        tick.t_ms = t_ms;
        tick.stacks.clear();
        tick.events.clear();
        tick.devices
            .resize_with(self.devices.len(), DeviceReading::default);
        for ((sim, info), out) in self
            .sims
            .iter_mut()
            .zip(&self.devices)
            .zip(&mut tick.devices)
        {
            sim.read((t_s, dt_s), t_ms, info, out, &mut tick.events);
        }
        for p in 0..self.sims.len() {
            if self.sims[p].mig == super::simmig::Part::Parent {
                let (before, after) = self.sims.split_at_mut(p + 1);
                let sample = &mut tick.devices[p].sample;
                let drawn_w = sample.power_w.unwrap_or(0.0);
                super::simmig::fill_parent(sample, after.iter().map(|s| &s.mig));
                // Its energy counter counts what it drew, as NVML's does.
                let more_w = sample.power_w.unwrap_or(0.0) - drawn_w;
                before[p].health.count_more(more_w, dt_s, sample);
            }
        }
        let elapsed_ms = t_ms - self.start_ms;
        let sims = if self.stacks { &self.sims[..] } else { &[] };
        for (gpu, (sim, out)) in sims.iter().zip(&tick.devices).enumerate() {
            for (p, story) in out.processes.iter().zip(&sim.stories) {
                tick.stacks.extend(super::simstack::due(
                    *story,
                    p.pid,
                    gpu,
                    elapsed_ms,
                    self.interval_ms,
                    t_ms,
                ));
            }
        }
        Ok(Sampled::Filled)
    }
    fn virtual_time(&self) -> bool {
        true
    }
    fn start_earlier(&mut self, span: std::time::Duration) {
        let back = span.as_millis() as u64;
        self.start_ms = self.start_ms.saturating_sub(back);
        for h in self
            .sims
            .iter_mut()
            .flat_map(|s| s.processes.iter_mut())
            .filter_map(|p| p.host.as_mut())
        {
            h.started_ms = h.started_ms.map(|t| t.saturating_sub(back));
        }
    }
    fn label(&self) -> String {
        self.label.clone()
    }
}
