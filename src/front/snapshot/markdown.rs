//! The Markdown report: a compact summary to paste into an issue tracker.

use std::fmt::Write as _;

use super::{DeviceSnapshot, Snapshot};
use crate::model::{DeviceSample, DeviceStatus, ProcessSample, GIB};
use crate::rules::Finding;
use crate::text::clock;

/// A compact report to paste into an issue tracker.
/// The Markdown report, with control characters from names and command lines made visible
/// (`text::printable`), since it is pasted and printed.
#[must_use]
pub fn to_markdown(s: &Snapshot) -> String {
    crate::text::printable(&to_markdown_raw(s)).into_owned()
}

fn to_markdown_raw(s: &Snapshot) -> String {
    let mut md = String::new();
    let host = s.host.as_deref().unwrap_or("(host left out)");
    let _ = writeln!(md, "## gpuwatch snapshot\n");
    let _ = writeln!(
        md,
        "{} GPU(s) on {host}, driver {}, CUDA {}, {}; window {} s ending {} UTC; source: {}; gpuwatch {}.\n",
        s.devices.len(),
        s.system.driver_version.as_deref().unwrap_or("?"),
        s.system.cuda_driver_version.as_deref().unwrap_or("?"),
        s.os.name.as_deref().unwrap_or("?"),
        s.window_ms / 1000,
        clock(s.taken_at_ms),
        s.source,
        s.gpuwatch_version
    );
    let _ = writeln!(md, "| GPU | name | util % (median) | power W (median, % TDP) | SM active % | memory (last, peak) | temp °C | state |");
    let _ = writeln!(md, "|---|---|---|---|---|---|---|---|");
    for d in &s.devices {
        summary_row(&mut md, d, &gpu_state(s, d));
    }
    findings_md(&mut md, s);
    curves_md(&mut md, s);
    let procs = processes_md(&mut md, s);
    runs_with_md(&mut md, &procs);
    stacks_md(&mut md, s);
    let _ = writeln!(md, "\n<sub>Command lines: {:?}. Open the JSON with `gpuwatch replay FILE` to see the screen.</sub>", s.privacy.cmdlines);
    md
}

/// What was found: GPUs not judged in full, then the open and recent findings.
fn findings_md(md: &mut String, s: &Snapshot) {
    let _ = writeln!(md, "\n### Findings\n");
    for j in &s.findings.judging {
        let _ = writeln!(
            md,
            "- GPU {} not judged in full — {}\n",
            crate::model::gpu_label(j.device),
            crate::report::judging_text(j)
        );
    }
    if s.findings.active.is_empty() && s.findings.recent.is_empty() && s.findings.judging.is_empty()
    {
        let _ = writeln!(md, "None: every GPU that looked busy was doing work.");
    }
    for f in s.findings.active.iter().chain(&s.findings.recent) {
        finding_md(md, f);
    }
}

/// Util and power (% of TDP) as sparklines over the window; SM activity for a MIG instance.
fn curves_md(md: &mut String, s: &Snapshot) {
    let _ = writeln!(md, "\n### Util against power (% of TDP) over the window\n");
    let _ = writeln!(md, "```");
    for d in &s.devices {
        let tdp = d.info.tdp_w();
        if d.info.mig.is_some() {
            // No util or power on a MIG instance: its SM activity instead.
            let _ = writeln!(
                md,
                "GPU {} SM    {}",
                d.info.label(),
                sparkline(&d.samples, 60, |x| x.gpm.sm_active_pct)
            );
            continue;
        }
        let _ = writeln!(
            md,
            "GPU {} util  {}",
            d.info.label(),
            sparkline(&d.samples, 60, |x| x.util_gpu_pct)
        );
        let _ = writeln!(
            md,
            "GPU {} power {}",
            d.info.label(),
            sparkline(&d.samples, 60, |x| x
                .power_w
                .zip(tdp)
                .map(|(p, t)| p / t * 100.0))
        );
    }
    let _ = writeln!(md, "```");
}

