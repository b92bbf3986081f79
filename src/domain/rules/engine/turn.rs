//! Which devices an evaluation judges: a quiet one rests between judgings, a hung one is
//! glanced at in between (`Rule::glance`).

use super::{Engine, Slot};
use crate::history::{DeviceHistory, History};
use crate::rules::slots::still_holds;
use crate::rules::{Ctx, Severity};

/// At most how long a quiet GPU goes unjudged, and how often the store judges while something
/// is being timed (`store::EVALUATE_QUIET_EVERY_MS`, `store::EVALUATE_EVERY_MS`).
const QUIET_JUDGE_MS: u64 = 500;
const BUSY_JUDGE_MS: u64 = 200;
/// A rule's window this long or longer: its timed symptom waits at the quiet cadence.
const LONG_WINDOW_MS: u64 = 60_000;

/// What a device gets at an evaluation (`Engine::turn`).
pub(super) enum Turn {
    /// Every rule judges it.
    Judged,
    /// Nothing: it is quiet and was judged lately.
    Rests,
    /// Its critical findings' rules look at the samples since its last judging.
    Glanced,
}

impl Slot {
    /// A critical finding is open in this slot.
    fn critical(&self) -> bool {
        self.open
            .as_ref()
            .is_some_and(|f| f.severity >= Severity::Critical)
    }
}

impl Engine {
    /// What device `i` gets at this evaluation. A quiet one (no symptom being timed, nothing
    /// critical open) judged recently enough waits for a later evaluation: it rests while
    /// another GPU's symptom is judged every 200 ms. Judging every GPU of a box at that rate
    /// because one of them is in trouble was most of what the rules cost with many GPUs. An
    /// open warning does not keep a GPU busy: what it waits for (escalating, ending) is not
    /// timed, so judging it 300 ms later delays no finding's start, and a new symptom on that
    /// GPU is timed, and judged at the busy rate, from the next evaluation on. A critical one
    /// (a hang) does: whoever watches a hang waits for the moment it ends. Its rule looks at
    /// the samples since (`Rule::glance`), and the GPU is judged in full only when they may
    /// end it, or at the quiet cadence: 16 hung GPUs of the 64-GPU demo, judged in full at every
    /// evaluation, were two judgings in five (5 % of its instructions went with half of them).
    pub(super) fn turn(&self, i: usize, now_ms: Option<u64>) -> Turn {
        let (Some(now), Some(Some(last))) = (now_ms, self.judged_ms.get(i)) else {
            return Turn::Judged;
        };
        // Judged again when waiting for the next evaluation (200 ms on) would leave it more
        // than `QUIET_JUDGE_MS` unjudged: every 400 ms while others are judged every 200.
        let due = now < *last || now - last + BUSY_JUDGE_MS > QUIET_JUDGE_MS;
        let slots = &self.slots[i];
        if due || self.timed_closely(slots) {
            return Turn::Judged;
        }
        let mut turn = Turn::Rests;
        for (rule, slot) in self.rules.iter().zip(slots) {
            if slot.critical() {
                if rule.glance.is_none() {
                    return Turn::Judged;
                }
                turn = Turn::Glanced;
            }
        }
        turn
    }

    /// A symptom is being timed whose finding may open within a minute (a hang's, starved's,
    /// a fast leak's): judged at the busy cadence, to open on time. One whose rule's window is
    /// a minute or longer (memory held idle: 2 minutes by default) does not keep its GPU
    /// busy: its finding opens at most 300 ms later than it did, after minutes of timing. The
    /// 64-GPU demo's eight idle-memory GPUs were each judged in full at every evaluation while
    /// timed, a sixth of the judgings.
    fn timed_closely(&self, slots: &[Slot]) -> bool {
        self.rules.iter().zip(slots).any(|(rule, slot)| {
            slot.watch_since_ms.is_some()
                && crate::rules::ms((rule.window)(&self.thresholds)) < LONG_WINDOW_MS
        })
    }

    /// Device `i`'s critical findings, looked at (`Rule::glance`) over the samples since it
    /// was last judged: true when every one still holds, and now says so; false when the
    /// device is to be judged in full.
    pub(super) fn glance(&mut self, i: usize, dev: &DeviceHistory, history: &History) -> bool {
        let (Some(now_ms), Some(since_ms)) =
            (dev.samples.latest().map(|s| s.t_ms), self.judged_ms[i])
        else {
            return false;
        };
        let ctx = Ctx {
            dev,
            all: history,
            thresholds: &self.thresholds,
            floor_w: self.floor_w(&dev.info),
            floor: self.floors[i],
            now_ms,
            judged_from_ms: 0,
            open: true,
            window_ms: 0,
            wording: false,
            windows: std::cell::RefCell::default(),
        };
        let holds = self.rules.iter().zip(&self.slots[i]).all(|(rule, slot)| {
            !slot.critical() || rule.glance.is_some_and(|still| still(&ctx, since_ms))
        });
        if holds {
            for slot in self.slots[i].iter_mut().filter(|s| s.critical()) {
                let base_j = slot.energy_base_j;
                if let Some(f) = slot.open.as_mut() {
                    still_holds(f, base_j, &ctx);
                }
            }
        }
        holds
    }
}
