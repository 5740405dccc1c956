//! Prints the lines `sglang-log` reads as [`Event::Other`] (not SGLang scheduler output, as far
//! as the parser knows), one per line as `FILE:LINE: TEXT`, so that signals it does not read
//! yet can be found with `grep` over real logs.
//!
//! `cargo run -q -p sglang-log --example others -- ../shared/testdata/real-3/*.log | grep -i prefetch`

use sglang_log::{Event, LogReader};
use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.is_empty() {
        eprintln!("usage: others <log file | - | file.gz>...");
        return ExitCode::from(2);
    }
    let mut failed = false;
    for a in args {
        let mut reader = match LogReader::open(&PathBuf::from(&a)) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("{e}");
                failed = true;
                continue;
            }
        };
        let res = reader.for_each(|rec| {
            if matches!(rec.event, Event::Other) {
                println!("{a}:{}: {}", rec.line_no, rec.message);
            }
        });
        if let Err(e) = res {
            eprintln!("{e}");
            failed = true;
        }
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
