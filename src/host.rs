//! The host side of GPU processes, read from /proc: CPU, memory, threads, state, user and the
//! worker children a DataLoader forks.
//!
//! CPU % needs two readings, so `HostReader` remembers each PID's CPU time from the last call.

use std::collections::HashMap;
use std::fs;

use crate::model::{ChildProcess, HostProcess, ProcessSample};

/// This machine's host name.
pub fn hostname() -> String {
    fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".into())
}

/// The fields of /proc/PID/stat that gpuwatch reads.
#[derive(Debug, Clone, Copy)]
struct Stat {
    state: char,
    ppid: u32,
    cpu_ticks: u64,
    threads: u32,
    rss_pages: u64,
}

fn parse_stat(text: &str) -> Option<(String, Stat)> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let name = text[open + 1..close].to_string();
    let f: Vec<&str> = text[close + 2..].split_whitespace().collect();
    let num = |i: usize| f.get(i).and_then(|v| v.parse::<u64>().ok());
    Some((
        name,
        Stat {
            state: f.first()?.chars().next()?,
            ppid: num(1)? as u32,
            cpu_ticks: num(11)? + num(12)?,
            threads: num(17)? as u32,
            rss_pages: num(21)?,
        },
    ))
}

fn read_stat(pid: u32) -> Option<(String, Stat)> {
    parse_stat(&fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

fn read_cmdline(pid: u32) -> String {
    fs::read(format!("/proc/{pid}/cmdline"))
        .map(|b| {
            let parts: Vec<String> = b
                .split(|c| *c == 0)
                .filter(|p| !p.is_empty())
                .map(|p| String::from_utf8_lossy(p).into_owned())
                .collect();
            parts.join(" ")
        })
        .unwrap_or_default()
}

fn read_uid(pid: u32) -> Option<u32> {
    let status = fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("Uid:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Children of `pid` from /proc/PID/task/*/children (every thread can fork).
fn read_children(pid: u32) -> Vec<u32> {
    let Ok(tasks) = fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for task in tasks.flatten() {
        if let Ok(text) = fs::read_to_string(task.path().join("children")) {
            out.extend(
                text.split_whitespace()
                    .filter_map(|v| v.parse::<u32>().ok()),
            );
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// Reads the host side of GPU processes and remembers CPU times between calls.
pub struct HostReader {
    /// pid -> (cpu ticks, time in ms) at the previous reading.
    prev: HashMap<u32, (u64, u64)>,
    users: HashMap<u32, String>,
    ticks_per_s: f32,
    page_bytes: u64,
    /// Every PID the last `fill` looked up, resolved or not.
    looked_up: Vec<u32>,
}

impl Default for HostReader {
    fn default() -> Self {
        Self::new()
    }
}

impl HostReader {
    pub fn new() -> Self {
        // SAFETY: sysconf only reads configuration values and has no preconditions.
        let (tps, page) = unsafe {
            (
                libc::sysconf(libc::_SC_CLK_TCK),
                libc::sysconf(libc::_SC_PAGESIZE),
            )
        };
        HostReader {
            prev: HashMap::new(),
            users: load_users(),
            ticks_per_s: if tps > 0 { tps as f32 } else { 100.0 },
            page_bytes: if page > 0 { page as u64 } else { 4096 },
            looked_up: Vec::new(),
        }
    }

    /// Fills `host` of each process whose PID exists here; leaves `None` where it does not
    /// (inside a container NVML's host PIDs do not resolve).
    ///
    /// Give it every GPU's processes in one call: CPU times of PIDs not seen in this call are
    /// forgotten, so filling GPU by GPU would lose the other GPUs' rates.
    pub fn fill<'a>(
        &mut self,
        processes: impl IntoIterator<Item = &'a mut ProcessSample>,
        now_ms: u64,
    ) {
        let mut seen = Vec::new();
        self.looked_up.clear();
        for p in processes {
            self.looked_up.push(p.pid);
            p.host = self.read(p.pid, now_ms, &mut seen);
        }
        self.prev.retain(|pid, _| seen.contains(pid));
    }

    /// True when the last `fill` looked `pid` up: a PID that did not resolve then (a
    /// container) is not retried on every tick, only at the next regular refresh.
    pub fn looked_up(&self, pid: u32) -> bool {
        self.looked_up.contains(&pid)
    }

    fn cpu_pct(&mut self, pid: u32, ticks: u64, now_ms: u64, seen: &mut Vec<u32>) -> Option<f32> {
        seen.push(pid);
        let prev = self.prev.insert(pid, (ticks, now_ms));
        let (pt, pms) = prev?;
        let dt = now_ms.checked_sub(pms).filter(|d| *d > 0)? as f32 / 1000.0;
        Some((ticks.saturating_sub(pt) as f32 / self.ticks_per_s) / dt * 100.0)
    }

    fn read(&mut self, pid: u32, now_ms: u64, seen: &mut Vec<u32>) -> Option<HostProcess> {
        let (name, stat) = read_stat(pid)?;
        let cpu_pct = self.cpu_pct(pid, stat.cpu_ticks, now_ms, seen);
        let children = read_children(pid)
            .into_iter()
            .filter_map(|c| {
                let (cname, cstat) = read_stat(c)?;
                Some(ChildProcess {
                    pid: c,
                    name: cname,
                    cpu_pct: self.cpu_pct(c, cstat.cpu_ticks, now_ms, seen),
                    state: Some(cstat.state),
                })
            })
            .collect();
        Some(HostProcess {
            name,
            cmdline: read_cmdline(pid),
            user: read_uid(pid).map(|uid| {
                self.users
                    .get(&uid)
                    .cloned()
                    .unwrap_or_else(|| uid.to_string())
            }),
            cpu_pct,
            rss_bytes: Some(stat.rss_pages * self.page_bytes),
            threads: Some(stat.threads),
            state: Some(stat.state),
            ppid: Some(stat.ppid),
            children,
        })
    }
}

fn load_users() -> HashMap<u32, String> {
    let text = fs::read_to_string("/etc/passwd").unwrap_or_default();
    text.lines()
        .filter_map(|l| {
            let mut f = l.split(':');
            let name = f.next()?;
            let uid = f.nth(1)?.parse().ok()?;
            Some((uid, name.to_string()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_with_spaces_and_parens_in_name_parses() {
        let text = "42 (my (odd) proc) S 1 42 42 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 7 0 100 1000000 300 18446744073709551615";
        let (name, st) = parse_stat(text).expect("parses");
        assert_eq!(name, "my (odd) proc");
        assert_eq!(st.state, 'S');
        assert_eq!(st.ppid, 1);
        assert_eq!(st.cpu_ticks, 300);
        assert_eq!(st.threads, 7);
        assert_eq!(st.rss_pages, 300);
    }

    #[test]
    fn own_process_is_read_and_cpu_needs_two_readings() {
        let me = std::process::id();
        let mut reader = HostReader::new();
        let mut procs = vec![ProcessSample {
            pid: me,
            ..ProcessSample::default()
        }];
        reader.fill(&mut procs, 1_000);
        let h = procs[0].host.as_ref().expect("own pid resolves");
        assert!(h.cpu_pct.is_none(), "first reading has no CPU rate yet");
        assert!(h.rss_bytes.unwrap() > 0);
        reader.fill(&mut procs, 2_000);
        assert!(procs[0].host.as_ref().unwrap().cpu_pct.is_some());
    }

    #[test]
    fn processes_on_several_gpus_all_keep_their_cpu_rate() {
        // A rank on GPU 0 and its parent on GPU 1: both must get a rate on the second reading.
        let me = std::process::id();
        let parent = std::os::unix::process::parent_id();
        let mut gpus = [
            vec![ProcessSample {
                pid: me,
                ..ProcessSample::default()
            }],
            vec![ProcessSample {
                pid: parent,
                ..ProcessSample::default()
            }],
        ];
        let mut reader = HostReader::new();
        for now in [1_000, 2_000] {
            reader.fill(gpus.iter_mut().flatten(), now);
        }
        assert!(gpus
            .iter()
            .flatten()
            .all(|p| p.host.as_ref().unwrap().cpu_pct.is_some()));
    }

    #[test]
    fn unresolved_pids_are_remembered_as_looked_up() {
        let mut reader = HostReader::new();
        let ghost = u32::MAX - 9;
        assert!(!reader.looked_up(ghost));
        let mut procs = vec![ProcessSample {
            pid: ghost,
            ..ProcessSample::default()
        }];
        reader.fill(&mut procs, 0);
        assert!(procs[0].host.is_none());
        assert!(reader.looked_up(ghost), "not retried every tick");
        reader.fill(&mut Vec::<ProcessSample>::new(), 1000);
        assert!(!reader.looked_up(ghost), "forgotten once gone");
    }

    #[test]
    fn unknown_pid_leaves_host_empty() {
        let mut reader = HostReader::new();
        let mut procs = vec![ProcessSample {
            pid: u32::MAX - 7,
            ..ProcessSample::default()
        }];
        reader.fill(&mut procs, 0);
        assert!(procs[0].host.is_none());
    }
}
