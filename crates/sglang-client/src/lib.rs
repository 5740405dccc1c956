//! sglang-client (work in progress)
