//! clap's refusal of a command line, said so that what the user gave cannot act on the
//! terminal: clap quotes a value back as it was typed (or set in a `GPUWATCH_*` variable), so
//! on a terminal the ESC in `--interval $'\e[2J'` cleared the screen, a newline in it made a
//! line of its own, and off a terminal the escape sequence was dropped from the message.

use std::borrow::Cow;

use clap::CommandFactory as _;

use super::Cli;

/// Writes `e` to where clap would, with the values the user gave that hold a control (a line
/// break or a tab included), a bidirectional or an invisible character said as escapes
/// (`'1\e[2Jx\n'`); a refusal quoting none is clap's own, colours and all.
pub fn print(e: &clap::Error) {
    match escaped(e) {
        Some(text) => eprint!("{text}"),
        None => drop(e.print()),
    }
}

/// The arguments and `GPUWATCH_*` values clap may quote back that need escaping.
fn foreign_values() -> Vec<String> {
    let env = std::env::vars_os()
        .filter(|(name, _)| name.as_encoded_bytes().starts_with(b"GPUWATCH_"))
        .map(|(_, value)| value);
    let mut values: Vec<String> = std::env::args_os()
        .skip(1)
        .chain(env)
        .map(|v| v.to_string_lossy().into_owned())
        .filter(|v| escapes_needed(v))
        .collect();
    // `--opt=value`: clap quotes the value alone.
    let after_eq: Vec<String> = values
        .iter()
        .filter(|v| v.starts_with('-'))
        .filter_map(|v| v.split_once('=').map(|(_, value)| value.to_string()))
        .filter(|v| escapes_needed(v))
        .collect();
    values.extend(after_eq);
    // The longest first: one value may hold another.
    values.sort_by_key(|v| std::cmp::Reverse(v.len()));
    values
}

fn escapes_needed(value: &str) -> bool {
    value.contains(['\n', '\t']) || matches!(crate::text::controls_escaped(value), Cow::Owned(_))
}

/// clap's message with each such value, where it quotes it (`'VALUE'`), said as escapes; the
/// message is made again with plain styles, so it holds no escape of clap's own to tell apart.
fn escaped(e: &clap::Error) -> Option<String> {
    if !e.use_stderr() {
        return None;
    }
    let values = foreign_values();
    if values.is_empty() {
        return None;
    }
    let plain = Cli::command()
        .styles(clap::builder::Styles::plain())
        .try_get_matches()
        .err()?;
    let mut text = plain.render().ansi().to_string();
    for value in &values {
        text = text.replace(
            &format!("{value}'"),
            &format!("{}'", crate::text::escapes_of(value)),
        );
    }
    // What is left (a value clap quoted otherwise): its controls, not its line breaks.
    Some(crate::text::controls_escaped(&text).into_owned())
}
