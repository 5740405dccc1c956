//! A client of the Prometheus HTTP API (`/api/v1/series`,
//! `/api/v1/query_range`), for reading a fleet's SGLang history from the
//! Prometheus that scrapes it.
//!
//! No request is too large for Prometheus: a range query asks for at most
//! [`MAX_POINTS_PER_SERIES`] points per series (Prometheus refuses more
//! than 11,000, `api/v1` `exceeded maximum resolution`), longer ranges are
//! split in time and the pieces joined, and callers split by instance.
//! Requests are sent as `POST` forms so a long selector never meets a URL
//! length limit. Bodies are capped at [`MAX_BODY_BYTES`].

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use serde::Deserialize;

use crate::error::redact_url;

/// Most points one range query asks for per series (Prometheus' own limit
/// is 11,000).
pub const MAX_POINTS_PER_SERIES: u64 = 10_000;
/// Largest response body read, bytes (256 MiB).
pub const MAX_BODY_BYTES: usize = 256 << 20;

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

#[derive(Deserialize)]
struct Envelope<T> {
    status: String,
    data: Option<T>,
    #[serde(rename = "errorType")]
    error_type: Option<String>,
    error: Option<String>,
}

#[derive(Deserialize)]
struct MatrixData {
    #[serde(rename = "resultType")]
    result_type: String,
    result: Vec<MatrixItem>,
}

#[derive(Deserialize)]
struct VectorData {
    #[serde(rename = "resultType")]
    result_type: String,
    result: Vec<VectorItem>,
}

#[derive(Deserialize)]
struct VectorItem {
    metric: Labels,
    value: Point,
}

#[derive(Deserialize)]
struct MatrixItem {
    metric: Labels,
    #[serde(default)]
    values: Vec<Point>,
}

/// `[unix_seconds, "value"]`, decoded without keeping the string.
struct Point(f64, f64);

impl<'de> Deserialize<'de> for Point {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Point;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("[time, \"value\"]")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<Point, A::Error> {
                let t: f64 = seq
                    .next_element()?
                    .ok_or_else(|| serde::de::Error::invalid_length(0, &self))?;
                let v: &'de str = seq
                    .next_element()?
                    .ok_or_else(|| serde::de::Error::invalid_length(1, &self))?;
                Ok(Point(t, parse_point(v)))
            }
        }
        d.deserialize_seq(V)
    }
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

/// A time as the Prometheus HTTP API writes one (`start`, `end`, `time`): Unix seconds
/// (`1764576000`, `1764576000.5`; 0 to 10^11), or RFC 3339
/// (`YYYY-MM-DDTHH:MM:SS[.frac](Z|±HH:MM)`; `t` or a space for `T`, `z` for `Z`). Returns Unix
/// seconds. A leap second (`:60`) is read as the next minute's first second.
///
/// Errors: neither form (the message says which forms are read).
pub fn parse_time(s: &str) -> Result<f64, String> {
    let s = s.trim();
    if let Ok(v) = s.parse::<f64>() {
        if v.is_finite() && (0.0..1e11).contains(&v) {
            return Ok(v);
        }
        return Err(format!("{s}: not a Unix time in seconds"));
    }
    let bad = || format!("{s:?}: not a Unix time nor RFC 3339 (2026-12-01T08:00:00Z)");
    let b = s.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') {
        return Err(bad());
    }
    let num = |r: std::ops::Range<usize>| s.get(r).and_then(|x| x.parse::<i64>().ok());
    let (y, mo, d, h, mi, se) = (
        num(0..4).ok_or_else(bad)?,
        num(5..7).ok_or_else(bad)?,
        num(8..10).ok_or_else(bad)?,
        num(11..13).ok_or_else(bad)?,
        num(14..16).ok_or_else(bad)?,
        num(17..19).ok_or_else(bad)?,
    );
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || se > 60 {
        return Err(bad());
    }
    let mut rest = &s[19..];
    let mut frac = 0.0;
    if let Some(r) = rest.strip_prefix('.') {
        let n = r.bytes().take_while(u8::is_ascii_digit).count();
        frac = format!("0.{}", &r[..n]).parse().map_err(|_| bad())?;
        rest = &r[n..];
    }
    let offset_s = match rest {
        "Z" | "z" => 0,
        o if o.len() == 6 && (o.starts_with('+') || o.starts_with('-')) => {
            let hh: i64 = o[1..3].parse().map_err(|_| bad())?;
            let mm: i64 = o[4..6].parse().map_err(|_| bad())?;
            let sign = if o.starts_with('-') { -1 } else { 1 };
            sign * (hh * 3600 + mm * 60)
        }
        _ => return Err(bad()),
    };
    let days = days_from_civil(y, mo, d);
    Ok((days * 86_400 + h * 3600 + mi * 60 + se - offset_s) as f64 + frac)
}

