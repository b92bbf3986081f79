//! The `shared` rule on a real H200 recording (tests/fixtures/h200-shared/README.md): two jobs
//! on one GPU and two ranks of one job on one GPU raise it, within its window of the second
//! process's start; one trainer alone, a trainer beside a light probe, and two hung ranks
//! spinning at the idle floor do not; without per-process utilization it says nothing. Then
//! each condition of the rule, on its own scenario, by a case that fails without it.

mod common;

use std::path::Path;

use gpuwatch::config::Thresholds;
use gpuwatch::model::{DeviceInfo, DeviceStatus, JobInfo, ProcessSample, Tick};
use gpuwatch::rules::{Finding, RuleId, Severity};
use gpuwatch::source::replay::ReplaySource;
use gpuwatch::source::sim::Scenario;
use gpuwatch::source::Source;
use serde::Deserialize;

#[derive(Deserialize)]
struct Span {
    name: String,
    start: f64,
    end: f64,
}

fn fixture() -> (Vec<DeviceInfo>, Vec<Tick>, Vec<Span>) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/h200-shared");
    let mut src = ReplaySource::open(&dir.join("rec.jsonl.gz"), f64::INFINITY).unwrap();
    let ticks = src.read_all().unwrap();
    let spans =
        serde_json::from_str(&std::fs::read_to_string(dir.join("spans.json")).unwrap()).unwrap();
    (src.devices().to_vec(), ticks, spans)
}

/// The phase a finding opened in.
fn phase_of<'a>(spans: &'a [Span], f: &Finding) -> &'a str {
    let t = f.opened_ms as f64 / 1000.0;
    spans
        .iter()
        .find(|s| (s.start..s.end).contains(&t))
        .map_or("outside", |s| s.name.as_str())
}

/// When the later of a phase's two processes was first on the GPU (ms).
fn second_process_ms(ticks: &[Tick], span: &Span) -> u64 {
    ticks
        .iter()
        .filter(|t| (span.start..span.end).contains(&(t.t_ms as f64 / 1000.0)))
        .find(|t| t.devices[0].processes.len() >= 2)
        .expect("two processes in the phase")
        .t_ms
}

#[test]
fn two_jobs_and_two_ranks_on_one_gpu_raise_it_and_nothing_else_does() {
    let (infos, ticks, spans) = fixture();
    let found = common::run(&infos, &ticks, Thresholds::default()).raised;
    let shared: Vec<&Finding> = found.iter().filter(|f| f.rule == "shared").collect();
    let phases: Vec<&str> = shared.iter().map(|f| phase_of(&spans, f)).collect();
    assert_eq!(phases, ["jobs", "ranks"], "{shared:#?}");
    for (f, pids, first_cause) in [
        (shared[0], [1105, 1106], "A second job"),
        (shared[1], [1198, 1199], "Ranks of one job (torchelastic:"),
    ] {
        assert_eq!(f.severity, Severity::Warning);
        let mut got = f.pids.clone();
        got.sort_unstable();
        assert_eq!(got, pids);
        assert!(f.causes[0].starts_with(first_cause), "{:?}", f.causes);
        // Within its 30 s window (plus a judging and a tick) of the second process's start.
        let span = spans
            .iter()
            .find(|s| s.name == phase_of(&spans, f))
            .unwrap();
        let onset = f.opened_ms - second_process_ms(&ticks, span);
        assert!(
            (25_000..=31_000).contains(&onset),
            "opened {onset} ms after"
        );
    }
    // The two spinning processes are a hang's, which is found; nothing else opened.
    let others: Vec<_> = found
        .iter()
        .filter(|f| f.rule != "shared")
        .map(|f| (f.rule.as_str(), phase_of(&spans, f)))
        .collect();
    assert_eq!(others, [("hang", "spin")]);
}

#[test]
fn without_per_process_utilization_it_stays_silent() {
    let (infos, mut ticks, _) = fixture();
    for p in ticks.iter_mut().flat_map(|t| &mut t.devices[0].processes) {
        p.sm_pct = None;
    }
    let found = common::run(&infos, &ticks, Thresholds::default()).raised;
    assert!(found.iter().all(|f| f.rule != "shared"), "{found:#?}");
}

// The branches the recording does not tell apart, on the rule's own scenario (`--demo
// shared`: two ranks at about 48 % SM each, util 100 %, power high): each test changes one
// reading and would pass if the condition it names were dropped or loosened.

