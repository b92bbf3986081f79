//! The host side of GPU processes, read from /proc: CPU, memory, threads, state, user and the
//! worker children a `DataLoader` forks.
//!
//! CPU % needs two readings, so `HostReader` remembers each PID's CPU time from the last call.
//! Every file is read under a `ProcRoot`: this machine's /proc, or a captured tree in tests.

use std::collections::HashMap;
use std::fs;
use std::sync::Arc;

use crate::container::Container;
use crate::model::{ChildProcess, HostProcess, JobInfo, ProcessSample};
use crate::software::{ProcRoot, Software};

/// This machine's host name.
#[must_use]
pub fn hostname() -> String {
    fs::read_to_string("/proc/sys/kernel/hostname")
        .map_or_else(|_| "unknown".into(), |s| s.trim().to_string())
}

/// The fields of /proc/PID/stat that gpuwatch reads.
#[derive(Debug, Clone, Copy)]
struct Stat {
    state: char,
    ppid: u32,
    cpu_ticks: u64,
    threads: u32,
    rss_pages: u64,
    /// Clock ticks after boot at which the process started: with the PID, what tells a
    /// process from a later one that reuses its PID.
    start_ticks: u64,
}

fn parse_stat(text: &str) -> Option<(String, Stat)> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let name = text[open + 1..close].to_string();
    let f: Vec<&str> = text.get(close + 2..)?.split_whitespace().collect();
    let num = |i: usize| f.get(i).and_then(|v| v.parse::<u64>().ok());
    Some((
        name,
        Stat {
            state: f.first()?.chars().next()?,
            ppid: num(1)? as u32,
            cpu_ticks: num(11)? + num(12)?,
            threads: num(17)? as u32,
            start_ticks: num(19)?,
            rss_pages: num(21)?,
        },
    ))
}

fn read_stat(at: &ProcRoot, pid: u32) -> Option<(String, Stat)> {
    parse_stat(&fs::read_to_string(at.proc_file(pid, "stat")).ok()?)
}

/// The command line, its secrets redacted argument by argument before the arguments are
/// joined (a passphrase with spaces is one argument here, and gone as a whole), unless
/// `--no-redact`. What is never read cannot leak through the screen, a recording or a snapshot.
fn read_cmdline(at: &ProcRoot, pid: u32) -> String {
    fs::read(at.proc_file(pid, "cmdline"))
        .map(|b| {
            let parts: Vec<String> = b
                .split(|c| *c == 0)
                .filter(|p| !p.is_empty())
                .map(|p| String::from_utf8_lossy(p).into_owned())
                .collect();
            if crate::redact::redacting() {
                crate::redact::redact_args(&parts).join(" ")
            } else {
                parts.join(" ")
            }
        })
        .unwrap_or_default()
}

