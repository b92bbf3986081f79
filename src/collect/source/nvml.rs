//! Real GPUs through NVML. The only file that touches nvml-wrapper.
//!
//! One `Nvml` handle lives for the whole run (re-initialising per poll holds the GPU in a high
//! power state). The fast tick reads only calls that take microseconds; the slow ones (energy
//! counter 3.5 ms of CPU, per-process utilization 1.4 ms, legacy `PCIe` throughput ~20 ms of
//! waiting, measured on an H200; GPM, memory and link state, which stalled up to 13 ms behind
//! them) run on a second thread every `slow_interval`, the costliest of them only every few
//! rounds, and the fast tick copies their latest values. An NVML error that means the GPU is
//! gone marks that device lost; the others go on.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::path::Path;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use nvml_wrapper::bitmasks::event::EventTypes;
use nvml_wrapper::enum_wrappers::device::{
    Clock, EccCounter, MemoryError, PcieUtilCounter, TemperatureSensor, TemperatureThreshold,
};
use nvml_wrapper::enum_wrappers::nv_link::ErrorCounter;
use nvml_wrapper::enums::device::SampleValue;
use nvml_wrapper::enums::device::UsedGpuMemory;
use nvml_wrapper::enums::event::XidError;
use nvml_wrapper::enums::gpm::GpmMetricId;
use nvml_wrapper::error::NvmlError;
use nvml_wrapper::gpm::GpmSample;
use nvml_wrapper::struct_wrappers::device::ProcessUtilizationSample;
use nvml_wrapper::structs::device::FieldId;
use nvml_wrapper::{Device, Nvml};

use crate::model::health::count;
use crate::model::{
    now_ms, DeviceInfo, DeviceReading, DeviceSample, DeviceStatus, GpmMetrics, Health,
    ProcessSample, SystemInfo, Tick,
};
use crate::source::{CallTimes, Sampled, Source, SourceError};

/// Why NVML could not be started, in words a user can act on.
#[derive(Debug, thiserror::Error)]
pub enum NvmlInitError {
    #[error(
        "could not load libnvidia-ml.so.1 ({0}).\n\
         This library comes with the NVIDIA driver: this machine has no NVIDIA driver, or the \
         library is not on the loader path (WSL keeps it in /usr/lib/wsl/lib; pass --nvml-lib PATH).\n\
         In a container the NVIDIA container toolkit mounts it: `docker run --gpus all`, or \
         NVIDIA_DRIVER_CAPABILITIES=utility with the nvidia runtime.\n\
         Without a GPU, try `gpuwatch --demo` or `gpuwatch replay FILE`."
    )]
    LibraryMissing(String),
    #[error(
        "could not load {path}, given with --nvml-lib ({why}).\n\
         Point --nvml-lib at the driver's libnvidia-ml.so.1 (`ldconfig -p | grep libnvidia-ml` \
         shows where it is), or leave it out to use the loader path.\n\
         Without a GPU, try `gpuwatch --demo` or `gpuwatch replay FILE`."
    )]
    LibraryNotAt { path: String, why: String },
    #[error(
        "the NVIDIA driver is installed but its kernel module is not loaded.\n\
         Load it (`sudo modprobe nvidia`) or check `dmesg` for why it failed; meanwhile try `gpuwatch --demo`."
    )]
    DriverNotLoaded,
    #[error(
        "the NVIDIA driver's library and kernel module have different versions \
         (usually after a driver upgrade without a reboot).\nReboot, or reload the nvidia kernel modules."
    )]
    VersionMismatch,
    #[error("NVML refused access ({0}). Check the permissions of /dev/nvidia*.")]
    NoPermission(String),
    #[error("NVML found no NVIDIA GPU on this machine. Try `gpuwatch --demo` or `gpuwatch replay FILE`.")]
    NoGpus,
    #[error("NVML failed to start: {0}")]
    Other(String),
}

impl From<NvmlError> for NvmlInitError {
    fn from(e: NvmlError) -> Self {
        match e {
            NvmlError::LibloadingError(inner) => NvmlInitError::LibraryMissing(inner.to_string()),
            NvmlError::LibraryNotFound => NvmlInitError::LibraryMissing("library not found".into()),
            NvmlError::DriverNotLoaded => NvmlInitError::DriverNotLoaded,
            NvmlError::LibRmVersionMismatch => NvmlInitError::VersionMismatch,
            NvmlError::NoPermission => NvmlInitError::NoPermission("no permission".into()),
            other => NvmlInitError::Other(other.to_string()),
        }
    }
}

