//! The config file: found, read (bounded), its thresholds validated once. The thresholds and
//! their defaults are declared by the rules, a section each (`rules::Thresholds`).
//!
//! The file is TOML at `$GPUWATCH_CONFIG`, else `$XDG_CONFIG_HOME/gpuwatch/config.toml`, else
//! `~/.config/gpuwatch/config.toml` (an empty or relative `XDG_CONFIG_HOME` is ignored, as the
//! XDG spec says). Every key is optional; `docs/diagnoses.md` explains each.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub use crate::rules::Thresholds;
use crate::rules::{Refusal, MAX_WINDOW};

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    pub thresholds: Thresholds,
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config file {p}: {source}", p = crate::text::path_shown(.path))]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The default location, not named by the user, cannot be looked at (another user's
    /// home, as `sudo -E` leaves HOME): say where it came from and how to choose.
    #[error(
        "cannot read config file {p}, where gpuwatch looks by default ($XDG_CONFIG_HOME or \
         $HOME/.config): {source}. Name one with --config FILE or GPUWATCH_CONFIG=FILE \
         (--config /dev/null: the default thresholds)", p = crate::text::path_shown(.path))]
    ReadDefault {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("config file {p} is not valid: {reason}", p = crate::text::path_shown(.path))]
    Invalid { path: PathBuf, reason: String },
}

/// Reads a config file of at most `MAX_CONFIG_BYTES`, refusing a larger (or endless) one.
fn read_bounded(path: &Path) -> std::io::Result<String> {
    use std::io::Read as _;
    let mut text = String::new();
    let read = std::fs::File::open(path)?
        .take(MAX_CONFIG_BYTES + 1)
        .read_to_string(&mut text)?;
    if read as u64 > MAX_CONFIG_BYTES {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!(
                "larger than {} KiB: not a gpuwatch config file",
                MAX_CONFIG_BYTES >> 10
            ),
        ));
    }
    Ok(text)
}

impl Config {
    /// The config file to read: `explicit`, else `$GPUWATCH_CONFIG`, else the XDG location.
    pub fn path(explicit: Option<&Path>) -> Option<PathBuf> {
        if let Some(p) = explicit {
            return Some(p.to_path_buf());
        }
        // Set but empty means unset, as shells leave it after `export GPUWATCH_CONFIG=`.
        if let Some(p) = std::env::var_os("GPUWATCH_CONFIG").filter(|p| !p.is_empty()) {
            return Some(PathBuf::from(p));
        }
        // As the XDG spec says: empty means unset, and a relative path is ignored (it was read
        // from the current folder: a daemon started in /tmp read whatever was left there).
        let absolute = |name| {
            std::env::var_os(name)
                .map(PathBuf::from)
                .filter(|p| p.is_absolute())
        };
        let base =
            absolute("XDG_CONFIG_HOME").or_else(|| absolute("HOME").map(|h| h.join(".config")))?;
        Some(base.join("gpuwatch").join("config.toml"))
    }

    /// Loads `path`; a missing file means defaults unless it was named explicitly.
    pub fn load(path: Option<&Path>, explicit: bool) -> Result<Config, ConfigError> {
        let Some(path) = path else {
            return Ok(Config::default());
        };
        // Where gpuwatch looks by default only a file is read: a FIFO there blocked every
        // command forever (a named one may be a pipe on purpose: `--config <(…)`).
        let not_a_file =
            !explicit && std::fs::metadata(path).is_ok_and(|m| !m.is_file() && !m.is_dir());
        if not_a_file {
            return Err(ConfigError::ReadDefault {
                path: path.to_path_buf(),
                source: std::io::Error::other("not a regular file"),
            });
        }
        let text = match read_bounded(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && !explicit => {
                return Ok(Config::default())
            }
            Err(source) if explicit => {
                return Err(ConfigError::Read {
                    path: path.to_path_buf(),
                    source,
                })
            }
            Err(source) => {
                return Err(ConfigError::ReadDefault {
                    path: path.to_path_buf(),
                    source,
                })
            }
        };
        Self::parse(&text, path)
    }

