//! What never leaves the machine: command lines are redacted by an allow-list, argument by
//! argument, before they are joined, kept in memory, shown, recorded or put in a snapshot
//! (`--no-redact` keeps them, for one's own machine). Kept: the program, the script, the
//! flags' names, and values that are plainly harmless (numbers, booleans, file names with a
//! known extension, paths) or that belong to a flag known to be safe (`--model`, `--data`…);
//! every other value is `***`. Token shapes and URL credentials are removed even from what is
//! kept. `docs/redaction.md` says exactly what is kept; `tests/redaction.rs` holds the shapes.

mod shapes;
mod words;

use std::sync::atomic::{AtomicBool, Ordering};

pub use words::is_secret_name;

/// Set once at start by `--no-redact`: command lines are then read, recorded and exported as
/// they are. A process-wide switch, since every reader of /proc and every writer must agree.
static KEEP_SECRETS: AtomicBool = AtomicBool::new(false);

/// Keep secrets in command lines from now on (`--no-redact`).
pub fn keep_secrets() {
    KEEP_SECRETS.store(true, Ordering::Relaxed);
}

/// True unless `--no-redact` was given.
pub fn redacting() -> bool {
    !KEEP_SECRETS.load(Ordering::Relaxed)
}

/// The replacement for a secret.
pub const HIDDEN: &str = "***";

/// How deep a shell's `-c` command line is read again (`bash -c "sh -c '…'"`).
const MAX_DEPTH: usize = 4;

/// Redacts a command line given as its arguments (as `/proc/PID/cmdline` has them).
pub fn redact_args<S: AsRef<str>>(args: &[S]) -> Vec<String> {
    let args: Vec<&str> = args.iter().map(AsRef::as_ref).collect();
    Walk::new(0).run(&args)
}

/// Redacts one command line held as a string (split on spaces; a value with spaces is only
/// safe when redacted as arguments, see `redact_args`).
#[must_use]
pub fn redact(cmdline: &str) -> String {
    let args: Vec<&str> = cmdline.split(' ').collect();
    let mut walk = Walk::new(0);
    let mut out = Vec::with_capacity(args.len());
    for (i, arg) in args.iter().enumerate() {
        if walk.next == (Next::Code { shell: true }) {
            // Joined, a shell's `-c` line cannot be told from the arguments after it: the
            // rest is read as the line, as `redact_args` read it.
            out.push(walk.arg(&args[i..].join(" ")));
            break;
        }
        out.push(walk.arg(arg));
    }
    out.join(" ")
}

/// What the argument after a flag is.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Next {
    /// Judged on its own: a positional, or the value of a switch's neighbour.
    Free,
    /// A secret flag's value: hidden whatever it looks like (even `-x`, even with spaces).
    Secret,
    /// The value of a flag known to be safe: kept when it is one plain word.
    Safe,
    /// The value of another flag: kept only when plainly harmless.
    Value,
    /// `python -c CODE`: hidden; `bash -c LINE`: redacted as a command line.
    Code { shell: bool },
    /// `python -m MODULE`: kept, and maybe a launcher.
    Module,
}

/// One pass over a command line: which program runs, and what its next argument must be.
struct Walk {
    depth: usize,
    program: String,
    next: Next,
    /// After a launcher (`env`, `torchrun`…): the next positional is a program.
    want_program: bool,
    /// After an interpreter: the next positional is its script.
    want_script: bool,
}

impl Walk {
    fn new(depth: usize) -> Self {
        Walk {
            depth,
            program: String::new(),
            next: Next::Free,
            want_program: true,
            want_script: false,
        }
    }

    fn run(mut self, args: &[&str]) -> Vec<String> {
        args.iter().map(|a| self.arg(a)).collect()
    }

    fn arg(&mut self, arg: &str) -> String {
        let next = std::mem::replace(&mut self.next, Next::Free);
        match next {
            Next::Secret | Next::Code { shell: false } => return HIDDEN.to_string(),
            Next::Code { shell: true } => return self.shell_line(arg),
            Next::Module => {
                if !is_plain(arg) {
                    return HIDDEN.to_string();
                }
                self.want_script = false;
                self.want_program = words::LAUNCHER_MODULES.contains(&arg);
                return shapes::scrub(arg);
            }
            Next::Safe if is_plain(arg) && !arg.starts_with('-') => return shapes::scrub(arg),
            Next::Safe | Next::Value | Next::Free => {}
        }
        if let Some(flag) = flag_name(arg) {
            return self.flag(arg, flag);
        }
        if next == Next::Free && (self.want_program || self.want_script) && is_plain(arg) {
            if let Some(kept) = self.program_or_script(arg) {
                return kept;
            }
        }
        judge_value(arg)
    }