/// Values read on the slow thread, copied into each fast tick.
#[derive(Debug, Default, Clone)]
struct SlowReading {
    energy_power_w: Option<f32>,
    energy_mj: Option<u64>,
    health: Health,
    power_limit_w: Option<f32>,
    gpm: GpmMetrics,
    pcie_tx_kib_s: Option<f32>,
    pcie_rx_kib_s: Option<f32>,
    // Measured on an H200, memory_info and the link width each took up to 13 ms when they met
    // a slow call in the driver: they change slowly, so they live here, off the fast tick.
    mem_used_bytes: Option<u64>,
    pcie_gen: Option<u32>,
    pcie_width: Option<u32>,
    processes: Vec<ProcessSample>,
}

/// The slow thread's latest readings and a round counter, so the fast tick copies the process
/// lists only when they are new (once a second, not every tick).
type Shared = Arc<Mutex<(u64, Vec<SlowReading>)>>;

pub struct NvmlSource {
    nvml: &'static Nvml,
    interval: Duration,
    devices: Vec<Device<'static>>,
    infos: Vec<DeviceInfo>,
    system: SystemInfo,
    has_fan: Vec<bool>,
    /// For a MIG instance, the position of its GPU (watched with it): the instance has no fast
    /// readings of its own and is lost when its GPU is.
    parents: Vec<Option<usize>>,
    slow: Shared,
    slow_round_seen: u64,
    fast_times: CallTimes,
    slow_times: Arc<Mutex<CallTimes>>,
    /// Dropping it tells the slow thread to stop.
    stop: Option<mpsc::Sender<()>>,
    /// Xid and ECC events from the event thread, and its stop flag.
    events: super::events::Inbox,
    events_stop: Arc<std::sync::atomic::AtomicBool>,
    slow_thread: Option<JoinHandle<()>>,
}

/// Errors that mean the device is gone rather than that a metric is unsupported.
fn is_lost(e: &NvmlError) -> bool {
    matches!(
        e,
        NvmlError::GpuLost
            | NvmlError::ResetRequired
            | NvmlError::Unknown
            | NvmlError::Uninitialized
            | NvmlError::DriverNotLoaded
    )
}

/// Reads one metric: `None` when unsupported, and notes a lost device.
fn read<T>(
    times: &mut CallTimes,
    call: &'static str,
    lost: &mut Option<String>,
    f: impl FnOnce() -> Result<T, NvmlError>,
) -> Option<T> {
    let started = Instant::now();
    let r = f();
    times.record(call, started);
    match r {
        Ok(v) => Some(v),
        Err(e) => {
            if is_lost(&e) && lost.is_none() {
                *lost = Some(format!("{call}: {e}"));
            }
            None
        }
    }
}

fn w(mw: u32) -> f32 {
    mw as f32 / 1000.0
}

/// NVML started once for the whole run. Leaked on purpose: one handle for the life of the
/// program, borrowed by every `Device`.
fn init(lib_path: Option<&Path>) -> Result<&'static Nvml, NvmlInitError> {
    let mut builder = Nvml::builder();
    if let Some(p) = lib_path {
        builder.lib_path(OsStr::new(p.as_os_str()));
    }
    let started = builder
        .init()
        .map_err(|e| match (NvmlInitError::from(e), lib_path) {
            // The user's own path failed: advice to pass one would send them in a circle.
            (NvmlInitError::LibraryMissing(why), Some(p)) => NvmlInitError::LibraryNotAt {
                path: p.display().to_string(),
                why,
            },
            (other, _) => other,
        })?;
    Ok(Box::leak(Box::new(started)))
}

/// Every GPU and MIG instance, then the ones `select` asks for. They keep their NVML index:
/// GPU 2 is GPU 2 whatever is left out.
fn selected_devices(
    nvml: &'static Nvml,
    select: &super::select::Selection,
) -> Result<(Vec<Device<'static>>, Vec<DeviceInfo>), super::SourceError> {
    let count = nvml.device_count().map_err(NvmlInitError::from)?;
    if count == 0 {
        return Err(NvmlInitError::NoGpus.into());
    }
    let all: Vec<Device<'static>> = (0..count)
        .map(|i| nvml.device_by_index(i))
        .collect::<Result<_, _>>()
        .map_err(NvmlInitError::from)?;
    let all_infos: Vec<DeviceInfo> = all
        .iter()
        .enumerate()
        .map(|(i, d)| device_info(i as u32, d))
        .collect();
    let (all, all_infos) = with_mig_instances(nvml, all, all_infos);
    let keep = select.pick(&all_infos)?;
    Ok(all
        .into_iter()
        .zip(all_infos)
        .enumerate()
        .filter(|(i, _)| keep.contains(i))
        .map(|(_, pair)| pair)
        .unzip())
}

