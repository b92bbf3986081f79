//! Snapshots for bug reports: what was seen, in one file (JSON, `docs/snapshot.schema.json`) or
//! a compact Markdown report, and read back by `replay` and `diagnose --replay`.
//!
//! Command lines can carry secrets, so they are redacted by default and can be left out; the
//! host name can be left out. Files are written to a temporary name and renamed, and never
//! overwrite an existing file.

use std::fmt::Write as _;
use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::config::Thresholds;
use crate::model::{DeviceInfo, DeviceSample, DeviceStatus, ProcessSample, SystemInfo, Tick, GIB};
use crate::report::{clip, clock};
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
            cmdlines: CmdlinePolicy::Redacted,
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
        .enumerate()
        .map(|(i, d)| DeviceSnapshot {
            info: d.info.clone(),
            status: d.status.clone(),
            idle_floor_w: obs.engine.floor_w(i),
            samples: d.samples.window(from, to).copied().collect(),
            processes: d
                .processes
                .iter()
                .map(|p| private_process(p, opts.cmdlines))
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
        source: obs.source_label.clone(),
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

fn private_process(p: &ProcessSample, policy: CmdlinePolicy) -> ProcessSample {
    let mut p = p.clone();
    if let Some(h) = p.host.as_mut() {
        h.cmdline = match policy {
            CmdlinePolicy::Redacted => redact(&h.cmdline),
            CmdlinePolicy::Omitted => String::new(),
        };
    }
    p
}

/// Words of a flag or variable name (split at '-' and '_') that mark its value as secret…
const SECRET_WORDS: [&str; 9] = [
    "key",
    "apikey",
    "pwd",
    "auth",
    "credential",
    "credentials",
    "cookie",
    "pass",
    "pat",
];
fn is_secret_name(name: &str) -> bool {
    let n = name.trim_start_matches('-').to_lowercase();
    // "hftoken" and "dbpassword" are secrets; "tokenizer" and "max_new_tokens" are not.
    n.split(['-', '_']).any(|w| {
        SECRET_WORDS.contains(&w)
            || w.ends_with("token")
            || w.contains("secret")
            || w.contains("passw")
    })
}

/// Replaces the values of secret-looking flags (`--token=x`, `--api-key x`), variables
/// (`HF_TOKEN=x`) and URL credentials (`https://user:pass@host`) with `***`.
pub fn redact(cmdline: &str) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut hide_next = false;
    for arg in cmdline.split(' ') {
        if hide_next && !arg.starts_with('-') {
            out.push("***".into());
            hide_next = false;
            continue;
        }
        hide_next = false;
        if let Some((name, _)) = arg.split_once('=') {
            if is_secret_name(name) {
                out.push(format!("{name}=***"));
                continue;
            }
        } else if arg.starts_with('-') && is_secret_name(arg) {
            hide_next = true;
        }
        out.push(redact_url(arg));
    }
    out.join(" ")
}

fn redact_url(arg: &str) -> String {
    match (arg.find("://"), arg.find('@')) {
        (Some(s), Some(at)) if at > s + 3 && !arg[s + 3..at].contains('/') => {
            format!("{}***{}", &arg[..s + 3], &arg[at..])
        }
        _ => arg.to_string(),
    }
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

/// Writes `text` to `path`, or to `path` with a `-1`, `-2`… suffix if it exists, through a
/// temporary file renamed into place. Returns where it went.
pub fn write_new(path: &Path, text: &str) -> Result<PathBuf, SnapshotError> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
        .to_path_buf();
    let err = |source| SnapshotError::Write {
        dir: dir.clone(),
        source,
    };
    let tmp = dir.join(format!(
        ".{}.tmp-{}",
        path.file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("snapshot"),
        std::process::id()
    ));
    let mut f = fs::File::create(&tmp).map_err(err)?;
    let written = f.write_all(text.as_bytes()).and_then(|_| f.sync_all());
    if let Err(e) = written {
        let _ = fs::remove_file(&tmp);
        return Err(err(e));
    }
    for n in 0..1000 {
        let target = if n == 0 {
            path.to_path_buf()
        } else {
            suffixed(path, n)
        };
        // A hard link fails if the target exists, so nothing is ever overwritten, even racing.
        match fs::hard_link(&tmp, &target) {
            Ok(()) => {
                let _ = fs::remove_file(&tmp);
                return Ok(target);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => {
                let _ = fs::remove_file(&tmp);
                return Err(err(e));
            }
        }
    }
    let _ = fs::remove_file(&tmp);
    Err(err(std::io::Error::other(
        "a thousand files of that name already exist",
    )))
}

fn suffixed(path: &Path, n: u32) -> PathBuf {
    let name = path
        .file_name()
        .and_then(|s| s.to_str())
        .unwrap_or("snapshot");
    let (stem, ext) = match name.split_once('.') {
        Some((s, e)) => (s, format!(".{e}")),
        None => (name, String::new()),
    };
    path.with_file_name(format!("{stem}-{n}{ext}"))
}

pub fn to_json(s: &Snapshot) -> String {
    serde_json::to_string_pretty(s).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
}

/// Reads a snapshot back; `None` if the file is not one (so it can be tried as a recording).
pub fn read(path: &Path) -> Result<Option<Snapshot>, SnapshotError> {
    use std::io::Read;
    let rd = |reason: String| SnapshotError::Read {
        path: path.to_path_buf(),
        reason,
    };
    let mut head = [0u8; 512];
    let n = fs::File::open(path)
        .and_then(|mut f| f.read(&mut head))
        .map_err(|e| rd(e.to_string()))?;
    if !String::from_utf8_lossy(&head[..n]).contains(FORMAT) {
        return Ok(None);
    }
    let text = fs::read_to_string(path).map_err(|e| rd(e.to_string()))?;
    let value: serde_json::Value = serde_json::from_str(&text).map_err(|e| rd(e.to_string()))?;
    if value.get("format").and_then(|f| f.as_str()) != Some(FORMAT) {
        return Ok(None);
    }
    if value.get("version").and_then(|v| v.as_u64()).unwrap_or(0) as u32 > VERSION {
        return Err(rd(format!(
            "it is a newer format than this gpuwatch reads ({VERSION}); update gpuwatch"
        )));
    }
    serde_json::from_value(value)
        .map(Some)
        .map_err(|e| rd(e.to_string()))
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

/// A compact report to paste into an issue tracker.
pub fn to_markdown(s: &Snapshot) -> String {
    let mut md = String::new();
    let host = s.host.as_deref().unwrap_or("(host left out)");
    let _ = writeln!(md, "## gpuwatch snapshot\n");
    let _ = writeln!(
        md,
        "{} GPU(s) on {host}, driver {}, CUDA {}, {}; window {} s ending {} UTC; source: {}; gpuwatch {}.\n",
        s.devices.len(),
        s.system.driver_version.as_deref().unwrap_or("?"),
        s.system.cuda_driver_version.as_deref().unwrap_or("?"),
        s.os.name.as_deref().unwrap_or("?"),
        s.window_ms / 1000,
        clock(s.taken_at_ms),
        s.source,
        s.gpuwatch_version
    );
    let _ = writeln!(md, "| GPU | name | util % (median) | power W (median, % TDP) | SM active % | memory | temp °C | state |");
    let _ = writeln!(md, "|---|---|---|---|---|---|---|---|");
    for d in &s.devices {
        summary_row(&mut md, d);
    }
    let _ = writeln!(md, "\n### Findings\n");
    if s.findings.active.is_empty() && s.findings.recent.is_empty() {
        let _ = writeln!(md, "None: every GPU that looked busy was doing work.");
    }
    for f in s.findings.active.iter().chain(&s.findings.recent) {
        finding_md(&mut md, f);
    }
    let _ = writeln!(md, "\n### Util against power (% of TDP) over the window\n");
    let _ = writeln!(md, "```");
    for d in &s.devices {
        let tdp = d.info.tdp_w();
        let _ = writeln!(
            md,
            "GPU {} util  {}",
            d.info.index,
            sparkline(&d.samples, 60, |x| x.util_gpu_pct)
        );
        let _ = writeln!(
            md,
            "GPU {} power {}",
            d.info.index,
            sparkline(&d.samples, 60, |x| x
                .power_w
                .zip(tdp)
                .map(|(p, t)| p / t * 100.0))
        );
    }
    let _ = writeln!(md, "```\n\n### Top processes\n");
    let _ = writeln!(
        md,
        "| GPU | pid | user | GPU memory | SM % | host CPU % | workers | command |"
    );
    let _ = writeln!(md, "|---|---|---|---|---|---|---|---|");
    let mut procs: Vec<(u32, &ProcessSample)> = s
        .devices
        .iter()
        .flat_map(|d| d.processes.iter().map(move |p| (d.info.index, p)))
        .collect();
    procs.sort_by_key(|(_, p)| std::cmp::Reverse(p.gpu_mem_bytes));
    for (gpu, p) in procs.iter().take(10) {
        let h = p.host.as_ref();
        let cmd = h.map_or("(pid not visible)".to_string(), |h| {
            if h.cmdline.is_empty() {
                h.name.clone()
            } else {
                h.cmdline.replace('|', "\\|")
            }
        });
        let _ = writeln!(
            md,
            "| {gpu} | {} | {} | {} | {} | {} | {} | `{}` |",
            p.pid,
            h.and_then(|h| h.user.as_deref()).unwrap_or("?"),
            p.gpu_mem_bytes.map_or("–".into(), |b| format!(
                "{:.1} GiB",
                b as f64 / GIB as f64
            )),
            p.sm_pct.map_or("–".into(), |v| format!("{v:.0}")),
            h.and_then(|h| h.cpu_pct)
                .map_or("–".into(), |v| format!("{v:.0}")),
            h.map_or("–".into(), |h| h.children.len().to_string()),
            clip(&cmd, 100)
        );
    }
    let _ = writeln!(md, "\n<sub>Command lines: {:?}. Open the JSON with `gpuwatch replay FILE` to see the screen.</sub>", s.privacy.cmdlines);
    md
}

fn summary_row(md: &mut String, d: &DeviceSnapshot) {
    let med = |f: &dyn Fn(&DeviceSample) -> Option<f32>| {
        crate::rules::Stats::of(d.samples.iter().filter_map(f))
    };
    let util = med(&|x| x.util_gpu_pct);
    let power = med(&|x| x.power_w);
    let sm = med(&|x| x.gpm.sm_active_pct);
    let tdp = d.info.tdp_w().unwrap_or(0.0);
    let last = d.samples.last();
    let mem = last.and_then(|x| x.mem_used_bytes).map_or("–".into(), |b| {
        format!(
            "{:.1}/{:.0} GiB",
            b as f64 / GIB as f64,
            d.info.memory_total_bytes.unwrap_or(0) as f64 / GIB as f64
        )
    });
    let state = match &d.status {
        DeviceStatus::Ok => "ok".to_string(),
        DeviceStatus::Lost { reason } => format!("LOST: {reason}"),
    };
    let n = |s: crate::rules::Stats, f: &dyn Fn(f32) -> String| {
        if s.n == 0 {
            "–".to_string()
        } else {
            f(s.median)
        }
    };
    let _ = writeln!(
        md,
        "| {} | {} | {} | {} | {} | {mem} | {} | {state} |",
        d.info.index,
        d.info.name,
        n(util, &|v| format!("{v:.0}")),
        n(power, &|v| if tdp > 0.0 {
            format!("{v:.0} ({:.0} %)", v / tdp * 100.0)
        } else {
            format!("{v:.0}")
        }),
        n(sm, &|v| format!("{v:.1}")),
        last.and_then(|x| x.temp_c)
            .map_or("–".into(), |t| format!("{t:.0}")),
    );
}

fn finding_md(md: &mut String, f: &Finding) {
    let when = match f.cleared_ms {
        Some(c) => format!("from {} to {} UTC", clock(f.since_ms), clock(c)),
        None => format!("since {} UTC", clock(f.since_ms)),
    };
    let _ = writeln!(
        md,
        "- **{} {} — GPU {}: {}** (`{}`, {when})",
        f.severity.marker(),
        f.severity.name().to_uppercase(),
        f.device,
        f.title,
        f.rule
    );
    for e in &f.evidence {
        let _ = writeln!(md, "  - {e}");
    }
    if let Some(c) = f.causes.first() {
        let _ = writeln!(md, "  - likely cause: {c}");
    }
    for a in f.actions.iter().take(3) {
        let _ = writeln!(md, "  - do: {a}");
    }
}

/// A Unicode sparkline of a metric (0–100) over `width` buckets; gaps are spaces.
pub fn sparkline(
    samples: &[DeviceSample],
    width: usize,
    metric: impl Fn(&DeviceSample) -> Option<f32>,
) -> String {
    const LEVELS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    if samples.is_empty() {
        return String::new();
    }
    let per = samples.len().div_ceil(width).max(1);
    samples
        .chunks(per)
        .map(|c| {
            let vals: Vec<f32> = c.iter().filter_map(&metric).collect();
            if vals.is_empty() {
                return ' ';
            }
            let v = vals.iter().sum::<f32>() / vals.len() as f32;
            LEVELS[((v.clamp(0.0, 100.0) / 100.0) * 7.0).round() as usize]
        })
        .collect()
}

/// The `e` key: writes JSON and Markdown next to each other; returns the status-line message.
pub fn export_from_tui(obs: &Observed, window_ms: u64) -> anyhow::Result<String> {
    let dir = std::env::var_os("GPUWATCH_SNAPSHOT_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("."));
    let snap = take(
        obs,
        &Options {
            window_ms,
            ..Options::default()
        },
    );
    let name = format!("gpuwatch-snapshot-{}", stamp(snap.taken_at_ms));
    let json = write_new(&dir.join(format!("{name}.json")), &to_json(&snap))?;
    let md_path = json.with_extension("md");
    let md = write_new(&md_path, &to_markdown(&snap))?;
    Ok(format!(
        "snapshot written: {} (+ {})",
        json.display(),
        md.file_name()
            .map_or(String::new(), |n| n.to_string_lossy().into_owned())
    ))
}

/// "20261130-151203" from ms since the epoch (UTC).
pub fn stamp(ms: u64) -> String {
    let days = (ms / 86_400_000) as i64;
    let (y, m, d) = civil_from_days(days);
    let s = (ms / 1000) % 86_400;
    format!(
        "{y:04}{m:02}{d:02}-{:02}{:02}{:02}",
        s / 3600,
        (s / 60) % 60,
        s % 60
    )
}

/// Days since 1970-01-01 to (year, month, day), proleptic Gregorian (Howard Hinnant's method).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn stamps_are_utc_dates() {
        assert_eq!(stamp(0), "19700101-000000");
        assert_eq!(stamp(1_796_051_694_058), "20261130-151454");
    }

    #[test]
    fn suffixes_go_before_the_extension() {
        assert_eq!(
            suffixed(Path::new("/t/snap.json"), 2),
            PathBuf::from("/t/snap-2.json")
        );
        assert_eq!(suffixed(Path::new("snap"), 1), PathBuf::from("snap-1"));
    }
}
