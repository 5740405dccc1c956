//! Reading one log for `diagnose`: what the reader reports as damage becomes a warning instead
//! of an error. A gzip file that ends early (a copy cut short, a log still being compressed) or
//! is corrupt mid-way keeps every whole line decoded before the damage (the reader delivers
//! them and never the cut line): they are diagnosed, and a warning names the file, the lines
//! read and the compressed byte offset. A file whose start is not text (NUL bytes, control
//! bytes; [`sglang_log::HeadStats`]) gets a warning too.

use std::path::Path;

use sglang_log::{LogReader, ParseStats, ReadError, Record};

/// What reading one log produced.
#[derive(Debug, Default)]
pub struct LogRead {
    /// The parse counts of the lines read (all of them, or those before a gzip error).
    pub stats: ParseStats,
    /// Problems that did not stop the read, each naming the file (for stderr and the report).
    pub warnings: Vec<String>,
}

/// Read the log at `path` (`-` is stdin; gzip is detected by its magic bytes and may hold
/// several members) and call `push` for every record, in order.
///
/// A gzip stream that is truncated or corrupt does not fail the read: the whole lines before
/// the damage are delivered and a warning says where it stopped.
///
/// # Errors
/// [`ReadError::Open`] when the file cannot be opened or its first bytes cannot be read,
/// [`ReadError::NotAFile`] for a directory, [`ReadError::Read`] when reading a plain file or
/// stdin fails mid-way.
pub fn read_log(path: &Path, push: impl FnMut(&Record<'_>)) -> Result<LogRead, ReadError> {
    let name = path.display().to_string();
    let mut out = LogRead::default();
    match LogReader::open(path)?.for_each(push) {
        Ok(stats) => out.stats = stats,
        Err(ReadError::Gzip {
            line_no,
            compressed_offset,
            source,
            delivered,
            ..
        }) => {
            out.stats = *delivered;
            let of = std::fs::metadata(path)
                .map(|m| format!(" of {}", m.len()))
                .unwrap_or_default();
            let cut = match out.stats.held_back_bytes {
                0 => String::new(),
                n => format!("; the cut last line ({n} bytes) was left out"),
            };
            out.warnings.push(format!(
                "{name}: the gzip stream is truncated or corrupt after line {line_no} (near compressed byte {compressed_offset}{of}): {source}; \
                 only the {line_no} lines before it were diagnosed{cut}"
            ));
        }
        Err(e) => return Err(e),
    }
    check_text(&mut out, &name);
    Ok(out)
}

/// A log with lines but no SGLang event may be no log at all (a binary, a model file): say so
/// instead of reporting "N other lines". A log with SGLang lines is only checked for NUL bytes
/// in its head (a binary that embeds log text).
fn check_text(out: &mut LogRead, name: &str) {
    let Some(head) = out.stats.head.filter(|_| out.stats.lines > 0) else {
        return;
    };
    if out.stats.events == 0 {
        if let Some(why) = head.not_text_reason() {
            out.warnings
                .push(format!("{name} does not look like a text log ({why})"));
        }
    } else if head.nul_bytes > 0 {
        // SGLang lines inside binary data (a program that embeds a log, a core dump): read, but said.
        out.warnings.push(format!(
            "{name} holds binary data ({} NUL bytes in its first {} KiB); its {} SGLang lines were read anyway",
            head.nul_bytes,
            head.bytes.div_ceil(1024),
            out.stats.events
        ));
    }
}
