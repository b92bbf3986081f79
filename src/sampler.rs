//! The sampling loop: reads the source every interval on a blocking thread (NVML calls block,
//! so never on an async worker), adds the host side of GPU processes, pushes into the history,
//! runs the rules, and times itself so the screen can show what watching costs.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::history::{History, Ring};
use crate::host::HostReader;
use crate::model::{SelfCost, SystemInfo, Tick};
use crate::rules::Engine;
use crate::source::{Pacing, Sampled, Source, SourceError};

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
            .push(took.as_micros().min(u32::MAX as u128) as u32);
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
        let cpu = process_cpu_seconds();
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

/// User + system CPU time of this whole process, in seconds.
fn process_cpu_seconds() -> Option<f64> {
    // SAFETY: getrusage writes into the struct we pass and has no other effect.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    (rc == 0).then(|| {
        let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
        tv(ru.ru_utime) + tv(ru.ru_stime)
    })
}

fn process_rss_bytes() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = text.split_whitespace().nth(1)?.parse().ok()?;
    // SAFETY: sysconf only reads a configuration value.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    Some(pages * page.max(1) as u64)
}

/// Reads a source tick by tick and adds what the source cannot know (the host side).
pub struct Sampler {
    source: Box<dyn Source>,
    tick: Tick,
    host: Option<HostReader>,
    last_host_ms: u64,
    meter: CostMeter,
    last_refresh: Instant,
}

