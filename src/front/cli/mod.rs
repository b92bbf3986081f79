//! The command line. Every flag is documented here; `GPUWATCH_*` variables set the common ones.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

use crate::source::sim::Scenario;

mod complete;
pub mod environment;
mod manual;
pub mod refused;
mod values;

pub use complete::script as completion_script;
use values::{parse_duration, parse_interval, parse_speed};

pub use manual::manual;

#[derive(Debug, Parser)]
#[command(
    name = "gpuwatch",
    version,
    about = "A terminal GPU monitor that tells busy GPUs from busy-looking idle ones",
    long_about = None,
    args_conflicts_with_subcommands = true,
    after_help = ENVIRONMENT
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    /// The monitor's own options (no subcommand): each subcommand lists only the flags it uses.
    #[command(flatten)]
    pub live: LiveArgs,
    #[command(flatten)]
    pub view: ViewArgs,
    #[command(flatten)]
    pub judge: JudgeArgs,
}

/// What a command's exit status means, under its `--help`.
const EXIT_PLAIN: &str = "Exit status: 0 success; 2 an error (the message says what to do).";
const EXIT_DIAGNOSE: &str = "Exit status: 0 nothing of warning or worse found; 1 a warning or \
worse found; 3 nothing found, but some GPU could not be judged in full (run it longer); \
2 an error (the message says what to do).";

const EXIT_STACKS: &str = "Exit status: 0 every process was read; 1 some process could not \
be read (not permitted, not Python, gone: the message says which and what to do); 2 an error.";

/// Every environment variable gpuwatch reads, for `--help`.
const ENVIRONMENT: &str = "Environment:
  GPUWATCH_INTERVAL         --interval
  GPUWATCH_HISTORY          --history
  GPUWATCH_FPS              --fps
  GPUWATCH_CONFIG           config file (empty means unset)
  GPUWATCH_NVML_LIB         --nvml-lib
  GPUWATCH_SNAPSHOT_DIR     where `e` in the monitor writes snapshots (default: here)
  GPUWATCH_SNAPSHOT_NO_HOST `e` leaves host name, user names and paths out (1)
  GPUWATCH_NO_MOUSE         --no-mouse (1, true, yes or on)
  GPUWATCH_NO_STACKS        --no-stacks (1, true, yes or on)
  GPUWATCH_PROMETHEUS       fleet --prometheus
  NO_COLOR                  no colours unless --color always (any value)";

/// `--demo`'s help: every scenario, those the rules declare with what they show.
fn demo_help() -> String {
    let named: Vec<String> = crate::source::sim::scenarios()
        .into_iter()
        .map(|(name, sc)| match sc {
            Scenario::Mixed => format!("{name} (default)"),
            Scenario::Mig => format!("{name} (one GPU split into MIG instances)"),
            Scenario::Fleet { .. } => format!("{name} (fleet:H/N: host H of N of one job)"),
            Scenario::Rule(id) => {
                format!("{name} ({})", crate::rules::demo(id).about)
            }
            _ => name.to_string(),
        })
        .collect();
    format!(
        "Show simulated GPUs instead of real ones: {}.",
        named.join(", ")
    )
}

