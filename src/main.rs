//! Parses the command line, picks the source, runs. Nothing else.

use std::process::ExitCode;

use anyhow::Result;

use std::path::Path;

use gpuwatch::cli::{Cli, Command, JudgeArgs, LiveArgs};
use gpuwatch::config::Config;
use gpuwatch::snapshot::{CmdlinePolicy, Options};
use gpuwatch::{command, source};

use std::io::Write as _;

fn main() -> ExitCode {
    let cli = gpuwatch::cli::environment::try_parse_from(std::env::args_os()).unwrap_or_else(|e| {
        // `--replay` belongs to `diagnose` and `snapshot`; the monitor plays a recording as a
        // command of its own, an easy thing to guess wrong.
        let replay = e.kind() == clap::error::ErrorKind::UnknownArgument
            && e.to_string().contains("'--replay'");
        gpuwatch::cli::refused::print(&e);
        if let Some(variable) = gpuwatch::cli::environment::refused_variable(&e)
            .filter(|v| !e.to_string().contains(&format!("(from {v})")))
        {
            eprintln!("\nnote: that value is {variable}'s: correct it, or unset {variable}");
        }
        if replay {
            eprintln!(
                "\ntip: the monitor plays a recording with `gpuwatch replay FILE`; \
                 `gpuwatch diagnose --replay FILE` prints its findings"
            );
        }
        std::process::exit(e.exit_code());
    });
    let sub = subcommand_name(&cli);
    command::stdout_failure_is_an_error();
    let ran = run(cli).and_then(|code| {
        // What is still buffered is written here, where a failure can be said.
        std::io::Write::flush(&mut std::io::stdout())
            .map_err(|e| anyhow::anyhow!("cannot write to standard output: {e}"))?;
        Ok(code)
    });
    match ran {
        Ok(code) => ExitCode::from(code as u8),
        Err(e) => {
            // Paths and names in it came from the command line or a file: shown, never obeyed
            // as escape sequences.
            let text = own_demo(&message(&e), sub.as_deref());
            // Not `eprintln!`, which panics when it cannot write: a terminal closed under the
            // monitor took its standard error with it, and the exit status became a panic's.
            let _ = writeln!(
                std::io::stderr(),
                "gpuwatch: {}",
                gpuwatch::text::printable(&text)
            );
            ExitCode::from(2)
        }
    }
}

/// The command the user typed (`snapshot`, `serve`…), none for the monitor.
fn subcommand_name(cli: &Cli) -> Option<String> {
    use clap::CommandFactory;
    let sub = cli.command.as_ref()?;
    let name = format!("{sub:?}");
    let variant = name.split([' ', '{', '(']).next()?.to_lowercase();
    Cli::command()
        .get_subcommands()
        .map(|c| c.get_name().to_string())
        .find(|n| n.replace('-', "") == variant)
}

/// The source's errors suggest `gpuwatch --demo`; `snapshot`, `query`, `serve`… have a
/// `--demo` of their own, which is what the user can try in the same command line.
fn own_demo(msg: &str, sub: Option<&str>) -> String {
    match sub {
        Some(sub) => msg.replace("`gpuwatch --demo`", &format!("`gpuwatch {sub} --demo`")),
        None => msg.to_string(),
    }
}

/// The error and its causes, each said once: an error that already quotes its cause (most of
/// ours name the file and what the system said) is not followed by the cause again.
fn message(e: &anyhow::Error) -> String {
    let mut msg = e.to_string();
    for cause in e.chain().skip(1) {
        let c = cause.to_string();
        if !msg.contains(&c) {
            msg.push_str(": ");
            msg.push_str(&c);
        }
    }
    msg
}

/// Signals as each command needs them, before any thread starts: a closed pipe ends all but
/// the server; the monitor holds stops until it has given the terminal back.
fn prepare_signals(command: Option<&Command>) -> Result<()> {
    if !matches!(command, Some(Command::Serve { .. })) {
        command::stop_on_broken_pipe();
    }
    if matches!(command, None | Some(Command::Replay { .. })) {
        gpuwatch::tui::hold_stops()?;
    }
    Ok(())
}

