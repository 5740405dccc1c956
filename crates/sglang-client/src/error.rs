//! The one error type of this crate.

/// Everything that can go wrong while talking to an SGLang server.
///
/// URLs in these errors never carry credentials (user info is stripped,
/// see [`redact_url`]) and the API key is never part of any message.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The TCP/HTTP connection could not be established (refused, DNS,
    /// unreachable, or not within the connect timeout). Retried by the batch
    /// runner: the request was never sent.
    #[error("cannot connect to {url}")]
    Connect {
        /// Redacted URL that was requested.
        url: String,
    },
    /// The total timeout of the request elapsed (after it was sent).
    #[error("timed out waiting for {url}")]
    Timeout {
        /// Redacted URL that was requested.
        url: String,
    },
    /// The server answered with a non-2xx HTTP status.
    #[error("{url} answered HTTP {status}: {body_excerpt}")]
    Status {
        /// Redacted URL that was requested.
        url: String,
        /// HTTP status code (e.g. 429, 500).
        status: u16,
        /// The first 300 characters of the response body.
        body_excerpt: String,
        /// Value of a `Retry-After` header in seconds, when the server sent one.
        retry_after_s: Option<f64>,
    },
    /// The response body could not be decoded as the expected JSON shape.
    #[error("cannot decode the response of {endpoint}: {source} (body starts: {excerpt})")]
    Decode {
        /// Endpoint path, e.g. `/v1/chat/completions`.
        endpoint: String,
        /// The first 200 characters of the offending body or event.
        excerpt: String,
        /// The JSON error.
        #[source]
        source: serde_json::Error,
    },
    /// `/metrics` answered 2xx but held no usable `sglang:` series (an HTML
    /// page, junk, a proxy's error text): no data, never zeros.
    #[error("{url} holds no SGLang metrics ({lines} lines, {problems} unreadable{first})")]
    NoMetrics {
        /// Redacted URL that was requested.
        url: String,
        /// Lines in the body.
        lines: usize,
        /// Unreadable lines or rejected values.
        problems: usize,
        /// `; first: line N: reason` when there is a problem to show.
        first: String,
    },
    /// The connection broke after the response started (reset mid-stream,
    /// truncated body, a stream that ended before `[DONE]`). Retried by the
    /// batch runner.
    #[error("transfer from {url} broke: {detail}")]
    Transport {
        /// Redacted URL that was requested.
        url: String,
        /// What happened, from the HTTP stack.
        detail: String,
    },
    /// The response body (or one server-sent event) is larger than the
    /// cap set in [`crate::ClientConfig`]; reading stopped at the cap, so a
    /// hostile or broken server cannot grow this process's memory.
    #[error("{url}: {what} larger than the cap of {} (stopped reading there)", human_bytes(*.limit_bytes))]
    TooLarge {
        /// Redacted URL that was requested.
        url: String,
        /// What was too large: `response body`, `server-sent event`, ...
        what: &'static str,
        /// The cap, bytes.
        limit_bytes: u64,
    },
    /// A `/metrics` scrape holds more series, or more label sets of typed `sglang:` series,
    /// than the caps set in [`crate::ClientConfig`]; reading stopped there. One SGLang
    /// server exports a few thousand series over a few hundred label sets.
    #[error(
        "{url}: more than {limit} {what} in one scrape (stopped reading there): not one SGLang server's /metrics"
    )]
    TooManySeries {
        /// Redacted URL that was requested.
        url: String,
        /// What was counted: `series` or `label sets of sglang: series`.
        what: &'static str,
        /// The cap.
        limit: usize,
    },
    /// A stream sent no byte for longer than the stall timeout (the server
    /// is alive enough to have answered, then went silent). Retried by the
    /// batch runner.
    #[error("{url}: stream stalled: no byte for {stall_s} s")]
    Stalled {
        /// Redacted URL that was requested.
        url: String,
        /// The stall timeout that elapsed, seconds.
        stall_s: f64,
    },
    /// HTTP 2xx whose JSON has no usable answer (no `choices`, or
    /// `choices: []`): the request did not produce a completion.
    #[error("{url} answered HTTP 200 without an answer: {reason}")]
    NoAnswer {
        /// Redacted URL that was requested.
        url: String,
        /// What was missing, e.g. `no "choices" in the response`.
        reason: String,
    },
    /// A local I/O error (reading a payload file, building the client).
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
}

/// `1048576` → `1 MiB`; other sizes in bytes.
pub(crate) fn human_bytes(n: u64) -> String {
    const MIB: u64 = 1 << 20;
    const KIB: u64 = 1 << 10;
    if n >= MIB && n.is_multiple_of(MIB) {
        format!("{} MiB", n / MIB)
    } else if n >= KIB && n.is_multiple_of(KIB) {
        format!("{} KiB", n / KIB)
    } else {
        format!("{n} bytes")
    }
}

impl ClientError {
    /// True for the errors a retry may cure: connect errors, transfer
    /// breaks, HTTP 429 and 5xx. Timeouts, 4xx and decode errors are not
    /// retried (a timed-out generation would most likely time out again and
    /// costs the server the same work twice); a stalled stream is retried
    /// (the connection, not the generation, is what broke).
    pub fn is_retryable(&self) -> bool {
        match self {
            ClientError::Connect { .. }
            | ClientError::Transport { .. }
            | ClientError::Stalled { .. } => true,
            ClientError::Status { status, .. } => *status == 429 || *status >= 500,
            _ => false,
        }
    }

    /// A short machine-friendly kind: `connect`, `timeout`, `status`,
    /// `decode`, `no_data`, `transport`, `too_large`, `too_many_series`, `stalled`,
    /// `no_answer`, `io`.
    pub fn kind(&self) -> &'static str {
        match self {
            ClientError::Connect { .. } => "connect",
            ClientError::Timeout { .. } => "timeout",
            ClientError::Status { .. } => "status",
            ClientError::Decode { .. } => "decode",
            ClientError::NoMetrics { .. } => "no_data",
            ClientError::Transport { .. } => "transport",
            ClientError::TooLarge { .. } => "too_large",
            ClientError::TooManySeries { .. } => "too_many_series",
            ClientError::Stalled { .. } => "stalled",
            ClientError::NoAnswer { .. } => "no_answer",
            ClientError::Io(_) => "io",
        }
    }
}

/// Removes user info (`user:password@`) and the query string from a URL so
/// that it can be printed. Input that does not look like a URL is returned
/// unchanged.
pub fn redact_url(url: &str) -> String {
    let (scheme, rest) = match url.split_once("://") {
        Some(p) => p,
        None => return url.to_string(),
    };
    let (authority, path) = match rest.find('/') {
        Some(i) => rest.split_at(i),
        None => (rest, ""),
    };
    let host = authority.rsplit('@').next().unwrap_or(authority);
    let path = path.split('?').next().unwrap_or(path);
    format!("{scheme}://{host}{path}")
}

/// Cuts `s` to at most `n` characters (on a char boundary).
pub(crate) fn excerpt(s: &str, n: usize) -> String {
    match s.char_indices().nth(n) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redacts_credentials_and_query() {
        assert_eq!(
            redact_url("http://user:secret@host:30000/v1/chat?key=abc"),
            "http://host:30000/v1/chat"
        );
        assert_eq!(redact_url("http://127.0.0.1:1/x"), "http://127.0.0.1:1/x");
        assert_eq!(redact_url("not a url"), "not a url");
    }

    #[test]
    fn excerpt_cuts_on_char_boundary() {
        assert_eq!(excerpt("héllo", 2), "hé…");
        assert_eq!(excerpt("ab", 5), "ab");
    }
}
