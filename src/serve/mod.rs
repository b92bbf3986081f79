//! `gpuwatch serve`: the sampler and the rules, headless, behind a small HTTP server for
//! Prometheus. `/metrics` (written with the official client, `prometheus-client`), the open
//! and recent findings as `/findings.json` (the structure of `diagnose --json`) and `/healthz`.
//!
//! A scrape never calls NVML: the driver's thread samples and feeds the store; a request copies
//! what changed into the server's view under the lock and encodes from the view.

use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};

use anyhow::{anyhow, Context, Result};
use bytes::Bytes;
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::{Registry, Unit};

use crate::config::Config;
use crate::model::{clock_event, DeviceInfo, DeviceStatus};
use crate::monitor::{Monitor, Setup};
use crate::report::Diagnosis;
use crate::rules::all_rules;
use crate::source::Source;
use crate::store::Store;

/// The default port: not Prometheus (9090), `node_exporter` (9100) or dcgm-exporter (9400).
pub const DEFAULT_LISTEN: &str = "127.0.0.1:9947";

type Labels = Vec<(String, String)>;
type Gauges = Family<Labels, Gauge<f64, AtomicU64>>;
type Counters = Family<Labels, Counter<u64>>;

mod http;
mod webconfig;

pub use webconfig::WebConfig;

pub use http::{HEADER_TIMEOUT, MAX_CONNECTIONS, MAX_HEADERS, MAX_HEADER_BYTES, STALL_TIMEOUT};

/// Serves until SIGINT, SIGTERM or SIGHUP. Prints the address it listens on.
pub fn serve(
    source: Box<dyn Source>,
    config: &Config,
    listen: &str,
    extras: Extras,
    max_connections: usize,
    web_config: Option<&std::path::Path>,
) -> Result<()> {
    // Read before anything starts: a wrong file is an error at once, never an open exporter.
    let web = http::Web::new(web_config.map(WebConfig::load).transpose()?);
    let stop = crate::monitor::stop_flag()?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build()
        .context("starting the server's runtime")?;
    let listener = runtime.block_on(bind(listen))?;
    let addr = listener.local_addr().context("the server has no address")?;
    let host = source.system().host.clone();
    let setup = Setup::new(config).stop(stop.clone());
    let monitor = Monitor::start(source, &setup)?;
    let cap = http::connection_cap(max_connections);
    let scheme = if web.tls.is_some() { "https" } else { "http" };
    let auth = match web.users.len() {
        0 => String::new(),
        n => format!("; basic auth, {n} user(s)"),
    };
    eprintln!(
        "gpuwatch serve: {scheme}://{addr}/metrics, /findings.json, /healthz, /livez \
         (at most {cap} connections{auth}; Ctrl-C stops)"
    );
    let exporter = Arc::new(Exporter {
        monitor,
        host,
        extras,
        cache: Mutex::new(Cache::default()),
    });
    runtime
        .block_on(http::run(listener, exporter, Arc::new(web), cap, stop))
        // The listener failed for good: exit non-zero so the service manager restarts us.
        .with_context(|| format!("the listener on {addr} failed; exiting so that systemd or Kubernetes restarts the exporter"))
}

/// Listens with a backlog that holds a crowd: the standard library's 128 made a thousand
/// simultaneous scrapes fail with resets (the kernel caps it at `net.core.somaxconn`).
async fn bind(listen: &str) -> Result<tokio::net::TcpListener> {
    let refused = |e: std::io::Error| {
        if e.kind() == std::io::ErrorKind::AddrInUse {
            anyhow!(
                "cannot listen on {listen}: {e}. Another exporter is on that port: choose \
                 another with --listen ADDR:PORT"
            )
        } else {
            anyhow!("cannot listen on {listen}: {e}. --listen takes ADDR:PORT of this machine, such as 127.0.0.1:9947 or 0.0.0.0:9947")
        }
    };
    let addr = tokio::net::lookup_host(listen)
        .await
        .map_err(refused)?
        .next()
        .ok_or_else(|| anyhow!("cannot listen on {listen}: it names no address"))?;
    let socket = if addr.is_ipv4() {
        tokio::net::TcpSocket::new_v4()
    } else {
        tokio::net::TcpSocket::new_v6()
    }
    .map_err(refused)?;
    socket.set_reuseaddr(true).map_err(refused)?;
    socket.bind(addr).map_err(refused)?;
    socket.listen(4096).map_err(refused)
}

/// The exporter's answers, read from the monitor's store; bodies are encoded once per tick and
/// shared, so a thousand scrapes cost one encoding.
struct Exporter {
    monitor: Monitor,
    host: String,
    extras: Extras,
    cache: Mutex<Cache>,
}

