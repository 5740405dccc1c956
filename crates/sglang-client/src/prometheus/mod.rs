//! A client of the Prometheus HTTP API (`/api/v1/series`, `/api/v1/query`,
//! `/api/v1/query_range`), for reading a fleet's SGLang history from the
//! Prometheus that scrapes it.
//!
//! No request is too large for Prometheus: a range query asks for at most
//! [`MAX_POINTS_PER_SERIES`] points per series (Prometheus refuses more
//! than 11,000, `api/v1` `exceeded maximum resolution`), longer ranges are
//! split in time and the pieces joined, and callers split by instance.
//! Requests are sent as `POST` forms so a long selector never meets a URL
//! length limit.
//!
//! No answer is too large for this process: answers are decoded as they arrive, never held
//! whole (`answer.rs`), and one answer may hold at most [`MAX_SERIES_PER_QUERY`] series,
//! [`MAX_POINTS_PER_SERIES_ANSWER`] points in a series, [`MAX_POINTS_PER_QUERY`] points in
//! all and [`MAX_BODY_BYTES`] bytes; past any of them the answer is an error naming the cap
//! ([`PromError::TooManySeries`], [`PromError::TooManyPoints`], [`PromError::TooLarge`]).

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use crate::error::redact_url;

mod answer;
mod time;

pub use time::parse_time;

/// Most points one range query asks for per series (Prometheus' own limit
/// is 11,000).
pub const MAX_POINTS_PER_SERIES: u64 = 10_000;
/// Largest response body read, bytes (256 MiB). The body is decoded as it arrives, so this
/// bounds the time spent on one answer, not the memory.
pub const MAX_BODY_BYTES: usize = 256 << 20;
/// Most series one answer may hold (series). The fleet view asks for one instance's SGLang
/// series per range query (13 names per rank; a server of 64 DP ranks × 8 TP ranks that
/// exports every scheduler holds about 7,000) and finds the instances with one series each;
/// 2 million series held 1.6-3.2 GB (issue 30 C17).
pub const MAX_SERIES_PER_QUERY: usize = 10_000;
/// Most points one series of an answer may hold (points): Prometheus refuses a range query
/// of more than 11,000 points per series, so more is not its answer.
pub const MAX_POINTS_PER_SERIES_ANSWER: usize = 11_000;
/// Most points one answer may hold, all series together (points; 16 bytes each once read,
/// so 80 MB): 500 series at the [`MAX_POINTS_PER_SERIES`] a piece of a range query asks for.
pub const MAX_POINTS_PER_QUERY: usize = 5_000_000;

/// The most of an error answer read, bytes (64 KiB): its `errorType` and `error`.
const ERROR_BODY_BYTES: usize = 64 << 10;

/// A label set (`__name__` included when Prometheus returns it).
pub type Labels = BTreeMap<String, String>;

/// Errors of [`PrometheusClient`]. Each names the URL (credentials removed).
#[derive(Debug, thiserror::Error)]
pub enum PromError {
    /// The base URL is not an `http://` or `https://` URL.
    #[error("{url}: not an http:// or https:// URL (add http://)")]
    BadUrl {
        /// What was given.
        url: String,
    },
    /// Connecting or reading failed (refused, reset, timeout).
    #[error("{url}: {detail}")]
    Transport {
        /// Redacted URL.
        url: String,
        /// What went wrong.
        detail: String,
    },
    /// Prometheus answered with an error (HTTP status and its `error` text).
    #[error("{url} answered HTTP {status}: {error}")]
    Api {
        /// Redacted URL.
        url: String,
        /// HTTP status.
        status: u16,
        /// Prometheus' `errorType: error`, or the body's start.
        error: String,
    },
    /// The body is larger than [`MAX_BODY_BYTES`].
    #[error("{url}: response larger than {limit} bytes")]
    TooLarge {
        /// Redacted URL.
        url: String,
        /// The cap, bytes.
        limit: usize,
    },
    /// The answer holds more than [`MAX_SERIES_PER_QUERY`] series.
    #[error(
        "{url}: the answer holds more than {limit} series (the most one query may return); not read: narrow the selector"
    )]
    TooManySeries {
        /// Redacted URL.
        url: String,
        /// The cap, series.
        limit: usize,
    },
    /// The answer holds more points than [`MAX_POINTS_PER_SERIES_ANSWER`] in one series or
    /// [`MAX_POINTS_PER_QUERY`] in all.
    #[error(
        "{url}: the answer holds more than {limit} points {what}; not read: shorten the window or raise the step"
    )]
    TooManyPoints {
        /// Redacted URL.
        url: String,
        /// `in one series` or `in all`.
        what: &'static str,
        /// The cap, points.
        limit: usize,
    },
    /// The body is not the JSON the API documents.
    #[error("{url}: not a Prometheus API answer: {detail}")]
    Decode {
        /// Redacted URL.
        url: String,
        /// The decoder's message.
        detail: String,
    },
}

