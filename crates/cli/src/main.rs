//! The `throughput-doctor` binary.

/// mimalloc: the batch client allocates per request; glibc malloc was ~20% of its CPU.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    std::process::exit(throughput_doctor_cli::main_with_args(std::env::args_os()));
}
