//! A metric over a moving window of one GPU's samples, kept between evaluations: the window
//! moves by a sample or two from one judging to the next, so its values are kept sorted, with
//! running sums, and updated by those few instead of selected and summed anew from all of them
//! each time. Selecting the median and percentiles of every window, and finding its extremes,
//! was two thirds of what judging 64 GPUs cost. The order statistics are the same values, to
//! the bit, as `Stats::of` over the window; the mean and spread come from sums in f64, equal to
//! within f32 rounding (a test walks windows at random and compares both).

use super::Metric;
use super::Stats;
use crate::history::{DeviceHistory, Ring};
use crate::model::DeviceSample;

/// How many values may leave or enter a window one at a time, at least; past that, or past a
/// quarter of the window, the sorted copy is sorted again whole (a window that jumped, or one
/// not asked for a while). A quiet GPU sampled every 100 ms and judged every 500 ms moves each
/// window by ten values: sorting 1200 of them again each time cost more than the selections it
/// replaced (H200 run 34).
const ONE_BY_ONE: usize = 8;
/// The running sums are made whole again after this many values came and went.
const RESUM_EVERY: u32 = 1024;

/// One metric's values over one window of one GPU, as of the last time it was asked. The
/// window is the ring positions `start..next`: the values that leave it are read from the
/// ring as they leave, so none is copied but into the sorted list.
#[derive(Debug, Default)]
struct Kept {
    /// The window's values (gaps skipped) as `order_key`s, ascending: `f32::total_cmp`'s
    /// order, compared as plain integers (the binary searches were a fifth of what judging
    /// 64 GPUs at 50 ms cost, most of it `total_cmp`'s conversions).
    sorted: Vec<i32>,
    /// Running sums of the values less `base` (a value of the window when they were last
    /// summed whole, so that a spread small beside the values keeps its precision), and the
    /// count above zero: the mean and spread without a pass over the window.
    base: f64,
    sum: f64,
    sum_sq: f64,
    above: usize,
    /// Values added or dropped since the sums were last made whole (their rounding drifts).
    updates: u32,
    from_ms: u64,
    to_ms: u64,
    /// The ring position of the window's first sample.
    start: u64,
    /// The ring position of the first sample not yet looked at.
    next: u64,
    /// False until the first fill, and again after a search (samples out of time order).
    filled: bool,
    /// The statistics of the window as it stands, once computed; none after it changed.
    stats: Option<Stats>,
    /// While the samples are out of time order: what a search of the ring gave.
    searched: Option<Searched>,
}

/// A window being moved: the values that came or went, how many may before the sorted list is
/// sorted again whole instead, whether it will be, and the values that left while they wait
/// for values that arrive to take their places in the list (`Kept::replace`): a window that
/// slid by a few shifts only the values between each pair, not the list's tail twice each.
struct Moving {
    changed: usize,
    limit: usize,
    resort: bool,
    leaving: Leaving,
}

/// At most `ONE_BY_ONE` values that left the window and are still in the sorted list.
#[derive(Default)]
struct Leaving {
    keys: [i32; ONE_BY_ONE],
    len: usize,
}

impl Leaving {
    /// Holds `key` if there is room; false if there is none.
    fn hold(&mut self, key: i32) -> bool {
        let room = self.len < ONE_BY_ONE;
        if room {
            self.keys[self.len] = key;
            self.len += 1;
        }
        room
    }

    fn pop(&mut self) -> Option<i32> {
        self.len = self.len.checked_sub(1)?;
        Some(self.keys[self.len])
    }
}

/// `f32::total_cmp`'s order as an integer's: the sign bit kept, the other bits of a negative
/// value flipped. Its own inverse (`value`).
fn order_key(v: f32) -> i32 {
    let bits = v.to_bits().cast_signed();
    bits ^ ((bits >> 31).cast_unsigned() >> 1).cast_signed()
}

/// The value whose `order_key` is `key`.
fn value(key: i32) -> f32 {
    f32::from_bits(order_key(f32::from_bits(key.cast_unsigned())).cast_unsigned())
}

impl Moving {
    /// One value more came or went.
    fn count(&mut self) {
        self.changed += 1;
        self.resort |= self.changed > self.limit;
    }
}

