//! A snapshot played as a recording: its window a tick at a time, after checking that what it
//! holds is within the replay's limits.

use std::io::Read;
use std::path::Path;

use super::{
    ReplayError, MAX_DEVICES, MAX_EVENTS, MAX_PROCESSES, MAX_SNAPSHOT_BYTES, MAX_SNAPSHOT_READINGS,
};
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
fn check_snapshot(snap: &Snapshot) -> Result<(), String> {
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

impl super::ReplaySource {
    /// Reads the rest of a snapshot (bounded) after its first line and plays its window.
    pub(super) fn snapshot_from(
        first: String,
        rest: impl Read,
        path: &Path,
    ) -> Result<Self, ReplayError> {
        let mut text = first;
        let read = rest
            .take(MAX_SNAPSHOT_BYTES)
            .read_to_string(&mut text)
            .map_err(|source| ReplayError::Read {
                path: path.to_path_buf(),
                error: source,
            })?;
        if read as u64 >= MAX_SNAPSHOT_BYTES {
            return Err(ReplayError::NotARecording {
                path: path.to_path_buf(),
                line: 1,
                reason: format!(
                    "larger than {} MiB: not a gpuwatch snapshot",
                    MAX_SNAPSHOT_BYTES >> 20
                ),
            });
        }
        // Text that names itself a snapshot but does not parse is a damaged snapshot (most
        // often one cut short in a copy), not "something else": say which.
        let tagged = text.contains(&format!(
            "\"format\": \"{}\"",
            crate::format::snapshot::FORMAT
        ));
        let not = |reason: String| {
            if tagged {
                ReplayError::BadSnapshot {
                    path: path.to_path_buf(),
                    reason,
                }
            } else {
                ReplayError::NotARecording {
                    path: path.to_path_buf(),
                    line: 1,
                    reason,
                }
            }
        };
        let snap = crate::format::snapshot::parse(&text).map_err(not)?;
        check_snapshot(&snap).map_err(not)?;
        let play = SnapshotPlay::new(snap);
        let readings = play.times.len().saturating_mul(play.snap.devices.len());
        if readings > MAX_SNAPSHOT_READINGS {
            return Err(not(format!(
                "{} moments of {} GPUs ({readings} readings), more than the {MAX_SNAPSHOT_READINGS} gpuwatch plays",
                play.times.len(),
                play.snap.devices.len()
            )));
        }
        Ok(Self::playing(play, path))
    }
}
