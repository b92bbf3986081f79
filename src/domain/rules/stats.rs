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

/// Windows hold at most a few thousand samples: beyond that a uniform subsample is kept.
pub(super) const MAX: usize = 4096;

thread_local! {
    /// The values being summarised, kept between calls: a window's statistics allocate nothing
    /// after the first, and no buffer is zeroed per call (a 16 KiB array on the stack was: its
    /// memset was two thirds of what the rules cost).
    static SCRATCH: std::cell::RefCell<Vec<f32>> = std::cell::RefCell::new(Vec::with_capacity(MAX));
}

impl Stats {
    pub fn of(values: impl Iterator<Item = f32>) -> Stats {
        SCRATCH.with(|cell| match cell.try_borrow_mut() {
            Ok(mut buf) => Self::of_in(values, &mut buf),
            // Only if a metric's closure itself asked for statistics (none does).
            Err(_) => Self::of_in(values, &mut Vec::new()),
        })
    }

    fn of_in(values: impl Iterator<Item = f32>, buf: &mut Vec<f32>) -> Stats {
        buf.clear();
        let mut total = 0usize;
        for v in values {
            total += 1;
            // Beyond MAX values, keep a uniform subsample (every k-th) rather than the first MAX.
            if buf.len() < MAX {
                buf.push(v);
            } else {
                buf[total % MAX] = v;
            }
        }
        let n = buf.len();
        if n == 0 {
            return Stats::default();
        }
        Self::summarise(&mut buf[..])
    }

    /// The statistics of `vals` (not empty), reordering it. The order statistics come from
    /// `select_nth_unstable` (linear) instead of a sort: the same values, a third of the work
    /// on a 2-minute window.
    fn summarise(vals: &mut [f32]) -> Stats {
        let n = vals.len();
        let by = f32::total_cmp;
        // Extremes, sum and the share above zero in one pass (they were four): the same
        // values, the sum in the same order from the same start as `Iterator::sum`.
        let (mut min, mut max, mut sum, mut above) = (vals[0], vals[0], -0.0f32, 0usize);
        for &v in vals.iter() {
            if by(&v, &min).is_lt() {
                min = v;
            }
            if by(&v, &max).is_gt() {
                max = v;
            }
            sum += v;
            above += usize::from(v > 0.0);
        }
        let mean = sum / n as f32;
        let var = vals.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / n as f32;
        let nonzero_share = above as f32 / n as f32;
        // The upper middle value; what is below it stays below, what is above, above.
        let m = n / 2;
        let (lower, upper_mid, upper) = vals.select_nth_unstable_by(m, by);
        let upper_mid = *upper_mid;
        let lower_mid = lower.iter().copied().max_by(by).unwrap_or(upper_mid);
        let median = if n % 2 == 1 {
            upper_mid
        } else {
            f32::midpoint(lower_mid, upper_mid)
        };
        // The 10th and 90th percentiles, as the sorted values' (n-1)/10-th from each end.
        let i10 = (n - 1) / 10;
        let i90 = (n - 1) - i10;
        let p10 = if i10 < m {
            *lower.select_nth_unstable_by(i10, by).1
        } else {
            upper_mid
        };
        let p90 = if i90 > m {
            *upper.select_nth_unstable_by(i90 - m - 1, by).1
        } else {
            upper_mid
        };
        Stats {
            n,
            min,
            max,
            mean,
            median,
            sd: var.sqrt(),
            nonzero_share,
            p10,
            p90,
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

    /// The order statistics by selection equal those of a full sort, at every size.
    #[test]
    fn selection_gives_what_a_sort_gives() {
        let mut lcg = crate::testing::Lcg(7);
        for n in 1..300usize {
            let vals: Vec<f32> = (0..n).map(|_| lcg.below(97) as f32 / 4.0).collect();
            let s = Stats::of(vals.iter().copied());
            let mean = vals.iter().sum::<f32>() / n as f32;
            assert_eq!(
                (s.mean.to_bits(), s.nonzero_share),
                (
                    mean.to_bits(),
                    vals.iter().filter(|v| **v > 0.0).count() as f32 / n as f32
                ),
                "n = {n}"
            );
            let mut sorted = vals.clone();
            sorted.sort_unstable_by(f32::total_cmp);
            let median = if n % 2 == 1 {
                sorted[n / 2]
            } else {
                f32::midpoint(sorted[n / 2 - 1], sorted[n / 2])
            };
            assert_eq!(
                (s.min, s.max, s.median, s.p10, s.p90),
                (
                    sorted[0],
                    sorted[n - 1],
                    median,
                    sorted[(n - 1) / 10],
                    sorted[(n - 1) - (n - 1) / 10]
                ),
                "n = {n}"
            );
        }
    }

    #[test]
    fn empty_window_has_no_values() {
        assert_eq!(Stats::of(std::iter::empty()).n, 0);
    }
}