#[derive(Default)]
struct Cache {
    /// The tick the bodies below were encoded at.
    ticks: Option<u64>,
    /// Text format, then `OpenMetrics`.
    metrics: [Option<Bytes>; 2],
    findings: Option<Bytes>,
}

fn reply(status: u16, content_type: &'static str, body: impl Into<Bytes>) -> http::Reply {
    http::Reply {
        status,
        content_type,
        body: body.into(),
    }
}

impl http::Handler for Exporter {
    fn answer(&self, asked: &http::Asked) -> http::Reply {
        if *asked.method != hyper::Method::GET && *asked.method != hyper::Method::HEAD {
            return reply(405, "text/plain", "only GET\n");
        }
        if asked.path == "/livez" {
            // Answered at all: the server's thread is alive. (Readiness, /healthz, also needs
            // the sampler to keep up.)
            return reply(200, "text/plain", "alive\n");
        }
        let mut cache = self
            .cache
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let cache = &mut *cache;
        let Ok(store) = self.monitor.lock() else {
            return reply(500, "text/plain", "the sampler thread crashed\n");
        };
        let ticks = store.history().ticks();
        if cache.ticks != Some(ticks) {
            *cache = Cache {
                ticks: Some(ticks),
                ..Cache::default()
            };
        }
        match asked.path {
            "/metrics" => self.metrics(cache, &store, asked.openmetrics),
            "/findings.json" => {
                let body = cache
                    .findings
                    .get_or_insert_with(|| Bytes::from(findings_json(&store)))
                    .clone();
                reply(200, "application/json", body)
            }
            "/healthz" | "/ready" => {
                let (code, why) = health(&store, crate::model::now_ms());
                reply(code, "text/plain", why + "\n")
            }
            _ => reply(
                404,
                "text/plain",
                "gpuwatch serves /metrics, /findings.json, /healthz and /livez\n",
            ),
        }
    }
}

impl Exporter {
    fn metrics(&self, cache: &mut Cache, store: &Store, openmetrics: bool) -> http::Reply {
        let slot = usize::from(openmetrics);
        if cache.metrics[slot].is_none() {
            match metrics_text_with(store, &self.host, openmetrics, self.extras) {
                Ok(body) => cache.metrics[slot] = Some(Bytes::from(body)),
                Err(e) => return reply(500, "text/plain", format!("encoding failed: {e}\n")),
            }
        }
        let body = cache.metrics[slot].clone().unwrap_or_default();
        if openmetrics {
            reply(
                200,
                "application/openmetrics-text; version=1.0.0; charset=utf-8",
                body,
            )
        } else {
            reply(200, "text/plain; version=0.0.4; charset=utf-8", body)
        }
    }
}

/// 200 once a tick is in and sampling keeps up; 503 before, after a failure, or when the
/// newest sample is older than ten intervals (at least 10 s).
pub fn health(view: &Store, now_ms: u64) -> (u16, String) {
    if let Some(e) = view.error() {
        return (503, format!("sampling stopped: {e}"));
    }
    let Some(latest) = view.history().latest_ms() else {
        return (503, "no sample yet".into());
    };
    let limit = (view.interval().as_millis() as u64 * 10).max(10_000);
    let age = now_ms.saturating_sub(latest);
    if age > limit {
        return (
            503,
            format!(
                "the newest sample is {} s old: sampling stalled",
                age / 1000
            ),
        );
    }
    (200, "ok".into())
}

/// The open findings, then the recent ones, as `diagnose --json` writes them.
pub fn findings_json(view: &Store) -> String {
    let found = view.findings();
    let mut findings = found.active().to_vec();
    findings.extend(found.cleared().iter().cloned());
    let d = Diagnosis {
        source: view.source_label().to_string(),
        system: view.system(),
        devices: view.history().devices.iter().map(|d| &d.info).collect(),
        samples: view.history().ticks(),
        seconds: 0.0,
        worst: findings.iter().map(|f| f.severity).max(),
        findings,
        judging: found.pending().cloned().collect(),
        replay: view.is_replay(),
        stacks: view.history().stacks.clone(),
        show_stacks: false,
    };
    serde_json::to_string_pretty(&d).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
}

/// The labels that identify a GPU, spelled as dcgm-exporter spells them so dashboards join.
fn gpu_labels(info: &DeviceInfo, host: &str) -> Labels {
    vec![
        ("gpu".into(), label_value(&info.index.to_string())),
        ("UUID".into(), label_value(&info.uuid)),
        ("pci_bus_id".into(), label_value(&info.pci_bus_id)),
        ("modelName".into(), label_value(&info.name)),
        ("Hostname".into(), label_value(host)),
    ]
}

