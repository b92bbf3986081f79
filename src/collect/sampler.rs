//! One tick: read the source, add the host side of GPU processes (what the source cannot
//! know), and time it, so the screen can show what watching costs. The loop around it, and its
//! pacing, is `pacer`.

use std::time::{Duration, Instant};

use crate::history::Ring;
use crate::host::HostReader;
use crate::model::{SelfCost, SystemInfo, Tick};
use crate::source::{Sampled, Source, SourceError};

/// Measures the sampler's own cost without allocating per tick.
struct CostMeter {
    tick_us: Ring<u32>,
    scratch: Vec<u32>,
    last_cpu: Option<(Instant, f64)>,
    cost: SelfCost,
}

impl CostMeter {
    fn new() -> Self {
        CostMeter {
            tick_us: Ring::with_capacity(256),
            scratch: Vec::with_capacity(256),
            last_cpu: None,
            cost: SelfCost::default(),
        }
    }

    fn add_tick(&mut self, took: Duration) {
        self.tick_us
            .push(took.as_micros().min(u128::from(u32::MAX)) as u32);
    }

    /// Refreshes the summary; called about once a second.
    fn refresh(&mut self) {
        self.scratch.clear();
        self.scratch.extend(self.tick_us.iter().copied());
        self.scratch.sort_unstable();
        let n = self.scratch.len();
        if n > 0 {
            self.cost.tick_ms_median = Some(self.scratch[n / 2] as f32 / 1000.0);
            self.cost.tick_ms_max = Some(self.scratch[n - 1] as f32 / 1000.0);
        }
        let now = Instant::now();
        let cpu = crate::sys::process_cpu_seconds();
        if let (Some((then, before)), Some(cpu)) = (self.last_cpu, cpu) {
            let wall = now.duration_since(then).as_secs_f64();
            if wall > 0.0 {
                self.cost.cpu_pct = Some(((cpu - before) / wall * 100.0) as f32);
            }
        }
        self.last_cpu = cpu.map(|c| (now, c));
        self.cost.rss_bytes = process_rss_bytes();
    }
}

fn process_rss_bytes() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = text.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * crate::sys::page_size())
}

/// The stack link a pipeline over `source` uses: none for a recording or a simulation (their
/// pids are not this machine's) or under `--no-stacks`.
#[must_use]
pub fn stack_link(source: &dyn Source) -> Option<crate::stack::burst::StackLink> {
    crate::stack::burst::live_link().filter(|_| source.pids_are_local())
}

/// Reads a source tick by tick and adds what the source cannot know (the host side).
pub struct Sampler {
    source: Box<dyn Source>,
    tick: Tick,
    host: Option<HostReader>,
    last_host_ms: u64,
    meter: CostMeter,
    last_refresh: Instant,
    /// Where finished stack bursts come from (live sources only).
    stacks: Option<crate::stack::burst::StackLink>,
}

impl Sampler {
    #[must_use]
    pub fn new(source: Box<dyn Source>) -> Self {
        let host = source.pids_are_local().then(|| {
            let mut r = HostReader::new();
            r.check_gpu_files = source.pids_hold_the_gpu();
            r
        });
        let tick = Tick::for_devices(source.devices().len());
        Sampler {
            source,
            tick,
            host,
            last_host_ms: 0,
            meter: CostMeter::new(),
            last_refresh: Instant::now(),
            stacks: None,
        }
    }

    /// Takes the bursts `link`'s thread reads into the ticks (a live source's processes only:
    /// a recording's or a simulation's pids are not this machine's).
    #[must_use]
    pub fn with_stacks(mut self, link: Option<crate::stack::burst::StackLink>) -> Self {
        self.stacks = link.filter(|_| self.source.pids_are_local());
        self
    }

    #[must_use]
    pub fn source(&self) -> &dyn Source {
        self.source.as_ref()
    }
    #[must_use]
    pub fn system(&self) -> &SystemInfo {
        self.source.system()
    }
    /// The tick read by the last `step`.
    #[must_use]
    pub fn tick(&self) -> &Tick {
        &self.tick
    }
    #[must_use]
    pub fn cost(&self) -> SelfCost {
        self.meter.cost
    }

    /// Starts the source again from its first tick (a replay seeking back).
    pub fn rewind(&mut self) -> Result<(), SourceError> {
        self.source.rewind()
    }

    /// Reads one tick. Blocks for as long as the source does.
    pub fn step(&mut self) -> Result<Sampled, SourceError> {
        let started = Instant::now();
        // A source may add bursts of its own (a recording's, a simulation's).
        self.tick.stacks.clear();
        let got = self.source.sample(&mut self.tick)?;
        self.meter.add_tick(started.elapsed());
        if got == Sampled::Filled {
            // A driver's garbage is a gap, never a value drawn or recorded (a replay refuses it).
            for d in &mut self.tick.devices {
                d.sample.clear_impossible();
            }
            self.fill_host();
            for p in self.tick.devices.iter_mut().flat_map(|d| &mut d.processes) {
                p.clear_impossible();
            }
            if let Some(link) = &self.stacks {
                link.take_done(&mut self.tick.stacks);
            }
        }
        if self.last_refresh.elapsed() >= Duration::from_secs(1) {
            self.meter.refresh();
            self.last_refresh = Instant::now();
        }
        Ok(got)
    }

    /// The host side changes slowly: /proc is read once a second, or at once for a new
    /// process; every tick gets the latest reading. The sampler is its only writer.
    fn fill_host(&mut self) {
        let Some(reader) = self.host.as_mut() else {
            return;
        };
        let t = self.tick.t_ms;
        let procs = || self.tick.devices.iter().flat_map(|d| &d.processes);
        let unseen = procs().any(|p| !reader.knows(p.pid));
        if t.saturating_sub(self.last_host_ms) >= 1000 || unseen {
            reader.refresh(procs().map(|p| p.pid), t);
            self.last_host_ms = t;
        }
        reader.attach(
            self.tick
                .devices
                .iter_mut()
                .flat_map(|d| d.processes.iter_mut()),
        );
    }
}
