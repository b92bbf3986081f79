//! The real H200 recording (gpuwatch's own `record` on an H200 while the shared labelled
//! workloads ran; see tests/fixtures/h200/README.md), replayed: each phase shows the measured
//! values, and the rules give each labelled phase its expected finding and the healthy ones none.

mod common;

use std::path::Path;

use gpuwatch::config::Thresholds;
use gpuwatch::model::Tick;
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

fn fixture() -> (ReplaySource, Vec<Tick>, Vec<Span>) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/h200");
    let mut src = ReplaySource::open(&dir.join("phases.jsonl.gz"), f64::INFINITY).unwrap();
    let ticks = src.read_all().unwrap();
    let spans =
        serde_json::from_str(&std::fs::read_to_string(dir.join("spans.json")).unwrap()).unwrap();
    (src, ticks, spans)
}

fn ms(s: f64) -> u64 {
    (s * 1000.0) as u64
}

fn median(mut v: Vec<f32>) -> f32 {
    v.sort_by(f32::total_cmp);
    v[v.len() / 2]
}

/// Ground truth: shared/notes/h200-ground-truth.md (medians per phase): util, power W, GPM SM %.
const TRUTH: [(&str, f32, f32, f32); 7] = [
    ("idle", 0.0, 121.0, 0.0),
    ("matmul", 99.0, 692.0, 96.0),
    ("starved_loader", 7.5, 176.0, 6.5),
    ("spin_hang", 100.0, 122.0, 0.8),
    ("sync_small_kernels", 24.0, 122.0, 0.0),
    ("membw_copy", 99.0, 472.0, 98.0),
    ("idle_mem_held", 0.0, 122.0, 0.0),
];

#[test]
fn replayed_phases_match_the_ground_truth_table() {
    let (src, ticks, spans) = fixture();
    assert_eq!(src.devices()[0].name, "NVIDIA H200");
    assert_eq!(src.devices()[0].power_limit_default_w, Some(700.0));
    assert!(src.devices()[0].gpm_supported);
    for (name, util, power, sm) in TRUTH {
        let span = spans.iter().find(|s| s.name == name).unwrap();
        // Skip the first 2 s of each phase: slow metrics (GPM, 1 s cadence) lag behind.
        let inside: Vec<_> = ticks
            .iter()
            .filter(|t| t.t_ms >= ms(span.start) + 2000 && t.t_ms <= ms(span.end))
            .map(|t| &t.devices[0].sample)
            .collect();
        assert!(inside.len() > 60, "{name}: {} samples", inside.len());
        let m_util = median(inside.iter().filter_map(|s| s.util_gpu_pct).collect());
        let m_power = median(inside.iter().filter_map(|s| s.power_w).collect());
        let m_sm = median(inside.iter().filter_map(|s| s.gpm.sm_active_pct).collect());
        // Within reason: starvation depends on the host's speed, so it gets a wider band.
        let util_tol = if name == "starved_loader" { 10.0 } else { 3.0 };
        assert!(
            (m_util - util).abs() <= util_tol,
            "{name}: util {m_util} vs {util}"
        );
        assert!(
            (m_power - power).abs() <= power * 0.05 + 3.0,
            "{name}: power {m_power} vs {power}"
        );
        assert!((m_sm - sm).abs() <= util_tol, "{name}: SM {m_sm} vs {sm}");
        let energy = median(inside.iter().filter_map(|s| s.energy_power_w).collect());
        assert!(
            (energy - m_power).abs() <= m_power * 0.1,
            "{name}: energy-mean power {energy} vs {m_power}"
        );
    }
}

/// What each labelled phase must raise. The first `idle_mem_held` lasts 24 s, shorter than the
/// idle-mem window (2 min), so only the long one (132 s) is expected to raise it.
const EXPECTED: [(&str, Option<&str>); 8] = [
    ("idle", None),
    ("matmul", None),
    ("starved_loader", Some("starved")),
    ("spin_hang", Some("hang")),
    ("sync_small_kernels", Some("sync")),
    ("membw_copy", None),
    ("idle_mem_held", None),
    ("idle_mem_held_long", Some("idle-mem")),
];

fn raised_within(findings: &[Finding], span: &Span) -> Vec<String> {
    findings
        .iter()
        .filter(|f| f.opened_ms >= ms(span.start) && f.opened_ms <= ms(span.end))
        .map(|f| f.rule.clone())
        .collect()
}

#[test]
fn replayed_h200_phases_get_their_expected_findings_and_healthy_phases_none() {
    let (src, ticks, spans) = fixture();
    let r = common::run(src.devices(), &ticks, Thresholds::default());
    for (name, want) in EXPECTED {
        let span = spans.iter().find(|s| s.name == name).unwrap();
        let got = raised_within(&r.raised, span);
        match want {
            Some(rule) => assert_eq!(got, vec![rule.to_string()], "{name}: raised {got:?}"),
            None => assert!(
                got.is_empty(),
                "{name} should raise nothing, raised {got:?}"
            ),
        }
    }
    let hang = r.raised.iter().find(|f| f.rule == "hang").unwrap();
    let span = spans.iter().find(|s| s.name == "spin_hang").unwrap();
    let onset = hang.opened_ms - ms(span.start);
    let t = Thresholds::default();
    assert!(
        onset <= (t.engine.startup_grace + t.hang.suspect_window).as_millis() as u64 + 1_000,
        "hang onset {onset} ms after the phase began"
    );
    // The phase lasts less than the confirmation window: a suspected hang, a warning.
    let phase_ms = ms(span.end) - ms(span.start);
    let want = if phase_ms >= t.hang.window.as_millis() as u64 {
        Severity::Critical
    } else {
        Severity::Warning
    };
    let last = r
        .engine
        .conclusions()
        .cleared()
        .iter()
        .chain(r.engine.conclusions().active())
        .find(|f| f.rule == "hang" && f.opened_ms == hang.opened_ms)
        .expect("the hang's final state");
    assert_eq!(last.severity, want, "phase of {phase_ms} ms");
    assert!(
        hang.evidence
            .iter()
            .any(|e| e.contains("SM activity 0.8 %")),
        "{:?}",
        hang.evidence
    );
    let starved = r.raised.iter().find(|f| f.rule == "starved").unwrap();
    assert!(
        starved
            .evidence
            .iter()
            .any(|e| e.contains("no worker processes")),
        "{:?}",
        starved.evidence
    );
}
