//! `gpuwatch serve`: the sampler and the rules, headless, behind a small HTTP server for
//! Prometheus. `/metrics` (the exposition format written directly, `exposition.rs`), the open
//! and recent findings as `/findings.json` (the structure of `diagnose --json`) and `/healthz`.
//!
//! A scrape never calls NVML: the pacer's thread samples and feeds the store; a request reads
//! the store in place under the monitor's lock, and its answer is kept until the next tick
//! (`Cache`), so scrapes between two ticks encode nothing again.

use std::sync::{Arc, Mutex};

use anyhow::{anyhow, Context, Result};
use bytes::Bytes;

use crate::monitor::Config;
use crate::monitor::Source;
use crate::monitor::Store;
use crate::monitor::{Monitor, Setup};
use crate::report::Diagnosis;

/// The default port: not Prometheus (9090), `node_exporter` (9100) or dcgm-exporter (9400).
pub const DEFAULT_LISTEN: &str = "127.0.0.1:9947";

mod activity;
mod exposition;
mod http;
mod metrics;
mod webconfig;

pub use metrics::{metrics_text, metrics_text_with, Extras};

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
         (at most {cap} connection{}{auth}; Ctrl-C stops)",
        if cap == 1 { "" } else { "s" }
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
/// `:PORT`, as `node_exporter` and Prometheus take it, is every address of this machine: IPv6
/// and IPv4 (`[::]`, dual-stack), or IPv4 alone where the host has no IPv6.
async fn bind(listen: &str) -> Result<tokio::net::TcpListener> {
    if let Some(port) = listen.strip_prefix(':') {
        if let Ok(l) = bind_one(&format!("[::]:{port}"), listen).await {
            return Ok(l);
        }
        return bind_one(&format!("0.0.0.0:{port}"), listen).await;
    }
    bind_one(listen, listen).await
}

/// Listens on `addr`; messages name `listen`, what the user wrote.
async fn bind_one(addr: &str, listen: &str) -> Result<tokio::net::TcpListener> {
    let refused = |e: std::io::Error| {
        if e.kind() == std::io::ErrorKind::AddrInUse {
            anyhow!(
                "cannot listen on {listen}: {e}. Another exporter is on that port: choose \
                 another with --listen ADDR:PORT"
            )
        } else if e.kind() == std::io::ErrorKind::PermissionDenied {
            anyhow!(
                "cannot listen on {listen}: {e}. A port below 1024 needs root or the \
                 capability to bind one (sudo setcap cap_net_bind_service+ep $(command -v \
                 gpuwatch)); or choose a port above 1023, such as 9947"
            )
        } else {
            anyhow!("cannot listen on {listen}: {e}. --listen takes ADDR:PORT of this machine, such as 127.0.0.1:9947 or 0.0.0.0:9947 (:9947 for every address)")
        }
    };
    let addr = tokio::net::lookup_host(addr)
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
    /// Text format, then `OpenMetrics`; and each gzip-compressed, once asked for.
    metrics: [Option<Bytes>; 2],
    metrics_gz: [Option<Bytes>; 2],
    findings: Option<Bytes>,
}

fn reply(status: u16, content_type: &'static str, body: impl Into<Bytes>) -> http::Reply {
    http::Reply {
        status,
        content_type,
        body: body.into(),
        gzipped: false,
    }
}

impl http::Handler for Exporter {
    fn answer(&self, asked: &http::Asked) -> http::Reply {
        if *asked.method != hyper::Method::GET && *asked.method != hyper::Method::HEAD {
            return reply(405, "text/plain", "only GET and HEAD\n");
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
            "/metrics" => self.metrics(cache, &store, asked),
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
    /// Encoded once a tick, and compressed once a tick for the scrapers that take gzip
    /// (Prometheus does: 864 KB a scrape at 64 GPUs went over the wire as it was).
    fn metrics(&self, cache: &mut Cache, store: &Store, asked: &http::Asked) -> http::Reply {
        let openmetrics = asked.openmetrics;
        let slot = usize::from(openmetrics);
        if cache.metrics[slot].is_none() {
            match metrics_text_with(store, &self.host, openmetrics, self.extras) {
                Ok(body) => cache.metrics[slot] = Some(Bytes::from(body)),
                Err(e) => return reply(500, "text/plain", format!("encoding failed: {e}\n")),
            }
        }
        let plain = cache.metrics[slot].clone().unwrap_or_default();
        let gzipped = asked.gzip.then(|| {
            cache.metrics_gz[slot]
                .get_or_insert_with(|| gzip(&plain))
                .clone()
        });
        let content_type = if openmetrics {
            "application/openmetrics-text; version=1.0.0; charset=utf-8"
        } else {
            "text/plain; version=0.0.4; charset=utf-8"
        };
        let mut answer = reply(200, content_type, gzipped.clone().unwrap_or(plain));
        answer.gzipped = gzipped.is_some();
        answer
    }
}

/// `body` gzip-compressed at the fastest level: at 64 GPUs 42 KB instead of 864 KB, for
/// 0.39 ms of CPU once a tick, about what encoding the body costs (0.35 ms; `benches/core.rs`,
/// `gzip_metrics_64gpu`).
pub fn gzip(body: &[u8]) -> Bytes {
    use std::io::Write as _;
    let mut gz = flate2::write::GzEncoder::new(
        Vec::with_capacity(body.len() / 8),
        flate2::Compression::fast(),
    );
    // Writing into a `Vec` cannot fail.
    let _ = gz.write_all(body);
    Bytes::from(gz.finish().unwrap_or_default())
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
        seconds: view.history().span_s(),
        worst: findings.iter().map(|f| f.severity).max(),
        findings,
        judging: found.pending().cloned().collect(),
        replay: view.is_replay(),
        cut: view.cut().map(str::to_string),
        stopped: view.error().map(str::to_string),
        stacks: view.history().stacks.clone(),
        show_stacks: false,
    };
    serde_json::to_string_pretty(&d).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Thresholds;
    use crate::model::{SelfCost, Tick};
    use crate::rules::all_rules;
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

    /// `/findings.json` says what `diagnose --json` says: the ticks and the time they span
    /// (it said 0 seconds whatever had been sampled).
    #[test]
    fn findings_json_says_how_long_was_sampled() {
        let json: serde_json::Value = serde_json::from_str(&findings_json(&mixed(45))).unwrap();
        assert_eq!(json["samples"], 180);
        assert_eq!(json["seconds"], 44.75);
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
