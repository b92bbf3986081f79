//! The headless commands: devices (and NVML timings), record, diagnose, snapshot. Each runs the
//! one sampling loop through `monitor::Headless`, with a plan of its own.

use std::io::Write;
use std::path::Path;
use std::time::Duration;

use anyhow::Result;

use crate::format::record::{Header, Recorder};
use crate::monitor::Config;
use crate::monitor::Source;
use crate::monitor::Store;
use crate::monitor::{Headless, Pace, Plan, Ran, Setup};
use crate::report::{diagnosis_text, Diagnosis};

mod devices;
mod room;

pub use devices::{devices, timings};

/// Records ticks to `out`. Simulated sources are written in real time too (unpaced, a demo
/// wrote ~650 MB/s until the disk was full), unless `fast` asks otherwise with a duration.
pub fn record(
    mut source: Box<dyn Source>,
    out: &Path,
    duration: Option<Duration>,
    force: bool,
    fast: bool,
) -> Result<()> {
    let fast = fast && duration.is_some();
    if let Some(d) = duration.filter(|_| fast) {
        source.start_earlier(d);
    }
    let interval = source.interval();
    let header = Header::new(
        source.system(),
        source.devices(),
        interval.as_millis() as u64,
    );
    let mut rec = Recorder::create(out, &header, force)?;
    let to = if out == Path::new("-") {
        "standard output".to_string()
    } else {
        crate::text::path_shown(out)
    };
    // The rules run beside the recording only to say whose stacks to read, as the monitor
    // does, so that a replay of the file judges with the evidence the live run had.
    let setup = Setup::judging_with(crate::monitor::Thresholds::default()).judge_only_for_stacks();
    let mut pipeline = Headless::new(source, &setup)?;
    // A --fast demo recording ends on its own in a moment; a live one runs until stopped.
    eprintln!(
        "recording {} GPU(s) every {} to {}{}",
        header.devices.len(),
        humantime::format_duration(interval),
        to,
        if fast { "" } else { " (Ctrl-C stops)" }
    );
    let plan = Plan {
        pace: if fast { Pace::Fast } else { Pace::Real },
        span: duration,
        ticks: None,
    };
    let discarded = if rec.discards() {
        // `record -o - >&-` said it wrote every tick while nothing was kept.
        if out == Path::new("-") {
            eprintln!(
                "note: standard output is /dev/null (or was closed): nothing recorded is kept; \
                 name a file with -o FILE.jsonl, or redirect standard output to one"
            );
        } else {
            eprintln!(
                "note: {to} leads to the null device: nothing recorded is kept; name a file \
                 with -o FILE.jsonl"
            );
        }
        ", which discards them"
    } else {
        ""
    };
    let mut room = room::Room::of(out);
    let mut ticks = 0;
    let ran = pipeline.run(&plan, |taken, _| {
        rec.write(taken.tick)?;
        ticks += 1;
        room.check(rec.written(), ticks, &to)
    })?;
    eprintln!(
        "wrote {} tick{} to {to}{discarded}",
        ran.ticks,
        if ran.ticks == 1 { "" } else { "s" },
    );
    Ok(())
}

/// Samples a live or simulated source for `duration` (a recording: to its end), headlessly,
/// simulated and recorded time as fast as the CPU allows. Returns what the store saw.
/// A recording that breaks off (a corrupt line) is judged up to the break: the store and run
/// so far come back with the error, for the caller to report both.
fn observe(
    mut source: Box<dyn Source>,
    config: &Config,
    duration: Duration,
) -> Result<(Store, Ran, Option<anyhow::Error>)> {
    let replaying = crate::monitor::replays(&*source);
    if !replaying {
        source.start_earlier(duration);
    }
    // Keep at least 15 minutes, as the monitor does, so a long window is judged whole.
    let setup = Setup::new(config).history(duration.max(Duration::from_secs(900)));
    let mut pipeline = Headless::new(source, &setup)?;
    let plan = Plan {
        pace: Pace::Fast,
        span: (!replaying).then_some(duration),
        ticks: None,
    };
    let mut seen = Ran::default();
    let result = pipeline.run(&plan, |taken, _| {
        seen.ticks += 1;
        seen.first_ms.get_or_insert(taken.tick.t_ms);
        seen.last_ms = Some(taken.tick.t_ms);
        Ok(())
    });
    match result {
        Ok(ran) => Ok((pipeline.into_store(), ran, None)),
        Err(e) if replaying && seen.ticks > 0 => {
            let mut store = pipeline.into_store();
            store.settle();
            Ok((store, seen, Some(e)))
        }
        Err(e) => Err(e),
    }
}

