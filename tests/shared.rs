//! The `shared` rule on a real H200 recording (tests/fixtures/h200-shared/README.md): two jobs
//! on one GPU and two ranks of one job on one GPU raise it, within its window of the second
//! process's start; one trainer alone, a trainer beside a light probe, and two hung ranks
//! spinning at the idle floor do not; without per-process utilization it says nothing.

mod common;

use std::path::Path;

use gpuwatch::config::Thresholds;
use gpuwatch::model::{DeviceInfo, Tick};
use gpuwatch::rules::{Finding, Severity};
use gpuwatch::source::replay::ReplaySource;
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
