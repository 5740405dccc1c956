//! The one error type of this crate.

/// Everything that can go wrong computing capacity figures.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CapacityError {
    /// `config.json` is not valid JSON or not an object.
    #[error("config.json: {0}")]
    Json(String),
    /// A field the computation needs is absent or has the wrong type.
    #[error("config.json: field `{field}` {problem}")]
    BadField {
        /// Field name (dotted when nested, e.g. `text_config.num_hidden_layers`).
        field: String,
        /// What is wrong with it.
        problem: String,
    },
    /// The model or setting uses a KV layout this crate does not model yet (hybrid SWA pools,
    /// mamba/linear-attention state pools, the DSA indexer cache, fp4/mxfp8 KV, fp32 KV). Named
    /// explicitly instead of guessing a number.
    #[error("not supported yet: {what}")]
    Unsupported {
        /// What is not modelled, and why it matters.
        what: String,
    },
    /// A parameter is out of range (zero TP size, fraction outside (0, 1], …).
    #[error("invalid input: {0}")]
    Invalid(String),
    /// `/proc/meminfo` text could not be read.
    #[error("/proc/meminfo line {line}: {problem}")]
    MemInfo {
        /// 1-based line number (0 when the whole text is at fault).
        line: usize,
        /// What is wrong.
        problem: String,
    },
}
