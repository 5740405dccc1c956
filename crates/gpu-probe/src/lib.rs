//! gpu-probe (work in progress)
