//! Untrusted text (names and paths from the machine or from a file someone sent) written so
//! that it cannot act on a terminal, a shell or a Markdown reader.

/// `text` with every control character a terminal could act on (ESC and the rest of C0 but
/// newline and tab, DEL, C1) shown as `�`: GPU and process names come from the machine or from
/// a recording someone sent, and must not reach a terminal as escape sequences (an OSC 52
/// clipboard write, a title change, a cursor move).
#[must_use]
pub fn printable(text: &str) -> std::borrow::Cow<'_, str> {
    let unsafe_char = |c: char| acts_on_a_screen(c) && c != '\n' && c != '\t';
    if text.chars().any(unsafe_char) {
        text.chars()
            .map(|c| if unsafe_char(c) { '\u{FFFD}' } else { c })
            .collect::<String>()
            .into()
    } else {
        text.into()
    }
}

/// A file name for a message of one line, as the shell would take it back: as it is when
/// plain, single-quoted when it holds a space or a character a shell reads (`'my run.json'`),
/// in ANSI-C quotes when it holds a control character (`$'a\nb.json'`, `$'x\e]52'`). So the
/// message shows the name that was used, pastes back into bash or zsh as that name, and cannot
/// move the cursor (a newline in `-o` split "written to" over two lines). Bytes that are no
/// UTF-8 are written as `\xHH` (`display()` turned them into `�`, which names another file).
#[must_use]
pub fn path_shown(path: &std::path::Path) -> String {
    quoted(path, "")
}

/// A file name as one word of a shell command the user is told to run (`head -n 12 FILE`):
/// `path_shown`, with `./` before a relative name that starts with `-` (an option, else).
#[must_use]
pub fn shell_word(path: &std::path::Path) -> String {
    let dash = path.as_os_str().as_encoded_bytes().starts_with(b"-");
    quoted(path, if dash { "./" } else { "" })
}

/// A word the user gave (a field name, a GPU to watch) said back in a message as
/// `path_shown` says a file name: bare when plain, quoted as the shell would take it back.
#[must_use]
pub fn word_shown(word: &str) -> String {
    quoted(std::path::Path::new(word), "")
}

fn quoted(path: &std::path::Path, before: &str) -> String {
    let bytes = path.as_os_str().as_encoded_bytes();
    let Ok(name) = std::str::from_utf8(bytes) else {
        return ansi_c(before, bytes);
    };
    if name.chars().any(needs_escape) {
        return ansi_c(before, bytes);
    }
    // What no shell reads: letters and digits, and a few marks; beyond ASCII, as it is.
    let plain = |c: char| !c.is_ascii() || c.is_ascii_alphanumeric() || "_./+,:@%=-~".contains(c);
    if !name.is_empty() && name.chars().all(plain) && !name.starts_with('~') {
        return format!("{before}{name}");
    }
    format!("'{before}{}'", name.replace('\'', "'\\''"))
}

/// Characters a name is not shown raw with: controls, the bidirectional ones, and those that
/// show nothing (a zero-width space, a soft hyphen, the line and paragraph separators, a
/// byte-order mark, the tag characters) and so make two names look alike.
fn needs_escape(c: char) -> bool {
    acts_on_a_screen(c)
        || matches!(c, '\u{200B}'..='\u{200D}' | '\u{2028}' | '\u{2029}' | '\u{00AD}' | '\u{FEFF}' | '\u{E0000}'..='\u{E007F}')
}

/// The characters untrusted text is never written with as they are: the controls (C0 with
/// newline and tab, DEL, C1), which a terminal acts on, and the bidirectional ones, which
/// reorder what it shows. Each writer above decides only what to do with them.
fn acts_on_a_screen(c: char) -> bool {
    c.is_control() || is_bidi(c)
}

