//! The processes on a GPU: what NVML says of each (`ProcessSample`), and its host side read
//! from /proc (`HostProcess`, with its job and the worker children it forked).

use serde::{Deserialize, Serialize};

/// The host side of a GPU process, read from /proc (or simulated, or recorded).
#[derive(Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HostProcess {
    pub name: String,
    pub cmdline: String,
    pub user: Option<String>,
    pub cpu_pct: Option<f32>,
    pub rss_bytes: Option<u64>,
    pub threads: Option<u32>,
    /// One-letter state from /proc (R, S, D, Z…).
    pub state: Option<char>,
    /// Parent PID: ranks of one job (torchrun, mpirun) share it.
    pub ppid: Option<u32>,
    /// Child processes (`DataLoader` workers and the like).
    pub children: Vec<ChildProcess>,
    /// When the process started (ms since the Unix epoch), from /proc/PID/stat.
    pub started_ms: Option<u64>,
    /// Bytes per second read from storage by the process and its children (`read_bytes` of
    /// /proc/PID/io); `None` where /proc/PID/io may not be read (another user's process).
    pub io_read_bytes_s: Option<f32>,
    /// The distributed job this process is a rank of, from its launcher's variables.
    pub job: Option<JobInfo>,
    /// The container (and Kubernetes pod) it runs in, from /proc/PID/cgroup; shared, so a
    /// tick's copy does not allocate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container: Option<std::sync::Arc<crate::model::container::Container>>,
    /// What it runs with: CUDA libraries, framework and allow-listed settings (read once).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub software: Option<std::sync::Arc<crate::model::software::Software>>,
}

/// The launcher variables of a rank (torchrun, Slurm, mpirun-style), read once per process from
/// /proc/PID/environ. Only these keys are read and kept: `TORCHELASTIC_RUN_ID`, `MASTER_ADDR`,
/// `MASTER_PORT`, `RANK`, `LOCAL_RANK`, `WORLD_SIZE`, `SLURM_JOB_ID`.
#[derive(Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct JobInfo {
    /// What the ranks of one job share: the Slurm job, the torchelastic run, or the
    /// rendezvous address and port.
    pub key: String,
    pub rank: Option<u32>,
    pub local_rank: Option<u32>,
    pub world_size: Option<u32>,
}

#[derive(Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ChildProcess {
    pub pid: u32,
    pub name: String,
    pub cpu_pct: Option<f32>,
    pub state: Option<char>,
}

/// A process that holds a context on a GPU.
#[derive(Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ProcessSample {
    /// PID in the host's namespace, as NVML reports it.
    pub pid: u32,
    pub gpu_mem_bytes: Option<u64>,
    pub sm_pct: Option<f32>,
    pub mem_pct: Option<f32>,
    /// `None` when the PID does not resolve here (e.g. inside a container).
    pub host: Option<HostProcess>,
}

// Clone by hand so that `clone_from` reuses the strings and vectors already there: the history
// copies each tick's process list into its own, and must not allocate when nothing changed.
impl Clone for ChildProcess {
    fn clone(&self) -> Self {
        ChildProcess {
            pid: self.pid,
            name: self.name.clone(),
            cpu_pct: self.cpu_pct,
            state: self.state,
        }
    }
    fn clone_from(&mut self, o: &Self) {
        (self.pid, self.cpu_pct, self.state) = (o.pid, o.cpu_pct, o.state);
        self.name.clone_from(&o.name);
    }
}

impl Clone for JobInfo {
    fn clone(&self) -> Self {
        JobInfo {
            key: self.key.clone(),
            ..*self
        }
    }
    fn clone_from(&mut self, o: &Self) {
        self.key.clone_from(&o.key);
        (self.rank, self.local_rank, self.world_size) = (o.rank, o.local_rank, o.world_size);
    }
}

impl Clone for HostProcess {
    fn clone(&self) -> Self {
        let mut h = HostProcess::default();
        h.clone_from(self);
        h
    }
    fn clone_from(&mut self, o: &Self) {
        self.name.clone_from(&o.name);
        self.cmdline.clone_from(&o.cmdline);
        self.user.clone_from(&o.user);
        self.children.clone_from(&o.children);
        self.job.clone_from(&o.job);
        self.container.clone_from(&o.container);
        self.software.clone_from(&o.software);
        (
            self.cpu_pct,
            self.rss_bytes,
            self.threads,
            self.state,
            self.ppid,
            self.started_ms,
            self.io_read_bytes_s,
        ) = (
            o.cpu_pct,
            o.rss_bytes,
            o.threads,
            o.state,
            o.ppid,
            o.started_ms,
            o.io_read_bytes_s,
        );
    }
}

impl Clone for ProcessSample {
    fn clone(&self) -> Self {
        ProcessSample {
            pid: self.pid,
            gpu_mem_bytes: self.gpu_mem_bytes,
            sm_pct: self.sm_pct,
            mem_pct: self.mem_pct,
            host: self.host.clone(),
        }
    }
    fn clone_from(&mut self, o: &Self) {
        (self.pid, self.gpu_mem_bytes, self.sm_pct, self.mem_pct) =
            (o.pid, o.gpu_mem_bytes, o.sm_pct, o.mem_pct);
        match (&mut self.host, &o.host) {
            (Some(mine), Some(theirs)) => mine.clone_from(theirs),
            (mine, theirs) => mine.clone_from(theirs),
        }
    }
}
