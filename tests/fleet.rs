//! The fleet through Prometheus (#30): four `gpuwatch serve --demo fleet:H/4` as four hosts of
//! one job, a real Prometheus scraping them with docs/deploy/fleet-rules.yml loaded, and
//! `gpuwatch fleet` naming the rank the job waits for — in `--json`, in the recording rule, and
//! on screen in tmux at 80×24 and 160×48; then one host's exporter stops and its ranks are
//! named as silent. The view itself is drawn from a synthetic fleet without Prometheus.

mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::thread::sleep;
use std::time::Duration;

use common::wait_until;
use common::{require, serve, Killed};
use gpuwatch::fleet::prom::Series;
use gpuwatch::fleet::{build, Answers};

fn series(labels: &[(&str, &str)], value: f64) -> Series {
    Series {
        labels: labels
            .iter()
            .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
            .collect(),
        value,
    }
}

/// Two hosts of two GPUs, one job of four ranks: rank 3 idles, the others spin.
fn synthetic() -> gpuwatch::fleet::Fleet {
    let mut a = Answers::default();
    for (h, host) in ["node-a", "node-b"].iter().enumerate() {
        for g in 0..2 {
            let gpu = g.to_string();
            let rank = (h * 2 + g).to_string();
            let at = [
                ("Hostname", *host),
                ("gpu", gpu.as_str()),
                ("modelName", "NVIDIA H200"),
            ];
            a.seen.push(series(&at, 1.0));
            a.up.push(series(&at, 1.0));
            let spinning = rank != "3";
            a.util.push(series(&at, if spinning { 1.0 } else { 0.0 }));
            a.power.push(series(&at, 121.0));
            a.energy.push(series(&at, 5000.0));
            let state = if spinning { "spinning" } else { "idle" };
            a.state.push(series(
                &[("Hostname", *host), ("gpu", gpu.as_str()), ("state", state)],
                1.0,
            ));
            if spinning {
                a.findings.push(series(
                    &[
                        ("Hostname", *host),
                        ("gpu", gpu.as_str()),
                        ("finding", "hang"),
                        ("severity", "critical"),
                    ],
                    1.0,
                ));
            }
            let job = [
                ("Hostname", *host),
                ("gpu", gpu.as_str()),
                ("job_key", "slurm:4242"),
                ("rank", rank.as_str()),
                ("pid", "7000"),
            ];
            a.ranks_seen.push(series(&job, 1.0));
            a.ranks_now.push(series(&job, 1.0));
        }
    }
    build(&a, "http://prometheus:9090")
}

