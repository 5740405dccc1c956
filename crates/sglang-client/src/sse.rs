//! A bounded, linear decoder of server-sent events (the `text/event-stream`
//! format of the WHATWG HTML standard, §9.2 "Server-sent events").
//!
//! SGLang's streaming endpoints (`python/sglang/srt/entrypoints/http_server.py`
//! and `openai/serving_chat.py`) send one `data: {json}` line and a blank line
//! per event. Only the `data` field is used; `event`, `id`, `retry` and
//! comment lines are skipped.
//!
//! Each byte is looked at a bounded number of times (the scan resumes where
//! it stopped; consumed bytes are dropped once they are half the buffer), so
//! a 100 MB event without newlines costs linear time, and memory stays under
//! about twice the per-event cap: a line or an event's data longer than the
//! cap is an error, not a larger buffer.

/// Why decoding stopped.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum SseError {
    /// A line or one event's data grew past the cap (bytes).
    TooLarge,
}

/// Incremental decoder: [`SseDecoder::push`] bytes as they come,
/// then call [`SseDecoder::next_event`] until it returns `Ok(None)`.
#[derive(Debug)]
pub(crate) struct SseDecoder {
    buf: Vec<u8>,
    /// Start of the bytes not yet consumed.
    pos: usize,
    /// Where the search for a line end resumes (≥ `pos`).
    scan: usize,
    /// The last line ended with `\r`: a `\n` right after it belongs to it.
    after_cr: bool,
    data: Vec<u8>,
    has_data: bool,
    max_event_bytes: usize,
}

impl SseDecoder {
    /// A decoder whose lines and events are at most `max_event_bytes` bytes.
    pub(crate) fn new(max_event_bytes: usize) -> Self {
        SseDecoder {
            buf: Vec::new(),
            pos: 0,
            scan: 0,
            after_cr: false,
            data: Vec::new(),
            has_data: false,
            max_event_bytes,
        }
    }

    /// Appends received bytes.
    pub(crate) fn push(&mut self, chunk: &[u8]) {
        if self.pos > 0 && self.pos * 2 >= self.buf.len() {
            self.buf.drain(..self.pos);
            self.scan -= self.pos;
            self.pos = 0;
        }
        self.buf.extend_from_slice(chunk);
    }

    /// The next complete event's data (its `data:` lines joined with `\n`),
    /// `Ok(None)` when more bytes are needed. Errors: [`SseError::TooLarge`].
    pub(crate) fn next_event(&mut self) -> Result<Option<Vec<u8>>, SseError> {
        loop {
            if self.after_cr && self.pos < self.buf.len() {
                if self.buf[self.pos] == b'\n' {
                    self.pos += 1;
                    self.scan = self.scan.max(self.pos);
                }
                self.after_cr = false;
            }
            let rest = &self.buf[self.scan..];
            let Some(off) = rest.iter().position(|&b| b == b'\n' || b == b'\r') else {
                self.scan = self.buf.len();
                if self.buf.len() - self.pos > self.max_event_bytes {
                    return Err(SseError::TooLarge);
                }
                return Ok(None);
            };
            let end = self.scan + off;
            let cr = self.buf[end] == b'\r';
            let (start, next) = (self.pos, end + 1);
            self.pos = next;
            self.scan = next;
            self.after_cr = cr;
            if end - start > self.max_event_bytes {
                return Err(SseError::TooLarge);
            }
            if let Some(ev) = self.line(start, end)? {
                return Ok(Some(ev));
            }
        }
    }

    /// Handles the line `buf[start..end]`; returns an event on a blank line.
    fn line(&mut self, start: usize, end: usize) -> Result<Option<Vec<u8>>, SseError> {
        let line = &self.buf[start..end];
        if line.is_empty() {
            if !self.has_data {
                return Ok(None);
            }
            self.has_data = false;
            if self.data.last() == Some(&b'\n') {
                self.data.pop();
            }
            return Ok(Some(std::mem::take(&mut self.data)));
        }
        if line[0] == b':' {
            return Ok(None);
        }
        let (field, value) = match line.iter().position(|&b| b == b':') {
            Some(i) => {
                let v = &line[i + 1..];
                (&line[..i], v.strip_prefix(b" ").unwrap_or(v))
            }
            None => (line, &line[line.len()..]),
        };
        if field == b"data" {
            if self.data.len() + value.len() + 1 > self.max_event_bytes {
                return Err(SseError::TooLarge);
            }
            self.data.extend_from_slice(value);
            self.data.push(b'\n');
            self.has_data = true;
        }
        Ok(None)
    }

