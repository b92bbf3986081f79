//! How gpuwatch writes numbers, times and untrusted text for people: one place, so the screen,
//! the evidence, `diagnose` and the reports say the same thing the same way.

/// `text` with every control character a terminal could act on (ESC and the rest of C0 but
/// newline and tab, DEL, C1) shown as `�`: GPU and process names come from the machine or from
/// a recording someone sent, and must not reach a terminal as escape sequences (an OSC 52
/// clipboard write, a title change, a cursor move).
#[must_use]
pub fn printable(text: &str) -> std::borrow::Cow<'_, str> {
    let unsafe_char = |c: char| (c.is_control() && c != '\n' && c != '\t') || c == '\u{7f}';
    if text.chars().any(unsafe_char) {
        text.chars()
            .map(|c| if unsafe_char(c) { '\u{FFFD}' } else { c })
            .collect::<String>()
            .into()
    } else {
        text.into()
    }
}

/// "HH:MM:SS": a time in ms since the epoch, UTC.
#[must_use]
pub fn clock(ms: u64) -> String {
    let s = ms / 1000;
    format!("{:02}:{:02}:{:02}", (s / 3600) % 24, (s / 60) % 60, s % 60)
}

/// `s` cut to `n` characters, with an ellipsis when cut.
#[must_use]
pub fn clip(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let mut out: String = s.chars().take(n.saturating_sub(1)).collect();
        out.push('…');
        out
    }
}

/// `s` cut to `n` characters in its middle, with an ellipsis there: for messages whose end
/// matters as much as their start ("snapshot written to …/gpuwatch-snapshot-0601.json").
#[must_use]
pub fn clip_middle(s: &str, n: usize) -> String {
    let len = s.chars().count();
    if len <= n {
        return s.to_string();
    }
    let Some(keep) = n.checked_sub(1) else {
        return String::new();
    };
    let head = keep / 2;
    let tail = keep - head;
    let mut out: String = s.chars().take(head).collect();
    out.push('…');
    out.extend(s.chars().skip(len - tail));
    out
}

/// A span of time in little room: "42s", "3m05s" or "1h02m" (the screen).
#[must_use]
pub fn span_compact(ms: u64) -> String {
    let s = ms / 1000;
    match s {
        0..=119 => format!("{s}s"),
        120..=3599 => format!("{}m{:02}s", s / 60, s % 60),
        _ => format!("{}h{:02}m", s / 3600, (s / 60) % 60),
    }
}

/// A span of time in words: "42 s" or "3 min" (evidence, reports).
#[must_use]
pub fn span_words(ms: u64) -> String {
    let s = ms / 1000;
    if s >= 120 {
        format!("{} min", s / 60)
    } else {
        format!("{s} s")
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_and_spans() {
        assert_eq!(clock(1_796_051_694_058), "15:14:54");
        assert_eq!(stamp(0), "19700101-000000");
        assert_eq!(stamp(1_796_051_694_058), "20261130-151454");
        assert_eq!(span_compact(42_000), "42s");
        assert_eq!(span_compact(185_000), "3m05s");
        assert_eq!(span_compact(3_720_000), "1h02m");
        assert_eq!(span_words(42_000), "42 s");
        assert_eq!(span_words(185_000), "3 min");
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
    }
}
