//! The one sampling loop, used by the monitor and by every headless command. It reads the
//! source through the `Sampler`, paces it, stops when asked, at the source's end or after a
//! span of sample time, and hands each tick to a sink (the store, a recording file, a timer).
//!
//! Pacing: live GPUs are read every interval; simulated ones are too, in real time, unless
//! the plan says `Fast`; a recording follows its own timestamps divided by its speed, or runs
//! as fast as possible under `Fast`. Real GPUs are never read faster than their interval.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context, Result};

use crate::model::{SelfCost, Tick};
use crate::sampler::Sampler;
use crate::source::{Pacing, Sampled};
use crate::store::{Position, Store};

mod clock;
pub use clock::{Clock, SystemClock, VirtualClock};

/// Set by SIGINT, SIGTERM and SIGHUP so loops can end cleanly.
pub fn stop_flag() -> Result<Arc<AtomicBool>> {
    let flag = Arc::new(AtomicBool::new(false));
    for sig in [
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGHUP,
    ] {
        signal_hook::flag::register(sig, flag.clone()).context("installing signal handlers")?;
    }
    Ok(flag)
}

/// How often a paused replay, or one waiting at its end, looks for a seek.
const POLL: Duration = Duration::from_millis(50);

/// How fast to go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pace {
    /// At the pace of the source: real time for live and simulated GPUs, the recorded pace ×
    /// speed for a recording.
    Real,
    /// Without waiting where time is not real (simulated or recorded); live GPUs still wait.
    Fast,
}

/// What a run should do.
#[derive(Debug, Clone, Copy)]
pub struct Plan {
    pub pace: Pace,
    /// Stop once the samples span more than this (sample time, not wall time).
    pub span: Option<Duration>,
    /// Stop after this many ticks.
    pub ticks: Option<u64>,
}

impl Plan {
    #[must_use]
    pub fn until_stopped(pace: Pace) -> Self {
        Plan {
            pace,
            span: None,
            ticks: None,
        }
    }
}

/// One tick as the sink receives it.
pub struct Taken<'a> {
    pub tick: &'a Tick,
    pub cost: SelfCost,
    /// How long the source took to read it.
    pub took: Duration,
    /// The first tick after a replay went back to its start: what came before is to be
    /// forgotten.
    pub restart: bool,
    /// Sample time of the first tick of this play, and of the last where the source knows it.
    pub first_ms: u64,
    pub end_ms: Option<u64>,
}

/// What the screen asks of a replay: pause it, seek in it. Shared between the screen, which
/// asks, and the sampling thread, which does it between two ticks.
#[derive(Debug)]
pub struct Playback {
    paused: AtomicBool,
    /// Sample time asked for; `NO_SEEK` when nothing is asked.
    seek_to: AtomicU64,
    /// The sampling thread, woken when something is asked: it naps through a gap between two
    /// ticks, and a seek asked in a gap of 250 ms waited for its end (helper-35).
    sampler: std::sync::OnceLock<std::thread::Thread>,
}

impl Default for Playback {
    fn default() -> Self {
        Self::new()
    }
}

const NO_SEEK: u64 = u64::MAX;
/// Seek target meaning "the last tick", whatever its time.
pub const TO_END: u64 = u64::MAX - 1;

impl Playback {
    #[must_use]
    pub fn new() -> Self {
        Playback {
            paused: AtomicBool::new(false),
            seek_to: AtomicU64::new(NO_SEEK),
            sampler: std::sync::OnceLock::new(),
        }
    }
    pub fn set_paused(&self, paused: bool) {
        self.paused.store(paused, Ordering::Relaxed);
        self.wake_sampler();
    }
    /// The calling thread is the one that plays: a pause or a seek asked wakes it.
    fn played_here(&self) {
        let _ = self.sampler.set(std::thread::current());
    }
    fn wake_sampler(&self) {
        if let Some(t) = self.sampler.get() {
            t.unpark();
        }
    }
    #[must_use]
    pub fn paused(&self) -> bool {
        self.paused.load(Ordering::Relaxed)
    }
    /// Asks to go to sample time `t_ms` (or `TO_END`); the latest ask wins.
    pub fn seek(&self, t_ms: u64) {
        self.seek_to.store(t_ms.min(TO_END), Ordering::Relaxed);
        self.wake_sampler();
    }
    /// Whether a seek or a pause waits to be acted on.
    fn asked(&self) -> bool {
        self.paused() || self.seek_asked()
    }
    fn seek_asked(&self) -> bool {
        self.seek_to.load(Ordering::Relaxed) != NO_SEEK
    }
    fn take_seek(&self) -> Option<u64> {
        Some(self.seek_to.swap(NO_SEEK, Ordering::Relaxed)).filter(|t| *t != NO_SEEK)
    }
    /// Waits for a seek (or `stop`), the state of a replay that played to its end; with
    /// `back_before` (where it stopped at damage: its last tick's time), for a seek to before
    /// it.
    fn wait_for_seek_back(
        &self,
        back_before: Option<u64>,
        stop: &AtomicBool,
        clock: &dyn Clock,
    ) -> Option<u64> {
        while !stop.load(Ordering::Relaxed) {
            let back = |t: u64| back_before.is_none_or(|last| t < last);
            if let Some(t) = self.take_seek().filter(|&t| back(t)) {
                return Some(t);
            }
            clock.nap_until(clock.now() + POLL, stop);
        }
        None
    }
}

