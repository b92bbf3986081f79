//! Per-device ring buffers of samples: fixed capacity, no allocation per pushed sample, window
//! queries by time.
//!
//! A `DeviceSample` is `Copy` and fixed-size (`DeviceSample::BYTES`), so a full buffer costs
//! `capacity * BYTES`. Processes are kept in full only for the latest tick; each process also
//! leaves a short `ProcessTrail` (one point a second) for the process view's curves.

mod ring;

pub use ring::Ring;

use crate::model::{DeviceInfo, DeviceReading, DeviceSample, DeviceStatus, ProcessSample, Tick};

impl DeviceSample {
    /// Bytes one sample takes in the ring buffer.
    pub const BYTES: usize = std::mem::size_of::<DeviceSample>();
}

/// Everything remembered about one GPU.
#[derive(Debug, Clone)]
pub struct DeviceHistory {
    pub info: DeviceInfo,
    pub samples: Ring<DeviceSample>,
    /// The processes seen on the latest tick.
    pub processes: Vec<ProcessSample>,
    pub status: DeviceStatus,
    /// When the device was first seen lost (ms), if it is.
    pub lost_since_ms: Option<u64>,
    /// Joules used since the first sample.
    pub energy: crate::energy::EnergyMeter,
    /// The most `NVLink` links seen up at once: a link down is one fewer, however long ago
    /// it went (ports never connected are never counted).
    pub nvlink_most_active: Option<u8>,
    /// Whether a `PCIe` replay or `NVLink` error counter was ever read: a GPU without them
    /// (most simulated ones, older drivers) needs no pass over its window to find none.
    pub link_counters_seen: bool,
    /// The time of the newest sample whose memory used differs from the sample before it (the
    /// first sample's, at first): memory unchanged over a window has no trend to fit, and a
    /// steady job's memory is flat for hours.
    pub mem_changed_ms: u64,
    /// The ring position of the newest sample older than the one before it (a clock set
    /// back): while the ring holds it, its samples are not in time order, and windows are
    /// found by search only (`samples_in_order`).
    disorder_at: Option<u64>,
    /// The meter's total when it was last shared out among the processes' trails.
    energy_shared_j: f64,
}

/// One point of a process's trail.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ProcessPoint {
    pub t_ms: u64,
    pub sm_pct: Option<f32>,
    pub gpu_mem_bytes: Option<u64>,
    pub cpu_pct: Option<f32>,
}

/// The recent history of one process on one GPU, one point a second.
#[derive(Debug, Clone)]
pub struct ProcessTrail {
    pub pid: u32,
    pub device: u32,
    pub points: Ring<ProcessPoint>,
    /// Joules of its GPU's energy this process is answerable for since it was first seen:
    /// all of it while alone on the GPU, else its share by kernel time (NVML's per-process
    /// utilization), evenly where that is unknown.
    pub energy_j: f64,
    /// True once the GPU's energy was shared with another process.
    pub energy_shared: bool,
}

/// A process that left a GPU: the event the rules use to name a rank that died.
#[derive(Debug, Clone, PartialEq)]
pub struct Departure {
    pub device: u32,
    pub pid: u32,
    /// The last tick it was seen on, and the first without it (ms).
    pub last_seen_ms: u64,
    pub gone_ms: u64,
    /// What grouped it with other ranks: its launcher job and rank, its parent.
    pub job: Option<crate::model::JobInfo>,
    pub ppid: Option<u32>,
    pub name: String,
}

/// How a GPU's energy over one tick is shared among its processes: by kernel time where every
/// process has it and some ran, else evenly.
struct KernelWeights {
    total_pct: Option<f32>,
    count: usize,
}

fn kernel_weights(processes: &[ProcessSample]) -> KernelWeights {
    let total_pct = processes
        .iter()
        .map(|p| p.sm_pct)
        .sum::<Option<f32>>()
        .filter(|t| *t > 0.0);
    KernelWeights {
        total_pct,
        count: processes.len(),
    }
}

impl KernelWeights {
    fn share(&self, p: &ProcessSample) -> f64 {
        match (self.total_pct, p.sm_pct) {
            (Some(total), Some(pct)) => f64::from(pct / total),
            _ => 1.0 / self.count.max(1) as f64,
        }
    }
}

/// Driver events kept (Xid, ECC), newest last: more than a GPU in trouble sends in a session.
const KEEP_EVENTS: usize = 256;

