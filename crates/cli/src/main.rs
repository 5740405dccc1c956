//! The `throughput-doctor` binary.

fn main() {
    std::process::exit(throughput_doctor_cli::main_with_args(std::env::args_os()));
}
