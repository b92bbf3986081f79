//! The driver's events (Xid errors, ECC errors) as they come, on a thread of their own: it
//! sleeps in the driver's wait until an event or its timeout, so it never holds up a tick,
//! and the source takes what arrived into the next tick.
//!
//! The loop is written against `EventWait`, the shape of NVML's event API (`nvmlEventSetWait`:
//! one event, or a timeout, or an error), so it is tested without a GPU.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::model::{EventKind, GpuEvent};

/// NVML's event type bits (`nvmlEventType*`) gpuwatch listens for.
pub const SINGLE_BIT_ECC: u64 = 0x1;
pub const DOUBLE_BIT_ECC: u64 = 0x2;
pub const CRITICAL_XID: u64 = 0x8;
/// The others the driver offers (P-state and clock changes, power source, MIG
/// configuration) say nothing about health, and clock changes come several a second.
pub const LISTENED: u64 = SINGLE_BIT_ECC | DOUBLE_BIT_ECC | CRITICAL_XID;

/// What one wait returned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Waited {
    /// `device`: its NVML index, where NVML could say; `xid`: the code, for an Xid.
    Event {
        device: Option<u32>,
        bits: u64,
        xid: Option<u64>,
    },
    Timeout,
    /// The wait failed (the GPU was lost, the driver went away): tried again after a pause.
    Failed(String),
}

/// NVML's `nvmlEventSetWait`, or a test's stand-in.
pub trait EventWait: Send {
    fn wait(&mut self, timeout_ms: u32) -> Waited;
}

/// How long one wait sleeps in the driver: how late a stop is seen (the thread is not joined,
/// so nothing waits for it), and how often a quiet thread wakes: once a second, as the
/// sampling loop does (`pacer::STOP_NOTICED_WITHIN`).
pub const WAIT_MS: u32 = 1_000;
/// After a failed wait: a lost GPU fails every wait at once, which must not spin a core.
const AFTER_FAILURE: Duration = Duration::from_secs(1);
/// Events held for the source at most: a storm while no tick takes them loses the oldest.
const INBOX_MAX: usize = 1024;

/// Where the thread leaves events for the source.
pub type Inbox = Arc<Mutex<Vec<GpuEvent>>>;

/// The event an NVML event is, if it is one gpuwatch keeps.
#[must_use]
pub fn kind_of(bits: u64, xid: Option<u64>) -> Option<EventKind> {
    if bits & CRITICAL_XID != 0 {
        Some(EventKind::Xid { code: xid })
    } else if bits & DOUBLE_BIT_ECC != 0 {
        Some(EventKind::EccUncorrected)
    } else if bits & SINGLE_BIT_ECC != 0 {
        Some(EventKind::EccCorrected)
    } else {
        None
    }
}

/// Waits for events until `stop`, leaving each in `inbox` stamped with `now()`.
pub fn run(wait: &mut dyn EventWait, inbox: &Inbox, stop: &AtomicBool, now: &dyn Fn() -> u64) {
    while !stop.load(Ordering::Relaxed) {
        match wait.wait(WAIT_MS) {
            Waited::Event { device, bits, xid } => {
                let (Some(device), Some(kind)) = (device, kind_of(bits, xid)) else {
                    continue;
                };
                let Ok(mut q) = inbox.lock() else { return };
                if q.len() >= INBOX_MAX {
                    q.remove(0);
                }
                q.push(GpuEvent {
                    t_ms: now(),
                    device,
                    kind,
                });
            }
            Waited::Timeout => {}
            Waited::Failed(_) => std::thread::sleep(AFTER_FAILURE),
        }
    }
}

/// Starts `run` on a thread named `gpuwatch-nvml-events`. It is not joined: it sees `stop`
/// within `WAIT_MS` and ends by itself.
pub fn spawn(
    mut wait: Box<dyn EventWait>,
    inbox: Inbox,
    stop: Arc<AtomicBool>,
) -> std::io::Result<()> {
    std::thread::Builder::new()
        .name("gpuwatch-nvml-events".into())
        .spawn(move || run(wait.as_mut(), &inbox, &stop, &crate::model::now_ms))
        .map(|_| ())
}

