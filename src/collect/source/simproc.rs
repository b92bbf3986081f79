//! The processes a simulated GPU runs in its scenario: command lines, host side, jobs and
//! `DataLoader` workers, as the demo shows them.

use super::sim::{Noise, Scenario, SimDevice, JOB_PARENT_PID};
use crate::model::{ChildProcess, HostProcess, ProcessSample, GIB};

fn host(cmdline: &str, cpu: f32, rss_gib: u64, ppid: Option<u32>, workers: usize) -> HostProcess {
    HostProcess {
        name: "python3".into(),
        // Read as /proc is read (host.rs): redacted unless --no-redact, so the demo shows what
        // a real machine would, and its recordings hold no secret either.
        cmdline: if crate::redact::redacting() {
            crate::redact::redact(cmdline)
        } else {
            cmdline.into()
        },
        user: Some("alice".into()),
        cpu_pct: Some(cpu),
        rss_bytes: Some(rss_gib * GIB),
        threads: Some(24 + workers as u32),
        state: Some('R'),
        ppid,
        children: (0..workers)
            .map(|w| ChildProcess {
                pid: 0,
                name: format!("pt_data_worker_{w}"),
                cpu_pct: Some(60.0),
                state: Some('S'),
            })
            .collect(),
        started_ms: None,
        io_read_bytes_s: None,
        job: None,
        container: None,
        software: None,
    }
}

impl SimDevice {
    /// GPU `i` of `gpus` playing its part of `scenario`, with its processes.
    pub(super) fn new(scenario: Scenario, i: usize, gpus: usize, seed: u64, start_ms: u64) -> Self {
        let sc = scenario.for_gpu(i, gpus);
        let job = if scenario == Scenario::Mixed {
            i / 8
        } else {
            0
        };
        let mut processes = processes_for(sc, i, job);
        let mut stories = vec![sc; processes.len()];
        if scenario == Scenario::Straggler && gpus == 1 {
            // The job's second rank shares the one GPU, computing on its host.
            let mut straggler = processes_for(Scenario::Straggler, 0, 0);
            for p in &mut straggler {
                p.pid += 5;
                if let Some(job) = p.host.as_mut().and_then(|h| h.job.as_mut()) {
                    job.rank = Some(1);
                }
            }
            stories.extend(straggler.iter().map(|_| Scenario::Straggler));
            processes.extend(straggler);
        }
        // The demo's jobs were running before gpuwatch started: past their start-up.
        for h in processes.iter_mut().filter_map(|p| p.host.as_mut()) {
            h.started_ms = Some(start_ms.saturating_sub(3_600_000));
        }
        let base_cpu = processes
            .iter()
            .map(|p| p.host.as_ref().and_then(|h| h.cpu_pct).unwrap_or(0.0))
            .collect();
        SimDevice {
            scenario: sc,
            noise: Noise(seed ^ (i as u64).wrapping_mul(0xA24B_AED4_963E_E407)),
            processes,
            stories,
            base_cpu,
            health: super::simhealth::SimHealth::new(sc),
            mig: super::simmig::Part::Whole,
        }
    }
}

impl SimDevice {
    /// Each process's per-process utilization and host CPU for this tick.
    pub(super) fn jitter_processes(&mut self, util: f32) {
        // Processes that launch kernels take turns on the GPU: NVML gives each its share of
        // the time. A straggler rank computes on its host and launches none.
        let on_gpu = |story: &Scenario| *story != Scenario::Straggler;
        let computing = self.stories.iter().filter(|s| on_gpu(s)).count().max(1) as f32;
        for ((p, base), story) in self
            .processes
            .iter_mut()
            .zip(&self.base_cpu)
            .zip(&self.stories)
        {
            let share = if on_gpu(story) { 0.97 / computing } else { 0.0 };
            p.sm_pct = Some((util * share).round());
            p.mem_pct = Some((util * 0.2).round());
            if let Some(h) = p.host.as_mut() {
                h.cpu_pct = Some(self.noise.around(*base, base * 0.03, 0.0, 3200.0));
            }
        }
    }
}