/// What a run did.
#[derive(Debug, Clone, Copy, Default)]
pub struct Ran {
    pub ticks: u64,
    pub first_ms: Option<u64>,
    pub last_ms: Option<u64>,
    /// The source had no more ticks (a recording played to its end).
    pub ended: bool,
}

impl Ran {
    /// Seconds of sample time between the first and last tick.
    #[must_use]
    pub fn seconds(&self) -> f64 {
        match (self.first_ms, self.last_ms) {
            (Some(a), Some(b)) => b.saturating_sub(a) as f64 / 1000.0,
            _ => 0.0,
        }
    }
}

/// Runs `plan` on `sampler`, giving every tick to `sink`, until `stop` is set, the plan is
/// done or the source ends. A source error or a sink error ends the run with that error.
pub fn drive(
    sampler: &mut Sampler,
    plan: &Plan,
    stop: &AtomicBool,
    sink: impl FnMut(Taken) -> Result<()>,
) -> Result<Ran> {
    let control = Control {
        stop,
        playback: None,
        clock: &SystemClock,
    };
    drive_controlled(sampler, plan, &control, sink, |_| {})
}

/// What steers a run from outside: the stop flag, a replay's pause and seeks, and the clock its
/// waits use.
pub struct Control<'a> {
    pub stop: &'a AtomicBool,
    pub playback: Option<&'a Playback>,
    pub clock: &'a dyn Clock,
}

/// How a replay's source stopped, as `at_end` is told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stopped {
    /// At its end; cut off where it says (a torn last line).
    Ended(Option<String>),
    /// At damage it cannot read past (a corrupt line, joined recordings): why.
    Failed(String),
}

