//! Helpers shared by the integration tests: ticks from the simulated source, and the rule
//! engine run over them.
#![allow(dead_code)]

use gpuwatch::config::Thresholds;
use gpuwatch::history::History;
use gpuwatch::model::{DeviceInfo, Tick};
use gpuwatch::rules::{Engine, Finding};
use gpuwatch::source::sim::{Scenario, SimSource};
use gpuwatch::source::{Sampled, Source};

pub const START_MS: u64 = 1_800_000_000_000;
pub const INTERVAL_MS: u64 = 250;

/// `seconds` of ticks of `gpus` simulated GPUs playing `scenario`, from `start_ms`.
pub fn sim_ticks(
    scenario: Scenario,
    gpus: usize,
    seconds: u64,
    start_ms: u64,
) -> (Vec<DeviceInfo>, Vec<Tick>) {
    let mut src = SimSource::new(scenario, gpus, 7, start_ms, INTERVAL_MS);
    let mut tick = Tick::default();
    let ticks = (0..seconds * 1000 / INTERVAL_MS)
        .map(|_| {
            assert_eq!(src.sample(&mut tick).unwrap(), Sampled::Filled);
            tick.clone()
        })
        .collect();
    (src.devices().to_vec(), ticks)
}

/// Feeds `ticks` through a history and the engine; returns every finding raised, in order.
pub struct Run {
    pub engine: Engine,
    pub history: History,
    pub raised: Vec<Finding>,
}

pub fn run(infos: &[DeviceInfo], ticks: &[Tick], t: Thresholds) -> Run {
    let mut history = History::new(infos, 3600 * 4);
    let mut engine = Engine::new(t);
    let mut raised: Vec<Finding> = Vec::new();
    for tick in ticks {
        history.push(tick);
        engine.evaluate(&history);
        for f in engine.active() {
            if !raised
                .iter()
                .any(|r| r.rule == f.rule && r.device == f.device && r.opened_ms == f.opened_ms)
            {
                raised.push(f.clone());
            }
        }
    }
    Run {
        engine,
        history,
        raised,
    }
}

/// The rules raised on a scenario, as sorted ids.
pub fn rules_raised(scenario: Scenario, seconds: u64) -> Vec<String> {
    let (infos, ticks) = sim_ticks(scenario, 1, seconds, START_MS);
    let mut ids: Vec<String> = run(&infos, &ticks, Thresholds::default())
        .raised
        .into_iter()
        .map(|f| f.rule)
        .collect();
    ids.sort();
    ids.dedup();
    ids
}

/// Shifts every timestamp of `ticks` by `by_ms`.
pub fn shifted(mut ticks: Vec<Tick>, by_ms: u64) -> Vec<Tick> {
    for t in &mut ticks {
        t.t_ms += by_ms;
        for d in &mut t.devices {
            d.sample.t_ms += by_ms;
        }
    }
    ticks
}
