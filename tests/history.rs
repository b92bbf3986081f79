//! The ring buffer: capacity, wrap-around, time windows, and no allocation once full.

use gpuwatch::history::{History, Ring};
use gpuwatch::model::{DeviceSample, Tick};

fn sample(t_ms: u64) -> DeviceSample {
    DeviceSample {
        t_ms,
        util_gpu_pct: Some((t_ms % 100) as f32),
        ..DeviceSample::default()
    }
}

#[test]
fn ring_keeps_the_newest_capacity_items_in_time_order_after_wrapping() {
    let mut r = Ring::with_capacity(4);
    for t in 0..10u64 {
        r.push(sample(t * 1000));
    }
    assert_eq!(r.len(), 4);
    assert_eq!(r.capacity(), 4);
    let times: Vec<u64> = r.iter().map(|s| s.t_ms).collect();
    assert_eq!(times, vec![6000, 7000, 8000, 9000]);
    assert_eq!(r.latest().unwrap().t_ms, 9000);
    assert_eq!(r.get(0).unwrap().t_ms, 6000);
    assert!(r.get(4).is_none());
}

#[test]
fn ring_does_not_grow_its_buffer_once_full() {
    let mut r = Ring::with_capacity(1000);
    for t in 0..1000u64 {
        r.push(sample(t));
    }
    let (a, b) = r.as_slices();
    let before = (a.as_ptr(), b.len() + a.len());
    for t in 1000..50_000u64 {
        r.push(sample(t));
    }
    let (a2, b2) = r.as_slices();
    assert_eq!(a2.len() + b2.len(), before.1);
    // Same allocation: the oldest slice still points into the original buffer.
    let base = b2.as_ptr().min(a2.as_ptr());
    assert!(base <= before.0 && before.0 < base.wrapping_add(1000));
}

#[test]
fn window_returns_samples_between_the_bounds_inclusive_across_the_wrap() {
    let mut r = Ring::with_capacity(10);
    for t in 0..25u64 {
        r.push(sample(t * 250));
    }
    // Holds 15*250 ..= 24*250 = 3750 ..= 6000.
    let w: Vec<u64> = r.window(4000, 5000).map(|s| s.t_ms).collect();
    assert_eq!(w, vec![4000, 4250, 4500, 4750, 5000]);
    assert_eq!(r.window(0, 3000).count(), 0);
    assert_eq!(r.window(7000, 9000).count(), 0);
    let last: Vec<u64> = r.last(500).map(|s| s.t_ms).collect();
    assert_eq!(last, vec![5500, 5750, 6000]);
}

#[test]
fn history_sizes_buffers_from_span_and_interval_and_reports_bytes() {
    assert_eq!(History::capacity_for(15 * 60 * 1000, 250), 3600);
    let infos = vec![gpuwatch::model::DeviceInfo::default(); 8];
    let h = History::new(&infos, History::capacity_for(3600 * 1000, 250));
    assert_eq!(h.bytes_when_full(), 8 * 14_400 * DeviceSample::BYTES);
    // The documented figures (docs/architecture.md) must stay true.
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/architecture.md"))
        .unwrap();
    let per_sample = format!("{} bytes per sample", DeviceSample::BYTES);
    assert!(
        doc.contains(&per_sample),
        "docs/architecture.md must say {per_sample:?}"
    );
    let hour_8 = 8 * 3600 * 4 * DeviceSample::BYTES;
    let figure = format!("{:.1} MiB", hour_8 as f64 / (1024.0 * 1024.0));
    assert!(
        doc.contains(&figure),
        "docs/architecture.md must say {figure:?} for 8 GPUs × 1 h × 4 Hz"
    );
}

#[test]
fn history_push_keeps_latest_processes_and_counts_ticks() {
    let infos = vec![gpuwatch::model::DeviceInfo::default()];
    let mut h = History::new(&infos, 8);
    let mut tick = Tick::for_devices(1);
    tick.t_ms = 1000;
    tick.devices[0].sample = sample(1000);
    tick.devices[0]
        .processes
        .push(gpuwatch::model::ProcessSample {
            pid: 42,
            ..Default::default()
        });
    h.push(&tick);
    assert_eq!(h.ticks(), 1);
    assert_eq!(h.latest_ms(), Some(1000));
    assert_eq!(h.devices[0].processes[0].pid, 42);
}

/// What the rules skip work on: when memory used last changed, and whether link error
/// counters were ever read. Wrong, a leak or a `PCIe` replay storm would go unseen.
#[test]
fn the_history_knows_when_memory_last_changed_and_whether_link_counters_exist() {
    use gpuwatch::model::{DeviceInfo, DeviceReading};
    let mut h = History::new(&[DeviceInfo::default()], 100);
    let mut push = |t_ms: u64, mem: Option<u64>, replays: Option<u32>| {
        let mut sample = sample(t_ms);
        sample.mem_used_bytes = mem;
        sample.health.pcie_replays = replays;
        h.push(&Tick {
            t_ms,
            devices: vec![DeviceReading {
                sample,
                ..DeviceReading::default()
            }],
            ..Tick::default()
        });
        (h.devices[0].mem_changed_ms, h.devices[0].link_counters_seen)
    };
    assert_eq!(push(1000, Some(5), None), (1000, false));
    assert_eq!(push(2000, Some(5), None), (1000, false));
    assert_eq!(push(3000, Some(6), None), (3000, false));
    // A gap is a change too, and so is the value coming back.
    assert_eq!(push(4000, None, None), (4000, false));
    assert_eq!(push(5000, Some(6), Some(0)), (5000, true));
    assert_eq!(push(6000, Some(6), None), (5000, true));
}