    /// Parses and validates a config file's text; `path` is only used in messages.
    pub fn parse(text: &str, path: &Path) -> Result<Config, ConfigError> {
        let cfg: Config = toml::from_str(text).map_err(|e| ConfigError::Invalid {
            path: path.to_path_buf(),
            reason: which_threshold(text)
                .or_else(|| outside_thresholds(text))
                .unwrap_or_else(|| tidy_parse_error(&e.to_string())),
        })?;
        cfg.validate(text).map_err(|reason| ConfigError::Invalid {
            path: path.to_path_buf(),
            reason,
        })?;
        Ok(cfg)
    }

    /// Checks every threshold and says the first problem in the file's order; `text`, the
    /// file's, is read only to say on which line a refused key is set (a later line was said
    /// before an earlier one when their checks ran in another order).
    fn validate(&self, text: &str) -> Result<(), String> {
        let line = |key: &str| line_of(text, &["thresholds", key]).unwrap_or(usize::MAX);
        let first_line = |r: &Refusal| {
            let other = r.then.as_ref().map_or(usize::MAX, |(key, _)| line(key));
            line(&r.key).min(other)
        };
        let first = self
            .refusals()
            .into_iter()
            .enumerate()
            .min_by_key(|(i, r)| (first_line(r), *i));
        match first {
            None => Ok(()),
            Some((_, r)) => Err(r.words(|key| at_line(text, &["thresholds", key]))),
        }
    }

    /// Every threshold the rules cannot use, in the order the checks find them.
    fn refusals(&self) -> Vec<Refusal> {
        let t = &self.thresholds;
        let mut out: Vec<Refusal> = t.unknown.keys().map(|key| unknown_key(key, t)).collect();
        let value = match serde_json::to_value(t) {
            Ok(v) => v,
            Err(e) => {
                out.push(Refusal::new("", e.to_string()));
                return out;
            }
        };
        // Every number and every window, by its name: one added to `Thresholds` is checked
        // without a list to keep (durations are humantime strings in the serialized form).
        for (name, v) in value.as_object().into_iter().flatten() {
            out.extend(number_refused(name, v).or_else(|| window_refused(name, v)));
        }
        out.extend(t.check_sections().err());
        out
    }
}

/// Why the number `v` at `name` cannot be used, judged by its name (`_pct`, `_pct_of_tdp`).
fn number_refused(name: &str, v: &serde_json::Value) -> Option<Refusal> {
    if v.is_string() {
        return None; // a duration
    }
    let Some(x) = v.as_f64() else {
        // serde writes a NaN or an infinity as null, and a value past f32's range (1e39) was
        // read as infinite.
        return Some(Refusal::new(
            name,
            " must be a finite number, at most 3.4e38",
        ));
    };
    let pct = name.contains("_pct");
    let of_tdp = name.ends_with("_pct_of_tdp");
    let says = match () {
        () if x < 0.0 && pct => " must be between 0 and 100",
        () if x < 0.0 => " must not be negative",
        () if pct && !of_tdp && x > 100.0 => " must be between 0 and 100",
        () if of_tdp && x > 100.0 => " must be between 0 and 100 (% of TDP)",
        () => return None,
    };
    Some(Refusal::new(name, format!(" = {x}{says}")))
}

/// Why the window `v` at `name` cannot be used. A window holds samples: under a second it
/// holds a few at most (samples come 50 ms apart at the fastest), and "1ns" judged on one.
fn window_refused(name: &str, v: &serde_json::Value) -> Option<Refusal> {
    let w = v.as_str().filter(|_| name.ends_with("_window"))?;
    let w = match humantime::parse_duration(w) {
        Ok(w) => w,
        Err(e) => return Some(Refusal::new(name, format!(": {e}"))),
    };
    (w < MIN_WINDOW || w > MAX_WINDOW).then(|| {
        let w = humantime::format_duration(w);
        Refusal::new(name, format!(" = {w} must be at least 1s and at most 1h"))
    })
}

