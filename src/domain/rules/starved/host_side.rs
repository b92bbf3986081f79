//! What the GPU's processes do on their host, as the starved rule reads it: busy preparing
//! input, waiting on it, or neither; one line of evidence per process.

use super::WAITING_CPU_MAX_PCT;
use crate::model::ProcessSample;
use crate::text::fixed;

/// What the GPU's processes do on the host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// The process or a worker is busy on a CPU: it prepares the input.
    Computing,
    /// The process sleeps or waits on I/O with little CPU: it waits for the input.
    Waiting,
    /// Known, neither busy nor clearly waiting.
    Idle,
    /// The PIDs do not resolve here.
    Unknown,
}

impl Kind {
    pub(super) fn word(self) -> &'static str {
        match self {
            Kind::Computing => "busy on the CPU",
            Kind::Waiting => "waiting (sleeping or in I/O)",
            Kind::Idle => "neither busy nor waiting",
            Kind::Unknown => "unknown",
        }
    }
}

pub(super) struct HostEvidence {
    pub(super) kind: Kind,
    /// The most `DataLoader` workers any of the processes has: the causes differ without them.
    pub(super) workers: usize,
    pub(super) lines: Vec<String>,
    pub(super) pids: Vec<u32>,
}

/// What the owning processes do on the host, with a line of evidence each.
pub(super) fn host_evidence(procs: &[ProcessSample], busy_pct: f32) -> HostEvidence {
    let pids: Vec<u32> = procs.iter().map(|p| p.pid).collect();
    if procs.iter().all(|p| p.host.is_none()) {
        return HostEvidence {
            kind: Kind::Unknown,
            workers: 0,
            lines: vec!["host side unknown: the process IDs do not resolve here (a container?), so host CPU was not checked".into()],
            pids,
        };
    }
    let mut lines = Vec::new();
    let (mut computing, mut waiting) = (false, false);
    for p in procs {
        let Some(h) = &p.host else { continue };
        let cpu = h.cpu_pct.unwrap_or(0.0);
        let io_wait = h.state == Some('D');
        let busy_workers = h
            .children
            .iter()
            .filter(|k| k.cpu_pct.unwrap_or(0.0) >= busy_pct || k.state == Some('D'))
            .count();
        computing |= cpu >= busy_pct || busy_workers > 0;
        waiting |= (cpu < WAITING_CPU_MAX_PCT
            && matches!(h.state, Some('S' | 'D'))
            && h.cpu_pct.is_some())
            || io_wait;
        lines.push(process_line(p.pid, h, busy_workers));
    }
    let kind = match (computing, waiting) {
        (true, _) => Kind::Computing,
        (false, true) => Kind::Waiting,
        (false, false) => Kind::Idle,
    };
    let workers = procs
        .iter()
        .filter_map(|p| p.host.as_ref().map(|h| h.children.len()))
        .max()
        .unwrap_or(0);
    HostEvidence {
        kind,
        workers,
        lines,
        pids,
    }
}

/// One process's host side in words: its CPU, its state, its reads, its workers.
fn process_line(pid: u32, h: &crate::model::HostProcess, busy_workers: usize) -> String {
    let cpu = h.cpu_pct.unwrap_or(0.0);
    let reads = h.io_read_bytes_s.unwrap_or(0.0);
    let workers = match h.children.len() {
        0 => "no worker processes (DataLoader num_workers=0?)".to_string(),
        1 if busy_workers == 1 => "1 worker process, busy".to_string(),
        1 => "1 worker process, not busy".to_string(),
        n => format!("{n} worker processes, {busy_workers} of them busy"),
    };
    let state = match h.state {
        Some('D') => ", in I/O wait (state D)",
        Some('S') if cpu < WAITING_CPU_MAX_PCT => ", sleeping (state S)",
        _ => "",
    };
    let io = if reads >= 1024.0 * 1024.0 {
        format!(
            ", reading {} MiB/s from storage",
            fixed(reads / (1024.0 * 1024.0), 0)
        )
    } else {
        String::new()
    };
    format!(
        "pid {pid} ({}) at {cpu_0} % CPU{state}{io}; {workers}",
        h.name,
        cpu_0 = fixed(cpu, 0),
    )
}
