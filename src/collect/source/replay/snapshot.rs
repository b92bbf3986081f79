//! A snapshot played as a recording: its window a tick at a time, after checking that what it
//! holds is within the replay's limits.

use super::{MAX_DEVICES, MAX_EVENTS, MAX_PROCESSES};
use crate::format::snapshot::Snapshot;
use crate::model::{DeviceInfo, DeviceReading, DeviceSample, DeviceStatus, Tick};

/// A snapshot's window played a tick at a time: one tick per distinct sample time, each GPU's
/// latest sample at or before it. Made as they are played, so memory holds the snapshot and
/// one tick, not every tick with its own copy of every process (a 35 KB gzipped snapshot once
/// took 4.3 GB that way).
pub(super) struct SnapshotPlay {
    pub(super) snap: Snapshot,
    pub(super) times: Vec<u64>,
    pub(super) next: usize,
    pub(super) cursors: Vec<usize>,
}

impl SnapshotPlay {
    pub(super) fn new(mut snap: Snapshot) -> Self {
        let mut times: Vec<u64> = snap
            .devices
            .iter()
            .flat_map(|d| d.samples.iter().map(|x| x.t_ms))
            .collect();
        times.sort_unstable();
        times.dedup();
        // Each burst rides on the first tick at or after it was read, as it came live.
        snap.stacks.sort_by_key(|b| b.t_ms);
        snap.events.sort_by_key(|e| e.t_ms);
        let cursors = vec![0; snap.devices.len()];
        SnapshotPlay {
            snap,
            times,
            next: 0,
            cursors,
        }
    }

    pub(super) fn next_tick(&mut self, tick: &mut Tick) -> bool {
        let Some(&t) = self.times.get(self.next) else {
            return false;
        };
        let last = self.next + 1 == self.times.len();
        let first = self.next == 0;
        let prev = self.next.checked_sub(1).map(|i| self.times[i]);
        self.next += 1;
        tick.t_ms = t;
        tick.devices.clear();
        for (d, c) in self.snap.devices.iter().zip(self.cursors.iter_mut()) {
            while *c + 1 < d.samples.len() && d.samples[*c + 1].t_ms <= t {
                *c += 1;
            }
            let sample = d
                .samples
                .get(*c)
                .copied()
                .filter(|x| x.t_ms <= t)
                .unwrap_or_default();
            // The processes, one list for the window, ride on its first tick only.
            tick.devices.push(DeviceReading {
                sample: DeviceSample { t_ms: t, ..sample },
                processes: if first {
                    d.processes.clone()
                } else {
                    Vec::new()
                },
                status: DeviceStatus::Ok,
                same_processes: !first,
            });
        }
        tick.stacks.clear();
        tick.stacks.extend(
            self.snap
                .stacks
                .iter()
                .filter(|b| prev.is_none_or(|p| b.t_ms > p) && (b.t_ms <= t || last))
                .cloned(),
        );
        tick.events.clear();
        tick.events.extend(
            self.snap
                .events
                .iter()
                .filter(|e| prev.is_none_or(|p| e.t_ms > p) && (e.t_ms <= t || last)),
        );
        true
    }
}

/// What a snapshot may hold, checked before it plays: so many GPUs, processes and events, and
/// only times a GPU could report.
pub(super) fn check_snapshot(snap: &Snapshot) -> Result<(), String> {
    if snap.devices.len() > MAX_DEVICES {
        return Err(format!(
            "{} GPUs, more than the {MAX_DEVICES} gpuwatch reads",
            snap.devices.len()
        ));
    }
    let infos: Vec<DeviceInfo> = snap.devices.iter().map(|d| d.info.clone()).collect();
    if let Some(why) = crate::model::devices_inconsistent(&infos) {
        return Err(why);
    }
    for d in &snap.devices {
        if let Some((i, why)) = d
            .samples
            .iter()
            .enumerate()
            .find_map(|(i, s)| Some((i, s.impossible()?)))
        {
            return Err(format!(
                "GPU {}'s sample {} of {}: {why}",
                d.info.label(),
                i + 1,
                d.samples.len()
            ));
        }
    }
    let processes: usize = snap.devices.iter().map(|d| d.processes.len()).sum();
    if processes > MAX_PROCESSES {
        return Err(format!(
            "{processes} GPU processes, more than the {MAX_PROCESSES} gpuwatch reads"
        ));
    }
    if snap.events.len() > MAX_EVENTS {
        return Err(format!(
            "{} driver events, more than the {MAX_EVENTS} gpuwatch reads",
            snap.events.len()
        ));
    }
    if let Some(e) = snap
        .events
        .iter()
        .find(|e| e.t_ms > crate::model::LATEST_PLAUSIBLE_MS)
    {
        return Err(format!(
            "an event's time {} ms is after the year 2100",
            e.t_ms
        ));
    }
    Ok(())
}
