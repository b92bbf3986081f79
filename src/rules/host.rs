//! Rules that need the host side of the GPU's processes.
//!
//! Starved: util low or bursty and power near the floor while the owning process is busy on
//! the host (or in I/O wait): the GPU waits for input. Fires wrongly on: a job that is
//! legitimately CPU-heavy between short GPU steps (e.g. RL environments), which is still worth
//! knowing. Idle-mem: a process holds GPU memory while no kernel runs for a long time.

use super::{ms, secs, Ctx, Rule, Severity, Verdict};
use crate::model::{ProcessSample, GIB};

pub const STARVED: Rule = Rule {
    id: "starved",
    title: "GPU starved: waiting for input",
    severity: Severity::Warning,
    window: |t| t.starved_window,
    check: check_starved,
};

pub const IDLE_MEM: Rule = Rule {
    id: "idle-mem",
    title: "Idle GPU with memory held",
    severity: Severity::Info,
    window: |t| t.idle_mem_window,
    check: check_idle_mem,
};

fn check_starved(c: &Ctx) -> Option<Verdict> {
    let w = ms(c.t.starved_window);
    if !c.covers(w) || c.dev.processes.is_empty() {
        return None;
    }
    let util = c.stats(w, |s| s.util_gpu_pct);
    let power = c.stats(w, |s| s.power_w);
    let power_ceiling =
        c.floor_w + c.tdp_w().unwrap_or(0.0) * c.t.starved_power_margin_pct_of_tdp / 100.0;
    // Some work arrives (NVML's averaging smooths a starved loader's bursts into a steady
    // 10-20 % on an H200); both halves must be low, so a phase change (idle, then a saturated
    // job) is not starvation even though its window has a low median.
    let active = util.n > 0 && util.max >= 10.0 && util.nonzero_share >= 0.5;
    let (u1, u2) = c.halves(w, |s| s.util_gpu_pct);
    let both_halves_low =
        u1.median < c.t.starved_util_max_median_pct && u2.median < c.t.starved_util_max_median_pct;
    if !active
        || !both_halves_low
        || util.median >= c.t.starved_util_max_median_pct
        || power.n == 0
        || power.median > power_ceiling
    {
        return None;
    }
    let sm = c.stats(w, |s| s.gpm.sm_active_pct);
    let signals = if sm.n > 0 {
        // Kernels that fill the SMs while they run (SM activity tracks util): work arrives in
        // bursts. SM far below util is the launch-bound pattern, left to the sync rule.
        if sm.median < 1.0 || sm.median < c.t.sync_sm_to_util_max * util.median {
            return None;
        }
        "low utilization, power against the idle floor, GPM SM activity, host CPU of the process"
    } else {
        // Without GPM: the GPU must draw above the floor while its kernels run; launch-bound
        // work does not (a utilization-variation test was tried and caught phase changes).
        let margin = c.tdp_w().unwrap_or(0.0) * c.t.sync_power_margin_pct_of_tdp / 100.0;
        if power.median <= c.floor_w + margin {
            return None;
        }
        "low utilization, power above the idle floor, host CPU of the process (no GPM)"
    };
    let host = host_evidence(&c.dev.processes, c.t.starved_host_cpu_min_pct)?;
    let mut evidence = vec![
        format!(
            "util median {:.0} % over {} (range {:.0}–{:.0} %, busy in {:.0} % of samples)",
            util.median,
            secs(w),
            util.min,
            util.max,
            util.nonzero_share * 100.0
        ),
        c.power_evidence(power.median),
    ];
    if sm.n > 0 {
        evidence.push(format!(
            "SM activity {:.1} % (GPM): kernels fill the GPU while they run, then it waits",
            sm.median
        ));
    }
    evidence.extend(host.lines);
    Some(Verdict {
        evidence,
        causes: vec![
            "The input pipeline cannot keep up: batches prepared on the training process (DataLoader num_workers=0) or too few workers".into(),
            "Slow reads from storage or network (the process waits on I/O)".into(),
            "Pageable host-to-device copies that serialise with compute (pin_memory=False)".into(),
        ],
        actions: vec![
            "`DataLoader(ds, num_workers=8, pin_memory=True, prefetch_factor=4, persistent_workers=True)`".into(),
            "Copy without blocking: `x.to(device, non_blocking=True)` from pinned memory".into(),
            "Move decode and augmentation to the GPU (NVIDIA DALI, torchvision.transforms.v2 on GPU tensors)".into(),
            "See what the host does: `py-spy top --pid PID`; for I/O, `iostat -x 1`".into(),
        ],
        pids: host.pids,
        signals: signals.into(),
        severity: None,
    })
}

