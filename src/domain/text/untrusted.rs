//! Untrusted text (names and paths from the machine or from a file someone sent) written so
//! that it cannot act on a terminal, a shell or a Markdown reader.

/// `text` with every control character a terminal could act on (ESC and the rest of C0 but
/// newline and tab, DEL, C1) shown as `�`: GPU and process names come from the machine or from
/// a recording someone sent, and must not reach a terminal as escape sequences (an OSC 52
/// clipboard write, a title change, a cursor move).
#[must_use]
pub fn printable(text: &str) -> std::borrow::Cow<'_, str> {
    let unsafe_char =
        |c: char| (c.is_control() && c != '\n' && c != '\t') || c == '\u{7f}' || is_bidi(c);
    if text.chars().any(unsafe_char) {
        text.chars()
            .map(|c| if unsafe_char(c) { '\u{FFFD}' } else { c })
            .collect::<String>()
            .into()
    } else {
        text.into()
    }
}

/// A file name for a message of one line: as it is when plain, else in the shell's ANSI-C
/// quotes with its control characters escaped (`$'a\nb.json'`, `$'x\e]52'`), which shows the
/// name that was used, pastes back into bash or zsh as that name, and cannot move the cursor
/// (a newline in `-o` split "written to" over two lines).
#[must_use]
pub fn path_shown(path: &std::path::Path) -> String {
    let name = path.display().to_string();
    if !name.chars().any(|c| c.is_control() || is_bidi(c)) {
        return name;
    }
    let mut out = String::with_capacity(name.len() + 8);
    out.push_str("$'");
    for c in name.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            '\u{1b}' => out.push_str("\\e"),
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("\\'"),
            c if c.is_ascii_control() => drop(std::fmt::Write::write_fmt(
                &mut out,
                format_args!("\\x{:02x}", c as u32),
            )),
            // C1 and bidirectional controls as bash's \u: the name's UTF-8, not a lone byte.
            c if c.is_control() || is_bidi(c) => drop(std::fmt::Write::write_fmt(
                &mut out,
                format_args!("\\u{:04x}", c as u32),
            )),
            c => out.push(c),
        }
    }
    out.push('\'');
    out
}

/// The bidirectional controls that reorder what a terminal or a browser shows ("Trojan Source"):
/// the embeddings, overrides and isolates, and the marks.
#[must_use]
pub fn is_bidi(c: char) -> bool {
    matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{200E}' | '\u{200F}' | '\u{061C}')
}

/// One line of untrusted text (a name, a path, a line of someone's program): every control
/// character, newline and tab included, and every bidirectional control shown as `�`, and at
/// most `max` characters (`…` after a cut). Whatever reads it can print it on one line.
#[must_use]
pub fn one_line(text: &str, max: usize) -> String {
    let clean: String = text
        .chars()
        .map(|c| {
            if c.is_control() || is_bidi(c) {
                '\u{FFFD}'
            } else {
                c
            }
        })
        .collect();
    super::clip(&clean, max)
}

/// `text` as an inline code span that its own backticks cannot end: fenced by one backtick
/// more than its longest run of them (`CommonMark`), padded where it starts or ends with one.
#[must_use]
pub fn code_span(text: &str) -> String {
    let mut longest = 0;
    let mut run = 0;
    for c in text.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    let fence = "`".repeat(longest + 1);
    let pad = if text.starts_with('`') || text.ends_with('`') {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{text}{pad}{fence}")
}

/// One line of text for Markdown: its code spans kept as they are, everything else escaped so
/// that nothing in it (a process's name, a path, a line of its program) becomes a heading, a
/// table cell, a link, emphasis or raw HTML. Newlines become spaces.
#[must_use]
pub fn markdown_inline(text: &str) -> String {
    let chars: Vec<char> = text
        .chars()
        .map(|c| if c == '\n' || c == '\r' { ' ' } else { c })
        .collect();
    let mut out = String::with_capacity(text.len() + 8);
    let mut i = 0;
    while i < chars.len() {
        if chars[i] == '`' {
            let n = chars[i..].iter().take_while(|c| **c == '`').count();
            // The span ends at the next run of exactly n backticks.
            let mut j = i + n;
            let mut end = None;
            while j < chars.len() {
                if chars[j] == '`' {
                    let m = chars[j..].iter().take_while(|c| **c == '`').count();
                    if m == n {
                        end = Some(j);
                        break;
                    }
                    j += m;
                } else {
                    j += 1;
                }
            }
            if let Some(e) = end {
                out.extend(&chars[i..e + n]);
                i = e + n;
                continue;
            }
            for _ in 0..n {
                out.push_str("\\`");
            }
            i += n;
            continue;
        }
        let c = chars[i];
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '\\' | '*' | '_' | '[' | ']' | '|' | '#' | '~' | '!' => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
        i += 1;
    }
    out
}
