//! A GPU shared: two or more processes launch kernels on it over the same window. Without MPS
//! the contexts of different processes take turns on a GPU (time-slicing), so each job runs at
//! its share of the speed it would have alone, while utilization reads 100 % and power is
//! high: nothing else looks wrong. The usual cause is a distributed job whose ranks all took
//! `cuda:0` (nobody set the device from `LOCAL_RANK`), or a second job started on a GPU in use
//! (`CUDA_VISIBLE_DEVICES` unset).
//! Reads NVML's per-process utilization, which a MIG instance does not have: not judged there.
//! Fires wrongly on: processes that share a GPU on purpose (MPS clients, replicas of a server
//! sized to share one); the finding says so.

use super::thresholds::{dur, Section};
use super::{Ctx, Metric, OnMig, Rule, RuleId, Severity, Verdict, Watching};
use crate::model::demo::{Demo, Level, Workload, BUSY, STOCK};
use crate::model::stack::StackClass;
use crate::model::{DeviceStatus, ProcessSample};
use crate::text::fixed;
use crate::text::span_words;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// When processes taking turns on one GPU are named.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SharedThresholds {
    /// Processes sharing a GPU are judged over this window…
    #[serde(rename = "shared_window", with = "dur")]
    pub window: Duration,
    /// …each with NVML's per-process SM utilization at least this much (in most of its
    /// readings, in both halves of the window)…
    #[serde(rename = "shared_process_min_sm_pct")]
    pub process_min_sm_pct: f32,
    /// …while the GPU's utilization (median) is at least this: below it they hardly wait for
    /// each other.
    #[serde(rename = "shared_util_min_pct")]
    pub util_min_pct: f32,
}

impl Default for SharedThresholds {
    fn default() -> Self {
        SharedThresholds {
            window: Duration::from_secs(30),
            process_min_sm_pct: 10.0,
            util_min_pct: 80.0,
        }
    }
}

impl Section for SharedThresholds {}

pub const SHARED: Rule = Rule {
    id: RuleId::Shared,
    // Per-process utilization does not exist on MIG: who computes on an instance is unknown.
    glance: None,
    mig: OnMig::Neither,
    title: "GPU shared: processes take turns on it",
    severity: Severity::Warning,
    window: |t| t.shared.window,
    check,
    cause: false,
    // Its own check wants each process on the GPU through the window: a third process
    // arriving must not restart the judging of two that already share it.
    after_startup: false,
    busy_but_idle: false,
    watch: Watching::No,
    demo: Demo {
        name: "shared",
        about: "two ranks of one job on the same GPU, taking turns: util 100 %, each at half speed",
        level: |_, _| Level {
            util: 100.0,
            ..BUSY
        },
        facts: STOCK,
        workload: Some(Workload {
            cmdline: "python3 -u train.py --batch 32",
            cpu_pct: 100.0,
            gpu_mem_gib: 35,
            workers: 4,
            ranks: 2,
            one_job: false,
            sleeping: false,
            stack: (StackClass::GpuWork, 8, &DEMO_STACK),
        }),
        trouble: None,
    },
};

/// Each rank in its backward pass, as a training step's stack reads.
const DEMO_STACK: [crate::model::demo::Frame; 2] = [
    (
        "Tensor.backward",
        "torch/_tensor.py",
        631,
        "torch.autograd.backward(",
    ),
    ("train", "/home/alice/train.py", 92, "loss.backward()"),
];

fn check(c: &Ctx) -> Option<Verdict> {
    // Most GPUs run one process: nothing to compare, nothing read.
    if c.dev.processes.len() < 2 {
        return None;
    }
    let t = &c.thresholds.shared;
    // Hysteresis: an open finding holds until the sharing clearly ends.
    let relax = if c.open { 0.7 } else { 1.0 };
    let util = c.stats(c.window_ms, Metric::Util);
    if util.n == 0 || util.median < t.util_min_pct * relax {
        return None;
    }
    // Ranks spinning in a hung collective also take turns, at nothing: the hang is the
    // story there. Processes that compete for real work draw power.
    let power = c.stats(c.window_ms, Metric::Power);
    if power.n > 0 && power.median <= c.near_floor_w() {
        return None;
    }
    let min_sm = t.process_min_sm_pct * relax;
    let computing = || {
        c.dev
            .processes
            .iter()
            .filter_map(move |p| Some((p, share(c, p, min_sm)?)))
    };
    // Two of them at least.
    computing().nth(1)?;
    if !c.wording {
        return Some(Verdict::held(None));
    }
    let ranks = same_job(&computing().map(|(p, _)| p));
    let mut evidence: Vec<String> = computing()
        .map(|(p, sm)| describe(p, sm, c.window_ms))
        .collect();
    evidence.push(format!(
        "GPU util {} % (median over {}): they take turns on it, so each runs at about its share of the speed it would have alone",
        fixed(util.median, 0),
        span_words(c.window_ms)
    ));
    evidence.extend(free_gpus(c));
    Some(Verdict {
        evidence,
        causes: causes(ranks),
        actions: vec![
            "Ranks of one job: `torch.cuda.set_device(int(os.environ[\"LOCAL_RANK\"]))` before `init_process_group`, and `device_ids=[local_rank]` for DDP (tensors on `cuda:LOCAL_RANK`, not `cuda`)".into(),
            "Separate jobs: give each its GPUs (`CUDA_VISIBLE_DEVICES=1 python …`, Slurm `--gpus`, Kubernetes `nvidia.com/gpu`)".into(),
            "An admin can make a second process fail at start instead: `nvidia-smi -i N -c EXCLUSIVE_PROCESS`".into(),
            "Sharing on purpose: CUDA MPS (`nvidia-cuda-mps-control -d`) runs the processes' kernels side by side instead of in turns".into(),
        ],
        pids: computing().map(|(p, _)| p.pid).collect(),
        signals: "per-process SM utilization (NVML), utilization".into(),
        summary: format!("{} processes computing on it", computing().count()),
        ..Verdict::default()
    })
}

