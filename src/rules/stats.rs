//! Summary statistics of one metric over a window.

/// Count, extremes, mean, median and standard deviation of a window's values (gaps skipped).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Stats {
    pub n: usize,
    pub min: f32,
    pub max: f32,
    pub mean: f32,
    pub median: f32,
    pub sd: f32,
    /// Share of values above zero.
    pub nonzero_share: f32,
    /// 10th and 90th percentiles: "nearly always above/below", robust to a single blip.
    pub p10: f32,
    pub p90: f32,
}

/// Windows hold at most a few thousand samples; a fixed stack buffer keeps this allocation-free.
const MAX: usize = 4096;

impl Stats {
    pub fn of(values: impl Iterator<Item = f32>) -> Stats {
        let mut buf = [0f32; MAX];
        let mut n = 0;
        let mut total = 0usize;
        for v in values {
            total += 1;
            // Beyond MAX values, keep a uniform subsample (every k-th) rather than the first MAX.
            if n < MAX {
                buf[n] = v;
                n += 1;
            } else {
                buf[total % MAX] = v;
            }
        }
        if n == 0 {
            return Stats::default();
        }
        let vals = &mut buf[..n];
        vals.sort_unstable_by(f32::total_cmp);
        let mean = vals.iter().sum::<f32>() / n as f32;
        let var = vals.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / n as f32;
        let median = if n % 2 == 1 {
            vals[n / 2]
        } else {
            f32::midpoint(vals[n / 2 - 1], vals[n / 2])
        };
        Stats {
            n,
            min: vals[0],
            max: vals[n - 1],
            mean,
            median,
            sd: var.sqrt(),
            nonzero_share: vals.iter().filter(|v| **v > 0.0).count() as f32 / n as f32,
            p10: vals[(n - 1) / 10],
            p90: vals[(n - 1) - (n - 1) / 10],
        }
    }

    /// The median, or `fallback` when the window had no values.
    #[must_use]
    pub fn median_or(&self, fallback: Option<f32>) -> Option<f32> {
        if self.n > 0 {
            Some(self.median)
        } else {
            fallback
        }
    }

    /// Standard deviation over mean: how bursty a signal is.
    #[must_use]
    pub fn variation(&self) -> f32 {
        if self.mean > 0.0 {
            self.sd / self.mean
        } else {
            0.0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_of_known_values() {
        let s = Stats::of([1.0, 2.0, 3.0, 4.0, 0.0].into_iter());
        assert_eq!((s.n, s.min, s.max, s.median), (5, 0.0, 4.0, 2.0));
        assert!((s.mean - 2.0).abs() < 1e-6);
        assert!((s.sd - 2f32.sqrt()).abs() < 1e-5);
        assert!((s.nonzero_share - 0.8).abs() < 1e-6);
    }

    #[test]
    fn empty_window_has_no_values() {
        assert_eq!(Stats::of(std::iter::empty()).n, 0);
    }
}
