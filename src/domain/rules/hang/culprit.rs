//! Who the ranks of a hung GPU's job wait for: a rank that exited, one whose Python stacks are
//! outside the collective the others wait in, or one whose GPU idles; and where every rank is.

use super::super::{ms, stacks, Ctx, Culprit, Stats};
use super::DEPARTURE_LOOKBACK_MS;
use crate::history::{Departure, DeviceHistory};
use crate::model::stack::{StackClass, StackFrame};
use crate::model::ProcessSample;
use crate::text::fixed;

/// A rank of this GPU's jobs (its own processes included), where it runs, and its stacks.
pub(super) struct Rank<'a> {
    device: u32,
    pub(super) process: &'a ProcessSample,
    seen: Option<stacks::Seen<'a>>,
}

impl Rank<'_> {
    fn rank(&self) -> Option<u32> {
        self.process.host.as_ref()?.job.as_ref()?.rank
    }
    /// "rank 2 (pid 1169, GPU 0)", or "pid 1169 (GPU 0)" outside a launcher.
    fn name(&self) -> String {
        match self.rank() {
            Some(r) => format!(
                "rank {r} (pid {}, GPU {})",
                self.process.pid,
                crate::model::gpu_label(self.device)
            ),
            None => format!(
                "pid {} (GPU {})",
                self.process.pid,
                crate::model::gpu_label(self.device)
            ),
        }
    }
}

/// Every process of this GPU and every rank of its jobs on other GPUs, rank order, with their
/// newest stacks.
pub(super) fn ranks_with_stacks<'a>(c: &'a Ctx) -> Vec<Rank<'a>> {
    let mut out: Vec<Rank> = Vec::new();
    let jobs = JobIndex::of(c.dev);
    let mut taken = std::collections::HashSet::new();
    for d in &c.all.devices {
        for q in &d.processes {
            let mine = d.info.index == c.dev.info.index || jobs.has_a_rank_with(q, c.dev);
            if mine && taken.insert(q.pid) {
                out.push(Rank {
                    device: d.info.index,
                    process: q,
                    seen: stacks::of(c, q.pid),
                });
            }
        }
    }
    out.sort_by_key(|r| (r.rank().unwrap_or(u32::MAX), r.process.pid));
    out
}

/// "where the ranks are (Python stacks): ranks 0, 1 (pids 1168, 1167, GPU 0): collective at
/// gloo.py:88 `dist.all_reduce(grad)`; rank 2 (pid 1169, GPU 0): idle … at gloo.py:79 …",
/// ranks in the same place said once.
pub(super) fn where_ranks_are(ranks: &[Rank]) -> Option<String> {
    // (what and where, the ranks there), in rank order
    let mut groups: Vec<(String, Vec<&Rank>)> = Vec::new();
    // Each place (what the main thread does, the frame it is at) is worded once, and its
    // group remembered: a job's ranks mostly wait in one place, and quoting every rank's was
    // 3 % of judging 64 GPUs. Places worded alike share a group.
    let mut places: Vec<(StackClass, Option<&StackFrame>, usize)> = Vec::new();
    for r in ranks {
        let Some(s) = r.seen.as_ref() else { continue };
        let (class, place) = (s.main.class, s.place());
        let group = if let Some(known) = places.iter().find(|p| (p.0, p.1) == (class, place)) {
            known.2
        } else {
            let at = place.map_or(String::new(), |f| format!(" at {}", stacks::quoted(f)));
            let what = format!("{}{at}", class.words());
            let group = groups
                .iter()
                .position(|(w, _)| *w == what)
                .unwrap_or_else(|| {
                    groups.push((what, Vec::new()));
                    groups.len() - 1
                });
            places.push((class, place, group));
            group
        };
        groups[group].1.push(r);
    }
    if groups.is_empty() {
        return None;
    }
    let parts: Vec<String> = groups
        .iter()
        .map(|(what, members)| format!("{}: {what}", ranks_named(members)))
        .collect();
    let lead = if ranks.len() > 1 {
        "where the ranks are (Python stacks)"
    } else {
        "where the process is (Python stacks)"
    };
    Some(format!("{lead}: {}", parts.join("; ")))
}

