//! Real recordings of workloads the rules were not tuned on (made by gpuwatch on the lent H200s;
//! tests/fixtures/h200/README.md), replayed through the rules: each gets its expected finding,
//! and the healthy ones none. docs/validation.md has the table.

mod common;

use std::path::Path;

use gpuwatch::config::Thresholds;
use gpuwatch::model::{GpmMetrics, Tick};
use gpuwatch::source::replay::ReplaySource;
use gpuwatch::source::Source;

fn load(rel: &str) -> (Vec<gpuwatch::model::DeviceInfo>, Vec<Tick>) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(rel);
    let mut src = ReplaySource::open(&path, f64::INFINITY).unwrap();
    let ticks = src.read_all().unwrap();
    (src.devices().to_vec(), ticks)
}

fn span(rel: &str, name: &str) -> (u64, u64) {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures")
            .join(rel),
    )
    .unwrap();
    let spans: Vec<serde_json::Value> = serde_json::from_str(&text).unwrap();
    let s = spans.iter().find(|s| s["name"] == name).unwrap();
    (
        (s["start"].as_f64().unwrap() * 1000.0) as u64,
        (s["end"].as_f64().unwrap() * 1000.0) as u64,
    )
}

/// Rules raised while the workload ran, with seconds from its start to the finding.
fn raised(name: &str, ticks_fn: impl Fn(Vec<Tick>) -> Vec<Tick>) -> Vec<(String, u32, u64)> {
    let (infos, ticks) = load(&format!("h200/variants/{name}.jsonl.gz"));
    let (start, end) = span("h200/variants/spans.json", name);
    let r = common::run(&infos, &ticks_fn(ticks), Thresholds::default());
    r.raised
        .into_iter()
        .filter(|f| f.opened_ms >= start && f.opened_ms <= end + 5_000)
        .map(|f| (f.rule, f.device, (f.opened_ms - start) / 1000))
        .collect()
}

fn rules(v: &[(String, u32, u64)]) -> Vec<&str> {
    v.iter().map(|(r, _, _)| r.as_str()).collect()
}

#[test]
fn torch_dataloader_with_num_workers_0_and_slow_getitem_is_starved() {
    // `dataloader_rerun`: the same workload run again live, later, with the current rules.
    for name in ["dataloader", "dataloader_rerun"] {
        let got = raised(name, |t| t);
        assert_eq!(rules(&got), vec!["starved"], "{name}: {got:?}");
        assert!(
            got[0].2 <= 25,
            "{name}: diagnosed {} s after the start",
            got[0].2
        );
    }
}

#[test]
fn small_batch_training_with_item_every_step_is_launch_bound() {
    let got = raised("launch_bound", |t| t);
    assert_eq!(rules(&got), vec!["sync"], "{got:?}");
}

#[test]
fn a_spinning_kernel_is_a_hang() {
    let got = raised("spin", |t| t);
    assert_eq!(rules(&got), vec!["hang"], "{got:?}");
    assert!(got[0].2 <= 31);
}

#[test]
fn healthy_jobs_raise_nothing_but_the_fp32_hint_of_the_fp32_product() {
    for name in [
        "healthy_below_cap",
        "dataloader_fixed",
        "transformer_inference",
    ] {
        let got = raised(name, |t| t);
        // `healthy_below_cap` is an FP32 product with TF32 off (docs/workloads/variants.py),
        // recorded before the `fp32` rule existed: no fault, and the info that tensor cores
        // would do it several times faster, once its window (20 s) has run.
        let want: &[&str] = if name == "healthy_below_cap" {
            &["fp32"]
        } else {
            &[]
        };
        assert_eq!(rules(&got), want, "{name}: {got:?}");
        assert!(got.iter().all(|(_, _, after)| *after >= 20), "{got:?}");
    }
}

fn without_gpm(mut ticks: Vec<Tick>) -> Vec<Tick> {
    for t in &mut ticks {
        for d in &mut t.devices {
            d.sample.gpm = GpmMetrics::default();
        }
    }
    ticks
}

#[test]
fn without_gpm_the_fallbacks_still_tell_the_real_workloads_apart() {
    assert_eq!(rules(&raised("dataloader", without_gpm)), vec!["starved"]);
    assert_eq!(
        rules(&raised("dataloader_rerun", without_gpm)),
        vec!["starved"]
    );
    assert_eq!(rules(&raised("launch_bound", without_gpm)), vec!["sync"]);
    assert_eq!(rules(&raised("spin", without_gpm)), vec!["hang"]);
    for name in [
        "healthy_below_cap",
        "dataloader_fixed",
        "transformer_inference",
    ] {
        assert!(raised(name, without_gpm).is_empty(), "{name} without GPM");
    }
}

#[test]
fn a_real_nccl_hang_on_two_h200s_names_the_stalled_rank() {
    let (infos, ticks) = load("h200x2/nccl_hang.jsonl.gz");
    let (stall, _) = span("h200x2/spans.json", "nccl_hang");
    let (warm, _) = span("h200x2/spans.json", "nccl_warmup");
    let r = common::run(&infos, &ticks, Thresholds::default());
    let hangs: Vec<_> = r.raised.iter().filter(|f| f.rule == "hang").collect();
    assert_eq!(hangs.len(), 1, "{:?}", r.raised);
    let hang = hangs[0];
    assert_eq!(hang.device, 0, "the waiting rank's GPU");
    assert!(
        hang.opened_ms > stall && hang.opened_ms - stall <= 31_000,
        "onset {} ms",
        hang.opened_ms - stall
    );
    assert!(
        hang.evidence
            .iter()
            .any(|e| e.starts_with("GPU 1 (pid 614) of the same job is idle")),
        "{:?}",
        hang.evidence
    );
    // A real collective keeps more warps busy than one spinning kernel: 18 % SM here.
    assert!(
        hang.evidence.iter().any(|e| e.contains("SM activity 18.")),
        "{:?}",
        hang.evidence
    );
    assert!(
        r.raised.iter().all(|f| f.opened_ms >= stall),
        "nothing during healthy all-reduce training (from {warm})"
    );
}