    /// A positional where a program or a script is expected: kept, and what it runs decides
    /// what comes next. `None` for an assignment (`env A=1 python`), judged as a value.
    fn program_or_script(&mut self, arg: &str) -> Option<String> {
        if arg.contains('=') {
            return None;
        }
        if self.want_program {
            self.want_program = false;
            let base = arg.rsplit('/').next().unwrap_or(arg);
            self.program = base.to_string();
            let python = base.starts_with("python") || base.starts_with("pypy");
            self.want_script =
                python || words::INTERPRETERS.contains(&base) || words::SHELLS.contains(&base);
            self.want_program = words::LAUNCHERS.contains(&base);
        } else {
            self.want_script = false;
        }
        Some(shapes::scrub(arg))
    }

    /// A flag: its name is kept; its value (after `=`, attached, or the next argument) is
    /// judged by what the name says.
    fn flag(&mut self, arg: &str, name: &str) -> String {
        let program = self.program.as_str();
        let value = &arg[name.len()..];
        if !value.is_empty() {
            // `--flag=value`, `--flag:value`, `-pVALUE`.
            let (sep, v) = match value.chars().next() {
                Some(c @ ('=' | ':' | ' ' | '\t')) if name.starts_with("--") || c == '=' => {
                    (c.to_string(), &value[1..])
                }
                _ => (String::new(), value),
            };
            let kept = if words::is_secret_flag(program, name) {
                HIDDEN.to_string()
            } else if sep.is_empty() && !name.starts_with("--") {
                // An attached short value (`-j8`, `-pX`): only a number is plainly harmless.
                if is_number(v) {
                    v.to_string()
                } else {
                    HIDDEN.to_string()
                }
            } else if words::is_safe_flag(name) && is_plain(v) {
                shapes::scrub(v)
            } else {
                judge_value(v)
            };
            return format!("{}{sep}{kept}", shapes::scrub(name));
        }
        let python = program.starts_with("python") || program.starts_with("pypy");
        let shell = words::SHELLS.contains(&program);
        self.next = if python && words::is_switch(name) {
            // `python -u`: unbuffered, not curl's user:password.
            Next::Free
        } else if words::is_secret_flag(program, name) {
            Next::Secret
        } else if (python || shell || program == "node") && matches!(name, "-c" | "-lc" | "-e") {
            Next::Code { shell }
        } else if python && name == "-m" {
            Next::Module
        } else if words::is_switch(name) {
            Next::Free
        } else if words::is_safe_flag(name) {
            Next::Safe
        } else {
            Next::Value
        };
        shapes::scrub(name)
    }

    /// A shell's `-c` line: split into words (quotes removed), each command (between `;`,
    /// `&&`, `|`…) redacted as a command line of its own.
    fn shell_line(&self, line: &str) -> String {
        if self.depth >= MAX_DEPTH {
            return HIDDEN.to_string();
        }
        let mut out = Vec::new();
        let mut walk = Walk::new(self.depth + 1);
        for word in shell_words(line) {
            if is_separator(&word) {
                walk = Walk::new(self.depth + 1);
                out.push(word);
            } else {
                out.push(walk.arg(&word));
            }
        }
        out.join(" ")
    }
}

/// The name of a flag argument (`--lr`, `-p` of `-pX`, `--token` of `--token=x`); `None` for
/// a positional, a negative number, or a `-----BEGIN …` block.
fn flag_name(arg: &str) -> Option<&str> {
    let body = arg.strip_prefix("--").or_else(|| arg.strip_prefix('-'))?;
    let first = body.chars().next()?;
    if !first.is_ascii_alphabetic() {
        return None;
    }
    if words::is_switch(arg) {
        return Some(arg);
    }
    let double = arg.starts_with("--");
    let end = if double {
        body.find(['=', ':', ' ', '\t']).unwrap_or(body.len())
    } else if body.len() > 1
        && body.chars().all(|c| c.is_ascii_alphanumeric())
        && is_word_flag(body)
    {
        // `-storepass`, `-passin`: one dash, a word.
        body.len()
    } else {
        // `-p`, `-pX`, `-Dname=value`: one letter, then its value.
        body.find(['=', ' ', '\t']).map_or(1, |i| i.min(1))
    };
    let prefix = if double { 2 } else { 1 };
    let name = &arg[..prefix + end];
    // `--token value` in one argument: the value after the space goes with the flag, hidden
    // when it is a secret one.
    Some(name)
}

