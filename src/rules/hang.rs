//! Hang: util pinned near 100 % while power sits at the idle floor and (with GPM) the SMs do
//! almost nothing. One spinning kernel reads 100 % util; so does a collective (NCCL) waiting on
//! a peer that never arrives, which keeps a few more warps busy, hence a SM ceiling well above
//! 1 %. Fires wrongly on: a long, genuinely tiny kernel that is meant to spin (rare), and on
//! GPUs without GPM whose power floor was not learned. Across GPUs of one job, an idle GPU of
//! the same job is named as the likely straggler.

use super::{ms, secs, Ctx, Rule, Severity, Verdict};
use crate::history::DeviceHistory;

pub const HANG: Rule = Rule {
    id: "hang",
    title: "Busy but idle: GPU looks hung",
    severity: Severity::Critical,
    window: |t| t.hang_window,
    check,
};

fn check(c: &Ctx) -> Option<Verdict> {
    let w = ms(c.t.hang_window);
    if !c.covers(w) {
        return None;
    }
    let util = c.stats(w, |s| s.util_gpu_pct);
    let power = c.stats(w, |s| s.power_w);
    // Percentiles, not extremes: one odd sample must not open or close a hang.
    if util.n == 0
        || util.p10 < c.t.hang_util_min_pct
        || power.n == 0
        || power.p90 > c.near_floor_w()
    {
        return None;
    }
    let mut v = Verdict {
        evidence: vec![
            format!(
                "util ≥ {:.0} % for {} (median {:.0} %)",
                util.p10,
                secs(w),
                util.median
            ),
            c.power_evidence(power.median),
        ],
        ..Verdict::default()
    };
    let sm = c.stats(w, |s| s.gpm.sm_active_pct);
    if sm.n > 0 {
        let tensor = c.stats(w, |s| s.gpm.tensor_active_pct);
        let dram = c.stats(w, |s| s.gpm.dram_bw_pct);
        if sm.median > c.t.hang_sm_max_pct || tensor.median > 10.0 || dram.median > 10.0 {
            return None;
        }
        v.evidence.push(format!(
            "SM activity {:.1} %, tensor {:.1} %, DRAM {:.1} % (GPM)",
            sm.median, tensor.median, dram.median
        ));
        v.signals = "utilization, power against the idle floor, GPM SM/tensor/DRAM activity".into();
    } else {
        // Without GPM, a power trace flat at the floor is what tells a spin from real work.
        if power.sd > 3.0 {
            return None;
        }
        v.evidence.push(format!(
            "power flat (sd {:.1} W); no GPM on this GPU, so SM activity is unknown",
            power.sd
        ));
        v.signals = "utilization and power against the idle floor (no GPM)".into();
    }
    v.pids = c.dev.processes.iter().map(|p| p.pid).collect();
    let straggler = straggler(c, w);
    if let Some((text, pid)) = &straggler {
        v.evidence.push(text.clone());
        v.pids.push(*pid);
        v.causes.push("A rank of this job never reached the collective: the GPU named above is the likely straggler".into());
    }
    v.causes.extend([
        "A collective (NCCL all-reduce, all-gather, barrier) waiting on a peer: a crashed, stuck or slower rank, or ranks calling collectives in a different order".into(),
        "A deadlock in the job (a rank stuck in data loading, checkpointing or an exception handler)".into(),
        "A kernel spinning on a flag that is never set".into(),
    ]);
    v.actions = vec![
        "See where every rank is stuck: `py-spy dump --pid PID` (or `gdb -p PID -batch -ex 'thread apply all bt'`)".into(),
        "Make hangs fail loudly: `TORCH_NCCL_ASYNC_ERROR_HANDLING=1` and `init_process_group(..., timeout=timedelta(minutes=5))`".into(),
        "Record the collectives: `NCCL_DEBUG=INFO TORCH_NCCL_TRACE_BUFFER_SIZE=2000 TORCH_NCCL_DUMP_ON_TIMEOUT=1`".into(),
        "Look at the process tree (Enter on the process here, or `ps -o pid,stat,pcpu,cmd --ppid PPID`)".into(),
    ];
    Some(v)
}

/// The parent PIDs of a device's processes: ranks started by one launcher share one.
fn job_keys(d: &DeviceHistory) -> Vec<u32> {
    d.processes
        .iter()
        .filter_map(|p| p.host.as_ref()?.ppid)
        .filter(|pp| *pp > 1)
        .collect()
}

/// Another GPU of the same job that is idle while this one spins, and its process.
fn straggler(c: &Ctx, w: u64) -> Option<(String, u32)> {
    let keys = job_keys(c.dev);
    if keys.is_empty() {
        return None;
    }
    c.all.devices.iter().filter(|d| d.info.index != c.dev.info.index).find_map(|d| {
        if !job_keys(d).iter().any(|k| keys.contains(k)) {
            return None;
        }
        let util = super::Stats::of(d.samples.last(w).filter_map(|s| s.util_gpu_pct));
        if util.n == 0 || util.median >= 5.0 {
            return None;
        }
        let pid = d.processes.first().map(|p| p.pid).unwrap_or(0);
        let cpu = d.processes.first().and_then(|p| p.host.as_ref()?.cpu_pct);
        let host = cpu.map(|c| format!(", its process at {c:.0} % CPU")).unwrap_or_default();
        let text = format!("GPU {} (pid {pid}) of the same job is idle (util {:.0} %){host}: the likely straggler the others wait for", d.info.index, util.median);
        Some((text, pid))
    })
}