/// "rank 2 (pid 1169, GPU 0)", "ranks 0, 1 (pids 1168, 1167, GPU 0)", "pids 7, 8 (GPUs 0, 1)";
/// past `LISTED` members, as runs: "ranks 64-113 (50 processes, pids 11000 … 11490, GPUs 0-49)".
fn ranks_named(members: &[&Rank]) -> String {
    if let [one] = members {
        return one.name();
    }
    if members.len() > LISTED {
        return many_named(members);
    }
    let list = |f: &dyn Fn(&Rank) -> String| {
        let mut v: Vec<String> = members.iter().map(|r| f(r)).collect();
        v.dedup();
        v
    };
    let pids = list(&|r| r.process.pid.to_string()).join(", ");
    let gpus = list(&|r| crate::model::gpu_label(r.device).to_string());
    let gpus = if gpus.len() == 1 {
        format!("GPU {}", gpus[0])
    } else {
        format!("GPUs {}", gpus.join(", "))
    };
    let ranks: Option<Vec<String>> = members
        .iter()
        .map(|r| r.rank().map(|k| k.to_string()))
        .collect();
    match ranks {
        Some(ranks) => format!("ranks {} (pids {pids}, {gpus})", ranks.join(", ")),
        None => format!("pids {pids} ({gpus})"),
    }
}

/// Members named one by one up to this many: a fleet's fifty ranks listed so took ten rows.
const LISTED: usize = 4;

/// Many ranks in one place, as runs of numbers rather than every one.
fn many_named(members: &[&Rank]) -> String {
    let sorted = |f: &dyn Fn(&Rank) -> Option<u32>| -> Option<Vec<u32>> {
        let mut v: Option<Vec<u32>> = members.iter().map(|r| f(r)).collect();
        if let Some(v) = v.as_mut() {
            v.sort_unstable();
            v.dedup();
        }
        v
    };
    let pids = sorted(&|r| Some(r.process.pid)).unwrap_or_default();
    let (first, last) = (pids[0], pids[pids.len() - 1]);
    let gpus = sorted(&|r| Some(r.device)).unwrap_or_default();
    let gpus = crate::model::gpus_named(&gpus);
    let what = format!(
        "{} processes, pids {first} … {last}, GPUs {gpus}",
        members.len()
    );
    match sorted(&|r| r.rank()) {
        Some(ranks) => format!("ranks {} ({what})", crate::text::runs(&ranks)),
        None => what,
    }
}

/// The one rank not in the collective that the other ranks wait in, from their stacks.
pub(super) fn outside_the_collective(c: &Ctx, ranks: &[Rank]) -> Option<Culprit> {
    let read: Vec<&Rank> = ranks.iter().filter(|r| r.seen.is_some()).collect();
    let class = |r: &Rank| {
        r.seen
            .as_ref()
            .and_then(|s| s.burst.main_class())
            .map(|(c, _)| c)
    };
    let waiting: Vec<&Rank> = read
        .iter()
        .copied()
        .filter(|r| class(r) == Some(StackClass::Collective))
        .collect();
    let outside: Vec<&Rank> = read
        .iter()
        .copied()
        .filter(|r| class(r) != Some(StackClass::Collective))
        .collect();
    let [odd] = outside.as_slice() else {
        return None;
    };
    if waiting.is_empty() {
        return None;
    }
    let s = odd.seen.as_ref()?;
    let at = s
        .place()
        .map_or(String::new(), |f| format!(" at {}", stacks::quoted(f)));
    let others = waiting_named(&waiting);
    let alone = waiting.len() == 1;
    Some(Culprit {
        device: odd.device,
        pid: odd.process.pid,
        rank: odd.rank(),
        reason: "stacks".into(),
        at_ms: s.burst.t_ms.min(c.now_ms),
        text: format!(
            "{} is not in the collective: {}{at}, while {} {} wait{} in it: the one {} for",
            odd.name(),
            s.main.class.words(),
            match (alone, waiting[0].rank().is_some()) {
                (true, true) => "rank",
                (_, true) => "ranks",
                _ => "",
            },
            others,
            if alone { "s" } else { "" },
            if alone { "it waits" } else { "the others wait" }
        ),
    })
}