fn draw(view: &gpuwatch::fleet::tui::View, w: u16, h: u16) -> String {
    let mut term = ratatui::Terminal::new(ratatui::backend::TestBackend::new(w, h)).unwrap();
    term.draw(|f| gpuwatch::fleet::tui::render(f, view))
        .unwrap();
    let buf = term.backend().buffer();
    (0..h)
        .map(|y| {
            (0..w)
                .map(|x| buf[(x, y)].symbol())
                .collect::<String>()
                .trim_end()
                .to_string()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn the_view_puts_the_culprit_first_at_80x24_and_160x48() {
    let view = gpuwatch::fleet::tui::View {
        fleet: Some(synthetic()),
        age_s: 2,
        ..Default::default()
    };
    let small = draw(&view, 80, 24);
    let first_row = small.lines().nth(3).unwrap();
    assert!(
        first_row.contains("node-b") && first_row.contains("CULPRIT (idle)"),
        "{small}"
    );
    insta::assert_snapshot!("fleet_80x24", small);
    let big = draw(&view, 160, 48);
    assert!(big.contains("http://prometheus:9090"), "{big}");
    insta::assert_snapshot!("fleet_160x48", big);
    let jobs = draw(&gpuwatch::fleet::tui::View { jobs: true, ..view }, 80, 24);
    assert!(
        jobs.contains("slurm:4242 · 4 ranks, 3 spinning · 20.0 kJ"),
        "{jobs}"
    );
    assert!(jobs.contains("CULPRIT rank 3 on node-b GPU 1"), "{jobs}");
}

#[test]
fn a_gpus_view_draws_its_curves_from_prometheus_as_bars() {
    let fleet = synthetic();
    let ramp: Vec<Option<f64>> = (0..60).map(|i| (i >= 30).then_some(100.0)).collect();
    let view = gpuwatch::fleet::tui::View {
        gpu: Some(gpuwatch::fleet::Curves {
            host: "node-b".into(),
            gpu: "1".into(),
            util: ramp.clone(),
            power: vec![Some(17.0); 60],
            sm: vec![None; 60],
        }),
        fleet: Some(fleet),
        ..Default::default()
    };
    let s = draw(&view, 80, 24);
    assert!(s.contains("node-b GPU 1 · last 10 min"), "{s}");
    let util = s.lines().find(|l| l.contains("util")).unwrap();
    // A gap where Prometheus had nothing, full bars after; its latest value.
    assert!(
        util.contains("      ████") && util.contains("100%"),
        "{util}"
    );
    let sm = s.lines().find(|l| l.contains("│SM")).unwrap();
    assert!(sm.trim_end_matches('│').trim_end().ends_with('–'), "{sm}");
    assert!(
        s.contains("rank 3 of slurm:4242") && s.contains("state idle"),
        "{s}"
    );
}

#[test]
fn without_an_answer_the_view_says_why() {
    let view = gpuwatch::fleet::tui::View {
        error: Some("asking Prometheus at http://p:9090: Connection refused".into()),
        ..Default::default()
    };
    assert!(draw(&view, 80, 24).contains("Connection refused"));
}

#[test]
fn a_prometheus_that_is_not_there_is_a_clear_error() {
    let out = Command::new(env!("CARGO_BIN_EXE_gpuwatch"))
        .args(["fleet", "--prometheus", "http://127.0.0.1:9", "--json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("asking Prometheus at http://127.0.0.1:9"),
        "{err}"
    );
    let out = Command::new(env!("CARGO_BIN_EXE_gpuwatch"))
        .args(["fleet", "--prometheus", "localhost:9090", "--json"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("http://localhost:9090"));
}

fn fleet_json(prom: &str) -> Option<serde_json::Value> {
    let out = Command::new(env!("CARGO_BIN_EXE_gpuwatch"))
        .args(["fleet", "--prometheus", &format!("http://{prom}"), "--json"])
        .output()
        .ok()?;
    serde_json::from_slice(&out.stdout).ok()
}

/// The culprits of the fleet's one job, as (host, GPU, rank, reason).
fn culprits(v: &serde_json::Value) -> Vec<(String, String, String, String)> {
    v["jobs"][0]["culprits"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            let s = |k: &str| c[k].as_str().unwrap_or("").to_string();
            (s("host"), s("gpu"), s("rank"), s("reason"))
        })
        .collect()
}

fn four(host: &str, gpu: &str, rank: &str, reason: &str) -> (String, String, String, String) {
    (host.into(), gpu.into(), rank.into(), reason.into())
}

fn tmux_screen(server: &str, w: u16, h: u16, prom: &str, want: &[&str]) -> String {
    tmux_screen_then(server, (w, h), prom, want, None)
}

/// The view in tmux: what it shows once `want` is on screen, or — with `then` — once the keys
/// sent after it bring up what `then` wants.
fn tmux_screen_then(
    server: &str,
    (w, h): (u16, u16),
    prom: &str,
    want: &[&str],
    then: Option<(&str, &[&str])>,
) -> String {
    let tmux = |args: &[&str]| {
        Command::new("tmux")
            .args(["-L", server])
            .args(args)
            .output()
            .unwrap()
    };
    let cmd = format!(
        "{} fleet --prometheus http://{prom} --refresh 1s",
        env!("CARGO_BIN_EXE_gpuwatch")
    );
    tmux(&[
        "new-session",
        "-d",
        "-s",
        "f",
        "-x",
        &w.to_string(),
        "-y",
        &h.to_string(),
        &cmd,
    ]);
    let shows = |want: &[&str]| {
        wait_until(20, || {
            let s = String::from_utf8_lossy(&tmux(&["capture-pane", "-p", "-t", "f"]).stdout)
                .to_string();
            want.iter().all(|w| s.contains(w)).then_some(s)
        })
    };
    let mut screen = shows(want);
    let mut want = want;
    if let (Some((keys, then_want)), Some(_)) = (then, &screen) {
        tmux(&["send-keys", "-t", "f", keys]);
        screen = shows(then_want);
        want = then_want;
    }
    tmux(&["send-keys", "-t", "f", "q"]);
    sleep(Duration::from_millis(300));
    tmux(&["kill-server"]);
    screen.unwrap_or_else(|| panic!("{w}x{h}: never showed {want:?}"))
}

/// A real Prometheus scraping `hosts` every second with docs/deploy/fleet-rules.yml loaded:
/// its folder, the process and its address.
fn prometheus_for(
    prometheus: &str,
    hosts: &[(Killed, String)],
) -> (tempfile::TempDir, Killed, String) {
    let dir = tempfile::tempdir().unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let prom = format!("127.0.0.1:{port}");
    let rules = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/deploy/fleet-rules.yml");
    let targets: Vec<String> = hosts.iter().map(|(_, a)| format!("'{a}'")).collect();
    std::fs::write(
        dir.path().join("prometheus.yml"),
        format!(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nrule_files: ['{}']\nscrape_configs:\n  - job_name: gpuwatch\n    static_configs:\n      - targets: [{}]\n",
            rules.display(),
            targets.join(", ")
        ),
    )
    .unwrap();
    let p = Killed(
        Command::new(prometheus)
            .arg(format!(
                "--config.file={}",
                dir.path().join("prometheus.yml").display()
            ))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address={prom}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    (dir, p, prom)
}

#[test]
#[ignore = "needs Debian's prometheus package and tmux: .ci/run installs them"]
#[allow(clippy::too_many_lines)] // one end-to-end story (four exporters, Prometheus, the fleet view in tmux), kept in the order it happens
fn four_hosts_of_one_job_and_prometheus_name_the_rank_it_waits_for() {
    let prometheus = require("prometheus");
    require("tmux");
    let hosts: Vec<(Killed, String)> = (0..4)
        .map(|h| serve(&[&format!("--demo=fleet:{h}/4")]))
        .collect();
    let (_dir, _p, prom) = prometheus_for(&prometheus, &hosts);
    // The demo's ranks spin for 8 s before the hang is suspected, then a scrape.
    let v = wait_until(60, || {
        let v = fleet_json(&prom)?;
        // Every host scraped, not only the first ones (the culprit can be named before).
        let all = v["gpus"].as_array().is_some_and(|g| g.len() == 8);
        (all && culprits(&v) == [four("demo-h3", "1", "7", "idle")]).then_some(v)
    })
    .expect("gpuwatch fleet named rank 7 on demo-h3 GPU 1 within 60 s");
    assert_eq!(v["gpus"].as_array().unwrap().len(), 8);
    assert_eq!(v["jobs"][0]["ranks"], 8);
    assert!(v["query_ms"].as_f64().unwrap() < 1000.0);
    // The recording rule says the same.
    let rule = wait_until(20, || {
        let out = Command::new("curl")
            .args([
                "-s",
                &format!("http://{prom}/api/v1/query?query=gpuwatch:job_hang_culprit"),
            ])
            .output()
            .ok()?;
        let body = String::from_utf8_lossy(&out.stdout).to_string();
        (body.contains("\"rank\":\"7\"") && body.contains("demo-h3")).then_some(body)
    });
    assert!(rule.is_some(), "gpuwatch:job_hang_culprit names rank 7");
    let small = tmux_screen("gw-fleet-80", 80, 24, &prom, &["CULPRIT (idle)", "demo-h3"]);
    assert!(small.lines().nth(3).unwrap().contains("demo-h3"), "{small}");
    tmux_screen(
        "gw-fleet-160",
        160,
        48,
        &prom,
        &["CULPRIT (idle)", "8 GPUs"],
    );
    // Enter on the culprit's row: its curves from range queries.
    let gpu = tmux_screen_then(
        "gw-fleet-gpu",
        (80, 24),
        &prom,
        &["CULPRIT (idle)"],
        Some(("Enter", &["demo-h3 GPU 1 · last 10 min", "state idle"])),
    );
    assert!(
        gpu.lines()
            .any(|l| l.contains("power") && l.contains(['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'])),
        "{gpu}"
    );
    // Host 1's exporter stops: its ranks are the job's culprits too, as silent.
    let mut hosts = hosts;
    drop(hosts.remove(1));
    wait_until(30, || {
        let c = culprits(&fleet_json(&prom)?);
        (c == [
            four("demo-h1", "0", "2", "stale"),
            four("demo-h1", "1", "3", "stale"),
            four("demo-h3", "1", "7", "idle"),
        ])
        .then_some(())
    })
    .expect("the silent host's ranks named within 30 s");
    let screen = tmux_screen(
        "gw-fleet-80b",
        80,
        24,
        &prom,
        &["CULPRIT (stale)", "silent"],
    );
    assert!(screen.contains("demo-h1"), "{screen}");
}
