//! A bounded, order-preserving sample store.
//!
//! A multi-day log holds millions of decode lines; keeping every sample would make memory grow
//! with the file. [`Timeline`] keeps at most `capacity` samples: when full it drops every other
//! sample and from then on keeps only every `stride`-th pushed sample (the stride doubles each
//! time). The kept samples stay evenly spread over the whole run, so time-weighted summaries and
//! plots stay representative, and exact extrema are tracked separately by the caller.

use serde::Serialize;

/// Default number of samples a [`Timeline`] keeps (per rank and line kind).
pub const DEFAULT_CAPACITY: usize = 1 << 13;

/// Kept samples after which a [`Timeline`]'s list takes room for its whole capacity at once: a
/// long log's timeline grew to its bound by doubling, each step a copy of every kept sample
/// (~240 bytes each; ~10 M instructions for the three schedulers of a 20 MB log, and still
/// ~3 M when the whole room was taken at 1,024 samples, each byte copied counted); a short
/// one's never reaches this many. (The room is address space: its pages are touched only as
/// samples are kept.)
const GROW_WHOLE_AT: usize = 1 << 6;

/// An append-only sample list with a fixed upper bound on its length.
#[derive(Clone, Debug, Serialize)]
pub struct Timeline<T> {
    samples: Vec<T>,
    capacity: usize,
    stride: u64,
    pushed: u64,
}

impl<T> Timeline<T> {
    /// A timeline that keeps at most `capacity` samples (at least 2).
    pub fn with_capacity(capacity: usize) -> Self {
        Self {
            samples: Vec::new(),
            capacity: capacity.max(2),
            stride: 1,
            pushed: 0,
        }
    }

    /// Offer one sample; it is kept when it falls on the current stride.
    pub fn push(&mut self, sample: T) {
        self.push_with(|| sample);
    }

    /// Offer one sample made by `make`, which is called only when the sample is kept (it
    /// falls on the current stride).
    #[inline]
    pub fn push_with(&mut self, make: impl FnOnce() -> T) {
        if self.keeps_next() {
            self.samples.push(make());
        }
    }

    /// Offers a copy of `sample` changed by `fix`, which is called only when the copy is kept
    /// (on the list's slot: a copy made whole first was copied twice, ~30 instructions for a
    /// ~240-byte sample).
    #[inline]
    pub fn push_copy(&mut self, sample: &T, fix: impl FnOnce(&mut T))
    where
        T: Copy,
    {
        if self.keeps_next() {
            self.samples.push(*sample);
            if let Some(last) = self.samples.last_mut() {
                fix(last);
            }
        }
    }

    /// Counts one offered sample and says whether it is kept (it falls on the current
    /// stride), with room made for it.
    #[inline]
    fn keeps_next(&mut self) -> bool {
        let keep = self.pushed.is_multiple_of(self.stride);
        self.pushed += 1;
        if !keep {
            return false;
        }
        if self.samples.len() >= self.capacity {
            self.halve();
            // The sample that triggered the halving is kept only when it is on the new stride.
            if !(self.pushed - 1).is_multiple_of(self.stride) {
                return false;
            }
        }
        if self.samples.len() == GROW_WHOLE_AT && self.samples.capacity() < self.capacity {
            self.samples
                .reserve_exact(self.capacity - self.samples.len());
        }
        true
    }

    /// Drops every other kept sample (the first stays) and doubles the stride.
    fn halve(&mut self) {
        self.thin(2);
    }

    /// Keeps every `k`-th kept sample (the first stays) and multiplies the stride by `k`
    /// (`k` ≥ 1).
    fn thin(&mut self, k: u64) {
        if k <= 1 {
            return;
        }
        let mut i = 0u64;
        self.samples.retain(|_| {
            let keep = i.is_multiple_of(k);
            i += 1;
            keep
        });
        self.stride = self.stride.saturating_mul(k);
    }

    /// The most samples this timeline keeps.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Kept samples are one in `stride` offered ones (1 until the capacity was first reached;
    /// a power of two).
    pub fn stride(&self) -> u64 {
        self.stride
    }

    /// Sets the most samples kept (at least 2). Raising it keeps the current stride (dropped
    /// samples stay dropped; later ones are kept more densely only once the stride allows);
    /// lowering it below the kept count halves the kept samples until they fit.
    pub fn set_capacity(&mut self, capacity: usize) {
        let lower = capacity < self.capacity;
        self.capacity = capacity.max(2);
        while self.samples.len() > self.capacity {
            self.halve();
        }
        if lower {
            // the memory too: a list that grew to the old bound gives back what it cannot use
            self.samples.shrink_to(self.capacity);
        }
    }

    /// The kept samples as a timeline of stride `stride` would keep them (a multiple of this
    /// one's stride: every `stride / self.stride()`-th, the first included), to bring two
    /// timelines of different strides to one density.
    pub fn kept_at(&self, stride: u64) -> impl Iterator<Item = &T> {
        let step = usize::try_from(stride / self.stride).unwrap_or(usize::MAX);
        self.samples.iter().step_by(step.max(1))
    }

    /// The kept samples, in push order.
    pub fn samples(&self) -> &[T] {
        &self.samples
    }

    /// How many samples were offered (kept or not).
    pub fn pushed(&self) -> u64 {
        self.pushed
    }