/// Moves what arrived into `out` (cleared first); allocates only when events came.
pub fn take(inbox: &Inbox, out: &mut Vec<GpuEvent>) {
    out.clear();
    if let Ok(mut q) = inbox.lock() {
        out.append(&mut q);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::VecDeque;
    use std::time::Instant;

    /// Replays a script of waits, then times out (sleeping as the driver would).
    struct Script {
        steps: VecDeque<Waited>,
        calls: Arc<Mutex<u32>>,
    }

    impl EventWait for Script {
        fn wait(&mut self, timeout_ms: u32) -> Waited {
            *self.calls.lock().unwrap() += 1;
            self.steps.pop_front().unwrap_or_else(|| {
                std::thread::sleep(Duration::from_millis(u64::from(timeout_ms.min(20))));
                Waited::Timeout
            })
        }
    }

    fn script(steps: Vec<Waited>) -> (Box<dyn EventWait>, Arc<Mutex<u32>>) {
        let calls = Arc::new(Mutex::new(0));
        let s = Script {
            steps: steps.into(),
            calls: calls.clone(),
        };
        (Box::new(s), calls)
    }

    #[test]
    fn xid_and_ecc_events_arrive_as_the_driver_sent_them_and_others_are_dropped() {
        let (wait, _) = script(vec![
            Waited::Event {
                device: Some(2),
                bits: CRITICAL_XID,
                xid: Some(79),
            },
            Waited::Timeout,
            Waited::Event {
                device: Some(0),
                bits: 0x10, // a clock change: not health
                xid: None,
            },
            Waited::Event {
                device: Some(0),
                bits: DOUBLE_BIT_ECC,
                xid: None,
            },
            Waited::Event {
                device: None, // NVML could not say which GPU
                bits: CRITICAL_XID,
                xid: Some(13),
            },
            Waited::Event {
                device: Some(1),
                bits: CRITICAL_XID,
                xid: None, // "unknown": several came at once
            },
        ]);
        let inbox: Inbox = Arc::default();
        let stop = Arc::new(AtomicBool::new(false));
        spawn(wait, inbox.clone(), stop.clone()).unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        while inbox.lock().unwrap().len() < 3 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        stop.store(true, Ordering::Relaxed);
        let mut got = Vec::new();
        take(&inbox, &mut got);
        let kinds: Vec<(u32, EventKind)> = got.iter().map(|e| (e.device, e.kind)).collect();
        assert_eq!(
            kinds,
            vec![
                (2, EventKind::Xid { code: Some(79) }),
                (0, EventKind::EccUncorrected),
                (1, EventKind::Xid { code: None }),
            ]
        );
        assert!(got.iter().all(|e| e.t_ms > 1_600_000_000_000));
        assert!(inbox.lock().unwrap().is_empty(), "taken, not copied");
    }

    #[test]
    fn a_wait_that_keeps_failing_does_not_spin() {
        let (wait, calls) = script(
            std::iter::repeat_with(|| Waited::Failed("GPU is lost".into()))
                .take(100)
                .collect(),
        );
        let inbox: Inbox = Arc::default();
        let stop = Arc::new(AtomicBool::new(false));
        spawn(wait, inbox, stop.clone()).unwrap();
        std::thread::sleep(Duration::from_millis(1500));
        stop.store(true, Ordering::Relaxed);
        let n = *calls.lock().unwrap();
        assert!((1..=3).contains(&n), "{n} waits in 1.5 s");
    }

    /// Hands out `steps`, then sets the stop flag.
    struct Until<'a>(&'a mut VecDeque<Waited>, &'a AtomicBool);

    impl EventWait for Until<'_> {
        fn wait(&mut self, _: u32) -> Waited {
            let w = self.0.pop_front();
            if self.0.is_empty() {
                self.1.store(true, Ordering::Relaxed);
            }
            w.unwrap_or(Waited::Timeout)
        }
    }

    #[test]
    fn a_storm_nobody_takes_keeps_the_newest() {
        let inbox: Inbox = Arc::default();
        let stop = AtomicBool::new(false);
        let mut steps: VecDeque<Waited> = (0..INBOX_MAX as u64 + 10)
            .map(|i| Waited::Event {
                device: Some(0),
                bits: CRITICAL_XID,
                xid: Some(i),
            })
            .collect();
        let mut until = Until(&mut steps, &stop);
        run(&mut until, &inbox, &stop, &|| 1);
        let q = inbox.lock().unwrap();
        assert_eq!(q.len(), INBOX_MAX);
        assert_eq!(q.last().unwrap().kind.xid(), Some(INBOX_MAX as u64 + 9));
    }
}
