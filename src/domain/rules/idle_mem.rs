//! The idle-mem rule: a process holds GPU memory while no kernel runs for a long time, and none
//! of the GPU's processes is busy on its host (an idle notebook, a job that did not exit).

use super::thresholds::{dur, Section};
use super::{Ctx, Metric, OnMig, Rule, RuleId, Severity, Verdict, Watching};
use crate::model::demo::{Demo, Level, Workload, FLOOR, STOCK};
use crate::model::stack::StackClass;
use crate::model::GIB;
use crate::text::fixed;
use crate::text::span_words;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// When memory held by an idle GPU is named.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct IdleMemThresholds {
    #[serde(rename = "idle_mem_window", with = "dur")]
    pub window: Duration,
    #[serde(rename = "idle_mem_min_gib")]
    pub min_gib: f32,
}

impl Default for IdleMemThresholds {
    fn default() -> Self {
        IdleMemThresholds {
            window: Duration::from_secs(120),
            min_gib: 2.0,
        }
    }
}

impl Section for IdleMemThresholds {}

pub const IDLE_MEM: Rule = Rule {
    id: RuleId::IdleMem,
    glance: None,
    mig: OnMig::Instance,
    title: "Idle GPU with memory held",
    severity: Severity::Info,
    window: |t| t.idle_mem.window,
    check: check_idle_mem,
    cause: false,
    after_startup: false,
    busy_but_idle: false,
    watch: Watching::With {
        building: idle_mem_building,
        needs: |t| t.idle_mem.window,
    },
    demo: Demo {
        name: "idle-mem",
        about: "a notebook kernel holding 60 GiB between cells: no kernel runs",
        level: |_, _| Level {
            mem_gib: 60.0,
            ..FLOOR
        },
        facts: STOCK,
        workload: Some(Workload {
            cmdline: "python3 notebook_kernel.py --token=s3cr3t",
            cpu_pct: 0.3,
            gpu_mem_gib: 60,
            workers: 0,
            ranks: 1,
            one_job: false,
            sleeping: true,
            // Its main thread waits in the event loop in every sample.
            stack: (
                StackClass::IdleWaiting,
                10,
                &[
                    (
                        "EpollSelector.select",
                        "/usr/lib/python3.12/selectors.py",
                        468,
                        "fd_event_list = self._selector.poll(timeout, max_ev)",
                    ),
                    (
                        "BaseEventLoop._run_once",
                        "/usr/lib/python3.12/asyncio/base_events.py",
                        1898,
                        "event_list = self._selector.select(timeout)",
                    ),
                    (
                        "BaseEventLoop.run_forever",
                        "/usr/lib/python3.12/asyncio/base_events.py",
                        608,
                        "self._run_once()",
                    ),
                    (
                        "IPKernelApp.start",
                        "/usr/lib/python3/dist-packages/ipykernel/kernelapp.py",
                        736,
                        "self.io_loop.start()",
                    ),
                ],
            ),
        }),
        trouble: None,
    },
};
/// GPU memory held with no kernel run over the window, by processes none of which is busy on
/// its host: the bytes held.
fn idle_with_memory(c: &Ctx) -> Option<u64> {
    let w = c.window_ms;
    if c.dev.processes.is_empty() {
        return None;
    }
    // A process computing on its host (a rank stuck in Python, a job between GPU phases) is
    // not an idle notebook: a straggler another GPU's hang waits for looks exactly so.
    let busy = c
        .dev
        .processes
        .iter()
        .filter_map(|p| p.host.as_ref())
        .any(|h| {
            h.state == Some('R')
                || h.cpu_pct.unwrap_or(0.0) >= c.thresholds.starved.host_cpu_min_pct
        });
    if busy {
        return None;
    }
    // No kernel over the window: util (and GPM SM activity, where read) never above 1 %. A
    // scan that stops at the first busy sample, newest first: a GPU busy in bursts (input
    // starved, launch-bound) has one near the end. Not the windows the rules keep: this one is
    // asked only while no process is busy on its host, now and then, and a window asked now
    // and then is sorted again whole (it cost 7 times the scan's instructions).
    let mut util_seen = false;
    // A MIG instance has no utilization: its SM activity alone says whether a kernel ran.
    let mig = c.dev.info.mig.is_some();
    for s in c.dev.samples.last(w).rev() {
        if let Some(u) = s.util_gpu_pct {
            util_seen = true;
            if u > 1.0 {
                return None;
            }
        }
        if let Some(sm) = s.gpm.sm_active_pct {
            util_seen |= mig;
            if sm > 1.0 {
                return None;
            }
        }
    }
    if !util_seen {
        return None;
    }
    let held: u64 = c.dev.processes.iter().filter_map(|p| p.gpu_mem_bytes).sum();
    let held = if held > 0 {
        held
    } else {
        c.dev.samples.latest()?.mem_used_bytes?
    };
    ((held as f32) >= c.thresholds.idle_mem.min_gib * GIB as f32).then_some(held)
}

/// Idle with memory held over what has been seen so far, its window not run yet.
fn idle_mem_building(c: &Ctx) -> bool {
    idle_with_memory(c).is_some()
}

fn check_idle_mem(c: &Ctx) -> Option<Verdict> {
    let w = c.window_ms;
    let held = idle_with_memory(c)?;
    if !c.wording {
        // Still holds; its words are not due (an idle notebook holds for hours).
        return Some(Verdict::held(None));
    }
    let util = c.stats(w, Metric::Util);
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
            if c.dev.info.mig.is_some() {
                let sm = c.stats(w, Metric::SmActive);
                format!("no kernel ran for {} (SM activity max {} %, GPM: a MIG instance has no util)", span_words(w), fixed(sm.max, 1))
            } else {
                format!("no kernel ran for {} (util max {} %)", span_words(w), fixed(util.max, 0))
            },
            format!("{:.1} GiB of GPU memory held: {}", held as f64 / GIB as f64, holders.join("; ")),
        ],
        causes: vec![
            "An idle notebook kernel or interactive session keeps its CUDA context and cached memory".into(),
            "A job finished its GPU work but the process did not exit (waiting on I/O, a barrier, or a hung thread)".into(),
        ],
        actions: vec![
            "Free it from inside: `del model; gc.collect(); torch.cuda.empty_cache()`, or end the process".into(),
            "Find the owner: `ps -o user,etime,cmd -p PID` (in the monitor: Enter on its process row)".into(),
        ],
        pids: c.dev.processes.iter().map(|p| p.pid).collect(),
        signals: "utilization, GPM SM activity, process GPU memory".into(),
        ..Verdict::default()
    })
}
