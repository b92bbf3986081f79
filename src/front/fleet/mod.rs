//! `gpuwatch fleet`: every host's GPUs in one view, read from the Prometheus that scrapes their
//! `gpuwatch serve`, and the rank a multi-node job waits for. Prometheus is the engine that
//! joins the hosts (docs/deploy/fleet-rules.yml is the same judgement as recording rules); this
//! reads it, with the same queries, and says which host, GPU and rank, and why.

pub mod prom;
pub mod tui;

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::Result;
use serde::Serialize;

use prom::{Client, Series};

/// How far back a rank or a GPU still counts as part of the fleet once its series ended: its
/// process exited, or its host's gpuwatch stopped answering.
pub const SEEN_WITHIN: &str = "10m";

/// One GPU of one host.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct GpuRow {
    pub host: String,
    pub gpu: String,
    pub model: String,
    /// Its series are current; false once its host's gpuwatch stopped answering (stale).
    pub answering: bool,
    /// `busy`, `idle`, `spinning`, `lost`, or "" when unknown.
    pub state: String,
    pub util_pct: Option<f64>,
    pub power_w: Option<f64>,
    pub findings: Vec<FindingRef>,
    /// The ranks on it: (job key, rank).
    pub ranks: Vec<(String, String)>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FindingRef {
    pub finding: String,
    pub severity: String,
}

/// A distributed job across hosts.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Job {
    pub key: String,
    /// Ranks seen within `SEEN_WITHIN`, and how many of them spin now.
    pub ranks: usize,
    pub spinning: usize,
    /// The ranks the others wait for: empty unless most ranks spin.
    pub culprits: Vec<Culprit>,
    /// Joules its ranks' GPUs used since their gpuwatch started (GPUs shared with other jobs
    /// counted whole).
    pub energy_j: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Culprit {
    pub host: String,
    pub gpu: String,
    pub rank: String,
    pub pid: String,
    /// `stale` (its host's gpuwatch stopped answering), `gone` (its process left the GPU),
    /// `idle`, `busy` or `lost` (what its GPU does).
    pub reason: String,
    pub text: String,
}

/// The whole view, as `--json` prints it.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Fleet {
    pub prometheus: String,
    pub gpus: Vec<GpuRow>,
    pub jobs: Vec<Job>,
    /// Time spent waiting for Prometheus to answer this view's queries, ms.
    pub query_ms: f64,
}

/// The queries one view takes, each an instant query.
#[derive(Default)]
pub struct Answers {
    pub seen: Vec<Series>,
    pub up: Vec<Series>,
    pub state: Vec<Series>,
    pub util: Vec<Series>,
    pub power: Vec<Series>,
    pub findings: Vec<Series>,
    pub ranks_seen: Vec<Series>,
    pub ranks_now: Vec<Series>,
    pub energy: Vec<Series>,
}

impl Answers {
    /// Asks Prometheus.
    pub fn ask(c: &mut Client) -> Result<Self> {
        let within = SEEN_WITHIN;
        Ok(Answers {
            seen: c.query(&format!("max_over_time(gpuwatch_up[{within}])"))?,
            up: c.query("gpuwatch_up")?,
            state: c.query("gpuwatch_gpu_state == 1")?,
            util: c.query("gpuwatch_utilization_ratio")?,
            power: c.query("gpuwatch_power_watts")?,
            findings: c.query("gpuwatch_finding_active == 1")?,
            ranks_seen: c.query(&format!(
                "max_over_time(gpuwatch_process_job_info[{within}])"
            ))?,
            ranks_now: c.query("gpuwatch_process_job_info")?,
            energy: c.query("gpuwatch_energy_joules_total")?,
        })
    }
}

/// (host, gpu) of a series.
fn key(s: &Series) -> (String, String) {
    (s.label("Hostname").to_string(), s.label("gpu").to_string())
}

