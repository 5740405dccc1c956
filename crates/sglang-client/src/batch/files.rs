//! The batch runner's files: the prompts read, and the output scanned on resume and rewritten
//! without the failed records sent again.

use super::*;

/// One prompt from the input.
#[derive(Debug, Clone)]
pub(super) enum Payload {
    Prompt(String),
    Messages(Value),
}

#[derive(Debug)]
pub(super) struct Prompt {
    pub(super) id: String,
    pub(super) payload: Payload,
}

/// `(1-based line, reason)` of input lines not used.
pub(super) type InputProblems = Vec<(u64, String)>;

/// A prompt to send: its line in the input and its id. Its payload is read from the input
/// when its turn comes ([`PromptReader`]): a million prompts were held whole (1.08 GB).
#[derive(Debug)]
pub(super) struct Wanted {
    /// 1-based line of the input.
    pub(super) line: u64,
    /// Its id.
    pub(super) id: String,
}

/// The prompt of one input line, or why the line is not one.
fn parse_prompt(line: &str, api: BatchApi) -> Result<Prompt, String> {
    let v: Value = serde_json::from_str(line).map_err(|e| format!("not JSON: {e}"))?;
    let id = match v.get("id") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(x)) => x.to_string(),
        _ => return Err("no string or number `id`".into()),
    };
    let payload = if let Some(p) = v.get("prompt").and_then(Value::as_str) {
        Payload::Prompt(p.to_string())
    } else if let Some(m @ Value::Array(_)) = v.get("messages") {
        if api != BatchApi::Chat {
            return Err(format!("id {id}: `messages` needs the chat API"));
        }
        Payload::Messages(m.clone())
    } else {
        return Err(format!(
            "id {id}: neither a string `prompt` nor a `messages` array"
        ));
    };
    Ok(Prompt { id, payload })
}

/// Reads the input JSONL once, line by line, keeping no payload: the prompts to send (their
/// lines and ids, in input order) and the lines not used with their reasons (not JSON, no
/// id, no payload the API takes, a repeated id).
pub(super) fn read_input(
    path: &Path,
    api: BatchApi,
) -> Result<(Vec<Wanted>, InputProblems), BatchError> {
    let f = File::open(path).map_err(io_err(path))?;
    let mut wanted = Vec::new();
    let mut problems = Vec::new();
    let mut seen = HashSet::new();
    let mut reader = BufReader::with_capacity(1 << 16, f);
    let mut line = String::new();
    let mut n = 0u64;
    loop {
        line.clear();
        if reader.read_line(&mut line).map_err(io_err(path))? == 0 {
            break;
        }
        n += 1;
        if line.trim().is_empty() {
            continue;
        }
        let id = match parse_prompt(&line, api) {
            Ok(p) => p.id,
            Err(why) => {
                problems.push((n, why));
                continue;
            }
        };
        if !seen.insert(id.clone()) {
            problems.push((n, format!("duplicate id {id} (first occurrence kept)")));
            continue;
        }
        wanted.push(Wanted { line: n, id });
    }
    Ok((wanted, problems))
}

/// The prompts of the lines `wanted` (in input order), each read from the input when it is
/// taken: memory holds one line, not the file. A line that is no longer the prompt it was
/// when the input was first read (the file changed during the run) is an error naming the
/// file and line, recorded as that id's failure.
pub(super) struct PromptReader {
    path: PathBuf,
    api: BatchApi,
    reader: BufReader<File>,
    /// Lines of the input read so far.
    line_no: u64,
    line: String,
    wanted: std::vec::IntoIter<Wanted>,
}

impl PromptReader {
    /// Opens the input for the prompts `wanted`.
    pub(super) fn open(
        path: &Path,
        api: BatchApi,
        wanted: Vec<Wanted>,
    ) -> Result<Self, BatchError> {
        let f = File::open(path).map_err(io_err(path))?;
        Ok(PromptReader {
            path: path.to_path_buf(),
            api,
            reader: BufReader::with_capacity(1 << 16, f),
            line_no: 0,
            line: String::new(),
            wanted: wanted.into_iter(),
        })
    }

    /// The wanted line `w`, read on from where the last one was.
    fn read(&mut self, w: &Wanted) -> Result<Prompt, String> {
        let name = self.path.display();
        while self.line_no < w.line {
            self.line.clear();
            match self.reader.read_line(&mut self.line) {
                Ok(0) => {
                    return Err(format!(
                        "{name} line {}: the file ended before it (it changed during the run)",
                        w.line
                    ));
                }
                Ok(_) => self.line_no += 1,
                Err(e) => return Err(format!("{name} line {}: {e}", self.line_no + 1)),
            }
        }
        match parse_prompt(&self.line, self.api) {
            Ok(p) if p.id == w.id => Ok(p),
            Ok(p) => Err(format!(
                "{name} line {}: holds id {} now (it changed during the run)",
                w.line, p.id
            )),
            Err(why) => Err(format!(
                "{name} line {}: {why} (it changed during the run)",
                w.line
            )),
        }
    }
}

