//! The health demo (`--demo health`): what NVML's counters and events show for GPUs in
//! trouble, while each keeps training. GPU 0 meets an uncorrectable memory error at 10 s (a
//! double-bit ECC event, Xid 94, a row remap pending until a reset); GPU 1's `PCIe` link
//! replays a packet a second; GPU 2 loses one of its 18 `NVLink` links at 20 s; GPU 3 carries
//! an old GPU's history (38 uncorrected errors over its life, 17 rows remapped, nothing
//! pending: healthy now, as the lent H200 reads) and must raise nothing. Every GPU's energy
//! counter counts the power drawn, as NVML's does.

use crate::model::{DeviceSample, EventKind, Health};

/// What the GPU plays in the demo.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    EccRemap,
    Replays,
    NvlinkDown,
    Worn,
}

/// A simulated GPU's health and energy counter.
#[derive(Debug, Clone)]
pub struct SimHealth {
    role: Option<Role>,
    energy_mj: u64,
}

const ECC_AT_S: f32 = 10.0;
const LINK_DOWN_AT_S: f32 = 20.0;

impl SimHealth {
    /// GPU `index` of the health demo (`health_demo`), or a GPU of another demo: an energy
    /// counter only.
    pub fn new(health_demo: bool, index: usize) -> Self {
        let role = health_demo
            .then(|| [Role::EccRemap, Role::Replays, Role::NvlinkDown, Role::Worn][index % 4]);
        SimHealth {
            role,
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
    /// earlier); returns the event the GPU sends as `t_s` passes its moment, if any.
    pub fn read(&mut self, t_s: f32, dt_s: f32, s: &mut DeviceSample) -> Vec<EventKind> {
        self.energy_mj += (s.power_w.unwrap_or(0.0) * dt_s * 1000.0) as u64;
        s.energy_mj = Some(self.energy_mj);
        let Some(role) = self.role else {
            return Vec::new();
        };
        let clean = Health {
            ecc_corrected_volatile: Some(0),
            ecc_uncorrected_volatile: Some(0),
            ecc_corrected_aggregate: Some(0),
            ecc_uncorrected_aggregate: Some(0),
            remapped_rows_corrected: Some(0),
            remapped_rows_uncorrected: Some(0),
            remap_pending: Some(false),
            remap_failure: Some(false),
            pcie_replays: Some(0),
            nvlink_active: None,
            nvlink_links: None,
            nvlink_errors: None,
        };
        let passes = |at: f32| t_s >= at && t_s - dt_s < at;
        let mut events = Vec::new();
        s.health = match role {
            Role::EccRemap if t_s >= ECC_AT_S => {
                if passes(ECC_AT_S) {
                    events.push(EventKind::EccUncorrected);
                    events.push(EventKind::Xid { code: Some(94) });
                }
                Health {
                    ecc_uncorrected_volatile: Some(1),
                    ecc_uncorrected_aggregate: Some(1),
                    remap_pending: Some(true),
                    ..clean
                }
            }
            Role::Replays => Health {
                pcie_replays: Some(t_s as u32),
                ..clean
            },
            Role::NvlinkDown => Health {
                nvlink_links: Some(18),
                nvlink_active: Some(if t_s >= LINK_DOWN_AT_S { 17 } else { 18 }),
                nvlink_errors: Some(if t_s >= LINK_DOWN_AT_S { 3 } else { 0 }),
                ..clean
            },
            Role::Worn => Health {
                ecc_corrected_aggregate: Some(19),
                ecc_uncorrected_aggregate: Some(38),
                remapped_rows_uncorrected: Some(17),
                ..clean
            },
            Role::EccRemap => clean,
        };
        events
    }
}
