//! Snapshots for bug reports: what was seen, in one file (JSON, `docs/snapshot.schema.json`) or
//! a compact Markdown report, and read back by `replay` and `diagnose --replay`.
//!
//! Command lines can carry secrets, so they are redacted by default and can be left out; the
//! host name can be left out. Files are written to a temporary name and renamed, and never
//! overwrite an existing file.

mod file;
mod markdown;

pub use file::{export_from_tui, stamp, write_new};
pub use markdown::{sparkline, to_markdown};

use std::fs;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::config::Thresholds;
use crate::model::{DeviceInfo, DeviceSample, DeviceStatus, ProcessSample, SystemInfo, Tick};
use crate::rules::Finding;
use crate::sampler::{Observed, SelfCost};

pub const FORMAT: &str = "gpuwatch-snapshot";
pub const VERSION: u32 = 1;

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

/// What to include.
#[derive(Debug, Clone, Copy)]
pub struct Options {
    pub window_ms: u64,
    pub include_host: bool,
    pub cmdlines: CmdlinePolicy,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            window_ms: 120_000,
            include_host: true,
            cmdlines: if crate::redact::redacting() {
                CmdlinePolicy::Redacted
            } else {
                CmdlinePolicy::Raw
            },
        }
    }
}

/// Builds a snapshot of the last `window_ms` of what was observed.
pub fn take(obs: &Observed, opts: &Options) -> Snapshot {
    let to = obs.history.latest_ms().unwrap_or(0);
    let from = to.saturating_sub(opts.window_ms);
    let devices = obs
        .history
        .devices
        .iter()
        .map(|d| DeviceSnapshot {
            info: d.info.clone(),
            status: d.status.clone(),
            idle_floor_w: Some(obs.engine.floor_w(&d.info)),
            samples: d.samples.window(from, to).copied().collect(),
            processes: d
                .processes
                .iter()
                .map(|p| private_process(p, opts.cmdlines, opts.include_host))
                .collect(),
        })
        .collect();
    let in_window = |f: &&Finding| f.cleared_ms.is_none_or(|c| c >= from);
    Snapshot {
        format: FORMAT.into(),
        version: VERSION,
        gpuwatch_version: env!("CARGO_PKG_VERSION").into(),
        taken_at_ms: to,
        host: opts.include_host.then(|| obs.system.host.clone()),
        os: os_info(),
        system: SystemInfo {
            host: if opts.include_host {
                obs.system.host.clone()
            } else {
                String::new()
            },
            ..obs.system.clone()
        },
        source: if opts.include_host {
            obs.source_label.clone()
        } else {
            without_paths(&obs.source_label)
        },
        interval_ms: obs.interval_ms,
        // What the window really holds: less than asked for when sampling was shorter.
        window_ms: obs
            .history
            .devices
            .iter()
            .filter_map(|d| d.samples.window(from, to).next())
            .map(|s| to - s.t_ms)
            .max()
            .unwrap_or(0),
        devices,
        findings: Findings {
            active: obs.engine.active().into_iter().cloned().collect(),
            recent: obs
                .engine
                .cleared
                .iter()
                .filter(in_window)
                .cloned()
                .collect(),
            judging: obs.engine.pending().cloned().collect(),
        },
        thresholds: obs.engine.thresholds.clone(),
        cost: obs.cost,
        privacy: Privacy {
            host_included: opts.include_host,
            cmdlines: opts.cmdlines,
        },
    }
}

fn os_info() -> OsInfo {
    let name = fs::read_to_string("/etc/os-release").ok().and_then(|t| {
        t.lines().find_map(|l| {
            l.strip_prefix("PRETTY_NAME=")
                .map(|v| v.trim_matches('"').to_string())
        })
    });
    let kernel = fs::read_to_string("/proc/sys/kernel/osrelease")
        .ok()
        .map(|s| s.trim().to_string());
    OsInfo { name, kernel }
}

