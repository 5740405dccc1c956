//! throughput-stats (work in progress)
