//! The per-process families: each rank's job (what Prometheus joins across hosts to find a
//! job's culprit) and, opt-in, the top processes of each GPU.

use super::{gpu_state, label, ratio, DeviceHistory, Exposition, Kind, GPU_STATES};
use crate::monitor::Store;

/// Ranks most GPU processes hold at most per GPU in `gpuwatch_process_job_info`.
const JOB_INFO_PER_GPU: usize = 8;

/// Each GPU's state, and each rank's job and rank (one series per GPU process of a launcher
/// job, at most `JOB_INFO_PER_GPU` a GPU): what Prometheus joins across hosts to find a job's
/// culprit (docs/deploy/fleet-rules.yml).
pub(super) fn job_families(e: &mut Exposition, store: &Store, ids: &[String]) {
    let devices = &store.history().devices;
    e.family(
        "gpuwatch_gpu_state",
        "1 for what the GPU does now (busy, idle, spinning: looks busy but hangs, lost), 0 for the others",
        Kind::Gauge,
        None,
    );
    let states: Vec<String> = GPU_STATES.iter().map(|s| label("state", s)).collect();
    for (d, id) in devices.iter().zip(ids) {
        let now = gpu_state(store, d);
        for (name, state) in GPU_STATES.iter().zip(&states) {
            e.gauge(&[id, state], if *name == now { 1.0 } else { 0.0 });
        }
    }
    e.family(
        "gpuwatch_process_job_info",
        "a rank of a distributed job on this GPU, from its launcher's variables (value 1)",
        Kind::Gauge,
        None,
    );
    for (d, id) in devices.iter().zip(ids) {
        let ranks = d
            .processes
            .iter()
            .filter_map(|p| Some((p.pid, p.host.as_ref()?.job.as_ref()?)))
            .take(JOB_INFO_PER_GPU);
        for (pid, job) in ranks {
            let n = |v: Option<u32>| v.map_or(String::new(), |v| v.to_string());
            let labels = [
                label("pid", &pid.to_string()),
                label("job_key", &job.key),
                label("rank", &n(job.rank)),
                label("local_rank", &n(job.local_rank)),
                label("world_size", &n(job.world_size)),
            ]
            .join(",");
            e.gauge(&[id, &labels], 1.0);
        }
    }
}

/// Per-process series (opt-in) for the `top` processes using the most memory on each GPU:
/// labelled so Prometheus can join them with kube-state-metrics (`container_id` as
/// `kube_pod_container_info` spells it, `pod_uid` as `kube_pod_info`'s `uid`).
pub(super) fn process_families(
    e: &mut Exposition,
    devices: &[DeviceHistory],
    ids: &[String],
    top: usize,
) {
    type ProcRead = fn(&crate::model::ProcessSample) -> Option<f64>;
    let families: [(&str, &str, &str, ProcRead); 4] = [
        ("gpuwatch_process_gpu_memory", "GPU memory the process holds", "bytes", |p| {
            p.gpu_mem_bytes.map(|b| b as f64)
        }),
        (
            "gpuwatch_process_kernel_time",
            "share of time a kernel of the process ran (NVML per-process utilization, not SM activity)",
            "ratio",
            |p| ratio(p.sm_pct),
        ),
        ("gpuwatch_process_cpu", "host CPU of the process, in cores", "cores", |p| {
            ratio(p.host.as_ref()?.cpu_pct)
        }),
        ("gpuwatch_process_resident_memory", "host memory of the process", "bytes", |p| {
            p.host.as_ref()?.rss_bytes.map(|b| b as f64)
        }),
    ];
    // Each process's labels, once for its four series.
    let mut chosen: Vec<(usize, &crate::model::ProcessSample, String)> = Vec::new();
    for (g, d) in devices.iter().enumerate() {
        let mut procs: Vec<&crate::model::ProcessSample> = d.processes.iter().collect();
        procs.sort_by_key(|p| std::cmp::Reverse(p.gpu_mem_bytes.unwrap_or(0)));
        for p in procs.into_iter().take(top) {
            chosen.push((g, p, process_labels(p)));
        }
    }
    for (name, help, unit, read) in families {
        e.family(name, help, Kind::Gauge, Some(unit));
        for (g, p, labels) in &chosen {
            if let Some(v) = read(p) {
                e.gauge(&[&ids[*g], labels], v);
            }
        }
    }
}

fn process_labels(p: &crate::model::ProcessSample) -> String {
    let h = p.host.as_ref();
    // The kernel's 15-character process name, printable: no free text.
    let name: String = h.map_or(String::new(), |h| {
        crate::text::printable(&h.name).chars().take(15).collect()
    });
    let ctr = h.and_then(|h| h.container.as_deref());
    [
        label("pid", &p.pid.to_string()),
        label("process_name", &name),
        label(
            "container_id",
            &ctr.map_or(String::new(), |c| format!("{}://{}", c.runtime, c.id)),
        ),
        label(
            "pod_uid",
            &ctr.and_then(|c| c.pod_uid.clone()).unwrap_or_default(),
        ),
    ]
    .join(",")
}