/// Where live samples come from: real GPUs through NVML, or simulated ones.
#[derive(Debug, Args, Clone)]
pub struct LiveArgs {
    /// Show simulated GPUs instead of real ones (the list: `demo_help`).
    #[arg(long, help = demo_help(), num_args = 0..=1, default_missing_value = "mixed", value_name = "SCENARIO",
          value_parser = scenario_parser(), hide_possible_values = true)]
    pub demo: Option<Scenario>,
    /// Number of simulated GPUs for --demo (1 to 64).
    #[arg(long, requires = "demo", value_parser = clap::value_parser!(u16).range(1..=64))]
    pub gpus: Option<u16>,
    /// Seed of the simulated noise for --demo.
    #[arg(long, requires = "demo", default_value_t = 7)]
    pub seed: u64,
    /// Sampling interval (50ms to 10s).
    #[arg(long, default_value = "250ms", value_parser = parse_interval, env = "GPUWATCH_INTERVAL")]
    pub interval: Duration,
    /// Path to libnvidia-ml.so.1 when it is not on the loader path (e.g. /usr/lib/wsl/lib/libnvidia-ml.so.1).
    #[arg(long, env = "GPUWATCH_NVML_LIB")]
    pub nvml_lib: Option<PathBuf>,
    /// Watch only these GPUs, as nvidia-smi -i takes them: indices, UUIDs (a prefix such as
    /// GPU-3f2a9c1b will do) or PCI bus ids, comma-separated. GPUs keep their numbers. A MIG
    /// instance: its MIG-… UUID or GPU:GI (0:9), watched with its GPU.
    #[arg(short = 'i', long = "id", value_delimiter = ',', value_name = "GPUS")]
    pub id: Vec<String>,
    #[allow(
        clippy::doc_markdown,
        reason = "clap prints this text as it is, backticks and all"
    )]
    /// Watch the GPUs CUDA_VISIBLE_DEVICES names, as a job started in this shell would see them
    /// (its numbers are taken as nvidia-smi's: set CUDA_DEVICE_ORDER=PCI_BUS_ID for CUDA to agree).
    #[arg(long, conflicts_with = "id")]
    pub cuda_visible: bool,
    /// Never read the GPU processes' Python stacks (read by default as evidence while a hang,
    /// starved, sync or transfer finding is being judged; needs ptrace permission).
    #[arg(long, env = "GPUWATCH_NO_STACKS", value_parser = clap::builder::BoolishValueParser::new())]
    pub no_stacks: bool,
}

/// How the monitor keeps and draws what it sees.
#[derive(Debug, Args, Clone)]
pub struct ViewArgs {
    /// Most redraws per second caused by new data (sampling keeps its own interval; keys redraw at once).
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=60), env = "GPUWATCH_FPS")]
    pub fps: u32,
    /// How much history to keep in memory: at least the rules' longest window and one interval (2m250ms by default).
    #[arg(long, default_value = "15m", value_parser = parse_duration, env = "GPUWATCH_HISTORY")]
    pub history: Duration,
    #[allow(
        clippy::doc_markdown,
        reason = "clap prints this text as it is, backticks and all"
    )]
    /// Colours: auto (unless NO_COLOR is set), always, never.
    #[arg(long, value_enum, default_value_t = ColorWhen::Auto, value_name = "WHEN")]
    pub color: ColorWhen,
    /// Leave the mouse to the terminal (select and copy text as usual); keys still do everything.
    #[arg(long, env = "GPUWATCH_NO_MOUSE", value_parser = clap::builder::BoolishValueParser::new())]
    pub no_mouse: bool,
}

/// When to draw in colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ColorWhen {
    Auto,
    Always,
    Never,
}

impl ColorWhen {
    /// Whether to colour, given the value of `NO_COLOR` (no-color.org: set and not empty).
    #[must_use]
    pub fn colour(self, no_color: Option<&std::ffi::OsStr>) -> bool {
        match self {
            ColorWhen::Always => true,
            ColorWhen::Never => false,
            ColorWhen::Auto => no_color.is_none_or(std::ffi::OsStr::is_empty),
        }
    }
}