/// Samples (or replays) headlessly and prints the findings. Returns the exit code.
pub fn diagnose(
    source: Box<dyn Source>,
    config: &Config,
    duration: Duration,
    json: bool,
    stacks: bool,
) -> Result<i32> {
    let live = source.pids_are_local();
    let (view, ran, broken) = observe(source, config, duration)?;
    // No tick is not "nothing found": a recording torn in its first tick, or only a header.
    if ran.ticks == 0 && broken.is_none() {
        let cut = view.cut().map_or(String::new(), |c| format!(": {c}"));
        let label = view.source_label();
        let what = label.strip_prefix("replay: ").unwrap_or(label);
        anyhow::bail!(
            "nothing to judge: {what} holds no whole tick{cut}; record again, for longer"
        );
    }
    // Every burst the run kept (the rules asked for them, or the recording had them), then,
    // with --stacks, one more of every GPU process now.
    let mut bursts: Vec<crate::model::stack::StackBurst> = view.history().stacks.clone();
    if stacks && live {
        let pids: Vec<u32> = view
            .history()
            .devices
            .iter()
            .flat_map(|d| d.processes.iter().map(|p| p.pid))
            .collect();
        for b in read_all(&pids, crate::stack::Plan::EVIDENCE)? {
            bursts.retain(|o| o.pid != b.pid);
            bursts.push(b);
        }
    }
    let found = view.findings();
    let mut findings: Vec<_> = found.active().to_vec();
    findings.extend(found.cleared().iter().cloned());
    let d = Diagnosis {
        source: view.source_label().to_string(),
        system: view.system(),
        devices: view.history().devices.iter().map(|d| &d.info).collect(),
        samples: ran.ticks,
        seconds: ran.seconds(),
        worst: findings.iter().map(|f| f.severity).max(),
        findings,
        judging: found.pending().cloned().collect(),
        replay: view.is_replay(),
        cut: view.cut().map(str::to_string),
        stopped: broken.as_ref().map(|e| format!("{e:#}")),
        stacks: bursts,
        show_stacks: stacks,
    };
    if json {
        println!("{}", serde_json::to_string_pretty(&d)?);
    } else {
        print!("{}", diagnosis_text(&d, view.history()));
    }
    std::io::stdout().flush()?;
    match broken {
        Some(e) => Err(e.context(format!(
            "the findings above judge the {} tick{} before it",
            ran.ticks,
            if ran.ticks == 1 { "" } else { "s" }
        ))),
        None => Ok(d.exit_code()),
    }
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
pub fn snapshot(source: Box<dyn Source>, config: &Config, args: &SnapshotArgs) -> Result<()> {
    use crate::snapshot::{take, to_json, to_markdown};
    let duration = if source.virtual_time() {
        args.window
    } else {
        args.sample_for.max(Duration::from_secs(3))
    };
    let (view, _, broken) = observe(source, config, duration)?;
    if let Some(e) = broken {
        return Err(e);
    }
    let snap = take(&view, &args.options);
    let text = if args.markdown {
        to_markdown(&snap)
    } else {
        to_json(&snap)
    };
    too_large_to_open(&text, args.markdown, &snap)?;
    if args.output == Some(Path::new("-")) {
        if crate::format::record::stdout_discards() {
            // `snapshot -o - >&-` exited 0 with nothing kept and nothing said.
            eprintln!(
                "note: standard output is /dev/null (or was closed): the snapshot is not kept; \
                 name a file with -o"
            );
        }
        print!("{text}");
        return Ok(());
    }
    let written = write_snapshot(&text, args, snap.taken_at_ms)?;
    let found = snap.findings.active.len() + snap.findings.recent.len();
    eprintln!(
        "snapshot of {} GPU(s), {} s, {found} finding(s) written to {written}",
        snap.devices.len(),
        snap.window_ms / 1000,
    );
    Ok(())
}

/// A JSON snapshot gpuwatch would refuse to open again is not written: 10 h of 2 GPUs was
/// 270 MB, over the reader's 256 MiB, gzipped or not.
fn too_large_to_open(
    text: &str,
    markdown: bool,
    snap: &crate::format::snapshot::Snapshot,
) -> Result<()> {
    let limit = crate::format::snapshot::MAX_SNAPSHOT_BYTES;
    match too_large(text.len() as u64, limit, snap.window_ms, snap.devices.len()) {
        Some(why) if !markdown => Err(anyhow::anyhow!(why)),
        _ => Ok(()),
    }
}

/// Why a snapshot of `size` bytes is not written, when it is `limit` or more.
fn too_large(size: u64, limit: u64, window_ms: u64, gpus: usize) -> Option<String> {
    if size < limit {
        return None;
    }
    // A window a tenth under the one that fits, so that the next try does.
    let fits_ms = window_ms as f64 * (limit as f64 * 0.9 / size as f64);
    Some(format!(
        "a snapshot of {} of {gpus} GPU(s) would be {} MiB, more than the {} MiB gpuwatch opens \
         again: shorten --window (to about {}), or keep a long run with `gpuwatch record -o \
         FILE.jsonl.gz`",
        crate::text::span_compact(window_ms),
        size >> 20,
        limit >> 20,
        crate::text::span_compact(fits_ms as u64)
    ))
}

/// Writes `text` where `args` say (gzipped for a `.gz` name), never over a file that is
/// there, and says where, ready to print: a name that changed says why.
fn write_snapshot(text: &str, args: &SnapshotArgs, taken_at_ms: u64) -> Result<String> {
    let ext = if args.markdown {
        "md"
    } else {
        crate::snapshot::json_extension(text)
    };
    let default = std::path::PathBuf::from(format!(
        "gpuwatch-snapshot-{}.{ext}",
        crate::text::stamp(taken_at_ms)
    ));
    // `-o DIR`: the default name inside it (it once wrote DIR-1 beside it).
    let inside;
    let path = match args.output {
        Some(dir) if dir.is_dir() => {
            inside = dir.join(&default);
            inside.as_path()
        }
        Some(p) => p,
        None => &default,
    };
    let bytes = crate::snapshot::bytes_for(path, text);
    if bytes.len() > crate::snapshot::COMPRESS_OVER_BYTES {
        // Already gzipped (a `.gz` name, or made so for its size), only the window is left.
        let gzipped = bytes.starts_with(&[0x1f, 0x8b]);
        eprintln!(
            "note: {:.1} MB, more than GitHub takes as an attachment (25 MB): {}--window \
             shortens it",
            bytes.len() as f64 / 1e6,
            if gzipped {
                ""
            } else {
                "-o FILE.json.gz writes it gzipped, or "
            }
        );
    }
    if std::fs::metadata(path).is_ok_and(|m| !m.is_file() && !m.is_dir()) {
        // A device or a pipe named on purpose (`-o /dev/stdout`): written into, as `tee`
        // would; there is no file there to keep (it once wrote /dev/full-1 beside it).
        let shown = crate::text::path_shown(path);
        std::fs::OpenOptions::new()
            .write(true)
            .open(path)
            .and_then(|mut f| f.write_all(&bytes).and_then(|()| f.flush()))
            .map_err(|e| anyhow::anyhow!("cannot write {shown}: {e}"))?;
        return Ok(shown);
    }
    let written = crate::snapshot::write_new(path, &bytes)?;
    // Snapshots never overwrite (record asks for --force instead): say why the name changed.
    let renamed = if written == path {
        String::new()
    } else {
        format!(
            " ({} exists; snapshots never overwrite)",
            crate::text::path_shown(path)
        )
    };
    // A name holding ESC is shown, not obeyed by the terminal.
    Ok(format!("{}{renamed}", crate::text::path_shown(&written)))
}

/// Standard output that cannot be written (`> /dev/full`, a full disk) is an error the user
/// is told of, exit 2, not a panic's trace with exit 101: every `print!` of every command
/// panics there (`snapshot -o -`, `diagnose`, `devices`, `completions` did).
pub fn stdout_failure_is_an_error() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let payload = info.payload();
        let text = payload
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| payload.downcast_ref::<&str>().copied())
            .unwrap_or_default();
        if let Some(why) = text.strip_prefix("failed printing to stdout: ") {
            eprintln!("gpuwatch: cannot write to standard output: {why}");
            std::process::exit(2);
        }
        previous(info);
    }));
}