impl Iterator for PromptReader {
    /// The prompt, or its id and why its line could not be read again.
    type Item = Result<Prompt, (String, String)>;

    fn next(&mut self) -> Option<Self::Item> {
        let w = self.wanted.next()?;
        Some(self.read(&w).map_err(|why| (w.id, why)))
    }
}

/// What an existing output file holds.
#[derive(Debug, Default)]
pub(super) struct Existing {
    pub(super) ok_ids: HashSet<String>,
    pub(super) failed_ids: HashSet<String>,
    pub(super) problems: Vec<String>,
}

/// Rewrites `path` without the failed records of the ids in `drop_ids`
/// (to `path.tmp`, fsynced, locked, renamed over `path`). Returns how many
/// records were removed and the rewritten file, locked: the run holds it so
/// the output is never unlocked.
pub(super) fn remove_failed_records(
    path: &Path,
    drop_ids: &HashSet<String>,
) -> Result<(u64, File), BatchError> {
    #[derive(Deserialize)]
    struct Head {
        id: String,
        ok: bool,
    }
    let tmp = out_lock::tmp_path(path);
    let src = File::open(path).map_err(io_err(path))?;
    let mut reader = BufReader::with_capacity(1 << 20, src);
    let out = File::create(&tmp).map_err(io_err(&tmp))?;
    let mut w = std::io::BufWriter::with_capacity(1 << 20, out);
    let mut line = Vec::new();
    let mut removed = 0;
    loop {
        line.clear();
        if reader.read_until(b'\n', &mut line).map_err(io_err(path))? == 0 {
            break;
        }
        let drop = matches!(
            serde_json::from_slice::<Head>(&line),
            Ok(h) if !h.ok && drop_ids.contains(&h.id)
        );
        if drop {
            removed += 1;
        } else {
            w.write_all(&line).map_err(io_err(&tmp))?;
        }
    }
    let out = w.into_inner().map_err(|e| io_err(&tmp)(e.into_error()))?;
    out.sync_all().map_err(io_err(&tmp))?;
    // Locked before it takes the output's name: no instant without the lock.
    out.lock().map_err(io_err(&tmp))?;
    std::fs::rename(&tmp, path).map_err(io_err(path))?;
    Ok((removed, out))
}

/// Reads an existing output file; cuts a torn last line off.
pub(super) fn scan_output(path: &Path) -> Result<Existing, BatchError> {
    let mut ex = Existing::default();
    let mut f = match OpenOptions::new().read(true).write(true).open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(ex),
        Err(e) => return Err(io_err(path)(e)),
    };
    // Stream the file line by line (outputs of long runs hold hundreds of
    // MB of answers); remember where the last complete line ends.
    let mut reader = BufReader::with_capacity(1 << 20, &mut f);
    let mut line = Vec::new();
    let mut complete_len: u64 = 0;
    let mut line_no = 0usize;
    #[derive(Deserialize)]
    struct Head {
        id: String,
        ok: bool,
    }
    loop {
        line.clear();
        let n = reader.read_until(b'\n', &mut line).map_err(io_err(path))?;
        if n == 0 {
            break;
        }
        if line.last() != Some(&b'\n') {
            ex.problems.push(format!(
                "{}: torn last line ({n} bytes without a newline, left by an interrupted write) cut off",
                path.display()
            ));
            break;
        }
        complete_len += n as u64;
        line_no += 1;
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match serde_json::from_slice::<Head>(&line) {
            Ok(h) => {
                if h.ok {
                    ex.failed_ids.remove(&h.id);
                    ex.ok_ids.insert(h.id);
                } else if !ex.ok_ids.contains(&h.id) {
                    ex.failed_ids.insert(h.id);
                }
            }
            Err(e) => ex.problems.push(format!(
                "{} line {line_no}: not a record ({e}); ignored",
                path.display()
            )),
        }
    }
    drop(reader);
    if f.metadata().map_err(io_err(path))?.len() > complete_len {
        f.set_len(complete_len).map_err(io_err(path))?;
        f.seek(SeekFrom::End(0)).map_err(io_err(path))?;
        f.sync_all().map_err(io_err(path))?;
    }
    Ok(ex)
}
