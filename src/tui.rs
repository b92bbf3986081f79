//! The live view. A plain text view until the full-screen monitor lands: one line per GPU,
//! refreshed every second, with the open findings.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{anyhow, Result};

use crate::config::Config;
use crate::history::History;
use crate::rules::Engine;
use crate::sampler::{self, Observed, Sampler};
use crate::source::Source;

pub fn run(
    source: Box<dyn Source>,
    config: &Config,
    interval: Duration,
    history: Duration,
) -> Result<()> {
    let stop = crate::command::stop_flag()?;
    let sampler = Sampler::new(source);
    let capacity = History::capacity_for(history.as_millis() as u64, interval.as_millis() as u64);
    let obs = Arc::new(Mutex::new(Observed::new(
        &sampler,
        interval.as_millis() as u64,
        capacity,
        Engine::new(config.thresholds.clone()),
    )));
    let handle = sampler::spawn(sampler, obs.clone(), interval, stop.clone(), |_| {})?;
    while !stop.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_secs(1));
        let o = obs.lock().map_err(|_| anyhow!("sampler thread panicked"))?;
        for d in &o.history.devices {
            let Some(s) = d.samples.latest() else {
                continue;
            };
            let f = |v: Option<f32>| v.map_or("  -".into(), |x| format!("{x:3.0}"));
            println!(
                "GPU {} util {}% power {} W SM {}% mem {:.1} GiB",
                d.info.index,
                f(s.util_gpu_pct),
                f(s.power_w),
                f(s.gpm.sm_active_pct),
                s.mem_used_bytes.unwrap_or(0) as f64 / 1073741824.0
            );
        }
        for f in o.engine.active() {
            println!(
                "  {} GPU {} {}: {}",
                f.severity.marker(),
                f.device,
                f.title,
                f.evidence.join("; ")
            );
        }
        if o.ended || o.error.is_some() {
            break;
        }
    }
    stop.store(true, Ordering::Relaxed);
    let _ = handle.join();
    Ok(())
}