/// For every command but `serve`: a closed pipe on standard output (`gpuwatch query | head`)
/// ends the process quietly, as it does `ls` or `grep`.
pub fn stop_on_broken_pipe() {
    crate::sys::die_on_broken_pipe();
}

/// `gpuwatch stacks`: reads `pid`, or every process on the GPUs of `source`, `samples` times
/// (100 ms apart, all processes at once) and prints where each one's Python threads are.
/// Returns the exit code: 1 when some process could not be read.
pub fn stacks(
    source: Option<Box<dyn Source>>,
    pid: Option<u32>,
    samples: u32,
    json: bool,
) -> Result<i32> {
    use crate::model::stack::StackOutcome;
    let targets: Vec<(Option<u32>, u32, String)> = match (pid, source) {
        (Some(pid), _) => vec![(None, pid, String::new())],
        (None, Some(source)) => gpu_processes(source)?,
        (None, None) => anyhow::bail!("give a PID, or GPUs to read the processes of"),
    };
    if targets.is_empty() {
        eprintln!("no process holds a context on the chosen GPUs: nothing to read (give a PID to read any Python process)");
        return Ok(0);
    }
    let plan = crate::stack::Plan {
        samples,
        every: Duration::from_millis(100),
        children: true,
    };
    let pids: Vec<u32> = targets.iter().map(|(_, pid, _)| *pid).collect();
    let bursts = read_all(&pids, plan)?;
    let unread = bursts
        .iter()
        .filter(|b| b.outcome != StackOutcome::Read)
        .count();
    if json {
        println!("{}", serde_json::to_string_pretty(&bursts)?);
    } else {
        let mut out = std::io::stdout().lock();
        for ((gpu, pid, what), b) in targets.iter().zip(&bursts) {
            let gpu = gpu.map_or(String::new(), |g| {
                format!("GPU {} · ", crate::model::gpu_label(g))
            });
            writeln!(out, "{gpu}pid {pid}{what}")?;
            write!(out, "{}", crate::report::burst_text(b, "  "))?;
        }
    }
    std::io::stdout().flush()?;
    Ok(i32::from(unread > 0))
}