impl Sampler {
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
        }
    }

    pub fn source(&self) -> &dyn Source {
        self.source.as_ref()
    }
    pub fn system(&self) -> &SystemInfo {
        self.source.system()
    }
    /// The tick read by the last `step`.
    pub fn tick(&self) -> &Tick {
        &self.tick
    }
    pub fn cost(&self) -> SelfCost {
        self.meter.cost
    }

    /// Reads one tick. Blocks for as long as the source does.
    pub fn step(&mut self) -> Result<Sampled, SourceError> {
        let started = Instant::now();
        let got = self.source.sample(&mut self.tick)?;
        self.meter.add_tick(started.elapsed());
        if got == Sampled::Tick {
            self.fill_host();
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

/// What the sampler shares with whoever watches: the history, the findings, the cost.
#[derive(Clone)]
pub struct Observed {
    pub system: SystemInfo,
    pub source_label: String,
    pub interval_ms: u64,
    pub history: History,
    pub engine: Engine,
    pub cost: SelfCost,
    /// A recording played to its end.
    pub ended: bool,
    /// Why sampling stopped, if it failed.
    pub error: Option<String>,
    /// True when process PIDs belong to this machine (signals can be sent to them).
    pub pids_are_local: bool,
    /// Sample time of the tick the rules last saw.
    evaluated_ms: Option<u64>,
}

/// The rules judge windows of 10 s and more, so evaluating them more often than this adds
/// nothing but CPU: at `--interval 50ms` they run on every 4th tick, at 250 ms on every one.
const EVALUATE_EVERY_MS: u64 = 200;

impl Observed {
    pub fn new(source: &dyn Source, interval_ms: u64, capacity: usize, engine: Engine) -> Self {
        Observed {
            system: source.system().clone(),
            source_label: source.label(),
            interval_ms,
            history: History::new(source.devices(), capacity),
            engine,
            cost: SelfCost::default(),
            ended: false,
            error: None,
            pids_are_local: source.pids_are_local(),
            evaluated_ms: None,
        }
    }

    /// Takes in one tick: history first, then the rules over it (at most every
    /// `EVALUATE_EVERY_MS` of sample time, and whenever time went backwards).
    pub fn absorb(&mut self, tick: &Tick, cost: SelfCost) {
        self.history.push(tick);
        let due = self
            .evaluated_ms
            .is_none_or(|last| tick.t_ms < last || tick.t_ms - last >= EVALUATE_EVERY_MS);
        if due {
            self.evaluate(tick.t_ms);
        }
        self.cost = cost;
    }

    /// Brings the findings up to the last tick taken in: at the end of a replay or a run, so
    /// that what is reported judged every sample.
    pub fn settle(&mut self) {
        let latest = self
            .history
            .devices
            .iter()
            .filter_map(|d| d.samples.latest().map(|s| s.t_ms))
            .max();
        if let Some(t) = latest.filter(|t| self.evaluated_ms != Some(*t)) {
            self.evaluate(t);
        }
    }

    fn evaluate(&mut self, t_ms: u64) {
        self.engine.evaluate(&self.history);
        self.evaluated_ms = Some(t_ms);
    }

    /// Sample time of the tick the rules last evaluated.
    pub fn evaluated_at_ms(&self) -> Option<u64> {
        self.evaluated_ms
    }
}

/// How long to wait before reading the next tick.
fn delay(pacing: Pacing, interval: Duration, prev_t_ms: Option<u64>, t_ms: u64) -> Duration {
    match (pacing, prev_t_ms) {
        (Pacing::Live, _) => interval,
        (Pacing::Recorded { speed }, Some(prev)) if speed.is_finite() && speed > 0.0 => {
            // A gap of days at a tiny speed would overflow a Duration: wait at most a minute.
            Duration::try_from_secs_f64(t_ms.saturating_sub(prev) as f64 / 1000.0 / speed)
                .unwrap_or(Duration::MAX)
                .min(Duration::from_secs(60))
        }
        (Pacing::Recorded { .. }, _) => Duration::ZERO,
    }
}

/// Runs the sampler on its own thread until `stop` is set or the source ends. `on_tick` is
/// called after each tick has been absorbed (the TUI wakes up there).
pub fn spawn(
    mut sampler: Sampler,
    observed: Arc<Mutex<Observed>>,
    interval: Duration,
    stop: Arc<AtomicBool>,
    mut on_tick: impl FnMut(u64) + Send + 'static,
) -> std::io::Result<std::thread::JoinHandle<()>> {
    std::thread::Builder::new()
        .name("gpuwatch-sampler".into())
        .spawn(move || {
            let pacing = sampler.source().pacing();
            let mut next = Instant::now();
            let mut prev_t = None;
            while !stop.load(Ordering::Relaxed) {
                let outcome = sampler.step();
                let Ok(mut obs) = observed.lock() else { return };
                match outcome {
                    Ok(Sampled::Tick) => obs.absorb(sampler.tick(), sampler.cost()),
                    Ok(Sampled::End) => {
                        obs.settle();
                        obs.ended = true
                    }
                    Err(e) => obs.error = Some(e.to_string()),
                }
                let (done, ticks) = (obs.ended || obs.error.is_some(), obs.history.ticks());
                drop(obs);
                on_tick(ticks);
                if done {
                    return;
                }
                let t = sampler.tick().t_ms;
                next += delay(pacing, interval, prev_t, t);
                prev_t = Some(t);
                let now = Instant::now();
                if next > now {
                    std::thread::sleep(next - now);
                } else if pacing == Pacing::Live {
                    next = now; // fell behind (a slow NVML call): do not burst to catch up
                }
            }
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::config::Thresholds;
    use crate::source::sim::{Scenario, SimSource};

    #[test]
    fn rules_run_at_most_every_200_ms_of_sample_time_and_settle_catches_up() {
        let mut src = SimSource::new(Scenario::Hang, 1, 7, 0, 50);
        let mut obs = Observed::new(&src, 50, 1000, Engine::new(Thresholds::default()));
        let mut tick = Tick::default();
        let mut judged = Vec::new();
        for _ in 0..9 {
            src.sample(&mut tick).unwrap();
            obs.absorb(&tick, SelfCost::default());
            judged.push(obs.evaluated_at_ms());
        }
        // Ticks at 0, 50, …, 400 ms: judged at 0, 200 and 400 only.
        let at = |t| Some(t);
        assert_eq!(
            judged,
            [0, 0, 0, 0, 200, 200, 200, 200, 400].map(at).to_vec()
        );
        src.sample(&mut tick).unwrap();
        obs.absorb(&tick, SelfCost::default());
        assert_eq!(obs.evaluated_at_ms(), Some(400), "450 ms is not due yet");
        obs.settle();
        assert_eq!(
            obs.evaluated_at_ms(),
            Some(450),
            "the end of a run judges the last tick"
        );
    }

    #[test]
    fn time_going_backwards_is_judged_at_once() {
        let mut src = SimSource::new(Scenario::Healthy, 1, 7, 10_000, 250);
        let mut obs = Observed::new(&src, 250, 100, Engine::new(Thresholds::default()));
        let mut tick = Tick::default();
        src.sample(&mut tick).unwrap();
        obs.absorb(&tick, SelfCost::default());
        tick.t_ms = 5_000;
        for d in &mut tick.devices {
            d.sample.t_ms = 5_000;
        }
        obs.absorb(&tick, SelfCost::default());
        assert_eq!(obs.evaluated_at_ms(), Some(5_000));
    }

    #[test]
    fn a_tiny_speed_or_a_huge_gap_waits_a_minute_at_most_and_never_panics() {
        let p = Pacing::Recorded { speed: 1e-30 };
        assert_eq!(
            delay(p, Duration::ZERO, Some(0), 1_000),
            Duration::from_secs(60)
        );
        let p = Pacing::Recorded { speed: 1.0 };
        assert_eq!(
            delay(p, Duration::ZERO, Some(0), u64::MAX),
            Duration::from_secs(60)
        );
    }

    #[test]
    fn live_pacing_waits_one_interval() {
        assert_eq!(
            delay(Pacing::Live, Duration::from_millis(250), None, 0),
            Duration::from_millis(250)
        );
    }

    #[test]
    fn recorded_pacing_follows_sample_times_and_speed() {
        let p = Pacing::Recorded { speed: 4.0 };
        assert_eq!(
            delay(p, Duration::ZERO, Some(1_000), 2_000),
            Duration::from_millis(250)
        );
        let fast = Pacing::Recorded {
            speed: f64::INFINITY,
        };
        assert_eq!(
            delay(fast, Duration::ZERO, Some(1_000), 9_000),
            Duration::ZERO
        );
    }
}