const SECONDS: u64 = 90;

/// The scenario on `gpus` GPUs, every one shared.
fn demo(gpus: usize) -> (Vec<DeviceInfo>, Vec<Tick>) {
    common::sim_ticks(
        Scenario::Rule(RuleId::Shared),
        gpus,
        SECONDS,
        common::START_MS,
    )
}

/// Seconds since the recording's start.
fn at_s(t: &Tick) -> u64 {
    (t.t_ms - common::START_MS) / 1000
}

fn shared_on(run: &[Finding], gpu: u32) -> Vec<&Finding> {
    run.iter()
        .filter(|f| f.rule == "shared" && f.device == gpu)
        .collect()
}

#[test]
fn the_scenario_raises_it_once_per_gpu_and_names_no_free_gpu() {
    let (infos, ticks) = demo(2);
    let run = common::run(&infos, &ticks, Thresholds::default());
    for gpu in 0..2 {
        let found = shared_on(&run.raised, gpu);
        assert_eq!(found.len(), 1, "GPU {gpu}: {found:#?}");
        assert!(
            !found[0].evidence.iter().any(|e| e.contains("no process")),
            "{found:#?}"
        );
    }
}

#[test]
fn a_gpu_with_no_process_beside_it_is_named_as_free() {
    let (infos, mut ticks) = demo(2);
    for t in &mut ticks {
        t.devices[1].processes.clear();
    }
    let found = common::run(&infos, &ticks, Thresholds::default()).raised;
    let on0 = shared_on(&found, 0);
    assert_eq!(on0.len(), 1, "{found:#?}");
    assert!(
        on0[0].evidence.iter().any(|e| e == "GPU 1 has no process"),
        "{:?}",
        on0[0].evidence
    );
    assert!(shared_on(&found, 1).is_empty());
}

#[test]
fn a_gpu_that_stopped_answering_is_not_named_as_free() {
    let (infos, mut ticks) = demo(2);
    for t in &mut ticks {
        t.devices[1].processes.clear();
        t.devices[1].status = DeviceStatus::Lost {
            reason: "GPU is lost".into(),
        };
    }
    let found = common::run(&infos, &ticks, Thresholds::default()).raised;
    let on0 = shared_on(&found, 0);
    assert_eq!(on0.len(), 1, "{found:#?}");
    assert!(
        !on0[0].evidence.iter().any(|e| e.contains("no process")),
        "{:?}",
        on0[0].evidence
    );
}

/// The demo's second rank's job, to be changed.
fn job_of(p: &mut ProcessSample) -> &mut JobInfo {
    p.host.as_mut().and_then(|h| h.job.as_mut()).unwrap()
}

/// A third process beside the demo's two: a copy of the second with its own pid, changed.
fn third(ps: &mut Vec<ProcessSample>, change: fn(&mut JobInfo)) {
    let mut p = ps[1].clone();
    p.pid += 100;
    change(job_of(&mut p));
    ps.push(p);
}

#[test]
fn one_job_key_is_called_ranks_of_one_job_only_where_each_has_its_own_rank() {
    // The demo's ranks 0 and 1 are one job's. Two torchrun jobs left on the default rendezvous
    // id share a key, each rank 0; two steps of one Slurm job share one without ranks.
    type Edit = fn(&mut Vec<ProcessSample>);
    let ranks = "Ranks of one job (torchelastic:";
    let jobs = "A second job";
    let cases: [(&str, Edit, &str); 9] = [
        ("as in the demo", |_| {}, ranks),
        ("both rank 0", |ps| job_of(&mut ps[1]).rank = Some(0), jobs),
        (
            "the second without a rank",
            |ps| job_of(&mut ps[1]).rank = None,
            jobs,
        ),
        (
            "the second of another job",
            |ps| job_of(&mut ps[1]).key = "slurm:9".into(),
            jobs,
        ),
        (
            "the second of no job",
            |ps| ps[1].host.as_mut().unwrap().job = None,
            jobs,
        ),
        ("the first unknown to /proc", |ps| ps[0].host = None, jobs),
        (
            "a third, rank 2",
            |ps| third(ps, |j| j.rank = Some(2)),
            ranks,
        ),
        ("a third, rank 1 again", |ps| third(ps, |_| {}), jobs),
        (
            "a third, rank 2 of another job",
            |ps| third(ps, |j| (j.rank, j.key) = (Some(2), "x:1".into())),
            jobs,
        ),
    ];
    for (case, edit, first_cause) in cases {
        let (infos, mut ticks) = demo(1);
        for t in &mut ticks {
            edit(&mut t.devices[0].processes);
        }
        let found = common::run(&infos, &ticks, Thresholds::default()).raised;
        let on0 = shared_on(&found, 0);
        assert_eq!(on0.len(), 1, "{case}: {found:#?}");
        assert!(
            on0[0].causes[0].starts_with(first_cause),
            "{case}: {:?}",
            on0[0].causes
        );
    }
}

