//! The MIG demo's layout and what NVML reports for a MIG GPU and its instances: no
//! utilization anywhere (`NotSupported`), power, temperature, clocks and links on the parent
//! only, memory, processes and GPM activity per instance (`nvmlGpmMigSampleGet`), GPM figures
//! relative to the instance's own SMs.

use crate::model::{mig_index, DeviceInfo, DeviceSample, GpmMetrics, MigInfo, GIB};

use super::sim::Scenario;
use crate::rules::RuleId;

/// SMs of a whole H200, which its MIG profiles share out.
const H200_SMS: f32 = 132.0;
/// What the parent draws with every instance idle.
const PARENT_FLOOR_W: f32 = 121.0;

/// An H200 split into 3 + 2 + 1 + 1 of its 7 slices: (GPU instance id, profile, slices, SMs,
/// memory in GiB, what it runs). GPU instance ids as the driver places these profiles.
const LAYOUT: [(u32, &str, f32, u32, u64, Scenario); 4] = [
    (2, "3g.71gb", 3.0, 60, 66, Scenario::Healthy),
    (3, "2g.35gb", 2.0, 32, 33, Scenario::HANG),
    (9, "1g.18gb", 1.0, 16, 16, Scenario::Rule(RuleId::Starved)),
    (10, "1g.18gb", 1.0, 16, 16, Scenario::Rule(RuleId::IdleMem)),
];

/// What a simulated device is, and for an instance what it last drew on its parent's behalf.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Part {
    Whole,
    Parent,
    Instance {
        /// Its share of the GPU's slices (3/7 for a 3g profile).
        share: f32,
        sm_count: u32,
        mem_total: u64,
        /// What the scenario drew before the parent's readings were taken away from it.
        power_w: f32,
        temp_c: f32,
        gpm: GpmMetrics,
        mem_used: u64,
    },
}

/// The instances of `parent` in the demo's layout, with the scenario each plays.
pub(super) fn instances(parent: &DeviceInfo) -> Vec<(DeviceInfo, Scenario, Part)> {
    LAYOUT
        .iter()
        .map(|&(gi, profile, slices, sm_count, mem_gib, sc)| {
            let info = DeviceInfo {
                index: mig_index(parent.index, gi, 0),
                uuid: format!(
                    "MIG-5a1d{:04x}-{gi:04x}-4000-8000-0000000000{gi:02x}",
                    parent.index
                ),
                name: format!("{} MIG {profile}", parent.name.replace(" (simulated)", ""))
                    + " (simulated)",
                memory_total_bytes: Some(mem_gib * GIB),
                // NVML answers these for the parent only.
                power_limit_default_w: None,
                power_limit_enforced_w: None,
                power_limit_min_w: None,
                power_limit_max_w: None,
                temp_slowdown_c: None,
                pcie_max_gen: None,
                pcie_max_width: None,
                mig_mode: None,
                mig: Some(MigInfo {
                    parent: parent.index,
                    parent_uuid: parent.uuid.clone(),
                    gpu_instance: gi,
                    compute_instance: 0,
                    profile: profile.into(),
                    sm_count: Some(sm_count),
                }),
                ..parent.clone()
            };
            let part = Part::Instance {
                share: slices / 7.0,
                sm_count,
                mem_total: mem_gib * GIB,
                power_w: PARENT_FLOOR_W,
                temp_c: 30.0,
                gpm: GpmMetrics::default(),
                mem_used: 0,
            };
            (info, sc, part)
        })
        .collect()
}

impl Part {
    /// Turns a whole GPU's sample into what NVML reports for this part of it.
    pub(super) fn shape(&mut self, s: &mut DeviceSample, spinning: bool) {
        match self {
            Part::Whole => {}
            Part::Parent => {
                // A GPU in MIG mode reports no utilization; its processes are its instances'.
                s.util_gpu_pct = None;
                s.util_mem_pct = None;
            }
            Part::Instance {
                sm_count,
                mem_total,
                power_w,
                temp_c,
                gpm,
                mem_used,
                ..
            } => {
                *power_w = s.power_w.unwrap_or(PARENT_FLOOR_W);
                *temp_c = s.temp_c.unwrap_or(30.0);
                if spinning {
                    // A spinning kernel holds the same few SMs in every sample: 0.8 % of a
                    // whole H200 (measured), a larger share of a small instance's.
                    s.gpm.sm_active_pct = Some(0.8 * H200_SMS / *sm_count as f32);
                    s.gpm.tensor_active_pct = Some(0.0);
                    s.gpm.dram_bw_pct = Some(0.0);
                }
                *gpm = s.gpm;
                s.mem_used_bytes = s.mem_used_bytes.map(|b| b.min(*mem_total * 9 / 10));
                *mem_used = s.mem_used_bytes.unwrap_or(0);
                *s = DeviceSample {
                    t_ms: s.t_ms,
                    mem_used_bytes: s.mem_used_bytes,
                    gpm: s.gpm,
                    ..DeviceSample::default()
                };
            }
        }
    }
}

/// The parent's readings from its instances': power above the floor in proportion to each
/// instance's share, the hottest instance's temperature, GPM weighted by SMs, memory summed.
pub(super) fn fill_parent<'a>(s: &mut DeviceSample, parts: impl Iterator<Item = &'a Part>) {
    let (mut power, mut temp, mut mem) = (PARENT_FLOOR_W, 30.0_f32, 0u64);
    let mut g = [0.0_f32; 4];
    for part in parts {
        let Part::Instance {
            share,
            sm_count,
            power_w,
            temp_c,
            gpm,
            mem_used,
            ..
        } = part
        else {
            break;
        };
        power += share * (power_w - PARENT_FLOOR_W).max(0.0);
        temp = temp.max(*temp_c);
        let w = *sm_count as f32;
        mem += mem_used;
        for (acc, v) in g.iter_mut().zip([
            gpm.sm_active_pct,
            gpm.sm_occupancy_pct,
            gpm.tensor_active_pct,
            gpm.dram_bw_pct,
        ]) {
            *acc += v.unwrap_or(0.0) * w;
        }
    }
    s.power_w = Some(power);
    s.energy_power_w = Some(power);
    s.temp_c = Some(temp.round());
    let over_gpu = |v: f32| Some(v / H200_SMS);
    s.gpm.sm_active_pct = over_gpu(g[0]);
    s.gpm.sm_occupancy_pct = over_gpu(g[1]);
    s.gpm.tensor_active_pct = over_gpu(g[2]);
    s.gpm.dram_bw_pct = over_gpu(g[3]);
    // The driver's own reservation on a MIG GPU comes on top of its instances'.
    s.mem_used_bytes = Some(mem + GIB / 2);
}
