//! A simulated GPU's health counters, events and energy counter. A rule's scenario declares
//! its GPU's trouble (`Demo::trouble`: the health rules' files under `rules/health/`, and
//! `lost`'s GPU that falls off the bus); the health story
//! (`--demo health`) adds a GPU that carries an old GPU's history (38 uncorrected errors over
//! its life, 17 rows remapped, nothing pending: healthy now, as the lent H200 reads) and must
//! raise nothing. Every GPU's energy counter counts the power drawn, as NVML's does.

use super::sim::Scenario;
use crate::model::demo::{Trouble, CLEAN};
use crate::model::{DeviceSample, EventKind, Health};

/// What the GPU's counters read.
#[derive(Debug, Clone, Copy)]
enum Counters {
    /// None: a simulated GPU without health counters.
    Unread,
    /// A rule's scenario's trouble.
    Troubled(Trouble),
    /// The health story's GPU with an old GPU's history.
    Worn,
}

/// A simulated GPU's health and energy counter.
#[derive(Debug, Clone)]
pub struct SimHealth {
    counters: Counters,
    energy_mj: u64,
}

/// Clean now, with a past.
const WORN: Health = Health {
    ecc_corrected_aggregate: Some(19),
    ecc_uncorrected_aggregate: Some(38),
    remapped_rows_uncorrected: Some(17),
    ..CLEAN
};

impl SimHealth {
    /// The health of a GPU playing `scenario` (the GPU's own, not the story's).
    pub fn new(scenario: Scenario) -> Self {
        let counters = match scenario.demo().and_then(|d| d.trouble) {
            Some(trouble) => Counters::Troubled(trouble),
            None if scenario == Scenario::Health => Counters::Worn,
            None => Counters::Unread,
        };
        SimHealth {
            counters,
            energy_mj: 1_000_000_000,
        }
    }

    /// Counts `more_w` more watts over the last `dt_s` (a MIG GPU's power, known only once its
    /// instances were read) and puts the counter in the sample again.
    pub fn count_more(&mut self, more_w: f32, dt_s: f32, s: &mut DeviceSample) {
        let mj = (more_w * dt_s * 1000.0) as i64;
        self.energy_mj = self.energy_mj.saturating_add_signed(mj);
        s.energy_mj = Some(self.energy_mj);
    }

    /// Fills the sample's energy counter and health at `t_s` (the previous tick was `dt_s`
    /// earlier); `send`s each event the GPU sends as `t_s` passes its moment.
    pub fn read(
        &mut self,
        (t_s, dt_s): (f32, f32),
        s: &mut DeviceSample,
        send: impl FnMut(EventKind),
    ) {
        self.energy_mj += (s.power_w.unwrap_or(0.0) * dt_s * 1000.0) as u64;
        s.energy_mj = Some(self.energy_mj);
        self.send_events((t_s, dt_s), send);
        s.health = match self.counters {
            Counters::Unread => return,
            Counters::Worn => WORN,
            Counters::Troubled(trouble) => (trouble.health)(t_s),
        };
    }

    /// `send`s each event whose moment passed since the previous tick, `dt_s` before `t_s`.
    /// A lost GPU's driver still sends them: its Xid 79 comes in the tick that finds it gone
    /// when ticks are farther apart than the Xid is before the fall.
    pub fn send_events(&self, (t_s, dt_s): (f32, f32), mut send: impl FnMut(EventKind)) {
        let Counters::Troubled(trouble) = self.counters else {
            return;
        };
        let passes = |at: f32| t_s >= at && t_s - dt_s < at;
        for (_, kind) in trouble.events.iter().filter(|(at, _)| passes(*at)) {
            send(*kind);
        }
    }

    /// When NVML stops answering for this GPU, in seconds after the start (`Trouble::lost_at_s`).
    pub fn lost_at_s(&self) -> Option<f32> {
        match self.counters {
            Counters::Troubled(trouble) => trouble.lost_at_s,
            Counters::Unread | Counters::Worn => None,
        }
    }
}
