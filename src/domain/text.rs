//! How gpuwatch writes numbers, times and untrusted text for people: one place, so the screen,
//! the evidence, `diagnose` and the reports say the same thing the same way.

mod fixed;
mod untrusted;
pub use fixed::{fixed, Fixed};
pub use untrusted::{
    code_span, controls_escaped, escapes_of, is_bidi, markdown_inline, one_line, path_shown,
    printable, push_code_span, shell_word, toml_key, word_shown,
};

/// "HH:MM:SS": a time in ms since the epoch, UTC.
#[must_use]
pub fn clock(ms: u64) -> String {
    let s = ms / 1000;
    format!("{:02}:{:02}:{:02}", (s / 3600) % 24, (s / 60) % 60, s % 60)
}

/// `s` cut to `n` characters, with an ellipsis when cut.
#[must_use]
pub fn clip(s: &str, n: usize) -> String {
    let mut out = s.to_string();
    clip_in_place(&mut out, n);
    out
}

/// `clip`, borrowing `s` when it is short enough (most are).
#[must_use]
pub fn clipped(s: &str, n: usize) -> std::borrow::Cow<'_, str> {
    if s.chars().nth(n).is_none() {
        std::borrow::Cow::Borrowed(s)
    } else {
        std::borrow::Cow::Owned(clip(s, n))
    }
}

/// `clip` as a value that formats without a `String` of its own.
#[derive(Debug, Clone, Copy)]
pub struct Clip<'a>(pub &'a str, pub usize);

impl std::fmt::Display for Clip<'_> {
    /// Honours a width and alignment (`{:<8}`), as `str` does.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        use std::fmt::Write as _;
        let Clip(s, n) = *self;
        let cut = s.char_indices().nth(n).is_some();
        let head = if cut {
            &s[..s
                .char_indices()
                .nth(n.saturating_sub(1))
                .map_or(s.len(), |(i, _)| i)]
        } else {
            s
        };
        let count = head.chars().count() + usize::from(cut);
        let pad = f.width().map_or(0, |w| w.saturating_sub(count));
        let (before, after) = match f.align() {
            Some(std::fmt::Alignment::Right) => (pad, 0),
            Some(std::fmt::Alignment::Center) => (pad / 2, pad - pad / 2),
            _ => (0, pad),
        };
        let fill = f.fill();
        for _ in 0..before {
            f.write_char(fill)?;
        }
        f.write_str(head)?;
        if cut {
            f.write_str("…")?;
        }
        for _ in 0..after {
            f.write_char(fill)?;
        }
        Ok(())
    }
}

/// `clip` of `s` where it stands.
pub fn clip_in_place(s: &mut String, n: usize) {
    if s.chars().count() > n {
        let end = s
            .char_indices()
            .nth(n.saturating_sub(1))
            .map_or(s.len(), |(i, _)| i);
        s.truncate(end);
        s.push('…');
    }
}

/// `s` cut to `n` characters in its middle, with an ellipsis there: for messages whose end
/// matters as much as their start ("snapshot written to …/gpuwatch-snapshot-0601.json").
#[must_use]
pub fn clip_middle(s: &str, n: usize) -> String {
    let mut out = String::new();
    push_clip_middle(&mut out, s, n);
    out
}

/// `clip_middle` of `s` pushed onto `out` (the status line, without a `String` of its own).
pub fn push_clip_middle(out: &mut String, s: &str, n: usize) {
    let len = s.chars().count();
    if len <= n {
        out.push_str(s);
        return;
    }
    let Some(keep) = n.checked_sub(1) else {
        return;
    };
    let head = keep / 2;
    let tail = keep - head;
    out.extend(s.chars().take(head));
    out.push('…');
    out.extend(s.chars().skip(len - tail));
}

/// "0-3, 5, 7-9": sorted numbers, each run of consecutive ones as its ends.
pub fn runs(sorted: &[u32]) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let mut i = 0;
    while i < sorted.len() {
        let mut j = i;
        while j + 1 < sorted.len() && sorted[j + 1] == sorted[j] + 1 {
            j += 1;
        }
        if !out.is_empty() {
            out.push_str(", ");
        }
        let _ = if j == i {
            write!(out, "{}", sorted[i])
        } else {
            write!(out, "{}-{}", sorted[i], sorted[j])
        };
        i = j + 1;
    }
    out
}