/// The fleet table and its jobs from what Prometheus answered.
#[must_use]
pub fn build(a: &Answers, prometheus: &str) -> Fleet {
    let mut gpus: BTreeMap<(String, String), GpuRow> = BTreeMap::new();
    for s in a.seen.iter().chain(&a.ranks_seen) {
        let (host, gpu) = key(s);
        gpus.entry((host.clone(), gpu.clone()))
            .or_insert_with(|| GpuRow {
                host,
                gpu,
                model: s.label("modelName").to_string(),
                ..GpuRow::default()
            });
    }
    let mut fill = |series: &[Series], f: &mut dyn FnMut(&mut GpuRow, &Series)| {
        for s in series {
            if let Some(row) = gpus.get_mut(&key(s)) {
                f(row, s);
            }
        }
    };
    fill(&a.up, &mut |r, _| r.answering = true);
    fill(&a.state, &mut |r, s| r.state = s.label("state").to_string());
    fill(&a.util, &mut |r, s| {
        r.util_pct = Some(s.value * 100.0).filter(|p| plausible_pct(*p));
    });
    fill(&a.power, &mut |r, s| {
        r.power_w = Some(s.value).filter(|w| (0.0..=MOST_WATTS).contains(w));
    });
    fill(&a.findings, &mut |r, s| {
        r.findings.push(FindingRef {
            finding: s.label("finding").to_string(),
            severity: s.label("severity").to_string(),
        });
    });
    fill(&a.ranks_seen, &mut |r, s| {
        let rank = (s.label("job_key").to_string(), s.label("rank").to_string());
        if !r.ranks.contains(&rank) {
            r.ranks.push(rank);
        }
    });
    for row in gpus.values_mut() {
        // A hang opened at warning and raised to critical has a series for each: keep the worst.
        row.findings
            .sort_by_key(|f| std::cmp::Reverse(severity_rank(&f.severity)));
        row.findings.dedup_by(|a, b| a.finding == b.finding);
    }
    let jobs = jobs(a, &gpus);
    let mut rows: Vec<GpuRow> = gpus.into_values().collect();
    rows.sort_by_key(|r| order(r, &jobs));
    Fleet {
        prometheus: prometheus.to_string(),
        gpus: rows,
        jobs,
        query_ms: 0.0,
    }
}

fn severity_rank(s: &str) -> u8 {
    match s {
        "critical" => 3,
        "warning" => 2,
        "info" => 1,
        _ => 0,
    }
}

/// Rows with a culprit first, then by their worst finding, then grouped by job, then by host.
fn order(r: &GpuRow, jobs: &[Job]) -> (bool, std::cmp::Reverse<u8>, String, String, u32) {
    let culprit = jobs.iter().any(|j| {
        j.culprits
            .iter()
            .any(|c| c.host == r.host && c.gpu == r.gpu)
    });
    let worst = r
        .findings
        .iter()
        .map(|f| severity_rank(&f.severity))
        .max()
        .unwrap_or(0);
    let job = r.ranks.first().map_or(String::new(), |(k, _)| k.clone());
    (
        !culprit,
        std::cmp::Reverse(worst),
        job,
        r.host.clone(),
        r.gpu.parse().unwrap_or(u32::MAX),
    )
}

/// Each job's ranks and, when most of them spin, the ones that do not: the culprits. Lookups
/// go through maps: a 512-GPU fleet scanned pairwise took most of a refresh's CPU.
fn jobs(a: &Answers, gpus: &BTreeMap<(String, String), GpuRow>) -> Vec<Job> {
    let mut by_key: BTreeMap<&str, Vec<&Series>> = BTreeMap::new();
    for s in &a.ranks_seen {
        by_key.entry(s.label("job_key")).or_default().push(s);
    }
    let now: std::collections::HashSet<(&str, &str)> = a
        .ranks_now
        .iter()
        .map(|n| (n.label("job_key"), n.label("rank")))
        .collect();
    let energy: std::collections::HashMap<(&str, &str), f64> = a
        .energy
        .iter()
        .map(|e| ((e.label("Hostname"), e.label("gpu")), e.value))
        .collect();
    by_key
        .into_iter()
        .map(|(job_key, mut ranks)| {
            ranks.sort_by_key(|s| s.label("rank").parse::<u32>().unwrap_or(u32::MAX));
            ranks.dedup_by(|x, y| x.label("rank") == y.label("rank"));
            let present = |s: &Series| now.contains(&(s.label("job_key"), s.label("rank")));
            let gpu_of = |s: &Series| gpus.get(&key(s));
            let spins = |s: &Series| present(s) && gpu_of(s).is_some_and(|g| g.state == "spinning");
            let spinning = ranks.iter().filter(|s| spins(s)).count();
            let culprits = if spinning * 2 > ranks.len() {
                ranks
                    .iter()
                    .filter(|s| !spins(s))
                    .map(|s| culprit(s, present(s), gpu_of(s)))
                    .collect()
            } else {
                Vec::new()
            };
            let on: std::collections::BTreeSet<(&str, &str)> = ranks
                .iter()
                .map(|s| (s.label("Hostname"), s.label("gpu")))
                .collect();
            let energy_j = on
                .iter()
                .filter_map(|k| energy.get(k))
                .fold(None, |acc: Option<f64>, j| Some(acc.unwrap_or(0.0) + j));
            Job {
                key: job_key.to_string(),
                ranks: ranks.len(),
                spinning,
                culprits,
                energy_j,
            }
        })
        .collect()
}

