//! Rules about the GPU's health, one file each: Xid errors the driver reported (`xid.rs`),
//! uncorrected ECC errors (`ecc.rs`), memory rows waiting for a reset or out of spares
//! (`remap.rs`), `PCIe` replays (`pcie_replay.rs`) and `NVLink` errors (`nvlink.rs`).
//! These name a broken GPU or link, which a hang or a crash may follow: a different remedy
//! (reset, drain, cables) from a stuck collective's. What they share is here: one thresholds
//! section (an Xid and an ECC event are kept as long; replays and `NVLink` errors are counted
//! alike) and the readings they take. Their scenarios are `model::demo::troubled` GPUs
//! (`--demo health` plays the ECC, `PCIe` replay and `NVLink` ones side by side, with a fourth
//! GPU that only carries an old GPU's history).

pub(super) mod ecc;
pub(super) mod nvlink;
pub(super) mod pcie_replay;
pub(super) mod remap;
pub(super) mod xid;

use super::thresholds::{dur, Section};
use super::{ms, Ctx};
use crate::model::Health;
use crate::text::span_words;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// How long a health event keeps its finding, and how many link errors make one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct HealthThresholds {
    /// An Xid (or an uncorrected ECC event) keeps its finding open this long after it came:
    /// what it broke does not mend by itself.
    #[serde(with = "dur")]
    pub xid_window: Duration,
    /// `PCIe` replays and `NVLink` errors are counted over this window…
    #[serde(with = "dur")]
    pub link_errors_window: Duration,
    /// …and this many of them within it make a link in trouble.
    pub link_errors_min: f32,
}

impl Default for HealthThresholds {
    fn default() -> Self {
        HealthThresholds {
            xid_window: Duration::from_secs(600),
            link_errors_window: Duration::from_secs(60),
            link_errors_min: 8.0,
        }
    }
}

impl Section for HealthThresholds {}

pub(super) fn latest_health(c: &Ctx) -> Option<Health> {
    c.dev.samples.latest().map(|s| s.health)
}

pub(super) fn pids(c: &Ctx) -> Vec<u32> {
    c.dev.processes.iter().map(|p| p.pid).collect()
}

/// How much `counter` rose over the last `link_errors_window` (or what the history has of it):
/// its last value less its first, where both exist; and its last.
pub(super) fn rise(c: &Ctx, counter: fn(&Health) -> Option<u32>) -> Option<(u32, u32)> {
    if !c.dev.link_counters_seen {
        return None;
    }
    let window = ms(c.thresholds.health.link_errors_window);
    let mut values = c
        .dev
        .samples
        .last(window)
        .filter_map(|s| counter(&s.health));
    let first = values.next()?;
    let last = values.next_back().unwrap_or(first);
    Some((last.saturating_sub(first), last))
}

/// The newest Xid the driver reported for this GPU within `xid_window` before `at_ms` (when the
/// GPU was lost, or now), and the evidence line that names it: a GPU lost or hung after an Xid
/// is that Xid's problem. `event` names what came at `at_ms` ("NVML lost it"); without one,
/// `at_ms` is now and the line says how long ago.
pub(super) fn preceding_xid(
    c: &Ctx,
    at_ms: u64,
    event: Option<&str>,
) -> Option<(Option<u64>, String)> {
    let from = at_ms.saturating_sub(ms(c.thresholds.health.xid_window));
    let e = c
        .all
        .events_since(c.dev.info.index, from)
        .filter(|e| matches!(e.kind, crate::model::EventKind::Xid { .. }) && e.first_ms <= at_ms)
        .max_by_key(|e| e.last_ms.min(at_ms))?;
    let code = e.kind.xid();
    let when = e.last_ms.min(at_ms);
    let what = code.map_or_else(|| e.kind.label(), crate::xid::name);
    // An Xid that came in the same tick, or half a second before, is not "0 s before".
    let gap = at_ms.saturating_sub(when);
    let span = if gap < 1000 {
        "under a second".to_string()
    } else {
        span_words(gap)
    };
    let before = match event {
        Some(event) => format!("{span} before {event}"),
        None => format!("{span} ago"),
    };
    Some((
        code,
        format!(
            "the driver reported {what} at {} UTC, {before}",
            crate::text::clock(when)
        ),
    ))
}

/// When the ECC and Xid scenarios' error comes.
pub(super) const ERROR_AT_S: f32 = 10.0;