/// `drive`, with a replay's pause and seeks asked through `control.playback`. With a playback,
/// the end of the source calls `at_end` and waits for a seek back (or `stop`) instead of
/// returning; so does damage in a file that can be read again, so that what came before it
/// can still be sought in.
#[allow(clippy::too_many_lines)] // the loop is one state machine (pause, seek, end, pacing) whose branches share its locals; split, its `continue`s would become flags
pub fn drive_controlled(
    sampler: &mut Sampler,
    plan: &Plan,
    control: &Control,
    mut sink: impl FnMut(Taken) -> Result<()>,
    mut at_end: impl FnMut(Stopped),
) -> Result<Ran> {
    let Control {
        stop,
        playback,
        clock,
    } = *control;
    let pacing = sampler.source().pacing();
    let interval = sampler.source().interval();
    let recorded = matches!(pacing, Pacing::Recorded { .. });
    let mut ran = Ran::default();
    let mut next = clock.now();
    // While a seek is under way: the sample time to play to without waiting.
    let mut fast_to: Option<u64> = None;
    let mut restart = false;
    while !stop.load(Ordering::Relaxed) && plan.ticks.is_none_or(|n| ran.ticks < n) {
        if let Some(pb) = playback {
            if let Some(target) = pb.take_seek() {
                if ran.last_ms.is_some_and(|last| target < last) && sampler.source().can_rewind() {
                    sampler.rewind()?;
                    ran = Ran::default();
                    restart = true;
                }
                fast_to = Some(target);
            }
            if fast_to.is_none() && pb.paused() {
                clock.sleep_until(clock.now() + POLL, stop);
                next = clock.now();
                continue;
            }
        }
        let started = clock.now();
        let stopped = match sampler.step() {
            Ok(Sampled::End) => Some(Stopped::Ended(sampler.source().cut_short())),
            Ok(_) => None,
            Err(e) if playback.is_some() && sampler.source().can_rewind() => {
                Some(Stopped::Failed(format!("{e:#}")))
            }
            Err(e) => return Err(e.into()),
        };
        if let Some(stopped) = stopped {
            ran.ended = true;
            fast_to = None;
            let Some(pb) = playback else { break };
            // Damage is not read past: only a seek back (the file opened again) leaves it (a
            // seek forward read on from the line after the bad one, and hid it).
            let back_before =
                matches!(stopped, Stopped::Failed(_)).then(|| ran.last_ms.unwrap_or(0));
            at_end(stopped);
            // The seek that ends the wait is handled where every seek is, at the loop's top.
            let Some(target) = pb.wait_for_seek_back(back_before, stop, clock) else {
                break;
            };
            pb.seek(target);
            next = clock.now();
            continue;
        }
        let took = clock.now().saturating_duration_since(started);
        let t = sampler.tick().t_ms;
        let first = *ran.first_ms.get_or_insert(t);
        if plan
            .span
            .is_some_and(|d| t.saturating_sub(first) > d.as_millis() as u64)
        {
            break;
        }
        if recorded && fast_to.is_none() && plan.pace != Pace::Fast {
            // A recorded tick is taken in at its own moment: the gap before it is waited
            // before it shows. Waited after it, each tick showed one gap early (helper-34).
            next += delay(sampler.source().pacing(), interval, ran.last_ms, t);
            wait_for_turn(clock, &mut next, stop, playback);
        }
        sink(Taken {
            tick: sampler.tick(),
            cost: sampler.cost(),
            took,
            restart: std::mem::take(&mut restart),
            first_ms: first,
            end_ms: sampler.source().end_ms(),
        })?;
        ran.ticks += 1;
        ran.ended = false;
        let prev = ran.last_ms.replace(t);
        if let Some(target) = fast_to {
            if t >= target {
                fast_to = None;
                next = clock.now();
            }
            continue;
        }
        let no_wait = plan.pace == Pace::Fast && sampler.source().virtual_time();
        if recorded || no_wait {
            continue;
        }
        next += delay(sampler.source().pacing(), interval, prev, t);
        let now = clock.now();
        if next > now {
            pace_until(clock, next, stop, playback);
        } else {
            next = now; // fell behind (a slow NVML call): do not burst to catch up
        }
    }
    Ok(ran)
}

/// Sleeps until `at`, or until a replay is asked to seek or pause: a gap between two ticks is
/// long at a slow speed (20 s at `--speed 0.01`, 10 s at the recorded pace of a 10 s
/// interval), and a seek asked in it waited for its end.
fn pace_until(clock: &dyn Clock, at: Instant, stop: &AtomicBool, playback: Option<&Playback>) {
    let Some(pb) = playback else {
        clock.sleep_until(at, stop);
        return;
    };
    // The gap is napped whole: the screen's ask wakes this thread (`Playback::wake_sampler`).
    while clock.now() < at && !stop.load(Ordering::Relaxed) && !pb.asked() {
        clock.nap_until(at, stop);
    }
}