fn read_uid(at: &ProcRoot, pid: u32) -> Option<u32> {
    let status = fs::read_to_string(at.proc_file(pid, "status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("Uid:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// `read_bytes` of /proc/PID/io: bytes this process made the storage layer fetch. Readable
/// for one's own processes (or as root); `None` otherwise.
fn read_io_bytes(at: &ProcRoot, pid: u32) -> Option<u64> {
    let text = fs::read_to_string(at.proc_file(pid, "io")).ok()?;
    let line = text.lines().find(|l| l.starts_with("read_bytes:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// The only variables gpuwatch reads from a process's environment: what groups the ranks of
/// one distributed job. Nothing else is read or kept.
pub const JOB_KEYS: [&str; 7] = [
    "TORCHELASTIC_RUN_ID",
    "MASTER_ADDR",
    "MASTER_PORT",
    "RANK",
    "LOCAL_RANK",
    "WORLD_SIZE",
    "SLURM_JOB_ID",
];

/// The job a process belongs to, from the allow-listed launcher variables of its environment
/// block (NUL-separated `KEY=value`). `None` when it names no job.
#[must_use]
pub fn parse_job(environ: &[u8]) -> Option<JobInfo> {
    let mut vals: [Option<String>; 7] = Default::default();
    for entry in environ.split(|c| *c == 0) {
        let Some(eq) = entry.iter().position(|c| *c == b'=') else {
            continue;
        };
        let (k, v) = (&entry[..eq], &entry[eq + 1..]);
        if let Some(i) = JOB_KEYS.iter().position(|key| key.as_bytes() == k) {
            vals[i] = Some(String::from_utf8_lossy(v).chars().take(128).collect());
        }
    }
    let [run_id, addr, port, rank, local_rank, world, slurm] = vals;
    let key = match (slurm, run_id, addr, port) {
        (Some(j), _, _, _) => format!("slurm:{j}"),
        (None, Some(r), _, _) => format!("torchelastic:{r}"),
        (None, None, Some(a), Some(p)) => format!("{a}:{p}"),
        _ => return None,
    };
    let num = |v: Option<String>| v.and_then(|s| s.trim().parse().ok());
    Some(JobInfo {
        key,
        rank: num(rank),
        local_rank: num(local_rank),
        world_size: num(world),
    })
}

/// Children of `pid` from /proc/PID/task/*/children (every thread can fork).
pub fn read_children(pid: u32) -> Vec<u32> {
    children_under(&ProcRoot::live(), pid)
}

fn children_under(at: &ProcRoot, pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    scan_children(at, pid, &mut out, &mut Vec::new());
    out
}

/// Appends the children of every thread of `pid` to `out` (sorted, without repeats). On
/// return `forkers` holds the threads that have children now and those it held that are still
/// alive: a thread that forked once (a `DataLoader` iterated off the main thread, whose
/// workers may each live less than a full scan's spacing) is asked at every refresh until it
/// ends.
fn scan_children(at: &ProcRoot, pid: u32, out: &mut Vec<u32>, forkers: &mut Vec<u32>) {
    let known = std::mem::take(forkers);
    let Ok(tasks) = fs::read_dir(at.proc_file(pid, "task")) else {
        return;
    };
    for task in tasks.flatten() {
        let before = out.len();
        if let Ok(text) = fs::read_to_string(task.path().join("children")) {
            out.extend(
                text.split_whitespace()
                    .filter_map(|v| v.parse::<u32>().ok()),
            );
        }
        let tid = task
            .file_name()
            .to_str()
            .and_then(|t| t.parse::<u32>().ok());
        if let Some(tid) = tid.filter(|t| out.len() > before || known.contains(t)) {
            forkers.push(tid);
        }
    }
    out.sort_unstable();
    out.dedup();
}

/// How often every thread of a GPU process is asked for its children. Between two such
/// scans only the main thread and the threads that had children are asked: a torch process
/// runs 30–40 threads (34 in the H200 runs' recordings), and asking each of them every second
/// took 230 µs of the sampling thread per process (a Python process of 40 threads, this
/// development machine), more than all its other reads together (60 µs).
/// A `DataLoader` forks its workers from the thread that iterates it, the main one as a
/// rule, so new workers are seen at the next refresh; ones another thread forks, within this
/// the first time, and at the next refresh once that thread is known to fork.
const FULL_CHILD_SCAN_MS: u64 = 10_000;

/// The threads of one process known to fork, and when all its threads were last asked.
#[derive(Debug, Clone, Default)]
struct Forkers {
    tids: Vec<u32>,
    scanned_ms: u64,
    /// The process's start time: a new process under a reused PID starts afresh.
    start_ticks: u64,
}

/// Children of `pid`'s main thread and of the threads in `known`; the same as a full scan
/// unless a thread that never had children forked.
fn known_children(at: &ProcRoot, pid: u32, known: &[u32], out: &mut Vec<u32>) {
    for tid in std::iter::once(pid).chain(known.iter().copied().filter(|t| *t != pid)) {
        let path = at.proc_file(pid, &format!("task/{tid}/children"));
        if let Ok(text) = fs::read_to_string(path) {
            out.extend(
                text.split_whitespace()
                    .filter_map(|v| v.parse::<u32>().ok()),
            );
        }
    }
    out.sort_unstable();
    out.dedup();
}

/// Counters of one PID at its last reading, and the rates they gave.
#[derive(Debug, Clone, Copy)]
struct Counters {
    at_ms: u64,
    cpu_ticks: u64,
    io_bytes: Option<u64>,
    cpu_pct: Option<f32>,
    io_bytes_s: Option<f32>,
}

/// What does not change while a process lives: read once per process, not per refresh.
#[derive(Debug, Clone, Default)]
struct Fixed {
    start_ticks: u64,
    /// False when the process's open files could be read and none is a GPU device: the PID
    /// belongs to someone else (NVML's PIDs inside a container are the host's).
    holds_gpu: bool,
    cmdline: String,
    user: Option<String>,
    job: Option<JobInfo>,
    container: Option<Arc<Container>>,
    software: Option<Arc<Software>>,
}

/// Reads the host side of GPU processes from /proc. It is the one writer of
/// `ProcessSample::host` for live sources: `refresh` reads /proc (about once a second), and
/// `attach` copies the latest reading into every tick, so no tick goes without it.
pub struct HostReader {
    counters: HashMap<u32, Counters>,
    forkers: HashMap<u32, Forkers>,
    fixed: HashMap<u32, Fixed>,
    /// The latest host side of each GPU process; `None` where the PID does not resolve.
    latest: HashMap<u32, Option<HostProcess>>,
    /// User names by uid, each looked up once through the name service (LDAP and SSSD
    /// users too, not only /etc/passwd).
    users: HashMap<u32, String>,
    ticks_per_s: f32,
    page_bytes: u64,
    boot_ms: Option<u64>,
    /// Where /proc is read: this machine's, or a captured tree.
    at: ProcRoot,
    /// Take a PID as this machine's only if the process holds a `/dev/nvidia*` file (set for
    /// NVML, whose PIDs are the host's even inside a container).
    pub check_gpu_files: bool,
}

impl Default for HostReader {
    fn default() -> Self {
        Self::new()
    }
}

impl HostReader {
    #[must_use]
    pub fn new() -> Self {
        Self::under(ProcRoot::live())
    }

    /// Reads /proc under `at` (a captured tree in tests: `at/proc/PID/…`).
    #[must_use]
    pub fn under(at: ProcRoot) -> Self {
        HostReader {
            counters: HashMap::new(),
            forkers: HashMap::new(),
            fixed: HashMap::new(),
            latest: HashMap::new(),
            users: HashMap::new(),
            ticks_per_s: crate::sys::clock_ticks_per_second(),
            page_bytes: crate::sys::page_size(),
            boot_ms: boot_time_ms(&at),
            at,
            check_gpu_files: false,
        }
    }

    /// True when `pid` was looked up by the last refresh (resolved or not): a PID that did not
    /// resolve (a container) is not retried on every tick, only at the next regular refresh.
    #[must_use]
    pub fn knows(&self, pid: u32) -> bool {
        self.latest.contains_key(&pid)
    }

    /// Reads /proc for every GPU process of a tick at `now_ms`. Give it all GPUs' PIDs in one
    /// call: what is not named is forgotten. A PID that is also a child of another GPU process
    /// (`torch.multiprocessing.spawn`: the parent holds a context too) is read once, and both
    /// places get the same rates.
    pub fn refresh(&mut self, pids: impl IntoIterator<Item = u32>, now_ms: u64) {
        let mut seen = Vec::new();
        let mut latest = std::mem::take(&mut self.latest);
        latest.clear();
        for pid in pids {
            if let std::collections::hash_map::Entry::Vacant(slot) = latest.entry(pid) {
                slot.insert(self.read(pid, now_ms, &mut seen));
            }
        }
        self.latest = latest;
        self.counters.retain(|pid, _| seen.contains(pid));
        // The facts of every PID looked up, resolved or not: one naming someone else's process
        // (a container's NVML lists the host's) had its open files and maps read every second.
        self.fixed.retain(|pid, _| self.latest.contains_key(pid));
        self.forkers.retain(|pid, _| seen.contains(pid));
    }

    /// Copies the latest reading into each process: every tick carries its host side.
    pub fn attach<'a>(&self, processes: impl IntoIterator<Item = &'a mut ProcessSample>) {
        for p in processes {
            match (self.latest.get(&p.pid), &mut p.host) {
                (Some(Some(theirs)), Some(mine)) => mine.clone_from(theirs),
                (Some(Some(theirs)), mine) => *mine = Some(theirs.clone()),
                (_, mine) => *mine = None,
            }
        }
    }

    /// Reads the CPU and I/O counters of `pid` and turns them into rates since its last
    /// reading. Read twice at one instant, a PID keeps the rates of the first reading.
    fn rates(&mut self, pid: u32, cpu_ticks: u64, now_ms: u64, seen: &mut Vec<u32>) -> Counters {
        if !seen.contains(&pid) {
            seen.push(pid);
        }
        if let Some(c) = self.counters.get(&pid).filter(|c| c.at_ms == now_ms) {
            return *c;
        }
        let io_bytes = read_io_bytes(&self.at, pid);
        let prev = self.counters.get(&pid).copied();
        let dt_s = prev
            .and_then(|p| now_ms.checked_sub(p.at_ms))
            .filter(|d| *d > 0)
            .map(|d| d as f32 / 1000.0);
        let c = Counters {
            at_ms: now_ms,
            cpu_ticks,
            io_bytes,
            cpu_pct: prev.zip(dt_s).map(|(p, dt)| {
                cpu_ticks.saturating_sub(p.cpu_ticks) as f32 / self.ticks_per_s / dt * 100.0
            }),
            io_bytes_s: match (prev.and_then(|p| p.io_bytes), io_bytes, dt_s) {
                (Some(before), Some(now), Some(dt)) => Some(now.saturating_sub(before) as f32 / dt),
                _ => None,
            },
        };
        self.counters.insert(pid, c);
        c
    }

    fn fixed(&mut self, pid: u32, stat: &Stat) -> Fixed {
        match self.fixed.get(&pid) {
            Some(f) if f.start_ticks == stat.start_ticks => f.clone(),
            _ => {
                let at = &self.at;
                let holds_gpu =
                    !self.check_gpu_files || holds_file(at, pid, "/dev/nvidia").unwrap_or(true);
                if !holds_gpu {
                    // Someone else's process: nothing more of it is read while it lives; a
                    // PID reused by a GPU process (another start) is read in full.
                    let f = Fixed {
                        start_ticks: stat.start_ticks,
                        ..Fixed::default()
                    };
                    return self.fixed.entry(pid).insert_entry(f).get().clone();
                }
                // Read once per process: the environment (launcher variables and the
                // allow-listed settings), the cgroup (container) and the mapped libraries.
                let environ = fs::read(at.proc_file(pid, "environ"));
                let f = Fixed {
                    start_ticks: stat.start_ticks,
                    holds_gpu,
                    cmdline: read_cmdline(at, pid),
                    user: read_uid(at, pid).map(|uid| {
                        self.users
                            .entry(uid)
                            .or_insert_with(|| {
                                crate::sys::user_name(uid).unwrap_or_else(|| uid.to_string())
                            })
                            .clone()
                    }),
                    job: environ.as_deref().ok().and_then(parse_job),
                    container: fs::read_to_string(at.proc_file(pid, "cgroup"))
                        .ok()
                        .and_then(|t| crate::container::parse_cgroup(&t))
                        .map(Arc::new),
                    software: Some(Arc::new(crate::software::read_with(at, pid, environ))),
                };
                self.fixed.insert(pid, f.clone());
                f
            }
        }
    }

    /// The children of `pid`: every thread asked at most `FULL_CHILD_SCAN_MS` apart, the
    /// main thread and the known forkers in between.
    fn children(&mut self, pid: u32, start_ticks: u64, now_ms: u64) -> Vec<u32> {
        let mut out = Vec::new();
        let f = self.forkers.entry(pid).or_default();
        if f.start_ticks != start_ticks {
            *f = Forkers {
                start_ticks,
                ..Forkers::default()
            };
        }
        // 0: never scanned (a scan at 0 ms is kept as 1).
        let due = f.scanned_ms == 0
            || now_ms < f.scanned_ms
            || now_ms - f.scanned_ms >= FULL_CHILD_SCAN_MS;
        if due {
            scan_children(&self.at, pid, &mut out, &mut f.tids);
            f.scanned_ms = now_ms.max(1);
        } else {
            known_children(&self.at, pid, &f.tids, &mut out);
        }
        out
    }

    fn read(&mut self, pid: u32, now_ms: u64, seen: &mut Vec<u32>) -> Option<HostProcess> {
        let (name, stat) = read_stat(&self.at, pid)?;
        let fixed = self.fixed(pid, &stat);
        if !fixed.holds_gpu {
            return None;
        }
        let own = self.rates(pid, stat.cpu_ticks, now_ms, seen);
        let mut io_total = own.io_bytes_s;
        let children = self
            .children(pid, stat.start_ticks, now_ms)
            .into_iter()
            .filter_map(|c| {
                let (cname, cstat) = read_stat(&self.at, c)?;
                let r = self.rates(c, cstat.cpu_ticks, now_ms, seen);
                if let Some(v) = r.io_bytes_s {
                    io_total = Some(io_total.unwrap_or(0.0) + v);
                }
                Some(ChildProcess {
                    pid: c,
                    name: cname,
                    cpu_pct: r.cpu_pct,
                    state: Some(cstat.state),
                })
            })
            .collect();
        let started_ms = self
            .boot_ms
            .map(|b| b + (stat.start_ticks as f64 / f64::from(self.ticks_per_s) * 1000.0) as u64);
        Some(HostProcess {
            name,
            cmdline: fixed.cmdline,
            user: fixed.user,
            cpu_pct: own.cpu_pct,
            rss_bytes: Some(stat.rss_pages * self.page_bytes),
            threads: Some(stat.threads),
            state: Some(stat.state),
            ppid: Some(stat.ppid),
            children,
            started_ms,
            io_read_bytes_s: io_total,
            job: fixed.job,
            container: fixed.container,
            software: fixed.software,
        })
    }
}

/// Whether process `pid` has a file open whose path starts with `prefix`; `None` when its
/// open files may not be read (another user's process, without root).
fn holds_file(at: &ProcRoot, pid: u32, prefix: &str) -> Option<bool> {
    let fds = fs::read_dir(at.proc_file(pid, "fd")).ok()?;
    Some(
        fds.flatten().any(|fd| {
            fs::read_link(fd.path()).is_ok_and(|t| t.to_string_lossy().starts_with(prefix))
        }),
    )
}

/// When process `pid` started (ms since the epoch), computed as `HostReader` does, so the two
/// compare equal for the same process; `None` when it does not exist (any more).
#[must_use]
pub fn started_ms(pid: u32) -> Option<u64> {
    let at = ProcRoot::live();
    let (_, stat) = read_stat(&at, pid)?;
    let tps = crate::sys::clock_ticks_per_second();
    Some(boot_time_ms(&at)? + (stat.start_ticks as f64 / f64::from(tps) * 1000.0) as u64)
}

/// When the machine booted, ms since the Unix epoch (`btime` of /proc/stat).
fn boot_time_ms(at: &ProcRoot) -> Option<u64> {
    let text = fs::read_to_string(at.proc_root_file("stat")).ok()?;
    let line = text.lines().find(|l| l.starts_with("btime "))?;
    line[6..].trim().parse::<u64>().ok().map(|s| s * 1000)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn procs(pids: &[u32]) -> Vec<ProcessSample> {
        pids.iter()
            .map(|&pid| ProcessSample {
                pid,
                ..ProcessSample::default()
            })
            .collect()
    }

    /// Refresh, then attach, as the sampler does on a tick that reads /proc.
    fn tick(reader: &mut HostReader, list: &mut [ProcessSample], now: u64) {
        reader.refresh(list.iter().map(|p| p.pid), now);
        reader.attach(list.iter_mut());
    }

    /// The host side read from a captured /proc (two torch processes of the lent H200,
    /// tests/fixtures/proc) equals what those files say, not what this machine runs.
    #[test]
    fn a_captured_proc_tree_is_read_as_the_live_one_is() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/proc");
        let mut reader = HostReader::under(ProcRoot::fixture(&root));
        reader.check_gpu_files = true; // no fd/ captured: unknown, so taken as holding it
        let mut list = procs(&[628, 629, 4_000_000]);
        tick(&mut reader, &mut list, 1_000);
        let h = list[0].host.as_ref().expect("628 is in the tree");
        assert_eq!(
            (h.name.as_str(), h.state, h.ppid, h.threads),
            ("python3", Some('R'), Some(594), Some(6))
        );
        assert_eq!(h.rss_bytes, Some(185_685 * crate::sys::page_size()));
        assert_eq!(h.cmdline, "python3 /tmp/blocking.py 40");
        assert_eq!(h.user.as_deref(), Some("root"), "uid 0 in its status");
        assert_eq!(h.cpu_pct, None, "CPU needs two readings");
        let sw = h.software.as_ref().expect("what it runs with");
        assert!(
            sw.settings
                .iter()
                .any(|(k, v)| k == "CUDA_LAUNCH_BLOCKING" && v == "1"),
            "{:?}",
            sw.settings
        );
        assert_eq!(list[1].host.as_ref().map(|h| h.threads), Some(Some(23)));
        assert!(list[2].host.is_none(), "a pid the tree does not have");
        // A second reading a second later: the captured counters did not move.
        tick(&mut reader, &mut list, 2_000);
        assert_eq!(list[0].host.as_ref().unwrap().cpu_pct, Some(0.0));
    }

    #[test]
    fn stat_with_spaces_and_parens_in_name_parses() {
        let text = "42 (my (odd) proc) S 1 42 42 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 7 0 100 1000000 300 18446744073709551615";
        let (name, st) = parse_stat(text).expect("parses");
        assert_eq!(name, "my (odd) proc");
        assert_eq!(st.state, 'S');
        assert_eq!(st.ppid, 1);
        assert_eq!(st.cpu_ticks, 300);
        assert_eq!(st.threads, 7);
        assert_eq!(st.start_ticks, 100);
        assert_eq!(st.rss_pages, 300);
    }

    #[test]
    fn truncated_stat_is_refused_not_a_panic() {
        assert!(parse_stat("1 (x)").is_none());
        assert!(parse_stat("1 (x) S 1 2").is_none());
    }

    #[test]
    fn own_process_is_read_and_cpu_needs_two_readings() {
        let me = std::process::id();
        let mut reader = HostReader::new();
        let mut list = procs(&[me]);
        tick(&mut reader, &mut list, 1_000);
        let h = list[0].host.as_ref().expect("own pid resolves");
        assert!(h.cpu_pct.is_none(), "first reading has no CPU rate yet");
        assert!(h.rss_bytes.unwrap() > 0);
        assert!(h.started_ms.is_some_and(|t| t <= crate::model::now_ms()));
        tick(&mut reader, &mut list, 2_000);
        let h = list[0].host.as_ref().unwrap();
        assert!(h.cpu_pct.is_some());
        assert!(h.io_read_bytes_s.is_some(), "own /proc/self/io is readable");
    }

    #[test]
    fn every_tick_between_refreshes_carries_the_host_side() {
        // The NVML source hands over fresh process lists without a host side; attach fills
        // them from the last refresh, so the rules never judge a tick with a gap.
        let me = std::process::id();
        let mut reader = HostReader::new();
        let mut list = procs(&[me]);
        tick(&mut reader, &mut list, 1_000);
        tick(&mut reader, &mut list, 2_000);
        for _ in 0..3 {
            let mut fresh = procs(&[me]);
            reader.attach(fresh.iter_mut());
            let h = fresh[0].host.as_ref().expect("host side attached");
            assert!(h.cpu_pct.is_some());
        }
    }

    #[test]
    fn a_gpu_process_that_is_also_the_child_of_another_keeps_its_cpu_rate() {
        // torch.multiprocessing.spawn: the parent holds a CUDA context and the ranks are its
        // children. Listing the parent first used to read each rank twice at one instant,
        // and the second reading (dt = 0) had no rate.
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .expect("sleep runs");
        let me = std::process::id();
        let mut reader = HostReader::new();
        let mut list = procs(&[me, child.id()]);
        for now in [1_000, 2_000] {
            tick(&mut reader, &mut list, now);
        }
        let parent = list[0].host.as_ref().unwrap();
        let rank = list[1].host.as_ref().expect("child resolves");
        assert!(parent.children.iter().any(|c| c.pid == child.id()));
        assert!(rank.cpu_pct.is_some(), "rank CPU % read once, kept");
        assert!(parent.cpu_pct.is_some());
        let _ = child.kill();
        let _ = child.wait();
    }

    /// Every thread is asked for its children once per `FULL_CHILD_SCAN_MS`; in between only
    /// the main thread and the threads that had children are. A child forked by a thread
    /// that had none shows at the next full scan, and from then on at every refresh.
    /// A thread of this process that forks a child and stays alive (its children are listed
    /// under it); told to, it ends its child ('k'), forks another ('f'), or ends both ('q'),
    /// and answers each with the pid of the child it has now.
    fn forking_thread() -> (
        std::sync::mpsc::Sender<char>,
        std::sync::mpsc::Receiver<Option<u32>>,
        std::thread::JoinHandle<()>,
    ) {
        let (tx, rx) = std::sync::mpsc::channel();
        let (say, told) = std::sync::mpsc::channel::<char>();
        let forker = std::thread::spawn(move || {
            let sleep = || {
                std::process::Command::new("sleep")
                    .arg("30")
                    .spawn()
                    .unwrap()
            };
            let mut child = Some(sleep());
            tx.send(child.as_ref().map(std::process::Child::id))
                .unwrap();
            while let Ok(what) = told.recv() {
                if let Some(mut c) = child.take() {
                    let _ = c.kill();
                    let _ = c.wait();
                }
                match what {
                    'f' => child = Some(sleep()),
                    'q' => return,
                    _ => {}
                }
                tx.send(child.as_ref().map(std::process::Child::id))
                    .unwrap();
            }
        });
        (say, rx, forker)
    }

    #[test]
    fn a_thread_that_forks_is_asked_for_its_children_after_the_next_full_scan() {
        let me = std::process::id();
        let mut reader = HostReader::new();
        let mut list = procs(&[me]);
        let has = |list: &[ProcessSample], pid: u32| {
            let h = list[0].host.as_ref().expect("this process resolves");
            h.children.iter().any(|c| c.pid == pid)
        };
        tick(&mut reader, &mut list, 1_000);
        let (say, rx, forker) = forking_thread();
        let child = rx.recv().unwrap().unwrap();
        tick(&mut reader, &mut list, 2_000);
        let between = has(&list, child);
        tick(&mut reader, &mut list, 1_000 + FULL_CHILD_SCAN_MS);
        let at_scan = has(&list, child);
        tick(&mut reader, &mut list, 2_000 + FULL_CHILD_SCAN_MS);
        let after = has(&list, child);
        // Its child gone, the next full scan finds the thread childless; then it forks again.
        say.send('k').unwrap();
        rx.recv().unwrap();
        tick(&mut reader, &mut list, 1_000 + 2 * FULL_CHILD_SCAN_MS);
        say.send('f').unwrap();
        let second = rx.recv().unwrap().unwrap();
        tick(&mut reader, &mut list, 2_000 + 2 * FULL_CHILD_SCAN_MS);
        let again = has(&list, second);
        say.send('q').unwrap();
        forker.join().unwrap();
        assert!(
            !between,
            "a thread not known to fork is not asked between full scans"
        );
        assert!(at_scan, "the full scan finds the child");
        assert!(
            after,
            "the forking thread is asked at every refresh from then on"
        );
        assert!(
            again,
            "a thread that forked is still asked after a full scan found it childless"
        );
    }

    #[test]
    fn processes_on_several_gpus_all_keep_their_cpu_rate() {
        let me = std::process::id();
        let parent = std::os::unix::process::parent_id();
        let mut gpus = [procs(&[me]), procs(&[parent])];
        let mut reader = HostReader::new();
        for now in [1_000, 2_000] {
            reader.refresh(gpus.iter().flatten().map(|p| p.pid), now);
            reader.attach(gpus.iter_mut().flatten());
        }
        assert!(gpus
            .iter()
            .flatten()
            .all(|p| p.host.as_ref().unwrap().cpu_pct.is_some()));
    }

    #[test]
    fn unresolved_pids_are_known_until_the_next_refresh_forgets_them() {
        let mut reader = HostReader::new();
        let ghost = u32::MAX - 9;
        assert!(!reader.knows(ghost));
        let mut list = procs(&[ghost]);
        tick(&mut reader, &mut list, 0);
        assert!(list[0].host.is_none());
        assert!(reader.knows(ghost), "not retried every tick");
        reader.refresh(std::iter::empty(), 1000);
        assert!(!reader.knows(ghost), "forgotten once gone");
    }

    #[test]
    fn a_pid_that_does_not_hold_the_gpu_is_not_taken_for_the_gpu_process() {
        // Inside a container NVML lists the host's PIDs; the same number here is another
        // process, with no /dev/nvidia* open: no host side rather than a stranger's.
        let me = std::process::id();
        let _null = std::fs::File::open("/dev/null").unwrap();
        assert_eq!(holds_file(&ProcRoot::live(), me, "/dev/null"), Some(true));
        assert_eq!(
            holds_file(&ProcRoot::live(), me, "/dev/nvidia"),
            Some(false)
        );
        let mut reader = HostReader::new();
        reader.check_gpu_files = true;
        let mut list = procs(&[me]);
        tick(&mut reader, &mut list, 1_000);
        assert!(list[0].host.is_none(), "this test holds no GPU");
        let mut trusting = HostReader::new();
        tick(&mut trusting, &mut list, 1_000);
        assert!(
            list[0].host.is_some(),
            "without the check (simulated sources) it resolves"
        );
    }

    /// A PID that names someone else's process is looked at once while that process lives:
    /// its open files are not read again at each refresh (nor its maps, environment and
    /// cgroup ever). Shown by the process opening a GPU file after the first look, which a
    /// second look would see.
    #[test]
    fn a_stranger_is_looked_at_once_not_at_every_refresh() {
        let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/proc");
        let root = std::env::temp_dir().join(format!("gw-stranger-{}", std::process::id()));
        let dir = root.join("proc/4242");
        std::fs::create_dir_all(dir.join("fd")).unwrap();
        std::fs::copy(fixture.join("proc/628/stat"), dir.join("stat")).unwrap();
        let fd = dir.join("fd/3");
        std::os::unix::fs::symlink("/dev/null", &fd).unwrap();
        let mut reader = HostReader::under(ProcRoot::fixture(&root));
        reader.check_gpu_files = true;
        let mut list = procs(&[4242]);
        tick(&mut reader, &mut list, 1_000);
        assert!(list[0].host.is_none(), "holds no GPU file");
        std::fs::remove_file(&fd).unwrap();
        std::os::unix::fs::symlink("/dev/nvidia0", &fd).unwrap();
        tick(&mut reader, &mut list, 2_000);
        let second_look = list[0].host.is_some();
        std::fs::remove_dir_all(&root).unwrap();
        assert!(
            !second_look,
            "its files were read again at the next refresh"
        );
        assert!(reader.knows(4242));
    }

    #[test]
    fn secrets_are_redacted_argument_by_argument_when_read() {
        // A process whose arguments hold a token and a passphrase with spaces.
        let mut c = std::process::Command::new("sh")
            .args([
                "-c",
                "sleep 30; true",
                "job",
                "--token",
                "t0k3n",
                "--passphrase",
                "correct horse",
            ])
            .spawn()
            .expect("sh runs");
        std::thread::sleep(std::time::Duration::from_millis(100));
        let mut reader = HostReader::new();
        let mut list = procs(&[c.id()]);
        tick(&mut reader, &mut list, 1_000);
        let cmd = list[0].host.as_ref().expect("resolves").cmdline.clone();
        let _ = c.kill();
        let _ = c.wait();
        assert!(cmd.contains("--token *** --passphrase ***"), "{cmd}");
        assert!(!cmd.contains("t0k3n") && !cmd.contains("horse"), "{cmd}");
    }

    #[test]
    fn job_comes_from_the_allow_listed_launcher_variables_only() {
        let env = b"PATH=/bin\0MASTER_ADDR=10.0.0.1\0MASTER_PORT=29500\0RANK=1\0LOCAL_RANK=1\0WORLD_SIZE=2\0HF_TOKEN=secret\0";
        let j = parse_job(env).expect("a job");
        assert_eq!(j.key, "10.0.0.1:29500");
        assert_eq!(
            (j.rank, j.local_rank, j.world_size),
            (Some(1), Some(1), Some(2))
        );
        assert!(!format!("{j:?}").contains("secret"));
        let slurm = parse_job(b"SLURM_JOB_ID=77\0TORCHELASTIC_RUN_ID=abc\0RANK=0\0").unwrap();
        assert_eq!(slurm.key, "slurm:77", "Slurm's job id wins: it spans nodes");
        let elastic =
            parse_job(b"TORCHELASTIC_RUN_ID=abc\0MASTER_ADDR=h\0MASTER_PORT=1\0").unwrap();
        assert_eq!(elastic.key, "torchelastic:abc");
        assert!(
            parse_job(b"RANK=0\0WORLD_SIZE=2\0").is_none(),
            "no key, no job"
        );
        assert!(parse_job(b"\0=\0garbage\0MASTER_ADDR\0").is_none());
    }
}