#[allow(clippy::too_many_lines)] // the dispatch: one short arm per subcommand, each handing its flags to its function
fn run(cli: Cli) -> Result<i32> {
    prepare_signals(cli.command.as_ref())?;
    match cli.command {
        Some(c @ (Command::Completions { .. } | Command::Man)) => generated(&c),
        Some(Command::Query {
            format,
            fields,
            watch,
            no_header,
            live,
            judge: j,
        }) => {
            if no_header && format == gpuwatch::query::Format::Json {
                usage_error(
                    "query",
                    "--no-header is for --format csv: JSON lines have no header line",
                );
            }
            let config = judge(&j)?;
            let args = gpuwatch::query::QueryArgs {
                format,
                fields,
                watch,
                header: !no_header,
            };
            gpuwatch::query::query(open(&live, None)?, &config, &args).map(|()| 0)
        }
        None => {
            let config = judge(&cli.judge)?;
            let src = open(&cli.live, None)?;
            need_terminal()?;
            gpuwatch::tui::run(src, &config, look(&cli.view)).map(|()| 0)
        }
        Some(Command::Replay {
            file,
            speed,
            view,
            judge: j,
        }) => {
            let config = judge(&j)?;
            let src = open_replay_saying_it_waits(&file, speed)?;
            need_terminal()?;
            gpuwatch::tui::run(src, &config, look(&view)).map(|()| 0)
        }
        Some(Command::Record {
            output,
            duration,
            force,
            fast,
            live,
            no_redact,
        }) => {
            if no_redact {
                gpuwatch::redact::keep_secrets();
            }
            let src = open(&live, None)?;
            command::record(src, &output, duration, force, fast).map(|()| 0)
        }
        Some(Command::Devices {
            json,
            timings: None,
            live,
        }) => command::devices(open(&live, None)?.as_mut(), json).map(|()| 0),
        Some(Command::Devices {
            timings: Some(n),
            live,
            ..
        }) => command::timings(open(&live, None)?, n).map(|()| 0),
        Some(c @ Command::Snapshot { .. }) => snapshot(c).map(|()| 0),
        Some(Command::Fleet {
            prometheus,
            json,
            user,
            password_file,
            cacert,
            refresh,
        }) => {
            let mut client = gpuwatch::fleet::prom::Client::new(
                &prometheus,
                user.as_deref(),
                password_file.as_deref(),
                cacert.as_deref(),
                refresh.clamp(
                    std::time::Duration::from_secs(1),
                    std::time::Duration::from_secs(10),
                ),
            )?;
            if json {
                gpuwatch::fleet::print_json(&mut client).map(|()| 0)
            } else {
                need_terminal_for(
                    "fleet",
                    "For a script, `gpuwatch fleet --json` prints every host's GPUs once.",
                )?;
                gpuwatch::fleet::tui::run(client, refresh).map(|()| 0)
            }
        }
        Some(Command::Serve {
            listen,
            processes,
            dcgm_compat,
            max_connections,
            web_config_file,
            live,
            judge: j,
        }) => {
            let config = judge(&j)?;
            let extras = gpuwatch::serve::Extras {
                processes: usize::from(processes),
                dcgm: dcgm_compat,
            };
            let src = open(&live, None)?;
            let web = web_config_file.as_deref();
            gpuwatch::serve::serve(src, &config, &listen, extras, max_connections, web).map(|()| 0)
        }
        Some(c @ Command::Stacks { .. }) => stacks(c),
        Some(Command::Diagnose {
            duration,
            replay,
            json,
            stacks,
            live,
            judge: j,
        }) => {
            let config = judge(&j)?;
            let src = open(&live, replay.as_deref())?;
            command::diagnose(src, &config, duration, json, stacks)
        }
    }
}

/// Opens a replay; one read from a pipe or FIFO that has sent nothing after a second says it
/// waits (the screen stayed blank). The terminal stays the user's while it waits: a program
/// earlier in the pipeline may be reading a password from it (`ssh host cat rec.jsonl |`), so
/// Ctrl-C stops the wait as it stops any command, and what was typed meanwhile is dropped when
/// the screen opens rather than taken as its keys.
fn open_replay_saying_it_waits(path: &Path, speed: f64) -> Result<Box<dyn source::Source>> {
    use std::io::IsTerminal;
    use std::os::unix::fs::FileTypeExt;
    use std::sync::atomic::{AtomicBool, Ordering};
    let stdin = path == Path::new("-");
    // A terminal named by a path (`/dev/stdin`) is refused as it opens, below.
    let stream = stdin || std::fs::metadata(path).is_ok_and(|m| m.file_type().is_fifo());
    if !stream {
        return Ok(source::open_replay(path, speed)?);
    }
    if stdin && std::io::stdin().is_terminal() {
        anyhow::bail!(
            "`replay -` reads a recording from standard input, and it is this terminal: pipe \
             one in (`gpuwatch replay - < rec.jsonl`, `zcat rec.jsonl.gz | gpuwatch replay -`)"
        );
    }
    // Before waiting, which may be long: a screen that cannot open is said at once.
    need_terminal()?;
    let opened = std::sync::Arc::new(AtomicBool::new(false));
    let said = opened.clone();
    let what = if stdin {
        "standard input".to_string()
    } else {
        gpuwatch::text::path_shown(path)
    };
    std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_secs(1));
        if !said.load(Ordering::Relaxed) {
            eprintln!(
                "\ngpuwatch: waiting for a recording on {what}: the screen opens when its \
                 first line arrives (Ctrl-C stops)"
            );
        }
    });
    let src = source::open_replay(path, speed);
    opened.store(true, Ordering::Relaxed);
    // Nothing typed before a pipe's first line came was meant for the screen.
    gpuwatch::tui::drop_typed_ahead();
    Ok(src?)
}

/// The monitor draws on a terminal. Checked after its source opened, so that a missing file or
/// driver is what a user hears about first: it is the cause they must fix whatever stdout is.
fn need_terminal() -> Result<()> {
    need_terminal_for(
        "the monitor",
        "To keep what it sees, use `gpuwatch record -o FILE`, `gpuwatch snapshot` or \
         `gpuwatch diagnose`.",
    )
}

