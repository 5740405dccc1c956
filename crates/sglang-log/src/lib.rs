//! sglang-log (work in progress)