/// The processes of GPU `gpu` playing `sc`; ranks of a job share `job` (the mixed demo gives
/// each eight GPUs a job of their own).
pub(super) fn processes_for(sc: Scenario, gpu: usize, job: usize) -> Vec<ProcessSample> {
    processes_from(sc, gpu, job, 10_000 + gpu as u32 * 10)
}

/// The first pid of a MIG instance's processes: above every whole GPU's (64 GPUs from 10000,
/// ten pids each), so that an instance's process is not GPU 1's (both were 10010).
pub(super) const MIG_FIRST_PID: u32 = 11_000;

/// `processes_for` with its first pid given: rank `r`'s pid is `first_pid + 5 r`.
pub(super) fn processes_from(
    sc: Scenario,
    gpu: usize,
    job: usize,
    first_pid: u32,
) -> Vec<ProcessSample> {
    let ranks = sc.workload().map_or(1, |w| w.ranks.max(1));
    (0..ranks)
        .filter_map(|rank| process_for(sc, gpu, job, first_pid + rank * 5, (rank, ranks)))
        .collect()
}

/// Rank `rank` of the `ranks` that run `sc`'s workload on GPU `gpu` (one, of no job, unless
/// the scenario says otherwise). A rank's `DataLoader` workers follow its pid.
fn process_for(
    sc: Scenario,
    gpu: usize,
    job: usize,
    pid: u32,
    (rank, ranks): (u32, u32),
) -> Option<ProcessSample> {
    let (cmd, cpu, mem_gib, ppid, workers) = workload(sc)?;
    let mut h = host(cmd, cpu, 8, ppid, workers);
    if sc.workload().is_some_and(|w| w.sleeping) {
        h.state = Some('S');
    }
    // torchrun puts the launcher's variables in each rank's environment: one rank a GPU, or
    // `ranks` that all took GPU `gpu` (nobody set their device).
    let numbered = match (ranks > 1, ppid == Some(JOB_PARENT_PID)) {
        (true, _) => Some((rank, Some(ranks))),
        (false, true) => Some((gpu as u32, None)),
        (false, false) => None,
    };
    if let Some((r, world_size)) = numbered {
        h.ppid = Some(JOB_PARENT_PID + job as u32);
        h.job = Some(crate::model::JobInfo {
            key: format!("torchelastic:demo-job-{job}"),
            rank: Some(r),
            local_rank: Some(r),
            world_size,
        });
    }
    for (i, c) in h.children.iter_mut().enumerate() {
        c.pid = pid + 1 + i as u32;
    }
    Some(ProcessSample {
        pid,
        gpu_mem_bytes: Some(mem_gib * GIB),
        sm_pct: None,
        mem_pct: None,
        host: Some(h),
    })
}

/// What a process of a GPU playing `sc` runs: its command line, CPU %, GPU memory in GiB,
/// parent pid and `DataLoader` workers; none on an idle GPU.
fn workload(sc: Scenario) -> Option<(&'static str, f32, u64, Option<u32>, usize)> {
    if let Some(w) = sc.workload() {
        let ppid = w.one_job.then_some(JOB_PARENT_PID);
        return Some((w.cmdline, w.cpu_pct, w.gpu_mem_gib, ppid, w.workers));
    }
    Some(match sc {
        Scenario::Idle => return None,
        // A rank of the hang's job, stuck on the host while the others wait for it.
        Scenario::Straggler => {
            let w = Scenario::HANG.workload()?;
            (
                w.cmdline,
                w.cpu_pct,
                w.gpu_mem_gib,
                Some(JOB_PARENT_PID),
                w.workers,
            )
        }
        Scenario::Membound => ("python3 embed_lookup.py", 95.0, 40, None, 4),
        _ => (
            "python3 train.py --model llama-8b --batch 32 --api-key=sk-demo-123",
            110.0,
            70,
            None,
            8,
        ),
    })
}
