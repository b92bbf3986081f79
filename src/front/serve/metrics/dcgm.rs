//! The names and units dcgm-exporter writes (`serve --dcgm-compat`), for the standard DCGM
//! dashboard on nodes without dcgm-exporter.

use super::{
    gpu_and_uuid, label, latest, mig_labels, ratio, watts, DeviceHistory, Exposition, Kind,
};
use crate::model::{DeviceInfo, DeviceSample};

/// What a dcgm-exporter family reads.
type DcgmRead = fn(&DeviceInfo, &DeviceSample) -> Option<f64>;

/// The dcgm-exporter families, in its names and units.
const DCGM_FAMILIES: [(&str, &str, DcgmRead); 21] = [
    ("DCGM_FI_DEV_GPU_UTIL", "GPU utilization (in %)", |_, s| {
        s.util_gpu_pct.map(f64::from)
    }),
    (
        "DCGM_FI_DEV_MEM_COPY_UTIL",
        "Memory utilization (in %)",
        |_, s| s.util_mem_pct.map(f64::from),
    ),
    (
        "DCGM_FI_DEV_FB_USED",
        "Framebuffer memory used (in MiB)",
        |_, s| s.mem_used_bytes.map(|b| (b >> 20) as f64),
    ),
    (
        "DCGM_FI_DEV_FB_FREE",
        "Framebuffer memory free (in MiB)",
        |i, s| {
            s.mem_used_bytes
                .zip(i.memory_total_bytes)
                .map(|(u, t)| (t.saturating_sub(u) >> 20) as f64)
        },
    ),
    ("DCGM_FI_DEV_POWER_USAGE", "Power draw (in W)", |_, s| {
        watts(s.power_w)
    }),
    ("DCGM_FI_DEV_GPU_TEMP", "GPU temperature (in C)", |_, s| {
        s.temp_c.map(f64::from)
    }),
    (
        "DCGM_FI_DEV_SM_CLOCK",
        "SM clock frequency (in MHz)",
        |_, s| s.sm_clock_mhz.map(f64::from),
    ),
    (
        "DCGM_FI_DEV_MEM_CLOCK",
        "Memory clock frequency (in MHz)",
        |_, s| s.mem_clock_mhz.map(f64::from),
    ),
    (
        "DCGM_FI_PROF_SM_ACTIVE",
        "The ratio of cycles an SM has at least 1 warp assigned (GPM)",
        |_, s| ratio(s.gpm.sm_active_pct),
    ),
    (
        "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
        "Ratio of cycles the tensor (HMMA) pipe is active (GPM)",
        |_, s| ratio(s.gpm.tensor_active_pct),
    ),
    (
        "DCGM_FI_PROF_DRAM_ACTIVE",
        "Ratio of cycles the device memory interface is active (GPM)",
        |_, s| ratio(s.gpm.dram_bw_pct),
    ),
    (
        "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
        "Total energy consumption since boot (in mJ)",
        |_, s| s.energy_mj.map(|mj| mj as f64),
    ),
    (
        "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL",
        "Total number of single-bit volatile ECC errors",
        |_, s| s.health.ecc_corrected_volatile.map(f64::from),
    ),
    (
        "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",
        "Total number of double-bit volatile ECC errors",
        |_, s| s.health.ecc_uncorrected_volatile.map(f64::from),
    ),
    (
        "DCGM_FI_DEV_ECC_SBE_AGG_TOTAL",
        "Total number of single-bit persistent ECC errors",
        |_, s| s.health.ecc_corrected_aggregate.map(f64::from),
    ),
    (
        "DCGM_FI_DEV_ECC_DBE_AGG_TOTAL",
        "Total number of double-bit persistent ECC errors",
        |_, s| s.health.ecc_uncorrected_aggregate.map(f64::from),
    ),
    (
        "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS",
        "Number of remapped rows for correctable errors",
        |_, s| s.health.remapped_rows_corrected.map(f64::from),
    ),
    (
        "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",
        "Number of remapped rows for uncorrectable errors",
        |_, s| s.health.remapped_rows_uncorrected.map(f64::from),
    ),
    (
        "DCGM_FI_DEV_ROW_REMAP_PENDING",
        "Whether remapping of rows is pending",
        |_, s| s.health.remap_pending.map(|b| f64::from(u8::from(b))),
    ),
    (
        "DCGM_FI_DEV_ROW_REMAP_FAILURE",
        "Whether remapping of rows has failed",
        |_, s| s.health.remap_failure.map(|b| f64::from(u8::from(b))),
    ),
    (
        "DCGM_FI_DEV_PCIE_REPLAY_COUNTER",
        "Total number of PCIe retries",
        |_, s| s.health.pcie_replays.map(f64::from),
    ),
];

/// The dcgm-exporter names and units the standard DCGM Grafana dashboard reads (MiB, MHz, %,
/// W, °C; profiling ratios 0–1), for nodes without dcgm-exporter (`--dcgm-compat`).
pub(super) fn dcgm_families(
    e: &mut Exposition,
    devices: &[DeviceHistory],
    events: &[crate::model::GpuEvent],
    host: &str,
) {
    // dcgm-exporter's labels, in its spelling.
    let ids: Vec<String> = devices
        .iter()
        .map(|d| {
            let i = &d.info;
            let (gpu, uuid) = gpu_and_uuid(i);
            let mut labels = vec![
                label("gpu", &gpu.to_string()),
                label("UUID", uuid),
                label("pci_bus_id", &i.pci_bus_id),
                label("device", &format!("nvidia{gpu}")),
                label("modelName", &i.name),
            ];
            labels.extend(mig_labels(i));
            labels.push(label("Hostname", host));
            labels.join(",")
        })
        .collect();
    for (name, help, read) in DCGM_FAMILIES {
        e.family(name, help, Kind::Gauge, None);
        for (d, id) in devices.iter().zip(&ids) {
            if let Some(v) = latest(d).and_then(|s| read(&d.info, s)) {
                e.gauge(&[id], v);
            }
        }
    }
    e.family(
        "DCGM_FI_DEV_XID_ERRORS",
        "Value of the last XID error encountered",
        Kind::Gauge,
        None,
    );
    for (d, id) in devices.iter().zip(&ids) {
        let last = events
            .iter()
            .rev()
            .find(|e| e.device == d.info.index)
            .and_then(|e| e.kind.xid());
        if let Some(code) = last {
            e.gauge(&[id], code as f64);
        }
    }
}
