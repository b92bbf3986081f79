//! The ring buffer under every history: a fixed capacity, no allocation per pushed value,
//! window queries by time for samples.

use crate::model::DeviceSample;

/// A fixed-capacity ring of samples ordered by time (oldest first).
#[derive(Debug)]
pub struct Ring<T> {
    buf: Vec<T>,
    capacity: usize,
    /// Index of the oldest element once the ring is full.
    head: usize,
    /// Elements pushed since the ring was made (a clear keeps counting): the `position` of
    /// each, by which a reader that kept its place knows what arrived since.
    pushed: u64,
}

impl<T: Copy> Clone for Ring<T> {
    fn clone(&self) -> Self {
        Ring {
            buf: self.buf.clone(),
            capacity: self.capacity,
            head: self.head,
            pushed: self.pushed,
        }
    }
    /// Copies into the buffer already there: a copy kept up to date allocates once.
    fn clone_from(&mut self, other: &Self) {
        self.buf.clone_from(&other.buf);
        self.capacity = other.capacity;
        self.head = other.head;
        self.pushed = other.pushed;
    }
}

impl<T: Copy> Ring<T> {
    #[must_use]
    pub fn with_capacity(capacity: usize) -> Self {
        let capacity = capacity.max(1);
        Ring {
            buf: Vec::with_capacity(capacity),
            capacity,
            head: 0,
            pushed: 0,
        }
    }

    /// Empties the ring, keeping its buffer.
    pub fn clear(&mut self) {
        self.buf.clear();
        self.head = 0;
    }

    /// Appends `item`, overwriting the oldest once full. Never allocates after construction.
    pub fn push(&mut self, item: T) {
        self.pushed += 1;
        if self.buf.len() < self.capacity {
            self.buf.push(item);
        } else {
            self.buf[self.head] = item;
            self.head = (self.head + 1) % self.capacity;
        }
    }

    #[must_use]
    pub fn len(&self) -> usize {
        self.buf.len()
    }
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }
    #[must_use]
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// The `i`-th oldest element.
    #[must_use]
    pub fn get(&self, i: usize) -> Option<&T> {
        if i >= self.buf.len() {
            return None;
        }
        // head and i are both below the length: one subtraction instead of a division, which
        // every binary search over the ring pays at each step.
        let at = self.head + i;
        Some(&self.buf[at.checked_sub(self.buf.len()).unwrap_or(at)])
    }

    /// The position of the oldest element held: elements are numbered in the order pushed,
    /// from 0, and the ring holds positions `first_position()..end_position()`.
    #[must_use]
    pub fn first_position(&self) -> u64 {
        self.pushed - self.buf.len() as u64
    }
    /// The position the next element pushed will have.
    #[must_use]
    pub fn end_position(&self) -> u64 {
        self.pushed
    }
    /// The element at `position`, if the ring still holds it.
    #[must_use]
    pub fn at_position(&self, position: u64) -> Option<&T> {
        let i = position.checked_sub(self.first_position())?;
        self.get(usize::try_from(i).ok()?)
    }

    #[must_use]
    pub fn latest(&self) -> Option<&T> {
        self.len().checked_sub(1).and_then(|i| self.get(i))
    }

    /// Oldest to newest, as two contiguous slices.
    #[must_use]
    pub fn as_slices(&self) -> (&[T], &[T]) {
        let (newer, older) = self.buf.split_at(self.head);
        (older, newer)
    }

    #[must_use]
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &T> + '_ {
        let (a, b) = self.as_slices();
        a.iter().chain(b.iter())
    }

    /// Index of the first element for which `before(elem)` is false (elements must be
    /// partitioned: all `before` first). Binary search over the logical order.
    fn partition_point(&self, before: impl Fn(&T) -> bool) -> usize {
        let (mut lo, mut hi) = (0, self.len());
        while lo < hi {
            let mid = usize::midpoint(lo, hi);
            if self.get(mid).is_some_and(&before) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }
}

impl Ring<DeviceSample> {
    /// Samples with `from_ms <= t_ms <= to_ms`, oldest first. O(log n) to find, no allocation.
    #[must_use]
    pub fn window(
        &self,
        from_ms: u64,
        to_ms: u64,
    ) -> impl DoubleEndedIterator<Item = &DeviceSample> + '_ {
        let start = self.partition_point(|s| s.t_ms < from_ms);
        let end = self.partition_point(|s| s.t_ms <= to_ms);
        (start..end.max(start)).filter_map(move |i| self.get(i))
    }

    /// The position of the first sample at or after `from_ms` (samples in time order).
    #[must_use]
    pub fn position_from(&self, from_ms: u64) -> u64 {
        self.first_position() + self.partition_point(|s| s.t_ms < from_ms) as u64
    }

    /// The last `span_ms` before the latest sample (inclusive).
    #[must_use]
    pub fn last(&self, span_ms: u64) -> impl DoubleEndedIterator<Item = &DeviceSample> + '_ {
        let to = self.latest().map_or(0, |s| s.t_ms);
        self.window(to.saturating_sub(span_ms), to)
    }
}
