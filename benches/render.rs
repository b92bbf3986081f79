//! A full frame at 200×50 for 1, 8 and 64 simulated GPUs, drawn as the monitor draws (`Screen`)
//! into ratatui's `TestBackend`
//! (the screen holds the store's lock for as long); what pausing costs (one copy of the store),
//! and what the sampling thread holds the lock for (one tick taken in).

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use gpuwatch::app::AppState;
use gpuwatch::config::Thresholds;
use gpuwatch::model::Tick;
use gpuwatch::source::sim::{Scenario, SimSource};
use gpuwatch::source::Source;
use gpuwatch::store::Store;
use gpuwatch::tui::Screen;
use ratatui::backend::TestBackend;
use ratatui::Terminal;

fn observed(gpus: usize) -> Store {
    filled(gpus).0
}

/// A store with 15 minutes of the mixed demo on `gpus` GPUs, and the source to go on with.
fn filled(gpus: usize) -> (Store, SimSource) {
    let mut src = SimSource::new(Scenario::Mixed, gpus, 7, 1_800_000_000_000, 250);
    let mut store = Store::new(
        &src,
        std::time::Duration::from_secs(900),
        Thresholds::default(),
    )
    .unwrap();
    let mut t = Tick::default();
    for _ in 0..15 * 60 * 4 {
        src.sample(&mut t).unwrap();
        store.absorb(&t, gpuwatch::model::SelfCost::default());
    }
    (store, src)
}

/// What pausing the screen of live GPUs costs: one copy of the store (its history, findings
/// and the rest), kept while paused; and what the sampling thread holds the lock for, taking
/// one tick in.
fn bench_pause_copy(c: &mut Criterion) {
    for gpus in [8usize, 64] {
        let (mut store, mut src) = filled(gpus);
        c.bench_function(&format!("store_clone_to_pause_{gpus}gpu"), |b| {
            b.iter(|| black_box(store.clone()));
        });
        let mut t = Tick::default();
        c.bench_function(&format!("store_absorb_one_tick_{gpus}gpu"), |b| {
            b.iter_custom(|iters| {
                let mut spent = std::time::Duration::ZERO;
                for _ in 0..iters {
                    src.sample(&mut t).unwrap();
                    let started = std::time::Instant::now();
                    store.absorb(black_box(&t), gpuwatch::model::SelfCost::default());
                    spent += started.elapsed();
                }
                spent
            });
        });
    }
}

fn bench_frames(c: &mut Criterion) {
    for gpus in [1usize, 8, 64] {
        let obs = observed(gpus);
        let mut term = Screen::new(Terminal::new(TestBackend::new(200, 50)).unwrap());
        let mut state = AppState::new(true);
        state.selected_gpu = 4.min(gpus - 1);
        c.bench_function(&format!("render_frame_200x50_{gpus}gpu"), |b| {
            b.iter(|| {
                term.draw(|f| {
                    black_box(gpuwatch::ui::render(f, &state, &obs));
                })
                .unwrap();
            });
        });
        state.zoom = gpuwatch::app::ZOOMS_S.len();
        c.bench_function(&format!("render_frame_200x50_{gpus}gpu_15min_zoom"), |b| {
            b.iter(|| {
                term.draw(|f| {
                    black_box(gpuwatch::ui::render(f, &state, &obs));
                })
                .unwrap();
            });
        });
    }
}

/// A frame as the monitor draws one at 100 ms: after new data (one tick of 250 ms here, so
/// the chart moves by one point every frame), the changed cells sent to the `TestBackend`.
/// Only the frame is timed.
/// The same through ratatui's `Terminal::draw` and its `Buffer::diff`, which `Screen` replaces.
fn bench_frames_after_a_tick(c: &mut Criterion) {
    let (mut store, mut src) = filled(8);
    let mut screen = Screen::new(Terminal::new(TestBackend::new(200, 50)).unwrap());
    let mut terminal = Terminal::new(TestBackend::new(200, 50)).unwrap();
    let state = AppState::new(true);
    let mut t = Tick::default();
    let mut timed = |iters: u64, draw: &mut dyn FnMut(&Store)| {
        let mut spent = std::time::Duration::ZERO;
        for _ in 0..iters {
            src.sample(&mut t).unwrap();
            store.absorb(&t, gpuwatch::model::SelfCost::default());
            let started = std::time::Instant::now();
            draw(&store);
            spent += started.elapsed();
        }
        spent
    };
    let mut group = c.benchmark_group("render_frame_200x50_8gpu_after_a_tick");
    group.bench_function("screen", |b| {
        b.iter_custom(|iters| {
            timed(iters, &mut |store| {
                screen
                    .draw(|f| {
                        black_box(gpuwatch::ui::render(f, &state, store));
                    })
                    .unwrap();
            })
        });
    });
    group.bench_function("ratatui_draw", |b| {
        b.iter_custom(|iters| {
            timed(iters, &mut |store| {
                terminal
                    .draw(|f| {
                        black_box(gpuwatch::ui::render(f, &state, store));
                    })
                    .unwrap();
            })
        });
    });
}

criterion_group!(
    benches,
    bench_frames,
    bench_frames_after_a_tick,
    bench_pause_copy
);
criterion_main!(benches);
