//! The OpenMetrics exposition of a [`ServeReport`] (`/metrics`), encoded by `prometheus-client`.
//!
//! `prometheus-client` writes label values as they are, so a value holding `"`, `\` or a
//! newline (a log's path is an instance label) would end the value early and inject series of
//! its own. Every label value is therefore an [`Escaped`], which writes the escapes of the
//! exposition format (`\\`, `\"`, `\n`). The text is OpenMetrics (`# EOF`, `_total`-less
//! gauges with `# UNIT` where given) and is served with OpenMetrics' content type
//! [`CONTENT_TYPE`], not the 0.0.4 text format's.

use std::fmt::Write as _;

use diagnosis::Bottleneck;
use prometheus_client::encoding::{EncodeLabelSet, EncodeLabelValue, LabelValueEncoder};
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use super::ServeReport;

/// The content type of `/metrics`: OpenMetrics text 1.0.0, what `prometheus-client` encodes.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// A label value, written with the exposition format's escapes.
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
pub struct Escaped(pub String);

impl EncodeLabelValue for Escaped {
    fn encode(&self, encoder: &mut LabelValueEncoder) -> Result<(), std::fmt::Error> {
        for c in self.0.chars() {
            match c {
                '\\' => encoder.write_str("\\\\")?,
                '"' => encoder.write_str("\\\"")?,
                '\n' => encoder.write_str("\\n")?,
                c => encoder.write_char(c)?,
            }
        }
        Ok(())
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KindLabels {
    instance: Escaped,
    kind: Escaped,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct InstanceLabels {
    instance: Escaped,
}

/// The OpenMetrics text exposition of a [`ServeReport`].
pub fn exposition(r: &ServeReport) -> String {
    let mut reg = Registry::with_prefix("throughput_doctor");
    let gauge_f = Family::<InstanceLabels, Gauge<f64, std::sync::atomic::AtomicU64>>::default;
    let bottleneck = Family::<KindLabels, Gauge>::default();
    let finding = Family::<KindLabels, Gauge>::default();
    let up = Family::<InstanceLabels, Gauge>::default();
    let steady = gauge_f();
    let steady_low = gauge_f();
    let steady_high = gauge_f();
    let steady_window = gauge_f();
    let pool = gauge_f();
    let ceiling = gauge_f();
    let headroom = gauge_f();
    let diagnosed = gauge_f();
    let diagnoses = Gauge::<i64>::default();
    diagnoses.set(i64::try_from(r.diagnoses).unwrap_or(i64::MAX));
    for (inst, t) in &r.targets {
        let il = InstanceLabels {
            instance: Escaped(inst.clone()),
        };
        let kl = |kind: &str| KindLabels {
            instance: Escaped(inst.clone()),
            kind: Escaped(kind.to_string()),
        };
        up.get_or_create(&il).set(i64::from(t.up));
        if let Some(at) = t.diagnosed_at {
            diagnosed.get_or_create(&il).set(at);
        }
        let Some(rep) = &t.report else { continue };
        for &b in Bottleneck::ALL {
            bottleneck
                .get_or_create(&kl(b.name()))
                .set(i64::from(rep.bottleneck == b));
        }
        for f in &rep.findings {
            finding.get_or_create(&kl(f.kind.name())).set(1);
        }
        if let Some(s) = &rep.steady_gen_throughput {
            steady.get_or_create(&il).set(s.value);
            steady_window.get_or_create(&il).set(s.window_s);
            if let Some(l) = s.low {
                steady_low.get_or_create(&il).set(l);
            }
            if let Some(h) = s.high {
                steady_high.get_or_create(&il).set(h);
            }
        }
        if let Some(p) = rep.capacity.max_total_num_tokens {
            pool.get_or_create(&il).set(p as f64);
        }
        if let Some(best) = rep.projection.as_ref().and_then(|p| {
            p.rows
                .iter()
                .map(|r| r.tok_per_s)
                .filter(|v| v.is_finite())
                .reduce(f64::max)
        }) {
            ceiling.get_or_create(&il).set(best);
            if let Some(s) = &rep.steady_gen_throughput {
                headroom.get_or_create(&il).set((best - s.value).max(0.0));
            }
        }
    }
    reg.register(
        "bottleneck",
        "1 for the verdict of the instance's last diagnosis, 0 for the other kinds (kind as in the JSON report's bottleneck)",
        bottleneck,
    );
    reg.register(
        "finding",
        "1 for each finding of the instance's last diagnosis (kind as in the JSON report's findings)",
        finding,
    );
    reg.register(
        "target_up",
        "1 when the last read of the target succeeded",
        up,
    );
    reg.register(
        "steady_gen_throughput_tokens_per_second",
        "Steady generation throughput summed over DP ranks (tok/s)",
        steady,
    );
    reg.register(
        "steady_gen_throughput_low_tokens_per_second",
        "Lower bound of the steady throughput's 95% interval (tok/s)",
        steady_low,
    );
    reg.register(
        "steady_gen_throughput_high_tokens_per_second",
        "Upper bound of the steady throughput's 95% interval (tok/s)",
        steady_high,
    );
    reg.register(
        "steady_window_seconds",
        "Span the steady throughput was measured over (seconds)",
        steady_window,
    );
    reg.register(
        "kv_pool_tokens",
        "KV pool size per DP rank, max_total_num_tokens (tokens)",
        pool,
    );
    reg.register(
        "projected_ceiling_tokens_per_second",
        "Highest generation throughput the decode step-time fit projects over the what-if rows (tok/s)",
        ceiling,
    );
    reg.register(
        "headroom_tokens_per_second",
        "Projected ceiling minus the steady throughput (tok/s)",
        headroom,
    );
    reg.register(
        "last_diagnosis_timestamp_seconds",
        "When the instance was last diagnosed (Unix seconds)",
        diagnosed,
    );
    reg.register("diagnoses", "Diagnoses done since start", diagnoses);
    let mut out = String::new();
    // ok: writing into a String cannot fail; an error would only lose this scrape.
    if prometheus_client::encoding::text::encode(&mut out, &reg).is_err() {
        out.clear();
    }
    out
}
