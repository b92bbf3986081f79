//! Joules: what a GPU used since gpuwatch first saw it, from its energy counter where it has
//! one and the integral of power between the counter's readings (and where it has none).
//!
//! The counter is exact but costly to read (6 ms of CPU a call on an H200: a busy wait in the
//! driver), so it is read once a minute; power, read every tick, fills the time in between and
//! each new counter reading replaces the integral of its stretch.

use crate::model::DeviceSample;

/// Gaps longer than this are not integrated: the GPU was lost, or a recording paused.
const MAX_STEP_MS: u64 = 10_000;
/// More than any GPU draws: a counter step above it over its stretch is not believed (a
/// driver reload reset it, or a hostile file).
const MAX_W: f64 = 10_000.0;

/// True when a counter step of `j` joules over `span_s` seconds can be real: under any GPU's
/// draw, and — where power was read over the stretch — within half of the integral of power
/// (or 100 W) of it. On the H200 the two agreed within 0.9 %; a counter fifty times the
/// power's, as a hostile file may claim, is not taken.
fn believable(j: f64, integral: f64, span_s: f64) -> bool {
    let slack = (integral * 0.5).max(100.0 * span_s);
    j <= MAX_W * (span_s + 1.0) && (integral <= 0.0 || (j - integral).abs() <= slack)
}

/// A GPU's running total of energy. `Copy`, updated in place per sample.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct EnergyMeter {
    /// Joules up to the last counter reading.
    at_reading_j: f64,
    /// The integral of power since then.
    since_reading_j: f64,
    /// The last counter value (mJ) and the sample time it was seen at.
    reading: Option<(u64, u64)>,
    /// The last sample's time and power, for the next step of the integral.
    last: Option<(u64, f32)>,
    /// Joules that came from the counter rather than the integral.
    counted_j: f64,
    /// The first and the last sample time with power or the counter read: the span the total
    /// covers (a GPU lost at 20 s of a 30 s run used its joules over 20 s, not 30).
    measured: Option<(u64, u64)>,
}

impl EnergyMeter {
    /// Takes in one sample, in time order.
    pub fn push(&mut self, s: &DeviceSample) {
        if s.power_w.is_some() || s.energy_mj.is_some() {
            let first = self.measured.map_or(s.t_ms, |(first, _)| first);
            self.measured = Some((first, s.t_ms));
        }
        if let (Some((t0, p0)), Some(p1)) = (self.last, s.power_w) {
            let dt = s.t_ms.saturating_sub(t0);
            if dt > 0 && dt <= MAX_STEP_MS {
                self.since_reading_j += f64::from(p0 + p1) / 2.0 * dt as f64 / 1000.0;
            }
        }
        self.last = s.power_w.map(|p| (s.t_ms, p));
        let Some(mj) = s.energy_mj else { return };
        match self.reading {
            Some((prev, _)) if prev == mj => {}
            Some((prev, at)) => {
                let span_s = s.t_ms.saturating_sub(at) as f64 / 1000.0;
                let step_j = mj.checked_sub(prev).map(|d| d as f64 / 1000.0);
                let integral = self.since_reading_j;
                match step_j.filter(|j| believable(*j, integral, span_s)) {
                    Some(j) => {
                        self.at_reading_j += j;
                        self.counted_j += j;
                    }
                    // Reset or implausible: the integral stands for this stretch.
                    None => self.at_reading_j += self.since_reading_j,
                }
                self.since_reading_j = 0.0;
                self.reading = Some((mj, s.t_ms));
            }
            None => {
                self.at_reading_j += self.since_reading_j;
                self.since_reading_j = 0.0;
                self.reading = Some((mj, s.t_ms));
            }
        }
    }

    /// Joules since the first sample.
    #[must_use]
    pub fn total_j(&self) -> f64 {
        self.at_reading_j + self.since_reading_j
    }

    /// The span the total covers (ms): from the first sample that read power or the counter
    /// to the last.
    #[must_use]
    pub fn span_ms(&self) -> u64 {
        self.measured
            .map_or(0, |(first, last)| last.saturating_sub(first))
    }

    /// True when most of the total came from the GPU's energy counter.
    #[must_use]
    pub fn counted(&self) -> bool {
        self.counted_j > self.total_j() * 0.5
    }

    /// True when the counter was read at all: read once, it spans no stretch yet (it is read
    /// once a minute), which is not "the GPU has none".
    #[must_use]
    pub fn has_counter(&self) -> bool {
        self.reading.is_some()
    }
}

