//! `GET /metrics` read as it arrives: each chunk's lines go into a [`MetricsReader`], so a
//! scrape costs its typed view, never its text, and stops at the caps of [`ClientConfig`]
//! (bytes, series, label sets).

use super::{ClientConfig, SglangClient, map_reqwest};
use crate::error::{ClientError, redact_url};
use crate::metrics::{MetricsReader, MetricsSnapshot, ScrapeCap};

impl SglangClient {
    /// `GET /metrics`, read line by line as it arrives into a [`MetricsSnapshot`]; bad lines
    /// and rejected values are in its `problems`, figures whose series differ by a label that
    /// is not a rank label in its `not_summed`.
    ///
    /// Errors as [`SglangClient::health`]; [`ClientError::TooLarge`] past
    /// [`ClientConfig::max_metrics_bytes`]; [`ClientError::TooManySeries`] past
    /// [`ClientConfig::max_metrics_series`] series or
    /// [`ClientConfig::max_metrics_label_sets`] label sets; [`ClientError::NoMetrics`] when
    /// the body holds no usable `sglang:` series (HTML, junk).
    pub async fn metrics(&self) -> Result<MetricsSnapshot, ClientError> {
        let url = self.url("/metrics");
        let cfg: &ClientConfig = &self.cfg;
        let mut resp = self
            .send(self.http.get(&url), &url, cfg.info_timeout)
            .await?;
        let cap = cfg.max_metrics_bytes;
        if resp.content_length().is_some_and(|len| len > cap) {
            return Err(too_large(&url, cap));
        }
        let mut reader = MetricsReader::new(cfg.max_metrics_series, cfg.max_metrics_label_sets);
        let mut read = 0u64;
        while let Some(chunk) = resp.chunk().await.map_err(|e| map_reqwest(e, &url))? {
            read += chunk.len() as u64;
            if read > cap {
                return Err(too_large(&url, cap));
            }
            reader.push_bytes(&chunk).map_err(|c| {
                let (what, limit) = match c {
                    ScrapeCap::Series(n) => ("series", n),
                    ScrapeCap::LabelSets(n) => ("label sets of sglang: series", n),
                };
                ClientError::TooManySeries {
                    url: redact_url(&url),
                    what,
                    limit,
                }
            })?;
        }
        let m = reader.finish();
        if !m.has_data() {
            return Err(ClientError::NoMetrics {
                url: redact_url(&url),
                lines: m.lines,
                problems: m.problems_total,
                first: m
                    .problems
                    .first()
                    .map(|p| format!("; first: {p}"))
                    .unwrap_or_default(),
            });
        }
        Ok(m)
    }
}

fn too_large(url: &str, cap: u64) -> ClientError {
    ClientError::TooLarge {
        url: redact_url(url),
        what: "response body",
        limit_bytes: cap,
    }
}