#[test]
fn below_its_utilization_threshold_they_hardly_wait_and_it_stays_silent() {
    for (util, raised) in [(75.0, 0), (85.0, 1)] {
        let (infos, mut ticks) = demo(1);
        for t in &mut ticks {
            t.devices[0].sample.util_gpu_pct = Some(util);
        }
        let found = common::run(&infos, &ticks, Thresholds::default()).raised;
        assert_eq!(
            shared_on(&found, 0).len(),
            raised,
            "util {util}: {found:#?}"
        );
    }
}

#[test]
fn a_process_that_stopped_computing_halfway_through_the_window_is_not_sharing() {
    // The second rank computes for 20 s, then idles on the GPU: in no 30 s window is it
    // busy in both halves.
    let (infos, mut ticks) = demo(1);
    let second = ticks[0].devices[0].processes[1].pid;
    for t in ticks.iter_mut().filter(|t| at_s(t) >= 20) {
        let p = t.devices[0].processes.iter_mut().find(|p| p.pid == second);
        p.unwrap().sm_pct = Some(0.0);
    }
    let found = common::run(&infos, &ticks, Thresholds::default()).raised;
    assert!(shared_on(&found, 0).is_empty(), "{found:#?}");
}

#[test]
fn missing_per_process_readings_are_gaps_not_zeros() {
    // NVML answered two seconds in three without a figure for the processes.
    let (infos, mut ticks) = demo(1);
    for t in ticks.iter_mut().filter(|t| !at_s(t).is_multiple_of(3)) {
        for p in &mut t.devices[0].processes {
            p.sm_pct = None;
        }
    }
    let found = common::run(&infos, &ticks, Thresholds::default()).raised;
    assert_eq!(shared_on(&found, 0).len(), 1, "{found:#?}");
}

#[test]
fn a_process_list_missing_for_two_seconds_does_not_close_it() {
    let (infos, mut ticks) = demo(1);
    for t in ticks.iter_mut().filter(|t| (60..62).contains(&at_s(t))) {
        t.devices[0].processes.clear();
    }
    let run = common::run(&infos, &ticks, Thresholds::default());
    assert_eq!(shared_on(&run.raised, 0).len(), 1, "{:#?}", run.raised);
    assert!(run
        .engine
        .conclusions()
        .active()
        .iter()
        .any(|f| f.rule == "shared"));
}

#[test]
fn an_open_finding_holds_through_a_dip_and_closes_when_sharing_clearly_ends() {
    // Opened by 31 s; from 50 s on, util or each rank's SM falls below its threshold
    // (80 %, 10 %) but within the hysteresis (70 % of it), or clearly under it.
    for (util, sm, open_at_end) in [
        (Some(70.0), None, true),
        (None, Some(8.0), true),
        (Some(50.0), None, false),
        (None, Some(5.0), false),
    ] {
        let (infos, mut ticks) = demo(1);
        for t in ticks.iter_mut().filter(|t| at_s(t) >= 50) {
            let d = &mut t.devices[0];
            d.sample.util_gpu_pct = util.or(d.sample.util_gpu_pct);
            for p in &mut d.processes {
                p.sm_pct = sm.or(p.sm_pct);
            }
        }
        let run = common::run(&infos, &ticks, Thresholds::default());
        assert_eq!(shared_on(&run.raised, 0).len(), 1, "{:#?}", run.raised);
        let active = run
            .engine
            .conclusions()
            .active()
            .iter()
            .any(|f| f.rule == "shared");
        assert_eq!(active, open_at_end, "util {util:?}, SM {sm:?}");
    }
}