    /// True when samples were dropped to stay within the capacity.
    pub fn is_decimated(&self) -> bool {
        self.stride > 1
    }

    /// Joins `other`'s samples after this timeline's (rotated parts of one log, in order).
    ///
    /// Each kept sample stands for `stride` offered ones, so the two lists are first brought to
    /// the coarser of their strides (the finer one thinned), then concatenated, then halved
    /// until they fit the capacity: the joined list has one density over both parts, and
    /// [`Self::pushed`] counts the offered samples of both. (Offering `other`'s kept samples
    /// one by one, as [`Self::push`] would, thinned them a second time by this timeline's
    /// stride: a decimated second part was under-represented and under-counted.)
    pub fn append(&mut self, other: &Timeline<T>)
    where
        T: Clone,
    {
        let stride = self.stride.max(other.stride);
        self.thin(stride / self.stride);
        self.samples.extend(other.kept_at(stride).cloned());
        self.pushed = self.pushed.saturating_add(other.pushed);
        while self.samples.len() > self.capacity {
            self.halve();
        }
    }

    /// Mutable access to the kept samples (a value set aside is cleared in place).
    pub fn samples_mut(&mut self) -> &mut [T] {
        &mut self.samples
    }

    /// Mutable access to the last kept sample.
    pub fn last_mut(&mut self) -> Option<&mut T> {
        self.samples.last_mut()
    }
}

impl<T> Default for Timeline<T> {
    fn default() -> Self {
        Self::with_capacity(DEFAULT_CAPACITY)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_everything_below_capacity() {
        let mut t = Timeline::with_capacity(8);
        for i in 0..8 {
            t.push(i);
        }
        assert_eq!(t.samples(), &[0, 1, 2, 3, 4, 5, 6, 7]);
        assert!(!t.is_decimated());
    }

    #[test]
    fn decimates_evenly_and_stays_bounded() {
        let mut t = Timeline::with_capacity(8);
        for i in 0..100 {
            t.push(i);
        }
        assert!(t.samples().len() <= 8);
        assert_eq!(t.pushed(), 100);
        // kept samples are multiples of the final stride, spread over the whole range
        assert_eq!(t.samples(), &[0, 16, 32, 48, 64, 80, 96]);
        assert!(t.is_decimated());
    }

    fn filled(capacity: usize, values: std::ops::Range<u32>) -> Timeline<u32> {
        let mut t = Timeline::with_capacity(capacity);
        for i in values {
            t.push(i);
        }
        t
    }

    #[test]
    fn append_joins_decimated_parts_at_one_density() {
        // two parts of 100 lines, each kept at stride 16
        let mut a = filled(8, 0..100);
        let b = filled(8, 100..200);
        assert_eq!(b.samples(), &[100, 116, 132, 148, 164, 180, 196]);
        a.append(&b);
        // both parts at stride 16 (14 samples), halved once to fit: the second part keeps as
        // many samples as the first and every offered line is counted
        assert_eq!(a.samples(), &[0, 32, 64, 96, 116, 148, 180]);
        assert_eq!(a.stride(), 32);
        assert_eq!(a.pushed(), 200);
    }

    #[test]
    fn append_thins_the_denser_part_to_the_coarser_stride() {
        // a short first part (stride 1) and a long second one (stride 16)
        let mut a = filled(8, 0..4);
        let b = filled(8, 100..200);
        a.append(&b);
        assert_eq!(a.stride(), 16);
        assert_eq!(a.samples(), &[0, 100, 116, 132, 148, 164, 180, 196]);
        assert_eq!(a.pushed(), 104);
        // and the other way round: the long part's stride thins the short one
        let mut c = filled(8, 0..100);
        c.append(&filled(8, 200..216));
        assert_eq!(c.stride(), 16);
        assert_eq!(c.samples(), &[0, 16, 32, 48, 64, 80, 96, 200]);
        assert_eq!(c.pushed(), 116);
    }

    #[test]
    fn append_below_capacity_keeps_every_sample() {
        let mut a = filled(16, 0..5);
        a.append(&filled(16, 5..9));
        assert_eq!(a.samples(), &[0, 1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!((a.stride(), a.pushed()), (1, 9));
    }

    /// `push_copy` keeps what `push` of the changed copy keeps, through the halvings.
    #[test]
    fn push_copy_is_push_of_the_changed_copy() {
        let mut a = Timeline::with_capacity(8);
        let mut b = Timeline::with_capacity(8);
        for i in 0..100u32 {
            a.push((i, 0));
            b.push_copy(&(i, 7), |x| x.1 = 0);
        }
        assert_eq!(a.samples(), b.samples());
        assert_eq!((a.stride(), a.pushed()), (b.stride(), b.pushed()));
        assert_eq!(b.samples().first(), Some(&(0, 0)));
    }

    #[test]
    fn set_capacity_lowers_by_halving_and_raises_without_refilling() {
        let mut t = filled(16, 0..10);
        t.set_capacity(4);
        assert_eq!(t.samples(), &[0, 4, 8]);
        assert_eq!(t.stride(), 4);
        t.set_capacity(64);
        assert_eq!(t.capacity(), 64);
        for i in 10..20 {
            t.push(i);
        }
        // the stride stays 4: only every fourth later line is kept
        assert_eq!(t.samples(), &[0, 4, 8, 12, 16]);
    }
}