/// Waits until `next`, when a replay's tick is due. A pause holds the wait and moves `next` on
/// by its length, so the tick shows the rest of its gap after the pause; a seek (taken at the
/// loop's top, after this tick) or `stop` ends it. A tick already late is not waited for:
/// a replay that fell behind plays on at once until it has caught up.
fn wait_for_turn(
    clock: &dyn Clock,
    next: &mut Instant,
    stop: &AtomicBool,
    playback: Option<&Playback>,
) {
    loop {
        pace_until(clock, *next, stop, playback);
        let holding = playback.is_some_and(|pb| pb.paused() && !pb.seek_asked());
        if !holding || stop.load(Ordering::Relaxed) {
            return;
        }
        let before = clock.now();
        clock.nap_until(before + POLL, stop);
        *next += clock.now().saturating_duration_since(before);
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

/// Runs the monitor's sampling on a thread of its own (NVML calls block, so never on an async
/// worker) until `stop` is set or the source ends, feeding `store`. `wake` is called after each
/// tick has been taken in, and once more at the end (the screen redraws there).
pub fn spawn(
    sampler: Sampler,
    store: Arc<Mutex<Store>>,
    stop: Arc<AtomicBool>,
    playback: Option<Arc<Playback>>,
    wake: impl FnMut() + Send + 'static,
) -> std::io::Result<std::thread::JoinHandle<()>> {
    spawn_with_clock(sampler, store, stop, playback, Arc::new(SystemClock), wake)
}

/// `spawn`, its waits on `clock`.
pub fn spawn_with_clock(
    mut sampler: Sampler,
    store: Arc<Mutex<Store>>,
    stop: Arc<AtomicBool>,
    playback: Option<Arc<Playback>>,
    clock: Arc<dyn Clock>,
    wake: impl FnMut() + Send + 'static,
) -> std::io::Result<std::thread::JoinHandle<()>> {
    std::thread::Builder::new()
        .name("gpuwatch-sampler".into())
        .spawn(move || {
            // Both callbacks below run on this thread, one at a time: a RefCell shares `wake`.
            let wake = std::cell::RefCell::new(wake);
            let wake_now = || (wake.borrow_mut())();
            let plan = Plan::until_stopped(Pace::Real);
            let can_rewind = sampler.source().can_rewind();
            let replay = playback.is_some();
            if let Some(pb) = &playback {
                pb.played_here();
            }
            let control = Control {
                stop: &stop,
                playback: playback.as_deref(),
                clock: clock.as_ref(),
            };
            let ran = drive_controlled(
                &mut sampler,
                &plan,
                &control,
                |taken| {
                    let mut s = store.lock().map_err(|_| anyhow!("the screen crashed"))?;
                    if taken.restart {
                        s.restart();
                    }
                    s.absorb(taken.tick, taken.cost);
                    if replay {
                        s.set_position(Position {
                            first_ms: taken.first_ms,
                            end_ms: taken.end_ms,
                            can_rewind,
                        });
                    }
                    drop(s);
                    wake_now();
                    Ok(())
                },
                |stopped| {
                    if let Ok(mut s) = store.lock() {
                        match stopped {
                            Stopped::Ended(cut) => s.end(cut),
                            Stopped::Failed(why) => s.fail(why),
                        }
                    }
                    wake_now();
                },
            );
            if let Ok(mut s) = store.lock() {
                match ran {
                    // A replay's end was taken in where it came (`at_end`), once.
                    Ok(r) if r.ended && !replay => s.end(sampler.source().cut_short()),
                    Ok(_) => {}
                    Err(e) => s.fail(format!("{e:#}")),
                }
            }
            wake_now();
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::source::sim::{Scenario, SimSource};

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

    fn sim(interval_ms: u64) -> Sampler {
        Sampler::new(Box::new(SimSource::new(
            Scenario::Healthy,
            1,
            7,
            0,
            interval_ms,
        )))
    }

    /// Simulated time runs fast only when asked: 4 ticks at 50 ms wait 4 intervals of the
    /// loop's clock; fast, the clock never moves.
    #[test]
    fn simulated_time_is_paced_unless_fast() {
        let stop = AtomicBool::new(false);
        let plan = |pace| Plan {
            pace,
            span: None,
            ticks: Some(4),
        };
        let run = |interval_ms, pace| {
            let clock = VirtualClock::default();
            let control = Control {
                stop: &stop,
                playback: None,
                clock: &clock,
            };
            let ran = drive_controlled(
                &mut sim(interval_ms),
                &plan(pace),
                &control,
                |_| Ok(()),
                |_| {},
            )
            .unwrap();
            (ran.ticks, ran.seconds(), clock.elapsed())
        };
        assert_eq!(run(50, Pace::Real), (4, 0.15, Duration::from_millis(200)));
        assert_eq!(run(5_000, Pace::Fast), (4, 15.0, Duration::ZERO));
    }

    #[test]
    fn a_span_of_sample_time_ends_the_run_and_a_sink_error_is_the_runs() {
        let stop = AtomicBool::new(false);
        let plan = Plan {
            pace: Pace::Fast,
            span: Some(Duration::from_secs(10)),
            ticks: None,
        };
        let ran = drive(&mut sim(250), &plan, &stop, |_| Ok(())).unwrap();
        assert_eq!((ran.ticks, ran.seconds()), (41, 10.0));
        let e = drive(&mut sim(250), &plan, &stop, |_| Err(anyhow!("disk full"))).unwrap_err();
        assert_eq!(e.to_string(), "disk full");
    }
}
