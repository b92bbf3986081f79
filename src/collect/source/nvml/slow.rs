//! The slow thread: NVML's calls that take more than microseconds (GPM, process lists,
//! memory, links, health, the energy counter), read in rounds once a second, some only every
//! few rounds, and handed to the fast tick.

use std::collections::HashMap;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use nvml_wrapper::enum_wrappers::device::{EccCounter, MemoryError, PcieUtilCounter};
use nvml_wrapper::enum_wrappers::nv_link::ErrorCounter;
use nvml_wrapper::enums::device::{SampleValue, UsedGpuMemory};
use nvml_wrapper::enums::gpm::GpmMetricId;
use nvml_wrapper::error::NvmlError;
use nvml_wrapper::gpm::GpmSample;
use nvml_wrapper::struct_wrappers::device::ProcessUtilizationSample;
use nvml_wrapper::structs::device::FieldId;
use nvml_wrapper::{Device, Nvml};

use super::ask::{
    ListWatch, Unsupported, ENERGY_EVERY, HEALTH_EVERY, LINK_WIDTH_EVERY, PROC_UTIL_EVERY,
};
use super::{is_gone, read, settle, timed, w};
use crate::model::health::count;
use crate::model::{DeviceInfo, GpmMetrics, Health, ProcessSample};
use crate::source::CallTimes;

/// Values read on the slow thread, copied into each fast tick.
#[derive(Debug, Default, Clone)]
pub(super) struct SlowReading {
    pub(super) energy_power_w: Option<f32>,
    pub(super) energy_mj: Option<u64>,
    pub(super) health: Health,
    pub(super) power_limit_w: Option<f32>,
    pub(super) gpm: GpmMetrics,
    pub(super) pcie_tx_kib_s: Option<f32>,
    pub(super) pcie_rx_kib_s: Option<f32>,
    // Measured on an H200, memory_info and the link width each took up to 13 ms when they met
    // a slow call in the driver: they change slowly, so they live here, off the fast tick.
    pub(super) mem_used_bytes: Option<u64>,
    pub(super) pcie_gen: Option<u32>,
    pub(super) pcie_width: Option<u32>,
    pub(super) processes: Vec<ProcessSample>,
}

/// The slow thread's latest readings and a round counter, so the fast tick copies the process
/// lists only when they are new (once a second, not every tick).
pub(super) type Shared = Arc<Mutex<(u64, Vec<SlowReading>)>>;

/// The GPM metrics read each slow round. `GraphicsUtil` is left out on purpose: measured on an
/// H200 it alone cost 745 µs of CPU per `gpm_metrics_get` (every other metric ~1 µs), and it
/// says what `utilization_rates().gpu` already says (time with a kernel resident).
pub(super) const GPM_IDS: [GpmMetricId; 9] = [
    GpmMetricId::SmUtil,
    GpmMetricId::SmOccupancy,
    GpmMetricId::AnyTensorUtil,
    GpmMetricId::DramBwUtil,
    GpmMetricId::Fp16Util,
    GpmMetricId::Fp32Util,
    GpmMetricId::Fp64Util,
    GpmMetricId::PcieTxPerSec,
    GpmMetricId::PcieRxPerSec,
];

/// `NVML_FI_DEV_REMAPPED_COR`, `_UNC`, `_PENDING`, `_FAILURE`.
pub(super) const REMAP_FIELDS: [FieldId; 4] =
    [FieldId(142), FieldId(143), FieldId(144), FieldId(145)];
/// The four ECC counters, each under its own name, so that one NVML does not support leaves
/// the others asked.
const ECC: [(&str, MemoryError, EccCounter); 4] = [
    (
        "total_ecc_errors(corrected, volatile)",
        MemoryError::Corrected,
        EccCounter::Volatile,
    ),
    (
        "total_ecc_errors(uncorrected, volatile)",
        MemoryError::Uncorrected,
        EccCounter::Volatile,
    ),
    (
        "total_ecc_errors(corrected, aggregate)",
        MemoryError::Corrected,
        EccCounter::Aggregate,
    ),
    (
        "total_ecc_errors(uncorrected, aggregate)",
        MemoryError::Uncorrected,
        EccCounter::Aggregate,
    ),
];
/// `NVML_NVLINK_MAX_LINKS` as of CUDA 12/13.
pub(super) const MAX_NVLINKS: u32 = 18;