/// One series of a range query: its labels and `(unix seconds, value)` points.
#[derive(Debug, Clone, PartialEq)]
pub struct RangeSeries {
    /// Labels (with `__name__`).
    pub labels: Labels,
    /// Points in time order; NaN where Prometheus wrote `NaN`.
    pub points: Vec<(f64, f64)>,
}

/// A Prometheus server.
#[derive(Debug, Clone)]
pub struct PrometheusClient {
    http: reqwest::Client,
    base: String,
    /// Requests sent so far (for reports and tests of the splitting).
    requests: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

/// `application/x-www-form-urlencoded` encoding of one value.
fn form_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len() * 3 / 2);
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char)
            }
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// A PromQL string literal (double-quoted, `\` and `"` escaped).
pub fn promql_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Adds matchers to a selector: `{job="sglang"}` + `instance="a"` →
/// `{job="sglang",instance="a"}`. An empty selector counts as `{}`.
///
/// Errors: the selector is not of the form `{...}` (the reason as text).
pub fn selector_with(selector: &str, extra: &[String]) -> Result<String, String> {
    let s = selector.trim();
    let inner = if s.is_empty() {
        ""
    } else {
        s.strip_prefix('{')
            .and_then(|r| r.strip_suffix('}'))
            .ok_or_else(|| format!("selector {s:?} is not of the form {{label=\"value\",...}}"))?
            .trim()
            .trim_end_matches(',')
    };
    let mut parts: Vec<&str> = Vec::new();
    if !inner.is_empty() {
        parts.push(inner);
    }
    parts.extend(extra.iter().map(String::as_str));
    Ok(format!("{{{}}}", parts.join(",")))
}

/// What a transport error says, in a few words.
fn transport_detail(e: &reqwest::Error) -> String {
    if e.is_timeout() {
        "timed out".to_string()
    } else if e.is_connect() {
        "cannot connect".to_string()
    } else {
        e.to_string()
    }
}

impl PrometheusClient {
    /// A client of the Prometheus at `base_url` (e.g. `http://127.0.0.1:9090`),
    /// each request limited to `timeout`.
    ///
    /// Errors: [`PromError::BadUrl`], or [`PromError::Transport`] when the
    /// HTTP client cannot be built.
    pub fn new(base_url: &str, timeout: Duration) -> Result<Self, PromError> {
        let base = base_url.trim_end_matches('/').to_string();
        if !(base.starts_with("http://") || base.starts_with("https://")) {
            return Err(PromError::BadUrl {
                url: redact_url(base_url),
            });
        }
        let http = reqwest::Client::builder()
            .timeout(timeout)
            .connect_timeout(Duration::from_secs(5))
            .build()
            .map_err(|e| PromError::Transport {
                url: redact_url(&base),
                detail: e.to_string(),
            })?;
        Ok(PrometheusClient {
            http,
            base,
            requests: Default::default(),
        })
    }

