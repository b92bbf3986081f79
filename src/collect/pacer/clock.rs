//! Where the sampling loop's waits and wall time come from: the system's clock, or a test's
//! virtual one that lets minutes of pacing pass at once.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Where the loop's waits and wall time come from: the system's clock, or a test's, so that a
/// test can let minutes pass without waiting for them.
pub trait Clock: Send + Sync {
    fn now(&self) -> Instant;
    /// Sleeps until `at`, returning early once `stop` is set (noticed within a second).
    fn sleep_until(&self, at: Instant, stop: &AtomicBool);
    /// As `sleep_until`, but a replay's sampling thread is also woken when the screen asks to
    /// pause or seek (`Playback` unparks it); it may return early for nothing, so the caller
    /// checks what it waits for. A test's clock sleeps.
    fn nap_until(&self, at: Instant, stop: &AtomicBool) {
        self.sleep_until(at, stop);
    }
}

/// How long a sleeping loop may take to notice `stop` (a signal sets it; nothing can wake the
/// sleep). Slices of 200 ms woke the sampler five times a second at `--interval 1s`, four of
/// them for nothing, a tenth of what sampling at 1 s costs; a monitor's sampling thread is
/// not waited for on exit, and `record` or `diagnose` stopped by Ctrl-C finish within it.
const STOP_NOTICED_WITHIN: Duration = Duration::from_secs(1);

/// The system's monotonic clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Instant {
        Instant::now()
    }
    fn sleep_until(&self, at: Instant, stop: &AtomicBool) {
        while !stop.load(Ordering::Relaxed) {
            let now = Instant::now();
            if now >= at {
                return;
            }
            std::thread::sleep((at - now).min(STOP_NOTICED_WITHIN));
        }
    }
    fn nap_until(&self, at: Instant, stop: &AtomicBool) {
        let now = Instant::now();
        if now < at && !stop.load(Ordering::Relaxed) {
            std::thread::park_timeout((at - now).min(STOP_NOTICED_WITHIN));
        }
    }
}

/// A clock whose time moves only when the loop sleeps: each sleep ends at once, the clock
/// jumped to its end (as tokio's paused time does). Minutes of pacing pass in microseconds, and
/// a test waits for a span of the loop's time to pass instead of sleeping.
#[derive(Debug)]
pub struct VirtualClock {
    start: Instant,
    elapsed: Mutex<Duration>,
    moved: std::sync::Condvar,
}

impl Default for VirtualClock {
    fn default() -> Self {
        VirtualClock {
            start: Instant::now(),
            elapsed: Mutex::new(Duration::ZERO),
            moved: std::sync::Condvar::new(),
        }
    }
}

impl VirtualClock {
    /// How far the clock has moved since it was made.
    #[must_use]
    pub fn elapsed(&self) -> Duration {
        *self
            .elapsed
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
    /// Waits until the clock has moved `by` past where it is now; false if that took more than
    /// `limit` of real time (the loop stopped sleeping).
    pub fn wait_passed(&self, by: Duration, limit: Duration) -> bool {
        let guard = self
            .elapsed
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let until = *guard + by;
        let (guard, _) = self
            .moved
            .wait_timeout_while(guard, limit, |e| *e < until)
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        *guard >= until
    }
}

impl Clock for VirtualClock {
    fn now(&self) -> Instant {
        self.start + self.elapsed()
    }
    fn sleep_until(&self, at: Instant, stop: &AtomicBool) {
        if stop.load(Ordering::Relaxed) {
            return;
        }
        let mut e = self
            .elapsed
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        *e = (*e).max(at.saturating_duration_since(self.start));
        drop(e);
        self.moved.notify_all();
        // A loop that only sleeps (paused, or at its end) must not starve the test's thread.
        std::thread::yield_now();
    }
}