/// State the slow thread keeps per device between its rounds.
pub(super) struct SlowDevice {
    device: Device<'static>,
    /// A MIG instance's GPU and GPU instance id: GPM is sampled through the GPU.
    mig: Option<(Device<'static>, u32)>,
    gpm_supported: bool,
    prev_gpm: Option<GpmSample<'static>>,
    prev_energy: Option<(u64, Instant)>,
    last_proc_ts: u64,
    /// Rounds read so far; the slowest calls run only every few rounds.
    round: u64,
    /// The latest values, kept between the rounds that skip a call.
    last: SlowReading,
    /// pid -> (SM %, memory %) from the last per-process utilization read.
    proc_util: HashMap<u32, (Option<f32>, Option<f32>)>,
    /// `NVLink` links this GPU has; 0 where NVML has none to report (learned on first read).
    nvlinks: Option<u32>,
    /// When the process list is read again.
    list_watch: ListWatch,
    /// The calls this device answered `NotSupported`.
    unsupported: Unsupported,
    /// Its last round found it gone (lost, reset required, driver unloaded).
    gone: bool,
}

pub(super) fn spawn_slow_thread(
    nvml: &'static Nvml,
    infos: &[DeviceInfo],
    (shared, times): (Shared, Arc<Mutex<CallTimes>>),
    stop: mpsc::Receiver<()>,
    every: Duration,
) -> std::io::Result<JoinHandle<()>> {
    let mut devs: Vec<SlowDevice> = infos
        .iter()
        .filter_map(|i| {
            let (device, mig) = match &i.mig {
                // NVML takes a MIG device's UUID as it takes a GPU's.
                Some(m) => (
                    nvml.device_by_uuid(i.uuid.as_str()).ok()?,
                    Some((nvml.device_by_index(m.parent).ok()?, m.gpu_instance)),
                ),
                None => (nvml.device_by_index(i.index).ok()?, None),
            };
            Some((device, mig, i.gpm_supported))
        })
        .map(|(device, mig, gpm_supported)| SlowDevice {
            device,
            mig,
            gpm_supported,
            prev_gpm: None,
            prev_energy: None,
            last_proc_ts: 0,
            round: 0,
            last: SlowReading::default(),
            proc_util: HashMap::new(),
            nvlinks: None,
            list_watch: ListWatch::default(),
            unsupported: Unsupported::default(),
            gone: false,
        })
        .collect();
    std::thread::Builder::new()
        .name("gpuwatch-nvml-slow".into())
        .spawn(move || {
            loop {
                let started = Instant::now();
                let readings: Vec<SlowReading> = match times.lock() {
                    Ok(mut t) => devs.iter_mut().map(|d| d.read(nvml, &mut t)).collect(),
                    Err(_) => return,
                };
                if let Ok(mut g) = shared.lock() {
                    g.0 += 1;
                    g.1 = readings;
                }
                // Sleeps until the next round, or returns at once when the source is dropped.
                let wait = every.saturating_sub(started.elapsed());
                if stop.recv_timeout(wait) != Err(RecvTimeoutError::Timeout) {
                    return;
                }
            }
        })
}

impl SlowDevice {
    fn read(&mut self, nvml: &'static Nvml, t: &mut CallTimes) -> SlowReading {
        let mut lost = None;
        let round = self.round;
        self.round += 1;
        let d = &self.device;
        let mem = timed(t, "memory_info", || d.memory_info());
        if mem.as_ref().is_err_and(is_gone) {
            // A GPU that fell off the bus answers every call so, and on a real driver each can
            // stall: the fast tick records it lost, and its round is this one call until it
            // answers again.
            self.went_away();
            return self.last.clone();
        }
        if std::mem::take(&mut self.gone) {
            // Back (after a reset, perhaps): what it supports is learned again.
            self.unsupported = Unsupported::default();
        }
        let mem = settle("memory_info", &mut lost, mem).map(|m| m.used);
        self.last.mem_used_bytes = mem;
        if self.list_watch.due(mem, self.last.processes.len()) {
            // A list that could not be read keeps the last one, and is asked for again next
            // round: an empty list would drop the GPU's processes for up to five rounds.
            let read = self.processes(t, &mut lost, round.is_multiple_of(PROC_UTIL_EVERY));
            self.list_watch.failed = read.is_none();
            if let Some(procs) = read {
                self.last.processes = procs;
            }
        }
        if self.mig.is_some() {
            // Limits, links, energy and health are the GPU's: read there, not once per
            // instance to be told NotSupported.
            if self.gpm_supported {
                let mut r = std::mem::take(&mut self.last);
                self.read_gpm(nvml, t, &mut r);
                self.last = r;
            }
            return self.last.clone();
        }
        self.read_board(t, &mut lost, round);
        if round.is_multiple_of(HEALTH_EVERY) {
            let mut h = std::mem::take(&mut self.last.health);
            self.read_health(t, &mut lost, &mut h);
            self.last.health = h;
        }
        self.read_traffic(nvml, t, &mut lost);
        self.last.clone()
    }