/// `need_terminal` for `what` draws, with `instead` to say what works off a terminal (fleet
/// said "the terminal refused raw mode (is this a terminal?): No such device or address").
fn need_terminal_for(what: &str, instead: &str) -> Result<()> {
    if std::io::IsTerminal::is_terminal(&std::io::stdout()) {
        return Ok(());
    }
    anyhow::bail!(
        "{what} draws on a terminal, and standard output is not one (redirected to a file or \
         a pipe?).\n{instead}"
    )
}

/// A combination of flags clap cannot express, refused as clap refuses the others (exit 2),
/// with `sub`'s usage line (it gave the top level's: "Usage: gpuwatch [OPTIONS]").
fn usage_error(sub: &str, msg: &str) -> ! {
    let mut cli = <Cli as clap::CommandFactory>::command();
    cli.build();
    let mut command = cli.find_subcommand(sub).cloned().unwrap_or(cli);
    command
        .error(clap::error::ErrorKind::ArgumentConflict, msg)
        .exit()
}

/// `completions SHELL` and `man`: text generated from the command line's definition.
fn generated(command: &Command) -> Result<i32> {
    let text = match command {
        Command::Completions { shell } => gpuwatch::cli::completion_script(*shell),
        _ => gpuwatch::cli::manual(),
    };
    std::io::Write::write_all(&mut std::io::stdout(), &text)
        .map_err(|e| anyhow::anyhow!("cannot write to standard output: {e}"))?;
    Ok(0)
}

/// How the monitor draws, from its flags and `NO_COLOR`.
fn look(view: &gpuwatch::cli::ViewArgs) -> gpuwatch::tui::Look {
    gpuwatch::tui::Look {
        history: view.history,
        fps: view.fps,
        color: view.color.colour(std::env::var_os("NO_COLOR").as_deref()),
        mouse: !view.no_mouse,
    }
}

/// Applies `--no-redact` and loads the thresholds. A file named by `--config` or
/// `$GPUWATCH_CONFIG` must exist; the default location need not.
fn judge(j: &JudgeArgs) -> Result<Config> {
    if j.no_redact {
        gpuwatch::redact::keep_secrets();
    }
    let named =
        j.config.is_some() || std::env::var_os("GPUWATCH_CONFIG").is_some_and(|v| !v.is_empty());
    Ok(Config::load(
        Config::path(j.config.as_deref()).as_deref(),
        named,
    )?)
}

/// The live source `live` names, or the recording a headless command replays as fast as it can.
fn open(live: &LiveArgs, replay: Option<&Path>) -> Result<Box<dyn source::Source>> {
    if live.no_stacks {
        gpuwatch::stack::burst::disable();
    }
    if let Some(path) = replay {
        return Ok(source::open_replay(path, 0.0)?);
    }
    Ok(source::open_live(
        live.demo,
        live.gpus,
        live.seed,
        live.nvml_lib.as_deref(),
        live.interval,
        &selection(live)?,
    )?)
}

/// The GPUs `-i` or `--cuda-visible` name; all of them otherwise.
fn selection(live: &LiveArgs) -> Result<source::select::Selection> {
    if live.cuda_visible {
        let v = std::env::var("CUDA_VISIBLE_DEVICES").ok();
        return Ok(source::select::Selection::cuda_visible(v.as_deref())?);
    }
    Ok(source::select::Selection::ids(&live.id)?)
}

/// `gpuwatch stacks`: a PID needs no GPU (any Python process of this machine); without one,
/// the GPUs' processes are read.
fn stacks(command: Command) -> Result<i32> {
    let Command::Stacks {
        pid,
        samples,
        json,
        live,
    } = command
    else {
        unreachable!("called for stacks only")
    };
    let src = match pid {
        Some(_) => None,
        None => Some(open(&live, None)?),
    };
    command::stacks(src, pid, samples, json)
}

/// `gpuwatch snapshot`: what to include, then sample (or replay) and write.
fn snapshot(command: Command) -> Result<()> {
    let Command::Snapshot {
        output,
        window,
        format,
        duration,
        replay,
        no_cmdline,
        no_host,
        live,
        judge: j,
    } = command
    else {
        anyhow::bail!("not a snapshot command");
    };
    let config = judge(&j)?;
    let options = Options {
        window_ms: window.as_millis() as u64,
        include_host: !no_host,
        cmdlines: if no_cmdline {
            CmdlinePolicy::Omitted
        } else if j.no_redact {
            CmdlinePolicy::Raw
        } else {
            CmdlinePolicy::Redacted
        },
    };
    let args = command::SnapshotArgs {
        output: output.as_deref(),
        window,
        markdown: gpuwatch::snapshot::markdown_wanted(output.as_deref(), format.as_deref())
            .map_err(anyhow::Error::msg)?,
        sample_for: duration,
        options,
    };
    gpuwatch::snapshot::check_writable(args.output)?;
    let src = open(&live, replay.as_deref())?;
    command::snapshot(src, &config, &args)
}