/// Days from 1970-01-01 to the civil date `y-m-d` (proleptic Gregorian; negative before
/// 1970), after H. Hinnant's `days_from_civil`. `m` is 1-12, `d` 1-31 (not checked against
/// the month's length: 02-31 is 03-03, as the arithmetic gives).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let (yy, mp) = if m <= 2 { (y - 1, m + 9) } else { (y, m - 3) };
    let era = yy.div_euclid(400);
    let yoe = yy - era * 400;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn parse_point(v: &str) -> f64 {
    match v {
        "NaN" => f64::NAN,
        "+Inf" => f64::INFINITY,
        "-Inf" => f64::NEG_INFINITY,
        _ => v.parse().unwrap_or(f64::NAN),
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

    async fn post<T: for<'de> Deserialize<'de>>(
        &self,
        path: &str,
        form: &[(&str, String)],
    ) -> Result<T, PromError> {
        let url = format!("{}{path}", self.base);
        let shown = redact_url(&url);
        let body: Vec<String> = form
            .iter()
            .map(|(k, v)| format!("{}={}", form_encode(k), form_encode(v)))
            .collect();
        self.requests
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let transport = |e: reqwest::Error| PromError::Transport {
            url: shown.clone(),
            detail: if e.is_timeout() {
                "timed out".to_string()
            } else if e.is_connect() {
                "cannot connect".to_string()
            } else {
                e.to_string()
            },
        };
        let mut resp = self
            .http
            .post(&url)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(body.join("&"))
            .send()
            .await
            .map_err(transport)?;
        let status = resp.status().as_u16();
        let mut buf: Vec<u8> = Vec::new();
        while let Some(chunk) = resp.chunk().await.map_err(transport)? {
            if buf.len() + chunk.len() > MAX_BODY_BYTES {
                return Err(PromError::TooLarge {
                    url: shown,
                    limit: MAX_BODY_BYTES,
                });
            }
            buf.extend_from_slice(&chunk);
        }
        let env: Envelope<T> = match serde_json::from_slice(&buf) {
            Ok(e) => e,
            Err(e) => {
                if !(200..300).contains(&status) {
                    return Err(PromError::Api {
                        url: shown,
                        status,
                        error: crate::error::excerpt(&String::from_utf8_lossy(&buf), 200),
                    });
                }
                return Err(PromError::Decode {
                    url: shown,
                    detail: e.to_string(),
                });
            }
        };
        if env.status != "success" || !(200..300).contains(&status) {
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
    /// Errors: any [`PromError`].
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
        self.post("/api/v1/series", &form).await
    }

    /// `POST /api/v1/query`: an instant query at `time` (Unix seconds); each result's labels
    /// and value.
    ///
    /// Errors: any [`PromError`]; a result that is not an instant vector is
    /// [`PromError::Decode`].
    pub async fn query(&self, query: &str, time: f64) -> Result<Vec<(Labels, f64)>, PromError> {
        let form = [("query", query.to_string()), ("time", format!("{time:.3}"))];
        let data: VectorData = self.post("/api/v1/query", &form).await?;
        if data.result_type != "vector" {
            return Err(PromError::Decode {
                url: redact_url(&format!("{}/api/v1/query", self.base)),
                detail: format!("resultType {} (expected vector)", data.result_type),
            });
        }
        Ok(data
            .result
            .into_iter()
            .map(|r| (r.metric, r.value.1))
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
        let data: MatrixData = self.post("/api/v1/query_range", &form).await?;
        if data.result_type != "matrix" {
            return Err(PromError::Decode {
                url: redact_url(&format!("{}/api/v1/query_range", self.base)),
                detail: format!("resultType {} (expected matrix)", data.result_type),
            });
        }
        Ok(data
            .result
            .into_iter()
            .map(|m| RangeSeries {
                labels: m.metric,
                points: m.values.into_iter().map(|p| (p.0, p.1)).collect(),
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
        assert!(parse_point("NaN").is_nan());
        assert_eq!(parse_point("1.5"), 1.5);
    }

    #[test]
    fn rfc3339_and_unix_times() {
        assert_eq!(parse_time("0").unwrap(), 0.0);
        assert_eq!(parse_time("1764576000").unwrap(), 1_764_576_000.0);
        assert_eq!(parse_time("2025-12-01T08:00:00Z").unwrap(), 1_764_576_000.0);
        assert_eq!(
            parse_time("2025-12-01T09:30:00.5+01:30").unwrap(),
            1_764_576_000.5
        );
        assert_eq!(parse_time("2025-12-01 08:00:00z").unwrap(), 1_764_576_000.0);
        assert_eq!(parse_time("1970-01-01T00:00:00-00:30").unwrap(), 1800.0);
        assert!(parse_time("yesterday").is_err());
        assert!(parse_time("1e300").is_err());
        assert!(parse_time("2025-13-01T00:00:00Z").is_err());
        assert!(parse_time("2025-12-01T08:00:00").is_err());
    }

    #[test]
    fn civil_days_across_leap_years_and_eras() {
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(days_from_civil(1969, 12, 31), -1);
        assert_eq!(days_from_civil(2000, 3, 1), 11_017);
        // 2000 is a leap year (divisible by 400), 2100 is not
        assert_eq!(
            days_from_civil(2000, 3, 1) - days_from_civil(2000, 2, 28),
            2
        );
        assert_eq!(
            days_from_civil(2100, 3, 1) - days_from_civil(2100, 2, 28),
            1
        );
        assert_eq!(
            days_from_civil(2024, 2, 29) + 1,
            days_from_civil(2024, 3, 1)
        );
    }

    #[test]
    fn a_bad_url_says_add_http() {
        let e = PrometheusClient::new("localhost:9090", Duration::from_secs(1)).unwrap_err();
        assert!(e.to_string().contains("add http://"), "{e}");
    }
}
