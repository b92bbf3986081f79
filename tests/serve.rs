//! `gpuwatch serve` against the real thing: a real Prometheus (Debian's `prometheus` package,
//! which `.ci/run` installs) scrapes `serve --demo=mixed` on loopback and its query API must
//! return the hang finding as 1 on the two hung GPUs and 0 on the others; `promtool` checks the
//! exposition and the alert rules. Those that need Prometheus are `#[ignore]`d with what they
//! need: README's `cargo test` lists them as ignored, `.ci/run` installs it and runs them.

mod common;

use common::wait_until;
use common::{require, serve, Killed};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

/// A plain HTTP/1.0 GET: (status, body).
fn get(addr: &str, path: &str) -> Option<(u16, String)> {
    let mut s = TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").ok()?;
    let mut raw = String::new();
    s.read_to_string(&mut raw).ok()?;
    let (head, body) = raw.split_once("\r\n\r\n")?;
    let status = head.split(' ').nth(1)?.parse().ok()?;
    Some((status, body.to_string()))
}

/// A real Prometheus on `prom` with `dir`/prometheus.yml, its data in `dir`/data.
fn start_prometheus(prometheus: &str, dir: &Path, prom: &str) -> Killed {
    Killed(
        Command::new(prometheus)
            .arg(format!(
                "--config.file={}",
                dir.join("prometheus.yml").display()
            ))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.join("data").display()
            ))
            .arg(format!("--web.listen-address={prom}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    )
}

/// `serve --demo=mixed` with the opt-in series, once it answers `/healthz`.
fn serve_mixed_with_extras() -> (Killed, String) {
    let (g, addr) = serve(&["--demo=mixed", "--processes", "2", "--dcgm-compat"]);
    wait_until(10, || get(&addr, "/healthz").filter(|(c, _)| *c == 200)).expect("ready");
    (g, addr)
}

/// A scraper that takes gzip (Prometheus asks for it) gets `/metrics` compressed, with the
/// headers that say so; one that does not, or refuses it, gets it as it is.
#[test]
fn metrics_are_gzipped_for_a_scraper_that_takes_gzip() {
    let (_g, addr) = serve_mixed_with_extras();
    let fetch = |encoding: &str| {
        let mut s = TcpStream::connect(&addr).unwrap();
        write!(
            s,
            "GET /metrics HTTP/1.0\r\nHost: {addr}\r\nAccept-Encoding: {encoding}\r\n\r\n"
        )
        .unwrap();
        let mut raw = Vec::new();
        s.read_to_end(&mut raw).unwrap();
        let at = raw.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
        let head = String::from_utf8_lossy(&raw[..at]).to_ascii_lowercase();
        (head, raw[at + 4..].to_vec())
    };
    let (head, body) = fetch("deflate, gzip");
    assert!(
        head.contains("\r\ncontent-encoding: gzip") && head.contains("\r\nvary: accept-encoding"),
        "{head}"
    );
    let mut text = String::new();
    flate2::read::GzDecoder::new(&body[..])
        .read_to_string(&mut text)
        .unwrap();
    assert!(
        text.starts_with("# HELP gpuwatch_up") && text.contains("DCGM_FI_PROF_SM_ACTIVE{"),
        "{text}"
    );
    assert!(
        body.len() * 5 < text.len(),
        "{} of {} bytes",
        body.len(),
        text.len()
    );
    for plain in ["identity", "gzip;q=0"] {
        let (head, body) = fetch(plain);
        assert!(!head.contains("content-encoding"), "{plain}: {head}");
        assert!(
            head.contains("\r\nvary: accept-encoding"),
            "{plain}: {head}"
        );
        assert!(body.starts_with(b"# HELP gpuwatch_up"), "{plain}");
    }
}

#[test]
fn healthz_findings_and_the_opt_in_series() {
    let (_g, addr) = serve_mixed_with_extras();
    let (code, _) = get(&addr, "/nope").unwrap();
    assert_eq!(code, 404);
    let (code, json) = get(&addr, "/findings.json").unwrap();
    assert_eq!(code, 200);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["source"], "demo: mixed");
    let (code, metrics) = get(&addr, "/metrics").unwrap();
    assert_eq!(code, 200);
    assert!(metrics.contains("gpuwatch_finding_active{"), "{metrics}");
    // The opt-in series: each GPU's processes, and the DCGM names for the DCGM dashboard.
    assert!(
        metrics.contains("gpuwatch_process_gpu_memory_bytes{gpu=\"0\"")
            && metrics.contains("process_name=\"python3\""),
        "{metrics}"
    );
    for gpu in 0..8 {
        assert!(
            metrics.contains(&format!("DCGM_FI_DEV_GPU_UTIL{{gpu=\"{gpu}\"")),
            "GPU {gpu}: {metrics}"
        );
    }
    assert!(metrics.contains("DCGM_FI_PROF_SM_ACTIVE{"));
}

