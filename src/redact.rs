//! What never leaves the machine: secrets in command lines, removed argument by argument before
//! a command line is joined, kept in memory, shown, recorded or put in a snapshot
//! (`--no-redact` keeps them, for one's own machine). `docs/redaction.md` lists what is removed
//! and what is kept; the table test below holds every shape it names.

use std::sync::atomic::{AtomicBool, Ordering};

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

/// Words that make a flag, variable or query parameter secret, after splitting its name on
/// `-`, `_` and `.` and lowercasing. Whole words: "tokenizer" and "`max_new_tokens`" are not.
const SECRET_WORDS: [&str; 27] = [
    "token",
    "secret",
    "password",
    "passwd",
    "pass",
    "pw",
    "pwd",
    "passphrase",
    "key",
    "apikey",
    "accesskey",
    "secretkey",
    "privatekey",
    "auth",
    "authorization",
    "bearer",
    "jwt",
    "cred",
    "creds",
    "credential",
    "credentials",
    "sessionid",
    "session",
    "signature",
    "sig",
    "cookie",
    "otp",
];

/// Flags whose value is a whole secret even though their name is not one: HTTP headers (an
/// `Authorization:` or `X-Api-Key:` line) and user:password pairs.
const SECRET_VALUE_FLAGS: [&str; 6] = ["-h", "--header", "-u", "--user", "--proxy-user", "-U"];

/// True when `name` (a flag, variable or parameter name) names a secret.
#[must_use]
pub fn is_secret_name(name: &str) -> bool {
    let n = name.trim_start_matches('-').to_ascii_lowercase();
    if n.is_empty() {
        return false;
    }
    let words: Vec<&str> = n
        .split(['-', '_', '.', ' ', '\t'])
        .filter(|w| !w.is_empty())
        .collect();
    let joined: String = words.concat();
    words.iter().any(|w| {
        SECRET_WORDS.contains(w)
            || w.ends_with("token")
            || w.ends_with("secret")
            || w.contains("passw")
    }) || [
        "apikey",
        "accesskey",
        "secretkey",
        "privatekey",
        "sessionid",
        "clientsecret",
    ]
    .iter()
    .any(|k| joined.contains(k))
}

fn is_secret_value_flag(flag: &str) -> bool {
    SECRET_VALUE_FLAGS.contains(&flag)
        || SECRET_VALUE_FLAGS.contains(&flag.to_ascii_lowercase().as_str())
}

/// Redacts a command line given as its arguments (as `/proc/PID/cmdline` has them).
pub fn redact_args<S: AsRef<str>>(args: &[S]) -> Vec<String> {
    let mut out = Vec::with_capacity(args.len());
    let mut hide_next = false;
    for arg in args {
        let arg = arg.as_ref();
        if hide_next {
            // The value of a secret flag, whatever it looks like (even "-x", even with spaces).
            out.push(HIDDEN.to_string());
            hide_next = false;
            continue;
        }
        let (text, hide) = redact_arg(arg);
        hide_next = hide;
        out.push(text);
    }
    out
}

/// Redacts one command line held as a string (split on spaces and tabs; a value with spaces
/// is only safe when redacted as arguments, see `redact_args`).
#[must_use]
pub fn redact(cmdline: &str) -> String {
    let args: Vec<&str> = cmdline.split(' ').collect();
    redact_args(&args).join(" ")
}

/// One argument: its redacted text, and whether the next argument is a secret value.
fn redact_arg(arg: &str) -> (String, bool) {
    // `--flag=value`, `--flag:value`, `NAME=value`.
    if let Some(sep) = assignment(arg) {
        let (name, value) = (&arg[..sep], &arg[sep + 1..]);
        if is_secret_name(name) || (name.starts_with('-') && is_secret_value_flag(name)) {
            return (format!("{name}{}{HIDDEN}", &arg[sep..=sep]), false);
        }
        // `--env=HF_TOKEN=x`, `--set api.key=x`: the value is itself an assignment.
        let (inner, _) = redact_arg(value);
        if inner != value {
            return (format!("{name}{}{inner}", &arg[sep..=sep]), false);
        }
    }
    // `--token<TAB>value` or `--token value` inside one argument.
    if let Some(at) = arg.find([' ', '\t']) {
        let (flag, rest) = arg.split_at(at);
        if flag.starts_with('-') && (is_secret_name(flag) || is_secret_value_flag(flag)) {
            return (format!("{flag}{}{HIDDEN}", &rest[..1]), false);
        }
    }
    if arg.starts_with('-') && (is_secret_name(arg) || is_secret_value_flag(arg)) {
        return (arg.to_string(), true);
    }
    (redact_tokens(&redact_url(arg)), false)
}

