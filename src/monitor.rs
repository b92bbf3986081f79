//! The pipeline in one place: a source, the sampler that reads it, the store that keeps what was
//! seen and judges it, and the pacer's loop between them. The screen and the exporter start a
//! `Monitor` (sampling on a thread of its own) and read, pause, seek and wait through it; the
//! headless commands drive a `Headless` one on their own thread with a plan of their own.
//!
//! Readers read the store in place under its lock (`Monitor::read`): the history is held once.
//! A frame or a scrape holds the lock for the time it takes to draw or encode (under a
//! millisecond at 8 GPUs), which the sampling thread waits out between two reads of the
//! source; sample times come from the source, so that wait never shows in the data.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context, Result};
use tokio::sync::Notify;

// What a front end is handed (a source, the config) and reads (the store), so that front ends
// reach the pipeline through this module alone (`tests/architecture.rs` checks it).
pub use crate::config::{Config, Thresholds};
pub use crate::pacer::{stop_flag, Pace, Plan, Ran, Taken, TO_END};
use crate::pacer::{Clock, Playback, SystemClock};
use crate::sampler::Sampler;
use crate::source::Pacing;
pub use crate::source::Source;
use crate::stack::burst::StackLink;
pub use crate::store::Store;

/// Whether `source` plays a recording or a snapshot back (rather than reading GPUs, live or
/// simulated).
#[must_use]
pub fn replays(source: &dyn Source) -> bool {
    matches!(source.pacing(), Pacing::Recorded { .. })
}

/// How a pipeline is set up.
#[derive(Clone)]
pub struct Setup {
    /// How much history the store keeps (at the source's interval).
    pub history: Duration,
    pub thresholds: Thresholds,
    /// Where the sampling loop's waits take their time from (a test's virtual clock).
    pub clock: Arc<dyn Clock>,
    /// Ends sampling when set; by default SIGINT, SIGTERM and SIGHUP set it.
    pub stop: Option<Arc<AtomicBool>>,
    /// Judge every tick. A recording judges only to choose whose stacks to read, and not at
    /// all where there are none to read (a simulation, a replay).
    pub judge: bool,
    /// Read the processes' Python stacks where they are this machine's (unless `--no-stacks`).
    pub stacks: bool,
}

/// Fifteen minutes of history, as the monitor keeps by default.
pub const HISTORY: Duration = Duration::from_secs(900);

impl Setup {
    #[must_use]
    pub fn new(config: &Config) -> Self {
        Setup::judging_with(config.thresholds.clone())
    }
    /// Default settings with these thresholds.
    #[must_use]
    pub fn judging_with(thresholds: Thresholds) -> Self {
        Setup {
            history: HISTORY,
            thresholds,
            clock: Arc::new(SystemClock),
            stop: None,
            judge: true,
            stacks: true,
        }
    }
    #[must_use]
    pub fn history(mut self, span: Duration) -> Self {
        self.history = span;
        self
    }
    #[must_use]
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }
    #[must_use]
    pub fn stop(mut self, flag: Arc<AtomicBool>) -> Self {
        self.stop = Some(flag);
        self
    }
    /// Judges only where stacks are to be read (see `judge`).
    #[must_use]
    pub fn judge_only_for_stacks(mut self) -> Self {
        self.judge = false;
        self
    }
    /// Reads no stacks, and so judges nothing unless `judge` (what NVML calls cost, the
    /// processes on the GPUs).
    #[must_use]
    pub fn without_stacks(mut self) -> Self {
        self.stacks = false;
        self
    }
    fn stop_flag(&self) -> Result<Arc<AtomicBool>> {
        self.stop.clone().map_or_else(crate::pacer::stop_flag, Ok)
    }
}

/// The sampler and the store over `source`, sharing one stack link (none for a recording or a
/// simulation, whose pids are not this machine's, or under `--no-stacks`).
fn parts(source: Box<dyn Source>, setup: &Setup) -> Result<(Sampler, Store, Option<StackLink>)> {
    let stacks = crate::sampler::stack_link(source.as_ref()).filter(|_| setup.stacks);
    let store = Store::new(source.as_ref(), setup.history, setup.thresholds.clone())
        .map_err(|e| anyhow!(e))?
        .with_stacks(stacks.clone());
    let sampler = Sampler::new(source).with_stacks(stacks.clone());
    Ok((sampler, store, stacks))
}

/// How long a pipeline has run each time the code only its start-up ran is given back.
const SETTLING: [Duration; 2] = [Duration::from_secs(2), Duration::from_secs(10)];

/// Gives back the pages of code that only start-up needed (`sys::release_start_up_pages`) as
/// the pipeline starts and when it has run for each of `SETTLING`. Wall time, not sample
/// time: this is about the process, not what it samples.
///
/// The first release drops what ran before the pipeline (NVML's first round of calls, the
/// terminal's set-up) before the first tick and frame fault their code in. The one at 2 s
/// drops what only the first rounds ran, before the rules' first look at a process (about
/// 1 MiB of code and tables, held to 3 s in by `stack::burst::FIRST_LOOK`) adds to it: the
/// peak resident size is taken over the whole run, and formed there (run 95). The one at 10 s
/// drops what ran once since. `sys::release_start_up_pages` runs before and after `nvmlInit`
/// as well (`source::open_live`, `NvmlSource::open`).
struct StartUp {
    since: Instant,
    done: usize,
}

/// Whether the release as a pipeline starts has been made: once a process (tests start many).
static STARTED: std::sync::Once = std::sync::Once::new();

