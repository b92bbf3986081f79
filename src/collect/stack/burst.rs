//! The stack thread: reads bursts of Python stacks when asked, off the sampling tick, with a
//! budget of its own: one burst at a time, each process at most once per `repeat` for what the
//! rules ask (at once when the user asks). The store says which processes its findings want
//! (`want`), the screen asks for one (`ask`), and the sampler takes finished bursts into the
//! next tick (`take_done`), so recordings keep them and a replay judges as the live run did.

use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::model::stack::{StackBurst, StackClass, StackOutcome};

use super::reader::Reader;
use super::Plan;

/// Set once at start by `--no-stacks`: no process is read.
static DISABLED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Read no stacks from now on (`--no-stacks`).
pub fn disable() {
    DISABLED.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// How often the rules may have one process read as evidence (a cause open or timed on its
/// GPU), and now and then (its GPU draws less than half its TDP). A burst costs tens of ms of
/// CPU per process (docs/stacks.md, measured on the H200).
pub const REPEAT_EVIDENCE: Duration = Duration::from_secs(15);
pub const REPEAT_BACKGROUND: Duration = Duration::from_secs(30);

/// How long a live pipeline waits before the rules may have a process read: past the release
/// of start-up's pages 2 s in (`monitor::SETTLING`). A first look maps about 1 MiB (py-spy's
/// code, the regexes it compiles, the interpreter's symbols); made before that release it
/// added to start-up's pages, and the monitor's peak resident size was 23.6 MiB, against 23.0
/// when it came after (run 96, H100). The user's ask is never held back.
pub const FIRST_LOOK: Duration = Duration::from_secs(3);

/// The link a live pipeline uses; none under `--no-stacks`.
#[must_use]
pub fn live_link() -> Option<StackLink> {
    (!DISABLED.load(std::sync::atomic::Ordering::Relaxed)).then(|| {
        StackLink::new(
            (Plan::EVIDENCE, REPEAT_EVIDENCE),
            (Plan::BACKGROUND, REPEAT_BACKGROUND),
        )
        .first_look_after(FIRST_LOOK)
    })
}

/// The store tells the link what its rules want read.
impl crate::model::stack::Wants for StackLink {
    fn want(&self, pids: &[(u32, bool)]) {
        StackLink::want(self, pids);
    }
}

/// Shared between the store, the screen, the sampler and the stack thread.
#[derive(Clone)]
pub struct StackLink {
    shared: Arc<Shared>,
}

struct Shared {
    state: Mutex<State>,
    wake: Condvar,
    /// What a burst reads, and how often a process may be read, when urgent (evidence, or the
    /// user asked) and when not.
    urgent: (Plan, Duration),
    background: (Plan, Duration),
}

/// A process's last burst: when it ended, where its main thread mostly was, and whether the
/// burst before found it in the same place.
struct Seen {
    pid: u32,
    at: Instant,
    place: Option<(StackClass, String, u32)>,
    /// Two bursts in a row found the same: its evidence is read at the background pace (30 s,
    /// still fresh for the rules' 40 s) until it moves. A warning open for hours on a loop
    /// that waits in one line re-read it every 15 s: most of the stack thread's CPU beside the
    /// overhead runs' load (run 82).
    steady: bool,
}

/// Where a burst found the main thread most: its class and its own innermost frame.
fn place(burst: &StackBurst) -> Option<(StackClass, String, u32)> {
    let main = burst.main_thread()?;
    let at = main.user_frame().or_else(|| main.top());
    Some((
        main.class,
        at.map(|f| f.file.clone()).unwrap_or_default(),
        at.map_or(0, |f| f.line),
    ))
}

#[derive(Default)]
struct State {
    /// What the rules want read (by pid, urgent or not), and what the user asked for.
    wanted: Vec<(u32, bool)>,
    asked: Vec<u32>,
    /// Each process's last burst (bounded by `wanted`).
    last: Vec<Seen>,
    done: Vec<StackBurst>,
    /// The first "not permitted" message: said once, whichever process met it.
    denied: Option<String>,
    /// Before this, no process is read for the rules (`first_look_after`); at once if none.
    first_look: Option<Instant>,
    started: bool,
    stopped: bool,
}

impl StackLink {
    /// A link whose thread starts on the first request: a process the rules want as evidence
    /// (or the user asks for) is read with `urgent`'s plan at most once per its repeat, one
    /// they want otherwise with `background`'s.
    #[must_use]
    pub fn new(urgent: (Plan, Duration), background: (Plan, Duration)) -> Self {
        StackLink {
            shared: Arc::new(Shared {
                state: Mutex::new(State::default()),
                wake: Condvar::new(),
                urgent,
                background,
            }),
        }
    }

    /// Reads nothing the rules want until `wait` from now (`FIRST_LOOK`).
    #[must_use]
    pub fn first_look_after(self, wait: Duration) -> Self {
        self.state().first_look = Some(Instant::now() + wait);
        self
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.shared
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// The processes the rules want read now, each urgent or not (replaces the previous set).
    /// Cheap when unchanged: called after every evaluation.
    pub fn want(&self, pids: &[(u32, bool)]) {
        let mut s = self.state();
        if s.wanted == pids {
            return;
        }
        s.wanted.clear();
        s.wanted.extend_from_slice(pids);
        let keep: Vec<u32> = pids.iter().map(|(p, _)| *p).collect();
        s.last.retain(|seen| keep.contains(&seen.pid));
        let start = !pids.is_empty() && !s.started;
        s.started |= start;
        drop(s);
        if start {
            self.start();
        }
        self.shared.wake.notify_all();
    }

    /// Reads `pid` as soon as the thread is free (a key in the process view, `stacks`).
    pub fn ask(&self, pid: u32) {
        let mut s = self.state();
        if !s.asked.contains(&pid) {
            s.asked.push(pid);
        }
        let start = !s.started;
        s.started = true;
        drop(s);
        if start {
            self.start();
        }
        self.shared.wake.notify_all();
    }

    /// Moves the bursts finished since the last call into `out`; never waits for the thread.
    pub fn take_done(&self, out: &mut Vec<StackBurst>) {
        if let Ok(mut s) = self.shared.state.try_lock() {
            out.append(&mut s.done);
        }
    }

    /// The "not permitted" message, once one was met.
    #[must_use]
    pub fn denied(&self) -> Option<String> {
        self.state().denied.clone()
    }

    /// Ends the thread after its current burst.
    pub fn stop(&self) {
        self.state().stopped = true;
        self.shared.wake.notify_all();
    }

    fn start(&self) {
        let link = self.clone();
        // A thread that cannot start leaves findings without stacks, nothing worse.
        let _ = std::thread::Builder::new()
            .name("gpuwatch-stacks".into())
            .spawn(move || link.run());
    }

    /// The thread: waits for a process that is due, reads it, hands the burst over.
    fn run(&self) {
        let mut reader = Reader::default();
        loop {
            let Some((pid, urgent)) = self.next_due() else {
                return;
            };
            let plan = if urgent {
                &self.shared.urgent.0
            } else {
                &self.shared.background.0
            };
            let burst = super::sample(&mut reader, pid, plan, crate::model::now_ms);
            let mut s = self.state();
            if burst.outcome == StackOutcome::NoPermission && s.denied.is_none() {
                s.denied.clone_from(&burst.message);
            }
            let place = place(&burst);
            let steady = s
                .last
                .iter()
                .any(|seen| seen.pid == pid && place.is_some() && seen.place == place);
            s.last.retain(|seen| seen.pid != pid);
            s.last.push(Seen {
                pid,
                at: Instant::now(),
                place,
                steady,
            });
            s.done.push(burst);
            // Bounded if nobody takes them (a sampler that stopped).
            let over = s.done.len().saturating_sub(64);
            s.done.drain(..over);
            let keep: Vec<u32> = s.wanted.iter().map(|(p, _)| *p).collect();
            drop(s);
            reader.keep_only(&keep);
        }
    }

    /// The next process to read and whether urgently, waiting until one is due; `None` once
    /// stopped.
    fn next_due(&self) -> Option<(u32, bool)> {
        let mut s = self.state();
        loop {
            if s.stopped {
                return None;
            }
            if !s.asked.is_empty() {
                return Some((s.asked.remove(0), true));
            }
            let now = Instant::now();
            let (urgent, background) = (self.shared.urgent.1, self.shared.background.1);
            let first = s.first_look.map(|at| at.saturating_duration_since(now));
            let due_in = |&(pid, hurry): &(u32, bool)| {
                let Some(seen) = s.last.iter().find(|seen| seen.pid == pid) else {
                    return first.unwrap_or(Duration::ZERO);
                };
                let repeat = if hurry && !seen.steady {
                    urgent
                } else {
                    background
                };
                (seen.at + repeat).saturating_duration_since(now)
            };
            // The soonest due; of those due now, urgent ones first.
            let next = s
                .wanted
                .iter()
                .map(|w| (w.0, due_in(w), !w.1))
                .min_by_key(|(_, d, calm)| (*d, *calm));
            let wait = match next {
                Some((pid, d, calm)) if d.is_zero() => return Some((pid, !calm)),
                Some((_, d, _)) => d,
                None => Duration::from_secs(3600),
            };
            s = self
                .shared
                .wake
                .wait_timeout(s, wait)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }
}