impl NvmlSource {
    /// Starts NVML once for the whole run and the slow-call thread. The fast calls are read
    /// every `interval`; the slow ones every `interval` but at most once a second.
    pub fn open(
        lib_path: Option<&Path>,
        interval: Duration,
        select: &super::select::Selection,
    ) -> Result<Self, super::SourceError> {
        let slow_interval = interval.max(Duration::from_secs(1));
        let nvml = init(lib_path)?;
        let (devices, infos) = selected_devices(nvml, select)?;
        let has_fan = devices
            .iter()
            .zip(&infos)
            .map(|(d, i)| i.mig.is_none() && d.num_fans().is_ok_and(|n| n > 0))
            .collect();
        let parents = parent_positions(&infos);
        let slow: Shared = Arc::new(Mutex::new((0, vec![SlowReading::default(); devices.len()])));
        let slow_times = Arc::new(Mutex::new(CallTimes::default()));
        let (stop, stop_rx) = mpsc::channel();
        let slow_thread = spawn_slow_thread(
            nvml,
            &infos,
            (slow.clone(), slow_times.clone()),
            stop_rx,
            slow_interval,
        )
        .map_err(|e| NvmlInitError::Other(format!("could not start the NVML thread: {e}")))?;
        let (events, events_stop) = start_events(nvml, &devices, &infos)?;
        Ok(NvmlSource {
            nvml,
            interval,
            devices,
            system: system_info(nvml),
            infos,
            has_fan,
            parents,
            slow,
            slow_round_seen: 0,
            fast_times: CallTimes::default(),
            slow_times,
            stop: Some(stop),
            events,
            events_stop,
            slow_thread: Some(slow_thread),
        })
    }

    fn read_fast(&mut self, i: usize, t_ms: u64, out: &mut DeviceReading) {
        if self.infos[i].mig.is_some() {
            // NVML answers utilization, power, temperature and clocks for the GPU only
            // (NotSupported on an instance): gaps, without a call each tick to learn it again.
            out.sample = DeviceSample {
                t_ms,
                ..DeviceSample::default()
            };
            out.status = DeviceStatus::Ok;
            return;
        }
        let d = &self.devices[i];
        let t = &mut self.fast_times;
        let mut lost = None;
        let util = read(t, "utilization_rates", &mut lost, || d.utilization_rates());
        let s = &mut out.sample;
        s.t_ms = t_ms;
        s.util_gpu_pct = util.as_ref().map(|u| u.gpu as f32);
        s.util_mem_pct = util.as_ref().map(|u| u.memory as f32);
        s.power_w = read(t, "power_usage", &mut lost, || d.power_usage()).map(w);
        s.temp_c = read(t, "temperature", &mut lost, || {
            d.temperature(TemperatureSensor::Gpu)
        })
        .map(|c| c as f32);
        s.sm_clock_mhz = read(t, "clock_info(SM)", &mut lost, || d.clock_info(Clock::SM));
        s.mem_clock_mhz = read(t, "clock_info(Memory)", &mut lost, || {
            d.clock_info(Clock::Memory)
        });
        s.fan_pct = if self.has_fan[i] {
            read(t, "fan_speed", &mut lost, || d.fan_speed(0)).map(|f| f as f32)
        } else {
            None
        };
        s.pstate = read(t, "performance_state", &mut lost, || d.performance_state())
            .map(|p| p.as_c() as u8);
        s.clock_events = read(t, "current_throttle_reasons", &mut lost, || {
            d.current_throttle_reasons()
        })
        .map(|r| r.bits());
        out.status = match lost {
            Some(reason) => DeviceStatus::Lost { reason },
            None => DeviceStatus::Ok,
        };
    }
}

impl Drop for NvmlSource {
    fn drop(&mut self) {
        self.events_stop
            .store(true, std::sync::atomic::Ordering::Relaxed);
        self.stop.take();
        if let Some(t) = self.slow_thread.take() {
            let _ = t.join();
        }
    }
}