/// What the diagnosis judges with, and what command lines keep.
#[derive(Debug, Args, Clone)]
pub struct JudgeArgs {
    #[allow(
        clippy::doc_markdown,
        reason = "clap prints this text as it is, backticks and all"
    )]
    /// Config file with thresholds (default: $GPUWATCH_CONFIG when set and not empty, else
    /// $XDG_CONFIG_HOME/gpuwatch/config.toml).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Keep secrets in command lines (tokens, passwords, keys are redacted everywhere by
    /// default: on screen, in recordings and snapshots). For your own machine only.
    #[arg(long)]
    pub no_redact: bool,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Play a recording (or snapshot) back in the monitor.
    #[command(after_help = EXIT_PLAIN)]
    Replay {
        file: PathBuf,
        /// Playback speed of a recording: 1 is the recorded pace, 10 ten times faster, 0 as fast
        /// as possible (0.01 to 10000). A snapshot opens at its last moment, as it was taken;
        /// after a seek back, both play at the recorded pace, as does a recording whose speed
        /// played it whole within a second.
        #[arg(long, default_value_t = 1.0, value_parser = parse_speed)]
        speed: f64,
        #[command(flatten)]
        view: ViewArgs,
        #[command(flatten)]
        judge: JudgeArgs,
    },
    /// Record samples to a JSON Lines file.
    #[command(after_help = EXIT_PLAIN)]
    Record {
        /// File to write (gzip-compressed when its name ends in .gz); "-" is standard output.
        /// A pipe, FIFO or device is written through; an existing file needs --force.
        #[arg(short, long)]
        output: PathBuf,
        /// Stop after this long (default: until Ctrl-C).
        #[arg(long, value_parser = parse_duration)]
        duration: Option<Duration>,
        /// Overwrite FILE if it exists (a link there is replaced by the new file; what it
        /// pointed to is left as it was).
        #[arg(long)]
        force: bool,
        /// With --demo: write simulated time as fast as the CPU allows instead of in real time
        /// (needs --duration).
        #[arg(long, requires = "duration")]
        fast: bool,
        #[command(flatten)]
        live: LiveArgs,
        /// Keep secrets in command lines (they are redacted in recordings by default).
        #[arg(long)]
        no_redact: bool,
    },
    /// List the GPUs and their static facts.
    #[command(after_help = EXIT_PLAIN)]
    Devices {
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
        /// Also time every NVML call over this many ticks and print the latencies.
        #[arg(long, value_name = "TICKS")]
        timings: Option<u32>,
        #[command(flatten)]
        live: LiveArgs,
    },
    /// Write a snapshot for a bug report: JSON (opens again with `replay`) or Markdown.
    #[command(after_help = EXIT_PLAIN)]
    Snapshot {
        /// File to write (default: gpuwatch-snapshot-DATE-TIME.json or .md here; "-" prints it).
        #[arg(short, long)]
        output: Option<PathBuf>,
        /// How much history the snapshot holds.
        #[arg(long, default_value = "2m", value_parser = parse_duration)]
        window: Duration,
        /// json (complete, opens again) or md (a report to paste into an issue); default: md
        /// for an -o FILE.md, else json. A name ending in .gz is gzipped, either way.
        #[arg(long, value_parser = ["json", "md"])]
        format: Option<String>,
        /// How long to sample live GPUs first.
        #[arg(long = "for", default_value = "10s", value_parser = parse_duration)]
        duration: Duration,
        /// Snapshot a recording instead of live GPUs.
        #[arg(long, conflicts_with_all = ["demo", "duration", "id", "cuda_visible"])]
        replay: Option<PathBuf>,
        /// Leave command lines out (by default they are kept with secrets redacted).
        #[arg(long)]
        no_cmdline: bool,
        /// Leave out what names the machine and its people: the host name, user names, and the
        /// directories of a replayed file.
        #[arg(long)]
        no_host: bool,
        #[command(flatten)]
        live: LiveArgs,
        #[command(flatten)]
        judge: JudgeArgs,
    },
    /// Every host's GPUs in one view, read from the Prometheus that scrapes their `gpuwatch
    /// serve`, with the rank a multi-node job waits for (docs/fleet.md).
    #[command(after_help = EXIT_PLAIN)]
    Fleet {
        /// Prometheus's URL, e.g. `http://prometheus:9090`.
        #[arg(long, value_name = "URL", env = "GPUWATCH_PROMETHEUS")]
        prometheus: String,
        /// Print the fleet table and the jobs' culprits once, as JSON, instead of the view.
        #[arg(long)]
        json: bool,
        /// Basic auth user for Prometheus (with --password-file).
        #[arg(long, requires = "password_file")]
        user: Option<String>,
        /// File holding the basic auth password (a file, so it is not in `ps`).
        #[arg(long, value_name = "FILE", requires = "user")]
        password_file: Option<PathBuf>,
        /// PEM file of the CA that signed Prometheus's certificate, when not a public one.
        #[arg(long, value_name = "FILE")]
        cacert: Option<PathBuf>,
        /// How often the view asks Prometheus again.
        #[arg(long, default_value = "5s", value_parser = parse_duration)]
        refresh: Duration,
    },
    /// Serve metrics and findings to Prometheus: /metrics, /findings.json, /healthz.
    #[command(after_help = EXIT_PLAIN)]
    Serve {
        /// Address and port to listen on (loopback by default; 0.0.0.0:9947, or :9947, to be
        /// scraped from elsewhere).
        #[arg(long, default_value = crate::serve::DEFAULT_LISTEN)]
        listen: String,
        /// Also export the N processes holding the most memory on each GPU, labelled with
        /// pid, process name, container id and pod UID (0: none; each adds 4 series per GPU).
        #[arg(long, default_value_t = 0, value_name = "N", value_parser = clap::value_parser!(u16).range(0..=64))]
        processes: u16,
        /// Also export the metrics under dcgm-exporter's names and units, which the standard DCGM
        /// Grafana dashboard reads, for nodes without dcgm-exporter.
        #[arg(long)]
        dcgm_compat: bool,
        /// Open connections at most; at the cap, the one waiting longest on its client is
        /// closed to make room (never more than the open-file limit allows, less 64).
        #[arg(long, default_value_t = crate::serve::MAX_CONNECTIONS, value_name = "N", value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=65536))]
        max_connections: usize,
        /// TLS and basic auth, in the format of Prometheus's exporter-toolkit (the file
        /// `node_exporter` takes): a certificate and key, client CAs, users with bcrypt hashes.
        #[arg(long = "web.config.file", value_name = "FILE")]
        web_config_file: Option<PathBuf>,
        #[command(flatten)]
        live: LiveArgs,
        #[command(flatten)]
        judge: JudgeArgs,
    },
    /// Where each GPU process's Python threads are: their stacks, read from outside (py-spy)
    /// without stopping them, and what the frames mean (data loading, host sync, collective…).
    #[command(after_help = EXIT_STACKS)]
    Stacks {
        /// A process to read (any Python process of yours); default: every process on the GPUs
        /// (-i chooses which).
        #[arg(conflicts_with_all = ["demo", "id", "cuda_visible"])]
        pid: Option<u32>,
        /// Reads per process, 100 ms apart.
        #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..=600))]
        samples: u32,
        /// Print JSON (the bursts as recordings keep them) instead of text.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        live: LiveArgs,
    },
    /// Sample (or replay) headlessly and print the diagnosis. Exit status: 0 nothing found, 1 a
    /// warning or worse found, 3 nothing found but some GPU not judged in full (run longer), 2 error.
    #[command(after_help = EXIT_DIAGNOSE)]
    Diagnose {
        /// How long to sample a live or simulated source.
        #[arg(long = "for", default_value = "30s", value_parser = parse_duration)]
        duration: Duration,
        /// Diagnose a recording or snapshot instead of live GPUs.
        #[arg(long, conflicts_with_all = ["demo", "duration", "id", "cuda_visible"])]
        replay: Option<PathBuf>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
        /// At the end, also read every GPU process's Python stacks and say where each is (live
        /// GPUs; a replay shows the stacks its recording kept).
        #[arg(long)]
        stacks: bool,
        #[command(flatten)]
        live: LiveArgs,
        #[command(flatten)]
        judge: JudgeArgs,
    },
    /// Print each GPU's current metrics and open findings for scripts, as CSV or JSON lines
    /// (fields as nvidia-smi --query-gpu names them; --watch repeats, for logging).
    ///
    /// Once, it prints after 1.5 s of readings, which rates and GPM activity need; at an
    /// --interval longer than that, after two readings (20 s at 10s).
    #[command(after_help = EXIT_PLAIN)]
    Query {
        /// csv (nvidia-smi's style, [N/A] for what is not there) or json (one object a line).
        #[arg(long, value_enum, default_value_t = crate::query::Format::Csv)]
        format: crate::query::Format,
        #[allow(
            clippy::doc_markdown,
            reason = "clap prints this text as it is, backticks and all"
        )]
        /// Fields to print, comma-separated (default: all): timestamp, index, name, uuid,
        /// pci.bus_id, utilization.gpu, utilization.memory, memory.used, memory.total,
        /// power.draw, power.limit, power.idle_floor, temperature.gpu, clocks.sm, clocks.mem,
        /// gpm.sm_active, gpm.tensor_active, findings (the rules judge over windows of 10 s and
        /// more: a one-shot query lists none yet; --watch does once they are judged),
        /// mig.instance, mig.profile (a MIG instance's GPU:GI and profile, else N/A).
        #[arg(long, value_delimiter = ',', value_parser = FieldName, hide_possible_values = true)]
        fields: Vec<String>,
        /// Print again every this long (at least --interval) until stopped; flushed each time.
        #[arg(long, value_parser = parse_duration)]
        watch: Option<Duration>,
        /// CSV without its header line.
        #[arg(long)]
        no_header: bool,
        #[command(flatten)]
        live: LiveArgs,
        #[command(flatten)]
        judge: JudgeArgs,
    },
    /// Print a shell completion script (the .deb installs all three). For one user: bash into
    /// ~/.local/share/bash-completion/completions/gpuwatch, zsh as _gpuwatch in a folder of
    /// $fpath (loaded by `compinit`), fish into ~/.config/fish/completions/gpuwatch.fish.
    #[command(after_help = EXIT_PLAIN)]
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the manual page (roff): `gpuwatch man > gpuwatch.1; man -l gpuwatch.1`.
    Man,
}

