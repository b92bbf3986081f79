//! What the engine has concluded, as readers read it (the screen, snapshots, reports, the
//! exporter): the open findings, those cleared recently, what is still being judged, the idle
//! floors. The engine keeps one, brought up to date at the end of each evaluation; it is the
//! only place these are queried.

use serde::{Deserialize, Serialize};

use super::Thresholds;
use super::{Engine, Finding, KEEP_CLEARED};

#[derive(Debug, Clone, Default)]
pub struct Conclusions {
    thresholds: Thresholds,
    /// Open findings, most severe first.
    active: Vec<Finding>,
    /// Closed recently, oldest first (bounded); the engine pushes here as it closes them.
    pub(super) cleared: Vec<Finding>,
    /// Per device, in history order; written by the engine as it tracks start-ups.
    pub(super) judging: Vec<Judging>,
    /// Causes being timed.
    watching: Vec<Watch>,
    /// NVML index of each position, as of the last evaluation.
    pub(super) indices: Vec<u32>,
    floors_w: Vec<f32>,
    /// Per device (history order), per rule (registry order): findings opened so far…
    opened: Vec<Vec<u64>>,
    /// …and the joules used while they were open.
    energy_j: Vec<Vec<f64>>,
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

    /// How long ago an open finding's symptom ended, at sample time `now_ms`; `None` while it
    /// still holds (see `Finding::symptom_ended`). An ended finding stays open for
    /// `clear_after` (so it does not flap), kept for the culprit it names and for snapshots,
    /// and says that it ended.
    #[must_use]
    pub fn ended_ago_ms(&self, f: &Finding, now_ms: u64) -> Option<u64> {
        (f.cleared_ms.is_none() && f.symptom_ended).then(|| now_ms.saturating_sub(f.last_ms))
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
        self.position(device)
            .and_then(|p| self.judging.get(p))
            .filter(|j| j.needed_ms > 0)
    }

    /// Every GPU still being judged, in history order.
    pub fn pending(&self) -> impl Iterator<Item = &Judging> {
        self.judging
            .iter()
            .filter(|j| j.needed_ms > 0 && j.pending())
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
        // A MIG instance has no power of its own, so no floor: its GPU's is the one.
        if crate::model::gpu_label(device).mig_parts().is_some() {
            return None;
        }
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

    /// Joules GPU `device` used while rule `rule`'s findings were open, all of them so far.
    pub fn energy_j(&self, device: u32, rule: usize) -> f64 {
        self.position(device)
            .and_then(|p| self.energy_j.get(p))
            .and_then(|r| r.get(rule))
            .copied()
            .unwrap_or(0.0)
    }

    fn position(&self, device: u32) -> Option<usize> {
        self.indices.iter().position(|&i| i == device)
    }
}

impl Engine {
    /// Brings the conclusions up to this evaluation (in place: their buffers are reused).
    pub(super) fn conclude(&mut self) {
        let excess = self.out.cleared.len().saturating_sub(KEEP_CLEARED);
        self.out.cleared.drain(..excess);
        self.out.thresholds.clone_from(&self.thresholds);
        self.copy_open_findings();
        let mut watching = std::mem::take(&mut self.out.watching);
        watching.clear();
        watching.extend(self.timed());
        self.out.watching = watching;
        let mut floors = std::mem::take(&mut self.out.floors_w);
        floors.clear();
        floors.extend(self.infos.iter().map(|info| self.floor_w(info)));
        self.out.floors_w = floors;
        self.out.opened.resize_with(self.slots.len(), Vec::new);
        for (counts, slots) in self.out.opened.iter_mut().zip(&self.slots) {
            counts.clear();
            counts.extend(slots.iter().map(|s| s.opened));
        }
        self.out.energy_j.resize_with(self.slots.len(), Vec::new);
        for (joules, slots) in self.out.energy_j.iter_mut().zip(&self.slots) {
            joules.clear();
            joules.extend(slots.iter().map(|s| {
                s.energy_closed_j + s.open.as_ref().and_then(|f| f.energy_j).unwrap_or(0.0)
            }));
        }
    }
}

impl Engine {
    /// The open findings into `out.active`, most severe first, then by GPU (then in registry
    /// order). Each is copied over the one at its place the last time, usually the same
    /// finding: its strings' buffers are reused (`copy.rs`), and at a steady state nothing is
    /// allocated.
    fn copy_open_findings(&mut self) {
        let order = &mut self.open_order;
        order.clear();
        for (d, slots) in self.slots.iter().enumerate() {
            for (r, slot) in slots.iter().enumerate() {
                if slot.open.is_some() {
                    order.push((d, r));
                }
            }
        }
        let open = |&(d, r): &(usize, usize)| self.slots[d][r].open.as_ref();
        // Unstable but total (ties broken by where the slot is): no scratch buffer, and the
        // order a stable sort of the slots' order would give.
        order.sort_unstable_by(|a, b| {
            let (fa, fb) = (open(a), open(b));
            let key = |f: Option<&Finding>| f.map(|f| (std::cmp::Reverse(f.severity), f.device));
            key(fa).cmp(&key(fb)).then(a.cmp(b))
        });
        let active = &mut self.out.active;
        active.truncate(order.len());
        for (i, at) in order.iter().enumerate() {
            let Some(f) = open(at) else { continue };
            match active.get_mut(i) {
                Some(kept) => kept.clone_from(f),
                None => active.push(f.clone()),
            }
        }
    }
}

/// What a GPU is still being judged for: until the rules' windows are covered past its
/// processes' start-up, "nothing found" does not mean "all clear".
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Judging {
    pub device: u32,
    /// Judged from here (ms): the first sample, or the end of the newest process's start-up.
    pub from_ms: u64,
    /// How much has been judged and how much the causes' windows need, ms.
    pub covered_ms: u64,
    pub needed_ms: u64,
    /// Processes still in their start-up.
    pub starting_pids: Vec<u32>,
    /// Why the busy-but-idle rules cannot judge this GPU however long it runs (no power
    /// reading; no TDP and no idle power learned): "nothing found" then says nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blind: Option<String>,
}

impl Judging {
    /// True while the windows are not covered yet, or while the GPU cannot be judged.
    #[must_use]
    pub fn pending(&self) -> bool {
        self.covered_ms < self.needed_ms || self.blind.is_some()
    }

    /// Why it cannot be judged, in a badge's room: "no power" or "no TDP".
    #[must_use]
    pub fn blind_short(&self) -> Option<&'static str> {
        let why = self.blind.as_deref()?;
        Some(if why.starts_with("no power") {
            "no power"
        } else {
            "no TDP"
        })
    }
}

/// A busy-but-idle symptom present now whose finding has not opened yet: it is being timed.
/// "ok" is not what such a GPU is (issue 25), and its processes' stacks are read as evidence
/// while it is timed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Watch {
    pub device: u32,
    /// The cause rule whose symptom holds over the watch span.
    pub rule: String,
    pub title: String,
    /// Since when it has held (ms), and how long its window is (ms).
    pub since_ms: u64,
    pub window_ms: u64,
}