/// "0, 1, 2", "pid 7, pid 8", or past `LISTED` ranks, runs: "0-62", as where they are says them.
fn waiting_named(waiting: &[&Rank]) -> String {
    let ranks: Option<Vec<u32>> = waiting.iter().map(|r| r.rank()).collect();
    match ranks {
        Some(mut ranks) if ranks.len() > LISTED => {
            ranks.sort_unstable();
            crate::text::runs(&ranks)
        }
        _ => {
            let each: Vec<String> = waiting
                .iter()
                .map(|r| {
                    r.rank()
                        .map_or(format!("pid {}", r.process.pid), |k| k.to_string())
                })
                .collect();
            each.join(", ")
        }
    }
}

/// True when two processes are ranks of one job: the same launcher job (torchrun, Slurm,
/// a rendezvous address), else the same parent, or one the parent of the other
/// (`torch.multiprocessing.spawn` with a parent that holds a context too).
pub(crate) fn same_job(
    a: &ProcessSample,
    b_job: Option<&crate::model::JobInfo>,
    b_pid: u32,
    b_ppid: Option<u32>,
) -> bool {
    let Some(h) = a.host.as_ref() else {
        return false;
    };
    if let (Some(x), Some(y)) = (&h.job, b_job) {
        return x.key == y.key;
    }
    let parent = |pp: Option<u32>| pp.filter(|p| *p > 1);
    (parent(h.ppid).is_some() && parent(h.ppid) == parent(b_ppid))
        || parent(h.ppid) == Some(b_pid)
        || parent(b_ppid) == Some(a.pid)
}

fn rank_text(rank: Option<u32>) -> String {
    rank.map(|r| format!("rank {r}, ")).unwrap_or_default()
}

/// A rank of one of this GPU's jobs that left its GPU shortly before or during the stall.
pub(super) fn lost_rank(c: &Ctx) -> Option<Culprit> {
    let since = c
        .now_ms
        .saturating_sub(ms(c.thresholds.hang.window) + DEPARTURE_LOOKBACK_MS);
    let gone: &Departure = c.all.departures.iter().rev().find(|d| {
        d.gone_ms >= since
            && !c.dev.processes.iter().any(|p| p.pid == d.pid)
            && c.dev
                .processes
                .iter()
                .any(|p| same_job(p, d.job.as_ref(), d.pid, d.ppid))
    })?;
    let rank = gone.job.as_ref().and_then(|j| j.rank);
    Some(Culprit {
        device: gone.device,
        pid: gone.pid,
        rank,
        reason: "exited".into(),
        at_ms: gone.gone_ms,
        text: format!(
            "GPU {}'s process of the same job ({}pid {}{}) exited at {} UTC: the job lost a rank, and this GPU waits for it",
            crate::model::gpu_label(gone.device),
            rank_text(rank),
            gone.pid,
            if gone.name.is_empty() { String::new() } else { format!(", {}", gone.name) },
            crate::text::clock(gone.gone_ms)
        ),
    })
}

