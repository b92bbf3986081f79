//! The snapshot file: its data types and its reader. Built from what was observed by
//! `crate::snapshot::take`; read back by the replay source, which must not depend on the store.

use serde::{Deserialize, Serialize};

use crate::model::{DeviceInfo, DeviceSample, DeviceStatus, ProcessSample, SelfCost, SystemInfo};
use crate::rules::Finding;
use crate::rules::Thresholds;

pub const FORMAT: &str = "gpuwatch-snapshot";
pub const VERSION: u32 = 1;
/// The largest snapshot gpuwatch reads (the JSON text, decompressed), and so writes.
pub const MAX_SNAPSHOT_BYTES: u64 = 256 << 20;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Snapshot {
    pub format: String,
    pub version: u32,
    pub gpuwatch_version: String,
    /// When it was taken (ms since the Unix epoch): the newest sample's time.
    pub taken_at_ms: u64,
    pub host: Option<String>,
    pub os: OsInfo,
    pub system: SystemInfo,
    pub source: String,
    pub interval_ms: u64,
    pub window_ms: u64,
    pub devices: Vec<DeviceSnapshot>,
    pub findings: Findings,
    pub thresholds: Thresholds,
    pub cost: SelfCost,
    /// What was left out or redacted, so a reader knows.
    pub privacy: Privacy,
    /// The newest Python stack burst of each process read within the window.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stacks: Vec<crate::model::stack::StackBurst>,
    /// The driver's events (Xid, ECC errors) within the window, oldest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<crate::model::GpuEvent>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct OsInfo {
    pub name: Option<String>,
    pub kernel: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeviceSnapshot {
    pub info: DeviceInfo,
    pub status: DeviceStatus,
    /// The learned idle floor in watts, if one was seen.
    pub idle_floor_w: Option<f32>,
    /// Every sample in the window, oldest first; unsupported metrics are null.
    pub samples: Vec<DeviceSample>,
    /// The processes on the GPU at the newest sample, with their host side.
    pub processes: Vec<ProcessSample>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Findings {
    pub active: Vec<Finding>,
    pub recent: Vec<Finding>,
    /// GPUs the rules had not judged in full when the snapshot was taken (a process had just
    /// started, or watching had just begun): no finding there is not "all clear".
    #[serde(default)]
    pub judging: Vec<crate::rules::Judging>,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Privacy {
    pub host_included: bool,
    pub cmdlines: CmdlinePolicy,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CmdlinePolicy {
    /// Values of flags and variables that look like secrets are replaced by `***`.
    Redacted,
    /// Command lines are left out; process names stay.
    Omitted,
    /// Kept as they were (`--no-redact`, for one's own machine).
    Raw,
}

#[must_use]
pub fn to_json(s: &Snapshot) -> String {
    serde_json::to_string_pretty(s).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
}

/// The first key of a snapshot's `thresholds` whose value its section refuses, with why and
/// the line it is on.
fn threshold_reason(table: Option<&serde_json::Value>, text: &str) -> Option<String> {
    let section = text.find("\"thresholds\"")?;
    table?.as_object()?.iter().find_map(|(key, value)| {
        let alone = serde_json::json!({ key: value });
        let e = serde_json::from_value::<Thresholds>(alone).err()?;
        let at = text[section..].find(&format!("\"{key}\""))? + section;
        let line = text[..at].matches('\n').count() + 1;
        Some(format!(
            "thresholds.{key}: {}, at line {line}",
            super::reason::plain_expected(&e.to_string())
        ))
    })
}

/// Parses a snapshot's JSON text: `Err` with the reason when it is not one this gpuwatch reads.
pub fn parse(text: &str) -> Result<Snapshot, String> {
    let value: serde_json::Value = serde_json::from_str(text).map_err(|e| {
        if e.is_eof() {
            format!(
                "it ends at line {} before the snapshot does: the file was cut short \
                 (copy or download it again)",
                e.line()
            )
        } else {
            super::reason::serde_reason(&e, text)
        }
    })?;
    if value.get("format").and_then(|f| f.as_str()) != Some(FORMAT) {
        return Err(format!("no \"format\": \"{FORMAT}\""));
    }
    if value
        .get("version")
        .and_then(serde_json::Value::as_u64)
        .unwrap_or(0) as u32
        > VERSION
    {
        return Err(format!(
            "it is a newer format than this gpuwatch reads ({VERSION}); update gpuwatch"
        ));
    }
    // Parsed again from the text only when a value is refused, so that serde says where.
    let thresholds = value.get("thresholds").cloned();
    let mut snap: Snapshot = serde_json::from_value(value).map_err(|e| {
        let Err(at) = serde_json::from_str::<Snapshot>(text) else {
            return super::reason::plain_expected(&e.to_string());
        };
        let reason = super::reason::serde_reason(&at, text);
        // The thresholds are one flattened table: serde reads it whole and says where it
        // ends, not which key. Each key is tried alone to name it.
        if reason.starts_with("thresholds: ") {
            threshold_reason(thresholds.as_ref(), text).unwrap_or(reason)
        } else {
            reason
        }
    })?;
    if let Some(why) = crate::model::stack::too_big(&snap.stacks) {
        return Err(why);
    }
    let at = snap.taken_at_ms;
    for b in &mut snap.stacks {
        b.check_and_clean(at)?;
    }
    Ok(snap)
}
