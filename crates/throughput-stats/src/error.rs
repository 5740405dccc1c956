//! The one error type of this crate.

use thiserror::Error;

/// Why a statistic could not be computed.
///
/// Every public function validates its input and returns one of these instead of panicking
/// or producing NaN. Indices refer to the position in the slice the caller passed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum StatsError {
    /// The input held no samples (or none fell in the requested window where one is required).
    #[error("no samples")]
    Empty,
    /// A timestamp went backwards: sample `index` is earlier than sample `index - 1`.
    #[error("timestamps go backwards at sample {index}")]
    NonMonotonic {
        /// Position of the first sample whose time is earlier than its predecessor's.
        index: usize,
    },
    /// A time or value at `index` is NaN or infinite.
    #[error("non-finite time or value at sample {index}")]
    NonFinite {
        /// Position of the first non-finite sample.
        index: usize,
    },
    /// An argument is outside its domain (the message names it), or a result would overflow f64.
    #[error("invalid argument: {0}")]
    InvalidArgument(&'static str),
}