/// A span of time in little room: "42s", "3m05s" or "1h02m" (the screen).
#[must_use]
pub fn span_compact(ms: u64) -> String {
    Compact(ms).to_string()
}

/// `span_compact` as a value that formats without a `String` of its own.
#[derive(Debug, Clone, Copy)]
pub struct Compact(pub u64);

/// Whole seconds, rounded to the nearest as `diagnose`'s header's "40 s" is: truncated, a
/// report said "over 19 s" of what its header called 20. The screen's `Compact` truncates,
/// as a stopwatch does: rounded, a symptom timed toward a verdict read "8s of the 8s it
/// needs" while still short of it.
fn round_s(ms: u64) -> u64 {
    ms.saturating_add(500) / 1000
}

impl Compact {
    /// This span in the units `Compact` writes `longest` in: a seek bar's "1m50s / 2m00s",
    /// not "110s / 2m00s".
    #[must_use]
    pub fn like(self, longest: u64) -> CompactLike {
        CompactLike(self.0, longest)
    }
}

impl std::fmt::Display for Compact {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        CompactLike(self.0, self.0).fmt(f)
    }
}

/// `Compact::like`: the first span in the units of the second.
#[derive(Debug, Clone, Copy)]
pub struct CompactLike(u64, u64);

impl std::fmt::Display for CompactLike {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = self.0 / 1000;
        // Padded where a width is asked (`{:>5}`): the seek bar keeps its length.
        match self.1.max(self.0) / 1000 {
            0..=119 => padded(f, format_args!("{s}s")),
            120..=3599 => padded(f, format_args!("{}m{:02}s", s / 60, s % 60)),
            _ => padded(f, format_args!("{}h{:02}m", s / 3600, (s / 60) % 60)),
        }
    }
}

/// A word in capitals as it is written (`str::to_uppercase` without its `String`).
#[derive(Debug, Clone, Copy)]
pub struct Upper<'a>(pub &'a str);

impl std::fmt::Display for Upper<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        use std::fmt::Write;
        self.0
            .chars()
            .flat_map(char::to_uppercase)
            .try_for_each(|c| f.write_char(c))
    }
}

/// Energy in the unit that reads best: "850 J", "41.2 kJ", "3.6 MJ (1.00 kWh)".
#[must_use]
pub fn energy_words(j: f64) -> String {
    EnergyWords(j).to_string()
}

/// `energy_words` as a value that formats without a `String` of its own.
#[derive(Debug, Clone, Copy)]
pub struct EnergyWords(pub f64);

impl std::fmt::Display for EnergyWords {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let j = self.0;
        if j < 1e3 {
            write!(f, "{j:.0} J")
        } else if j < 1e6 {
            write!(f, "{:.1} kJ", j / 1e3)
        } else {
            write!(f, "{:.1} MJ ({:.2} kWh)", j / 1e6, j / 3.6e6)
        }
    }
}

/// A span of time in words: "42 s", "3 min" or "2 min 59 s" (evidence, reports).
#[must_use]
pub fn span_words(ms: u64) -> String {
    SpanWords(ms).to_string()
}

/// `span_words` as a value that formats without a `String` of its own.
#[derive(Debug, Clone, Copy)]
pub struct SpanWords(pub u64);

impl std::fmt::Display for SpanWords {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Past two minutes its minutes and seconds: "2 min" of 179 s made 21.6 kJ read as
        // 180 W where the line said 121.
        let s = round_s(self.0);
        match (s / 60, s % 60) {
            _ if s < 120 => write!(f, "{s} s"),
            (m, 0) => write!(f, "{m} min"),
            (m, r) => write!(f, "{m} min {r} s"),
        }
    }
}

/// "20261130-151203": a time in ms since the epoch as a UTC date and time for file names.
#[must_use]
pub fn stamp(ms: u64) -> String {
    let days = (ms / 86_400_000) as i64;
    let (y, m, d) = civil_from_days(days);
    let s = (ms / 1000) % 86_400;
    format!(
        "{y:04}{m:02}{d:02}-{:02}{:02}{:02}",
        s / 3600,
        (s / 60) % 60,
        s % 60
    )
}