/// A message that quotes what the user typed (clap's "invalid value '…'"), with every
/// character `needs_escape` names but the line breaks written as ANSI-C escapes (`\e`,
/// `\x07`): clap prints a value as it was given, and on a terminal an ESC in it was acted on.
#[must_use]
pub fn controls_escaped(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.chars().any(|c| c != '\n' && needs_escape(c)) {
        return text.into();
    }
    let mut out = String::with_capacity(text.len() + 8);
    for line in text.split_inclusive('\n') {
        let (body, end) = line.strip_suffix('\n').map_or((line, ""), |b| (b, "\n"));
        push_escaped(&mut out, body.as_bytes(), false);
        out.push_str(end);
    }
    out.into()
}

/// Every character of `text` that `needs_escape` names, line breaks and tabs included, and
/// every backslash and quote, written as an escape (`1\e[2J\n`): a value the user gave, said
/// back inside a message's quotes on one line, where a typed `\e` and an ESC read differently.
#[must_use]
pub fn escapes_of(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    push_escaped(&mut out, text.as_bytes(), true);
    out
}

/// A TOML key from a file someone wrote, said back as TOML takes it: bare when TOML reads it
/// bare, else a basic string whose quotes, backslashes, controls and the characters that show
/// nothing or reorder text are escapes (`"hang_window\u200B"`, `"a\nb"`), so a key cannot pass
/// for another or break the message's line.
#[must_use]
pub fn toml_key(key: &str) -> String {
    let bare = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    if !key.is_empty() && key.chars().all(bare) {
        return key.to_string();
    }
    let mut out = String::with_capacity(key.len() + 2);
    out.push('"');
    for c in key.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if needs_escape(c) && u32::from(c) > 0xFFFF => {
                let _ =
                    std::fmt::Write::write_fmt(&mut out, format_args!("\\U{:08X}", u32::from(c)));
            }
            c if needs_escape(c) => {
                let _ =
                    std::fmt::Write::write_fmt(&mut out, format_args!("\\u{:04X}", u32::from(c)));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// `bytes` in bash's ANSI-C quotes: the usual escapes by name, every other byte of a
/// character that needs escaping (and every byte that is no UTF-8) as `\xHH`, which gives
/// back the same bytes in any locale (`\u` depends on it).
fn ansi_c(before: &str, bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() + 8);
    out.push_str("$'");
    out.push_str(before);
    push_escaped(&mut out, bytes, true);
    out.push('\'');
    out
}

/// `bytes` with what `needs_escape` names written as escapes; `quoting`: inside `$'…'`, where
/// a backslash and a quote are escaped too.
fn push_escaped(out: &mut String, bytes: &[u8], quoting: bool) {
    let hex = |out: &mut String, b: &[u8]| {
        for b in b {
            let _ = std::fmt::Write::write_fmt(out, format_args!("\\x{b:02x}"));
        }
    };
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '\n' => out.push_str("\\n"),
                '\t' => out.push_str("\\t"),
                '\r' => out.push_str("\\r"),
                '\u{1b}' => out.push_str("\\e"),
                '\\' if quoting => out.push_str("\\\\"),
                '\'' if quoting => out.push_str("\\'"),
                c if needs_escape(c) => hex(out, c.encode_utf8(&mut [0; 4]).as_bytes()),
                c => out.push(c),
            }
        }
        hex(out, chunk.invalid());
    }
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
        .map(|c| if acts_on_a_screen(c) { '\u{FFFD}' } else { c })
        .collect();
    super::clip(&clean, max)
}

/// `text` as an inline code span that its own backticks cannot end: fenced by one backtick
/// more than its longest run of them (`CommonMark`), padded where it starts or ends with one.
#[must_use]
pub fn code_span(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    push_code_span(&mut out, text);
    out
}

/// `code_span` of `text` pushed onto `out`, without a `String` of its own (a hang's evidence
/// quotes every rank's place once a second).
pub fn push_code_span(out: &mut String, text: &str) {
    let mut longest = 0;
    let mut run = 0;
    for b in text.bytes() {
        run = if b == b'`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    let pad = if text.starts_with('`') || text.ends_with('`') {
        " "
    } else {
        ""
    };
    let fence = |out: &mut String| out.extend(std::iter::repeat_n('`', longest + 1));
    fence(out);
    out.push_str(pad);
    out.push_str(text);
    out.push_str(pad);
    fence(out);
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