    /// A lost GPU's round readings become gaps, so that none is shown stale once it answers
    /// again; its process list stays (a list that cannot be read keeps the last) and is read
    /// again in the first round it answers.
    fn went_away(&mut self) {
        self.gone = true;
        self.list_watch.failed = true;
        let r = &mut self.last;
        (r.mem_used_bytes, r.power_limit_w, r.pcie_gen, r.pcie_width) = (None, None, None, None);
        (r.pcie_tx_kib_s, r.pcie_rx_kib_s) = (None, None);
        r.gpm = GpmMetrics::default();
    }

    /// The board's limit, `PCIe` link and energy counter (the link width and the energy less
    /// often: they change rarely, and the energy read can stall the fast tick's calls).
    fn read_board(&mut self, t: &mut CallTimes, lost: &mut Option<String>, round: u64) {
        let (d, r, ask) = (&self.device, &mut self.last, &mut self.unsupported);
        r.power_limit_w = ask
            .read(t, "enforced_power_limit", lost, || d.enforced_power_limit())
            .map(w);
        r.pcie_gen = ask.read(t, "current_pcie_link_gen", lost, || {
            d.current_pcie_link_gen()
        });
        if round.is_multiple_of(LINK_WIDTH_EVERY) {
            r.pcie_width = ask.read(t, "current_pcie_link_width", lost, || {
                d.current_pcie_link_width()
            });
        }
        if round.is_multiple_of(ENERGY_EVERY) {
            if let Some(mj) = ask.read(t, "total_energy_consumption", lost, || {
                d.total_energy_consumption()
            }) {
                let now = Instant::now();
                r.energy_power_w = self.prev_energy.and_then(|(prev, at)| {
                    let secs = now.duration_since(at).as_secs_f32();
                    (secs > 0.05 && mj >= prev).then(|| (mj - prev) as f32 / 1000.0 / secs)
                });
                self.prev_energy = Some((mj, now));
                r.energy_mj = Some(mj);
            }
        }
    }

    /// GPM activity where the GPU has it; otherwise the `PCIe` throughput counters.
    fn read_traffic(&mut self, nvml: &'static Nvml, t: &mut CallTimes, lost: &mut Option<String>) {
        if self.gpm_supported {
            let mut r = std::mem::take(&mut self.last);
            self.read_gpm(nvml, t, &mut r);
            self.last = r;
            return;
        }
        // Pre-Hopper only: this call blocks for its 20 ms window, which is why it lives here.
        let (d, ask) = (&self.device, &mut self.unsupported);
        self.last.pcie_tx_kib_s = ask
            .read(t, "pcie_throughput(send)", lost, || {
                d.pcie_throughput(PcieUtilCounter::Send)
            })
            .map(|v| v as f32);
        self.last.pcie_rx_kib_s = ask
            .read(t, "pcie_throughput(receive)", lost, || {
                d.pcie_throughput(PcieUtilCounter::Receive)
            })
            .map(|v| v as f32);
    }

    /// The processes holding a context, with their per-process utilization: read fresh when
    /// `refresh_util`, otherwise the values from the last read are kept. `None` when the list
    /// of compute processes could not be read.
    fn processes(
        &mut self,
        t: &mut CallTimes,
        lost: &mut Option<String>,
        refresh_util: bool,
    ) -> Option<Vec<ProcessSample>> {
        let (d, ask) = (&self.device, &mut self.unsupported);
        let mut procs: Vec<ProcessSample> = Vec::new();
        let compute = ask.read(t, "running_compute_processes", lost, || {
            d.running_compute_processes()
        })?;
        let graphics = ask
            .read(t, "running_graphics_processes", lost, || {
                d.running_graphics_processes()
            })
            .unwrap_or_default();
        for p in compute.into_iter().chain(graphics) {
            if procs.iter().any(|q| q.pid == p.pid) {
                continue;
            }
            let gpu_mem_bytes = match p.used_gpu_memory {
                UsedGpuMemory::Used(b) => Some(b),
                UsedGpuMemory::Unavailable => None,
            };
            procs.push(ProcessSample {
                pid: p.pid,
                gpu_mem_bytes,
                ..ProcessSample::default()
            });
        }
        // One process: its utilization is the GPU's, copied in on the fast tick.
        if refresh_util && procs.len() > 1 {
            let started = Instant::now();
            let stats = d.process_utilization_stats(self.last_proc_ts);
            t.record("process_utilization_stats", started);
            match stats {
                Ok(samples) => {
                    if let Some(ts) = samples.iter().map(|s| s.timestamp).max() {
                        self.last_proc_ts = self.last_proc_ts.max(ts);
                    }
                    util_by_pid(&procs, &samples, &mut self.proc_util);
                }
                // "No sample since lastSeenTimeStamp" (nvml-wrapper#56): nothing ran.
                Err(NvmlError::NotFound) => util_by_pid(&procs, &[], &mut self.proc_util),
                // Unsupported (MIG) or failed: unknown, a gap.
                Err(_) => self.proc_util.clear(),
            }
        } else if procs.len() <= 1 {
            self.proc_util.clear();
        }
        for p in &mut procs {
            if let Some((sm, mem)) = self.proc_util.get(&p.pid) {
                (p.sm_pct, p.mem_pct) = (*sm, *mem);
            }
        }
        Some(procs)
    }