/// A `--fields` name: taken as written (the query says which are unknown, with the list, and
/// trims the space after a comma), and offered by the shell completions.
#[derive(Clone)]
struct FieldName;

impl clap::builder::TypedValueParser for FieldName {
    type Value = String;

    fn parse_ref(
        &self,
        _: &clap::Command,
        _: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<String, clap::Error> {
        Ok(value.to_string_lossy().into_owned())
    }

    fn possible_values(
        &self,
    ) -> Option<Box<dyn Iterator<Item = clap::builder::PossibleValue> + '_>> {
        let names = crate::query::field_names().into_iter();
        Some(Box::new(names.map(clap::builder::PossibleValue::new)))
    }
}

/// The scenario names as clap's possible values, so completions offer them and a typo gets a
/// "similar value" tip; the help lists them in its own words.
fn scenario_parser() -> ScenarioParser {
    ScenarioParser
}

/// A scenario's name from the list (completions offer them), or `fleet:H/N`, which no list
/// can hold.
#[derive(Clone)]
struct ScenarioParser;

impl clap::builder::TypedValueParser for ScenarioParser {
    type Value = Scenario;
    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<Scenario, clap::Error> {
        if let Some(s) = value.to_str().filter(|s| s.starts_with("fleet:")) {
            return s.parse().map_err(|e: String| {
                clap::Error::raw(clap::error::ErrorKind::InvalidValue, format!("{e}\n"))
                    .with_cmd(cmd)
            });
        }
        let names = crate::source::sim::scenarios()
            .into_iter()
            .map(|(name, _)| name);
        clap::builder::PossibleValuesParser::new(names)
            .parse_ref(cmd, arg, value)
            // Only names from the list get here, and each parses.
            .map(|name| name.parse().unwrap_or(Scenario::Mixed))
    }
    fn possible_values(
        &self,
    ) -> Option<Box<dyn Iterator<Item = clap::builder::PossibleValue> + '_>> {
        Some(Box::new(
            crate::source::sim::scenarios()
                .into_iter()
                .map(|(name, _)| clap::builder::PossibleValue::new(name)),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn demo_without_value_means_mixed() {
        let cli = Cli::try_parse_from(["gpuwatch", "--demo"]).unwrap();
        assert_eq!(cli.live.demo, Some(Scenario::Mixed));
        let cli = Cli::try_parse_from(["gpuwatch", "--demo=hang", "--gpus", "3"]).unwrap();
        assert_eq!(cli.live.demo, Some(Scenario::HANG));
        assert_eq!(cli.live.gpus, Some(3));
        assert!(Cli::try_parse_from(["gpuwatch", "--demo=nope"]).is_err());
    }

    #[test]
    fn the_definition_is_consistent() {
        use clap::CommandFactory as _;
        Cli::command().debug_assert();
    }

    /// Every `GPUWATCH_*` variable the code reads is listed in `--help`.
    #[test]
    fn every_environment_variable_read_is_listed() {
        fn scan(dir: &std::path::Path, found: &mut Vec<String>) {
            for e in std::fs::read_dir(dir).unwrap() {
                let p = e.unwrap().path();
                if p.is_dir() {
                    scan(&p, found);
                } else if let Ok(text) = std::fs::read_to_string(&p) {
                    for (i, _) in text.match_indices("\"GPUWATCH_") {
                        let name: String = text[i + 1..]
                            .chars()
                            .take_while(|c| c.is_ascii_uppercase() || *c == '_')
                            .collect();
                        found.push(name);
                    }
                }
            }
        }
        let mut found = Vec::new();
        scan(
            &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
            &mut found,
        );
        assert!(found.len() >= 6, "{found:?}");
        for name in found {
            assert!(
                ENVIRONMENT.contains(&name),
                "{name} is read but not in --help"
            );
        }
    }

    /// A flag a command does not use is an error, not silently ignored.
    #[test]
    fn color_always_and_never_win_over_no_color_and_auto_follows_it() {
        use std::ffi::OsStr;
        assert!(ColorWhen::Auto.colour(None));
        assert!(
            ColorWhen::Auto.colour(Some(OsStr::new(""))),
            "empty NO_COLOR is unset"
        );
        assert!(!ColorWhen::Auto.colour(Some(OsStr::new("1"))));
        assert!(ColorWhen::Always.colour(Some(OsStr::new("1"))));
        assert!(!ColorWhen::Never.colour(None));
    }

    #[test]
    #[allow(clippy::too_many_lines)] // a table of command lines, one row for each flag a command refuses
    fn flags_a_command_does_not_use_are_refused() {
        let refused = [
            &["gpuwatch", "replay", "f.jsonl", "--gpus", "4"][..],
            &["gpuwatch", "replay", "f.jsonl", "--demo"],
            &["gpuwatch", "replay", "f.jsonl", "--interval", "1s"],
            &["gpuwatch", "diagnose", "--history", "5m"],
            &["gpuwatch", "diagnose", "--fps", "10"],
            &["gpuwatch", "diagnose", "--replay", "f.jsonl", "--demo"],
            &[
                "gpuwatch", "diagnose", "--replay", "f.jsonl", "--for", "10s",
            ],
            &["gpuwatch", "snapshot", "--replay", "f.jsonl", "--demo=hang"],
            &["gpuwatch", "record", "-o", "x", "--config", "c.toml"],
            &["gpuwatch", "devices", "--no-redact"],
            &["gpuwatch", "--gpus", "4"],
            &["gpuwatch", "--demo", "replay", "f.jsonl"],
            &["gpuwatch", "diagnose", "--replay", "f.jsonl", "-i", "2"],
            &[
                "gpuwatch",
                "snapshot",
                "--replay",
                "f.jsonl",
                "--cuda-visible",
            ],
            &["gpuwatch", "replay", "f.jsonl", "-i", "0"],
            &["gpuwatch", "-i", "0", "--cuda-visible"],
            &["gpuwatch", "serve", "--processes", "65"],
        ];
        for args in refused {
            assert!(Cli::try_parse_from(args).is_err(), "{args:?} was accepted");
        }
        let accepted = [
            &[
                "gpuwatch", "replay", "f.jsonl", "--speed", "10", "--fps", "2",
            ][..],
            &[
                "gpuwatch",
                "diagnose",
                "--demo=hang",
                "--gpus",
                "2",
                "--for",
                "5s",
            ],
            &["gpuwatch", "diagnose", "--replay", "f.jsonl", "--json"],
            &[
                "gpuwatch",
                "record",
                "--demo",
                "-o",
                "x",
                "--duration",
                "1s",
                "--fast",
            ],
            &["gpuwatch", "devices", "--demo", "--timings", "3"],
            &["gpuwatch", "--demo", "--fps", "10", "--history", "1h"],
            &["gpuwatch", "-i", "0,GPU-3f2a9c1b,00000000:18:00.0"],
            &[
                "gpuwatch",
                "serve",
                "--cuda-visible",
                "--processes",
                "4",
                "--dcgm-compat",
            ],
            &["gpuwatch", "record", "-o", "x", "--id", "1"],
            &["gpuwatch", "completions", "fish"],
            &["gpuwatch", "man"],
        ];
        for args in accepted {
            if let Err(e) = Cli::try_parse_from(args) {
                panic!("{args:?} was refused: {e}");
            }
        }
    }
}
