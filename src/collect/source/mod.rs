//! Where samples come from: real GPUs through NVML, simulated GPUs, or a recording.
//!
//! A `Source` is synchronous and blocking on purpose: NVML calls block, so the sampler
//! drives a source from its own thread and never from an async worker.

pub mod events;
pub mod nvml;
pub mod replay;
pub mod select;
pub mod sim;
mod simhealth;
mod simlevel;
mod simmig;
mod simproc;
pub mod simstack;

use std::time::Instant;

use crate::model::{DeviceInfo, SystemInfo, Tick};

/// How the sampler should pace a source.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Pacing {
    /// Read every interval, in real time.
    Live,
    /// Follow the timestamps of the samples, divided by `speed`; `f64::INFINITY` means as fast
    /// as possible (headless commands).
    Recorded { speed: f64 },
}

/// What one call to `Source::sample` produced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sampled {
    /// `tick` was filled with a new reading.
    Filled,
    /// A recording has no more ticks.
    End,
}

#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    #[error(transparent)]
    Nvml(#[from] nvml::NvmlInitError),
    #[error(transparent)]
    Replay(#[from] replay::ReplayError),
    #[error(transparent)]
    Select(#[from] select::SelectError),
}

/// Every source tells the store where its samples come from.
impl<S: Source + ?Sized> crate::model::Describe for S {
    fn origin(&self) -> crate::model::Origin<'_> {
        crate::model::Origin {
            system: self.system(),
            devices: self.devices(),
            interval: self.interval(),
            label: self.label(),
            pids_are_local: self.pids_are_local(),
            replay: matches!(self.pacing(), Pacing::Recorded { .. }),
        }
    }
}

/// A provider of ticks. Implementations reuse the buffers in `tick` so that a steady state
/// allocates nothing.
pub trait Source: Send {
    fn system(&self) -> &SystemInfo;
    fn devices(&self) -> &[DeviceInfo];
    /// Fill `tick` (one reading per device, in `devices()` order). Blocks for NVML.
    fn sample(&mut self, tick: &mut Tick) -> Result<Sampled, SourceError>;
    /// Time between two ticks: what live GPUs are read at, or what a recording or a simulation
    /// was made at. History sizes and the header's "every …" come from here, never from a flag.
    fn interval(&self) -> std::time::Duration;
    fn pacing(&self) -> Pacing {
        Pacing::Live
    }
    /// True when process PIDs are this machine's, so the host side can be read from /proc.
    fn pids_are_local(&self) -> bool {
        false
    }
    /// True when each listed process really holds the GPU (NVML): a PID is then taken as this
    /// machine's only if that process has a `/dev/nvidia*` file open. Inside a container NVML
    /// reports the host's PIDs, and the same number here may be an unrelated process.
    fn pids_hold_the_gpu(&self) -> bool {
        false
    }
    /// True when `rewind` can start the source again from its first tick (a recording or a
    /// snapshot in a file, not standard input or a pipe, and not live GPUs).
    fn can_rewind(&self) -> bool {
        false
    }
    /// Starts again from the first tick; only called when `can_rewind` is true.
    fn rewind(&mut self) -> Result<(), SourceError> {
        Ok(())
    }
    /// Sample time of the last tick, where known before playing to it.
    fn end_ms(&self) -> Option<u64> {
        None
    }
    /// True when time is virtual (simulated): headless commands need not wait for it.
    fn virtual_time(&self) -> bool {
        false
    }
    /// A virtual clock about to be played `span` ahead as fast as the CPU allows is set back by
    /// `span`, so what it shows ends now rather than in the future (a demo snapshot was stamped
    /// 15 minutes ahead). Real clocks cannot be and are not moved.
    fn start_earlier(&mut self, _span: std::time::Duration) {}
    /// Latency of each kind of call made so far (NVML only).
    fn call_times(&self) -> Option<CallTimes> {
        None
    }
    /// A recording that ended because it is cut off (its last line torn mid-write, its gzip
    /// stream short): where and why, for the user to know its end is not where it stopped.
    fn cut_short(&self) -> Option<String> {
        None
    }
    /// A short description for headers ("NVML", "demo: mixed", "replay: FILE").
    fn label(&self) -> String;
}

/// Latency of each kind of NVML call, in µs: the most recent `KEEP` of each, to report what
/// watching costs. Fixed buffers, so recording allocates nothing once each call has been seen.
#[derive(Debug, Default, Clone)]
pub struct CallTimes {
    pub by_call: Vec<CallTime>,
}

#[derive(Debug, Clone)]
pub struct CallTime {
    pub call: &'static str,
    pub count: u64,
    pub recent_us: Vec<u32>,
    /// Read on the slow thread, not on the fast tick.
    pub slow: bool,
}

const KEEP: usize = 4096;

impl CallTimes {
    pub(crate) fn record(&mut self, call: &'static str, started: Instant) {
        let us = started.elapsed().as_micros().min(u128::from(u32::MAX)) as u32;
        let entry = if let Some(i) = self.by_call.iter().position(|c| c.call == call) {
            &mut self.by_call[i]
        } else {
            self.by_call.push(CallTime {
                call,
                count: 0,
                recent_us: Vec::with_capacity(KEEP),
                slow: false,
            });
            self.by_call.last_mut().expect("just pushed")
        };
        if entry.recent_us.len() < KEEP {
            entry.recent_us.push(us);
        } else {
            entry.recent_us[(entry.count % KEEP as u64) as usize] = us;
        }
        entry.count += 1;
    }
}

impl CallTime {
    /// (median, p90, max) of the recent latencies, µs.
    #[must_use]
    pub fn quantiles(&self) -> (u32, u32, u32) {
        let mut v = self.recent_us.clone();
        v.sort_unstable();
        let at = |q: f64| {
            v.get(((v.len() as f64 - 1.0) * q).round() as usize)
                .copied()
                .unwrap_or(0)
        };
        (at(0.5), at(0.9), at(1.0))
    }
}

/// Opens live GPUs: simulated ones for `demo`, else the real ones through NVML.
pub fn open_live(
    demo: Option<sim::Scenario>,
    gpus: Option<u16>,
    seed: u64,
    nvml_lib: Option<&std::path::Path>,
    interval: std::time::Duration,
    select: &select::Selection,
) -> Result<Box<dyn Source>, SourceError> {
    if let Some(sc) = demo {
        let n = gpus.map_or(sc.default_gpus(), usize::from);
        let mut src = sim::SimSource::new(
            sc,
            n,
            seed,
            crate::model::now_ms(),
            interval.as_millis() as u64,
        );
        src.keep(&select.pick(src.devices())?);
        return Ok(Box::new(src));
    }
    // What ran so far (clap, the config file's parser) runs no more: given back before
    // `nvmlInit` maps its 19 MiB, where the first peak forms (run 95: 1.1-1.4 MiB lower at 20 ms).
    let _ = crate::sys::release_start_up_pages();
    Ok(Box::new(nvml::NvmlSource::open(
        nvml_lib, interval, select,
    )?))
}

/// Opens a recording or snapshot, played at `speed` × the recorded pace (0: as fast as
/// possible).
pub fn open_replay(path: &std::path::Path, speed: f64) -> Result<Box<dyn Source>, SourceError> {
    let speed = if speed <= 0.0 { f64::INFINITY } else { speed };
    Ok(Box::new(replay::ReplaySource::open(path, speed)?))
}
