//! Real GPUs through NVML. This module (this file and the three beside it) is the only place
//! that touches nvml-wrapper: the source and its fast tick here, the slow thread in `slow.rs`,
//! MIG instances in `mig.rs`, the Xid and ECC event set in `event_set.rs`.
//!
//! One `Nvml` handle lives for the whole run (re-initialising per poll holds the GPU in a high
//! power state). The fast tick reads only calls that take microseconds; the slow ones (energy
//! counter 3.5 ms of CPU, per-process utilization 1.4 ms, legacy `PCIe` throughput ~20 ms of
//! waiting, measured on an H200; GPM, memory and link state, which stalled up to 13 ms behind
//! them) run on a second thread every `slow_interval`, the costliest of them only every few
//! rounds, and the fast tick copies their latest values. An NVML error that means the GPU is
//! gone marks that device lost; the others go on.

use std::ffi::OsStr;
use std::path::Path;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use nvml_wrapper::enum_wrappers::device::{Clock, TemperatureSensor, TemperatureThreshold};
use nvml_wrapper::error::NvmlError;
use nvml_wrapper::{Device, Nvml};

use crate::model::{
    now_ms, DeviceInfo, DeviceReading, DeviceSample, DeviceStatus, ProcessSample, SystemInfo, Tick,
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
    settle(call, lost, timed(times, call, f))
}

/// One call, its time noted under `call`.
fn timed<T>(
    times: &mut CallTimes,
    call: &'static str,
    f: impl FnOnce() -> Result<T, NvmlError>,
) -> Result<T, NvmlError> {
    let started = Instant::now();
    let r = f();
    times.record(call, started);
    r
}

/// A call's answer as a reading: `None` when it failed, and a lost device noted.
fn settle<T>(call: &'static str, lost: &mut Option<String>, r: Result<T, NvmlError>) -> Option<T> {
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

/// The device is gone for every call, not failing one (`Unknown` may be one call's).
fn is_gone(e: &NvmlError) -> bool {
    matches!(
        e,
        NvmlError::GpuLost
            | NvmlError::ResetRequired
            | NvmlError::Uninitialized
            | NvmlError::DriverNotLoaded
    )
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
                path: crate::text::path_shown(p),
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
        // `nvmlInit` ran code of libcuda's and NVML's that nothing runs again (3.7 MiB of
        // libcuda resident, of which a monitor runs 1.2): given back before the first round
        // of calls, the peak that forms here is that much lower (docs/performance.md, run 96).
        let _ = crate::sys::release_start_up_pages();
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
            return gap(out, t_ms, DeviceStatus::Ok);
        }
        let d = &self.devices[i];
        let t = &mut self.fast_times;
        let mut lost = None;
        let util = timed(t, "utilization_rates", || d.utilization_rates());
        let gone = util.as_ref().is_err_and(is_gone);
        let util = settle("utilization_rates", &mut lost, util);
        if gone {
            // A GPU that fell off the bus answers every call so, and on a real driver each can
            // stall: until it answers again it is asked this one call a tick, not seven.
            let reason = lost.take().unwrap_or_default();
            return gap(out, t_ms, DeviceStatus::Lost { reason });
        }
        let s = &mut out.sample;
        s.t_ms = t_ms;
        s.util_gpu_pct = util.as_ref().map(|u| u.gpu as f32);
        s.util_mem_pct = util.as_ref().map(|u| u.memory as f32);
        read_counters(d, self.has_fan[i], t, &mut lost, s);
        out.status = match lost {
            Some(reason) => DeviceStatus::Lost { reason },
            None => DeviceStatus::Ok,
        };
    }
}

/// A tick without readings: every metric a gap.
fn gap(out: &mut DeviceReading, t_ms: u64, status: DeviceStatus) {
    out.sample = DeviceSample {
        t_ms,
        ..DeviceSample::default()
    };
    out.status = status;
}

/// The fast tick's calls after utilization: power, temperature, clocks, fan, P-state and the
/// clock event reasons.
fn read_counters(
    d: &Device<'static>,
    has_fan: bool,
    t: &mut CallTimes,
    lost: &mut Option<String>,
    s: &mut DeviceSample,
) {
    s.power_w = read(t, "power_usage", lost, || d.power_usage()).map(w);
    s.temp_c = read(t, "temperature", lost, || {
        d.temperature(TemperatureSensor::Gpu)
    })
    .map(|c| c as f32);
    s.sm_clock_mhz = read(t, "clock_info(SM)", lost, || d.clock_info(Clock::SM));
    s.mem_clock_mhz = read(t, "clock_info(Memory)", lost, || {
        d.clock_info(Clock::Memory)
    });
    s.fan_pct = if has_fan {
        read(t, "fan_speed", lost, || d.fan_speed(0)).map(|f| f as f32)
    } else {
        None
    };
    s.pstate = read(t, "performance_state", lost, || d.performance_state()).map(|p| p.as_c() as u8);
    s.clock_events = read(t, "current_throttle_reasons", lost, || {
        d.current_throttle_reasons()
    })
    .map(|r| r.bits());
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

mod ask;
mod event_set;
mod mig;
mod slow;

use event_set::start_events;
use mig::{parent_positions, with_mig_instances};
use slow::{spawn_slow_thread, Shared, SlowReading};

#[cfg(test)]
mod tests {
    use super::*;

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
}