/// One-dash word flags (Java's, keytool's and openssl's style) read as whole names; any other
/// `-pX` is a letter and its value.
fn is_word_flag(body: &str) -> bool {
    words::WORD_FLAGS.contains(&body)
}

/// One word, without spaces, quotes or brackets: what a model name, a path or a port is.
fn is_plain(v: &str) -> bool {
    !v.is_empty()
        && v.len() <= 256
        && v.chars().all(|c| {
            c.is_ascii_alphanumeric()
                || matches!(
                    c,
                    '.' | '_' | '-' | '/' | ':' | '@' | ',' | '~' | '%' | '+' | '=' | '*'
                )
        })
}

/// Numbers, with a unit of up to three letters, or a comma-separated list of them:
/// `8`, `-1`, `3e-4`, `0.5`, `10s`, `16GB`, `0,1,2,3`.
fn is_number(v: &str) -> bool {
    !v.is_empty()
        && v.split(',').all(|n| {
            let digits_end = n
                .char_indices()
                .find(|&(i, c)| {
                    !(c.is_ascii_digit()
                        || c == '.'
                        || (matches!(c, '+' | '-') && (i == 0 || n[..i].ends_with(['e', 'E'])))
                        || (matches!(c, 'e' | 'E')
                            && i > 0
                            && n[i + 1..]
                                .starts_with(|d: char| d.is_ascii_digit() || d == '-' || d == '+')))
                })
                .map_or(n.len(), |(i, _)| i);
            let (num, unit) = n.split_at(digits_end);
            num.chars().any(|c| c.is_ascii_digit())
                && unit.len() <= 3
                && unit.chars().all(|c| c.is_ascii_alphabetic() || c == '%')
        })
}

/// A value judged on its own: kept when plainly harmless, else hidden.
fn judge_value(v: &str) -> String {
    if v == HIDDEN {
        return v.to_string();
    }
    // `NAME=value` (an environment variable, `--set a.b=c`): the name is kept.
    if let Some((name, value)) = v.split_once('=') {
        if !name.is_empty()
            && !name.contains("://")
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))
        {
            let kept = if is_secret_name(name) {
                HIDDEN.to_string()
            } else {
                judge_value(value)
            };
            return format!("{name}={kept}");
        }
    }
    if is_number(v) || words::PLAIN_WORDS.contains(&v.to_ascii_lowercase().as_str()) {
        return v.to_string();
    }
    if is_plain(v) && (has_kept_extension(v) || is_path(v) || words::SUBCOMMANDS.contains(&v)) {
        return shapes::scrub(v);
    }
    if let Some(url) = url_origin(v) {
        return url;
    }
    HIDDEN.to_string()
}

fn has_kept_extension(v: &str) -> bool {
    let name = v.rsplit('/').next().unwrap_or(v);
    name.rsplit_once('.').is_some_and(|(stem, ext)| {
        !stem.is_empty() && words::KEPT_EXTENSIONS.contains(&ext.to_ascii_lowercase().as_str())
    })
}

/// An absolute or relative path (`/data/x`, `./run`, `~/ckpt`), without `+` or `=` (base64
/// has them, paths seldom do).
fn is_path(v: &str) -> bool {
    ["/", "./", "../", "~/"].iter().any(|p| v.starts_with(p)) && !v.contains(['+', '=', '@', ':'])
}

/// A URL not under a safe flag: its scheme and host, the rest hidden (a webhook's path is its
/// secret); credentials never kept.
fn url_origin(v: &str) -> Option<String> {
    let s = v.find("://")?;
    if !is_plain(&v[..s]) || v[..s].is_empty() {
        return None;
    }
    let rest = &v[s + 3..];
    // As in `shapes::redact_url`: the credentials end at the last '@' before the query, so a
    // password holding '/' goes with them.
    let query = rest.find(['?', '#']).unwrap_or(rest.len());
    let (creds, after) = match rest[..query].rfind('@') {
        Some(at) => ("***@", &rest[at + 1..]),
        None => ("", rest),
    };
    let end = after.find(['/', '?', '#']).unwrap_or(after.len());
    let host = &after[..end];
    if host.is_empty() || !is_plain(host) {
        return None;
    }
    let tail = if end < after.len() { "/***" } else { "" };
    Some(format!("{}://{creds}{host}{tail}", &v[..s]))
}

