//! Parses the command line, picks the source, runs. Nothing else.

use std::process::ExitCode;

use anyhow::Result;
use clap::Parser;

use gpuwatch::cli::{Cli, Command};
use gpuwatch::config::Config;
use gpuwatch::snapshot::{CmdlinePolicy, Options};
use gpuwatch::{command, source};

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => ExitCode::from(code as u8),
        Err(e) => {
            eprintln!("gpuwatch: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn run(cli: Cli) -> Result<i32> {
    let c = &cli.common;
    if c.no_redact {
        gpuwatch::redact::keep_secrets();
    }
    // A file named by --config or $GPUWATCH_CONFIG must exist; the default location need not.
    let named =
        c.config.is_some() || std::env::var_os("GPUWATCH_CONFIG").is_some_and(|v| !v.is_empty());
    let config = Config::load(Config::path(c.config.as_deref()).as_deref(), named)?;
    let s = &cli.source;
    let open = |replay: Option<(&std::path::Path, f64)>| {
        source::open(
            s.demo,
            s.gpus,
            s.seed,
            replay,
            c.nvml_lib.as_deref(),
            c.interval,
        )
    };
    let tui = matches!(cli.command, None | Some(Command::Replay { .. }));
    if tui && !std::io::IsTerminal::is_terminal(&std::io::stdout()) {
        anyhow::bail!(
            "the monitor draws on a terminal, and standard output is not one (redirected to a \
             file or a pipe?).\nTo keep what it sees, use `gpuwatch record -o FILE`, \
             `gpuwatch snapshot` or `gpuwatch diagnose`."
        );
    }
    match &cli.command {
        None => gpuwatch::tui::run(open(None)?, &config, c.interval, c.history, c.fps).map(|_| 0),
        Some(Command::Replay { file, speed }) => gpuwatch::tui::run(
            open(Some((file, *speed)))?,
            &config,
            c.interval,
            c.history,
            c.fps,
        )
        .map(|_| 0),
        Some(Command::Record {
            output,
            duration,
            force,
            fast,
        }) => command::record(open(None)?, output, *duration, c.interval, *force, *fast).map(|_| 0),
        Some(Command::Devices {
            json,
            timings: None,
        }) => command::devices(open(None)?.as_ref(), *json).map(|_| 0),
        Some(Command::Devices {
            timings: Some(n), ..
        }) => command::timings(open(None)?, *n, c.interval).map(|_| 0),
        Some(Command::Snapshot {
            output,
            window,
            format,
            duration,
            replay,
            no_cmdline,
            no_host,
        }) => {
            let options = Options {
                window_ms: window.as_millis() as u64,
                include_host: !no_host,
                cmdlines: if *no_cmdline {
                    CmdlinePolicy::Omitted
                } else if c.no_redact {
                    CmdlinePolicy::Raw
                } else {
                    CmdlinePolicy::Redacted
                },
            };
            let args = command::SnapshotArgs {
                output: output.as_deref(),
                window: *window,
                markdown: format == "md",
                sample_for: *duration,
                options,
            };
            let src = open(replay.as_deref().map(|p| (p, 0.0)))?;
            command::snapshot(src, &config, c.interval, &args).map(|_| 0)
        }
        Some(Command::Diagnose {
            duration,
            replay,
            json,
        }) => {
            let src = open(replay.as_deref().map(|p| (p, 0.0)))?;
            command::diagnose(src, &config, *duration, c.interval, *json)
        }
    }
}