impl Source for NvmlSource {
    fn system(&self) -> &SystemInfo {
        &self.system
    }
    fn interval(&self) -> Duration {
        self.interval
    }
    fn devices(&self) -> &[DeviceInfo] {
        &self.infos
    }
    fn sample(&mut self, tick: &mut Tick) -> Result<Sampled, SourceError> {
        let t_ms = now_ms();
        tick.t_ms = t_ms;
        tick.devices
            .resize_with(self.devices.len(), DeviceReading::default);
        super::events::take(&self.events, &mut tick.events);
        for i in 0..self.devices.len() {
            self.read_fast(i, t_ms, &mut tick.devices[i]);
            if let Some(p) = self.parents[i] {
                if tick.devices[p].status != DeviceStatus::Ok {
                    tick.devices[i].status = tick.devices[p].status.clone();
                }
            }
        }
        // Copy the slow thread's latest values; the lock is held for a few copies only.
        if let Ok(guard) = self.slow.lock() {
            let new_round = guard.0 != self.slow_round_seen;
            self.slow_round_seen = guard.0;
            for (out, slow) in tick.devices.iter_mut().zip(guard.1.iter()) {
                if out.status != DeviceStatus::Ok {
                    out.sample = DeviceSample {
                        t_ms,
                        ..DeviceSample::default()
                    };
                    out.processes.clear();
                    continue;
                }
                let s = &mut out.sample;
                s.energy_power_w = slow.energy_power_w;
                s.energy_mj = slow.energy_mj;
                s.health = slow.health;
                s.power_limit_w = slow.power_limit_w;
                s.gpm = slow.gpm;
                s.pcie_tx_kib_s = slow.pcie_tx_kib_s;
                s.pcie_rx_kib_s = slow.pcie_rx_kib_s;
                s.mem_used_bytes = slow.mem_used_bytes;
                s.pcie_gen = slow.pcie_gen;
                s.pcie_width = slow.pcie_width;
                if new_round {
                    out.processes.clone_from(&slow.processes);
                    device_util_to_process(&mut out.processes, s);
                }
            }
        }
        Ok(Sampled::Filled)
    }
    fn pids_are_local(&self) -> bool {
        true
    }
    fn pids_hold_the_gpu(&self) -> bool {
        true
    }
    fn call_times(&self) -> Option<CallTimes> {
        let mut all = self.fast_times.clone();
        if let Ok(g) = self.slow_times.lock() {
            all.by_call.extend(g.by_call.iter().cloned().map(|mut c| {
                c.slow = true;
                c
            }));
        }
        Some(all)
    }
    fn label(&self) -> String {
        let _ = self.nvml; // the handle stays alive with the source
        "NVML".into()
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

/// A GPU's only process ran every kernel on it, so its utilization is the GPU's own: NVML's
/// per-process call (1.4 ms of CPU on an H200) is skipped while a GPU has one process.
fn device_util_to_process(procs: &mut [ProcessSample], s: &DeviceSample) {
    if let [p] = procs {
        (p.sm_pct, p.mem_pct) = (s.util_gpu_pct, s.util_mem_pct);
    }
}

fn system_info(nvml: &Nvml) -> SystemInfo {
    SystemInfo {
        host: crate::host::hostname(),
        driver_version: nvml.sys_driver_version().ok(),
        nvml_version: nvml.sys_nvml_version().ok(),
        cuda_driver_version: nvml.sys_cuda_driver_version().ok().map(|v| {
            format!(
                "{}.{}",
                nvml_wrapper::cuda_driver_version_major(v),
                nvml_wrapper::cuda_driver_version_minor(v)
            )
        }),
    }
}

fn device_info(index: u32, d: &Device) -> DeviceInfo {
    let constraints = d.power_management_limit_constraints().ok();
    DeviceInfo {
        index,
        uuid: d.uuid().unwrap_or_default(),
        name: d.name().unwrap_or_else(|_| "NVIDIA GPU".into()),
        pci_bus_id: d.pci_info().map(|p| p.bus_id).unwrap_or_default(),
        memory_total_bytes: d.memory_info().ok().map(|m| m.total),
        power_limit_default_w: d.power_management_limit_default().ok().map(w),
        power_limit_enforced_w: d.enforced_power_limit().ok().map(w),
        power_limit_min_w: constraints.as_ref().map(|c| w(c.min_limit)),
        power_limit_max_w: constraints.as_ref().map(|c| w(c.max_limit)),
        max_sm_clock_mhz: d.max_clock_info(Clock::SM).ok(),
        max_mem_clock_mhz: d.max_clock_info(Clock::Memory).ok(),
        temp_slowdown_c: d.temperature_threshold(TemperatureThreshold::Slowdown).ok(),
        pcie_max_gen: d.max_pcie_link_gen().ok(),
        pcie_max_width: d.max_pcie_link_width().ok(),
        persistence_mode: d.is_in_persistent_mode().ok(),
        mig_mode: d.mig_mode().ok().map(|m| m.current == 1),
        gpm_supported: d.gpm_support().unwrap_or(false),
        mig: None,
    }
}

/// The event thread, listening to the GPUs' Xid and ECC events. Without the event API (a VM
/// that hides it, an old driver) health still comes from the counters; `devices` says which
/// GPUs send events.
fn start_events(
    nvml: &'static Nvml,
    devices: &[Device<'static>],
    infos: &[DeviceInfo],
) -> Result<(super::events::Inbox, Arc<std::sync::atomic::AtomicBool>), NvmlInitError> {
    let events = super::events::Inbox::default();
    let events_stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    // The GPUs' events only: a MIG device's come with its GPU's.
    let gpus: Vec<&Device<'static>> = devices
        .iter()
        .zip(infos)
        .filter(|(_, i)| i.mig.is_none())
        .map(|(d, _)| d)
        .collect();
    if let Some(wait) = NvmlEvents::register(nvml, &gpus) {
        super::events::spawn(Box::new(wait), events.clone(), events_stop.clone()).map_err(|e| {
            NvmlInitError::Other(format!("could not start the NVML event thread: {e}"))
        })?;
    }
    Ok((events, events_stop))
}

/// For each device, the position of the GPU a MIG instance is part of, when it is watched.
fn parent_positions(infos: &[DeviceInfo]) -> Vec<Option<usize>> {
    infos
        .iter()
        .map(|i| {
            let parent = i.mig.as_ref()?.parent;
            infos
                .iter()
                .position(|p| p.mig.is_none() && p.index == parent)
        })
        .collect()
}

/// Every GPU followed by its MIG instances (the devices NVML hands out for a GPU in MIG mode,
/// one per compute instance), each instance a device of its own for the rest of gpuwatch.
fn with_mig_instances(
    nvml: &'static Nvml,
    gpus: Vec<Device<'static>>,
    infos: Vec<DeviceInfo>,
) -> (Vec<Device<'static>>, Vec<DeviceInfo>) {
    let mut devices = Vec::with_capacity(gpus.len());
    let mut out = Vec::with_capacity(infos.len());
    for (d, info) in gpus.into_iter().zip(infos) {
        let mut instances = Vec::new();
        if info.mig_mode == Some(true) {
            // Empty slots answer NotFound: only the instances created are listed.
            for slot in 0..d.mig_device_count().unwrap_or(0) {
                if let Ok(m) = d.mig_device_by_index(slot) {
                    instances.push((mig_device_info(nvml, &info, &m, slot), m));
                }
            }
        }
        devices.push(d);
        out.push(info);
        for (info, m) in instances {
            out.push(info);
            devices.push(m);
        }
    }
    (devices, out)
}

/// What a MIG device is: its GPU and compute instance, profile, memory and SMs. Power, clocks,
/// links and limits are its parent's, and stay gaps here.
fn mig_device_info(nvml: &Nvml, parent: &DeviceInfo, m: &Device, slot: u32) -> DeviceInfo {
    // Without the ids (an old driver), the slot keeps instances apart, if not named as
    // nvidia-smi names them.
    let gi = instance_id(nvml, m, InstanceKind::Gpu).unwrap_or(slot);
    let ci = instance_id(nvml, m, InstanceKind::Compute).unwrap_or(0);
    let name = m.name().unwrap_or_else(|_| format!("{} MIG", parent.name));
    // "NVIDIA H200 MIG 1g.18gb": the profile is the word after "MIG".
    let profile = name
        .split_once(" MIG ")
        .map_or_else(|| name.clone(), |(_, p)| p.trim().to_string());
    DeviceInfo {
        index: crate::model::mig_index(parent.index, gi, ci),
        uuid: m.uuid().unwrap_or_default(),
        name,
        pci_bus_id: parent.pci_bus_id.clone(),
        memory_total_bytes: m.memory_info().ok().map(|i| i.total),
        mig_mode: None,
        gpm_supported: parent.gpm_supported,
        mig: Some(crate::model::MigInfo {
            parent: parent.index,
            parent_uuid: parent.uuid.clone(),
            gpu_instance: gi,
            compute_instance: ci,
            profile,
            sm_count: m.attributes().ok().map(|a| a.multiprocessor_count),
        }),
        ..DeviceInfo::default()
    }
}

#[derive(Clone, Copy)]
enum InstanceKind {
    Gpu,
    Compute,
}

/// `nvmlDeviceGetGpuInstanceId` / `nvmlDeviceGetComputeInstanceId` of a MIG device, which
/// nvml-wrapper 0.13 does not wrap: called through the library it loaded.
#[allow(unsafe_code)]
fn instance_id(nvml: &Nvml, m: &Device, kind: InstanceKind) -> Option<u32> {
    let lib = nvml.lib();
    let call = match kind {
        InstanceKind::Gpu => lib.nvmlDeviceGetGpuInstanceId.as_ref().ok()?,
        InstanceKind::Compute => lib.nvmlDeviceGetComputeInstanceId.as_ref().ok()?,
    };
    let mut id: std::os::raw::c_uint = 0;
    // SAFETY: `m` is a live handle of this library (borrowed from `nvml`), and the call only
    // writes one unsigned int into `id`, which outlives it.
    let rc = unsafe { call(m.handle(), &raw mut id) };
    (rc == 0).then_some(id)
}

/// The GPM metrics read each slow round. `GraphicsUtil` is left out on purpose: measured on an
/// H200 it alone cost 745 µs of CPU per `gpm_metrics_get` (every other metric ~1 µs), and it
/// says what `utilization_rates().gpu` already says (time with a kernel resident).
const GPM_IDS: [GpmMetricId; 9] = [
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
const REMAP_FIELDS: [FieldId; 4] = [FieldId(142), FieldId(143), FieldId(144), FieldId(145)];
/// `NVML_NVLINK_MAX_LINKS` as of CUDA 12/13.
const MAX_NVLINKS: u32 = 18;

/// NVML's event set over the GPUs watched, as `events::EventWait`.
struct NvmlEvents {
    set: nvml_wrapper::EventSet<'static>,
}

impl NvmlEvents {
    /// Registers each GPU for Xid and ECC events; `None` when no GPU takes them.
    fn register(nvml: &'static Nvml, devices: &[&Device<'static>]) -> Option<Self> {
        let wanted = EventTypes::from_bits_truncate(super::events::LISTENED);
        // Only the types each GPU supports (asking for one it lacks fails the call), tried on
        // a set of its own first: a refusal frees the set it was given, with every GPU in it.
        let takes: Vec<(&Device<'static>, EventTypes)> = devices
            .iter()
            .copied()
            .filter_map(|d| {
                let types = d.supported_event_types().ok()? & wanted;
                let trial = nvml.create_event_set().ok()?;
                (!types.is_empty() && d.register_events(types, trial).is_ok()).then_some((d, types))
            })
            .collect();
        let mut set = nvml.create_event_set().ok()?;
        for (d, types) in &takes {
            set = d.register_events(*types, set).ok()?;
        }
        (!takes.is_empty()).then_some(NvmlEvents { set })
    }
}

impl super::events::EventWait for NvmlEvents {
    fn wait(&mut self, timeout_ms: u32) -> super::events::Waited {
        use super::events::Waited;
        match self.set.wait(timeout_ms) {
            Ok(e) => Waited::Event {
                device: e.device.index().ok(),
                bits: e.event_type.bits(),
                xid: match e.event_data {
                    Some(XidError::Value(v)) => Some(v),
                    _ => None,
                },
            },
            Err(NvmlError::Timeout) => Waited::Timeout,
            Err(e) => Waited::Failed(e.to_string()),
        }
    }
}

/// State the slow thread keeps per device between its rounds.
struct SlowDevice {
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
}

/// Rounds between reads of the process list of a GPU with one process or none while its used
/// memory holds still. The two list calls take 190 µs of CPU a round on an H200 (164 and 26
/// µs, run 31), a third of the slow round. A process that starts or ends on a GPU creates or
/// frees a context, and the one process's memory is the GPU's less the driver's, so a list
/// that matters to the screen or the rules changes only with the used memory: in every H200
/// recording of the corpus, the list changed with it or one round after it (the list lags the
/// memory by a round at times), never alone.
const PROC_LIST_EVERY: u64 = 5;

/// Says from the GPU's used memory whether its process list is due.
#[derive(Debug, Default)]
struct ListWatch {
    mem: Option<u64>,
    /// Rounds the used memory has held still.
    still: u64,
    /// The last read of the list failed: read it again next round.
    failed: bool,
}

impl ListWatch {
    /// Due when the used memory changed this round or the last, when it cannot be read,
    /// with more than one process (their per-process utilization is read with the list),
    /// after a read that failed, and otherwise every `PROC_LIST_EVERY` rounds.
    fn due(&mut self, mem: Option<u64>, processes: usize) -> bool {
        if mem.is_some() && mem == self.mem {
            self.still += 1;
        } else {
            self.still = 0;
        }
        self.mem = mem;
        mem.is_none()
            || self.failed
            || processes > 1
            || self.still < 2
            || self.still.is_multiple_of(PROC_LIST_EVERY)
    }
}

/// Rounds between reads of the energy counter: 3.5 ms of CPU per call on an H200 (a busy wait
/// in the driver), for a value that only cross-checks `power_usage` (the joules shown are the
/// counter's steps with the power integral between them, whatever the spacing). Every 15 s it
/// was a fifth of the slow thread's CPU (run 27: 16-18 ms per 20 s); once a minute.
const ENERGY_EVERY: u64 = 60;
/// Rounds between reads of the health counters (ECC, remapped rows, `PCIe` replays, `NVLink`):
/// they change rarely, and the replay counter costs 180 µs of CPU a read on an H200 (325 µs
/// median latency, run 31). Read every 5th round they were a seventh of the slow thread (run
/// 40: about 65 of 450 µs a second). The rules judge their rise over `link_errors_window`
/// (60 s), so a read every 15 s delays a finding by at most that; ECC errors and Xids also
/// arrive at once as NVML events (`events.rs`). dcgm-exporter collects every 30 s by default.
const HEALTH_EVERY: u64 = 15;
/// Rounds between reads of the `PCIe` link's width: 90 µs a read on an H200 (median, timed by
/// `devices --timings` in run 31; the generation, which drops whenever the GPU idles, takes 3
/// µs and is read every round), a sixth of the slow round, for a width that changes only when
/// a link retrains.
const LINK_WIDTH_EVERY: u64 = 5;
/// Rounds between reads of per-process utilization: 1.4 ms of CPU per call on an H200. It is
/// not read at all while a GPU has one process (see `device_util_to_process`).
const PROC_UTIL_EVERY: u64 = 2;

fn spawn_slow_thread(
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
        let mem = read(t, "memory_info", &mut lost, || d.memory_info()).map(|m| m.used);
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

    /// The board's limit, `PCIe` link and energy counter (the link width and the energy less
    /// often: they change rarely, and the energy read can stall the fast tick's calls).
    fn read_board(&mut self, t: &mut CallTimes, lost: &mut Option<String>, round: u64) {
        let d = &self.device;
        let r = &mut self.last;
        r.power_limit_w = read(t, "enforced_power_limit", lost, || d.enforced_power_limit()).map(w);
        r.pcie_gen = read(t, "current_pcie_link_gen", lost, || {
            d.current_pcie_link_gen()
        });
        if round.is_multiple_of(LINK_WIDTH_EVERY) {
            r.pcie_width = read(t, "current_pcie_link_width", lost, || {
                d.current_pcie_link_width()
            });
        }
        if round.is_multiple_of(ENERGY_EVERY) {
            if let Some(mj) = read(t, "total_energy_consumption", lost, || {
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
        let d = &self.device;
        self.last.pcie_tx_kib_s = read(t, "pcie_throughput", lost, || {
            d.pcie_throughput(PcieUtilCounter::Send)
        })
        .map(|v| v as f32);
        self.last.pcie_rx_kib_s = read(t, "pcie_throughput", lost, || {
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
        let d = &self.device;
        let mut procs: Vec<ProcessSample> = Vec::new();
        let compute = read(t, "running_compute_processes", lost, || {
            d.running_compute_processes()
        })?;
        let graphics = read(t, "running_graphics_processes", lost, || {
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
        let d = &self.device;
        let ecc = |t: &mut CallTimes, lost: &mut Option<String>, kind, counter| {
            read(t, "total_ecc_errors", lost, || {
                d.total_ecc_errors(kind, counter)
            })
            .map(count)
        };
        h.ecc_corrected_volatile = ecc(t, lost, MemoryError::Corrected, EccCounter::Volatile);
        h.ecc_uncorrected_volatile = ecc(t, lost, MemoryError::Uncorrected, EccCounter::Volatile);
        h.ecc_corrected_aggregate = ecc(t, lost, MemoryError::Corrected, EccCounter::Aggregate);
        h.ecc_uncorrected_aggregate = ecc(t, lost, MemoryError::Uncorrected, EccCounter::Aggregate);
        h.pcie_replays = read(t, "pcie_replay_counter", lost, || d.pcie_replay_counter());
        // nvml-wrapper has no call for the row remapper: its four field values say it all.
        let fields = read(t, "field_values(remap)", lost, || {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::GIB;

    #[test]
    fn the_process_list_waits_while_the_used_memory_holds_still() {
        let mut w = ListWatch::default();
        let due: Vec<bool> = [1, 1, 1, 1, 1, 1, 1, 2, 2, 2]
            .iter()
            .map(|m| w.due(Some(m * GIB), 1))
            .collect();
        let expect = [
            true, true, false, false, false, true, false, true, true, false,
        ];
        assert_eq!(
            due, expect,
            "read when it changed, a round after, then every fifth"
        );
        assert!(w.due(None, 1), "memory unread: the list is read");
        assert!(
            (0..4).all(|_| w.due(Some(GIB), 2)),
            "several processes: every round"
        );
        let mut w = ListWatch::default();
        (0..3).for_each(|_| {
            w.due(Some(GIB), 1);
        });
        assert!(!w.due(Some(GIB), 1), "still: not due");
        w.failed = true;
        assert!(
            w.due(Some(GIB), 1),
            "a failed read is tried again next round"
        );
    }

    /// Every H200 recording of the corpus, walked a slow round (1 s) at a time: the list the
    /// slow thread would keep equals the one read every round, at every round.
    #[test]
    fn skipped_process_lists_miss_no_change_in_the_h200_recordings() {
        use crate::source::replay::ReplaySource;
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
        let mut rounds = 0;
        for file in [
            "corpus/tune.jsonl.gz",
            "corpus/holdout.jsonl.gz",
            "corpus/holdout2.jsonl.gz",
            "corpus/holdout3.jsonl.gz",
            "corpus/holdout4.jsonl.gz",
            "corpus/stacks.jsonl.gz",
            "corpus/stacks2.jsonl.gz",
            "fixtures/h200/phases.jsonl.gz",
            "fixtures/h200x2/nccl_hang.jsonl.gz",
            "fixtures/h200-jax/jax.jsonl.gz",
        ] {
            let mut src = ReplaySource::open(&dir.join(file), f64::INFINITY).unwrap();
            let ticks = src.read_all().unwrap();
            let gpus = ticks.first().map_or(0, |t| t.devices.len());
            // Each GPU, with the rounds at four offsets into the recording's 250 ms ticks.
            for (g, offset) in (0..gpus).flat_map(|g| [0, 250, 500, 750].map(|o| (g, o))) {
                let mut w = ListWatch::default();
                let mut kept: Vec<(u32, Option<u64>)> = Vec::new();
                let mut next_round = ticks.first().map_or(0, |t| t.t_ms + offset);
                for t in ticks.iter().filter(|t| t.devices.len() > g) {
                    if t.t_ms < next_round {
                        continue;
                    }
                    next_round = t.t_ms + 1000;
                    let d = &t.devices[g];
                    let list: Vec<(u32, Option<u64>)> = d
                        .processes
                        .iter()
                        .map(|p| (p.pid, p.gpu_mem_bytes))
                        .collect();
                    if w.due(d.sample.mem_used_bytes, kept.len()) {
                        kept.clone_from(&list);
                    }
                    assert_eq!(kept, list, "{file} GPU {g} at {} (offset {offset})", t.t_ms);
                    rounds += 1;
                }
            }
        }
        assert!(rounds > 8000, "{rounds} rounds walked");
    }

    #[test]
    fn a_single_process_takes_the_gpus_utilization_and_several_do_not() {
        let s = DeviceSample {
            util_gpu_pct: Some(87.0),
            util_mem_pct: Some(40.0),
            ..DeviceSample::default()
        };
        let mut one = vec![ProcessSample::default()];
        device_util_to_process(&mut one, &s);
        assert_eq!((one[0].sm_pct, one[0].mem_pct), (Some(87.0), Some(40.0)));
        let mut two = vec![ProcessSample::default(), ProcessSample::default()];
        device_util_to_process(&mut two, &s);
        assert!(two
            .iter()
            .all(|p| p.sm_pct.is_none() && p.mem_pct.is_none()));
        let unsupported = DeviceSample::default();
        device_util_to_process(&mut one, &unsupported);
        assert_eq!(one[0].sm_pct, None, "a gap stays a gap");
    }

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