    /// ECC counts, remapped rows, `PCIe` replays and `NVLink`; each unsupported one stays `None`.
    fn read_health(&mut self, t: &mut CallTimes, lost: &mut Option<String>, h: &mut Health) {
        let (d, ask) = (&self.device, &mut self.unsupported);
        let [cv, uv, ca, ua] = ECC.map(|(call, kind, counter)| {
            ask.read(t, call, lost, || d.total_ecc_errors(kind, counter))
                .map(count)
        });
        (h.ecc_corrected_volatile, h.ecc_uncorrected_volatile) = (cv, uv);
        (h.ecc_corrected_aggregate, h.ecc_uncorrected_aggregate) = (ca, ua);
        h.pcie_replays = ask.read(t, "pcie_replay_counter", lost, || d.pcie_replay_counter());
        // nvml-wrapper has no call for the row remapper: its four field values say it all.
        let fields = ask.read(t, "field_values(remap)", lost, || {
            d.field_values_for(&REMAP_FIELDS)
        });
        let value = |i: usize| -> Option<u64> {
            match fields
                .as_ref()?
                .get(i)?
                .as_ref()
                .ok()?
                .value
                .as_ref()
                .ok()?
            {
                SampleValue::U32(v) => Some(u64::from(*v)),
                SampleValue::U64(v) => Some(*v),
                SampleValue::I64(v) => u64::try_from(*v).ok(),
                SampleValue::F64(_) => None,
            }
        };
        h.remapped_rows_corrected = value(0).map(count);
        h.remapped_rows_uncorrected = value(1).map(count);
        h.remap_pending = value(2).map(|v| v != 0);
        h.remap_failure = value(3).map(|v| v != 0);
        self.read_nvlink(t, h);
    }

    /// Links up and their error counters, over the links the GPU has. A GPU without
    /// `NVLink` (or a VM that hides it, as the lent H200's does) is asked once.
    fn read_nvlink(&mut self, t: &mut CallTimes, h: &mut Health) {
        let d = &self.device;
        let links = *self.nvlinks.get_or_insert_with(|| {
            (0..MAX_NVLINKS)
                .take_while(|&l| d.link_wrapper_for(l).is_active().is_ok())
                .count() as u32
        });
        if links == 0 {
            return;
        }
        let mut active = 0u8;
        let mut errors: Option<u64> = None;
        let mut none = None;
        for l in 0..links {
            let link = d.link_wrapper_for(l);
            if read(t, "nvlink_state", &mut none, || link.is_active()) == Some(true) {
                active += 1;
            }
            for c in [
                ErrorCounter::DlCrcFlit,
                ErrorCounter::DlCrcData,
                ErrorCounter::DlReplay,
                ErrorCounter::DlRecovery,
            ] {
                if let Some(n) = read(t, "nvlink_error_counter", &mut none, || {
                    link.error_counter(c)
                }) {
                    errors = Some(errors.unwrap_or(0).saturating_add(n));
                }
            }
        }
        h.nvlink_links = u8::try_from(links).ok();
        h.nvlink_active = Some(active);
        h.nvlink_errors = errors.map(count);
    }