/// Why a rank that does not spin holds the others up.
fn culprit(s: &Series, present: bool, gpu: Option<&GpuRow>) -> Culprit {
    let (host, gpu_id) = key(s);
    let answering = gpu.is_some_and(|g| g.answering);
    let state = gpu.map_or("", |g| g.state.as_str());
    let (reason, why) = match (answering, present, state) {
        (false, _, _) => (
            "stale",
            "its host's gpuwatch stopped answering: the host may be down",
        ),
        (true, false, _) => ("gone", "its process left the GPU: it exited or was killed"),
        (true, true, "lost") => ("lost", "its GPU fell off the bus"),
        (true, true, "busy") => (
            "busy",
            "its GPU computes while the others wait: a straggler",
        ),
        _ => (
            "idle",
            "its GPU idles: the rank is stuck on its host (data, I/O, a deadlock)",
        ),
    };
    let rank = s.label("rank").to_string();
    Culprit {
        text: format!(
            "rank {rank} on {host} GPU {gpu_id} (pid {}): {why}",
            s.label("pid")
        ),
        host,
        gpu: gpu_id,
        pid: s.label("pid").to_string(),
        rank,
        reason: reason.into(),
    }
}

/// One GPU's curves over the last `CURVE_POINTS × CURVE_STEP_S` seconds, from range queries:
/// utilization, power as a share of TDP, SM activity (GPM), each 0–100 with gaps.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Curves {
    pub host: String,
    pub gpu: String,
    pub util: Vec<Option<f64>>,
    pub power: Vec<Option<f64>>,
    pub sm: Vec<Option<f64>>,
}

/// What no GPU draws: a value past it (NaN, -1e308 from an exporter gone wrong) is a gap, not
/// `NaNW` or `-inf%` (helper-39).
const MOST_WATTS: f64 = 100_000.0;

/// A percentage a GPU can show (a power draw may pass its default limit a little).
fn plausible_pct(p: f64) -> bool {
    (0.0..=1000.0).contains(&p)
}

/// 10 minutes at 10 s.
pub const CURVE_POINTS: usize = 60;
pub const CURVE_STEP_S: u64 = 10;

/// Asks Prometheus for GPU `gpu` of `host`'s curves.
pub fn curves(c: &mut Client, host: &str, gpu: &str) -> Result<Curves> {
    let sel = format!(
        "{{Hostname={},gpu={}}}",
        prom::quoted(host),
        prom::quoted(gpu)
    );
    let mut one = |q: String| -> Result<Vec<Option<f64>>> {
        let mut v = c
            .query_range(&q, CURVE_POINTS, CURVE_STEP_S)?
            .into_iter()
            .next()
            .map_or_else(|| vec![None; CURVE_POINTS], |(_, v)| v);
        for x in &mut v {
            *x = x.filter(|p| plausible_pct(*p));
        }
        Ok(v)
    };
    Ok(Curves {
        host: host.to_string(),
        gpu: gpu.to_string(),
        util: one(format!("100 * gpuwatch_utilization_ratio{sel}"))?,
        power: one(format!(
            "100 * gpuwatch_power_watts{sel} / on (Hostname, gpu) gpuwatch_power_limit_default_watts{sel}"
        ))?,
        sm: one(format!("100 * gpuwatch_gpm_sm_active_ratio{sel}"))?,
    })
}

/// Reads the fleet once.
pub fn read(client: &mut Client) -> Result<Fleet> {
    let answers = Answers::ask(client)?;
    let mut fleet = build(&answers, client.base());
    fleet.query_ms = client.take_spent().as_secs_f64() * 1000.0;
    Ok(fleet)
}

/// `gpuwatch fleet --json`: the table and the jobs once.
pub fn print_json(client: &mut Client) -> Result<()> {
    let fleet = read(client)?;
    println!("{}", serde_json::to_string_pretty(&fleet)?);
    Ok(())
}

/// The refresh a view waits between reads unless told otherwise.
pub const REFRESH: Duration = Duration::from_secs(5);

#[cfg(test)]
mod tests {
    use super::*;

    fn series(labels: &[(&str, &str)], value: f64) -> Series {
        Series {
            labels: labels
                .iter()
                .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
                .collect(),
            value,
        }
    }

