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
    no_transparent_huge_pages();
    std::process::exit(throughput_doctor_cli::main_with_args(std::env::args_os()));
}

/// Turns transparent huge pages off for this process (Linux). mimalloc asks for them on its
/// arenas, so a block that is returned and taken again faults in, and zeroes, a whole 2 MiB
/// page where a few KiB are used: `diagnose` of the 512 MiB bench log peaked at 49-57 MB
/// with them and 42 MB without (the log's two halves as a directory: 61-68 MB against 52 MB),
/// in the same time (596 ms, mean of 15 runs each, `hyperfine`). mimalloc's own switch
/// (`allow_thp`) is read when it starts, before `main`, so it is the kernel's that is used; a
/// kernel without it (before Linux 3.15) keeps its huge pages, which costs memory only.
fn no_transparent_huge_pages() {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: PR_SET_THP_DISABLE takes integer arguments only and changes a flag of this
        // process's memory map; it touches no memory of ours. Its result is not needed.
        let _ = unsafe { libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0) };
    }
}