struct HostEvidence {
    lines: Vec<String>,
    pids: Vec<u32>,
}

/// Evidence that the owning process is busy on the host; `None` if it is known to be idle.
fn host_evidence(procs: &[ProcessSample], busy_pct: f32) -> Option<HostEvidence> {
    let pids: Vec<u32> = procs.iter().map(|p| p.pid).collect();
    if procs.iter().all(|p| p.host.is_none()) {
        return Some(HostEvidence {
            lines: vec!["host side unknown: the process IDs do not resolve here (a container?), so host CPU was not checked".into()],
            pids,
        });
    }
    let mut lines = Vec::new();
    let mut busy = false;
    for p in procs {
        let Some(h) = &p.host else { continue };
        let cpu = h.cpu_pct.unwrap_or(0.0);
        let io_wait = h.state == Some('D');
        let busy_workers = h
            .children
            .iter()
            .filter(|k| k.cpu_pct.unwrap_or(0.0) >= busy_pct || k.state == Some('D'))
            .count();
        busy |= cpu >= busy_pct || io_wait || busy_workers > 0;
        let workers = match h.children.len() {
            0 => "no worker processes (DataLoader num_workers=0?)".to_string(),
            n => format!("{n} worker processes, {busy_workers} of them busy"),
        };
        let wait = if io_wait { ", in I/O wait" } else { "" };
        lines.push(format!(
            "pid {} ({}) at {cpu:.0} % CPU{wait}; {workers}",
            p.pid, h.name
        ));
    }
    busy.then_some(HostEvidence { lines, pids })
}

fn check_idle_mem(c: &Ctx) -> Option<Verdict> {
    let w = ms(c.t.idle_mem_window);
    if !c.covers(w) || c.dev.processes.is_empty() {
        return None;
    }
    let util = c.stats(w, |s| s.util_gpu_pct);
    let sm = c.stats(w, |s| s.gpm.sm_active_pct);
    if util.n == 0 || util.max > 1.0 || (sm.n > 0 && sm.max > 1.0) {
        return None;
    }
    let held: u64 = c.dev.processes.iter().filter_map(|p| p.gpu_mem_bytes).sum();
    let held = if held > 0 {
        held
    } else {
        c.dev.samples.latest()?.mem_used_bytes?
    };
    if (held as f32) < c.t.idle_mem_min_gib * GIB as f32 {
        return None;
    }
    let holders: Vec<String> = c
        .dev
        .processes
        .iter()
        .map(|p| {
            let name = p.host.as_ref().map_or("?", |h| h.name.as_str());
            let mem = p
                .gpu_mem_bytes
                .map_or("?".into(), |b| format!("{:.1} GiB", b as f64 / GIB as f64));
            format!("pid {} ({name}) holds {mem}", p.pid)
        })
        .collect();
    Some(Verdict {
        evidence: vec![
            format!("no kernel ran for {} (util max {:.0} %)", secs(w), util.max),
            format!("{:.1} GiB of GPU memory held: {}", held as f64 / GIB as f64, holders.join("; ")),
        ],
        causes: vec![
            "An idle notebook kernel or interactive session keeps its CUDA context and cached memory".into(),
            "A job finished its GPU work but the process did not exit (waiting on I/O, a barrier, or a hung thread)".into(),
        ],
        actions: vec![
            "Free it from inside: `del model; gc.collect(); torch.cuda.empty_cache()`, or end the process".into(),
            "Find the owner: Enter on the process here, or `ps -o user,etime,cmd -p PID`".into(),
        ],
        pids: c.dev.processes.iter().map(|p| p.pid).collect(),
        signals: "utilization, GPM SM activity, process GPU memory".into(),
        severity: None,
    })
}