/// A label value as the exposition formats require it written (`prometheus-client` writes
/// values as given): backslash, double quote and line feed escaped, and other control
/// characters, which no scraper expects, as U+FFFD. A process that names itself
/// `a"} 1\nup 0` then gets a label value with those characters, not a series of its own.
fn label_value(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c if c.is_control() => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}

fn with(mut labels: Labels, key: &str, value: &str) -> Labels {
    labels.push((key.into(), label_value(value)));
    labels
}

/// Registers a gauge family under `name` (with `unit` appended, as Prometheus names go).
fn gauges(reg: &mut Registry, name: &str, help: &str, unit: Option<Unit>) -> Gauges {
    let family = Gauges::default();
    match unit {
        Some(u) => reg.register_with_unit(name, help, u, family.clone()),
        None => reg.register(name, help, family.clone()),
    }
    family
}

/// What `/metrics` adds to the gpuwatch metrics when asked (`serve --processes N`,
/// `--dcgm-compat`).
#[derive(Debug, Clone, Copy, Default)]
pub struct Extras {
    /// Per-process series for the N processes using the most memory on each GPU (0: none).
    pub processes: usize,
    /// The `DCGM_FI_*` names and units the standard DCGM dashboard reads.
    pub dcgm: bool,
}

/// The `/metrics` text: `OpenMetrics` when `openmetrics`, else the Prometheus text format.
pub fn metrics_text(view: &Store, host: &str, openmetrics: bool) -> Result<String> {
    metrics_text_with(view, host, openmetrics, Extras::default())
}

/// `metrics_text` with the opt-in series of `extras`.
pub fn metrics_text_with(
    view: &Store,
    host: &str,
    openmetrics: bool,
    extras: Extras,
) -> Result<String> {
    let mut reg = Registry::with_prefix("gpuwatch");
    let f = Families::register(&mut reg);
    let rules = all_rules();
    for dev in &view.history().devices {
        let id = gpu_labels(&dev.info, host);
        f.gpu_metrics(dev, &id, view);
        for (r, rule) in rules.iter().enumerate() {
            let labels = with(id.clone(), "finding", rule.id.as_str());
            let open = view
                .findings()
                .active_on(dev.info.index)
                .find(|x| x.rule == rule.id);
            // Every rule on every GPU, 0 or 1, so alerts need no absent().
            f.finding_active
                .get_or_create(&with(labels.clone(), "severity", rule.severity.name()))
                .set(0.0);
            if let Some(x) = open {
                f.finding_active
                    .get_or_create(&with(labels.clone(), "severity", x.severity.name()))
                    .set(1.0);
                f.finding_since
                    .get_or_create(&labels)
                    .set(x.since_ms as f64 / 1000.0);
                if let Some(c) = &x.culprit {
                    f.culprit.get_or_create(&labels).set(f64::from(c.device));
                }
            }
            f.opened
                .get_or_create(&labels)
                .inc_by(view.findings().opened(dev.info.index, r));
        }
    }
    f.self_metrics(view);
    let info = vec![("version".to_string(), env!("CARGO_PKG_VERSION").to_string())];
    f.build_info.get_or_create(&info).set(1.0);
    if extras.processes > 0 {
        let p = ProcessFamilies::register(&mut reg);
        for dev in &view.history().devices {
            p.add(dev, &gpu_labels(&dev.info, host), extras.processes);
        }
    }
    let mut out = String::new();
    encode(&mut out, &reg)?;
    if extras.dcgm {
        let mut dcgm = Registry::default();
        let d = DcgmFamilies::register(&mut dcgm);
        for dev in &view.history().devices {
            d.add(dev, host);
        }
        let mut more = String::new();
        encode(&mut more, &dcgm)?;
        // One exposition: the first registry's end marker goes.
        out.truncate(out.trim_end().trim_end_matches("# EOF").len());
        out.push_str(&more);
    }
    out = in_gpu_order(&out);
    if !openmetrics {
        out = to_text_format(&out);
    }
    Ok(out)
}

/// Each family's samples sorted, numbers by value (`gpu="2"` before `gpu="10"`). The client
/// library keeps a family's series in a hash map, so two scrapes listed them in different orders,
/// which made diffs of /metrics and eyeballing GPU 0 before GPU 7 needlessly hard.
fn in_gpu_order(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 1);
    let mut block: Vec<&str> = Vec::new();
    let flush = |block: &mut Vec<&str>, out: &mut String| {
        block.sort_by(|a, b| natural_cmp(a, b));
        for l in block.drain(..) {
            out.push_str(l);
            out.push('\n');
        }
    };
    for line in text.lines() {
        if line.starts_with('#') {
            flush(&mut block, &mut out);
            out.push_str(line);
            out.push('\n');
        } else {
            block.push(line);
        }
    }
    flush(&mut block, &mut out);
    out
}

