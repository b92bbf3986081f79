//! The command line. Every flag is documented here; `GPUWATCH_*` variables set the common ones.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

use crate::source::sim::Scenario;

#[derive(Debug, Parser)]
#[command(name = "gpuwatch", version, about = "A terminal GPU monitor that tells busy GPUs from busy-looking idle ones", long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    #[command(flatten)]
    pub source: SourceArgs,
    #[command(flatten)]
    pub common: Common,
}

/// Options every command shares.
#[derive(Debug, Args, Clone)]
pub struct Common {
    /// Sampling interval (50ms to 10s).
    #[arg(long, global = true, default_value = "250ms", value_parser = parse_interval, env = "GPUWATCH_INTERVAL")]
    pub interval: Duration,
    /// Most redraws per second caused by new data (sampling keeps its own interval; keys redraw at once).
    #[arg(long, global = true, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=60), env = "GPUWATCH_FPS")]
    pub fps: u32,
    /// How much history to keep in memory.
    #[arg(long, global = true, default_value = "15m", value_parser = parse_duration, env = "GPUWATCH_HISTORY")]
    pub history: Duration,
    /// Config file with thresholds (default: $GPUWATCH_CONFIG when set and not empty, else
    /// $XDG_CONFIG_HOME/gpuwatch/config.toml).
    #[arg(long, global = true)]
    pub config: Option<PathBuf>,
    /// Keep secrets in command lines (tokens, passwords, keys are redacted everywhere by
    /// default: on screen, in recordings and snapshots). For your own machine only.
    #[arg(long, global = true)]
    pub no_redact: bool,
    /// Path to libnvidia-ml.so.1 when it is not on the loader path (e.g. /usr/lib/wsl/lib/libnvidia-ml.so.1).
    #[arg(long, global = true, env = "GPUWATCH_NVML_LIB")]
    pub nvml_lib: Option<PathBuf>,
}

/// Where samples come from when no subcommand says otherwise.
#[derive(Debug, Args, Clone, Default)]
pub struct SourceArgs {
    /// Show simulated GPUs instead of real ones: healthy, membound, starved, hang, sync, powercap,
    /// thermal, pcie, idle-mem, leak, idle, mixed (default), lost, straggler.
    #[arg(long, global = true, num_args = 0..=1, default_missing_value = "mixed", value_name = "SCENARIO", value_parser = parse_scenario)]
    pub demo: Option<Scenario>,
    /// Number of simulated GPUs for --demo (1 to 64).
    #[arg(long, global = true, value_parser = clap::value_parser!(u16).range(1..=64))]
    pub gpus: Option<u16>,
    /// Seed of the simulated noise.
    #[arg(long, global = true, default_value_t = 7)]
    pub seed: u64,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Play a recording (or snapshot) back in the monitor.
    Replay {
        file: PathBuf,
        /// Playback speed: 1 is the recorded pace, 10 ten times faster, 0 as fast as possible
        /// (0.01 to 10000).
        #[arg(long, default_value_t = 1.0, value_parser = parse_speed)]
        speed: f64,
    },
    /// Record samples to a JSON Lines file.
    Record {
        /// File to write.
        #[arg(short, long)]
        output: PathBuf,
        /// Stop after this long (default: until Ctrl-C).
        #[arg(long, value_parser = parse_duration)]
        duration: Option<Duration>,
        /// Overwrite FILE if it exists.
        #[arg(long)]
        force: bool,
        /// With --demo: write simulated time as fast as the CPU allows instead of in real time
        /// (needs --duration).
        #[arg(long, requires = "duration")]
        fast: bool,
    },
    /// List the GPUs and their static facts.
    Devices {
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
        /// Also time every NVML call over this many ticks and print the latencies.
        #[arg(long, value_name = "TICKS")]
        timings: Option<u32>,
    },
    /// Write a snapshot for a bug report: JSON (opens again with `replay`) or Markdown.
    Snapshot {
        /// File to write (default: gpuwatch-snapshot-DATE-TIME.json or .md here; "-" prints it).
        #[arg(short, long)]
        output: Option<PathBuf>,
        /// How much history the snapshot holds.
        #[arg(long, default_value = "2m", value_parser = parse_duration)]
        window: Duration,
        /// json (complete, opens again) or md (a report to paste into an issue).
        #[arg(long, default_value = "json", value_parser = ["json", "md"])]
        format: String,
        /// How long to sample live GPUs first.
        #[arg(long = "for", default_value = "10s", value_parser = parse_duration)]
        duration: Duration,
        /// Snapshot a recording instead of live GPUs.
        #[arg(long)]
        replay: Option<PathBuf>,
        /// Leave command lines out (by default they are kept with secrets redacted).
        #[arg(long)]
        no_cmdline: bool,
        /// Leave out what names the machine and its people: the host name, user names, and the
        /// directories of a replayed file.
        #[arg(long)]
        no_host: bool,
    },
    /// Sample (or replay) headlessly and print the diagnosis. Exit status: 0 nothing found, 1 a
    /// warning or worse found, 3 nothing found but some GPU not judged in full (run longer), 2 error.
    Diagnose {
        /// How long to sample a live or simulated source.
        #[arg(long = "for", default_value = "30s", value_parser = parse_duration)]
        duration: Duration,
        /// Diagnose a recording or snapshot instead of live GPUs.
        #[arg(long)]
        replay: Option<PathBuf>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
}

fn parse_duration(s: &str) -> Result<Duration, String> {
    humantime::parse_duration(s)
        .map_err(|e| format!("'{s}' is not a duration like 250ms, 30s or 15m ({e})"))
}

fn parse_interval(s: &str) -> Result<Duration, String> {
    let d = parse_duration(s)?;
    if d < Duration::from_millis(50) || d > Duration::from_secs(10) {
        return Err(format!("{s} is outside 50ms to 10s"));
    }
    Ok(d)
}

/// A playback speed: 0 (as fast as possible) or a finite factor from 0.01 to 10 000. Slower
/// than 0.01 would wait hours per tick; NaN and infinities mean nothing.
fn parse_speed(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("'{s}' is not a number (try 1, 10 or 0 for as fast as possible)"))?;
    if v == 0.0 || (0.01..=10_000.0).contains(&v) {
        Ok(v)
    } else {
        Err(format!(
            "{s} is outside 0.01 to 10000 (0 plays as fast as possible)"
        ))
    }
}

fn parse_scenario(s: &str) -> Result<Scenario, String> {
    s.parse()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interval_bounds_are_enforced() {
        assert!(parse_interval("50ms").is_ok());
        assert!(parse_interval("10s").is_ok());
        assert!(parse_interval("49ms").unwrap_err().contains("50ms to 10s"));
        assert!(parse_interval("11s").is_err());
        assert!(parse_interval("fast")
            .unwrap_err()
            .contains("not a duration"));
    }

    #[test]
    fn demo_without_value_means_mixed() {
        let cli = Cli::try_parse_from(["gpuwatch", "--demo"]).unwrap();
        assert_eq!(cli.source.demo, Some(Scenario::Mixed));
        let cli = Cli::try_parse_from(["gpuwatch", "--demo=hang", "--gpus", "3"]).unwrap();
        assert_eq!(cli.source.demo, Some(Scenario::Hang));
        assert_eq!(cli.source.gpus, Some(3));
        assert!(Cli::try_parse_from(["gpuwatch", "--demo=nope"]).is_err());
    }
}