    /// Requests sent so far.
    pub fn requests_sent(&self) -> u64 {
        self.requests.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Sends `form` to `path` and decodes the answer as it arrives ([`answer::decode`]).
    async fn post(
        &self,
        path: &str,
        form: &[(&str, String)],
        shape: answer::Shape,
    ) -> Result<answer::Data, PromError> {
        let url = format!("{}{path}", self.base);
        let shown = redact_url(&url);
        let body: Vec<String> = form
            .iter()
            .map(|(k, v)| format!("{}={}", form_encode(k), form_encode(v)))
            .collect();
        self.requests
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut resp = self
            .http
            .post(&url)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(body.join("&"))
            .send()
            .await
            .map_err(|e| PromError::Transport {
                url: shown.clone(),
                detail: transport_detail(&e),
            })?;
        let status = resp.status().as_u16();
        if !(200..300).contains(&status) {
            // Only the start of an error answer is read: its `errorType` and `error`.
            let mut head: Vec<u8> = Vec::new();
            while let Ok(Some(chunk)) = resp.chunk().await {
                let room = ERROR_BODY_BYTES.saturating_sub(head.len());
                head.extend_from_slice(&chunk[..chunk.len().min(room)]);
                if head.len() >= ERROR_BODY_BYTES {
                    break;
                }
            }
            #[derive(serde::Deserialize)]
            struct ErrorAnswer {
                #[serde(rename = "errorType")]
                error_type: Option<String>,
                error: Option<String>,
            }
            let error = match serde_json::from_slice::<ErrorAnswer>(&head) {
                Ok(e) => format!(
                    "{}: {}",
                    e.error_type.unwrap_or_default(),
                    e.error.unwrap_or_default()
                ),
                Err(_) => crate::error::excerpt(&String::from_utf8_lossy(&head), 200),
            };
            return Err(PromError::Api {
                url: shown,
                status,
                error,
            });
        }
        let env = answer::decode(resp, &shown, shape).await?;
        if env.status.as_deref() != Some("success") {
            return Err(PromError::Api {
                url: shown,
                status,
                error: format!(
                    "{}: {}",
                    env.error_type.unwrap_or_default(),
                    env.error.unwrap_or_default()
                ),
            });
        }
        env.data.ok_or(PromError::Decode {
            url: shown,
            detail: "no data".into(),
        })
    }

    /// `POST /api/v1/series`: the label sets of the series matching any of
    /// `matchers` between `start` and `end` (Unix seconds).
    ///
    /// Errors: any [`PromError`]; more than [`MAX_SERIES_PER_QUERY`] series is
    /// [`PromError::TooManySeries`].
    pub async fn series(
        &self,
        matchers: &[String],
        start: f64,
        end: f64,
    ) -> Result<Vec<Labels>, PromError> {
        let mut form: Vec<(&str, String)> =
            matchers.iter().map(|m| ("match[]", m.clone())).collect();
        form.push(("start", format!("{start:.3}")));
        form.push(("end", format!("{end:.3}")));
        match self
            .post("/api/v1/series", &form, answer::Shape::LabelSets)
            .await?
        {
            answer::Data::LabelSets(l) => Ok(l),
            answer::Data::Result { .. } => Err(self.decode_error("/api/v1/series", "a result")),
        }
    }

    /// The result of a query whose `resultType` must be `want`.
    async fn result(
        &self,
        path: &str,
        form: &[(&str, String)],
        want: &str,
    ) -> Result<Vec<answer::Item>, PromError> {
        match self.post(path, form, answer::Shape::Result).await? {
            answer::Data::Result {
                result_type,
                result,
            } if result_type.as_deref() == Some(want) => Ok(result),
            answer::Data::Result { result_type, .. } => Err(self.decode_error(
                path,
                &format!(
                    "resultType {} (expected {want})",
                    result_type.as_deref().unwrap_or("missing")
                ),
            )),
            answer::Data::LabelSets(_) => Err(self.decode_error(path, "a list of label sets")),
        }
    }

    fn decode_error(&self, path: &str, detail: &str) -> PromError {
        PromError::Decode {
            url: redact_url(&format!("{}{path}", self.base)),
            detail: detail.to_string(),
        }
    }

    /// `POST /api/v1/query`: an instant query at `time` (Unix seconds); each result's labels
    /// and value.
    ///
    /// Errors: any [`PromError`]; a result that is not an instant vector is
    /// [`PromError::Decode`].
    pub async fn query(&self, query: &str, time: f64) -> Result<Vec<(Labels, f64)>, PromError> {
        let form = [("query", query.to_string()), ("time", format!("{time:.3}"))];
        Ok(self
            .result("/api/v1/query", &form, "vector")
            .await?
            .into_iter()
            .filter_map(|r| Some((r.metric, r.points.first()?.1)))
            .collect())
    }

    /// `POST /api/v1/query_range` over one piece of time (at most
    /// [`MAX_POINTS_PER_SERIES`] points: the caller splits).
    async fn query_range_once(
        &self,
        query: &str,
        start: f64,
        end: f64,
        step_s: f64,
    ) -> Result<Vec<RangeSeries>, PromError> {
        let form = [
            ("query", query.to_string()),
            ("start", format!("{start:.3}")),
            ("end", format!("{end:.3}")),
            ("step", format!("{step_s}")),
        ];
        Ok(self
            .result("/api/v1/query_range", &form, "matrix")
            .await?
            .into_iter()
            .map(|m| RangeSeries {
                labels: m.metric,
                points: m.points,
            })
            .collect())
    }

    /// `POST /api/v1/query_range` from `start` to `end` (Unix seconds) every
    /// `step_s` seconds, split in time so that no request asks for more than
    /// [`MAX_POINTS_PER_SERIES`] points per series; pieces of one series
    /// are joined in time order.
    ///
    /// Errors: any [`PromError`] of a piece.
    pub async fn query_range(
        &self,
        query: &str,
        start: f64,
        end: f64,
        step_s: f64,
    ) -> Result<Vec<RangeSeries>, PromError> {
        let step = if step_s.is_finite() && step_s > 0.0 {
            step_s
        } else {
            15.0
        };
        let per = MAX_POINTS_PER_SERIES as f64 * step;
        let mut out: Vec<RangeSeries> = Vec::new();
        let mut index: HashMap<Labels, usize> = HashMap::new();
        let mut t0 = start;
        while t0 <= end {
            // Pieces end one step before the next begins: no point twice.
            let t1 = (t0 + per - step).min(end);
            for s in self.query_range_once(query, t0, t1, step).await? {
                match index.get(&s.labels) {
                    Some(&i) => out[i].points.extend(s.points),
                    None => {
                        index.insert(s.labels.clone(), out.len());
                        out.push(s);
                    }
                }
            }
            t0 = t1 + step;
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selectors_and_literals() {
        assert_eq!(
            selector_with("{job=\"sglang\"}", &["instance=\"a:1\"".into()]).unwrap(),
            "{job=\"sglang\",instance=\"a:1\"}"
        );
        assert_eq!(selector_with("", &[]).unwrap(), "{}");
        assert_eq!(selector_with(" {a=\"b\",} ", &[]).unwrap(), "{a=\"b\"}");
        assert!(selector_with("job=\"x\"", &[]).is_err());
        assert_eq!(promql_string("a\"b\\c"), "\"a\\\"b\\\\c\"");
        assert_eq!(form_encode("{a=\"b c\"}&"), "%7Ba%3D%22b+c%22%7D%26");
        assert!(answer::parse_point("NaN").is_nan());
        assert_eq!(answer::parse_point("1.5"), 1.5);
    }

    #[test]
    fn a_bad_url_says_add_http() {
        let e = PrometheusClient::new("localhost:9090", Duration::from_secs(1)).unwrap_err();
        assert!(e.to_string().contains("add http://"), "{e}");
    }
}