/// Days since 1970-01-01 to (year, month, day), proleptic Gregorian (Howard Hinnant's method).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// Writes `args` into `f` with `f`'s width and alignment (`{:>5}`), as a `str` would be:
/// formatted on the stack first, since a value's own `write!` ignores them.
pub fn padded(f: &mut std::fmt::Formatter<'_>, args: std::fmt::Arguments<'_>) -> std::fmt::Result {
    if f.width().is_none() {
        return f.write_fmt(args);
    }
    let mut small = Small::default();
    std::fmt::Write::write_fmt(&mut small, args)?;
    f.pad(small.as_str())
}

/// Up to 64 bytes of text on the stack: a number with its unit (the longest, `f32::MAX` as a
/// whole percentage with its sign, is 41), a MIG instance's label (at most 32).
struct Small {
    bytes: [u8; 64],
    len: usize,
}

impl Default for Small {
    fn default() -> Self {
        Small {
            bytes: [0; 64],
            len: 0,
        }
    }
}

impl Small {
    fn as_str(&self) -> &str {
        // Only whole `str`s are ever copied in.
        std::str::from_utf8(&self.bytes[..self.len]).unwrap_or("")
    }
}

impl std::fmt::Write for Small {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        let end = self.len + s.len();
        if end > self.bytes.len() {
            return Err(std::fmt::Error);
        }
        self.bytes[self.len..end].copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

/// Whether a line may break at its space at byte `sp`: not between a number and its unit
/// ("4.9 kJ", "160 W", "3 %"), which a row's end would otherwise split as "4.9" and "kJ".
#[must_use]
pub fn breaks_at(line: &str, sp: usize) -> bool {
    const UNITS: [&str; 17] = [
        "%", "J", "kJ", "MJ", "kWh", "W", "s", "ms", "min", "h", "MiB", "GiB", "KiB", "MiB/s",
        "GiB/s", "MHz", "°C",
    ];
    let after_number = line[..sp].ends_with(|c: char| c.is_ascii_digit());
    let word = line[sp + 1..]
        .split([' ', ',', ';', ')', ':'])
        .next()
        .unwrap_or("");
    // Nor between a name and its number ("GPU 6", "pid 10060"), which read "GPU │ 6)".
    let before = line[..sp].rsplit([' ', '(']).next().unwrap_or("");
    let named = ["GPU", "GPUs", "pid", "rank", "ranks", "line"].contains(&before)
        && word.starts_with(|c: char| c.is_ascii_digit());
    let unit = after_number && UNITS.contains(&word);
    // Nor between a badge and its label ("‼ critical", "? HANG?", "━ util"): a lone symbol
    // that is no separator ("·", "=", "–") belongs to the word after it.
    let mut last = line[..sp].rsplit(' ').next().unwrap_or("").chars();
    let badge = match (last.next(), last.next()) {
        (Some(c), None) => !c.is_alphanumeric() && !"·–—=|/+-*,;:()[]{}<>'\"`".contains(c),
        _ => false,
    };
    !(unit || named || badge || in_short_code(line, sp))
}

/// Whether the space at byte `sp` lies inside a short `command` ("`tail -n +83`"), which a
/// reader copies whole; a long one may break (a row must end somewhere).
fn in_short_code(line: &str, sp: usize) -> bool {
    const SHORT: usize = 24;
    // Within a short span's reach of a backtick on both sides, or not at all: looked at in a
    // window, so that a line's spaces cost no scan of the line each (a frame wraps every
    // finding's lines).
    let bytes = line.as_bytes();
    let reach = SHORT * 4;
    let near = |r: std::ops::Range<usize>| bytes[r].contains(&b'`');
    if !near(sp.saturating_sub(reach)..sp) || !near(sp..(sp + reach).min(bytes.len())) {
        return false;
    }
    let before = &line[..sp];
    if before.bytes().filter(|&b| b == b'`').count() % 2 == 0 {
        return false;
    }
    let open = before.rfind('`').unwrap_or(0);
    line[sp..]
        .find('`')
        .is_some_and(|close| line[open..sp + close].chars().count() < SHORT)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A name with a newline or an escape is quoted and escaped, never printed raw.
    #[test]
    fn a_path_is_shown_on_one_line() {
        use std::path::Path;
        assert_eq!(path_shown(Path::new("dir/r.json")), "dir/r.json");
        assert_eq!(path_shown(Path::new("a\nb.json")), "$'a\\nb.json'");
        assert_eq!(
            path_shown(Path::new("x\u{1b}]52;c\u{7}\u{202e}.md")),
            "$'x\\e]52;c\\x07\\xe2\\x80\\xae.md'"
        );
    }

    /// The name shown, and the word put in a suggested command, paste back into a shell as
    /// the name's own bytes, in the C locale too: quotes, backslashes, controls, invisible
    /// characters, bytes that are no UTF-8, a space or a `;` that split a command.
    #[test]
    fn a_path_shown_pastes_back_into_bash() {
        use std::os::unix::ffi::OsStrExt;
        let names: [&[u8]; 6] = [
            "it's a\\b\n\u{1b}[2J\u{7}\u{9b}\u{202e}\u{200b}.json".as_bytes(),
            b"a\xffb\xc2.json",
            b"my rec;ls.jsonl",
            b"-x.jsonl",
            b"plain/r-1.jsonl",
            "caf\u{e9} \u{1F600}.jsonl".as_bytes(),
        ];
        for name in names {
            let path = std::path::Path::new(std::ffi::OsStr::from_bytes(name));
            for (how, shown) in [("shown", path_shown(path)), ("word", shell_word(path))] {
                let out = std::process::Command::new("bash")
                    .env("LC_ALL", "C")
                    .arg("-c")
                    .arg(format!("printf %s {shown}"))
                    .output()
                    .expect("bash runs");
                let back = out
                    .stdout
                    .strip_prefix(b"./")
                    .filter(|_| name.starts_with(b"-"));
                assert_eq!(back.unwrap_or(&out.stdout), name, "{how}: {shown}");
            }
        }
        assert_eq!(
            shell_word(std::path::Path::new("dir/r.jsonl")),
            "dir/r.jsonl"
        );
        assert_eq!(shell_word(std::path::Path::new("my rec;ls")), "'my rec;ls'");
        assert_eq!(shell_word(std::path::Path::new("-x")), "./-x");
    }

    /// A message keeps its line breaks and its own backslashes; every other control, and what
    /// `path_shown` escapes (bidi, invisible), is written as an escape.
    #[test]
    fn controls_are_escaped_in_a_message_and_its_lines_kept() {
        assert!(matches!(
            controls_escaped("plain\nC:\\x 'q' \u{e9}"),
            std::borrow::Cow::Borrowed(_)
        ));
        assert_eq!(
            controls_escaped("a '\u{1b}[2J\u{7}\u{202e}\u{200b}\t'\n\nb\\"),
            "a '\\e[2J\\x07\\xe2\\x80\\xae\\xe2\\x80\\x8b\\t'\n\nb\\"
        );
    }

    #[test]
    fn a_span_written_like_a_longer_one_takes_its_units() {
        assert_eq!(Compact(110_000).like(120_000).to_string(), "1m50s");
        assert_eq!(Compact(5_000).like(120_000).to_string(), "0m05s");
        assert_eq!(Compact(1_800_000).like(3_600_000).to_string(), "0h30m");
        assert_eq!(Compact(9_750).like(9_750).to_string(), "9s");
        assert_eq!(format!("{:>5}", Compact(65_000).like(300_000)), "1m05s");
        // Past the longer one it keeps its own units.
        assert_eq!(Compact(130_000).like(60_000).to_string(), "2m10s");
    }

    #[test]
    fn a_number_and_its_unit_are_not_broken_apart() {
        let l = "used 4.9 kJ over 30 s, 160 W = 23 % of the TDP (3 units)";
        let at = |w: &str| l.find(w).unwrap() - 1;
        let at_in = |l: &str, w: &str| l.find(w).unwrap() - 1;
        for glued in ["kJ over", "s, 160", "W =", "% of"] {
            assert!(!breaks_at(l, at(glued)), "{glued}");
        }
        for free in ["4.9", "over", "160", "TDP", "units"] {
            assert!(breaks_at(l, at(free)), "{free}");
        }
        let l = "rank 6 (pid 10060, GPU 6): waits for GPUs 4,5";
        for glued in ["6 (pid", "10060,", "6):", "4,5"] {
            assert!(!breaks_at(l, at_in(l, glued)), "{glued}");
        }
    }

    #[test]
    fn a_badge_stays_with_its_label_but_not_a_separator() {
        let l = "‼ critical  ! warning  ? HANG? 4/8s timed  ━ util · 0 – 9 = ok";
        let at = |w: &str| l.find(w).unwrap() - 1;
        for glued in ["critical", "warning", "HANG?", "util"] {
            assert!(!breaks_at(l, at(glued)), "{glued}");
        }
        for free in ["! warning", "4/8s", "0 –", "9 =", "ok"] {
            assert!(breaks_at(l, at(free)), "{free}");
        }
    }

    #[test]
    fn a_short_command_is_not_broken_but_a_long_one_may_be() {
        let l = "split it there (`head -n 82` and `tail -n +83`) or `a very long command line that runs on`";
        let at = |w: &str| l.find(w).unwrap() - 1;
        for glued in ["-n 82", "82`", "-n +83", "+83`"] {
            assert!(!breaks_at(l, at(glued)), "{glued}");
        }
        for free in ["and `tail", "or `a", "long command"] {
            assert!(breaks_at(l, at(free)), "{free}");
        }
    }

    #[test]
    fn runs_write_consecutive_numbers_as_their_ends() {
        assert_eq!(runs(&[0, 1, 2, 3, 5, 7, 8, 9]), "0-3, 5, 7-9");
        assert_eq!(runs(&[4]), "4");
        assert_eq!(runs(&[]), "");
    }

    #[test]
    fn times_and_spans() {
        assert_eq!(clock(1_796_051_694_058), "15:14:54");
        assert_eq!(stamp(0), "19700101-000000");
        assert_eq!(stamp(1_796_051_694_058), "20261130-151454");
        assert_eq!(span_compact(42_000), "42s");
        assert_eq!(span_compact(185_000), "3m05s");
        assert_eq!(span_compact(3_720_000), "1h02m");
        assert_eq!(span_words(42_000), "42 s");
        assert_eq!(span_words(185_000), "3 min 5 s");
        assert_eq!(span_words(180_000), "3 min");
        // Rounded, as diagnose's header is: 19.75 s is 20 s in the report.
        assert_eq!(span_words(19_750), "20 s");
        assert_eq!(span_words(179_250), "2 min 59 s");
    }

    #[test]
    fn clip_middle_keeps_both_ends() {
        assert_eq!(
            clip_middle("snapshot written to /a/b/c/file.json", 20),
            "snapshot …/file.json"
        );
        assert_eq!(clip_middle("short", 20), "short");
        assert_eq!(clip_middle("abcdef", 1), "…");
        assert_eq!(clip_middle("abcdef", 0), "");
        assert_eq!(clip_middle("ééééé", 4), "é…éé");
    }

    #[test]
    fn clip_counts_characters() {
        assert_eq!(clip("python3 train.py", 8), "python3…");
        assert_eq!(clip("abc", 8), "abc");
        assert_eq!(clip("ééééé", 3), "éé…");
        assert_eq!(clip("ééé", 3), "ééé");
        assert_eq!(clip("ab", 1), "…");
        assert_eq!(clip("ab", 0), "…");
        assert_eq!(clip("", 0), "");
    }

    /// `Clip` writes what `clip` returns, and pads as that `String` would be padded.
    #[test]
    fn clip_as_a_value_writes_and_pads_what_clip_returns() {
        for s in [
            "",
            "a",
            "pt_data_worker_0",
            "ééééé",
            "界e✓界e✓界e✓",
            "a much longer name of a worker",
        ] {
            for n in 0..20 {
                let c = clip(s, n);
                assert_eq!(Clip(s, n).to_string(), c, "{s:?} {n}");
                assert_eq!(format!("{:<24}", Clip(s, n)), format!("{c:<24}"));
                assert_eq!(format!("{:>9}", Clip(s, n)), format!("{c:>9}"));
                assert_eq!(format!("{:^7}", Clip(s, n)), format!("{c:^7}"));
            }
        }
    }

    #[test]
    fn markdown_keeps_code_spans_and_escapes_the_rest() {
        assert_eq!(code_span("a`b"), "``a`b``");
        assert_eq!(code_span("`x"), "`` `x ``");
        assert_eq!(
            markdown_inline("at a.py:3 `x = \"<img>\"` </sub><img src=x> # h | c"),
            "at a.py:3 `x = \"<img>\"` &lt;/sub&gt;&lt;img src=x&gt; \\# h \\| c"
        );
        assert_eq!(markdown_inline("x\n\n## heading"), "x  \\#\\# heading");
        assert_eq!(markdown_inline("unclosed ` tick"), "unclosed \\` tick");
        assert!(!one_line("a\nb\u{202E}c", 10).contains(['\n', '\u{202E}']));
    }
}
