//! What the engine has concluded, copied out for readers (the screen, snapshots, reports): the
//! open findings, those cleared recently, what is still being judged, the idle floors. A copy,
//! so a reader never holds the store's lock while it draws or writes.

use super::{Engine, Finding, Judging, Watch, KEEP_CLEARED};
use crate::config::Thresholds;

#[derive(Debug, Clone, Default)]
pub struct Conclusions {
    thresholds: Thresholds,
    /// Open findings, most severe first.
    active: Vec<Finding>,
    /// Closed recently, oldest first (bounded).
    cleared: Vec<Finding>,
    /// Per device, in history order.
    judging: Vec<Judging>,
    /// Causes being timed.
    watching: Vec<Watch>,
    indices: Vec<u32>,
    floors_w: Vec<f32>,
    /// Per device (history order), per rule (registry order): findings opened so far.
    opened: Vec<Vec<u64>>,
    /// The engine's counters when this copy was made: what changed since.
    evaluations: u64,
    cleared_total: u64,
}

impl Conclusions {
    #[must_use]
    pub fn thresholds(&self) -> &Thresholds {
        &self.thresholds
    }

    /// The open findings, most severe first.
    #[must_use]
    pub fn active(&self) -> &[Finding] {
        &self.active
    }

    /// The open findings of the GPU with NVML index `device`.
    pub fn active_on(&self, device: u32) -> impl Iterator<Item = &Finding> {
        self.active.iter().filter(move |f| f.device == device)
    }

    /// The most severe open finding of a GPU, for its badge.
    #[must_use]
    pub fn worst_on(&self, device: u32) -> Option<&Finding> {
        self.active_on(device).max_by_key(|f| f.severity)
    }

    /// Findings closed recently, oldest first.
    #[must_use]
    pub fn cleared(&self) -> &[Finding] {
        &self.cleared
    }

    /// What a GPU (NVML index) is still being judged for; `None` before its first sample.
    #[must_use]
    pub fn judging(&self, device: u32) -> Option<&Judging> {
        super::judging_at(&self.judging, self.position(device))
    }

    /// Every GPU still being judged, in history order.
    pub fn pending(&self) -> impl Iterator<Item = &Judging> {
        super::pending_in(&self.judging)
    }

    /// The causes being timed: symptoms present whose windows have not run out.
    #[must_use]
    pub fn watching(&self) -> &[Watch] {
        &self.watching
    }

    /// The cause being timed on GPU `device` that has held longest, if any.
    #[must_use]
    pub fn watching_on(&self, device: u32) -> Option<&Watch> {
        self.watching
            .iter()
            .filter(|w| w.device == device)
            .min_by_key(|w| w.since_ms)
    }

    /// The idle floor the rules judge a GPU (NVML index) against, in watts.
    #[must_use]
    pub fn floor_w(&self, device: u32) -> Option<f32> {
        self.position(device)
            .and_then(|p| self.floors_w.get(p))
            .copied()
    }

    /// How many findings rule `rule` (registry position) has opened on GPU `device` so far.
    pub fn opened(&self, device: u32, rule: usize) -> u64 {
        self.position(device)
            .and_then(|p| self.opened.get(p))
            .and_then(|r| r.get(rule))
            .copied()
            .unwrap_or(0)
    }

    fn position(&self, device: u32) -> Option<usize> {
        self.indices.iter().position(|&i| i == device)
    }
}

impl Engine {
    /// Brings `out` up to date. Nothing is copied when the engine has not evaluated since; of
    /// the cleared findings only the new ones are.
    pub fn conclude_into(&self, out: &mut Conclusions) {
        if out.evaluations == self.evaluations && out.evaluations > 0 {
            return;
        }
        out.thresholds.clone_from(&self.thresholds);
        out.active.clear();
        out.active.extend(self.active().into_iter().cloned());
        let new = self.cleared_total.wrapping_sub(out.cleared_total);
        if out.cleared_total > self.cleared_total || new > self.cleared.len() as u64 {
            out.cleared.clone_from(&self.cleared);
        } else {
            let from = self.cleared.len() - new as usize;
            out.cleared.extend_from_slice(&self.cleared[from..]);
            let excess = out.cleared.len().saturating_sub(KEEP_CLEARED);
            out.cleared.drain(..excess);
        }
        out.judging.clone_from(&self.judging);
        out.watching.clear();
        out.watching.extend(self.watching());
        out.indices.clone_from(&self.indices);
        out.floors_w.clear();
        out.floors_w
            .extend(self.infos.iter().map(|info| self.floor_w(info)));
        out.opened.resize_with(self.slots.len(), Vec::new);
        for (counts, slots) in out.opened.iter_mut().zip(&self.slots) {
            counts.clear();
            counts.extend(slots.iter().map(|s| s.opened));
        }
        out.evaluations = self.evaluations;
        out.cleared_total = self.cleared_total;
    }

    /// A fresh copy of what the engine has concluded.
    #[must_use]
    pub fn conclusions(&self) -> Conclusions {
        let mut c = Conclusions::default();
        self.conclude_into(&mut c);
        c
    }
}