/// Orders text with runs of digits compared as numbers.
fn natural_cmp(left: &str, right: &str) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    let (mut a, mut b) = (left.as_bytes(), right.as_bytes());
    loop {
        match (a.first(), b.first()) {
            (None, None) => return Ordering::Equal,
            (None, _) => return Ordering::Less,
            (_, None) => return Ordering::Greater,
            (Some(ca), Some(cb)) if ca.is_ascii_digit() && cb.is_ascii_digit() => {
                let da = a.iter().take_while(|c| c.is_ascii_digit()).count();
                let db = b.iter().take_while(|c| c.is_ascii_digit()).count();
                let (na, nb) = (trim_zeros(&a[..da]), trim_zeros(&b[..db]));
                let order = na.len().cmp(&nb.len()).then(na.cmp(nb));
                if order.is_ne() {
                    return order;
                }
                (a, b) = (&a[da..], &b[db..]);
            }
            (Some(ca), Some(cb)) if ca != cb => return ca.cmp(cb),
            _ => (a, b) = (&a[1..], &b[1..]),
        }
    }
}

fn trim_zeros(digits: &[u8]) -> &[u8] {
    let n = digits.iter().take_while(|&&c| c == b'0').count();
    &digits[n..]
}

/// A value measured as an `f32` (and perhaps scaled), to the 7 significant digits an f32
/// holds: `f64::from(0.87_f32)` is 0.8700000047683716, noise a reader of /metrics took for a
/// measurement.
fn decimal(x: f64) -> f64 {
    if x == 0.0 || !x.is_finite() {
        return x;
    }
    let k = 10f64.powi(6 - x.abs().log10().floor() as i32);
    (x * k).round() / k
}

/// `OpenMetrics` text as the Prometheus text format: no end marker, no UNIT lines, and a
/// counter's HELP and TYPE name its samples (`x_total`), not its family (`x`).
fn to_text_format(openmetrics: &str) -> String {
    let counters: Vec<&str> = openmetrics
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE ")?.strip_suffix(" counter"))
        .collect();
    let mut out = String::with_capacity(openmetrics.len());
    for line in openmetrics.lines() {
        if line == "# EOF" || line.starts_with("# UNIT ") {
            continue;
        }
        let renamed = ["# HELP ", "# TYPE "].iter().find_map(|p| {
            let rest = line.strip_prefix(p)?;
            let name = counters
                .iter()
                .find(|c| rest.starts_with(&format!("{c} ")))?;
            Some(format!("{p}{name}_total{}", &rest[name.len()..]))
        });
        out.push_str(renamed.as_deref().unwrap_or(line));
        out.push('\n');
    }
    out
}

/// Every metric family `/metrics` writes.
struct Families {
    up: Gauges,
    util: Gauges,
    mem_used: Gauges,
    mem_total: Gauges,
    power: Gauges,
    limit_enforced: Gauges,
    limit_default: Gauges,
    floor: Gauges,
    temp: Gauges,
    sm_clock: Gauges,
    mem_clock: Gauges,
    clock_event: Gauges,
    pcie_gen: Gauges,
    pcie_width: Gauges,
    pcie_gen_max: Gauges,
    pcie_width_max: Gauges,
    gpm_sm: Gauges,
    gpm_tensor: Gauges,
    gpm_dram: Gauges,
    finding_active: Gauges,
    finding_since: Gauges,
    culprit: Gauges,
    opened: Counters,
    self_cpu: Gauges,
    self_rss: Gauges,
    tick: Gauges,
    last_sample: Gauges,
    build_info: Gauges,
}

