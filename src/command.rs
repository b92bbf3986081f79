//! The headless commands: devices, record, diagnose, and the plain-text watch view.

use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use crate::config::Config;
use crate::format::record::{Header, Recorder};
use crate::history::History;
use crate::report::{diagnosis_text, Diagnosis};
use crate::rules::Engine;
use crate::sampler::{Observed, Sampler};
use crate::source::{Sampled, Source};

/// Set by SIGINT, SIGTERM and SIGHUP so loops can end cleanly.
pub fn stop_flag() -> Result<Arc<AtomicBool>> {
    let flag = Arc::new(AtomicBool::new(false));
    for sig in [
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGHUP,
    ] {
        signal_hook::flag::register(sig, flag.clone()).context("installing signal handlers")?;
    }
    Ok(flag)
}

pub fn devices(source: &dyn Source, json: bool) -> Result<()> {
    if json {
        let v = serde_json::json!({ "system": source.system(), "devices": source.devices() });
        println!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(());
    }
    let s = source.system();
    let opt = |v: &Option<String>| v.clone().unwrap_or_else(|| "?".into());
    println!(
        "host {}  driver {}  NVML {}  CUDA {}",
        s.host,
        opt(&s.driver_version),
        opt(&s.nvml_version),
        opt(&s.cuda_driver_version)
    );
    for d in source.devices() {
        let f = |v: Option<f32>| v.map_or("?".into(), |w| format!("{w:.0} W"));
        println!("GPU {} {} {} bus {}", d.index, d.name, d.uuid, d.pci_bus_id);
        println!(
            "  memory {}  TDP {}  enforced {}  range {}–{}  max SM {} MHz  PCIe Gen{} x{}  slowdown {} °C  persistence {}  MIG {}  GPM {}",
            d.memory_total_bytes.map_or("?".into(), |b| format!("{:.1} GiB", b as f64 / crate::model::GIB as f64)),
            f(d.power_limit_default_w),
            f(d.power_limit_enforced_w),
            f(d.power_limit_min_w),
            f(d.power_limit_max_w),
            d.max_sm_clock_mhz.map_or("?".into(), |v| v.to_string()),
            d.pcie_max_gen.map_or("?".into(), |v| v.to_string()),
            d.pcie_max_width.map_or("?".into(), |v| v.to_string()),
            d.temp_slowdown_c.map_or("?".into(), |v| v.to_string()),
            d.persistence_mode.map_or("?", |v| if v { "on" } else { "off" }),
            d.mig_mode.map_or("?", |v| if v { "on" } else { "off" }),
            if d.gpm_supported { "yes" } else { "no" },
        );
    }
    Ok(())
}

/// Runs `ticks` ticks and prints how long each NVML call took.
pub fn timings(source: Box<dyn Source>, ticks: u32, interval: Duration) -> Result<()> {
    let mut sampler = Sampler::new(source);
    let mut tick_us = Vec::new();
    for _ in 0..ticks {
        let started = Instant::now();
        sampler.step()?;
        tick_us.push(started.elapsed().as_micros() as u32);
        std::thread::sleep(interval.saturating_sub(started.elapsed()));
    }
    tick_us.sort_unstable();
    let q = |p: f64| {
        tick_us
            .get(((tick_us.len() as f64 - 1.0) * p).round() as usize)
            .copied()
            .unwrap_or(0)
    };
    println!(
        "fast tick (all GPUs): median {} µs, p90 {} µs, max {} µs over {} ticks",
        q(0.5),
        q(0.9),
        q(1.0),
        tick_us.len()
    );
    let Some(times) = sampler.source().call_times() else {
        println!("(this source makes no NVML calls)");
        return Ok(());
    };
    println!(
        "{:<32} {:>6} {:>10} {:>10} {:>10}  thread",
        "call", "count", "median µs", "p90 µs", "max µs"
    );
    for c in &times.by_call {
        let (m, p, x) = c.quantiles();
        println!(
            "{:<32} {:>6} {:>10} {:>10} {:>10}  {}",
            c.call,
            c.count,
            m,
            p,
            x,
            if c.slow { "slow" } else { "fast" }
        );
    }
    Ok(())
}

/// Waits until `next`, unless time is virtual or a stop was asked for.
fn pace(next: Instant, virtual_time: bool, stop: &AtomicBool) {
    while !virtual_time && !stop.load(Ordering::Relaxed) {
        let now = Instant::now();
        if now >= next {
            return;
        }
        std::thread::sleep((next - now).min(Duration::from_millis(200)));
    }
}

/// Records ticks to `out`. Simulated sources are written in real time too (unpaced, a demo
/// wrote ~650 MB/s until the disk was full), unless `fast` asks otherwise with a duration.
pub fn record(
    source: Box<dyn Source>,
    out: &Path,
    duration: Option<Duration>,
    interval: Duration,
    force: bool,
    fast: bool,
) -> Result<()> {
    let stop = stop_flag()?;
    let header = Header::new(
        source.system(),
        source.devices(),
        interval.as_millis() as u64,
    );
    let mut rec = Recorder::create(out, &header, force)?;
    let virtual_time = fast && duration.is_some() && source.virtual_time();
    let mut sampler = Sampler::new(source);
    let (mut next, mut first_ms, mut lines) = (Instant::now(), None, 0u64);
    eprintln!(
        "recording {} GPU(s) every {} to {} (Ctrl-C stops)",
        header.devices.len(),
        humantime::format_duration(interval),
        out.display()
    );
    while !stop.load(Ordering::Relaxed) {
        if sampler.step()? == Sampled::End {
            break;
        }
        let t = sampler.tick().t_ms;
        let first = *first_ms.get_or_insert(t);
        if duration.is_some_and(|d| t.saturating_sub(first) >= d.as_millis() as u64) {
            break;
        }
        rec.write(sampler.tick())?;
        lines += 1;
        next += interval;
        pace(next, virtual_time, &stop);
    }
    eprintln!("wrote {lines} ticks to {}", out.display());
    Ok(())
}