impl StartUp {
    fn new() -> StartUp {
        STARTED.call_once(|| {
            // Failing costs only memory: the pages stay resident, as they did before.
            let _ = crate::sys::release_start_up_pages();
        });
        StartUp {
            since: Instant::now(),
            done: 0,
        }
    }
    fn tick(&mut self) {
        if SETTLING
            .get(self.done)
            .is_some_and(|&at| self.since.elapsed() >= at)
        {
            self.done += 1;
            let _ = crate::sys::release_start_up_pages();
        }
    }
}

/// A pipeline sampling on a thread of its own (NVML calls block: never on an async worker).
/// Dropping it ends sampling.
pub struct Monitor {
    store: Arc<Mutex<Store>>,
    data: Arc<Notify>,
    playback: Option<Arc<Playback>>,
    stacks: Option<StackLink>,
    stop: Arc<AtomicBool>,
}

impl Monitor {
    /// Starts sampling `source` as `setup` says.
    pub fn start(source: Box<dyn Source>, setup: &Setup) -> Result<Monitor> {
        let stop = setup.stop_flag()?;
        let replay = replays(&*source);
        let (sampler, store, stacks) = parts(source, setup)?;
        let store = Arc::new(Mutex::new(store));
        let playback = replay.then(|| Arc::new(Playback::new()));
        let data = Arc::new(Notify::new());
        let poke = data.clone();
        let mut start_up = StartUp::new();
        crate::pacer::spawn_with_clock(
            sampler,
            store.clone(),
            stop.clone(),
            playback.clone(),
            setup.clock.clone(),
            move || {
                poke.notify_one();
                start_up.tick();
            },
        )
        .context("starting the sampler thread")?;
        Ok(Monitor {
            store,
            data,
            playback,
            stacks,
            stop,
        })
    }

    /// A monitor over a store that its caller fills (a test): nothing samples, and `notify`
    /// tells readers of new data.
    #[must_use]
    pub fn over(store: Store) -> Monitor {
        Monitor {
            store: Arc::new(Mutex::new(store)),
            data: Arc::new(Notify::new()),
            playback: None,
            stacks: None,
            stop: Arc::new(AtomicBool::new(false)),
        }
    }

    /// The store, locked: hold it only to read (the sampling thread waits meanwhile).
    pub fn lock(&self) -> Result<MutexGuard<'_, Store>> {
        self.store
            .lock()
            .map_err(|_| anyhow!("the sampler thread crashed"))
    }

    /// Reads the store in place.
    pub fn read<R>(&self, f: impl FnOnce(&Store) -> R) -> Result<R> {
        Ok(f(&*self.lock()?))
    }

    /// Waits until the sampler has taken a tick in (or sampling ended) since the last wait.
    pub async fn changed(&self) {
        self.data.notified().await;
    }

    /// Tells readers that the store changed (for a store filled from outside, `over`).
    pub fn notify(&self) {
        self.data.notify_one();
    }

    /// A recording or snapshot played back: pausing stops its playing, and it can seek.
    #[must_use]
    pub fn is_replay(&self) -> bool {
        self.playback.is_some()
    }

    /// Pauses or resumes a replay's playing. Live GPUs are sampled on regardless: a paused
    /// screen of live GPUs keeps its own copy instead.
    pub fn set_paused(&self, paused: bool) {
        if let Some(pb) = &self.playback {
            pb.set_paused(paused);
        }
    }

    /// Asks a replay to go to sample time `t_ms` (`pacer::TO_END`: its last tick).
    pub fn seek(&self, t_ms: u64) {
        if let Some(pb) = &self.playback {
            pb.seek(t_ms);
        }
    }

    /// Where a process's stacks are asked for; `None` under `--no-stacks` or without live GPUs.
    #[must_use]
    pub fn stacks(&self) -> Option<&StackLink> {
        self.stacks.as_ref()
    }
}

impl Drop for Monitor {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// A pipeline driven on the caller's thread (the headless commands).
pub struct Headless {
    sampler: Sampler,
    store: Store,
    stop: Arc<AtomicBool>,
    clock: Arc<dyn Clock>,
    judge: bool,
}

impl Headless {
    pub fn new(source: Box<dyn Source>, setup: &Setup) -> Result<Headless> {
        let stop = setup.stop_flag()?;
        let (sampler, store, stacks) = parts(source, setup)?;
        Ok(Headless {
            sampler,
            store,
            stop,
            clock: setup.clock.clone(),
            judge: setup.judge || stacks.is_some(),
        })
    }

    /// Runs `plan`: every tick goes into the store, then to `each` with the store as it now
    /// is. The last tick is judged before this returns.
    pub fn run(
        &mut self,
        plan: &Plan,
        mut each: impl FnMut(&Taken, &Store) -> Result<()>,
    ) -> Result<Ran> {
        let Headless {
            sampler,
            store,
            stop,
            clock,
            judge,
        } = self;
        let control = crate::pacer::Control {
            stop,
            playback: None,
            clock: &**clock,
        };
        let mut start_up = StartUp::new();
        let sink = |taken: Taken| {
            if *judge {
                store.absorb(taken.tick, taken.cost);
            }
            start_up.tick();
            each(&taken, store)
        };
        let ran = crate::pacer::drive_controlled(sampler, plan, &control, sink, |_| {})?;
        store.note_cut(sampler.source().cut_short());
        if *judge {
            store.settle();
        }
        Ok(ran)
    }

    #[must_use]
    pub fn store(&self) -> &Store {
        &self.store
    }

    #[must_use]
    pub fn into_store(self) -> Store {
        self.store
    }

    #[must_use]
    pub fn source(&self) -> &dyn Source {
        self.sampler.source()
    }
}