impl Families {
    fn register(reg: &mut Registry) -> Self {
        let mut g = |n: &str, h: &str, u: Option<Unit>| gauges(reg, n, h, u);
        let ratio = || Some(Unit::Other("ratio".into()));
        let bytes = || Some(Unit::Bytes);
        let watts = || Some(Unit::Other("watts".into()));
        let hertz = || Some(Unit::Other("hertz".into()));
        let f = Families {
            up: g(
                "up",
                "1 while the GPU answers, 0 once it fell off the bus",
                None,
            ),
            util: g(
                "utilization",
                "GPU utilization (NVML): share of time a kernel ran",
                ratio(),
            ),
            mem_used: g("memory_used", "GPU memory in use", bytes()),
            mem_total: g("memory_total", "GPU memory in all", bytes()),
            power: g("power", "power draw", watts()),
            limit_enforced: g("power_limit_enforced", "enforced power limit", watts()),
            limit_default: g("power_limit_default", "default power limit (TDP)", watts()),
            floor: g(
                "idle_floor",
                "the idle power the rules judge against",
                watts(),
            ),
            temp: g("temperature", "GPU temperature", Some(Unit::Celsius)),
            sm_clock: g("sm_clock", "SM clock", hertz()),
            mem_clock: g("memory_clock", "memory clock", hertz()),
            clock_event: g(
                "clock_event_active",
                "1 while NVML reports this clock-event reason",
                None,
            ),
            pcie_gen: g("pcie_link_generation", "current PCIe link generation", None),
            pcie_width: g("pcie_link_width", "current PCIe link width (lanes)", None),
            pcie_gen_max: g(
                "pcie_link_generation_max",
                "maximum PCIe link generation",
                None,
            ),
            pcie_width_max: g(
                "pcie_link_width_max",
                "maximum PCIe link width (lanes)",
                None,
            ),
            gpm_sm: g(
                "gpm_sm_active",
                "SM activity (GPM, Hopper and newer)",
                ratio(),
            ),
            gpm_tensor: g("gpm_tensor_active", "tensor pipe activity (GPM)", ratio()),
            gpm_dram: g("gpm_dram_active", "DRAM bandwidth used (GPM)", ratio()),
            finding_active: g(
                "finding_active",
                "1 while this finding is open on this GPU, else 0",
                None,
            ),
            finding_since: g(
                "finding_since",
                "when the open finding began (Unix time)",
                Some(Unit::Seconds),
            ),
            culprit: g(
                "finding_culprit_gpu",
                "the GPU a finding names as its culprit (the straggler)",
                None,
            ),
            self_cpu: g(
                "self_cpu",
                "gpuwatch's own CPU use, share of one core",
                ratio(),
            ),
            self_rss: g(
                "self_resident_memory",
                "gpuwatch's own resident memory",
                bytes(),
            ),
            tick: g(
                "tick_duration",
                "median time the source took per tick (NVML time)",
                Some(Unit::Seconds),
            ),
            last_sample: g(
                "last_sample_timestamp",
                "time of the newest sample (Unix time)",
                Some(Unit::Seconds),
            ),
            build_info: g("build_info", "gpuwatch's version", None),
            opened: Counters::default(),
        };
        reg.register(
            "findings_opened",
            "findings opened on this GPU since gpuwatch started",
            f.opened.clone(),
        );
        f
    }

    fn gpu_metrics(&self, dev: &crate::history::DeviceHistory, id: &Labels, view: &Store) {
        let lost = matches!(dev.status, DeviceStatus::Lost { .. });
        self.up.get_or_create(id).set(if lost { 0.0 } else { 1.0 });
        let info = &dev.info;
        let set = |f: &Gauges, v: Option<f64>| {
            // Unsupported is absent, not 0.
            if let Some(v) = v {
                f.get_or_create(id).set(v);
            }
        };
        set(&self.mem_total, info.memory_total_bytes.map(|b| b as f64));
        set(
            &self.limit_default,
            info.power_limit_default_w.map(|w| decimal(f64::from(w))),
        );
        set(&self.pcie_gen_max, info.pcie_max_gen.map(f64::from));
        set(&self.pcie_width_max, info.pcie_max_width.map(f64::from));
        set(
            &self.floor,
            view.findings()
                .floor_w(info.index)
                .map(|w| decimal(f64::from(w))),
        );
        let Some(s) = dev.samples.latest().filter(|_| !lost) else {
            return;
        };
        let ratio = |v: Option<f32>| v.map(|p| decimal(f64::from(p) / 100.0));
        set(&self.util, ratio(s.util_gpu_pct));
        set(&self.mem_used, s.mem_used_bytes.map(|b| b as f64));
        set(&self.power, s.power_w.map(|w| decimal(f64::from(w))));
        set(
            &self.limit_enforced,
            s.power_limit_w
                .or(info.power_limit_enforced_w)
                .map(|w| decimal(f64::from(w))),
        );
        set(&self.temp, s.temp_c.map(f64::from));
        set(&self.sm_clock, s.sm_clock_mhz.map(|m| f64::from(m) * 1e6));
        set(&self.mem_clock, s.mem_clock_mhz.map(|m| f64::from(m) * 1e6));
        set(&self.pcie_gen, s.pcie_gen.map(f64::from));
        set(&self.pcie_width, s.pcie_width.map(f64::from));
        set(&self.gpm_sm, ratio(s.gpm.sm_active_pct));
        set(&self.gpm_tensor, ratio(s.gpm.tensor_active_pct));
        set(&self.gpm_dram, ratio(s.gpm.dram_bw_pct));
        if let Some(bits) = s.clock_events {
            for (bit, name) in clock_event::ALL {
                self.clock_event
                    .get_or_create(&with(id.clone(), "reason", name))
                    .set(if bits & bit != 0 { 1.0 } else { 0.0 });
            }
        }
    }