/// The key a `[thresholds]` table failed on, with why. The sections are flattened into one
/// table, so the parser's own error points at the table's header and not at the key; each key
/// is tried alone to name it.
fn which_threshold(text: &str) -> Option<String> {
    let file: toml::Table = toml::from_str(text).ok()?;
    let table = file.get("thresholds")?.as_table()?;
    table.iter().find_map(|(key, value)| {
        let mut alone = toml::Table::new();
        alone.insert(key.clone(), value.clone());
        let err = toml::Value::Table(alone).try_into::<Thresholds>().err()?;
        Some(format!(
            "thresholds.{key}{}: {}",
            at_line(text, &["thresholds", key]),
            in_words(key, value, err.message())
        ))
    })
}

/// A threshold written before any section (`hang_window = "60s"` on the first line): serde
/// said "unknown field `hang_window`, expected `thresholds`", not where it goes.
fn outside_thresholds(text: &str) -> Option<String> {
    let file: toml::Table = toml::from_str(text).ok()?;
    let key = file.keys().find(|k| default_of(k).is_some())?;
    Some(format!(
        "{key}{} is a threshold: write it under a line `[thresholds]`",
        at_line(text, &[key])
    ))
}

/// serde's words for a value of the wrong type, said as what to write instead ("invalid type:
/// integer `60`, expected a string" for a window, "expected f32" for a number in quotes). The
/// key's default is the example: always a value that is accepted (`hang_window = 5` suggested
/// "5s", which is shorter than the suspect window, and " -5" suggested -5).
fn in_words(key: &str, value: &toml::Value, serde_says: &str) -> String {
    let default = default_of(key).unwrap_or_default();
    let number = matches!(value, toml::Value::Integer(_) | toml::Value::Float(_));
    // A duration is written as one by its default ("25s"): windows, and `startup_grace`,
    // `clear_after` (they got serde's "expected a string").
    if default.starts_with('"') && number {
        let unit = match value {
            toml::Value::Integer(n) if (1..=3600).contains(n) => format!("; \"{n}s\" for {n}"),
            _ => String::new(),
        };
        return format!("a duration in quotes, such as {key} = {default} (its default{unit})");
    }
    let wants_number = ["f32", "f64", "u8", "u16", "u32", "u64", "usize"]
        .iter()
        .any(|t| serde_says.ends_with(&format!("expected {t}")));
    match value {
        toml::Value::String(v)
            if wants_number
                && v.trim().parse::<f64>().is_ok_and(|x| {
                    x.is_finite() && x >= 0.0 && (x <= 100.0 || !key.ends_with("_pct"))
                }) =>
        {
            format!("a number, written without quotes: {key} = {}", v.trim())
        }
        toml::Value::String(_) if serde_says.ends_with("is negative") => {
            let range = if key.ends_with("_window") {
                "a window is from \"1s\" to \"1h\""
            } else {
                "a duration here is from \"0s\" to \"1h\""
            };
            format!("{serde_says}; {range}, such as {key} = {default}, its default")
        }
        _ if wants_number => format!(
            "{value} is not a number this key takes; write one without quotes, such as {key} = \
             {default}, its default"
        ),
        _ => serde_says.to_string(),
    }
}

/// `key`'s default as the file writes it ("25s", 25).
fn default_of(key: &str) -> Option<String> {
    let defaults = toml::Value::try_from(Thresholds::default()).ok()?;
    Some(defaults.get(key)?.to_string())
}

/// The shortest window a threshold may set.
const MIN_WINDOW: std::time::Duration = std::time::Duration::from_secs(1);

/// " (line N)" for the line that sets the key at `path` (`["thresholds", "hang_window"]`), as
/// the parser's own errors say it: in a long file the key alone did not say where. The parser's
/// spans find it however it is written (quoted, dotted, in an inline table); empty when the file
/// leaves it at its default.
fn at_line(text: &str, path: &[&str]) -> String {
    line_of(text, path).map_or_else(String::new, |n| format!(" (line {n})"))
}

fn line_of(text: &str, path: &[&str]) -> Option<usize> {
    use toml::de::{DeTable, DeValue};
    let doc = DeTable::parse(text).ok()?;
    let mut table = doc.get_ref();
    let (last, outer) = path.split_last()?;
    for name in outer {
        let (_, value) = table.iter().find(|(k, _)| k.get_ref() == name)?;
        let DeValue::Table(inner) = value.get_ref() else {
            return None;
        };
        table = inner;
    }
    let (key, _) = table.iter().find(|(k, _)| k.get_ref() == last)?;
    let start = text.get(..key.span().start)?;
    Some(start.matches('\n').count() + 1)
}