/// The statistics a search of the ring gave over `bounds`, when it held the positions
/// `held` (first, end): the same ring and bounds give the same.
#[derive(Debug, Clone, Copy)]
struct Searched {
    bounds: (u64, u64),
    held: (u64, u64),
    stats: Stats,
}

/// (span ms, which part of it, the metric), as `Ctx` keys its statistics.
pub type Key = (u64, u8, Metric);

/// Every window kept for one GPU.
#[derive(Debug, Default)]
pub struct Windows {
    /// The GPU these belong to: a history whose devices moved starts them again.
    device: Option<u32>,
    /// `kept`'s keys, in its order, apart from it: looking one up reads a few cache lines,
    /// not one per window (with 64 GPUs the windows are cold by the time a GPU is judged).
    keys: Vec<Key>,
    kept: Vec<Kept>,
    /// Where the next key asked is looked for first: the rules ask for their windows in the
    /// same order at every judging.
    guess: usize,
}

/// A copy starts empty: what is kept is a cache, and the first window asked fills it again.
impl Clone for Windows {
    fn clone(&self) -> Self {
        Windows::default()
    }
}

impl Windows {
    /// The statistics of `metric` over the samples of `dev` with `from_ms <= t_ms <= to_ms`.
    /// Asked again before the window gained or lost a value (several rules read the same
    /// metric over the same span), the statistics already computed are given.
    pub fn stats(
        &mut self,
        dev: &DeviceHistory,
        key: Key,
        metric: Metric,
        bounds: (u64, u64),
    ) -> Stats {
        if self.device != Some(dev.info.index) {
            self.device = Some(dev.info.index);
            self.keys.clear();
            self.kept.clear();
        }
        let at = self.find(key);
        let kept = &mut self.kept[at];
        if dev.samples_in_order() {
            kept.move_to(&dev.samples, metric, bounds.0, bounds.1);
            kept.stats(&dev.samples, metric)
        } else {
            kept.searched(&dev.samples, metric, bounds)
        }
    }

    /// How many windows are kept: one for each (span, part, metric) a rule asked of this GPU.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.kept.len()
    }

    /// Where `key`'s window is kept (a new one is made for a key not seen before).
    fn find(&mut self, key: Key) -> usize {
        let at = if self.keys.get(self.guess) == Some(&key) {
            self.guess
        } else if let Some(at) = self.keys.iter().position(|k| *k == key) {
            at
        } else {
            self.keys.push(key);
            self.kept.push(Kept::default());
            self.kept.len() - 1
        };
        self.guess = at + 1;
        at
    }
}

impl Kept {
    /// Makes the window `[from_ms, to_ms]`: takes out the samples now before it and takes in
    /// those that arrived since, one at a time while they are few.
    fn move_to(&mut self, ring: &Ring<DeviceSample>, metric: Metric, from_ms: u64, to_ms: u64) {
        // A window that moved back, or whose first sample the ring no longer holds (it was
        // not asked for longer than the history), starts again.
        let restart = !self.filled
            || from_ms < self.from_ms
            || to_ms < self.to_ms
            || self.start < ring.first_position();
        if restart {
            self.sorted.clear();
            self.start = ring.position_from(from_ms);
            self.next = self.start;
            self.filled = true;
        }
        let mut m = Moving {
            changed: 0,
            limit: ONE_BY_ONE.max(self.sorted.len() / 4),
            resort: restart,
            leaving: Leaving::default(),
        };
        self.leave_before(ring, metric, from_ms, &mut m);
        self.arrive_until(ring, metric, (from_ms, to_ms), &mut m);
        while let Some(old) = m.leaving.pop().filter(|_| !m.resort) {
            m.resort |= !self.remove(old);
        }
        let (changed, resort) = (m.changed, m.resort);
        self.from_ms = from_ms;
        self.to_ms = to_ms;
        if resort {
            self.sorted.clear();
            self.sorted.extend(self.values(ring, metric).map(order_key));
            self.sorted.sort_unstable();
        }
        if resort || self.updates >= RESUM_EVERY {
            self.resum(ring, metric);
        }
        if changed > 0 || resort {
            self.stats = None;
        }
    }

