//! `gpuwatch man`: the manual page in roff, from the same clap definitions as `--help`.

use super::{Cli, ENVIRONMENT};

/// What each exit status means, for `--help` of the commands that use them and the manual.
const EXIT_STATUS: &str = "0 success (diagnose: nothing of warning or worse found); \
1 diagnose found a warning or worse; 2 an error (the message says what to do); \
3 diagnose found nothing, but some GPU could not be judged in full (run it longer)";

/// One section of the manual, written by `clap_mangen`.
type Render = fn(&clap_mangen::Man, &mut Vec<u8>) -> std::io::Result<()>;

/// The manual page (roff): the monitor's options, then each command with its own, the
/// environment and the exit statuses. One page: gpuwatch has no per-command pages.
#[must_use]
pub fn manual() -> Vec<u8> {
    use clap::CommandFactory;
    let cmd = Cli::command().after_help(None::<&str>);
    let man = clap_mangen::Man::new(cmd.clone());
    let mut out = Vec::new();
    let sections: [Render; 5] = [
        |m, o| m.render_title(o),
        |m, o| m.render_name_section(o),
        |m, o| m.render_synopsis_section(o),
        |m, o| m.render_description_section(o),
        |m, o| m.render_options_section(o),
    ];
    for render in sections {
        // Writing into a Vec cannot fail.
        let _ = render(&man, &mut out);
    }
    out.extend(keys_section().into_bytes());
    for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
        let name = format!("gpuwatch {}", sub.get_name());
        out.extend(format!(".SH \"{}\"\n", name.to_uppercase()).into_bytes());
        if let Some(about) = sub.get_about() {
            out.extend(format!("{}\n", roff_escape(&about.to_string())).into_bytes());
        }
        let mut section = Vec::new();
        let _ = clap_mangen::Man::new(sub.clone()).render_options_section(&mut section);
        let text = String::from_utf8_lossy(&section).replace(".SH OPTIONS", ".SS Options");
        out.extend(text.into_bytes());
    }
    out.extend(b".SH ENVIRONMENT\n.nf\n");
    out.extend(roff_escape(ENVIRONMENT.trim_start_matches("Environment:\n")).into_bytes());
    out.extend(b"\n.fi\n.SH \"EXIT STATUS\"\n");
    for status in EXIT_STATUS.split("; ") {
        out.extend(format!(".TP\n{}\n", roff_escape(status).replacen(' ', "\n", 1)).into_bytes());
    }
    out.extend(format!(".SH VERSION\nv{}\n", env!("CARGO_PKG_VERSION")).into_bytes());
    roff_glyphs(&String::from_utf8_lossy(&out)).into_bytes()
}

/// The help texts' typography as roff names it: groff in a C locale has no glyph for a raw
/// `…` (it warns and drops it), but knows `\(em` and draws it as `--` there.
fn roff_glyphs(page: &str) -> String {
    page.replace('…', "...")
        .replace('—', "\\(em")
        .replace('×', "\\(mu")
        .replace('≥', "\\(>=")
        .replace('≤', "\\(<=")
}

/// The monitor's keys and symbols, from the one key table the `?` overlay draws.
fn keys_section() -> String {
    use std::fmt::Write as _;
    let plain = |t: &str| roff_escape(&t.replace('`', ""));
    let (keys, symbols) = crate::ui::help_table();
    let mut out = String::from(".SH KEYS\nIn the monitor (gpuwatch, gpuwatch replay):\n");
    for (keys, does) in keys {
        let _ = write!(out, ".TP\n\\fB{}\\fR\n{}\n", plain(keys), plain(does));
    }
    // The symbols are the screen's glyphs (‼ ━ ▀…), which groff cannot draw in a C locale: it
    // warns for each. The overlay, drawn where they are, explains them.
    out.push_str(".PP\nThe ? overlay also explains the screen's symbols: ");
    let names: Vec<&str> = symbols.map(|(what, _)| what).collect();
    out.push_str(&plain(&names.join(", ")));
    out.push_str(".\n");
    out
}

/// Text as roff reads it literally: backslashes and leading dots or quotes escaped.
fn roff_escape(text: &str) -> String {
    text.lines()
        .map(|l| {
            let l = l.replace('\\', "\\e").replace('-', "\\-");
            if l.starts_with('.') || l.starts_with('\'') {
                format!("\\&{l}")
            } else {
                l
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}