/// Says that `key` is not a threshold, and which one was probably meant.
fn unknown_key(key: &str, t: &Thresholds) -> Refusal {
    let known = serde_json::to_value(t).unwrap_or_default();
    let closest = known
        .as_object()
        .into_iter()
        .flatten()
        .map(|(k, _)| (strsim::levenshtein(key, k), k))
        .min()
        .filter(|(d, _)| *d <= 3);
    let says = match closest {
        Some((_, k)) => format!(" is not a threshold: did you mean {k}?"),
        None => " is not a threshold (docs/diagnoses.md lists them, rule by rule)".to_string(),
    };
    Refusal::new(key, says)
}

/// A config file larger than this is not one (`--config /dev/zero` must not read forever).
pub const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// The TOML crate's message, fit for a terminal: the line it quotes is cut to the width of
/// one (a 200 KB line was echoed whole), and a number too large for any type is said as one.
fn tidy_parse_error(message: &str) -> String {
    const WIDTH: usize = 100;
    let message = match message.split_once(" as i128, expected any value") {
        Some((head, tail)) => format!(
            "{} is out of range{tail}",
            head.replace("invalid type: ", "")
        ),
        None => message.to_owned(),
    };
    let lines: Vec<String> = message
        .lines()
        .map(|line| crate::text::Clip(line, WIDTH).to_string())
        .collect();
    lines.join("\n").trim_end().to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// A parse error quotes its line cut to a terminal's width (helper-39: a 200 KB line was
    /// echoed whole), and a number too large for any type is not said as "i128".
    #[test]
    fn a_parse_error_is_fit_for_a_terminal() {
        let p = std::path::Path::new("c.toml");
        let long = format!("[thresholds.idle]\npower_frac = {}\n", "1".repeat(200_000));
        let e = Config::parse(&long, p).unwrap_err().to_string();
        assert!(e.len() < 1000, "{} bytes: {}", e.len(), &e[..300]);
        assert!(e.contains("line 2") && e.contains("111…"), "{e}");
        let big = "[thresholds]\nhang_sm_max_pct = 123456789012345678901234\n";
        let e = Config::parse(big, p).unwrap_err().to_string();
        assert!(!e.contains("i128") && e.contains("out of range"), "{e}");
    }

    /// A value out of its range names the line that sets it, as a parse error does: in a file
    /// of forty keys `thresholds.hang_window = 2h must…` did not say where.
    #[test]
    fn a_value_out_of_range_names_its_line() {
        let p = std::path::Path::new("c.toml");
        for (file, says) in [
            (
                "[thresholds]\nstarved_window = \"20s\"\n\nhang_window = \"2h\"\n",
                "thresholds.hang_window (line 4) = 2h must be at least 1s and at most 1h",
            ),
            (
                "[thresholds]\n# a comment\nhang_sm_max_pct = 250\n",
                "thresholds.hang_sm_max_pct (line 3) = 250 must be between 0 and 100",
            ),
            (
                "[thresholds]\n\nmem_growth_fast_window = \"20m\"\n",
                "thresholds.mem_growth_fast_window (line 3) (20m) must not be longer than",
            ),
            // The sentence is about the key the file set, with its line, and the other is said
            // to be at its default (helper-32); it began with the default one (helper-33).
            (
                "[thresholds]\nhang_suspect_window = \"30s\"\n",
                "thresholds.hang_suspect_window (line 2) (30s) must not be longer than \
                 hang_window (25s, its default)",
            ),
            (
                "[thresholds]\nmem_growth_window = \"5s\"\n",
                "thresholds.mem_growth_window (line 2) (5s) must not be shorter than \
                 mem_growth_fast_window (10s, its default)",
            ),
        ] {
            let e = Config::parse(file, p).unwrap_err().to_string();
            assert!(e.contains(says), "{file}: {e}");
        }
    }

    #[test]
    fn file_overrides_only_the_keys_it_names() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("c.toml");
        std::fs::write(
            &p,
            "[thresholds]\nhang_window = \"2m\"\nhang_sm_max_pct = 10\n",
        )
        .unwrap();
        let cfg = Config::load(Some(&p), true).unwrap();
        assert_eq!(cfg.thresholds.hang.window, Duration::from_secs(120));
        assert!((cfg.thresholds.hang.sm_max_pct - 10.0).abs() < f32::EPSILON);
        assert_eq!(
            cfg.thresholds.starved.window,
            Thresholds::default().starved.window
        );
    }

    #[test]
    fn unknown_key_and_bad_value_are_errors_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("c.toml");
        std::fs::write(&p, "[thresholds]\nhang_windw = \"2m\"\n").unwrap();
        let e = Config::load(Some(&p), true).unwrap_err().to_string();
        assert!(e.contains("c.toml") && e.contains("hang_windw"), "{e}");
        // The sections are flattened into one table: the key and its line are named all the same.
        assert!(
            e.contains("(line 2)") && e.contains("did you mean hang_window?"),
            "{e}"
        );
        std::fs::write(&p, "[thresholds.hang]\nwindow = \"2m\"\n").unwrap();
        let e = Config::load(Some(&p), true).unwrap_err().to_string();
        // A table where a key belongs is named at its header.
        assert!(
            e.contains("thresholds.hang (line 1) is not a threshold"),
            "{e}"
        );
        std::fs::write(&p, "[thresholds]\nmem_full_pct = 140\n").unwrap();
        let e = Config::load(Some(&p), true).unwrap_err().to_string();
        assert!(e.contains("mem_full_pct"), "{e}");
        // A duration that is none says what was given and how to write one.
        std::fs::write(&p, "[thresholds]\nhang_window = \"banana\"\n").unwrap();
        let e = Config::load(Some(&p), true).unwrap_err().to_string();
        assert!(
            e.contains("thresholds.hang_window (line 2)")
                && e.contains("\"banana\" is not a duration")
                && e.contains("\"30s\""),
            "{e}"
        );
    }

    /// The line is found by the parser's spans, not by reading lines for `key =`: a key quoted,
    /// dotted from the top or in an inline table is named at its line too (helper-32 found
    /// them said with no line), and both keys of a pair of windows are.
    #[test]
    fn a_refused_key_is_named_at_its_line_however_it_is_written() {
        let refused = |text: &str| {
            Config::parse(text, Path::new("c.toml"))
                .unwrap_err()
                .to_string()
        };
        let e = refused("# gpuwatch\n[thresholds]\n\"mem_full_pct\" = 140\n");
        assert!(
            e.contains("thresholds.mem_full_pct (line 3) = 140 must be"),
            "{e}"
        );
        let e = refused("\n\nthresholds.hang_window = \"2h\"\n");
        assert!(
            e.contains("thresholds.hang_window (line 3) = 2h must be"),
            "{e}"
        );
        let e = refused("thresholds = {\n  idle_mem_window = \"2h\" }\n");
        assert!(
            e.contains("thresholds.idle_mem_window (line 2) = 2h"),
            "{e}"
        );
        let e = refused("[thresholds]\nhang_suspect_window = \"20s\"\nhang_window = \"10s\"\n");
        assert!(
            e.contains(
                "thresholds.hang_window (line 3) (10s) must not be shorter than \
                 hang_suspect_window (line 2) (20s)"
            ),
            "{e}"
        );
        // A key the file leaves at its default has no line to name.
        let e = refused("[thresholds]\nhang_suspect_window = \"30s\"\n");
        assert!(e.contains("than hang_window (25s, its default);"), "{e}");
    }

    /// What the file wrote is said back escaped, and of several problems the first in the
    /// file's order (helper-33).
    #[test]
    fn what_the_file_wrote_is_said_escaped_and_its_first_problem_first() {
        let refused = |text: &str| {
            Config::parse(text, Path::new("c.toml"))
                .unwrap_err()
                .to_string()
        };
        // A key from the file is said as TOML takes it back: quoted and escaped where it is no
        // bare key, so it cannot pass for another or break the line (helper-33).
        for (key, said) in [
            (
                "\"hang_window = \\\"2h\\\"\"",
                "thresholds.\"hang_window = \\\"2h\\\"\" (line 2)",
            ),
            ("\"\"", "thresholds.\"\" (line 2)"),
            (
                "\"hang_window\\u200B\"",
                "thresholds.\"hang_window\\u200B\" (line 2)",
            ),
            (
                "\"a\\ngpuwatch: ok\"",
                "thresholds.\"a\\ngpuwatch: ok\" (line 2)",
            ),
            ("\"\\u001b[2J\"", "thresholds.\"\\u001B[2J\" (line 2)"),
        ] {
            let e = refused(&format!("[thresholds]\n{key} = 1\n"));
            assert!(
                e.contains(&format!("{said} is not a threshold")),
                "{key}: {e}"
            );
        }
        for (file, says) in [
            // Of two problems, the one on the earlier line is said (helper-33).
            (
                "[thresholds]\nhang_window = \"2h\"\nhang_sm_max_pct = 101\n",
                "thresholds.hang_window (line 2) = 2h",
            ),
            (
                "[thresholds]\nhang_sm_max_pct = 101\nhang_window = \"2h\"\n",
                "thresholds.hang_sm_max_pct (line 2) = 101",
            ),
            (
                "[thresholds]\nidle_mem_window = \"0s\"\nhang_windw = \"2m\"\n",
                "thresholds.idle_mem_window (line 2)",
            ),
            // A duration's text is said escaped too.
            (
                "[thresholds]\nhang_window = \"5s\\ngpuwatch: ok\"\n",
                "(line 2): \"5s\\ngpuwatch: ok\" is not a duration",
            ),
            // A number past f32's range is read as infinite: said as the range.
            (
                "[thresholds]\nhang_sm_max_pct = 1e39\n",
                "must be a finite number, at most 3.4e38",
            ),
        ] {
            let e = refused(file);
            assert!(e.contains(says), "{file}: {e}");
        }
    }

    /// A value of the wrong type says what to write, not serde's "expected f32", and never
    /// suggests a value that is then refused.
    #[test]
    fn a_value_of_the_wrong_type_says_what_to_write() {
        let p = Path::new("c.toml");
        for (line, says) in [
            (
                "hang_window = 60",
                "hang_window (line 2): a duration in quotes, such as hang_window = \"25s\" (its default; \"60s\" for 60)",
            ),
            (
                "hang_window = -5",
                "hang_window (line 2): a duration in quotes, such as hang_window = \"25s\" (its default)",
            ),
            (
                "startup_grace = 60",
                "startup_grace (line 2): a duration in quotes, such as startup_grace = \"",
            ),
            (
                "hang_window = \"-5s\"",
                "hang_window (line 2): \"-5s\" is negative; a window is from \"1s\" to \"1h\"",
            ),
            (
                "startup_grace = \"-5s\"",
                "startup_grace (line 2): \"-5s\" is negative; a duration here is from \"0s\" to \"1h\", such as startup_grace = \"5s\", its default",
            ),
            (
                "hang_sm_max_pct = \"25\"",
                "hang_sm_max_pct (line 2): a number, written without quotes: hang_sm_max_pct = 25",
            ),
            (
                "hang_sm_max_pct = true",
                "hang_sm_max_pct (line 2): true is not a number this key takes; write one without quotes, such as hang_sm_max_pct = 25.0, its default",
            ),
            (
                "hang_sm_max_pct = \" -5\"",
                "such as hang_sm_max_pct = 25.0, its default",
            ),
            (
                "hang_sm_max_pct = \"500\"",
                "such as hang_sm_max_pct = 25.0, its default",
            ),
        ] {
            let e = Config::parse(&format!("[thresholds]\n{line}\n"), p)
                .unwrap_err()
                .to_string();
            assert!(e.contains(says), "{line}: {e}");
        }
    }

    #[test]
    fn non_finite_negative_and_out_of_range_values_and_empty_windows_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("c.toml");
        for (line, name) in [
            ("hang_util_min_pct = nan", "hang_util_min_pct"),
            ("floor_margin_min_w = inf", "floor_margin_min_w"),
            ("floor_margin_min_w = -5", "floor_margin_min_w"),
            (
                "starved_util_max_median_pct = 5000",
                "starved_util_max_median_pct",
            ),
            ("transfer_rx_min_gib_s = -1", "transfer_rx_min_gib_s"),
            ("sync_window = \"0s\"", "sync_window"),
            ("mem_growth_fast_window = \"0s\"", "mem_growth_fast_window"),
            ("idle_mem_window = \"30d\"", "idle_mem_window"),
            // Judged on one sample: every window holds at least a second.
            (
                "hang_window = \"1ns\"",
                "hang_window (line 2) = 1ns must be at least 1s",
            ),
            ("hang_suspect_window = \"900ms\"", "hang_suspect_window"),
            // A share says its range either way (-5 said "must not be negative").
            (
                "busy_util_min_pct = -5",
                "busy_util_min_pct (line 2) = -5 must be between 0 and 100",
            ),
            // The fast window is the short one.
            (
                "mem_growth_fast_window = \"30m\"",
                "mem_growth_fast_window (line 2) (30m) must not be longer than mem_growth_window (2m, its default)",
            ),
            // Only the key that was set is named.
            (
                "startup_grace = \"1h 1s\"",
                "thresholds.startup_grace (line 2) = 1h 1s must be at most 1h",
            ),
        ] {
            std::fs::write(&p, format!("[thresholds]\n{line}\n")).unwrap();
            let e = Config::load(Some(&p), true).unwrap_err().to_string();
            assert!(e.contains(name), "{line}: {e}");
        }
    }

    #[test]
    fn a_rule_sections_own_check_is_applied() {
        let e = Config::parse(
            "[thresholds]\nhang_suspect_window = \"60s\"\nhang_window = \"30s\"\n",
            Path::new("c.toml"),
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains(
                "hang_window (line 3) (30s) must not be shorter than hang_suspect_window \
                 (line 2) (1m); the defaults are 25s and 8s"
            ),
            "{e}"
        );
        let e = Config::parse("[thresholds]\nclear_after = \"2h\"\n", Path::new("c.toml"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("thresholds.clear_after (line 2) = 2h must be at most 1h"),
            "{e}"
        );
        assert!(!e.contains("startup_grace"), "{e}");
        // A threshold before any section is told where it goes (helper-30).
        let e = Config::parse("hang_window = \"60s\"\n", Path::new("c.toml"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("hang_window (line 1) is a threshold: write it under a line `[thresholds]`"),
            "{e}"
        );
    }

    #[test]
    fn the_file_reads_as_the_flat_keys_users_write() {
        let text = toml::to_string(&Config::default()).unwrap();
        assert!(text.starts_with("[thresholds]\n"), "{text}");
        assert!(text.contains("\nfp32_window = \"20s\"\n"), "{text}");
        assert!(text.contains("\nmem_growth_min_mib_s = 200.0\n"), "{text}");
        assert_eq!(
            Config::parse(&text, Path::new("c.toml")).unwrap(),
            Config::default()
        );
    }

    #[test]
    fn thresholds_from_a_newer_gpuwatch_read_with_the_unknown_key_set_aside() {
        // A snapshot carries its thresholds as JSON and is not validated: a rule this build
        // does not know must not stop it from opening.
        let t: Thresholds =
            serde_json::from_str(r#"{"hang_window": "1m", "newer_rule_window": "30s"}"#).unwrap();
        assert_eq!(t.hang.window, Duration::from_secs(60));
        assert_eq!(t.fp32, Thresholds::default().fp32);
        assert_eq!(t.unknown.keys().collect::<Vec<_>>(), ["newer_rule_window"]);
        let as_config = "[thresholds]\nnewer_rule_window = \"30s\"\n";
        assert!(Config::parse(as_config, Path::new("c.toml")).is_err());
    }

    #[test]
    fn an_endless_config_file_is_refused_with_the_limit() {
        let e = Config::load(Some(Path::new("/dev/zero")), true)
            .unwrap_err()
            .to_string();
        assert!(e.contains("/dev/zero") && e.contains("1024 KiB"), "{e}");
    }

    #[test]
    fn missing_default_file_means_defaults_but_missing_named_file_is_an_error() {
        let p = Path::new("/nonexistent/gpuwatch.toml");
        assert_eq!(Config::load(Some(p), false).unwrap(), Config::default());
        assert!(Config::load(Some(p), true).is_err());
    }
}