    fn self_metrics(&self, view: &Store) {
        let none = Labels::new();
        let c = view.cost();
        if let Some(v) = c.cpu_pct {
            self.self_cpu
                .get_or_create(&none)
                .set(decimal(f64::from(v) / 100.0));
        }
        if let Some(v) = c.rss_bytes {
            self.self_rss.get_or_create(&none).set(v as f64);
        }
        if let Some(v) = c.tick_ms_median {
            self.tick
                .get_or_create(&none)
                .set(decimal(f64::from(v) / 1000.0));
        }
        if let Some(t) = view.history().latest_ms() {
            self.last_sample.get_or_create(&none).set(t as f64 / 1000.0);
        }
    }
}

/// Per-process series (opt-in): labelled so Prometheus can join them with kube-state-metrics
/// (`container_id` as `kube_pod_container_info` spells it, `pod_uid` as `kube_pod_info`'s `uid`).
struct ProcessFamilies {
    memory: Gauges,
    kernel_time: Gauges,
    cpu: Gauges,
    rss: Gauges,
}

impl ProcessFamilies {
    fn register(reg: &mut Registry) -> Self {
        let mut g = |n: &str, h: &str, u: Option<Unit>| gauges(reg, n, h, u);
        ProcessFamilies {
            memory: g(
                "process_gpu_memory",
                "GPU memory the process holds",
                Some(Unit::Bytes),
            ),
            kernel_time: g(
                "process_kernel_time",
                "share of time a kernel of the process ran (NVML per-process utilization, not SM activity)",
                Some(Unit::Other("ratio".into())),
            ),
            cpu: g(
                "process_cpu",
                "host CPU of the process, in cores",
                Some(Unit::Other("cores".into())),
            ),
            rss: g(
                "process_resident_memory",
                "host memory of the process",
                Some(Unit::Bytes),
            ),
        }
    }

    fn add(&self, dev: &crate::history::DeviceHistory, gpu: &Labels, top: usize) {
        let mut procs: Vec<&crate::model::ProcessSample> = dev.processes.iter().collect();
        procs.sort_by_key(|p| std::cmp::Reverse(p.gpu_mem_bytes.unwrap_or(0)));
        for p in procs.into_iter().take(top) {
            let h = p.host.as_ref();
            let mut labels = with(gpu.clone(), "pid", &p.pid.to_string());
            // The kernel's 15-character process name, printable: no free text.
            let name = h.map_or(String::new(), |h| {
                crate::text::printable(&h.name).chars().take(15).collect()
            });
            labels.push(("process_name".into(), label_value(&name)));
            let ctr = h.and_then(|h| h.container.as_deref());
            labels.push((
                "container_id".into(),
                label_value(&ctr.map_or(String::new(), |c| format!("{}://{}", c.runtime, c.id))),
            ));
            labels.push((
                "pod_uid".into(),
                label_value(&ctr.and_then(|c| c.pod_uid.clone()).unwrap_or_default()),
            ));
            let set = |f: &Gauges, v: Option<f64>| {
                if let Some(v) = v {
                    f.get_or_create(&labels).set(v);
                }
            };
            set(&self.memory, p.gpu_mem_bytes.map(|b| b as f64));
            set(
                &self.kernel_time,
                p.sm_pct.map(|v| decimal(f64::from(v) / 100.0)),
            );
            set(
                &self.cpu,
                h.and_then(|h| h.cpu_pct)
                    .map(|v| decimal(f64::from(v) / 100.0)),
            );
            set(&self.rss, h.and_then(|h| h.rss_bytes).map(|b| b as f64));
        }
    }
}

/// The dcgm-exporter names and units the standard DCGM Grafana dashboard reads (MiB, MHz, %,
/// W, °C; profiling ratios 0–1), for nodes without dcgm-exporter (`--dcgm-compat`).
struct DcgmFamilies {
    util: Gauges,
    mem_copy_util: Gauges,
    fb_used: Gauges,
    fb_free: Gauges,
    power: Gauges,
    temp: Gauges,
    sm_clock: Gauges,
    mem_clock: Gauges,
    sm_active: Gauges,
    tensor_active: Gauges,
    dram_active: Gauges,
}

