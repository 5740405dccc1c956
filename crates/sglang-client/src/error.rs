//! The one error type of this crate.

/// Everything that can go wrong while talking to an SGLang server.
///
/// URLs in these errors never carry credentials (user info is stripped,
/// see [`redact_url`]) and the API key is never part of any message.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The TCP/HTTP connection could not be established (refused, DNS,
    /// unreachable). Retried by the batch runner.
    #[error("cannot connect to {url}")]
    Connect {
        /// Redacted URL that was requested.
        url: String,
    },
    /// The connect or total timeout of the request elapsed.
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
    /// A local I/O error (reading a payload file, building the client).
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
}

impl ClientError {
    /// True for the errors a retry may cure: connect errors, transfer
    /// breaks, HTTP 429 and 5xx. Timeouts, 4xx and decode errors are not
    /// retried (a timed-out generation would most likely time out again and
    /// costs the server the same work twice).
    pub fn is_retryable(&self) -> bool {
        match self {
            ClientError::Connect { .. } | ClientError::Transport { .. } => true,
            ClientError::Status { status, .. } => *status == 429 || *status >= 500,
            _ => false,
        }
    }

    /// A short machine-friendly kind: `connect`, `timeout`, `status`,
    /// `decode`, `no_data`, `transport`, `io`.
    pub fn kind(&self) -> &'static str {
        match self {
            ClientError::Connect { .. } => "connect",
            ClientError::Timeout { .. } => "timeout",
            ClientError::Status { .. } => "status",
            ClientError::Decode { .. } => "decode",
            ClientError::NoMetrics { .. } => "no_data",
            ClientError::Transport { .. } => "transport",
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