    /// GPM needs two samples more than 100 ms apart; the slow cadence guarantees that.
    fn read_gpm(&mut self, nvml: &'static Nvml, t: &mut CallTimes, r: &mut SlowReading) {
        let started = Instant::now();
        let sample = match &self.mig {
            Some((gpu, gi)) => gpu.gpm_mig_sample(*gi),
            None => self.device.gpm_sample(),
        };
        t.record("gpm_sample", started);
        let Ok(sample) = sample else {
            return;
        };
        if let Some(prev) = &self.prev_gpm {
            let started = Instant::now();
            let got = nvml_wrapper::gpm::gpm_metrics_get(nvml, prev, &sample, &GPM_IDS);
            t.record("gpm_metrics_get", started);
            if let Ok(values) = got {
                let v: Vec<Option<f32>> = values
                    .into_iter()
                    .map(|x| x.ok().map(|m| m.value as f32))
                    .collect();
                r.gpm = GpmMetrics {
                    sm_active_pct: v[0],
                    sm_occupancy_pct: v[1],
                    tensor_active_pct: v[2],
                    dram_bw_pct: v[3],
                    engine_active_pct: None,
                    fp16_active_pct: v[4],
                    fp32_active_pct: v[5],
                    fp64_active_pct: v[6],
                };
                // NVML's header gives GPM PCIe rates in MiB/s (the wrapper's doc says bytes).
                r.pcie_tx_kib_s = v[7].map(|m| m * 1024.0);
                r.pcie_rx_kib_s = v[8].map(|m| m * 1024.0);
            }
        }
        self.prev_gpm = Some(sample);
    }
}

/// (SM %, memory %) of each listed process from NVML's per-process samples, newest per PID.
/// NVML returns a sample only for processes "that had some non-zero utilization during the last
/// sample period", so a listed process without one ran nothing: 0, not unknown (before this, a
/// process that went idle kept its last busy value). Samples of unlisted PIDs and values over
/// 100 are driver garbage (nvtop#110) and are dropped.
fn util_by_pid(
    procs: &[ProcessSample],
    samples: &[ProcessUtilizationSample],
    out: &mut HashMap<u32, (Option<f32>, Option<f32>)>,
) {
    out.clear();
    out.extend(procs.iter().map(|p| (p.pid, (Some(0.0), Some(0.0)))));
    let mut newest: Vec<(u32, u64)> = Vec::with_capacity(samples.len());
    for s in samples {
        if !out.contains_key(&s.pid) {
            continue;
        }
        match newest.iter_mut().find(|(pid, _)| *pid == s.pid) {
            Some((_, ts)) if *ts > s.timestamp => continue,
            Some((_, ts)) => *ts = s.timestamp,
            None => newest.push((s.pid, s.timestamp)),
        }
        let pct = |v: u32| (v <= 100).then_some(v as f32);
        out.insert(s.pid, (pct(s.sm_util), pct(s.mem_util)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(pid: u32, timestamp: u64, sm: u32, mem: u32) -> ProcessUtilizationSample {
        ProcessUtilizationSample {
            pid,
            timestamp,
            sm_util: sm,
            mem_util: mem,
            enc_util: 0,
            dec_util: 0,
        }
    }

    fn listed(pids: &[u32]) -> Vec<ProcessSample> {
        pids.iter()
            .map(|&pid| ProcessSample {
                pid,
                ..ProcessSample::default()
            })
            .collect()
    }

    #[test]
    fn a_listed_process_without_a_sample_ran_nothing_and_reads_zero() {
        // Seen on the H200: two processes, NVML sampled only the busy one.
        let mut out = HashMap::new();
        util_by_pid(&listed(&[438, 439]), &[sample(438, 10, 95, 21)], &mut out);
        assert_eq!(out[&438], (Some(95.0), Some(21.0)));
        assert_eq!(out[&439], (Some(0.0), Some(0.0)));
        // The next read has no sample for 438 either: it went idle, and must not keep 95 %.
        util_by_pid(&listed(&[438, 439]), &[], &mut out);
        assert_eq!(out[&438], (Some(0.0), Some(0.0)));
    }

    #[test]
    fn the_newest_sample_wins_and_garbage_is_dropped() {
        let mut out = HashMap::new();
        let samples = [
            sample(7, 30, 40, 5),
            sample(7, 10, 90, 9),  // older, comes later in the buffer
            sample(8, 20, 250, 3), // over 100: driver garbage
            sample(99, 20, 50, 5), // not in the running list
        ];
        util_by_pid(&listed(&[7, 8]), &samples, &mut out);
        assert_eq!(out[&7], (Some(40.0), Some(5.0)));
        assert_eq!(out[&8], (None, Some(3.0)));
        assert!(!out.contains_key(&99));
        assert_eq!(out.len(), 2);
    }
}