/// How many events of one kind a GPU sent, and when the first and the last came: what the
/// rules judge from and the exporter counts. Kept whole however many came, where the list of
/// events keeps only the newest (a storm of one Xid must not push an earlier one out).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventCount {
    pub device: u32,
    pub kind: crate::model::EventKind,
    pub count: u64,
    pub first_ms: u64,
    pub last_ms: u64,
}

/// Processes whose latest stack burst is kept.
const KEEP_STACKS: usize = 64;

/// Departures kept: a job that loses more ranks than this at once is reported by its newest.
const KEEP_DEPARTURES: usize = 64;

/// The most memory the ring buffers may take.
pub const MAX_BYTES: u64 = 2 << 30;

/// Points kept per process: 15 minutes at one a second.
const TRAIL_POINTS: usize = 900;
/// A trail is forgotten this long after its process was last seen.
const TRAIL_FORGET_MS: u64 = 60_000;

/// The history of every device, pushed by the sampler and read by rules and the screen.
#[derive(Debug, Clone)]
pub struct History {
    pub devices: Vec<DeviceHistory>,
    pub trails: Vec<ProcessTrail>,
    /// Processes that left a GPU, oldest first (bounded).
    pub departures: Vec<Departure>,
    /// The latest stack burst of each process read, oldest first (bounded).
    pub stacks: Vec<crate::model::stack::StackBurst>,
    /// Xid and ECC events, oldest first (bounded).
    pub events: Vec<crate::model::GpuEvent>,
    /// Every event since the start, counted by GPU and kind (not bounded by `events`).
    pub event_counts: Vec<EventCount>,
    ticks: u64,
    /// Time of the first tick pushed since the start (or the last restart).
    first_ms: Option<u64>,
}

impl History {
    /// Room for `capacity` samples per device.
    #[must_use]
    pub fn new(infos: &[DeviceInfo], capacity: usize) -> Self {
        let devices = infos
            .iter()
            .map(|info| DeviceHistory {
                info: info.clone(),
                samples: Ring::with_capacity(capacity),
                processes: Vec::new(),
                status: DeviceStatus::Ok,
                lost_since_ms: None,
                energy: crate::energy::EnergyMeter::default(),
                nvlink_most_active: None,
                link_counters_seen: false,
                mem_changed_ms: 0,
                disorder_at: None,
                energy_shared_j: 0.0,
            })
            .collect();
        History {
            devices,
            trails: Vec::new(),
            departures: Vec::new(),
            stacks: Vec::new(),
            events: Vec::new(),
            event_counts: Vec::new(),
            ticks: 0,
            first_ms: None,
        }
    }

    /// Forgets every sample, trail and departure, keeping the buffers: a replay that went back
    /// plays again from its beginning.
    pub fn restart(&mut self) {
        for d in &mut self.devices {
            d.samples.clear();
            d.processes.clear();
            d.status = DeviceStatus::Ok;
            d.lost_since_ms = None;
            d.energy = crate::energy::EnergyMeter::default();
            d.nvlink_most_active = None;
            d.energy_shared_j = 0.0;
        }
        self.trails.clear();
        self.departures.clear();
        self.stacks.clear();
        self.events.clear();
        self.event_counts.clear();
        self.ticks = 0;
        self.first_ms = None;
    }

    /// The trail of `pid` on `device`, if it has been seen.
    #[must_use]
    pub fn trail(&self, device: u32, pid: u32) -> Option<&ProcessTrail> {
        self.trails
            .binary_search_by_key(&(device, pid), |t| (t.device, t.pid))
            .ok()
            .map(|i| &self.trails[i])
    }