#[test]
#[ignore = "needs Debian's prometheus package (prometheus, promtool): .ci/run installs it"]
fn the_served_exposition_is_promtool_clean() {
    let promtool = require("promtool");
    let (_g, addr) = serve_mixed_with_extras();
    let (code, metrics) = get(&addr, "/metrics").unwrap();
    assert_eq!(code, 200);
    assert!(metrics.contains("DCGM_FI_PROF_SM_ACTIVE{"), "{metrics}");
    let mut p = Command::new(promtool)
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    p.stdin
        .take()
        .unwrap()
        .write_all(metrics.as_bytes())
        .unwrap();
    let out = p.wait_with_output().unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    // The only lint allowed: the labels spelled as dcgm-exporter spells them (UUID, modelName,
    // Hostname), so that dashboards join the two.
    let problems: Vec<&str> = text
        .lines()
        .filter(|l| {
            !l.trim().is_empty() && !l.contains("should be written in 'snake_case' not 'camelCase'")
        })
        .collect();
    assert!(problems.is_empty(), "promtool: {problems:?}");
}

#[test]
#[ignore = "needs Debian's prometheus package (prometheus, promtool): .ci/run installs it"]
fn the_alert_rules_pass_promtool() {
    let promtool = require("promtool");
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/deploy");
    for args in [
        ["check", "rules", "alerts.yml"],
        ["test", "rules", "alerts.test.yml"],
        ["check", "rules", "fleet-rules.yml"],
        ["test", "rules", "fleet-rules.test.yml"],
    ] {
        let out = Command::new(&promtool)
            .args(args)
            .current_dir(&dir)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "promtool {args:?}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// A real Prometheus scraping `target` every second as job `job`: its folder, the process,
/// and the address of its API.
fn scraping(prometheus: &str, job: &str, target: &str) -> (tempfile::TempDir, Killed, String) {
    let dir = tempfile::tempdir().unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let prom = format!("127.0.0.1:{port}");
    std::fs::write(
        dir.path().join("prometheus.yml"),
        format!(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n  - job_name: {job}\n    static_configs:\n      - targets: ['{target}']\n"
        ),
    )
    .unwrap();
    let p = start_prometheus(prometheus, dir.path(), &prom);
    (dir, p, prom)
}

/// A real Prometheus scrapes the mixed demo every second; its query API answers
/// `gpuwatch_finding_active{finding="hang"}` with 1 on GPUs 4 and 5 (hung) and 0 on the rest.
#[test]
#[ignore = "needs Debian's prometheus package (prometheus, promtool): .ci/run installs it"]
fn a_real_prometheus_sees_the_hung_gpus() {
    let prometheus = require("prometheus");
    let (_g, target) = serve(&["--demo=mixed"]);
    let (_dir, _p, prom) = scraping(&prometheus, "gpuwatch", &target);
    let query = "/api/v1/query?query=max%20by%20(gpu)%20(gpuwatch_finding_active%7Bfinding%3D%22hang%22%7D)";
    // The demo's hang needs its 8 s window in real time, then a scrape.
    let seen = wait_until(60, || {
        let (code, body) = get(&prom, query)?;
        if code != 200 {
            return None;
        }
        let v: serde_json::Value = serde_json::from_str(&body).ok()?;
        let mut by_gpu: Vec<(u32, String)> = v["data"]["result"]
            .as_array()?
            .iter()
            .filter_map(|r| {
                Some((
                    r["metric"]["gpu"].as_str()?.parse().ok()?,
                    r["value"][1].as_str()?.to_string(),
                ))
            })
            .collect();
        by_gpu.sort();
        let hung: Vec<u32> = by_gpu
            .iter()
            .filter(|(_, v)| v == "1")
            .map(|(g, _)| *g)
            .collect();
        (by_gpu.len() == 8 && hung == [4, 5]).then_some(by_gpu)
    });
    let seen = seen.expect("Prometheus reported the hang on GPUs 4 and 5 within 60 s");
    for (gpu, v) in seen {
        assert_eq!(v, if gpu == 4 || gpu == 5 { "1" } else { "0" }, "GPU {gpu}");
    }
}

/// A real Prometheus scrapes the health demo: the pending remap, the Xid by its code, the
/// energy of each GPU and of the findings come through as series it can query.
#[test]
#[ignore = "needs Debian's prometheus package (prometheus, promtool): .ci/run installs it"]
fn a_real_prometheus_sees_health_and_energy() {
    let prometheus = require("prometheus");
    let (_g, target) = serve(&["--demo=health", "--dcgm-compat"]);
    let (_dir, _p, prom) = scraping(&prometheus, "gpuwatch", &target);
    let values = |q: &str| -> Option<Vec<(String, f64)>> {
        let (code, body) = get(&prom, &format!("/api/v1/query?query={q}"))?;
        let v: serde_json::Value = serde_json::from_str(&body).ok()?;
        (code == 200).then_some(())?;
        v["data"]["result"]
            .as_array()?
            .iter()
            .map(|r| {
                Some((
                    r["metric"]["gpu"].as_str()?.to_string(),
                    r["value"][1].as_str()?.parse().ok()?,
                ))
            })
            .collect()
    };
    // The demo's ECC error comes 10 s in; the finding's energy then grows every scrape.
    let ecc = wait_until(60, || {
        let v = values("gpuwatch_finding_energy_joules_total%7Bfinding%3D%22ecc%22%7D")?;
        (v.len() == 1 && v[0].1 > 1000.0).then_some(v)
    })
    .expect("Prometheus saw the energy of the ecc finding within 60 s");
    assert_eq!(ecc[0].0, "0");
    let pending = values("gpuwatch_row_remap_pending%20%3D%3D%201").unwrap();
    assert_eq!(
        pending.iter().map(|(g, _)| g.as_str()).collect::<Vec<_>>(),
        ["0"]
    );
    let xid = values("gpuwatch_xid_errors_total%7Bxid%3D%2294%22%7D").unwrap();
    assert_eq!(xid, [("0".to_string(), 1.0)]);
    let dcgm_xid = values("DCGM_FI_DEV_XID_ERRORS").unwrap();
    assert_eq!(dcgm_xid, [("0".to_string(), 94.0)]);
    let energy = values("gpuwatch_energy_joules_total").unwrap();
    assert_eq!(energy.len(), 4);
    assert!(energy.iter().all(|(_, j)| *j > 1000.0), "{energy:?}");
}

/// docs/fleet.md's metric reference is what `/metrics` writes (`GPUWATCH_BLESS=1` rewrites it).
#[test]
fn the_metric_reference_in_docs_is_current() {
    let extras = gpuwatch::serve::Extras {
        processes: 1,
        dcgm: true,
    };
    // The mixed demo has every family but the health ones' samples; the health demo has those.
    let text = common::mixed_metrics(extras) + &common::health_metrics(extras);
    let mut rows = Vec::new();
    let mut help = std::collections::HashMap::new();
    for l in text.lines() {
        if let Some(rest) = l.strip_prefix("# HELP ") {
            let (name, h) = rest.split_once(' ').unwrap();
            help.insert(name.to_string(), h.trim_end_matches('.').to_string());
        }
        if let Some(rest) = l.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').unwrap();
            let labels: Vec<String> = text
                .lines()
                .find(|s| s.starts_with(&format!("{name}{{")))
                .map(|s| {
                    s[name.len() + 1..s.find('}').unwrap()]
                        .split(',')
                        .filter_map(|kv| kv.split_once('=').map(|(k, _)| k.to_string()))
                        .collect()
                })
                .unwrap_or_default();
            rows.push(format!(
                "| `{name}` | {kind} | {} | {} |",
                labels.join(", "),
                help.get(name).cloned().unwrap_or_default()
            ));
        }
    }
    rows.sort();
    rows.dedup();
    let table = format!(
        "<!-- metrics:start -->\n| metric | type | labels | meaning |\n|---|---|---|---|\n{}\n<!-- metrics:end -->",
        rows.join("\n")
    );
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/fleet.md");
    let doc = std::fs::read_to_string(&path).unwrap();
    let (a, b) = (
        doc.find("<!-- metrics:start -->").unwrap(),
        doc.find("<!-- metrics:end -->").unwrap() + "<!-- metrics:end -->".len(),
    );
    if std::env::var_os("GPUWATCH_BLESS").is_some() {
        std::fs::write(&path, format!("{}{table}{}", &doc[..a], &doc[b..])).unwrap();
        return;
    }
    assert_eq!(
        &doc[a..b],
        table,
        "docs/fleet.md's metric table (GPUWATCH_BLESS=1 rewrites it)"
    );
}

/// The exposition of a store whose processes named themselves to forge series.
fn hostile_exposition() -> String {
    let store = common::store_with(gpuwatch::source::sim::Scenario::Mixed, 2, 20, |t| {
        for d in &mut t.devices {
            for p in &mut d.processes {
                if let Some(h) = p.host.as_mut() {
                    // What prctl(PR_SET_NAME) allows: 15 bytes, any but NUL.
                    h.name = "a\"} 1\nup 0\n#\\".into();
                }
            }
        }
    });
    let extras = gpuwatch::serve::Extras {
        processes: 4,
        dcgm: true,
    };
    gpuwatch::serve::metrics_text_with(&store, "node\"1\n", false, extras).unwrap()
}

/// A process that renames itself `a"} 1\nup 0\n#` gets a label value with those characters
/// escaped, not a series of its own: every line is a comment or one well-formed sample.
#[test]
fn hostile_process_names_cannot_forge_series() {
    let text = hostile_exposition();
    let mut samples = 0;
    for line in text.lines() {
        if line.starts_with('#') || line.is_empty() {
            continue;
        }
        samples += 1;
        assert!(!line.starts_with("up"), "forged: {line}");
        let name_end = line.find(['{', ' ']).unwrap();
        let name = &line[..name_end];
        assert!(
            name.starts_with("gpuwatch_") || name.starts_with("DCGM_FI_"),
            "a sample of {name:?}: {line}"
        );
        let value = line.rsplit(' ').next().unwrap();
        assert!(value.parse::<f64>().is_ok(), "value {value:?} in {line}");
    }
    assert!(
        text.contains(r#"process_name="a\"} 1\nup 0\n#\\""#),
        "{text}"
    );
    assert!(samples > 50, "{samples} samples");
}

/// A real Prometheus scrapes the hostile exposition (served as it is, over HTTP, by a few
/// lines here): the scrape succeeds, no series is forged, and the name reads back whole.
#[test]
#[ignore = "needs Debian's prometheus package (prometheus, promtool): .ci/run installs it"]
fn a_real_prometheus_ingests_hostile_process_names() {
    use std::io::Read as _;
    let prometheus = require("prometheus");
    let body = hostile_exposition();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let target = listener.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        for mut conn in listener.incoming().flatten() {
            let mut head = [0u8; 4096];
            let _ = conn.read(&mut head);
            let _ = write!(
                conn,
                "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    let (_dir, _p, prom) = scraping(&prometheus, "hostile", &target);
    let query = |q: &str| -> Option<serde_json::Value> {
        let (code, body) = get(&prom, &format!("/api/v1/query?query={q}"))?;
        (code == 200).then(|| serde_json::from_str(&body).ok())?
    };
    let names = wait_until(60, || {
        let v = query("gpuwatch_process_gpu_memory_bytes")?;
        let names: Vec<String> = v["data"]["result"]
            .as_array()?
            .iter()
            .filter_map(|r| Some(r["metric"]["process_name"].as_str()?.to_string()))
            .collect();
        (!names.is_empty()).then_some(names)
    })
    .expect("Prometheus ingested the process series within 60 s");
    assert!(names.iter().all(|n| n == "a\"} 1\nup 0\n#\\"), "{names:?}");
    let up = query("up").unwrap();
    let ups = up["data"]["result"].as_array().unwrap();
    assert_eq!(ups.len(), 1, "one up series, none forged: {ups:?}");
    assert_eq!(ups[0]["value"][1], "1", "the scrape succeeded: {ups:?}");
}

/// promtool reads the hostile exposition as the same series, without an error.
#[test]
#[ignore = "needs Debian's prometheus package (prometheus, promtool): .ci/run installs it"]
fn promtool_reads_the_hostile_exposition() {
    let promtool = require("promtool");
    let mut p = Command::new(promtool)
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    p.stdin
        .take()
        .unwrap()
        .write_all(hostile_exposition().as_bytes())
        .unwrap();
    let out = p.wait_with_output().unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    let problems: Vec<&str> = text
        .lines()
        .filter(|l| {
            !l.trim().is_empty() && !l.contains("should be written in 'snake_case' not 'camelCase'")
        })
        .collect();
    assert!(problems.is_empty(), "promtool: {problems:?}");
}

/// Runs openssl with `args` in `dir`; its failure fails the test with what it said.
fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new(require("openssl"))
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A CA and a server certificate for 127.0.0.1, made with openssl in `dir`.
fn certificates(dir: &Path) {
    let run = |args: &[&str]| openssl(dir, args);
    std::fs::write(dir.join("san.ext"), "subjectAltName=IP:127.0.0.1\n").unwrap();
    run(&[
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "ca.key",
        "-out",
        "ca.crt",
        "-subj",
        "/CN=gpuwatch test CA",
        "-days",
        "1",
    ]);
    run(&[
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "server.key",
        "-out",
        "server.csr",
        "-subj",
        "/CN=127.0.0.1",
    ]);
    run(&[
        "x509",
        "-req",
        "-in",
        "server.csr",
        "-CA",
        "ca.crt",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-out",
        "server.crt",
        "-days",
        "1",
        "-extfile",
        "san.ext",
    ]);
}

/// A real Prometheus scrapes over TLS with basic auth, from the exporter-toolkit file it would
/// give `node_exporter`; a job with the wrong password is refused (`up` 0).
#[test]
#[ignore = "needs Debian's prometheus package and openssl: .ci/run installs them"]
#[allow(clippy::too_many_lines)] // one end-to-end story (certificates, web config, exporter, Prometheus, two jobs, the answer), kept in the order it happens
fn a_real_prometheus_scrapes_over_tls_with_basic_auth() {
    let prometheus = require("prometheus");
    let dir = tempfile::tempdir().unwrap();
    certificates(dir.path());
    let hash = bcrypt::hash("s3cret", 10).unwrap();
    std::fs::write(
        dir.path().join("web.yml"),
        format!("tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\nbasic_auth_users:\n  prom: '{hash}'\n"),
    )
    .unwrap();
    let web = dir.path().join("web.yml");
    let (_g, target) = serve(&["--demo=mixed", "--web.config.file", web.to_str().unwrap()]);
    // Plain HTTP gets no metrics from a TLS listener.
    assert!(get(&target, "/metrics").is_none_or(|(c, _)| c != 200));
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let prom = format!("127.0.0.1:{port}");
    let ca = dir.path().join("ca.crt");
    let job = |name: &str, password: &str| {
        format!(
            "  - job_name: {name}\n    scheme: https\n    tls_config:\n      ca_file: {}\n    basic_auth:\n      username: prom\n      password: {password}\n    static_configs:\n      - targets: ['{target}']\n",
            ca.display()
        )
    };
    std::fs::write(
        dir.path().join("prometheus.yml"),
        format!(
            "global:\n  scrape_interval: 1s\nscrape_configs:\n{}{}",
            job("gpuwatch", "s3cret"),
            job("wrong", "guess")
        ),
    )
    .unwrap();
    let _p = start_prometheus(&prometheus, dir.path(), &prom);
    let up = |job: &str| {
        let (code, body) = get(
            &prom,
            &format!("/api/v1/query?query=up%7Bjob%3D%22{job}%22%7D"),
        )?;
        let v: serde_json::Value = serde_json::from_str(&body).ok().filter(|_| code == 200)?;
        v["data"]["result"][0]["value"][1]
            .as_str()
            .map(str::to_string)
    };
    let seen = wait_until(30, || {
        let (good, bad) = (up("gpuwatch")?, up("wrong")?);
        (good == "1").then_some((good, bad))
    });
    let (good, bad) =
        seen.expect("Prometheus scraped gpuwatch over TLS with basic auth within 30 s");
    assert_eq!((good.as_str(), bad.as_str()), ("1", "0"));
    let series = "/api/v1/query?query=count(gpuwatch_power_watts)";
    let count = wait_until(10, || {
        let (_, body) = get(&prom, series)?;
        let v: serde_json::Value = serde_json::from_str(&body).ok()?;
        v["data"]["result"][0]["value"][1]
            .as_str()
            .map(str::to_string)
    });
    assert_eq!(
        count.as_deref(),
        Some("8"),
        "the 8 demo GPUs' power, scraped over TLS"
    );
}

/// A client certificate signed by `ca.crt` (from `certificates`), as `client.crt` and
/// `client.key`.
fn client_certificate(dir: &Path) {
    let run = |args: &[&str]| openssl(dir, args);
    std::fs::write(dir.join("client.ext"), "extendedKeyUsage=clientAuth\n").unwrap();
    run(&[
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "client.key",
        "-out",
        "client.csr",
        "-subj",
        "/CN=scraper",
    ]);
    run(&[
        "x509",
        "-req",
        "-in",
        "client.csr",
        "-CA",
        "ca.crt",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-out",
        "client.crt",
        "-days",
        "1",
        "-extfile",
        "client.ext",
    ]);
}

/// `client_auth_type` as the exporter toolkit has it: `RequireAndVerifyClientCert` lets in
/// only a client whose certificate `client_ca_file` signed; `VerifyClientCertIfGiven` lets
/// in one without a certificate too.
#[test]
#[ignore = "needs openssl and curl: .ci/run installs them"]
fn client_certificates_are_checked_against_the_client_ca() {
    let curl = require("curl");
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    certificates(d);
    client_certificate(d);
    for (auth, without_cert_let_in) in [
        ("RequireAndVerifyClientCert", false),
        ("VerifyClientCertIfGiven", true),
    ] {
        let web = d.join(format!("{auth}.yml"));
        std::fs::write(
            &web,
            format!("tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n  client_auth_type: {auth}\n  client_ca_file: ca.crt\n"),
        )
        .unwrap();
        let (_g, target) = serve(&["--demo=mixed", "--web.config.file", web.to_str().unwrap()]);
        let scrape = |cert: bool| {
            let mut c = Command::new(&curl);
            c.current_dir(d)
                .args(["-sS", "--max-time", "5", "--cacert", "ca.crt"]);
            if cert {
                c.args(["--cert", "client.crt", "--key", "client.key"]);
            }
            let out = c.arg(format!("https://{target}/metrics")).output().unwrap();
            out.status.success()
                && String::from_utf8_lossy(&out.stdout).contains("gpuwatch_power_watts")
        };
        let with = wait_until(10, || scrape(true).then_some(()));
        assert!(
            with.is_some(),
            "{auth}: a client with a certificate the CA signed gets metrics"
        );
        assert_eq!(
            scrape(false),
            without_cert_let_in,
            "{auth}: a client without a certificate"
        );
    }
}