/// Where a name ends in `name=value` (or `--name:value`); `None` for URLs and plain words.
fn assignment(arg: &str) -> Option<usize> {
    if arg.contains("://") {
        return None;
    }
    let eq = arg.find('=');
    let colon = arg.starts_with('-').then(|| arg.find(':')).flatten();
    match (eq, colon) {
        (Some(e), Some(c)) => Some(e.min(c)),
        (e, c) => e.or(c),
    }
    .filter(|&i| i > 0)
}

/// `scheme://user:password@host/…?a=1&token=…`: the credentials and secret parameters.
fn redact_url(arg: &str) -> String {
    let Some(s) = arg.find("://") else {
        return arg.to_string();
    };
    let rest = &arg[s + 3..];
    // The authority ends at the query or fragment; its last '@' ends the credentials, so a
    // password holding '/' or '@' goes with them.
    let end = rest.find(['?', '#']).unwrap_or(rest.len());
    let mut out = arg[..s + 3].to_string();
    let after = match rest[..end].rfind('@') {
        Some(at) => {
            out.push_str(HIDDEN);
            &rest[at..]
        }
        None => rest,
    };
    match after.split_once('?') {
        Some((path, query)) => {
            out.push_str(path);
            out.push('?');
            let params: Vec<String> = query
                .split('&')
                .map(|p| match p.split_once('=') {
                    Some((k, _)) if is_secret_name(k) => format!("{k}={HIDDEN}"),
                    _ => p.to_string(),
                })
                .collect();
            out.push_str(&params.join("&"));
        }
        None => out.push_str(after),
    }
    out
}

/// Well-known token shapes anywhere in an argument: `OpenAI` (`sk-`), GitHub (`ghp_`, `gho_`,
/// `ghu_`, `ghs_`, `ghr_`, `github_pat_`), Hugging Face (`hf_`), GitLab (`glpat-`), Slack
/// (`xox?-`), AWS access key ids (`AKIA`/`ASIA` + 16), and JWTs (`eyJ….eyJ….…`).
fn redact_tokens(arg: &str) -> String {
    const PREFIXES: [&str; 12] = [
        "sk-",
        "ghp_",
        "gho_",
        "ghu_",
        "ghs_",
        "ghr_",
        "github_pat_",
        "hf_",
        "glpat-",
        "xoxb-",
        "xoxp-",
        "xoxa-",
    ];
    let mut out = String::with_capacity(arg.len());
    let mut rest = arg;
    while !rest.is_empty() {
        // Tokens are runs of [A-Za-z0-9_.-]; everything else is copied.
        let start = rest
            .find(|c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.')
            .unwrap_or(rest.len());
        out.push_str(&rest[..start]);
        rest = &rest[start..];
        let len = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.'))
            .unwrap_or(rest.len());
        let word = &rest[..len];
        let secret = PREFIXES
            .iter()
            .any(|p| word.starts_with(p) && word.len() >= p.len() + 16)
            || is_aws_key_id(word)
            || is_jwt(word);
        out.push_str(if secret { HIDDEN } else { word });
        rest = &rest[len..];
    }
    out
}

fn is_aws_key_id(w: &str) -> bool {
    (w.starts_with("AKIA") || w.starts_with("ASIA"))
        && w.len() == 20
        && w.chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit())
}