    /// Adds a point a second per process; allocates only when a new process appears.
    fn push_trails(&mut self, tick: &Tick) {
        for dev in &mut self.devices {
            let used_j = (dev.energy.total_j() - dev.energy_shared_j).max(0.0);
            dev.energy_shared_j = dev.energy.total_j();
            let weights = kernel_weights(&dev.processes);
            // After `push`: the processes of this tick, whether it listed them or kept the
            // previous tick's.
            for p in &dev.processes {
                let point = ProcessPoint {
                    t_ms: tick.t_ms,
                    sm_pct: p.sm_pct,
                    gpu_mem_bytes: p.gpu_mem_bytes,
                    cpu_pct: p.host.as_ref().and_then(|h| h.cpu_pct),
                };
                let device = dev.info.index;
                // Kept sorted by (device, pid): a lookup per process per tick, not a scan of
                // every trail (4096 processes made that 16 million comparisons a tick).
                match self
                    .trails
                    .binary_search_by_key(&(device, p.pid), |t| (t.device, t.pid))
                {
                    Ok(i) => {
                        let t = &mut self.trails[i];
                        if t.points.latest().is_none_or(|l| tick.t_ms >= l.t_ms + 1000) {
                            t.points.push(point);
                        }
                        t.energy_j += used_j * weights.share(p);
                        t.energy_shared |= dev.processes.len() > 1;
                    }
                    Err(i) => {
                        let mut points = Ring::with_capacity(TRAIL_POINTS);
                        points.push(point);
                        self.trails.insert(
                            i,
                            ProcessTrail {
                                pid: p.pid,
                                device,
                                points,
                                energy_j: 0.0,
                                energy_shared: dev.processes.len() > 1,
                            },
                        );
                    }
                }
            }
        }
        self.trails.retain(|t| {
            t.points
                .latest()
                .is_some_and(|l| l.t_ms + TRAIL_FORGET_MS >= tick.t_ms)
        });
    }

    /// The capacity for `span_ms` of samples every `interval_ms` on `devices` GPUs, refused with
    /// a message when the buffers would take more than `MAX_BYTES`.
    pub fn checked_capacity(
        span_ms: u64,
        interval_ms: u64,
        devices: usize,
    ) -> Result<usize, String> {
        let capacity = Self::capacity_for(span_ms, interval_ms);
        let bytes = capacity as u64 * devices as u64 * DeviceSample::BYTES as u64;
        if bytes > MAX_BYTES {
            return Err(format!(
                "keeping {:.1} h of history every {} ms for {devices} GPU(s) would take {:.1} GiB of memory; \
                 keep less (--history; --for for diagnose, --window for snapshot) or lengthen \
                 --interval (the limit is {} GiB)",
                span_ms as f64 / 3_600_000.0,
                interval_ms,
                bytes as f64 / (1u64 << 30) as f64,
                MAX_BYTES >> 30
            ));
        }
        Ok(capacity)
    }

    /// The capacity that keeps `span_ms` of samples taken every `interval_ms`.
    #[must_use]
    pub fn capacity_for(span_ms: u64, interval_ms: u64) -> usize {
        (span_ms / interval_ms.max(1)).max(2) as usize
    }

    pub fn push(&mut self, tick: &Tick) {
        self.ticks += 1;
        self.first_ms.get_or_insert(tick.t_ms);
        for (dev, reading) in self.devices.iter_mut().zip(&tick.devices) {
            note_departures(dev, reading, tick.t_ms, &mut self.departures);
            dev.push(reading, tick.t_ms);
        }
        if self.departures.len() > KEEP_DEPARTURES {
            self.departures
                .drain(..self.departures.len() - KEEP_DEPARTURES);
        }
        self.push_trails(tick);
        self.push_stacks(tick);
        self.push_events(tick);
    }

    /// Keeps the driver's events, and counts them; rare, so these may allocate.
    fn push_events(&mut self, tick: &Tick) {
        for e in &tick.events {
            // An event is received before the tick that carries it: a later time is not real.
            let e = crate::model::GpuEvent {
                t_ms: e.t_ms.min(tick.t_ms),
                ..*e
            };
            self.events.push(e);
            match self
                .event_counts
                .iter_mut()
                .find(|c| c.device == e.device && c.kind == e.kind)
            {
                Some(c) => {
                    c.count += 1;
                    c.last_ms = c.last_ms.max(e.t_ms);
                }
                None => self.event_counts.push(EventCount {
                    device: e.device,
                    kind: e.kind,
                    count: 1,
                    first_ms: e.t_ms,
                    last_ms: e.t_ms,
                }),
            }
        }
        if self.events.len() > KEEP_EVENTS {
            self.events.drain(..self.events.len() - KEEP_EVENTS);
        }
    }

    /// What GPU `device` reported, by kind, whose last event came at or after `from_ms`.
    pub fn events_since(&self, device: u32, from_ms: u64) -> impl Iterator<Item = &EventCount> {
        self.event_counts
            .iter()
            .filter(move |c| c.device == device && c.last_ms >= from_ms)
    }

    /// Keeps each process's newest burst; a few a minute at most, so these may allocate.
    fn push_stacks(&mut self, tick: &Tick) {
        for b in &tick.stacks {
            self.stacks.retain(|s| s.pid != b.pid);
            self.stacks.push(b.clone());
        }
        if self.stacks.len() > KEEP_STACKS {
            self.stacks.drain(..self.stacks.len() - KEEP_STACKS);
        }
    }

