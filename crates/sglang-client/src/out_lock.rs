//! One run per output, by the output's identity: the lock of `run-batch`'s `--out`.
//!
//! A lock file named after the output's path (`OUT.lock`) is passed by another name for the
//! same file: a symbolic link (another path text) or a hard link (another directory entry of
//! the same inode). So a run takes two locks for its whole length: `OUT.lock` beside the
//! output's real path (symbolic links resolved), and an OS lock on the output file itself,
//! which is its device and inode whatever name opened it. A resume that rewrites the output
//! locks the rewritten file before renaming it into place, so the output is never unlocked.
//! The locks are released when the run ends, even by `kill -9`.

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};

use crate::batch::BatchError;

/// The locks of one run's output; released when dropped.
#[derive(Debug)]
pub(crate) struct OutputLock {
    files: Vec<File>,
}

impl OutputLock {
    /// Keeps `f` (already locked) locked until the run ends.
    pub(crate) fn hold(&mut self, f: File) {
        self.files.push(f);
    }
}

/// The output's real path: symbolic links resolved (of the file, or of its folder when the
/// file does not exist yet); the path as given when neither resolves.
pub(crate) fn real_path(out: &Path) -> PathBuf {
    if let Ok(p) = std::fs::canonicalize(out) {
        return p;
    }
    let parent = match out.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    match (std::fs::canonicalize(parent), out.file_name()) {
        (Ok(dir), Some(name)) => dir.join(name),
        _ => out.to_path_buf(),
    }
}

/// `OUT` with `suffix` appended to its file name.
fn beside(out: &Path, suffix: &str) -> PathBuf {
    let mut name = out.file_name().unwrap_or_default().to_os_string();
    name.push(suffix);
    out.with_file_name(name)
}

/// `OUT.lock`, the lock file beside the output.
pub(crate) fn lock_path(out: &Path) -> PathBuf {
    beside(out, ".lock")
}

/// `OUT.tmp`, where a resume writes the output before renaming it into place.
pub(crate) fn tmp_path(out: &Path) -> PathBuf {
    beside(out, ".tmp")
}

/// Takes the locks of `out` (its real path, see [`real_path`]): `OUT.lock`, then the output
/// file itself (created empty when missing). [`BatchError::Locked`] when another run holds
/// either.
pub(crate) fn lock_output(out: &Path) -> Result<OutputLock, BatchError> {
    let lock = lock_path(out);
    let mut held = OutputLock { files: Vec::new() };
    for path in [&lock, &out.to_path_buf()] {
        let f = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(path)
            .map_err(|source| BatchError::Io {
                path: path.clone(),
                source,
            })?;
        match f.try_lock() {
            Ok(()) => held.files.push(f),
            Err(std::fs::TryLockError::WouldBlock) => {
                return Err(BatchError::Locked {
                    output: out.to_path_buf(),
                    lock: path.clone(),
                });
            }
            Err(std::fs::TryLockError::Error(source)) => {
                return Err(BatchError::Io {
                    path: path.clone(),
                    source,
                });
            }
        }
    }
    Ok(held)
}

/// True when `a` and `b` name the same file (same device and inode, or the
/// same canonical path when `b` does not exist yet).
pub(crate) fn same_file(a: &Path, b: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        if let (Ok(x), Ok(y)) = (std::fs::metadata(a), std::fs::metadata(b)) {
            return x.dev() == y.dev() && x.ino() == y.ino();
        }
    }
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(x), Ok(y)) => x == y,
        _ => false,
    }
}