fn is_jwt(w: &str) -> bool {
    let parts: Vec<&str> = w.split('.').collect();
    parts.len() == 3
        && parts[0].starts_with("eyJ")
        && parts[1].starts_with("eyJ")
        && parts[2].len() >= 8
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
        .map(|w| redact_tokens(&redact_url(w)))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (arguments as /proc has them, what must be kept, what must not survive).
    #[allow(clippy::too_many_lines)] // a table of 100 cases, one per line
    fn table() -> Vec<(Vec<&'static str>, &'static str, &'static str)> {
        vec![
            // flags with a separate value
            (
                vec!["python", "train.py", "--token", "abc123"],
                "--token ***",
                "abc123",
            ),
            (vec!["x", "--api-key", "k-123"], "--api-key ***", "k-123"),
            (
                vec!["x", "--password", "hunter2"],
                "--password ***",
                "hunter2",
            ),
            (vec!["x", "--pw", "hunter2"], "--pw ***", "hunter2"),
            (
                vec!["x", "--passphrase", "correct horse battery staple"],
                "--passphrase ***",
                "horse",
            ),
            (vec!["x", "--bearer", "tok999"], "--bearer ***", "tok999"),
            (vec!["x", "--jwt", "aaa.bbb.ccc"], "--jwt ***", "aaa.bbb"),
            (vec!["x", "--cred", "c1c1c1"], "--cred ***", "c1c1c1"),
            (
                vec!["x", "--session-id", "s3ss10n"],
                "--session-id ***",
                "s3ss10n",
            ),
            (
                vec!["x", "--signature", "sig0sig0"],
                "--signature ***",
                "sig0sig0",
            ),
            (
                vec!["x", "--AccessKey", "AK000"],
                "--AccessKey ***",
                "AK000",
            ),
            (
                vec!["x", "--secret", "-starts-with-dash"],
                "--secret ***",
                "starts-with-dash",
            ),
            (
                vec!["x", "--client-secret", "cs-1"],
                "--client-secret ***",
                "cs-1",
            ),
            (
                vec!["x", "--private-key", "pk-1"],
                "--private-key ***",
                "pk-1",
            ),
            (vec!["x", "--hf-token", "hfv"], "--hf-token ***", "hfv"),
            (vec!["x", "--wandb-key", "wk1"], "--wandb-key ***", "wk1"),
            (
                vec!["x", "--db-password", "dbp"],
                "--db-password ***",
                "dbp",
            ),
            (vec!["x", "--auth", "a:b"], "--auth ***", "a:b"),
            (vec!["x", "--cookie", "c=1"], "--cookie ***", "c=1"),
            (vec!["x", "--otp", "123456"], "--otp ***", "123456"),
            (vec!["x", "-p", "notsecret"], "-p notsecret", "\u{0}"),
            // flags with = or : or whitespace inside one argument
            (vec!["x", "--token=abc"], "--token=***", "abc"),
            (vec!["x", "--api_key=xyz"], "--api_key=***", "xyz"),
            (vec!["x", "--password:x1y2"], "--password:***", "x1y2"),
            (vec!["x", "--token\tabc9"], "--token\t***", "abc9"),
            (vec!["x", "--token abc8"], "--token ***", "abc8"),
            (vec!["x", "--secret-key=sk1"], "--secret-key=***", "sk1"),
            (
                vec!["x", "--access-key-id=AK1"],
                "--access-key-id=***",
                "AK1",
            ),
            (vec!["x", "--pw=p1"], "--pw=***", "p1"),
            (vec!["x", "--Password=P1"], "--Password=***", "P1"),
            // environment-style assignments
            (vec!["env", "HF_TOKEN=hf1", "python"], "HF_TOKEN=***", "hf1"),
            (vec!["env", "OPENAI_API_KEY=k2"], "OPENAI_API_KEY=***", "k2"),
            (
                vec!["env", "AWS_SECRET_ACCESS_KEY=s3"],
                "AWS_SECRET_ACCESS_KEY=***",
                "s3",
            ),
            (vec!["env", "WANDB_API_KEY=w4"], "WANDB_API_KEY=***", "w4"),
            (vec!["env", "DB_PASSWORD=d5"], "DB_PASSWORD=***", "d5"),
            (vec!["env", "GITHUB_TOKEN=g6"], "GITHUB_TOKEN=***", "g6"),
            (vec!["env", "MY_SECRET=m7"], "MY_SECRET=***", "m7"),
            (vec!["x", "--env=HF_TOKEN=e8"], "--env=HF_TOKEN=***", "e8"),
            (vec!["x", "--env", "HF_TOKEN=e9"], "HF_TOKEN=***", "e9"),
            (vec!["x", "--set", "api.key=v10"], "api.key=***", "v10"),
            (
                vec!["x", "--set=auth.token=v11"],
                "--set=auth.token=***",
                "v11",
            ),
            (vec!["x", "-e", "PASSWORD=v12"], "PASSWORD=***", "v12"),
            // headers and user:password pairs
            (
                vec!["curl", "-H", "Authorization: Bearer abc.def"],
                "-H ***",
                "abc.def",
            ),
            (
                vec!["curl", "--header", "X-Api-Key: k13"],
                "--header ***",
                "k13",
            ),
            (
                vec!["curl", "--header=X-Api-Key: k14"],
                "--header=***",
                "k14",
            ),
            (vec!["curl", "-u", "bob:pw15"], "-u ***", "pw15"),
            (vec!["curl", "--user=bob:pw16"], "--user=***", "pw16"),
            (vec!["curl", "--user", "bob:pw17"], "--user ***", "pw17"),
            (
                vec!["curl", "--proxy-user", "p:pw18"],
                "--proxy-user ***",
                "pw18",
            ),
            // URLs
            (
                vec!["x", "https://bob:pw19@host/p"],
                "https://***@host/p",
                "pw19",
            ),
            (
                vec!["x", "https://bob:p/w20@host/p"],
                "https://***@host/p",
                "w20",
            ),
            (
                vec!["x", "https://bob:p@w21@host/p"],
                "https://***@host/p",
                "w21",
            ),
            (
                vec!["x", "postgres://u:pw22@db:5432/x"],
                "postgres://***@db:5432/x",
                "pw22",
            ),
            (
                vec!["x", "redis://:pw23@r:6379"],
                "redis://***@r:6379",
                "pw23",
            ),
            (
                vec!["x", "https://h/p?token=t24"],
                "https://h/p?token=***",
                "t24",
            ),
            (
                vec!["x", "https://h/p?a=1&token=t25"],
                "https://h/p?a=1&token=***",
                "t25",
            ),
            (
                vec!["x", "https://h/p?a=1&sig=t26&b=2"],
                "sig=***&b=2",
                "t26",
            ),
            (
                vec!["x", "https://h/p?X-Amz-Signature=t27"],
                "X-Amz-Signature=***",
                "t27",
            ),
            (vec!["x", "https://h/p?api_key=t28"], "api_key=***", "t28"),
            (
                vec!["x", "https://h/p?access_token=t29"],
                "access_token=***",
                "t29",
            ),
            (vec!["x", "https://h/p?password=t30"], "password=***", "t30"),
            (
                vec!["x", "--url=https://u:pw31@h"],
                "--url=https://***@h",
                "pw31",
            ),
            (
                vec!["x", "--url", "https://u:pw32@h"],
                "https://***@h",
                "pw32",
            ),
            (
                vec!["x", "s3://bucket/key?X-Amz-Credential=c33"],
                "X-Amz-Credential=***",
                "c33",
            ),
            // bare well-known tokens
            (
                vec!["x", "sk-abcdefghijklmnopqrstu34"],
                "x ***",
                "abcdefghijklmnop",
            ),
            (
                vec!["x", "sk-proj-abcdefghijklmnopqr35"],
                "x ***",
                "abcdefghijklmnop",
            ),
            (
                vec!["x", "ghp_abcdefghijklmnopqrstuv36"],
                "x ***",
                "abcdefghijklmnop",
            ),
            (
                vec!["x", "gho_abcdefghijklmnopqrstuv37"],
                "x ***",
                "abcdefghijklmnop",
            ),
            (
                vec!["x", "github_pat_abcdefghijklmnopq38"],
                "x ***",
                "abcdefghijklmnop",
            ),
            (
                vec!["x", "hf_abcdefghijklmnopqrstuv39"],
                "x ***",
                "abcdefghijklmnop",
            ),
            (
                vec!["x", "glpat-abcdefghijklmnopqrst40"],
                "x ***",
                "abcdefghijklmnop",
            ),
            (
                vec!["x", "xoxb-1234567890-abcdefghij41"],
                "x ***",
                "abcdefghij41",
            ),
            (
                vec!["x", "AKIAABCDEFGHIJKLMNOP"],
                "x ***",
                "ABCDEFGHIJKLMNOP",
            ),
            (
                vec!["x", "ASIAABCDEFGHIJKLMNOP"],
                "x ***",
                "ABCDEFGHIJKLMNOP",
            ),
            (
                vec!["x", "eyJhbGciOi.eyJzdWIiOi.c2lnbmF0dXJl"],
                "x ***",
                "c2lnbmF0dXJl",
            ),
            (
                vec!["x", "--model=hf_abcdefghijklmnopqrstuv45"],
                "--model=***",
                "abcdefghijklmnop",
            ),
            (
                vec!["x", "prefix:sk-abcdefghijklmnopqrstu46"],
                "prefix:***",
                "abcdefghijklmnop",
            ),
            (
                vec!["x", "Bearer", "eyJhbGciOi.eyJzdWIiOi.c2lnbmF0dXJl"],
                "Bearer ***",
                "c2lnbmF0dXJl",
            ),
            // kept as they are
            (
                vec!["python", "train.py", "--tokenizer", "gpt2"],
                "--tokenizer gpt2",
                "\u{0}",
            ),
            (
                vec!["x", "--max-new-tokens", "128"],
                "--max-new-tokens 128",
                "\u{0}",
            ),
            (vec!["x", "--num-tokens=512"], "--num-tokens=512", "\u{0}"),
            (vec!["x", "--keyboard", "us"], "--keyboard us", "\u{0}"),
            (vec!["x", "--passes", "3"], "--passes 3", "\u{0}"),
            (vec!["x", "--batch-size", "64"], "--batch-size 64", "\u{0}"),
            (vec!["x", "--sigma", "0.5"], "--sigma 0.5", "\u{0}"),
            (vec!["x", "--lr=3e-4"], "--lr=3e-4", "\u{0}"),
            (
                vec!["x", "https://huggingface.co/meta-llama/Llama-3"],
                "https://huggingface.co/meta-llama/Llama-3",
                "\u{0}",
            ),
            (
                vec!["x", "--data=/mnt/data/train"],
                "--data=/mnt/data/train",
                "\u{0}",
            ),
            (vec!["x", "sk-short"], "sk-short", "\u{0}"),
            (vec!["x", "hf_hub"], "hf_hub", "\u{0}"),
            (vec!["x", "AKIA"], "AKIA", "\u{0}"),
            (
                vec!["torchrun", "--nproc-per-node", "8", "train.py"],
                "--nproc-per-node 8 train.py",
                "\u{0}",
            ),
            (
                vec!["x", "--master-port=29500"],
                "--master-port=29500",
                "\u{0}",
            ),
            (vec!["x", "--keep-last", "5"], "--keep-last 5", "\u{0}"),
            (vec!["x", "--monkey", "1"], "--monkey 1", "\u{0}"),
            (vec!["x", "-o", "out.json"], "-o out.json", "\u{0}"),
            (
                vec!["x", "--output-dir=/tmp/x"],
                "--output-dir=/tmp/x",
                "\u{0}",
            ),
            (vec!["x", "a=b"], "a=b", "\u{0}"),
            (vec!["x", "--compile"], "--compile", "\u{0}"),
            (
                vec!["x", "https://h/p?page=2&sort=asc"],
                "https://h/p?page=2&sort=asc",
                "\u{0}",
            ),
        ]
    }

    #[test]
    fn every_shape_of_the_table_is_redacted_and_the_rest_kept() {
        let rows = table();
        assert!(rows.len() >= 100, "{} shapes", rows.len());
        for (args, kept, gone) in rows {
            let out = redact_args(&args).join(" ");
            assert!(out.contains(kept), "{args:?} -> {out:?}: lacks {kept:?}");
            assert!(
                !out.contains(gone),
                "{args:?} -> {out:?}: still has {gone:?}"
            );
        }
    }

    #[test]
    fn redacting_twice_changes_nothing_more() {
        for (args, _, _) in table() {
            let once = redact_args(&args).join(" ");
            assert_eq!(redact(&once), once, "{args:?}");
        }
    }

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
}
