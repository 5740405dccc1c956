//! The `throughput-doctor` binary.

/// mimalloc: the batch client allocates per request; glibc malloc was ~20% of its CPU.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// mimalloc's `mi_option_purge_delay` (its index in `mi_option_e`, mimalloc.h v2 and v3;
/// libmimalloc-sys does not name it).
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

fn main() {
    // Return freed memory to the OS at once instead of after 10 ms: 64 requests receiving
    // capped bodies at once otherwise keep ~50 MB of freed blocks resident (147 MB peak against
    // a server sending 2 GB answers; 97 MB with this), past the 128 MB bound of the HTTP paths.
    // SAFETY: mi_option_set stores one integer option of the allocator; it has no
    // preconditions and is safe to call at any time from any thread.
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, 0) };
    std::process::exit(throughput_doctor_cli::main_with_args(std::env::args_os()));
}