/// "replay: /home/alice/runs/x.jsonl" → "replay: x.jsonl": a path names its owner.
fn without_paths(label: &str) -> String {
    label
        .split(' ')
        .map(|w| {
            if w.contains('/') {
                w.rsplit('/').next().unwrap_or(w)
            } else {
                w
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn private_process(p: &ProcessSample, policy: CmdlinePolicy, include_host: bool) -> ProcessSample {
    let mut p = p.clone();
    if let Some(h) = p.host.as_mut() {
        if !include_host {
            // Who ran it says which machine and which person it was.
            h.user = None;
        }
        h.cmdline = match policy {
            CmdlinePolicy::Redacted => crate::redact::redact(&h.cmdline),
            CmdlinePolicy::Omitted => String::new(),
            CmdlinePolicy::Raw => h.cmdline.clone(),
        };
    }
    p
}

#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    #[error("cannot write a snapshot in {dir}: {source}. Choose a writable place with -o (or GPUWATCH_SNAPSHOT_DIR in the monitor)")]
    Write {
        dir: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot read snapshot {path}: {reason}")]
    Read { path: PathBuf, reason: String },
}

pub fn to_json(s: &Snapshot) -> String {
    serde_json::to_string_pretty(s).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
}

/// Parses a snapshot's JSON text: `Err` with the reason when it is not one this gpuwatch reads.
pub fn parse(text: &str) -> Result<Snapshot, String> {
    let value: serde_json::Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
    if value.get("format").and_then(|f| f.as_str()) != Some(FORMAT) {
        return Err(format!("no \"format\": \"{FORMAT}\""));
    }
    if value.get("version").and_then(|v| v.as_u64()).unwrap_or(0) as u32 > VERSION {
        return Err(format!(
            "it is a newer format than this gpuwatch reads ({VERSION}); update gpuwatch"
        ));
    }
    serde_json::from_value(value).map_err(|e| e.to_string())
}

/// The snapshot's window as ticks, oldest first, for the replay source. Processes, known only
/// at the newest sample, are attached to every tick so the screen and the rules see them.
pub fn ticks(s: &Snapshot) -> Vec<Tick> {
    let mut times: Vec<u64> = s
        .devices
        .iter()
        .flat_map(|d| d.samples.iter().map(|x| x.t_ms))
        .collect();
    times.sort_unstable();
    times.dedup();
    let mut cursors = vec![0usize; s.devices.len()];
    times
        .into_iter()
        .map(|t| Tick {
            t_ms: t,
            devices: s
                .devices
                .iter()
                .zip(cursors.iter_mut())
                .map(|(d, c)| {
                    while *c + 1 < d.samples.len() && d.samples[*c + 1].t_ms <= t {
                        *c += 1;
                    }
                    let sample = d
                        .samples
                        .get(*c)
                        .copied()
                        .filter(|x| x.t_ms <= t)
                        .unwrap_or(DeviceSample {
                            t_ms: t,
                            ..Default::default()
                        });
                    crate::model::DeviceReading {
                        sample: DeviceSample { t_ms: t, ..sample },
                        processes: d.processes.clone(),
                        status: DeviceStatus::Ok,
                    }
                })
                .collect(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use crate::redact::redact;

    #[test]
    fn secrets_in_flags_variables_and_urls_are_redacted() {
        let cmd = "python train.py --lr 3e-4 --api-key=sk-123 --token abc --hf_token xyz HF_TOKEN=hf_999 WANDB_API_KEY=k --data s3://user:pw@bucket/x --batch 8";
        let r = redact(cmd);
        assert_eq!(r, "python train.py --lr 3e-4 --api-key=*** --token *** --hf_token *** HF_TOKEN=*** WANDB_API_KEY=*** --data s3://***@bucket/x --batch 8");
        for secret in ["sk-123", "abc", "xyz", "hf_999", "pw@", "=k "] {
            assert!(!r.contains(secret), "{secret} leaked: {r}");
        }
    }

    #[test]
    fn harmless_arguments_are_kept() {
        // Whole words decide: "monkey" and "keep" are not "key".
        let cmd = "python -m torch.distributed.run --nproc-per-node 8 train.py --keep-last 3 --monkey 1 --tokenizer gpt2";
        assert_eq!(redact(cmd), "python -m torch.distributed.run --nproc-per-node 8 train.py --keep-last 3 --monkey 1 --tokenizer gpt2");
    }
}