    /// Four hosts of two GPUs, one job of eight ranks, every rank spinning but rank 7, whose
    /// GPU idles; `silent` hosts stopped answering (their current series are gone).
    fn answers(silent: &[&str], gone_rank: Option<&str>) -> Answers {
        let mut a = Answers::default();
        for h in 0..4 {
            let host = format!("h{h}");
            for g in 0..2 {
                let gpu = g.to_string();
                let rank = (h * 2 + g).to_string();
                let at = [("Hostname", host.as_str()), ("gpu", gpu.as_str())];
                a.seen.push(series(&at, 1.0));
                let job = [
                    ("Hostname", host.as_str()),
                    ("gpu", gpu.as_str()),
                    ("job_key", "j"),
                    ("rank", rank.as_str()),
                    ("pid", "100"),
                ];
                a.ranks_seen.push(series(&job, 1.0));
                if silent.contains(&host.as_str()) {
                    continue;
                }
                a.up.push(series(&at, 1.0));
                a.energy.push(series(&at, 1000.0));
                if gone_rank != Some(rank.as_str()) {
                    a.ranks_now.push(series(&job, 1.0));
                }
                let state = if rank == "7" { "idle" } else { "spinning" };
                let st = [
                    ("Hostname", host.as_str()),
                    ("gpu", gpu.as_str()),
                    ("state", state),
                ];
                a.state.push(series(&st, 1.0));
                if state == "spinning" {
                    let f = [
                        ("Hostname", host.as_str()),
                        ("gpu", gpu.as_str()),
                        ("finding", "hang"),
                        ("severity", "critical"),
                    ];
                    a.findings.push(series(&f, 1.0));
                }
            }
        }
        a
    }

    /// What no GPU can show (NaN, -1e308, a thousand kW from an exporter gone wrong) is a gap
    /// in the table, not `NaNW` or `-inf%` (helper-39); what a GPU can show is kept.
    #[test]
    fn impossible_values_from_prometheus_are_gaps() {
        let mut a = answers(&[], None);
        let s = |h: &str, v: f64| series(&[("Hostname", h), ("gpu", "0")], v);
        a.util = vec![s("h0", f64::NAN), s("h1", -1e308), s("h2", 0.42)];
        a.power = vec![s("h0", f64::NAN), s("h1", 1e9), s("h2", 612.0)];
        let f = build(&a, "http://p");
        let row = |h: &str| f.gpus.iter().find(|g| g.host == h && g.gpu == "0").unwrap();
        for h in ["h0", "h1"] {
            assert_eq!((row(h).util_pct, row(h).power_w), (None, None), "{h}");
        }
        assert_eq!(row("h2").power_w, Some(612.0));
        assert!((row("h2").util_pct.unwrap() - 42.0).abs() < 1e-9);
    }

    #[test]
    fn the_rank_that_does_not_spin_is_named_with_its_host_gpu_and_why() {
        let f = build(&answers(&[], None), "http://p");
        assert_eq!(f.jobs.len(), 1);
        let j = &f.jobs[0];
        assert_eq!((j.ranks, j.spinning), (8, 7));
        assert_eq!(j.culprits.len(), 1);
        let c = &j.culprits[0];
        assert_eq!(
            (c.host.as_str(), c.gpu.as_str(), c.rank.as_str()),
            ("h3", "1", "7")
        );
        assert_eq!(c.reason, "idle");
        assert!((j.energy_j.unwrap() - 8000.0).abs() < 1e-9);
        // The culprit's GPU is the first row, then the hung ones.
        assert_eq!(
            (f.gpus[0].host.as_str(), f.gpus[0].gpu.as_str()),
            ("h3", "1")
        );
        assert_eq!(f.gpus.len(), 8);
    }

    #[test]
    fn a_silent_host_and_a_gone_rank_are_culprits_with_their_reasons() {
        let reasons = |f: &Fleet| -> Vec<(String, String)> {
            f.jobs[0]
                .culprits
                .iter()
                .map(|c| (c.rank.clone(), c.reason.clone()))
                .collect()
        };
        let pairs = |v: &[(&str, &str)]| -> Vec<(String, String)> {
            v.iter()
                .map(|(a, b)| ((*a).to_string(), (*b).to_string()))
                .collect()
        };
        let silent = build(&answers(&["h1"], None), "http://p");
        assert_eq!(
            reasons(&silent),
            pairs(&[("2", "stale"), ("3", "stale"), ("7", "idle")])
        );
        assert!(
            !silent
                .gpus
                .iter()
                .find(|g| g.host == "h1")
                .unwrap()
                .answering
        );
        let gone = build(&answers(&[], Some("5")), "http://p");
        assert_eq!(reasons(&gone), pairs(&[("5", "gone"), ("7", "idle")]));
        // Half the ranks silent or gone: not "most spin", so nobody is named.
        let half = build(&answers(&["h1"], Some("5")), "http://p");
        assert!(half.jobs[0].culprits.is_empty());
    }

    #[test]
    fn a_job_where_most_ranks_work_has_no_culprit() {
        let mut a = answers(&[], None);
        for s in &mut a.state {
            s.labels.insert("state".into(), "busy".into());
        }
        let f = build(&a, "http://p");
        assert!(f.jobs[0].culprits.is_empty());
        assert_eq!(f.jobs[0].spinning, 0);
    }
}
