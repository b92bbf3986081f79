//! Every rule's id, typed: a misspelt id does not compile. On the wire (findings, recordings,
//! snapshots, the exporter's `finding` label, alert rules) it is the kebab-case string.

use serde::{Deserialize, Serialize};

/// The rules gpuwatch knows, as findings and files name them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RuleId {
    Lost,
    Xid,
    Ecc,
    RowRemap,
    Hang,
    Starved,
    Sync,
    Transfer,
    Powercap,
    Thermal,
    Pcie,
    PcieReplay,
    Nvlink,
    MemFull,
    MemGrowth,
    IdleMem,
    Fp32,
    Persistence,
}

impl RuleId {
    /// Every id, in the registry's order (`rules::all_rules` checks that they agree).
    pub const ALL: [RuleId; 18] = [
        RuleId::Lost,
        RuleId::Xid,
        RuleId::Ecc,
        RuleId::RowRemap,
        RuleId::Hang,
        RuleId::Starved,
        RuleId::Sync,
        RuleId::Transfer,
        RuleId::Powercap,
        RuleId::Thermal,
        RuleId::Pcie,
        RuleId::PcieReplay,
        RuleId::Nvlink,
        RuleId::MemFull,
        RuleId::MemGrowth,
        RuleId::IdleMem,
        RuleId::Fp32,
        RuleId::Persistence,
    ];

    /// The id as findings and files write it: `hang`, `mem-growth`.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            RuleId::Lost => "lost",
            RuleId::Xid => "xid",
            RuleId::Ecc => "ecc",
            RuleId::RowRemap => "row-remap",
            RuleId::PcieReplay => "pcie-replay",
            RuleId::Nvlink => "nvlink",
            RuleId::Hang => "hang",
            RuleId::Starved => "starved",
            RuleId::Sync => "sync",
            RuleId::Transfer => "transfer",
            RuleId::Powercap => "powercap",
            RuleId::Thermal => "thermal",
            RuleId::Pcie => "pcie",
            RuleId::MemFull => "mem-full",
            RuleId::MemGrowth => "mem-growth",
            RuleId::IdleMem => "idle-mem",
            RuleId::Fp32 => "fp32",
            RuleId::Persistence => "persistence",
        }
    }

    /// The short name where the whole one does not fit (a GPU row at 80 columns).
    #[must_use]
    pub const fn short(self) -> &'static str {
        match self {
            RuleId::Lost => "LOST",
            RuleId::Xid => "XID",
            RuleId::Ecc => "ECC",
            RuleId::RowRemap => "REMAP",
            RuleId::PcieReplay => "REPLAY",
            RuleId::Nvlink => "NVLINK",
            RuleId::Hang => "HANG",
            RuleId::Starved => "STARV",
            RuleId::Sync => "SYNC",
            RuleId::Transfer => "XFER",
            RuleId::Powercap => "PWRCAP",
            RuleId::Thermal => "THERM",
            RuleId::Pcie => "PCIE",
            RuleId::MemFull => "MEMFULL",
            RuleId::MemGrowth => "MEMGROW",
            RuleId::IdleMem => "IDLEMEM",
            RuleId::Fp32 => "FP32",
            RuleId::Persistence => "PERSIST",
        }
    }

    /// The id a finding read from a file names; `None` for one this build does not know (a
    /// file from a newer gpuwatch).
    #[must_use]
    pub fn parse(s: &str) -> Option<RuleId> {
        RuleId::ALL.into_iter().find(|id| id.as_str() == s)
    }
}

impl std::fmt::Display for RuleId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl From<RuleId> for String {
    fn from(id: RuleId) -> String {
        id.as_str().into()
    }
}

/// `finding.rule == RuleId::Hang`: findings keep the id as read (a file may name a rule this
/// build does not know), compared with a typed one.
impl PartialEq<RuleId> for String {
    fn eq(&self, id: &RuleId) -> bool {
        self == id.as_str()
    }
}

impl PartialEq<RuleId> for str {
    fn eq(&self, id: &RuleId) -> bool {
        self == id.as_str()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_id_reads_back_and_serializes_as_its_string() {
        for id in RuleId::ALL {
            assert_eq!(RuleId::parse(id.as_str()), Some(id));
            assert_eq!(
                serde_json::to_string(&id).unwrap(),
                format!("\"{}\"", id.as_str())
            );
        }
        assert_eq!(RuleId::parse("nonesuch"), None);
    }
}
