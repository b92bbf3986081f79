//! The process table's rows: every GPU's processes, filtered and sorted.

use super::{AppState, SortKey};
use crate::model::{HostProcess, ProcessSample};
use crate::store::Store;

/// One row of the process table.
#[derive(Debug, Clone)]
pub struct ProcessRow<'a> {
    pub gpu: u32,
    pub process: &'a ProcessSample,
}

impl ProcessRow<'_> {
    #[must_use]
    pub fn host(&self) -> Option<&HostProcess> {
        self.process.host.as_ref()
    }
}

#[must_use]
pub fn find_process(store: &Store, device: u32, pid: u32) -> Option<&ProcessSample> {
    store
        .history()
        .devices
        .iter()
        .find(|d| d.info.index == device)?
        .processes
        .iter()
        .find(|p| p.pid == pid)
}

/// The process table's rows: every GPU's processes, filtered and sorted.
#[must_use]
pub fn process_rows<'a>(state: &AppState, store: &'a Store) -> Vec<ProcessRow<'a>> {
    let mut rows = Vec::new();
    process_rows_into(state, store, &mut rows);
    rows
}

/// The same rows into `rows` (emptied first), whose buffer the screen keeps from frame to frame.
pub fn process_rows_into<'a>(state: &AppState, store: &'a Store, rows: &mut Vec<ProcessRow<'a>>) {
    rows.clear();
    let all = store.history().devices.iter().flat_map(|d| {
        d.processes.iter().map(move |p| ProcessRow {
            gpu: d.info.index,
            process: p,
        })
    });
    if state.filter.is_empty() {
        rows.extend(all);
    } else {
        let needle = state.filter.to_lowercase();
        rows.extend(all.filter(|r| matches_filter(r, &needle)));
    }
    // Rows that compare equal keep the order they were listed in, as a stable sort keeps them;
    // sorted in place, as the stable sort of more than 20 rows would have allocated for.
    let listed = |r: &ProcessRow| std::ptr::from_ref(r.process) as usize;
    let device = |r: &ProcessRow| {
        let devices = &store.history().devices;
        devices.iter().position(|d| d.info.index == r.gpu)
    };
    rows.sort_unstable_by(|a, b| {
        let o = compare(a, b, state.sort);
        let o = if state.sort_descending {
            o.reverse()
        } else {
            o
        };
        o.then_with(|| device(a).cmp(&device(b)))
            .then_with(|| listed(a).cmp(&listed(b)))
    });
}

fn matches_filter(r: &ProcessRow, needle: &str) -> bool {
    let h = r.host();
    r.process.pid.to_string().contains(needle)
        || h.is_some_and(|h| {
            h.cmdline.to_lowercase().contains(needle)
                || h.name.to_lowercase().contains(needle)
                || h.user
                    .as_deref()
                    .is_some_and(|u| u.to_lowercase().contains(needle))
        })
}

fn compare(a: &ProcessRow, b: &ProcessRow, key: SortKey) -> std::cmp::Ordering {
    let f = |v: Option<f32>| v.unwrap_or(-1.0);
    let (ha, hb) = (a.host(), b.host());
    let by = match key {
        SortKey::GpuMem => a.process.gpu_mem_bytes.cmp(&b.process.gpu_mem_bytes),
        SortKey::Sm => f(a.process.sm_pct).total_cmp(&f(b.process.sm_pct)),
        SortKey::MemPct => f(a.process.mem_pct).total_cmp(&f(b.process.mem_pct)),
        SortKey::Threads => ha.and_then(|h| h.threads).cmp(&hb.and_then(|h| h.threads)),
        SortKey::Workers => ha
            .map(|h| h.children.len())
            .cmp(&hb.map(|h| h.children.len())),
        SortKey::State => ha.and_then(|h| h.state).cmp(&hb.and_then(|h| h.state)),
        SortKey::Cpu => f(ha.and_then(|h| h.cpu_pct)).total_cmp(&f(hb.and_then(|h| h.cpu_pct))),
        SortKey::Rss => ha
            .and_then(|h| h.rss_bytes)
            .cmp(&hb.and_then(|h| h.rss_bytes)),
        SortKey::Pid => a.process.pid.cmp(&b.process.pid),
        SortKey::User => ha
            .and_then(|h| h.user.as_deref())
            .cmp(&hb.and_then(|h| h.user.as_deref())),
        SortKey::Command => ha.map(short_command).cmp(&hb.map(short_command)),
        SortKey::Gpu => crate::model::gpu_order(a.gpu).cmp(&crate::model::gpu_order(b.gpu)),
    };
    by.then(a.process.pid.cmp(&b.process.pid))
}

/// A command line shortened for a table: interpreters and scripts without their directories.
#[must_use]
pub fn short_command(h: &HostProcess) -> String {
    let mut out = String::new();
    write_short_command(h, &mut out);
    out
}

/// `short_command` written onto `out`: the table draws it each frame without a new string.
pub fn write_short_command(h: &HostProcess, out: &mut String) {
    if h.cmdline.is_empty() {
        out.push('[');
        out.push_str(&h.name);
        out.push(']');
        return;
    }
    for (i, arg) in h.cmdline.split(' ').enumerate() {
        let script = std::path::Path::new(arg)
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("py") || e.eq_ignore_ascii_case("sh"));
        if i > 0 {
            out.push(' ');
        }
        if (i == 0 || script) && arg.contains('/') {
            out.push_str(arg.rsplit('/').next().unwrap_or(arg));
        } else {
            out.push_str(arg);
        }
    }
}

/// Why Enter on GPU `dev` opens no process, as the status line says it: none runs there, the
/// filter hides them ("no process on GPU 3" was said of one filtered out), its processes run
/// in its MIG instances, or the GPU is lost.
#[must_use]
pub fn why_none(state: &AppState, store: &Store, dev: &crate::history::DeviceHistory) -> String {
    let gpu = dev.info.index;
    if dev.status != crate::model::DeviceStatus::Ok {
        return format!("GPU {gpu} is lost: NVML no longer lists its processes");
    }
    let devices = &store.history().devices;
    if !dev.processes.is_empty() && !state.filter.is_empty() {
        return format!(
            "no process on GPU {gpu} matches the filter \"{}\" (/ then Esc clears it)",
            crate::text::one_line(&state.filter, 40)
        );
    }
    let split = devices
        .iter()
        .any(|d| d.info.mig.as_ref().is_some_and(|m| m.parent == gpu));
    if split {
        return format!(
            "GPU {gpu} is split into MIG instances: select one ({gpu}:…) to open its processes"
        );
    }
    format!("no process on GPU {gpu}")
}

/// The row of `rows` the cursor is on: its process's, wherever a sort or new readings moved it;
/// the row it was put on when that process is gone; before any was chosen, the selected GPU's
/// first process, so that a table too short for every row (one row at 80×24) shows the
/// selected GPU's, the one Enter opens.
#[must_use]
pub fn process_cursor(state: &AppState, store: &Store, rows: &[ProcessRow]) -> usize {
    let last = rows.len().saturating_sub(1);
    if let Some((gpu, pid)) = state.selected_pid {
        let at = rows
            .iter()
            .position(|r| r.gpu == gpu && r.process.pid == pid);
        return at.unwrap_or(state.selected_process.min(last));
    }
    let gpu = store
        .history()
        .devices
        .get(state.selected_gpu)
        .map(|d| d.info.index);
    rows.iter().position(|r| Some(r.gpu) == gpu).unwrap_or(0)
}
