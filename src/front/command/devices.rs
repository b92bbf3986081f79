//! `gpuwatch devices`: each GPU's facts and health at a glance, and `--timings`, how long
//! each NVML call took over a run of ticks.

use anyhow::Result;

use crate::monitor::Source;
use crate::monitor::{Headless, Pace, Plan, Setup};

/// Lists the GPUs with their facts and health (JSON with `json`).
pub fn devices(source: &mut dyn Source, json: bool) -> Result<()> {
    let health = read_health(source)?;
    if json {
        let v = serde_json::json!({
            "system": source.system(),
            "devices": source.devices(),
            "health": health,
        });
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
        if let Some(m) = &d.mig {
            // As nvidia-smi -L lists them: under their GPU, with their profile and ids.
            println!(
                "  MIG {} {} {}  GPU instance {} compute instance {}  memory {}  SMs {}",
                d.label(),
                m.profile,
                d.uuid,
                m.gpu_instance,
                m.compute_instance,
                d.memory_total_bytes.map_or("?".into(), |b| format!(
                    "{:.1} GiB",
                    b as f64 / crate::model::GIB as f64
                )),
                m.sm_count.map_or("?".into(), |n| n.to_string()),
            );
            continue;
        }
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
        if let Some(h) = health.iter().find(|h| h.gpu == d.index) {
            println!("  health {}", health_text(h));
        }
    }
    Ok(())
}

/// One GPU's health counters and energy counter, as `devices` shows them.
#[derive(serde::Serialize)]
struct DeviceHealth {
    gpu: u32,
    #[serde(flatten)]
    health: crate::model::Health,
    /// The energy counter: mJ since the driver loaded.
    energy_mj: Option<u64>,
}

/// Samples until the slow counters have been read once (the first slow round, within about a
/// second on live GPUs; at once on simulated ones).
fn read_health(source: &mut dyn Source) -> Result<Vec<DeviceHealth>> {
    let mut tick = crate::model::Tick::for_devices(source.devices().len());
    let deadline = std::time::Instant::now() + std::time::Duration::from_millis(2500);
    loop {
        source.sample(&mut tick)?;
        let read = tick.devices.iter().all(|d| {
            d.status != crate::model::DeviceStatus::Ok
                || d.sample.energy_mj.is_some()
                || !d.sample.health.is_unknown()
        });
        if read || source.virtual_time() || std::time::Instant::now() >= deadline {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    Ok(source
        .devices()
        .iter()
        .zip(&tick.devices)
        .map(|(info, d)| DeviceHealth {
            gpu: info.index,
            health: d.sample.health,
            energy_mj: d.sample.energy_mj,
        })
        .collect())
}

/// ECC this boot and over the GPU's life, rows remapped and pending, `PCIe` replays, `NVLink`
/// and the energy counter, in one line (unreported ones said so).
fn health_text(dev: &DeviceHealth) -> String {
    let h = &dev.health;
    let n = |count: Option<u32>| count.map_or("?".into(), |c| c.to_string());
    let mut parts = Vec::new();
    if h.ecc_corrected_volatile.is_some() || h.ecc_uncorrected_volatile.is_some() {
        parts.push(format!(
            "ECC this boot {}/{}, over its life {}/{} (corrected/uncorrected)",
            n(h.ecc_corrected_volatile),
            n(h.ecc_uncorrected_volatile),
            n(h.ecc_corrected_aggregate),
            n(h.ecc_uncorrected_aggregate)
        ));
    } else {
        parts.push("ECC not reported".into());
    }
    if h.remapped_rows_corrected.is_some() || h.remap_pending.is_some() {
        let pending = match (h.remap_pending, h.remap_failure) {
            (_, Some(true)) => "a remap FAILED",
            (Some(true), _) => "a remap PENDING (reset needed)",
            (Some(false), _) => "none pending",
            _ => "pending ?",
        };
        parts.push(format!(
            "rows remapped {}/{}, {pending}",
            n(h.remapped_rows_corrected),
            n(h.remapped_rows_uncorrected)
        ));
    } else {
        parts.push("row remapper not reported".into());
    }
    parts.push(
        h.pcie_replays
            .map_or("PCIe replays not reported".into(), |r| {
                format!("PCIe replays {r}")
            }),
    );
    parts.push(match (h.nvlink_active, h.nvlink_links) {
        (Some(a), Some(l)) => format!("NVLink {a} of {l} up, {} errors", n(h.nvlink_errors)),
        _ => "NVLink not reported".into(),
    });
    parts.push(
        dev.energy_mj
            .map_or("energy counter not reported".into(), |mj| {
                format!(
                    "energy {} since the driver loaded",
                    crate::text::energy_words(mj as f64 / 1000.0)
                )
            }),
    );
    parts.join(" · ")
}

/// Runs `ticks` ticks at the source's interval and prints how long each NVML call took.
pub fn timings(source: Box<dyn Source>, ticks: u32) -> Result<()> {
    let setup = Setup::judging_with(crate::monitor::Thresholds::default())
        .judge_only_for_stacks()
        .without_stacks();
    let mut pipeline = Headless::new(source, &setup)?;
    let mut tick_us = Vec::new();
    let plan = Plan {
        pace: Pace::Real,
        span: None,
        ticks: Some(u64::from(ticks)),
    };
    pipeline.run(&plan, |taken, _| {
        tick_us.push(taken.took.as_micros() as u32);
        Ok(())
    })?;
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
    let Some(times) = pipeline.source().call_times() else {
        println!("(this source makes no NVML calls)");
        return Ok(());
    };
    // As wide as the longest call's name ("total_ecc_errors(uncorrected, aggregate)").
    let width = times
        .by_call
        .iter()
        .map(|c| c.call.len())
        .fold(32, usize::max);
    println!(
        "{:<width$} {:>6} {:>10} {:>10} {:>10}  thread",
        "call", "count", "median µs", "p90 µs", "max µs"
    );
    for c in &times.by_call {
        let (m, p, x) = c.quantiles();
        println!(
            "{:<width$} {:>6} {:>10} {:>10} {:>10}  {}",
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