impl DcgmFamilies {
    fn register(reg: &mut Registry) -> Self {
        let mut g = |n: &str, h: &str| gauges(reg, n, h, None);
        DcgmFamilies {
            util: g("DCGM_FI_DEV_GPU_UTIL", "GPU utilization (in %)"),
            mem_copy_util: g("DCGM_FI_DEV_MEM_COPY_UTIL", "Memory utilization (in %)"),
            fb_used: g("DCGM_FI_DEV_FB_USED", "Framebuffer memory used (in MiB)"),
            fb_free: g("DCGM_FI_DEV_FB_FREE", "Framebuffer memory free (in MiB)"),
            power: g("DCGM_FI_DEV_POWER_USAGE", "Power draw (in W)"),
            temp: g("DCGM_FI_DEV_GPU_TEMP", "GPU temperature (in C)"),
            sm_clock: g("DCGM_FI_DEV_SM_CLOCK", "SM clock frequency (in MHz)"),
            mem_clock: g("DCGM_FI_DEV_MEM_CLOCK", "Memory clock frequency (in MHz)"),
            sm_active: g(
                "DCGM_FI_PROF_SM_ACTIVE",
                "The ratio of cycles an SM has at least 1 warp assigned (GPM)",
            ),
            tensor_active: g(
                "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
                "Ratio of cycles the tensor (HMMA) pipe is active (GPM)",
            ),
            dram_active: g(
                "DCGM_FI_PROF_DRAM_ACTIVE",
                "Ratio of cycles the device memory interface is active (GPM)",
            ),
        }
    }