/// Process `p`'s mean SM share over the window (%), if it computed through all of it: its
/// trail reaches back to the window's start, and at least half of its readings in each half
/// of the window are at `min_sm` or more. None where NVML gave no per-process utilization.
fn share(c: &Ctx, p: &ProcessSample, min_sm: f32) -> Option<f32> {
    let trail = c.all.trail(c.dev.info.index, p.pid)?;
    let from = c.now_ms.saturating_sub(c.window_ms);
    // Its points are a second apart: the first may lie just inside the window.
    if trail.points.iter().next()?.t_ms > from + 2_000 {
        return None;
    }
    let mid = from + c.window_ms / 2;
    let mut halves = [Tally::default(); 2];
    // Newest first, and no further back than the window: a trail keeps 15 minutes.
    for q in trail.points.iter().rev().take_while(|q| q.t_ms >= from) {
        if let Some(sm) = q.sm_pct {
            halves[usize::from(q.t_ms >= mid)].add(sm, min_sm);
        }
    }
    let [older, newer] = halves;
    (older.mostly_high() && newer.mostly_high())
        .then(|| (older.sum + newer.sum) / (older.n + newer.n) as f32)
}

/// A half window of one process's SM readings.
#[derive(Clone, Copy, Default)]
struct Tally {
    sum: f32,
    n: usize,
    /// Readings at the threshold or above.
    high: usize,
}

impl Tally {
    fn add(&mut self, sm: f32, min_sm: f32) {
        self.sum += sm;
        self.n += 1;
        self.high += usize::from(sm >= min_sm);
    }

    /// Two readings or more, at least half of them high.
    fn mostly_high(self) -> bool {
        self.n >= 2 && self.high * 2 >= self.n
    }
}

/// "pid 10000 (python3, rank 1 of torchelastic:demo-job-0): SM 48 % of the GPU's time".
fn describe(p: &ProcessSample, sm: f32, window_ms: u64) -> String {
    let name = p.host.as_ref().map_or("?", |h| h.name.as_str());
    let rank = p
        .host
        .as_ref()
        .and_then(|h| h.job.as_ref())
        .and_then(|j| Some(format!(", rank {} of {}", j.rank?, j.key)))
        .unwrap_or_default();
    format!(
        "pid {} ({name}{rank}): SM {sm_0} % of the GPU's time (mean over {})",
        p.pid,
        span_words(window_ms),
        sm_0 = fixed(sm, 0),
    )
}

/// The job every process named is a rank of, if they are all ranks of one: the same job key
/// and each its own rank (one Slurm job's steps, or torchrun jobs left on the default
/// rendezvous id, share a key without being one job's ranks).
fn same_job<'a>(procs: &(impl Iterator<Item = &'a ProcessSample> + Clone)) -> Option<&'a str> {
    let job = |p: &'a ProcessSample| p.host.as_ref()?.job.as_ref();
    let first = job(procs.clone().next()?)?;
    let ranks = || {
        procs
            .clone()
            .map(|p| job(p).filter(|j| j.key == first.key).and_then(|j| j.rank))
    };
    // Each a rank of that job, and each its own rank.
    let distinct = ranks().all(|r| r.is_some())
        && ranks()
            .enumerate()
            .all(|(i, r)| ranks().skip(i + 1).all(|o| o != r));
    distinct.then_some(first.key.as_str())
}

/// The box's other GPUs with no process on them, as one line: work could have gone there.
fn free_gpus(c: &Ctx) -> Option<String> {
    let free: Vec<String> = c
        .all
        .devices
        .iter()
        .filter(|d| d.info.index != c.dev.info.index && d.info.mig.is_none())
        .filter(|d| !d.info.is_mig_parent() && d.processes.is_empty())
        // A GPU that stopped answering lists no process, and takes none.
        .filter(|d| d.status == DeviceStatus::Ok)
        .map(|d| d.info.index.to_string())
        .collect();
    match free.len() {
        0 => None,
        1 => Some(format!("GPU {} has no process", free[0])),
        _ => Some(format!("GPUs {} have no process", free.join(", "))),
    }
}

fn causes(ranks: Option<&str>) -> Vec<String> {
    let mut causes = vec![
        "A second job was started on a GPU already in use (`CUDA_VISIBLE_DEVICES` not set, or set alike for both)".to_string(),
        "Ranks of one job that all took the same GPU: each rank must set its device from `LOCAL_RANK`".into(),
        "Sharing on purpose (MPS clients, server replicas sized to share one GPU): expected; each gets a share".into(),
    ];
    if let Some(job) = ranks {
        causes.swap(0, 1);
        causes[0] = format!(
            "Ranks of one job ({job}) on the same GPU: each rank must set its device from `LOCAL_RANK`"
        );
    }
    causes
}