    /// Takes out the values of the samples now before `from_ms`.
    fn leave_before(
        &mut self,
        ring: &Ring<DeviceSample>,
        metric: Metric,
        from_ms: u64,
        m: &mut Moving,
    ) {
        while self.start < self.next {
            let Some(s) = ring.at_position(self.start).filter(|s| s.t_ms < from_ms) else {
                break;
            };
            if let Some(v) = metric.read(s) {
                m.count();
                self.count(v, false);
                if !m.resort && !m.leaving.hold(order_key(v)) {
                    m.resort |= !self.remove(order_key(v));
                }
            }
            self.start += 1;
        }
    }

    /// Takes in the values of the samples that arrived since, up to `to_ms`.
    fn arrive_until(
        &mut self,
        ring: &Ring<DeviceSample>,
        metric: Metric,
        (from_ms, to_ms): (u64, u64),
        m: &mut Moving,
    ) {
        let end = ring.end_position();
        while self.next < end {
            let Some(s) = ring.at_position(self.next).filter(|s| s.t_ms <= to_ms) else {
                break;
            };
            self.next += 1;
            if s.t_ms < from_ms {
                // Before the window (it jumped past the samples that came since).
                self.start = self.next;
                continue;
            }
            if let Some(v) = metric.read(s) {
                m.count();
                self.count(v, true);
                if m.resort {
                    continue;
                }
                match m.leaving.pop() {
                    Some(old) => m.resort |= !self.replace(old, order_key(v)),
                    None => self.insert(order_key(v)),
                }
            }
        }
    }

    /// The statistics over the samples with `from_ms <= t_ms <= to_ms` found by a search of
    /// the ring, for a ring whose samples are out of time order (a clock set back): only a
    /// search says which samples a window holds then. The window is filled again once they
    /// are in order.
    fn searched(
        &mut self,
        ring: &Ring<DeviceSample>,
        metric: Metric,
        (from_ms, to_ms): (u64, u64),
    ) -> Stats {
        self.filled = false;
        let held = (ring.first_position(), ring.end_position());
        let bounds = (from_ms, to_ms);
        match self.searched {
            Some(s) if s.bounds == bounds && s.held == held => s.stats,
            _ => {
                let stats = Stats::of(
                    ring.window(from_ms, to_ms)
                        .filter_map(move |s| metric.read(s)),
                );
                self.searched = Some(Searched {
                    bounds,
                    held,
                    stats,
                });
                stats
            }
        }
    }

