//! The health rules' scenarios: GPUs that keep training at their power cap while NVML's
//! counters and events say something broke. `--demo health` plays the ECC, `PCIe` replay and
//! `NVLink` ones side by side, with a fourth GPU that only carries an old GPU's history.

use crate::model::demo::{Demo, Level, Trouble, BUSY, CLEAN};
use crate::model::{EventKind, Health};

/// Busy at its power cap whatever its counters say: the trouble is in them, not in the levels.
fn busy(_t_s: f32, _burst: f32) -> Level {
    BUSY
}

/// A GPU in trouble that runs the simulator's training process.
const fn troubled(name: &'static str, about: &'static str, trouble: Trouble) -> Demo {
    Demo {
        name,
        about,
        level: busy,
        power_limit_w: None,
        workload: None,
        trouble: Some(trouble),
    }
}

/// When the ECC and Xid scenarios' error comes.
const ERROR_AT_S: f32 = 10.0;
/// When the `NVLink` scenario's link goes down.
const LINK_DOWN_AT_S: f32 = 20.0;

/// An application's bad address: Xid 31 at 10 s. The GPU itself is fine.
pub(super) const XID: Demo = troubled(
    "xid",
    "an application's GPU memory page fault at 10 s (Xid 31): restart it, the GPU is fine",
    Trouble {
        health: |_| CLEAN,
        events: &[(ERROR_AT_S, EventKind::Xid { code: Some(31) })],
        shows_at_s: ERROR_AT_S,
    },
);

/// An uncorrectable memory error at 10 s, as a Hopper GPU reports one: the ECC event, Xid 94
/// (contained) and a row remap pending until a reset. It raises the Xid and row-remap
/// findings beside its own.
pub(super) const ECC: Demo = troubled(
    "ecc",
    "an uncorrectable memory error at 10 s: ECC event, Xid 94, a row remap pending until a reset",
    Trouble {
        health: ecc,
        events: &[
            (ERROR_AT_S, EventKind::EccUncorrected),
            (ERROR_AT_S, EventKind::Xid { code: Some(94) }),
        ],
        shows_at_s: ERROR_AT_S,
    },
);

fn ecc(t_s: f32) -> Health {
    if t_s < ERROR_AT_S {
        return CLEAN;
    }
    Health {
        ecc_uncorrected_volatile: Some(1),
        ecc_uncorrected_aggregate: Some(1),
        remap_pending: Some(true),
        ..CLEAN
    }
}

/// A row marked for remapping by repeated corrected errors before gpuwatch started: no
/// uncorrected error, but the GPU needs a reset before its next job.
pub(super) const REMAP: Demo = troubled(
    "row-remap",
    "a memory row remap pending from repeated corrected errors: reset before the next job",
    Trouble {
        health: |_| Health {
            ecc_corrected_volatile: Some(27),
            ecc_corrected_aggregate: Some(27),
            remap_pending: Some(true),
            ..CLEAN
        },
        events: &[],
        shows_at_s: 0.0,
    },
);

/// A marginal `PCIe` link replays a packet a second: 8 in the window by 8 s.
pub(super) const PCIE_REPLAY: Demo = troubled(
    "pcie-replay",
    "a marginal PCIe link replaying a packet a second",
    Trouble {
        health: |t_s| Health {
            pcie_replays: Some(t_s as u32),
            ..CLEAN
        },
        events: &[],
        shows_at_s: 8.0,
    },
);

/// One of 18 `NVLink` links goes down at 20 s, after 3 errors.
pub(super) const NVLINK: Demo = troubled(
    "nvlink",
    "one of 18 NVLink links going down at 20 s",
    Trouble {
        health: nvlink,
        events: &[],
        shows_at_s: LINK_DOWN_AT_S,
    },
);

fn nvlink(t_s: f32) -> Health {
    let down = t_s >= LINK_DOWN_AT_S;
    Health {
        nvlink_links: Some(18),
        nvlink_active: Some(if down { 17 } else { 18 }),
        nvlink_errors: Some(if down { 3 } else { 0 }),
        ..CLEAN
    }
}
