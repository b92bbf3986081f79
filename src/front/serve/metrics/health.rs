//! The health families: ECC errors, retired rows, `PCIe` replays, `NVLink` errors, driver events by
//! kind, energy per GPU and per finding.

use super::{decimal, label, latest, Exposition, Kind};
use crate::monitor::Store;

/// What a health series reads.
type HealthRead = fn(&crate::model::Health) -> Option<f64>;

/// The health series: totals as NVML keeps them (since the driver loaded, or over the GPU's
/// life) are counters, states are gauges; each is absent where the GPU does not report it.
const HEALTH_SERIES: &[(&str, &str, Kind, HealthRead)] = &[
    (
        "gpuwatch_ecc_errors_corrected_volatile",
        "corrected ECC errors since the driver loaded",
        Kind::Counter,
        |h| h.ecc_corrected_volatile.map(f64::from),
    ),
    (
        "gpuwatch_ecc_errors_uncorrected_volatile",
        "uncorrected ECC errors since the driver loaded",
        Kind::Counter,
        |h| h.ecc_uncorrected_volatile.map(f64::from),
    ),
    (
        "gpuwatch_ecc_errors_corrected_aggregate",
        "corrected ECC errors over the GPU's life",
        Kind::Counter,
        |h| h.ecc_corrected_aggregate.map(f64::from),
    ),
    (
        "gpuwatch_ecc_errors_uncorrected_aggregate",
        "uncorrected ECC errors over the GPU's life",
        Kind::Counter,
        |h| h.ecc_uncorrected_aggregate.map(f64::from),
    ),
    (
        "gpuwatch_remapped_rows_corrected",
        "memory rows remapped for corrected errors",
        Kind::Gauge,
        |h| h.remapped_rows_corrected.map(f64::from),
    ),
    (
        "gpuwatch_remapped_rows_uncorrected",
        "memory rows remapped for uncorrected errors",
        Kind::Gauge,
        |h| h.remapped_rows_uncorrected.map(f64::from),
    ),
    (
        "gpuwatch_row_remap_pending",
        "1 while a row remap waits for a GPU reset",
        Kind::Gauge,
        |h| h.remap_pending.map(|b| f64::from(u8::from(b))),
    ),
    (
        "gpuwatch_row_remap_failure",
        "1 once a row remap failed (no spare rows)",
        Kind::Gauge,
        |h| h.remap_failure.map(|b| f64::from(u8::from(b))),
    ),
    (
        "gpuwatch_pcie_replays",
        "PCIe replays since the driver loaded",
        Kind::Counter,
        |h| h.pcie_replays.map(f64::from),
    ),
    (
        "gpuwatch_nvlink_links_active",
        "NVLink links up",
        Kind::Gauge,
        |h| h.nvlink_active.map(f64::from),
    ),
    (
        "gpuwatch_nvlink_links",
        "NVLink links the GPU has",
        Kind::Gauge,
        |h| h.nvlink_links.map(f64::from),
    ),
    (
        "gpuwatch_nvlink_errors",
        "NVLink CRC, replay and recovery errors since the driver loaded, all links",
        Kind::Counter,
        |h| h.nvlink_errors.map(f64::from),
    ),
];

/// Health counters, driver events by kind, energy per GPU and per finding.
pub(super) fn health_families(
    e: &mut Exposition,
    store: &Store,
    ids: &[String],
    findings: &[String],
) {
    let devices = &store.history().devices;
    for (name, help, kind, read) in HEALTH_SERIES {
        e.family(name, help, *kind, None);
        for (d, id) in devices.iter().zip(ids) {
            if let Some(v) = latest(d).and_then(|s| read(&s.health)) {
                match kind {
                    Kind::Counter => e.counter(&[id], v as u64),
                    Kind::Gauge => e.gauge(&[id], v),
                }
            }
        }
    }
    e.family(
        "gpuwatch_xid_errors",
        "Xid errors the driver reported since gpuwatch started, by code",
        Kind::Counter,
        None,
    );
    for c in &store.history().event_counts {
        let (Some(pos), crate::model::EventKind::Xid { code }) = (
            devices.iter().position(|d| d.info.index == c.device),
            c.kind,
        ) else {
            continue;
        };
        let xid = label(
            "xid",
            &code.map_or_else(|| "unknown".into(), |c| c.to_string()),
        );
        e.counter(&[&ids[pos], &xid], c.count);
    }
    e.family(
        "gpuwatch_energy",
        "energy the GPU used since gpuwatch started (its energy counter, power between readings)",
        Kind::Counter,
        Some("joules"),
    );
    for (d, id) in devices.iter().zip(ids) {
        e.counter_f64(&[id], decimal(d.energy.total_j()));
    }
    e.family(
        "gpuwatch_finding_energy",
        "energy the GPU used while this finding was open, all its findings since gpuwatch started",
        Kind::Counter,
        Some("joules"),
    );
    for (d, id) in devices.iter().zip(ids) {
        for (r, finding) in findings.iter().enumerate() {
            let j = store.findings().energy_j(d.info.index, r);
            if j > 0.0 {
                e.counter_f64(&[id, finding], decimal(j));
            }
        }
    }
}
