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
        let keep = self.pushed.is_multiple_of(self.stride);
        self.pushed += 1;
        if !keep {
            return;
        }
        if self.samples.len() == self.capacity {
            let mut i = 0;
            self.samples.retain(|_| {
                i += 1;
                i % 2 == 1
            });
            self.stride *= 2;
            // The sample that triggered the halving is kept only when it is on the new stride.
            if !(self.pushed - 1).is_multiple_of(self.stride) {
                return;
            }
        }
        self.samples.push(sample);
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

    /// Offer every kept sample of `other`, in order (joining rotated parts of one log).
    pub fn append(&mut self, other: &Timeline<T>)
    where
        T: Clone,
    {
        for x in other.samples() {
            self.push(x.clone());
        }
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
}