    /// At the end of the stream: an event whose blank line never came
    /// (a last line without its terminator is taken as a line first).
    /// Errors: [`SseError::TooLarge`].
    pub(crate) fn finish(&mut self) -> Result<Option<Vec<u8>>, SseError> {
        if self.pos < self.buf.len() {
            let (start, end) = (self.pos, self.buf.len());
            self.pos = end;
            self.scan = end;
            if let Some(ev) = self.line(start, end)? {
                return Ok(Some(ev));
            }
        }
        if self.has_data {
            return self.line(self.pos, self.pos);
        }
        Ok(None)
    }

    /// Bytes held now (buffer and pending data), for tests of the bound.
    #[cfg(test)]
    fn held(&self) -> usize {
        self.buf.len() + self.data.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(d: &mut SseDecoder) -> Vec<String> {
        let mut out = Vec::new();
        while let Some(e) = d.next_event().unwrap() {
            out.push(String::from_utf8(e).unwrap());
        }
        out
    }

    #[test]
    fn sglang_events_split_anywhere() {
        // Two chunks of a real SGLang chat stream, cut at every byte offset.
        let text = "data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}\n\n: keep-alive\n\ndata: [DONE]\n\n";
        for cut in 0..text.len() {
            let mut d = SseDecoder::new(1 << 20);
            d.push(&text.as_bytes()[..cut]);
            let mut got = all(&mut d);
            d.push(&text.as_bytes()[cut..]);
            got.extend(all(&mut d));
            assert_eq!(
                got,
                vec![
                    "{\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}".to_string(),
                    "[DONE]".to_string()
                ],
                "cut at {cut}"
            );
        }
    }

    #[test]
    fn crlf_cr_and_multiline_data() {
        let mut d = SseDecoder::new(1024);
        d.push(b"data:a\r\ndata: b\r\rdata: c\r");
        assert_eq!(all(&mut d), vec!["a\nb".to_string()]);
        d.push(b"\n\r\n");
        assert_eq!(all(&mut d), vec!["c".to_string()]);
    }

    #[test]
    fn last_event_without_blank_line_is_kept_at_the_end() {
        let mut d = SseDecoder::new(1024);
        d.push(b"data: {\"x\":1}");
        assert_eq!(all(&mut d), Vec::<String>::new());
        assert_eq!(d.finish().unwrap(), Some(b"{\"x\":1}".to_vec()));
    }

    #[test]
    fn an_event_past_the_cap_is_an_error_and_memory_stays_bounded() {
        let mut d = SseDecoder::new(1 << 20);
        d.push(b"data: ");
        let chunk = vec![b'x'; 64 * 1024];
        let mut err = None;
        for _ in 0..64 {
            d.push(&chunk);
            assert!(d.held() <= 2 * (1 << 20) + chunk.len() + 16, "{}", d.held());
            if let Err(e) = d.next_event() {
                err = Some(e);
                break;
            }
        }
        assert_eq!(err, Some(SseError::TooLarge));
        // Many data lines that add up past the cap are caught too.
        let mut d = SseDecoder::new(100);
        for _ in 0..20 {
            d.push(b"data: 0123456789\n");
        }
        assert_eq!(d.next_event(), Err(SseError::TooLarge));
    }

    #[test]
    fn consumed_bytes_are_dropped() {
        let mut d = SseDecoder::new(1024);
        for i in 0..10_000 {
            d.push(format!("data: {i}\n\n").as_bytes());
            assert_eq!(all(&mut d), vec![i.to_string()]);
        }
        assert!(d.held() < 64, "{}", d.held());
    }
}
