//! `{:.N}` of an `f32` without the float formatting machinery: the rules word their evidence
//! once a second per open finding, and formatting its figures (`format!("{w:.0} W")`) took
//! 1,000 instructions a figure, a twentieth of what judging the 64-GPU demo cost. The text is
//! the same, to the byte (a test compares them over ties, signs and large values).

use std::fmt;

/// `{:.N}` of `value` with `places` decimals (at most 3), `{:+.N}` under `{:+}`. Display it.
#[derive(Clone, Copy, Debug)]
pub struct Fixed {
    value: f32,
    places: u8,
}

/// `value` to `places` decimals (at most 3; more are formatted as three).
#[must_use]
pub fn fixed(value: f32, places: u8) -> Fixed {
    Fixed {
        value,
        places: places.min(3),
    }
}

/// Past this, a scaled value may not be a whole number exactly: the formatting machinery's.
const EXACT_BELOW: f64 = 9_007_199_254_740_992.0; // 2^53

impl fmt::Display for Fixed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let places = usize::from(self.places);
        let scale = [1.0, 10.0, 100.0, 1000.0][places];
        // Exact: an f32 has 24 significant bits and 1000 needs 10, well within an f64's 53.
        // Rounding that exact value half to even is what `{:.N}` does to the binary value.
        let scaled = (f64::from(self.value) * scale).round_ties_even();
        if !scaled.is_finite() || scaled.abs() >= EXACT_BELOW {
            // Not a figure the rules write (infinite, not a number, past 2^53): rare enough
            // to allocate.
            let text = if f.sign_plus() {
                format!("{:+.*}", places, self.value)
            } else {
                format!("{:.*}", places, self.value)
            };
            return f.pad(&text);
        }
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        // Whole, and below 2^53 in magnitude (checked above).
        let units = scaled.abs() as u64;
        let mut buf = [0u8; 24];
        let mut at = buf.len();
        let mut put = |b: u8| {
            at -= 1;
            buf[at] = b;
        };
        let mut rest = units;
        for digit in 0..places.max(1) + 20 {
            if digit == places && places > 0 {
                put(b'.');
            }
            put(b'0' + u8::try_from(rest % 10).unwrap_or(0));
            rest /= 10;
            if rest == 0 && digit >= places {
                break;
            }
        }
        // Negative values keep their sign when they round to zero ("-0"), as `{:.N}` does.
        if self.value.is_sign_negative() {
            put(b'-');
        } else if f.sign_plus() {
            put(b'+');
        }
        // Only ASCII digits and signs were written.
        let text = std::str::from_utf8(&buf[at..]).map_err(|_| fmt::Error)?;
        if f.width().is_some() {
            f.pad(text)
        } else {
            f.write_str(text)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::fixed;

    fn both(v: f32, places: u8) {
        let p = usize::from(places);
        assert_eq!(
            fixed(v, places).to_string(),
            format!("{v:.p$}"),
            "{v:e} .{p}"
        );
        assert_eq!(
            format!("{:+}", fixed(v, places)),
            format!("{v:+.p$}"),
            "{v:e} +.{p}"
        );
        assert_eq!(
            format!("{:>12}", fixed(v, places)),
            format!("{v:>12.p$}"),
            "{v:e} >12.{p}"
        );
    }

    #[test]
    fn the_same_text_as_the_formatting_machinery() {
        let mut values = vec![
            0.0f32,
            -0.0,
            0.5,
            1.5,
            2.5,
            -0.5,
            -2.5,
            0.25,
            0.35,
            0.125,
            0.0625,
            9.995,
            99.95,
            0.049,
            -0.04,
            -0.4,
            1e-8,
            123_456.78,
            16_777_216.0,
            3.4e38,
            -3.4e38,
            1e15,
            f32::MIN_POSITIVE,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
        ];
        // Every half, quarter and eighth up to 1000 (the ties), and a pseudo-random walk over
        // many magnitudes, signs included.
        for i in 0..8000u16 {
            values.push(f32::from(i) / 8.0);
        }
        let mut x: u32 = 0x9e37_79b9;
        for _ in 0..200_000 {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            let v = f32::from_bits(x);
            if v.is_finite() && v.abs() < 1e12 {
                values.push(v);
            }
            #[allow(clippy::cast_precision_loss)] // any f32 will do
            values.push((x % 2_000_000) as f32 / 1000.0 - 1000.0);
        }
        for v in values {
            for places in 0..=3 {
                both(v, places);
            }
        }
    }
}
