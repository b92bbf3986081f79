//! Criterion benches of the hot paths: a sampler tick on the simulated source, history push and
//! window queries, replay parsing, evaluating every rule over 15 minutes of 8 GPUs, and one
//! `/metrics` answer at 8 and 64 GPUs.

use std::hint::black_box;
use std::path::Path;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use gpuwatch::config::Thresholds;
use gpuwatch::format::record::{Header, Recorder};
use gpuwatch::history::History;
use gpuwatch::model::Tick;
use gpuwatch::rules::Engine;
use gpuwatch::sampler::Sampler;
use gpuwatch::source::replay::ReplaySource;
use gpuwatch::source::sim::{Scenario, SimSource};
use gpuwatch::source::Source;

const START: u64 = 1_800_000_000_000;

fn ticks(gpus: usize, seconds: u64) -> (Vec<gpuwatch::model::DeviceInfo>, Vec<Tick>) {
    let mut src = SimSource::new(Scenario::Mixed, gpus, 7, START, 250);
    let mut t = Tick::default();
    let v = (0..seconds * 4)
        .map(|_| {
            src.sample(&mut t).unwrap();
            t.clone()
        })
        .collect();
    (src.devices().to_vec(), v)
}

fn full_history(gpus: usize) -> History {
    let (infos, ticks) = ticks(gpus, 15 * 60);
    let mut h = History::new(&infos, 3600);
    for t in &ticks {
        h.push(t);
    }
    h
}

fn bench_sampler(c: &mut Criterion) {
    for gpus in [1usize, 8, 64] {
        let mut s = Sampler::new(Box::new(SimSource::new(
            Scenario::Mixed,
            gpus,
            7,
            START,
            250,
        )));
        c.bench_function(&format!("sampler_tick_sim_{gpus}gpu"), |b| {
            b.iter(|| black_box(s.step().unwrap()));
        });
    }
}

fn bench_history(c: &mut Criterion) {
    let (infos, ticks) = ticks(8, 60);
    let mut h = full_history(8);
    let mut i = 0;
    c.bench_function("history_push_8gpu_full", |b| {
        b.iter(|| {
            let mut t = ticks[i % ticks.len()].clone();
            t.t_ms = START + 10_000_000 + i as u64 * 250;
            h.push(black_box(&t));
            i += 1;
        });
    });
    let h = full_history(8);
    let latest = h.latest_ms().unwrap();
    c.bench_function("history_window_30s_of_15min", |b| {
        b.iter(|| {
            black_box(
                h.devices[3]
                    .samples
                    .window(latest - 30_000, latest)
                    .filter_map(|s| s.power_w)
                    .sum::<f32>(),
            )
        });
    });
    c.bench_function("history_window_15min_all", |b| {
        b.iter(|| black_box(h.devices[3].samples.last(900_000).count()));
    });
    let _ = infos;
}

fn bench_rules(c: &mut Criterion) {
    let h = full_history(8);
    c.bench_function("rules_all_8gpu_15min", |b| {
        b.iter_batched_ref(
            || Engine::new(Thresholds::default()),
            |e| e.evaluate(black_box(&h)),
            BatchSize::SmallInput,
        );
    });
    let mut warm = Engine::new(Thresholds::default());
    warm.evaluate(&h);
    c.bench_function("rules_all_8gpu_15min_steady", |b| {
        b.iter(|| warm.evaluate(black_box(&h)));
    });
}

fn bench_replay(c: &mut Criterion) {
    let dir = std::env::temp_dir().join(format!("gpuwatch-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("rec.jsonl");
    let (infos, ticks) = ticks(8, 60);
    let mut rec = Recorder::create(
        &path,
        &Header::new(&gpuwatch::model::SystemInfo::default(), &infos, 250),
        true,
    )
    .unwrap();
    for t in &ticks {
        rec.write(t).unwrap();
    }
    drop(rec);
    c.bench_function("replay_parse_8gpu_240_ticks", |b| {
        b.iter(|| {
            black_box(
                ReplaySource::open(Path::new(&path), f64::INFINITY)
                    .unwrap()
                    .read_all()
                    .unwrap()
                    .len(),
            )
        });
    });
    let _ = std::fs::remove_dir_all(&dir);
}

/// One `/metrics` answer of `gpuwatch serve`: what a scrape costs (the view is already caught
/// up; a scrape copies a few samples from the store first, `store_catch_up_*` in the render bench).
fn bench_scrape(c: &mut Criterion) {
    for gpus in [8, 64] {
        let (infos, ticks) = ticks(gpus, 120);
        let src = SimSource::new(Scenario::Mixed, gpus, 7, START, 250);
        let mut store = gpuwatch::store::Store::new(
            &src,
            std::time::Duration::from_secs(900),
            Thresholds::default(),
        )
        .unwrap();
        assert_eq!(infos.len(), gpus);
        for t in &ticks {
            store.absorb(t, gpuwatch::model::SelfCost::default());
        }
        let view = &store;
        let extras = gpuwatch::serve::Extras {
            processes: 4,
            dcgm: true,
        };
        c.bench_function(&format!("scrape_metrics_{gpus}gpu"), |b| {
            b.iter(|| {
                black_box(
                    gpuwatch::serve::metrics_text(view, "node", false)
                        .unwrap()
                        .len(),
                )
            });
        });
        // What a scrape that takes gzip adds, once a tick (Prometheus asks for it).
        let body = gpuwatch::serve::metrics_text(view, "node", false).unwrap();
        c.bench_function(&format!("gzip_metrics_{gpus}gpu"), |b| {
            b.iter(|| black_box(gpuwatch::serve::gzip(body.as_bytes()).len()));
        });
        c.bench_function(&format!("scrape_metrics_{gpus}gpu_processes_dcgm"), |b| {
            b.iter(|| {
                black_box(
                    gpuwatch::serve::metrics_text_with(view, "node", false, extras)
                        .unwrap()
                        .len(),
                )
            });
        });
    }
}

criterion_group!(
    benches,
    bench_sampler,
    bench_history,
    bench_rules,
    bench_replay,
    bench_scrape
);
criterion_main!(benches);