/// The ten processes with the most GPU memory, as a table (none: a sentence); returned for
/// the sections after it.
fn processes_md<'a>(md: &mut String, s: &'a Snapshot) -> Vec<(u32, &'a ProcessSample)> {
    let _ = writeln!(md, "\n### Top processes\n");
    let mut procs: Vec<(u32, &ProcessSample)> = s
        .devices
        .iter()
        .flat_map(|d| d.processes.iter().map(move |p| (d.info.index, p)))
        .collect();
    procs.sort_by_key(|(_, p)| std::cmp::Reverse(p.gpu_mem_bytes));
    if procs.is_empty() {
        let _ = writeln!(
            md,
            "No process was using a GPU when the snapshot was taken."
        );
    } else {
        // "kernel time %" is the monitor's KERN%: the share of time this process's kernels ran,
        // which is not SM activity (a spinning kernel has 100 % of one and ~0 % of the other).
        let _ = writeln!(
            md,
            "| GPU | pid | user | GPU memory | kernel time % | host CPU % | workers | command |"
        );
        let _ = writeln!(md, "|---|---|---|---|---|---|---|---|");
    }
    for (gpu, p) in procs.iter().take(10) {
        let gpu = crate::model::gpu_label(*gpu);
        let h = p.host.as_ref();
        let cmd = h.map_or("(pid not visible)".to_string(), |h| {
            if h.cmdline.is_empty() {
                h.name.clone()
            } else {
                h.cmdline.clone()
            }
        });
        // A command line and a user name are whatever a process made them: one line, in a code
        // span its backticks cannot end, its pipes escaped for the table.
        let cmd = crate::text::code_span(&crate::text::one_line(&cmd, 100)).replace('|', "\\|");
        let user = crate::text::markdown_inline(&crate::text::one_line(
            h.and_then(|h| h.user.as_deref()).unwrap_or("?"),
            32,
        ));
        let _ = writeln!(
            md,
            "| {gpu} | {} | {user} | {} | {} | {} | {} | {cmd} |",
            p.pid,
            p.gpu_mem_bytes.map_or("–".into(), |b| format!(
                "{:.1} GiB",
                b as f64 / GIB as f64
            )),
            p.sm_pct.map_or("–".into(), |v| format!("{v:.0}")),
            h.and_then(|h| h.cpu_pct)
                .map_or("–".into(), |v| format!("{v:.0}")),
            h.map_or("–".into(), |h| h.children.len().to_string()),
        );
    }
    procs
}

/// Where each process read was, in a code block (frames are the program's own text): its
/// newest burst, each thread's class, the main thread's stack.
fn stacks_md(md: &mut String, s: &Snapshot) {
    if s.stacks.is_empty() {
        return;
    }
    let _ = writeln!(md, "\n### Python stacks\n");
    let _ = writeln!(md, "```");
    for b in &s.stacks {
        let _ = writeln!(md, "pid {} at {} UTC", b.pid, crate::text::clock(b.t_ms));
        // Fenced, so nothing in a frame or a source line is read as Markdown; a fence inside
        // one is broken up.
        let text = crate::report::burst_text(b, "  ").replace("```", "`\u{200b}``");
        md.push_str(&text);
    }
    let _ = writeln!(md, "```");
}

/// What the top processes run with: what a maintainer asks first ("which torch, which NCCL?").
fn runs_with_md(md: &mut String, procs: &[(u32, &ProcessSample)]) {
    let mut header = false;
    for (gpu, p) in procs.iter().take(10) {
        let Some(h) = p.host.as_ref() else { continue };
        let mut parts = Vec::new();
        if let Some(sw) = h.software.as_deref() {
            let summary = sw.summary();
            if !summary.is_empty() {
                parts.push(summary);
            }
            if let Some(why) = &sw.unreadable {
                parts.push(format!("settings not read: {why}"));
            }
            parts.extend(sw.settings_text(|s| format!("`{s}`"), " "));
        }
        if let Some(c) = h.container.as_deref() {
            parts.push(format!("container {}", c.describe()));
        }
        if parts.is_empty() {
            continue;
        }
        if !header {
            let _ = writeln!(md, "\n### What the processes run with\n");
            header = true;
        }
        let line = crate::text::printable(&parts.join(" · ")).replace('|', "\\|");
        let gpu = crate::model::gpu_label(*gpu);
        let _ = writeln!(md, "- pid {} (GPU {gpu}): {line}", p.pid);
    }
}

/// The state column: the worst open finding on the GPU, one that ended in the window, or a
/// GPU not judged in full; "ok" only when it was judged and nothing was found.
fn gpu_state(s: &Snapshot, d: &DeviceSnapshot) -> String {
    if let DeviceStatus::Lost { reason } = &d.status {
        return format!("LOST: {reason}");
    }
    let on = |f: &&Finding| f.device == d.info.index;
    if let Some(f) = s
        .findings
        .active
        .iter()
        .filter(on)
        .max_by_key(|f| f.severity)
    {
        return format!("{} {}", f.severity.marker(), f.rule);
    }
    // The rank another GPU's hang waits for looks idle and fine on its own.
    let culprit_of = s.findings.active.iter().find(|f| {
        f.device != d.info.index && f.culprit.as_ref().is_some_and(|c| c.device == d.info.index)
    });
    if let Some(f) = culprit_of {
        return format!(
            "◀ culprit of GPU {}'s {}",
            crate::model::gpu_label(f.device),
            f.rule
        );
    }
    if let Some(f) = s.findings.recent.iter().rfind(on) {
        let ended = f
            .cleared_ms
            .map_or(String::new(), |c| format!(" at {}", clock(c)));
        return format!("{} ended{ended}", f.rule);
    }
    if s.findings.judging.iter().any(|j| j.device == d.info.index) {
        return "not judged in full".into();
    }
    "ok".into()
}

