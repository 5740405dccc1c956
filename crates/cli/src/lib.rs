//! The throughput-doctor command line (library part).
