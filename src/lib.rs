//! `throughput-doctor`: why is an SGLang server slower than expected?
//!
//! This root package only re-exports the workspace crates so that benchmarks and
//! end-to-end tests can reach them through one name. The binary lives in `crates/cli`.

pub use diagnosis;
pub use gpu_probe;
pub use kv_capacity;
pub use sglang_client;
pub use sglang_log;
pub use throughput_stats;
