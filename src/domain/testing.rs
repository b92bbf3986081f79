//! What the unit tests share; compiled for tests only.

/// Numbers that look random and are the same from one run to the next: a linear congruential
/// generator from its seed, for tests that hold a fast path to a plain one over many cases.
pub struct Lcg(pub u32);

impl Lcg {
    /// The next number, from 0 to `m` (excluded).
    pub fn below(&mut self, m: u32) -> u32 {
        self.0 = self.0.wrapping_mul(1_103_515_245).wrapping_add(12_345);
        (self.0 >> 8) % m
    }
}
