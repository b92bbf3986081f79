//! Shell completions, generated from the command line's definition with two corrections that
//! `clap_complete` does not make: a value that is no path is not completed with file names
//! (bash offered files after `--interval`, `--gpus`, `--seed`), and a comma-separated list
//! (`query --fields a,b`) is completed item by item, not only as its first item.

use clap::{Arg, Command, ValueHint};
use clap_complete::Shell;

/// The completion script for `shell`, in memory: `clap_complete` panics when its writer fails
/// (`> /dev/full`), and the caller says that instead.
#[must_use]
pub fn script(shell: Shell) -> Vec<u8> {
    let mut cmd = <super::Cli as clap::CommandFactory>::command();
    // Built first: how many values an option takes is settled when the command is built.
    cmd.build();
    let mut cmd = no_file_names(cmd);
    let lists = lists(&cmd);
    let mut text = Vec::new();
    clap_complete::generate(shell, &mut cmd, "gpuwatch", &mut text);
    let text = String::from_utf8_lossy(&text).into_owned();
    match shell {
        Shell::Bash => bash_fixes(&text, &lists),
        Shell::Zsh => zsh_lists(&text, &lists),
        Shell::Fish => fish_lists(fish_option_values(&text), &lists),
        _ => text,
    }
    .into_bytes()
}

/// Every option of `cmd` and its subcommands that takes a value with no hint of its own and
/// is no path (`PathBuf` hints itself) gets `ValueHint::Other`: bash's fallback is file names.
fn no_file_names(cmd: Command) -> Command {
    cmd.mut_args(|a: Arg| {
        if a.get_num_args().is_some_and(|n| n.takes_values())
            && a.get_value_hint() == ValueHint::Unknown
            && a.get_possible_values().is_empty()
        {
            a.value_hint(ValueHint::Other)
        } else {
            a
        }
    })
    .mut_subcommands(no_file_names)
}

/// The long name and the values of every comma-separated option with values to offer.
fn lists(cmd: &Command) -> Vec<(String, Vec<String>)> {
    let mut out: Vec<(String, Vec<String>)> = cmd
        .get_arguments()
        .filter(|a| a.get_value_delimiter() == Some(','))
        .filter_map(|a| {
            let values: Vec<String> = a
                .get_possible_values()
                .iter()
                .map(|v| v.get_name().to_string())
                .collect();
            Some((a.get_long()?.to_string(), values)).filter(|(_, v)| !v.is_empty())
        })
        .collect();
    for sub in cmd.get_subcommands() {
        for list in lists(sub) {
            if !out.contains(&list) {
                out.push(list);
            }
        }
    }
    out
}

/// bash: a list's last item is completed, the items before it kept as a prefix; `--opt=x`
/// completes as `--opt x` does (bash splits the word at `=`, so the option was the `=` and
/// file names were offered); a value that matches none of an option's values is left as it
/// is (the script's `-o default` offered file names for `--color x`).
fn bash_fixes(text: &str, lists: &[(String, Vec<String>)]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_list = false;
    let mut prev_fixed = false;
    for line in text.split_inclusive('\n') {
        let word = line.trim();
        if !prev_fixed && word == "prev=\"$3\"" {
            out.push_str(line);
            out.push_str(
                "    if [[ \"${prev}\" == \"=\" && ${COMP_CWORD} -ge 2 ]]; then\n        \
                 prev=\"${COMP_WORDS[COMP_CWORD-2]}\"\n    fi\n",
            );
            prev_fixed = true;
            continue;
        }
        if let Some(long) = word.strip_prefix("--").and_then(|w| w.strip_suffix(')')) {
            in_list = lists.iter().any(|(l, _)| l == long);
        }
        if word.starts_with("COMPREPLY=($(compgen -W ") {
            if in_list {
                out.push_str(
                    &line
                        .replace("compgen -W ", "compgen -P \"${cur%\"${cur##*,}\"}\" -W ")
                        .replace("-- \"${cur}\"))", "-- \"${cur##*,}\"))"),
                );
            } else {
                out.push_str(line);
            }
            out.push_str(&line.replace(
                word,
                "[[ ${#COMPREPLY[@]} -eq 0 ]] && COMPREPLY=(\"${cur}\")",
            ));
            in_list = false;
            continue;
        }
        out.push_str(line);
    }
    out
}

/// zsh: the option's value list `(a b c)` becomes `_sequence compadd - a b c` (items
/// separated by commas, its default).
fn zsh_lists(text: &str, lists: &[(String, Vec<String>)]) -> String {
    let mut text = text.to_string();
    for (_, values) in lists {
        let joined = values.join(" ");
        text = text.replace(
            &format!(":({joined})'"),
            &format!(":_sequence compadd - {joined}'"),
        );
    }
    text
}

/// fish: the value of a top-level option (`gpuwatch --gpus <TAB>`) was completed with file
/// names: the generated check for "no subcommand yet" fails there (argparse finds `--gpus`
/// without its value), so the option's own no-files completion was never asked. A failed
/// parse is taken as "no subcommand yet".
fn fish_option_values(text: &str) -> String {
    text.replacen(
        "-- $cmd 2>/dev/null\n    or return\n",
        "-- $cmd 2>/dev/null\n    or return 0\n",
        1,
    )
}

/// fish: a second completion for the option, through fish's own `__fish_complete_list`,
/// which keeps the items before the last comma.
fn fish_lists(mut text: String, lists: &[(String, Vec<String>)]) -> String {
    for (long, values) in lists {
        let Some(condition) = text
            .lines()
            .find(|l| l.contains(&format!(" -l {long} ")))
            .and_then(|l| l.split(" -n ").nth(1))
            .and_then(|rest| rest.split(" -l ").next())
        else {
            continue;
        };
        let line = format!(
            "complete -c gpuwatch -n {condition} -l {long} -r -f -a \"(__fish_complete_list , 'printf %s\\\\n {}')\"\n",
            values.join(" ")
        );
        text.push_str(&line);
    }
    text
}