/// What a headless run saw.
struct Run {
    obs: Observed,
    ticks: u64,
    seconds: f64,
}

/// Samples a live or simulated source for `duration` (a recording: to its end), headlessly.
fn observe(
    source: Box<dyn Source>,
    config: &Config,
    duration: Duration,
    interval: Duration,
) -> Result<Run> {
    let stop = stop_flag()?;
    let replaying = matches!(source.pacing(), crate::source::Pacing::Recorded { .. });
    let virtual_time = source.virtual_time() || replaying;
    let mut sampler = Sampler::new(source);
    let span = duration.max(Duration::from_secs(900)).as_millis() as u64;
    let devices = sampler.source().devices().len();
    let capacity = History::checked_capacity(span, interval.as_millis() as u64, devices)
        .map_err(anyhow::Error::msg)?;
    let mut obs = Observed::new(
        sampler.source(),
        interval.as_millis() as u64,
        capacity,
        Engine::new(config.thresholds.clone()),
    );
    let (mut next, mut first_ms, mut last_ms, mut ticks) = (Instant::now(), None, 0u64, 0u64);
    while !stop.load(Ordering::Relaxed) {
        if sampler.step()? == Sampled::End {
            break;
        }
        let t = sampler.tick().t_ms;
        let first = *first_ms.get_or_insert(t);
        if !replaying && t.saturating_sub(first) > duration.as_millis() as u64 {
            break;
        }
        obs.absorb(sampler.tick(), sampler.cost());
        (last_ms, ticks) = (t, ticks + 1);
        next += interval;
        pace(next, virtual_time, &stop);
    }
    obs.settle();
    let seconds = last_ms.saturating_sub(first_ms.unwrap_or(last_ms)) as f64 / 1000.0;
    Ok(Run {
        obs,
        ticks,
        seconds,
    })
}

/// Samples (or replays) headlessly and prints the findings. Returns the exit code.
pub fn diagnose(
    source: Box<dyn Source>,
    config: &Config,
    duration: Duration,
    interval: Duration,
    json: bool,
) -> Result<i32> {
    let Run {
        obs,
        ticks,
        seconds,
    } = observe(source, config, duration, interval)?;
    let mut findings: Vec<_> = obs.engine.active().into_iter().cloned().collect();
    findings.extend(obs.engine.cleared.iter().cloned());
    let d = Diagnosis {
        source: obs.source_label.clone(),
        system: &obs.system,
        devices: obs.history.devices.iter().map(|d| &d.info).collect(),
        samples: ticks,
        seconds,
        worst: findings.iter().map(|f| f.severity).max(),
        findings,
        judging: obs.engine.pending().cloned().collect(),
    };
    if json {
        println!("{}", serde_json::to_string_pretty(&d)?);
    } else {
        print!("{}", diagnosis_text(&d, &obs.history));
    }
    std::io::stdout().flush()?;
    Ok(d.exit_code())
}

/// How `gpuwatch snapshot` should run.
pub struct SnapshotArgs<'a> {
    pub output: Option<&'a Path>,
    pub window: Duration,
    pub markdown: bool,
    pub sample_for: Duration,
    pub options: crate::snapshot::Options,
}

/// Samples (live: `sample_for`, at least 3 s so GPM has two readings; a demo: the window;
/// a recording: all of it) and writes a snapshot of the last `window`.
pub fn snapshot(
    source: Box<dyn Source>,
    config: &Config,
    interval: Duration,
    args: &SnapshotArgs,
) -> Result<()> {
    use crate::snapshot::{take, to_json, to_markdown, write_new};
    let duration = if source.virtual_time() {
        args.window
    } else {
        args.sample_for.max(Duration::from_secs(3))
    };
    let run = observe(source, config, duration, interval)?;
    let snap = take(&run.obs, &args.options);
    let text = if args.markdown {
        to_markdown(&snap)
    } else {
        to_json(&snap)
    };
    if args.output == Some(Path::new("-")) {
        print!("{text}");
        return Ok(());
    }
    let ext = if args.markdown { "md" } else { "json" };
    let default = std::path::PathBuf::from(format!(
        "gpuwatch-snapshot-{}.{ext}",
        crate::text::stamp(snap.taken_at_ms)
    ));
    let written = write_new(args.output.unwrap_or(&default), &text)?;
    let found = snap.findings.active.len() + snap.findings.recent.len();
    eprintln!(
        "snapshot of {} GPU(s), {} s, {found} finding(s) written to {}",
        snap.devices.len(),
        snap.window_ms / 1000,
        written.display()
    );
    Ok(())
}