/// The integral of power over the samples from `from_ms` on, in joules: what a finding that
/// began at `from_ms` has used so far, once, when it opens (the meter carries it on).
pub fn integral_since<'a>(samples: impl Iterator<Item = &'a DeviceSample>, from_ms: u64) -> f64 {
    let mut j = 0.0;
    let mut last: Option<(u64, f32)> = None;
    for s in samples.filter(|s| s.t_ms >= from_ms) {
        if let (Some((t0, p0)), Some(p1)) = (last, s.power_w) {
            let dt = s.t_ms.saturating_sub(t0);
            if dt > 0 && dt <= MAX_STEP_MS {
                j += f64::from(p0 + p1) / 2.0 * dt as f64 / 1000.0;
            }
        }
        last = s.power_w.map(|p| (s.t_ms, p));
    }
    j
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(t_ms: u64, power_w: f32, energy_mj: Option<u64>) -> DeviceSample {
        DeviceSample {
            t_ms,
            power_w: Some(power_w),
            energy_mj,
            ..DeviceSample::default()
        }
    }

    #[test]
    fn without_a_counter_the_total_is_the_integral_of_power() {
        let mut m = EnergyMeter::default();
        for i in 0..=100 {
            m.push(&sample(i * 100, 500.0, None));
        }
        assert!((m.total_j() - 5000.0).abs() < 1e-6, "{}", m.total_j());
        assert!(!m.counted() && !m.has_counter());
    }

    /// A run shorter than the counter's minute reads it once: the total is the integral, and
    /// the GPU has a counter all the same (the report said "no energy counter read").
    #[test]
    fn a_counter_read_once_is_a_counter_that_spans_nothing_yet() {
        let mut m = EnergyMeter::default();
        for i in 0..=600u64 {
            m.push(&sample(i * 100, 120.0, Some(9_000_000)));
        }
        assert!((m.total_j() - 7200.0).abs() < 1e-6, "{}", m.total_j());
        assert!(!m.counted() && m.has_counter());
    }

    /// A GPU lost at 20 s of a 30 s run (power and counter gone): its total covers 20 s. The
    /// report said "over 30 s", the span of every sample kept.
    #[test]
    fn the_span_ends_where_power_and_the_counter_stop() {
        let mut m = EnergyMeter::default();
        assert_eq!(m.span_ms(), 0);
        for i in 0..=300u64 {
            let mut s = sample(5_000 + i * 100, 400.0, None);
            if i > 200 {
                s.power_w = None;
            }
            m.push(&s);
        }
        assert_eq!(m.span_ms(), 20_000);
        assert!((m.total_j() - 8_000.0).abs() < 1e-6, "{}", m.total_j());
    }

    #[test]
    fn a_counter_reading_replaces_the_integral_of_its_stretch() {
        // Power reads 500 W but the counter says 600 W was used: the counter wins for each
        // stretch it covers, the integral carries on after the last reading.
        let mut m = EnergyMeter::default();
        for i in 0..=300u64 {
            let t = i * 100;
            let counter = (i % 150 == 0).then_some(1_000_000 + t * 600);
            m.push(&sample(t, 500.0, counter.or(m.reading.map(|r| r.0))));
        }
        // 30 s at 600 W by the counter (readings at 0, 15 and 30 s).
        assert!((m.total_j() - 18_000.0).abs() < 1e-6, "{}", m.total_j());
        assert!(m.counted());
        m.push(&sample(30_100, 500.0, Some(1_000_000 + 30_000 * 600)));
        assert!((m.total_j() - 18_050.0).abs() < 1e-6);
    }

    #[test]
    fn a_counter_that_goes_back_or_leaps_is_not_believed() {
        let mut m = EnergyMeter::default();
        m.push(&sample(0, 100.0, Some(5_000_000)));
        m.push(&sample(1000, 100.0, Some(1_000))); // driver reloaded: counter reset
        assert!((m.total_j() - 100.0).abs() < 1e-6, "{}", m.total_j());
        m.push(&sample(2000, 100.0, Some(u64::MAX))); // hostile file
        assert!((m.total_j() - 200.0).abs() < 1e-6, "{}", m.total_j());
        m.push(&sample(3000, 100.0, Some(u64::MAX))); // unchanged: the integral goes on
        assert!((m.total_j() - 300.0).abs() < 1e-6, "{}", m.total_j());
    }

    #[test]
    fn a_counter_fifty_times_the_power_is_not_taken() {
        let mut m = EnergyMeter::default();
        let mut counter = 1_000_000u64;
        for i in 0..=40u64 {
            // 690 W read; the counter claims 50 times as much from the tenth tick.
            counter += if i >= 10 { 690 * 250 * 50 } else { 690 * 250 };
            m.push(&sample(i * 250, 690.0, Some(counter)));
        }
        let j = m.total_j();
        assert!((j - 690.0 * 10.0).abs() < 700.0, "{j} J over 10 s at 690 W");
        assert!(!m.counted(), "most of it came from the integral");
    }

    #[test]
    fn gaps_are_not_integrated() {
        let mut m = EnergyMeter::default();
        m.push(&sample(0, 100.0, None));
        m.push(&sample(1000, 100.0, None));
        m.push(&sample(60_000, 100.0, None)); // a minute lost
        m.push(&DeviceSample {
            t_ms: 61_000,
            ..DeviceSample::default()
        });
        m.push(&sample(62_000, 100.0, None));
        assert!((m.total_j() - 100.0).abs() < 1e-6, "{}", m.total_j());
        let samples = [sample(0, 100.0, None), sample(1000, 300.0, None)];
        assert!((integral_since(samples.iter(), 0) - 200.0).abs() < 1e-6);
        assert!(integral_since(samples.iter(), 500).abs() < 1e-9);
    }
}
