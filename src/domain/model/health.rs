//! A GPU's health as NVML counts it: ECC errors, remapped memory rows, `PCIe` replays, `NVLink`
//! links and their errors (`Health`, read on the slow tick), and the events the driver
//! reports as they happen (`GpuEvent`: Xid errors, ECC errors).
//!
//! Every counter is `None` where the GPU or the driver does not have it (a VM hides `NVLink`,
//! consumer GPUs have no ECC): unsupported is a gap, never a zero.

use serde::{Deserialize, Serialize};

/// Health counters of one GPU. `Copy` and fixed-size: it rides in every `DeviceSample`.
/// Counts saturate at `u32::MAX`, far above what a GPU still in service reports.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Health {
    /// ECC errors since the driver loaded (what this boot's jobs met)…
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ecc_corrected_volatile: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ecc_uncorrected_volatile: Option<u32>,
    /// …and over the GPU's life.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ecc_corrected_aggregate: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ecc_uncorrected_aggregate: Option<u32>,
    /// Memory rows remapped for corrected and uncorrected errors (Ampere and newer).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remapped_rows_corrected: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remapped_rows_uncorrected: Option<u32>,
    /// A remap waits for the next GPU reset: the GPU needs one before its next job.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remap_pending: Option<bool>,
    /// A remap failed: the GPU is out of spare rows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remap_failure: Option<bool>,
    /// `PCIe` link-level replays since the driver loaded: each is a packet sent again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pcie_replays: Option<u32>,
    /// `NVLink` links up, and links the GPU has.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nvlink_active: Option<u8>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nvlink_links: Option<u8>,
    /// `NVLink` CRC, replay and recovery errors, summed over the links.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nvlink_errors: Option<u32>,
}

impl Health {
    /// True when nothing was read (a recording from before health was kept, a simulated GPU
    /// without it): written as nothing at all.
    #[must_use]
    pub fn is_unknown(&self) -> bool {
        *self == Health::default()
    }

    /// The problems these counters show now, for a mark on the GPU's row: uncorrected ECC
    /// errors this boot, a pending or failed remap. Rising counters need time and are the
    /// rules' to judge.
    #[must_use]
    pub fn standing_problem(&self) -> Option<&'static str> {
        if self.remap_failure == Some(true) {
            Some("row remap failed")
        } else if self.remap_pending == Some(true) {
            Some("reset needed (row remap pending)")
        } else if self.ecc_uncorrected_volatile.is_some_and(|n| n > 0) {
            Some("uncorrected ECC errors")
        } else {
            None
        }
    }
}

/// Saturates a counter into the `u32` that `Health` keeps.
#[must_use]
pub fn count(v: u64) -> u32 {
    u32::try_from(v).unwrap_or(u32::MAX)
}

/// Something the driver reported as it happened, through NVML's event API.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct GpuEvent {
    /// When gpuwatch received it (ms since the Unix epoch).
    pub t_ms: u64,
    /// The GPU (NVML index).
    pub device: u32,
    pub kind: EventKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum EventKind {
    /// A critical Xid error: `code` as NVIDIA's Xid catalog numbers it, `None` where NVML
    /// could not say which (it reports only the latest when several came at once).
    Xid { code: Option<u64> },
    /// A single-bit (corrected) ECC error.
    EccCorrected,
    /// A double-bit (uncorrected) ECC error.
    EccUncorrected,
}

impl EventKind {
    /// The Xid code, where this is an Xid event that names one.
    #[must_use]
    pub fn xid(self) -> Option<u64> {
        match self {
            EventKind::Xid { code } => code,
            _ => None,
        }
    }

    /// "Xid 79", "uncorrected ECC error": how evidence names it.
    #[must_use]
    pub fn label(self) -> String {
        match self {
            EventKind::Xid { code: Some(c) } => format!("Xid {c}"),
            EventKind::Xid { code: None } => "an Xid error (code unknown)".into(),
            EventKind::EccCorrected => "a corrected ECC error".into(),
            EventKind::EccUncorrected => "an uncorrected ECC error".into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_health_is_written_as_nothing_and_read_back_from_nothing() {
        let s = crate::model::DeviceSample::default();
        let line = serde_json::to_string(&s).unwrap();
        assert!(!line.contains("health"), "{line}");
        let back: crate::model::DeviceSample = serde_json::from_str(&line).unwrap();
        assert!(back.health.is_unknown());
        let h = Health {
            ecc_uncorrected_volatile: Some(0),
            remap_pending: Some(false),
            ..Health::default()
        };
        let line = serde_json::to_string(&h).unwrap();
        assert_eq!(
            line,
            r#"{"ecc_uncorrected_volatile":0,"remap_pending":false}"#
        );
        assert_eq!(serde_json::from_str::<Health>(&line).unwrap(), h);
    }

    #[test]
    fn a_standing_problem_is_named_and_history_alone_is_not_one() {
        // The lent H200: 38 uncorrected errors over its life, 17 rows remapped, none this
        // boot and nothing pending — healthy now.
        let h200 = Health {
            ecc_uncorrected_volatile: Some(0),
            ecc_uncorrected_aggregate: Some(38),
            remapped_rows_uncorrected: Some(17),
            remap_pending: Some(false),
            remap_failure: Some(false),
            ..Health::default()
        };
        assert_eq!(h200.standing_problem(), None);
        let pending = Health {
            remap_pending: Some(true),
            ..h200
        };
        assert!(pending.standing_problem().unwrap().contains("reset"));
        assert_eq!(count(u64::MAX), u32::MAX);
    }

    #[test]
    fn events_read_back_as_written() {
        let e = GpuEvent {
            t_ms: 5,
            device: 1,
            kind: EventKind::Xid { code: Some(79) },
        };
        let line = serde_json::to_string(&e).unwrap();
        assert_eq!(
            line,
            r#"{"t_ms":5,"device":1,"kind":{"type":"xid","code":79}}"#
        );
        assert_eq!(serde_json::from_str::<GpuEvent>(&line).unwrap(), e);
        assert_eq!(e.kind.label(), "Xid 79");
    }
}
