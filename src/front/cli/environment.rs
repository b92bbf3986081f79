//! `GPUWATCH_*` variables, read by the command that uses them and no other. clap reads the
//! monitor's own (the command line's top level) whatever subcommand runs: a bad `GPUWATCH_FPS`
//! broke `serve`, `man` and `completions`, none of which draws, and a bad `GPUWATCH_INTERVAL`
//! broke `query --interval 1s` though the flag was given (helper-39).

use std::ffi::OsString;

use clap::{CommandFactory as _, FromArgMatches as _, Parser as _};

use super::Cli;

/// Parses `args` as `Cli::try_parse_from` does, except that the top level's variables are read
/// only when no subcommand runs.
pub fn try_parse_from<I, T>(args: I) -> Result<Cli, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let args: Vec<OsString> = args.into_iter().map(Into::into).collect();
    let mut top_unread = Cli::command();
    let read: Vec<clap::Id> = top_unread
        .get_arguments()
        .filter(|a| a.get_env().is_some())
        .map(|a| a.get_id().clone())
        .collect();
    for id in read {
        top_unread = top_unread.mut_arg(id, |a| a.env(None::<&str>));
    }
    // A refusal, `--help` included, is clap's own, said of the whole command line: the top
    // level's help lists its variables, and what the line gets wrong comes before them.
    match top_unread.try_get_matches_from(&args) {
        Ok(matches) if matches.subcommand().is_some() => Cli::from_arg_matches(&matches),
        _ => Cli::try_parse_from(args),
    }
}

/// Where clap refused a value that came from a variable (`GPUWATCH_FPS=0`), the variable: clap
/// names only the flag (`--fps <FPS>`), which the user never typed.
#[must_use]
pub fn refused_variable(e: &clap::Error) -> Option<String> {
    use clap::error::{ContextKind, ContextValue};
    let text = |kind| match e.get(kind) {
        Some(ContextValue::String(s)) => Some(s.clone()),
        _ => None,
    };
    let arg = text(ContextKind::InvalidArg)?;
    let flag = arg.split(' ').next()?.to_owned();
    let value = text(ContextKind::InvalidValue)?;
    let command = Cli::command();
    let commands = std::iter::once(&command).chain(command.get_subcommands());
    let variable = commands
        .flat_map(clap::Command::get_arguments)
        .filter(|a| a.get_long().is_some_and(|long| flag == format!("--{long}")))
        .find_map(|a| a.get_env().map(|v| v.to_string_lossy().into_owned()))?;
    let typed = std::env::args_os()
        .skip(1)
        .any(|a| a.to_string_lossy().starts_with(&flag));
    (!typed && std::env::var_os(&variable).is_some_and(|v| v.to_string_lossy() == value))
        .then_some(variable)
}