/// Another GPU of the same job that is idle while this one spins, and its process.
pub(super) fn straggler(c: &Ctx, w: u64) -> Option<Culprit> {
    let jobs = JobIndex::of(c.dev);
    c.all
        .devices
        .iter()
        .filter(|d| d.info.index != c.dev.info.index)
        .find_map(|d| {
            let p = d.processes.iter().find(|q| jobs.has_a_rank_with(q, c.dev))?;
            let util = Stats::of(d.samples.last(w).filter_map(|s| s.util_gpu_pct));
            if util.n == 0 || util.median >= 5.0 {
                return None;
            }
            let h = p.host.as_ref();
            let rank = h.and_then(|h| h.job.as_ref()?.rank);
            let cpu = h.and_then(|h| h.cpu_pct);
            let state = h.and_then(|h| h.state);
            let host = match (cpu, state) {
                (Some(cpu), Some(st)) => format!(", its process at {cpu_0} % CPU (state {st})", cpu_0 = fixed(cpu, 0)),
                (Some(cpu), None) => format!(", its process at {cpu_0} % CPU", cpu_0 = fixed(cpu, 0)),
                _ => String::new(),
            };
            Some(Culprit {
                device: d.info.index,
                pid: p.pid,
                rank,
                reason: "idle".into(),
                at_ms: c.now_ms,
                text: format!(
                    "GPU {} ({}pid {}) of the same job is idle (util {} %){host}: the likely straggler the others wait for",
                    d.info.label(), rank_text(rank), p.pid, fixed(util.median, 0)
                ),
            })
        })
}

/// A GPU's processes as `same_job` matches them, indexed: a lookup per other process instead
/// of a comparison with each (4096 processes made the hang rule 290 s of a 300 s replay).
/// Sorted vectors, not hash sets: built once a check, read by binary search.
struct JobIndex<'a> {
    /// Job keys of processes with a job.
    keys: Vec<&'a str>,
    /// Parents (pid > 1) and pids of processes without a job, and of all of them.
    parents_unjobbed: Vec<u32>,
    pids_unjobbed: Vec<u32>,
    parents: Vec<u32>,
    pids: Vec<u32>,
}

fn sorted<T: Ord>(mut v: Vec<T>) -> Vec<T> {
    v.sort_unstable();
    v.dedup();
    v
}

impl<'a> JobIndex<'a> {
    fn of(dev: &'a DeviceHistory) -> Self {
        let (mut keys, mut parents_unjobbed, mut pids_unjobbed, mut parents, mut pids) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for p in &dev.processes {
            let Some(h) = p.host.as_ref() else { continue };
            let parent = h.ppid.filter(|pp| *pp > 1);
            pids.push(p.pid);
            parents.extend(parent);
            if let Some(j) = &h.job {
                keys.push(j.key.as_str());
            } else {
                pids_unjobbed.push(p.pid);
                parents_unjobbed.extend(parent);
            }
        }
        JobIndex {
            keys: sorted(keys),
            parents_unjobbed: sorted(parents_unjobbed),
            pids_unjobbed: sorted(pids_unjobbed),
            parents: sorted(parents),
            pids: sorted(pids),
        }
    }

    /// True when some process of the indexed GPU other than `q` itself is of `q`'s job, as
    /// `same_job` says.
    fn has_a_rank_with(&self, q: &ProcessSample, dev: &DeviceHistory) -> bool {
        let h = q.host.as_ref();
        if self.pids.binary_search(&q.pid).is_ok() {
            // The same process on two GPUs matches itself here: ask the others one by one
            // (rare: one process with contexts on several GPUs).
            return dev.processes.iter().any(|p| {
                p.pid != q.pid
                    && same_job(
                        p,
                        h.and_then(|h| h.job.as_ref()),
                        q.pid,
                        h.and_then(|h| h.ppid),
                    )
            });
        }
        let parent = h.and_then(|h| h.ppid).filter(|pp| *pp > 1);
        let family = |parents: &[u32], pids: &[u32]| {
            parent.is_some_and(|pp| {
                parents.binary_search(&pp).is_ok() || pids.binary_search(&pp).is_ok()
            }) || parents.binary_search(&q.pid).is_ok()
        };
        match h.and_then(|h| h.job.as_ref()) {
            // Two processes with jobs match by key alone; one without a job by family.
            Some(j) => {
                self.keys.binary_search(&j.key.as_str()).is_ok()
                    || family(&self.parents_unjobbed, &self.pids_unjobbed)
            }
            None => family(&self.parents, &self.pids),
        }
    }
}