fn is_separator(word: &str) -> bool {
    !word.is_empty()
        && word
            .chars()
            .all(|c| matches!(c, ';' | '&' | '|' | '(' | ')'))
}

/// A shell line's words: split at unquoted blanks, quotes and backslashes removed; runs of
/// `;`, `&`, `|`, `(` and `)` are words of their own, so each command is read apart.
fn shell_words(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut quote: Option<char> = None;
    let mut escaped = false;
    let mut quoted = false;
    let push = |word: &mut String, quoted: &mut bool, out: &mut Vec<String>| {
        if !word.is_empty() || *quoted {
            out.push(std::mem::take(word));
        }
        *quoted = false;
    };
    for c in line.chars() {
        if escaped {
            word.push(c);
            escaped = false;
        } else if c == '\\' && quote != Some('\'') {
            escaped = true;
        } else if let Some(q) = quote {
            if c == q {
                quote = None;
            } else {
                word.push(c);
            }
        } else if c == '"' || c == '\'' {
            quote = Some(c);
            quoted = true;
        } else if c.is_whitespace() {
            push(&mut word, &mut quoted, &mut out);
        } else if matches!(c, ';' | '&' | '|' | '(' | ')') {
            if !is_separator(&word) {
                push(&mut word, &mut quoted, &mut out);
            }
            word.push(c);
        } else {
            if is_separator(&word) {
                push(&mut word, &mut quoted, &mut out);
            }
            word.push(c);
        }
    }
    push(&mut word, &mut quoted, &mut out);
    out
}
/// Redacts one line of a program's source, read for a stack's evidence: every string literal's
/// text is masked (a path, a key, a URL: none of it is needed to say where the program is), a
/// comment is dropped; what remains loses token shapes and URL credentials. Code, names and
/// numbers stay.
#[must_use]
pub fn redact_code(line: &str) -> String {
    if !redacting() {
        return line.to_string();
    }
    let mut out = String::with_capacity(line.len());
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for c in line.chars() {
        if let Some(q) = quote {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == q {
                out.push_str(HIDDEN);
                out.push(c);
                quote = None;
            }
            continue;
        }
        out.push(c);
        if c == '"' || c == '\'' {
            quote = Some(c);
        } else if c == '#' {
            // A comment may hold anything, and says nothing of where the program is.
            out.pop();
            return redact_words(out.trim_end());
        }
    }
    if quote.is_some() {
        out.push_str(HIDDEN);
    }
    redact_words(&out)
}

/// Token shapes and URL credentials in each space-separated word of code.
fn redact_words(code: &str) -> String {
    code.split(' ')
        .map(shapes::scrub)
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn source_lines_keep_their_code_and_lose_their_strings_and_comments() {
        assert_eq!(redact_code("total += loss.item()"), "total += loss.item()");
        assert_eq!(
            redact_code("client = Client(api_key=\"sk-abc123def456ghi789jkl\")"),
            "client = Client(api_key=\"***\")"
        );
        assert_eq!(
            redact_code("torch.save(m, f'/data/{user}/ck.pt')  # hf_abcdefghijklmnopqrstuvwxyz"),
            "torch.save(m, f'***')"
        );
        assert_eq!(redact_code("x = 'it\\'s"), "x = '***");
        assert_eq!(
            redact_code("tok = ghp_abcdefghijklmnopqrstuvwxyz0123456789"),
            "tok = ***"
        );
    }

    #[test]
    fn numbers_are_told_from_words() {
        for n in [
            "8", "-1", "3e-4", "1E+5", "0.5", ".5", "10s", "16GB", "50%", "0,1,2,3",
        ] {
            assert!(is_number(n), "{n}");
        }
        for w in ["", "e5", "abc", "12345abcd", "-", "s3cr3t", "1/2"] {
            assert!(!is_number(w), "{w}");
        }
    }

    #[test]
    fn a_shell_line_is_split_into_commands() {
        assert_eq!(
            shell_words("cd /x && FOO='a b' python t.py|tee log;echo \"q\\\"\""),
            [
                "cd", "/x", "&&", "FOO=a b", "python", "t.py", "|", "tee", "log", ";", "echo",
                "q\""
            ]
        );
    }
}