fn summary_row(md: &mut String, d: &DeviceSnapshot, state: &str) {
    let med = |f: &dyn Fn(&DeviceSample) -> Option<f32>| {
        crate::rules::Stats::of(d.samples.iter().filter_map(f))
    };
    let util = med(&|x| x.util_gpu_pct);
    let power = med(&|x| x.power_w);
    let sm = med(&|x| x.gpm.sm_active_pct);
    let tdp = d.info.tdp_w().unwrap_or(0.0);
    let last = d.samples.last();
    // The last value and the window's peak: a finding about memory cites the peak, and a job
    // that exited before the snapshot leaves the last at 0.
    let peak = d.samples.iter().filter_map(|x| x.mem_used_bytes).max();
    let mem = last.and_then(|x| x.mem_used_bytes).map_or("–".into(), |b| {
        let gib = |b: u64| b as f64 / GIB as f64;
        let peak = peak
            .filter(|&p| p > b)
            .map_or(String::new(), |p| format!(", peak {:.1}", gib(p)));
        format!(
            "{:.1}/{:.0} GiB{peak}",
            gib(b),
            d.info.memory_total_bytes.map_or(0.0, gib)
        )
    });
    let n = |s: crate::rules::Stats, f: &dyn Fn(f32) -> String| {
        if s.n == 0 {
            "–".to_string()
        } else {
            f(s.median)
        }
    };
    // A recording's GPU name is whatever its file says: one line, its pipes escaped.
    let _ = writeln!(
        md,
        "| {} | {} | {} | {} | {} | {mem} | {} | {state} |",
        d.info.label(),
        crate::text::markdown_inline(&crate::text::one_line(&d.info.name, 64)).replace('|', "\\|"),
        n(util, &|v| format!("{v:.0}")),
        n(power, &|v| if tdp > 0.0 {
            format!("{v:.0} ({:.0} %)", v / tdp * 100.0)
        } else {
            format!("{v:.0}")
        }),
        n(sm, &|v| format!("{v:.1}")),
        last.and_then(|x| x.temp_c)
            .map_or("–".into(), |t| format!("{t:.0}")),
    );
}

fn finding_md(md: &mut String, f: &Finding) {
    let when = match f.cleared_ms {
        Some(c) => format!("from {} to {} UTC", clock(f.since_ms), clock(c)),
        None => format!("since {} UTC", clock(f.since_ms)),
    };
    // Evidence, causes and actions carry what came from processes and files (names, paths, a
    // line of a program, from a recording someone sent): escaped, their code spans kept.
    let md_line = crate::text::markdown_inline;
    let _ = writeln!(
        md,
        "- **{} {} — GPU {}: {}** (`{}`, {when})",
        f.severity.marker(),
        f.severity.name().to_uppercase(),
        crate::model::gpu_label(f.device),
        md_line(&f.title),
        f.rule
    );
    for e in &f.evidence {
        let _ = writeln!(md, "  - {}", md_line(e));
    }
    if let Some(c) = f.causes.first() {
        let _ = writeln!(md, "  - likely cause: {}", md_line(c));
    }
    if let Some(e) = crate::report::energy_line(f) {
        let _ = writeln!(md, "  - energy: {}", md_line(&e));
    }
    for a in f.actions.iter().take(3) {
        let _ = writeln!(md, "  - do: {}", md_line(a));
    }
}

/// A Unicode sparkline of a metric (0–100) over `width` buckets; gaps are spaces.
pub fn sparkline(
    samples: &[DeviceSample],
    width: usize,
    metric: impl Fn(&DeviceSample) -> Option<f32>,
) -> String {
    const LEVELS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    if samples.is_empty() {
        return String::new();
    }
    let per = samples.len().div_ceil(width).max(1);
    samples
        .chunks(per)
        .map(|c| {
            let vals: Vec<f32> = c.iter().filter_map(&metric).collect();
            if vals.is_empty() {
                return ' ';
            }
            let v = vals.iter().sum::<f32>() / vals.len() as f32;
            LEVELS[((v.clamp(0.0, 100.0) / 100.0) * 7.0).round() as usize]
        })
        .collect()
}
