//! Snapshots for bug reports: what was seen, in one file (JSON, `docs/snapshot.schema.json`) or
//! a compact Markdown report, and read back by `replay` and `diagnose --replay`.
//!
//! Command lines can carry secrets, so they are redacted by default and can be left out; the
//! host name can be left out. Files are written to a temporary name and renamed, and never
//! overwrite an existing file.

mod file;
mod markdown;

pub use file::{
    bytes_for, check_writable, export_from_tui, json_extension, markdown_wanted, write_new,
    COMPRESS_OVER_BYTES,
};
pub use markdown::{sparkline, to_markdown};

use std::fs;
use std::path::PathBuf;

pub use crate::format::snapshot::{
    parse, to_json, CmdlinePolicy, DeviceSnapshot, Findings, OsInfo, Privacy, Snapshot, FORMAT,
    VERSION,
};
use crate::model::{ProcessSample, SystemInfo};
use crate::rules::Finding;
use crate::store::Store;

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
#[must_use]
pub fn take(store: &Store, opts: &Options) -> Snapshot {
    let to = store.history().latest_ms().unwrap_or(0);
    let from = to.saturating_sub(opts.window_ms);
    let devices = devices_in(store, opts, from, to);
    Snapshot {
        format: FORMAT.into(),
        version: VERSION,
        gpuwatch_version: env!("CARGO_PKG_VERSION").into(),
        taken_at_ms: to,
        host: opts.include_host.then(|| store.system().host.clone()),
        os: os_info(),
        system: SystemInfo {
            host: if opts.include_host {
                store.system().host.clone()
            } else {
                String::new()
            },
            ..store.system().clone()
        },
        source: if opts.include_host {
            store.source_label().to_string()
        } else {
            without_paths(store.source_label())
        },
        interval_ms: store.interval().as_millis() as u64,
        // What the window really holds: less than asked for when sampling was shorter.
        window_ms: store
            .history()
            .devices
            .iter()
            .filter_map(|d| d.samples.window(from, to).next())
            .map(|s| to - s.t_ms)
            .max()
            .unwrap_or(0),
        devices,
        findings: findings_from(store, from),
        thresholds: store.findings().thresholds().clone(),
        cost: *store.cost(),
        privacy: Privacy {
            host_included: opts.include_host,
            cmdlines: opts.cmdlines,
        },
        stacks: store
            .history()
            .stacks
            .iter()
            .filter(|b| b.t_ms >= from)
            .map(|b| private_burst(b, opts.include_host))
            .collect(),
        events: events_from(store, from),
    }
}

/// Each GPU's samples from `from` to `to`, and its processes as `opts` allow.
fn devices_in(store: &Store, opts: &Options, from: u64, to: u64) -> Vec<DeviceSnapshot> {
    store
        .history()
        .devices
        .iter()
        .map(|d| DeviceSnapshot {
            info: d.info.clone(),
            status: d.status.clone(),
            idle_floor_w: store.findings().floor_w(d.info.index),
            samples: d.samples.window(from, to).copied().collect(),
            processes: d
                .processes
                .iter()
                .map(|p| private_process(p, opts.cmdlines, opts.include_host))
                .collect(),
        })
        .collect()
}

/// The open findings, those that ended from `from` on, and what is still being judged.
fn findings_from(store: &Store, from: u64) -> Findings {
    let in_window = |f: &&Finding| f.cleared_ms.is_none_or(|c| c >= from);
    let found = store.findings();
    Findings {
        active: found.active().to_vec(),
        recent: found.cleared().iter().filter(in_window).cloned().collect(),
        judging: found.pending().cloned().collect(),
    }
}

/// The driver's events from `from` (ms) on.
fn events_from(store: &Store, from: u64) -> Vec<crate::model::GpuEvent> {
    let events = &store.history().events;
    events.iter().filter(|e| e.t_ms >= from).copied().collect()
}

/// A burst as the snapshot keeps it: without the host (`--no-host`), file paths lose what
/// names the machine's layout and its users: a program's file keeps its name, an installed
/// one its path from `site-packages/` on.
fn private_burst(
    b: &crate::model::stack::StackBurst,
    include_host: bool,
) -> crate::model::stack::StackBurst {
    let mut b = b.clone();
    if !include_host {
        strip_paths(&mut b);
    }
    b
}

fn strip_paths(b: &mut crate::model::stack::StackBurst) {
    for f in b.threads.iter_mut().flat_map(|t| t.frames.iter_mut()) {
        f.file = short_path(&f.file);
    }
    for c in &mut b.children {
        strip_paths(c);
    }
}

/// `/home/alice/train.py` → `train.py`; `/opt/venv/lib/python3.12/site-packages/torch/x.py`
/// → `site-packages/torch/x.py`; `/usr/lib/python3.12/queue.py` → `python3.12/queue.py`.
fn short_path(file: &str) -> String {
    for marker in ["site-packages/", "dist-packages/"] {
        if let Some(i) = file.find(marker) {
            return file[i..].to_string();
        }
    }
    let parts: Vec<&str> = file.rsplit('/').take(2).collect();
    match parts.as_slice() {
        [name, dir] if dir.starts_with("python3") => format!("{dir}/{name}"),
        [name, ..] => (*name).to_string(),
        [] => String::new(),
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
            // Who ran it says which machine and which person it was; so do the directories
            // its libraries were loaded from (a home directory, a user's venv).
            h.user = None;
            if let Some(sw) = h.software.as_deref() {
                let mut sw = sw.clone();
                for lib in &mut sw.libraries {
                    lib.path = lib.path.rsplit('/').next().unwrap_or_default().to_string();
                }
                h.software = Some(std::sync::Arc::new(sw));
            }
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
    /// The cause is part of the message and not a `source`, so `{:#}` does not say it twice.
    // Names are said on one line, escaped: a newline in `-o` split the message.
    #[error(
        "cannot write a snapshot in {}: {io}. Choose a writable place with -o",
        crate::text::path_shown(dir)
    )]
    Write { dir: PathBuf, io: std::io::Error },
    #[error("cannot read snapshot {}: {reason}", crate::text::path_shown(path))]
    Read { path: PathBuf, reason: String },
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