    /// The newest stack burst of `pid`, if one was read.
    #[must_use]
    pub fn stacks_of(&self, pid: u32) -> Option<&crate::model::stack::StackBurst> {
        self.stacks.iter().rev().find(|s| s.pid == pid)
    }

    /// Ticks pushed since the start; the screen redraws when it changes.
    #[must_use]
    pub fn ticks(&self) -> u64 {
        self.ticks
    }

    /// Seconds from the first tick pushed to the newest sample: what the ticks span, though
    /// the ring buffers keep only the last of them.
    #[must_use]
    pub fn span_s(&self) -> f64 {
        match (self.first_ms, self.latest_ms()) {
            (Some(a), Some(b)) => b.saturating_sub(a) as f64 / 1000.0,
            _ => 0.0,
        }
    }

    /// Time of the newest sample of any device.
    #[must_use]
    pub fn latest_ms(&self) -> Option<u64> {
        self.devices
            .iter()
            .filter_map(|d| d.samples.latest())
            .map(|s| s.t_ms)
            .max()
    }

    /// Bytes the sample buffers take when full.
    #[must_use]
    pub fn bytes_when_full(&self) -> usize {
        self.devices
            .iter()
            .map(|d| d.samples.capacity() * DeviceSample::BYTES)
            .sum()
    }
}

/// Records the processes of the previous tick that `reading` no longer lists. A lost device's
/// processes are not departures: the device left, not they.
fn note_departures(
    dev: &DeviceHistory,
    reading: &DeviceReading,
    t_ms: u64,
    out: &mut Vec<Departure>,
) {
    if reading.status != DeviceStatus::Ok || reading.same_processes {
        return;
    }
    let last_seen_ms = dev.samples.latest().map_or(t_ms, |s| s.t_ms);
    for p in &dev.processes {
        if reading.processes.iter().any(|q| q.pid == p.pid) {
            continue;
        }
        let host = p.host.as_ref();
        out.push(Departure {
            device: dev.info.index,
            pid: p.pid,
            last_seen_ms,
            gone_ms: t_ms,
            job: host.and_then(|h| h.job.clone()),
            ppid: host.and_then(|h| h.ppid),
            name: host.map_or_else(String::new, |h| h.name.clone()),
        });
    }
}

impl DeviceHistory {
    fn push_sample(&mut self, sample: &DeviceSample) {
        if self.samples.latest().is_some_and(|l| sample.t_ms < l.t_ms) {
            self.disorder_at = Some(self.samples.end_position());
        }
        self.samples.push(*sample);
    }

    /// True when every sample held is at or after the one before it, as they are unless the
    /// clock was set back: a window is then a run of consecutive positions.
    #[must_use]
    pub fn samples_in_order(&self) -> bool {
        self.disorder_at
            .is_none_or(|p| p <= self.samples.first_position())
    }

    fn push(&mut self, reading: &DeviceReading, t_ms: u64) {
        let mem_before = self.samples.latest().map(|s| s.mem_used_bytes);
        match &reading.status {
            DeviceStatus::Ok => {
                self.lost_since_ms = None;
                self.push_sample(&reading.sample);
                self.energy.push(&reading.sample);
                let h = reading.sample.health;
                self.link_counters_seen |= h.pcie_replays.is_some() || h.nvlink_errors.is_some();
                // No more links up than the GPU says it has.
                if let Some(n) = h
                    .nvlink_active
                    .map(|n| h.nvlink_links.map_or(n, |l| n.min(l)))
                {
                    self.nvlink_most_active = Some(self.nvlink_most_active.map_or(n, |m| m.max(n)));
                }
            }
            DeviceStatus::Lost { .. } => {
                // A lost device's sample is all gaps; keeping it draws the gap on the chart.
                self.lost_since_ms.get_or_insert(t_ms);
                let gap = DeviceSample {
                    t_ms,
                    ..DeviceSample::default()
                };
                self.push_sample(&gap);
                self.energy.push(&gap);
            }
        }
        let newest = self.samples.latest();
        if let Some(s) = newest.filter(|s| Some(s.mem_used_bytes) != mem_before) {
            self.mem_changed_ms = s.t_ms;
        }
        self.status.clone_from(&reading.status);
        if !reading.same_processes {
            self.processes.clone_from(&reading.processes);
        }
    }
}
