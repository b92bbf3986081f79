//! What a simulated GPU is (an H200's facts) and reads at each moment of its scenario: the mean levels of util, power,
//! clocks and activity (as measured on an H200), and the noise drawn around them.

use super::sim::{Noise, Scenario, MEM_TOTAL, TDP_W};
use crate::model::demo::{Level, BUSY, FLOOR};
use crate::model::{clock_event, DeviceInfo, DeviceSample, GpmMetrics, GIB};

pub(super) fn level(sc: Scenario, t_s: f32, burst: f32) -> Level {
    match sc {
        Scenario::Healthy | Scenario::Health | Scenario::Fleet { .. } => BUSY,
        Scenario::Membound => Level {
            mem_util: 100.0,
            power: 472.0,
            sm_clock: 1980.0,
            sm: 98.0,
            occ: 79.0,
            tensor: 0.0,
            dram: 88.0,
            pcie_rx_kib: 34_000.0,
            temp: 55.0,
            mem_gib: 40.0,
            events: 0,
            ..BUSY
        },
        // A rule's own scenario, declared in its file.
        Scenario::Rule(id) => (crate::rules::demo(id).level)(t_s, burst),
        Scenario::Straggler => Level {
            mem_gib: 90.0,
            ..FLOOR
        },
        // A MIG GPU's own readings come from its instances' (`simmig::fill_parent`).
        Scenario::Mig => Level {
            temp: 45.0,
            ..FLOOR
        },
        Scenario::Idle | Scenario::Mixed => Level {
            power: 80.0,
            sm_clock: 345.0,
            mem_gib: 0.5,
            events: clock_event::GPU_IDLE,
            ..FLOOR
        },
    }
}

pub(super) fn draw(lv: &Level, n: &mut Noise, t_ms: u64, info: &DeviceInfo) -> DeviceSample {
    // Real work moves the power; a spinning kernel leaves it flat at the floor (sd 0 on H200).
    let busy = lv.sm > 50.0;
    let cap = info.power_limit_enforced_w.unwrap_or(TDP_W);
    let power = n.around(lv.power, if busy { 6.0 } else { 0.4 }, 60.0, cap);
    let pct = |n: &mut Noise, v: f32, sd: f32| {
        Some(n.around(v, if v > 0.0 { sd } else { 0.0 }, 0.0, 100.0))
    };
    DeviceSample {
        t_ms,
        util_gpu_pct: Some(
            n.around(
                lv.util,
                if lv.util >= 99.0 || lv.util == 0.0 {
                    0.3
                } else {
                    lv.util * 0.3
                },
                0.0,
                100.0,
            )
            .round(),
        ),
        util_mem_pct: pct(n, lv.mem_util, 2.0).map(f32::round),
        power_w: Some(power),
        energy_power_w: Some(n.around(power, if busy { 5.0 } else { 1.0 }, 50.0, cap + 20.0)),
        power_limit_w: Some(cap),
        temp_c: Some(n.around(lv.temp, 0.4, 20.0, 100.0).round()),
        sm_clock_mhz: Some(
            n.around(lv.sm_clock, if busy { 30.0 } else { 0.0 }, 200.0, 1980.0) as u32,
        ),
        mem_clock_mhz: Some(3201),
        mem_used_bytes: Some((lv.mem_gib * GIB as f32) as u64),
        fan_pct: None,
        pstate: Some(0),
        clock_events: Some(lv.events),
        // An idle link drops to a lower generation to save power; one moving GiB/s does not.
        pcie_gen: Some(if lv.util > 50.0 || lv.pcie_rx_kib > 1_048_576.0 {
            lv.pcie_gen
        } else {
            lv.pcie_gen.min(3)
        }),
        pcie_width: Some(lv.pcie_width),
        pcie_tx_kib_s: Some(n.around(lv.pcie_rx_kib * 0.3, lv.pcie_rx_kib * 0.05, 0.0, 1e8)),
        pcie_rx_kib_s: Some(n.around(lv.pcie_rx_kib, lv.pcie_rx_kib * 0.1, 0.0, 1e8)),
        // Set by `SimHealth::read`.
        energy_mj: None,
        health: crate::model::Health::default(),
        gpm: GpmMetrics {
            sm_active_pct: pct(n, lv.sm, 1.0),
            sm_occupancy_pct: pct(n, lv.occ, 1.0),
            tensor_active_pct: pct(n, lv.tensor, 1.0),
            dram_bw_pct: pct(n, lv.dram, 1.0),
            // Not read live either (see GPM_IDS in nvml/slow.rs).
            engine_active_pct: None,
            fp16_active_pct: Some(0.0),
            fp32_active_pct: pct(n, lv.fp32.unwrap_or(lv.sm * 0.1), 0.5),
            fp64_active_pct: Some(0.0),
        },
    }
}

/// The H200 facts simulated GPU `index` presents in `scenario`.
pub(super) fn device_info(index: usize, scenario: Scenario) -> DeviceInfo {
    DeviceInfo {
        index: index as u32,
        // Each differs in its first eight digits, so `-i GPU-5a1d0003`, the short form README
        // shows, can be tried on the demo.
        uuid: format!("GPU-5a1d{index:04x}-0000-4000-8000-{index:012x}"),
        name: "NVIDIA H200 (simulated)".into(),
        pci_bus_id: format!("00000000:{:02X}:00.0", 0x18 + index * 0x10),
        memory_total_bytes: Some(MEM_TOTAL),
        power_limit_default_w: Some(TDP_W),
        power_limit_enforced_w: Some(
            scenario
                .demo()
                .and_then(|d| d.facts.power_limit_w)
                .unwrap_or(TDP_W),
        ),
        power_limit_min_w: Some(200.0),
        power_limit_max_w: Some(TDP_W),
        max_sm_clock_mhz: Some(1980),
        max_mem_clock_mhz: Some(3201),
        temp_slowdown_c: Some(87),
        pcie_max_gen: Some(5),
        pcie_max_width: Some(16),
        persistence_mode: Some(scenario.demo().is_none_or(|d| d.facts.persistence_mode)),
        mig_mode: Some(false),
        gpm_supported: true,
        mig: None,
    }
}