/// Reads every one of `pids` at once, a thread each (a burst sleeps between its reads).
fn read_all(
    pids: &[u32],
    plan: crate::stack::Plan,
) -> Result<Vec<crate::model::stack::StackBurst>> {
    std::thread::scope(|scope| {
        let handles: Vec<_> = pids
            .iter()
            .map(|pid| {
                scope.spawn(move || {
                    let mut reader = crate::stack::reader::Reader::default();
                    crate::stack::sample(&mut reader, *pid, &plan, crate::model::now_ms)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .map_err(|_| anyhow::anyhow!("reading stacks failed"))
            })
            .collect()
    })
}

/// The processes on `source`'s GPUs (GPU, pid, " · name (user)"), waiting up to 3 s for NVML's
/// first process list.
fn gpu_processes(source: Box<dyn Source>) -> Result<Vec<(Option<u32>, u32, String)>> {
    if !source.pids_are_local() {
        anyhow::bail!(
            "{}'s processes are not this machine's: `gpuwatch stacks PID` reads a Python process running here",
            source.label()
        );
    }
    let devices: Vec<u32> = source.devices().iter().map(|d| d.index).collect();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let setup = Setup::judging_with(crate::monitor::Thresholds::default())
        .judge_only_for_stacks()
        .without_stacks()
        .stop(stop.clone());
    let mut pipeline = Headless::new(source, &setup)?;
    let mut found = Vec::new();
    let plan = Plan {
        pace: Pace::Real,
        span: Some(Duration::from_secs(3)),
        ticks: None,
    };
    pipeline.run(&plan, |taken, _| {
        found.clear();
        for (d, reading) in devices.iter().zip(&taken.tick.devices) {
            for p in &reading.processes {
                let what = p.host.as_ref().map_or(String::new(), |h| {
                    let user = h
                        .user
                        .as_deref()
                        .map_or(String::new(), |u| format!(" ({u})"));
                    format!(" · {}{user}", crate::text::clip(&h.cmdline, 100))
                });
                found.push((Some(*d), p.pid, what));
            }
        }
        if !found.is_empty() {
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
        }
        Ok(())
    })?;
    Ok(found)
}

#[cfg(test)]
mod tests {
    /// A snapshot gpuwatch could not open again is refused with a window that fits.
    #[test]
    fn a_snapshot_too_large_to_open_again_is_refused_with_a_window_that_fits() {
        assert_eq!(super::too_large(255 << 20, 256 << 20, 36_000_000, 2), None);
        let why = super::too_large(270 << 20, 256 << 20, 36_000_000, 2).unwrap();
        assert_eq!(
            why,
            "a snapshot of 10h00m of 2 GPU(s) would be 270 MiB, more than the 256 MiB gpuwatch \
             opens again: shorten --window (to about 8h32m), or keep a long run with `gpuwatch \
             record -o FILE.jsonl.gz`"
        );
    }
}
