//! Built outside the crate (a package of its own, `nvml-wrapper = "0.13"`, release with
//! thin LTO and one codegen unit as gpuwatch is) and carried to the device as .device/bins/nvfloor.
//! The native floor of #28's memory target: a Rust program that does what a monitor must
//! (nvmlInit, a handle, utilization, power, processes every 100 ms) and nothing else.
use std::time::{Duration, Instant};
fn status() -> String {
    std::fs::read_to_string("/proc/self/status").unwrap_or_default().lines()
        .filter(|l| l.starts_with("VmRSS") || l.starts_with("VmHWM") || l.starts_with("RssAnon") || l.starts_with("RssFile"))
        .map(|l| l.split_whitespace().take(2).collect::<Vec<_>>().join(" ")).collect::<Vec<_>>().join("  ")
}
fn main() {
    let t = Instant::now();
    println!("{:>6} ms start      {}", t.elapsed().as_millis(), status());
    let nvml = nvml_wrapper::Nvml::init().expect("init");
    println!("{:>6} ms nvmlInit   {}", t.elapsed().as_millis(), status());
    let d = nvml.device_by_index(0).expect("device");
    let _ = d.utilization_rates(); let _ = d.power_usage(); let _ = d.running_compute_processes();
    println!("{:>6} ms calls      {}", t.elapsed().as_millis(), status());
    let secs: u64 = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(32);
    while t.elapsed() < Duration::from_secs(secs) {
        let _ = d.utilization_rates(); let _ = d.power_usage(); let _ = d.running_compute_processes();
        std::thread::sleep(Duration::from_millis(100));
    }
    println!("{:>6} ms end        {}", t.elapsed().as_millis(), status());
}
