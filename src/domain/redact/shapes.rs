//! The second layer: secrets recognised by their shape wherever they stand, even in what the
//! allow-list keeps (a model name that is a token, a password in a URL under `--data`).

use super::words::is_secret_name;
use super::HIDDEN;

/// Token prefixes and how many characters must follow for it to be a token, not a word.
const PREFIXES: [(&str, usize); 46] = [
    ("sk-", 16), // OpenAI, Anthropic (sk-ant-), DeepSeek
    ("sk_live_", 16),
    ("sk_test_", 16),
    ("rk_live_", 16),
    ("rk_test_", 16),
    ("pk_live_", 16),
    ("whsec_", 16), // Stripe
    ("ghp_", 16),
    ("gho_", 16),
    ("ghu_", 16),
    ("ghs_", 16),
    ("ghr_", 16),
    ("github_pat_", 16),
    ("hf_", 16),
    ("api_org_", 16), // Hugging Face
    ("glpat-", 16),
    ("glrt-", 16),
    ("glptt-", 16),
    ("gldt-", 16),
    ("GR1348941", 8), // GitLab runners
    ("xoxb-", 10),
    ("xoxp-", 10),
    ("xoxa-", 10),
    ("xoxr-", 10),
    ("xoxs-", 10),
    ("xoxe-", 10),
    ("xapp-", 10), // Slack
    ("AIza", 30),
    ("ya29.", 20), // Google
    ("npm_", 30),
    ("pypi-", 30),
    ("dckr_pat_", 16),
    ("dop_v1_", 32),
    ("doo_v1_", 32),
    ("dor_v1_", 32), // DigitalOcean
    ("dapi", 32),    // Databricks
    ("hvs.", 20),
    ("hvb.", 20), // Vault
    ("SG.", 20),  // SendGrid
    ("nvapi-", 20),
    ("gsk_", 20),  // Groq
    ("r8_", 20),   // Replicate
    ("xai-", 20),  // xAI
    ("lsv2_", 20), // LangSmith
    ("shpat_", 16),
    ("AGE-SECRET-KEY-", 16),
];

/// The token shapes and URL credentials in one argument; a PEM private key as a whole.
#[must_use]
pub fn scrub(arg: &str) -> String {
    if arg.contains("PRIVATE KEY") {
        return HIDDEN.to_string();
    }
    redact_tokens(&redact_url(arg))
}

/// `scheme://user:password@host/…?a=1&token=…#access_token=…`: the credentials and the
/// secret parameters of the query and of the fragment.
#[must_use]
pub fn redact_url(arg: &str) -> String {
    let Some(s) = arg.find("://") else {
        return arg.to_string();
    };
    let rest = &arg[s + 3..];
    // The authority ends at the path, query or fragment; its last '@' ends the credentials,
    // so a password holding '/' or '@' goes with them.
    let end = rest.find(['?', '#']).unwrap_or(rest.len());
    let mut out = arg[..s + 3].to_string();
    let after = match rest[..end].rfind('@') {
        Some(at) => {
            out.push_str(HIDDEN);
            &rest[at..]
        }
        None => rest,
    };
    let (path, params) = match after.find(['?', '#']) {
        Some(i) => after.split_at(i),
        None => (after, ""),
    };
    out.push_str(path);
    // Parameters, after '?' or '#', split at '&' (and a fragment's own '#').
    let mut param = String::new();
    for c in params.chars() {
        if matches!(c, '?' | '#' | '&') {
            out.push_str(&secret_param(&param));
            param.clear();
            out.push(c);
        } else {
            param.push(c);
        }
    }
    out.push_str(&secret_param(&param));
    out
}

fn secret_param(p: &str) -> String {
    match p.split_once('=') {
        Some((k, _)) if is_secret_name(k) => format!("{k}={HIDDEN}"),
        _ => p.to_string(),
    }
}

/// Well-known token shapes anywhere in an argument (`PREFIXES`), AWS access key ids, JWTs and
/// long random-looking runs (hex keys, base64 secrets).
#[must_use]
pub fn redact_tokens(arg: &str) -> String {
    let word_char = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.';
    let mut out = String::with_capacity(arg.len());
    let mut rest = arg;
    while !rest.is_empty() {
        // Tokens are runs of [A-Za-z0-9_.-]; everything else is copied.
        let start = rest.find(word_char).unwrap_or(rest.len());
        out.push_str(&rest[..start]);
        rest = &rest[start..];
        let len = rest.find(|c| !word_char(c)).unwrap_or(rest.len());
        let word = &rest[..len];
        let secret = PREFIXES
            .iter()
            .any(|(p, n)| word.starts_with(p) && word.len() >= p.len() + n)
            || is_aws_key_id(word)
            || is_jwt(word)
            || looks_random(word);
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

/// A run of letters and digits that no person names things with: 32 or more hex digits (a
/// W&B key, an API key as hex), or 24 or more with at least three each of upper case, lower
/// case and digits (base64 and random keys).
fn looks_random(word: &str) -> bool {
    word.split(['_', '-', '.']).any(|run| {
        let count = |f: fn(&char) -> bool| run.chars().filter(f).count();
        let digits = count(char::is_ascii_digit);
        let hex = run.len() >= 32 && run.chars().all(|c| c.is_ascii_hexdigit()) && digits >= 4;
        let mixed = run.len() >= 24
            && digits >= 3
            && count(char::is_ascii_uppercase) >= 3
            && count(char::is_ascii_lowercase) >= 3;
        hex || mixed
    })
}
