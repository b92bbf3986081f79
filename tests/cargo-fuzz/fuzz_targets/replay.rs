//! Any bytes as `gpuwatch replay`/`diagnose --replay` input: a recording or a snapshot, plain
//! or gzipped. What reads is run through the history and the rules, as a replay would be.
#![no_main]

use std::path::Path;

use gpuwatch::config::Thresholds;
use gpuwatch::history::History;
use gpuwatch::rules::Engine;
use gpuwatch::source::replay::ReplaySource;
use gpuwatch::source::Source;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let input = Box::new(std::io::Cursor::new(data.to_vec()));
    let Ok(mut src) = ReplaySource::from_input(input, Path::new("fuzz-input"), f64::INFINITY)
    else {
        return;
    };
    let infos = src.devices().to_vec();
    let Ok(ticks) = src.read_all() else {
        return;
    };
    let mut history = History::new(&infos, 600);
    let mut engine = Engine::new(Thresholds::default());
    for t in ticks.iter().take(400) {
        history.push(t);
        engine.evaluate(&history);
    }
    let _ = gpuwatch::text::printable(&format!("{:?}", engine.conclusions().active()));
});
