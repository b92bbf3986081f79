//! A full frame at 200×50 for 1, 8 and 64 simulated GPUs, drawn into ratatui's TestBackend.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use gpuwatch::app::AppState;
use gpuwatch::config::Thresholds;
use gpuwatch::model::Tick;
use gpuwatch::rules::Engine;
use gpuwatch::sampler::Observed;
use gpuwatch::source::sim::{Scenario, SimSource};
use gpuwatch::source::Source;
use ratatui::backend::TestBackend;
use ratatui::Terminal;

fn observed(gpus: usize) -> Observed {
    let mut src = SimSource::new(Scenario::Mixed, gpus, 7, 1_800_000_000_000, 250);
    let mut obs = Observed::new(&src, 250, 3600, Engine::new(Thresholds::default()));
    let mut t = Tick::default();
    for _ in 0..15 * 60 * 4 {
        src.sample(&mut t).unwrap();
        obs.absorb(&t, Default::default());
    }
    obs
}

fn bench_frames(c: &mut Criterion) {
    for gpus in [1usize, 8, 64] {
        let obs = observed(gpus);
        let mut term = Terminal::new(TestBackend::new(200, 50)).unwrap();
        let mut state = AppState::new(true);
        state.selected_gpu = 4.min(gpus - 1);
        c.bench_function(&format!("render_frame_200x50_{gpus}gpu"), |b| {
            b.iter(|| {
                term.draw(|f| {
                    black_box(gpuwatch::ui::render(f, &state, &obs));
                })
                .unwrap();
            })
        });
        state.zoom = gpuwatch::app::ZOOMS_S.len();
        c.bench_function(&format!("render_frame_200x50_{gpus}gpu_15min_zoom"), |b| {
            b.iter(|| {
                term.draw(|f| {
                    black_box(gpuwatch::ui::render(f, &state, &obs));
                })
                .unwrap();
            })
        });
    }
}

criterion_group!(benches, bench_frames);
criterion_main!(benches);