    fn add(&self, dev: &crate::history::DeviceHistory, host: &str) {
        let info = &dev.info;
        // dcgm-exporter's labels, in its spelling.
        let id: Labels = vec![
            ("gpu".into(), label_value(&info.index.to_string())),
            ("UUID".into(), label_value(&info.uuid)),
            ("pci_bus_id".into(), label_value(&info.pci_bus_id)),
            (
                "device".into(),
                label_value(&format!("nvidia{}", info.index)),
            ),
            ("modelName".into(), label_value(&info.name)),
            ("Hostname".into(), label_value(host)),
        ];
        let lost = matches!(dev.status, DeviceStatus::Lost { .. });
        let Some(s) = dev.samples.latest().filter(|_| !lost) else {
            return;
        };
        let set = |f: &Gauges, v: Option<f64>| {
            if let Some(v) = v {
                f.get_or_create(&id).set(v);
            }
        };
        let mib = |b: u64| (b >> 20) as f64;
        set(&self.util, s.util_gpu_pct.map(f64::from));
        set(&self.mem_copy_util, s.util_mem_pct.map(f64::from));
        set(&self.fb_used, s.mem_used_bytes.map(mib));
        set(
            &self.fb_free,
            s.mem_used_bytes
                .zip(info.memory_total_bytes)
                .map(|(u, t)| mib(t.saturating_sub(u))),
        );
        set(&self.power, s.power_w.map(|w| decimal(f64::from(w))));
        set(&self.temp, s.temp_c.map(f64::from));
        set(&self.sm_clock, s.sm_clock_mhz.map(f64::from));
        set(&self.mem_clock, s.mem_clock_mhz.map(f64::from));
        let ratio = |v: Option<f32>| v.map(|p| decimal(f64::from(p) / 100.0));
        set(&self.sm_active, ratio(s.gpm.sm_active_pct));
        set(&self.tensor_active, ratio(s.gpm.tensor_active_pct));
        set(&self.dram_active, ratio(s.gpm.dram_bw_pct));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Thresholds;
    use crate::model::{SelfCost, Tick};
    use crate::source::sim::{Scenario, SimSource};
    use std::time::Duration;

    fn mixed(seconds: u64) -> Store {
        let mut src = SimSource::new(Scenario::Mixed, 8, 7, 1_800_000_000_000, 250);
        let mut store = Store::new(&src, Duration::from_secs(900), Thresholds::default()).unwrap();
        let mut t = Tick::default();
        for _ in 0..seconds * 4 {
            src.sample(&mut t).unwrap();
            store.absorb(&t, SelfCost::default());
        }
        store
    }

    #[test]
    fn every_rule_on_every_gpu_is_0_or_1_and_the_hung_gpus_are_1() {
        let text = metrics_text(&mixed(45), "node1", false).unwrap();
        let line = |gpu: u32, finding: &str, v: &str| {
            text.lines().any(|l| {
                l.starts_with("gpuwatch_finding_active{")
                    && l.contains(&format!("gpu=\"{gpu}\""))
                    && l.contains(&format!("finding=\"{finding}\""))
                    && l.ends_with(&format!(" {v}.0"))
            })
        };
        for gpu in [4, 5] {
            assert!(line(gpu, "hang", "1"), "{text}");
        }
        for gpu in [0, 1, 6, 7] {
            assert!(line(gpu, "hang", "0"), "GPU {gpu}:\n{text}");
        }
        let series = text
            .lines()
            .filter(|l| l.starts_with("gpuwatch_finding_active{"))
            .count();
        assert!(series >= 8 * all_rules().len(), "{series}");
        assert!(text.contains("gpuwatch_power_watts{"), "{text}");
        assert!(text.contains("gpuwatch_findings_opened_total{"), "{text}");
        assert!(!text.contains("# EOF"));
        let om = metrics_text(&mixed(5), "node1", true).unwrap();
        assert!(om.ends_with("# EOF\n"), "{om}");
    }

    #[test]
    fn process_series_carry_the_container_and_pod_as_kube_state_metrics_spells_them() {
        let mut src = SimSource::new(Scenario::Healthy, 2, 7, 1_800_000_000_000, 250);
        let mut store = Store::new(&src, Duration::from_secs(60), Thresholds::default()).unwrap();
        let id = "ab".repeat(32);
        let cgroup = format!("0::/kubepods/burstable/pod8c2e4a5d-1b3f-4e6a-9c7d-0e1f2a3b4c5d/{id}");
        let ctr = Arc::new(crate::container::parse_cgroup(&cgroup).unwrap());
        let mut t = Tick::default();
        for _ in 0..20 {
            src.sample(&mut t).unwrap();
            for p in &mut t.devices[1].processes {
                p.host.as_mut().unwrap().container = Some(ctr.clone());
            }
            store.absorb(&t, SelfCost::default());
        }
        let extras = Extras {
            processes: 1,
            dcgm: true,
        };
        for openmetrics in [false, true] {
            let text = metrics_text_with(&store, "n", openmetrics, extras).unwrap();
            let on = |gpu: u32| {
                text.lines()
                    .find(|l| {
                        l.starts_with("gpuwatch_process_gpu_memory_bytes{")
                            && l.contains(&format!("gpu=\"{gpu}\""))
                    })
                    .unwrap_or_else(|| panic!("no process series on GPU {gpu}:\n{text}"))
                    .to_string()
            };
            assert!(
                on(1).contains(&format!("container_id=\"kubernetes://{id}\"")),
                "{}",
                on(1)
            );
            assert!(on(1).contains("pod_uid=\"8c2e4a5d-1b3f-4e6a-9c7d-0e1f2a3b4c5d\""));
            assert!(on(0).contains("container_id=\"\""), "{}", on(0));
            // DCGM units: MiB and MHz, util in %.
            assert!(text.contains("DCGM_FI_DEV_FB_USED{gpu=\"0\""), "{text}");
            assert_eq!(
                text.matches("# EOF").count(),
                usize::from(openmetrics),
                "{text}"
            );
            if openmetrics {
                assert!(text.ends_with("# EOF\n"));
            }
        }
    }

    #[test]
    fn series_come_in_gpu_order_every_scrape_without_float_noise() {
        let view = mixed(20);
        let extras = Extras {
            processes: 2,
            dcgm: true,
        };
        let first = metrics_text_with(&view, "n", true, extras).unwrap();
        for _ in 0..5 {
            assert_eq!(metrics_text_with(&view, "n", true, extras).unwrap(), first);
        }
        let gpus: Vec<&str> = first
            .lines()
            .filter(|l| l.starts_with("gpuwatch_power_watts{"))
            .map(|l| l.split('"').nth(1).unwrap())
            .collect();
        assert_eq!(gpus, ["0", "1", "2", "3", "4", "5", "6", "7"]);
        for line in first.lines().filter(|l| !l.starts_with('#')) {
            let value = line.rsplit(' ').next().unwrap();
            let digits = value.chars().filter(char::is_ascii_digit).count();
            assert!(digits <= 13, "float noise in {line}");
        }
    }

    #[test]
    fn natural_order_compares_numbers_by_value() {
        let mut v = [
            "g{gpu=\"10\"}",
            "g{gpu=\"2\"}",
            "g{gpu=\"02x\"}",
            "f",
            "g{gpu=\"1\"}",
        ];
        v.sort_by(|a, b| natural_cmp(a, b));
        assert_eq!(
            v,
            [
                "f",
                "g{gpu=\"1\"}",
                "g{gpu=\"2\"}",
                "g{gpu=\"02x\"}",
                "g{gpu=\"10\"}"
            ]
        );
    }

    #[test]
    fn health_says_why_it_is_not_ready() {
        let view = mixed(0);
        assert_eq!(health(&view, 0).0, 503);
        let view = mixed(2);
        let latest = view.history().latest_ms().unwrap();
        assert_eq!(health(&view, latest + 1_000), (200, "ok".into()));
        let (code, why) = health(&view, latest + 60_000);
        assert_eq!(code, 503);
        assert!(why.contains("stalled"), "{why}");
    }
}
