//! The values options take that clap has no parser for: durations, the sampling interval, a
//! playback speed. Each error says what a good value looks like.

use std::time::Duration;

pub(super) fn parse_duration(s: &str) -> Result<Duration, String> {
    // humantime takes any Unicode space between number and unit: a line separator pasted in
    // (`1\u{2028}s`) was taken for "1 s" (helper-34). A duration is ASCII, spaces included,
    // and the micro sign humantime reads in "µs".
    let odd = |c: char| !(c.is_ascii_graphic() || c == ' ' || c == 'µ');
    if let Some((at, c)) = s.chars().enumerate().find(|(_, c)| odd(*c)) {
        return Err(format!(
            "'{s}' is not a duration like 250ms, 30s or 15m (character {} is U+{:04X}, not an \
             ASCII letter, digit or space)",
            at + 1,
            u32::from(c)
        ));
    }
    humantime::parse_duration(s)
        .map_err(|e| format!("'{s}' is not a duration like 250ms, 30s or 15m ({e})"))
}

pub(super) fn parse_interval(s: &str) -> Result<Duration, String> {
    // clap names --interval even when the value came from the environment: say where it did.
    let from_env = std::env::var("GPUWATCH_INTERVAL").is_ok_and(|v| v == s);
    let place = if from_env {
        " (from GPUWATCH_INTERVAL)"
    } else {
        ""
    };
    let d = parse_duration(s).map_err(|e| format!("{e}{place}"))?;
    if d < Duration::from_millis(50) || d > Duration::from_secs(10) {
        return Err(format!("{s} is outside 50ms to 10s{place}"));
    }
    Ok(d)
}

/// A playback speed: 0 (as fast as possible) or a finite factor from 0.01 to 10 000. Slower
/// than 0.01 would wait hours per tick; NaN and infinities mean nothing.
pub(super) fn parse_speed(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("'{s}' is not a number (try 1, 10 or 0 for as fast as possible)"))?;
    if v == 0.0 || (0.01..=10_000.0).contains(&v) {
        Ok(v)
    } else {
        Err(format!(
            "{s} is outside 0.01 to 10000 (0 plays as fast as possible)"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interval_bounds_are_enforced() {
        assert!(parse_interval("50ms").is_ok());
        assert!(parse_interval("10s").is_ok());
        assert!(parse_interval("49ms").unwrap_err().contains("50ms to 10s"));
        assert!(parse_interval("11s").is_err());
        assert!(parse_interval("fast")
            .unwrap_err()
            .contains("not a duration"));
    }

    /// Unicode spaces between number and unit were taken as a space (helper-34).
    #[test]
    fn a_duration_is_ascii() {
        assert_eq!(parse_duration("1 s"), Ok(Duration::from_secs(1)));
        assert_eq!(parse_duration("1500µs"), Ok(Duration::from_micros(1500)));
        assert!(parse_duration("1\u{a0}m").unwrap_err().contains("U+00A0"));
        for odd in ["1\u{2028}s", "1\u{a0}s", "1\u{3000}s", "1\ts", "1\u{200b}s"] {
            let e = parse_duration(odd).unwrap_err();
            assert!(e.contains("character 2 is U+"), "{odd:?}: {e}");
        }
        assert!(parse_interval("1\u{2028}s").is_err());
    }
}
