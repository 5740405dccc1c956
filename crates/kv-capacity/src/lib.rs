//! kv-capacity (work in progress)