    /// The window's values in sample order, from the ring.
    fn values<'a>(
        &self,
        ring: &'a Ring<DeviceSample>,
        metric: Metric,
    ) -> impl Iterator<Item = f32> + 'a {
        (self.start..self.next)
            .filter_map(|p| ring.at_position(p))
            .filter_map(move |s| metric.read(s))
    }

    /// One value's key into the sorted list (not the sums).
    fn insert(&mut self, key: i32) {
        let i = self.sorted.partition_point(|x| *x <= key);
        self.sorted.insert(i, key);
    }

    /// Where the sorted list holds `key`, if it does.
    fn find(&self, key: i32) -> Option<usize> {
        let i = self.sorted.partition_point(|x| *x < key);
        (self.sorted.get(i) == Some(&key)).then_some(i)
    }

    /// `key` out of the sorted list (not the sums); false when it did not hold it (it no
    /// longer says the window: it must be sorted whole again).
    fn remove(&mut self, key: i32) -> bool {
        self.find(key).map(|i| self.sorted.remove(i)).is_some()
    }

    /// `new` in `old`'s place in the sorted list (not the sums), the list kept in order: what
    /// removing one and inserting the other gives, moving only the values between them.
    /// False when the list did not hold `old`.
    fn replace(&mut self, old: i32, new: i32) -> bool {
        let Some(i) = self.find(old) else {
            return false;
        };
        // Where `new` goes among the values, `old` still counted when it is not above `new`.
        let j = self.sorted.partition_point(|x| *x <= new);
        if j > i {
            self.sorted.copy_within(i + 1..j, i);
            self.sorted[j - 1] = new;
        } else {
            self.sorted.copy_within(j..i, j + 1);
            self.sorted[j] = new;
        }
        true
    }

    /// Adds one value to the running sums, or takes it away.
    fn count(&mut self, v: f32, add: bool) {
        let d = f64::from(v) - self.base;
        let positive = usize::from(v > 0.0);
        if !d.is_finite() {
            // An infinity would leave NaN in the sums after it left: summed whole at once.
            self.updates = RESUM_EVERY;
        }
        if add {
            self.sum += d;
            self.sum_sq += d * d;
            self.above += positive;
        } else {
            self.sum -= d;
            self.sum_sq -= d * d;
            self.above -= positive;
        }
        self.updates += 1;
    }

    /// The running sums made whole from the window's values, about the first of them.
    fn resum(&mut self, ring: &Ring<DeviceSample>, metric: Metric) {
        self.base = self.values(ring, metric).next().map_or(0.0, f64::from);
        let (mut sum, mut sum_sq, mut above) = (0.0, 0.0, 0);
        for v in self.values(ring, metric) {
            let d = f64::from(v) - self.base;
            sum += d;
            sum_sq += d * d;
            above += usize::from(v > 0.0);
        }
        (self.sum, self.sum_sq, self.above, self.updates) = (sum, sum_sq, above, 0);
    }

    /// The statistics of the kept values, as computed last unless the window changed since.
    fn stats(&mut self, ring: &Ring<DeviceSample>, metric: Metric) -> Stats {
        if let Some(stats) = self.stats {
            return stats;
        }
        let stats = self.summarise(ring, metric);
        self.stats = Some(stats);
        stats
    }

    /// Order statistics read from the sorted copy, mean and spread from the running sums.
    fn summarise(&self, ring: &Ring<DeviceSample>, metric: Metric) -> Stats {
        let n = self.sorted.len();
        if n == 0 {
            return Stats::default();
        }
        if n > super::stats::MAX {
            // `Stats::of` summarises a subsample of a window this long.
            return Stats::of(self.values(ring, metric));
        }
        let shift = self.sum / n as f64;
        let mean = (self.base + shift) as f32;
        // Never below zero, whatever the rounding of a flat window's sums.
        let var = (self.sum_sq / n as f64 - shift * shift).max(0.0) as f32;
        let above = self.above;
        let at = |i: usize| value(self.sorted[i]);
        let m = n / 2;
        let median = if n % 2 == 1 {
            at(m)
        } else {
            f32::midpoint(at(m - 1), at(m))
        };
        let i10 = (n - 1) / 10;
        Stats {
            n,
            min: at(0),
            max: at(n - 1),
            mean,
            median,
            sd: var.sqrt(),
            nonzero_share: above as f32 / n as f32,
            p10: at(i10),
            p90: at((n - 1) - i10),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::History;
    use crate::model::{DeviceInfo, Tick};

    /// The order statistics and the share above zero, to the bit.
    fn bits(s: &Stats) -> [u32; 6] {
        [s.min, s.max, s.median, s.nonzero_share, s.p10, s.p90].map(f32::to_bits)
    }

    /// Mean and spread from running sums in f64 against `Stats::of`'s f32 passes: equal to
    /// within f32 rounding at the values' size (the f32 passes are the less exact).
    fn moments_agree(a: &Stats, b: &Stats) -> bool {
        let size = b.mean.abs().max(b.max.abs()).max(1.0);
        let close = |x: f32, y: f32| (x - y).abs() <= 1e-5 * size;
        close(a.mean, b.mean) && close(a.sd, b.sd)
    }

    /// `Stats::of` over the samples of the window, read afresh.
    fn fresh(dev: &DeviceHistory, metric: Metric, (from, to): (u64, u64)) -> Stats {
        Stats::of(dev.samples.window(from, to).filter_map(|s| metric.read(s)))
    }

    /// Windows walked at random over samples with gaps, repeated times, signed zeros, a clock
    /// now and then set back and a ring that forgets: what is kept gives `Stats::of`'s order
    /// statistics over the same samples, to the bit, and its mean and spread (a search of the
    /// ring while the samples are out of order), and the same again when asked again.
    #[test]
    fn kept_windows_give_what_a_fresh_summary_gives() {
        let mut h = History::new(&[DeviceInfo::default()], 64);
        let mut windows = Windows::default();
        let mut lcg = crate::testing::Lcg(12_345);
        let mut rnd = |m: u32| u64::from(lcg.below(m));
        let power = Metric::Power;
        let memory = Metric::MemUsedBytes;
        let (mut t, mut tick) = (100_000u64, Tick::for_devices(1));
        let (mut kept, mut searched) = (0, 0);
        for step in 0..6000 {
            t = if rnd(400) == 0 {
                t - rnd(5000)
            } else {
                t + rnd(300)
            };
            tick.t_ms = t;
            tick.devices[0].sample.t_ms = t;
            tick.devices[0].sample.power_w = match rnd(10) {
                0 => None,
                1 => Some(-0.0),
                2 => Some(0.0),
                3 => Some(rnd(50) as f32 / 4.0),
                _ => Some(80.0 + rnd(100_000) as f32 / 7.0),
            };
            // Memory in bytes: values far larger than their spread.
            tick.devices[0].sample.mem_used_bytes =
                (rnd(12) > 0).then(|| 80_000_000_000 + rnd(1_000_000) * 4096);
            h.push(&tick);
            let dev = &h.devices[0];
            let far = rnd(20_000);
            let walks = [
                (0u8, 2_000u64, (t - 2_000, t)),
                (0, 10_000, (t - 10_000, t)),
                (1, 6_000, (t - 6_000, t - 3_000)),
                (2, far, (t - far, t - far / 3)),
                // Asked every seventh sample: several values leave and arrive at once.
                (3, 4_000, (t - 4_000, t)),
            ];
            let asked = walks.into_iter().filter(|w| w.0 != 3 || step % 7 == 0);
            for ((part, span, (from, to)), metric) in asked.flat_map(|w| [(w, power), (w, memory)])
            {
                let key = (span, part, metric);
                let s = windows.stats(dev, key, metric, (from, to));
                let fresh = fresh(dev, metric, (from, to));
                assert_eq!(s.n, fresh.n);
                assert_eq!(bits(&s), bits(&fresh), "{from}..={to}");
                assert!(moments_agree(&s, &fresh), "{s:?} against {fresh:?}");
                // Asked again (another rule, same window): the same statistics.
                let again = windows.stats(dev, key, metric, (from, to));
                assert_eq!(format!("{again:?}"), format!("{s:?}"));
                if dev.samples_in_order() {
                    kept += 1;
                } else {
                    searched += 1;
                }
            }
        }
        assert!(
            kept > 30_000 && searched > 0,
            "{kept} kept, {searched} searched"
        );
    }

    /// Integer keys order values as `f32::total_cmp` does, and give each value back to the bit.
    #[test]
    fn order_keys_keep_total_order_and_every_bit() {
        let mut values = vec![
            f32::NAN,
            -f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            0.0,
            -0.0,
            f32::MIN_POSITIVE,
            -f32::MIN_POSITIVE,
            f32::from_bits(1),
            f32::from_bits(0x8000_0001),
            f32::MAX,
            f32::MIN,
            1.5,
            -1.5,
            700.0,
        ];
        let mut lcg = crate::testing::Lcg(99);
        values.extend(
            (0..2000).map(|_| f32::from_bits(lcg.below(1 << 16) << 16 | lcg.below(1 << 16))),
        );
        for a in &values {
            assert_eq!(value(order_key(*a)).to_bits(), a.to_bits());
            for b in &values[..20] {
                assert_eq!(order_key(*a).cmp(&order_key(*b)), a.total_cmp(b), "{a} {b}");
            }
        }
    }

    /// A window longer than `Stats::of` summarises whole gives its subsample's statistics.
    #[test]
    fn a_window_past_the_summary_limit_is_subsampled_alike() {
        let n = super::super::stats::MAX + 500;
        let mut h = History::new(&[DeviceInfo::default()], n);
        let mut tick = Tick::for_devices(1);
        for i in 0..n as u64 {
            tick.t_ms = 1_000 + i * 100;
            tick.devices[0].sample.t_ms = tick.t_ms;
            tick.devices[0].sample.power_w = Some((i * 7919 % 1000) as f32);
            h.push(&tick);
        }
        let dev = &h.devices[0];
        let metric = Metric::Power;
        let bounds = (0, tick.t_ms);
        let kept = Windows::default().stats(dev, (0, 0, metric), metric, bounds);
        let fresh = fresh(dev, metric, bounds);
        assert_eq!((kept.n, bits(&kept)), (fresh.n, bits(&fresh)));
    }
}
