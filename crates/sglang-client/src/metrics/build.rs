//! The typed view built from a scrape's samples as they are read ([`MetricsReader`]): a
//! scrape is never held whole, only its typed series and the samples outside the view.

use std::collections::HashMap;

use crate::exposition::{Exposition, MAX_PROBLEMS_KEPT, MetricType, Sample, Suffix};

use super::{
    Histogram, LabeledMetrics, Labels, MetricsSnapshot, Occupancy, Range, RawSample, RawValue,
    SUMMED_LABELS, implausible, parse_le, set_of_labels,
};

/// A cap of [`MetricsReader`] that a scrape passed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScrapeCap {
    /// More series (samples) than the reader's `max_series`.
    Series(usize),
    /// More label sets of typed `sglang:` series than the reader's `max_label_sets`.
    LabelSets(usize),
}

/// Values set aside: the first [`MAX_PROBLEMS_KEPT`] kept whole, all counted.
#[derive(Default)]
struct Rejects {
    kept: Vec<String>,
    total: usize,
}

impl Rejects {
    fn add(&mut self, line: usize, what: String) {
        self.total += 1;
        if self.total <= MAX_PROBLEMS_KEPT {
            self.kept.push(format!("line {line}: {what}"));
        }
    }
}

/// Reads a `/metrics` scrape line by line (or chunk by chunk, as it arrives) into a
/// [`MetricsSnapshot`], holding the typed view and the samples outside it, never the text.
/// Past `max_series` samples or `max_label_sets` label sets of typed series, it stops with
/// a [`ScrapeCap`].
pub struct MetricsReader {
    e: Exposition,
    snap: MetricsSnapshot,
    rejects: Rejects,
    index: HashMap<Labels, usize>,
    /// Histogram parts by (family, labels without `le`): the histogram and the first line it
    /// came from.
    hists: HashMap<(usize, Labels), (Histogram, usize)>,
    hist_order: Vec<(usize, Labels)>,
    /// The bytes of a line not ended yet ([`MetricsReader::push_bytes`]).
    partial: Vec<u8>,
    max_series: usize,
    max_label_sets: usize,
}

impl MetricsReader {
    /// A reader that stops past `max_series` samples (series) or `max_label_sets` label sets
    /// of typed `sglang:` series.
    pub fn new(max_series: usize, max_label_sets: usize) -> Self {
        MetricsReader {
            e: Exposition::default(),
            snap: MetricsSnapshot::default(),
            rejects: Rejects::default(),
            index: HashMap::new(),
            hists: HashMap::new(),
            hist_order: Vec::new(),
            partial: Vec::new(),
            max_series,
            max_label_sets,
        }
    }

    /// Reads one line (without its `\n`).
    ///
    /// # Errors
    /// [`ScrapeCap`] when this line passes a cap; the reader should then be dropped.
    pub fn push_line(&mut self, line: &str) -> Result<(), ScrapeCap> {
        let Some(s) = self.e.push_line(line) else {
            return Ok(());
        };
        if self.e.series > self.max_series {
            return Err(ScrapeCap::Series(self.max_series));
        }
        self.sample(&s);
        if self.snap.sets.len() > self.max_label_sets {
            return Err(ScrapeCap::LabelSets(self.max_label_sets));
        }
        Ok(())
    }

    /// Reads a chunk of the body as it arrives: every line it ends is read, the rest kept
    /// until the next chunk (bytes that are not UTF-8 are replaced, and the line read).
    ///
    /// # Errors
    /// As [`MetricsReader::push_line`].
    pub fn push_bytes(&mut self, mut chunk: &[u8]) -> Result<(), ScrapeCap> {
        while let Some(i) = memchr::memchr(b'\n', chunk) {
            let (line, rest) = (&chunk[..i], &chunk[i + 1..]);
            if self.partial.is_empty() {
                self.push_utf8(line)?;
            } else {
                let mut whole = std::mem::take(&mut self.partial);
                whole.extend_from_slice(line);
                self.push_utf8(&whole)?;
            }
            chunk = rest;
        }
        self.partial.extend_from_slice(chunk);
        Ok(())
    }

    fn push_utf8(&mut self, line: &[u8]) -> Result<(), ScrapeCap> {
        let text = String::from_utf8_lossy(line);
        self.push_line(&text)
    }

    /// The snapshot of what was read (a last line without `\n` included).
    pub fn finish(mut self) -> MetricsSnapshot {
        if !self.partial.is_empty() {
            let last = std::mem::take(&mut self.partial);
            // past a cap or not, the last line is read: the caps are for what is to come
            let _ = self.push_utf8(&last);
        }
        let e = std::mem::take(&mut self.e);
        for key in std::mem::take(&mut self.hist_order) {
            let Some((mut h, line)) = self.hists.remove(&key) else {
                continue;
            };
            let name = e.families[key.0].name.as_str();
            h.buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
            // Buckets of series split by a summed label share bounds: add them.
            h.buckets.dedup_by(|later, kept| {
                let same = later.0 == kept.0;
                if same {
                    kept.1 += later.1;
                }
                same
            });
            // Counts must be plausible counters; the sum only finite (it can be
            // large for a long-lived server, and negative for odd units).
            let counts = h.buckets.iter().map(|b| b.1).chain(h.count);
            let sum = h.sum.filter(|x| !x.is_finite());
            if let Some(why) = counts
                .chain(sum)
                .find_map(|v| implausible(v, Range::Counter))
            {
                self.rejects
                    .add(line, format!("histogram {name}: a count {why}; not used"));
                continue;
            }
            let i = set_of_labels(&mut self.snap, &mut self.index, &key.1);
            let set = &mut self.snap.sets[i];
            if let Some(short) = name.strip_prefix("sglang:kv_transfer_") {
                set.kv_transfer.insert(short.to_string(), h);
            } else if let Some(slot) = set.histogram_slot(name) {
                *slot = Some(h);
            }
        }

        let mut snap = std::mem::take(&mut self.snap);
        for f in &e.families {
            if f.name.starts_with("sglang:") {
                snap.declared.insert(f.name.clone());
                // OpenMetrics declares a counter without its `_total`.
                if f.kind == MetricType::Counter && !f.name.ends_with("_total") {
                    snap.declared.insert(format!("{}_total", f.name));
                }
            }
        }
        let mut problems: Vec<String> = e.problems.iter().map(|p| p.to_string()).collect();
        problems.append(&mut self.rejects.kept);
        snap.problems = problems;
        snap.problems_total = e.problems_total + self.rejects.total;
        snap.lines = e.lines;
        snap.samples = e.series;
        snap.sets.retain(|m| !m.is_empty());
        super::ranks::refuse_sums_over_other_labels(&mut snap);
        snap
    }

    /// One sample into the typed view, or kept as it is.
    fn sample(&mut self, s: &Sample) {
        let e = &self.e;
        let fam = &e.families[s.family];
        // A counter typed OpenMetrics-style (`# TYPE x counter`, sample `x_total`) is
        // looked up by its sample name, as the 0.0.4 format (`# TYPE x_total counter`) has it.
        let full;
        let name = if s.suffix == Suffix::Total {
            full = format!("{}_total", fam.name);
            full.as_str()
        } else {
            fam.name.as_str()
        };
        let mut summed = false;
        let mut labels: Labels = Labels::new();
        for (k, v) in &s.labels {
            if k == "le" || k == "quantile" {
                continue;
            }
            if SUMMED_LABELS.contains(&k.as_str()) {
                summed = true;
                continue;
            }
            labels.insert(k.clone(), v.clone());
        }
        if name.starts_with("sglang:") {
            self.snap.declared.insert(name.to_string());
        }
        let is_hist = matches!(fam.kind, MetricType::Histogram);
        if is_hist
            && (name.starts_with("sglang:kv_transfer_")
                || LabeledMetrics::default().histogram_slot(name).is_some())
        {
            let key = (s.family, labels);
            let entry = self.hists.entry(key.clone()).or_insert_with(|| {
                self.hist_order.push(key);
                (Histogram::default(), s.line)
            });
            match s.suffix {
                Suffix::Bucket => match s.label("le").and_then(parse_le) {
                    Some(le) => entry.0.buckets.push((le, s.value)),
                    None => self
                        .rejects
                        .add(s.line, format!("{name}_bucket without a numeric le label")),
                },
                // Parts split by a summed label add up.
                Suffix::Sum => entry.0.sum = Some(entry.0.sum.unwrap_or(0.0) + s.value),
                Suffix::Count => entry.0.count = Some(entry.0.count.unwrap_or(0.0) + s.value),
                _ => {}
            }
            return;
        }
        let counter_part = matches!(s.suffix, Suffix::None | Suffix::Total);
        if counter_part && LabeledMetrics::default().keyed_slot(name).is_some() {
            let key_label = LabeledMetrics::default()
                .keyed_slot(name)
                .map_or("mode", |(_, k)| k);
            let key = labels.remove(key_label).unwrap_or_default();
            if let Some(why) = implausible(s.value, Range::Counter) {
                self.rejects.add(
                    s.line,
                    format!(
                        "{name}{{{key_label}={key:?}}} = {}: {why}; not used",
                        s.value
                    ),
                );
                return;
            }
            let i = set_of_labels(&mut self.snap, &mut self.index, &labels);
            if let Some((map, _)) = self.snap.sets[i].keyed_slot(name) {
                *map.entry(key).or_insert(0.0) += s.value;
            }
            return;
        }
        if name == "sglang:fwd_occupancy" && matches!(s.suffix, Suffix::None) {
            let reading = if s.value.is_nan() {
                Occupancy::Idle
            } else if let Some(why) = implausible(s.value, Range::Percent) {
                self.rejects
                    .add(s.line, format!("{name} = {}: {why}; not used", s.value));
                return;
            } else {
                Occupancy::Percent(s.value)
            };
            let i = set_of_labels(&mut self.snap, &mut self.index, &labels);
            self.snap.sets[i].fwd_occupancy = Some(reading);
            return;
        }
        if name == "sglang:cache_config_info" && matches!(s.suffix, Suffix::None) {
            // An info gauge: the figures are its labels, the value is 1.
            let page = labels.remove("page_size");
            let pages = labels.remove("num_pages");
            let num = |v: &Option<String>| {
                v.as_deref()
                    .and_then(|x| x.parse::<u64>().ok())
                    .map(|x| x as f64)
                    .filter(|x| implausible(*x, Range::Tokens).is_none())
            };
            match (num(&page), num(&pages)) {
                (Some(p), Some(n)) if p > 0.0 => {
                    let i = set_of_labels(&mut self.snap, &mut self.index, &labels);
                    self.snap.sets[i].page_size = Some(p);
                    self.snap.sets[i].num_pages = Some(n);
                }
                _ => self.rejects.add(
                    s.line,
                    format!(
                        "{name} with page_size={page:?}, num_pages={pages:?}: not whole numbers of tokens and pages; not used"
                    ),
                ),
            }
            return;
        }
        if let Some(short) = name.strip_prefix("sglang:kv_transfer_")
            && matches!(fam.kind, MetricType::Gauge)
        {
            if let Some(why) = implausible(s.value, Range::Any) {
                self.rejects
                    .add(s.line, format!("{name} = {}: {why}; not used", s.value));
                return;
            }
            let i = set_of_labels(&mut self.snap, &mut self.index, &labels);
            self.snap.sets[i]
                .kv_transfer_gauges
                .insert(short.to_string(), s.value);
            return;
        }
        let scalar = matches!(s.suffix, Suffix::None | Suffix::Total)
            && !matches!(fam.kind, MetricType::Histogram | MetricType::Summary);
        let probe = LabeledMetrics::default().scalar_slot(name).map(|(_, r)| r);
        match probe {
            Some(range) if scalar => {
                if let Some(why) = implausible(s.value, range) {
                    self.rejects
                        .add(s.line, format!("{name} = {}: {why}; not used", s.value));
                    return;
                }
                let i = set_of_labels(&mut self.snap, &mut self.index, &labels);
                if let Some((slot, _)) = self.snap.sets[i].scalar_slot(name) {
                    // Series that differ only by a summed label add up.
                    *slot = Some(match *slot {
                        Some(prev) if summed => prev + s.value,
                        _ => s.value,
                    });
                }
            }
            _ => {
                let value = match (fam.kind, s.suffix) {
                    (MetricType::Counter, Suffix::None | Suffix::Total) => {
                        RawValue::Counter(s.value)
                    }
                    (MetricType::Gauge, _) => RawValue::Gauge(s.value),
                    _ => RawValue::Untyped(s.value),
                };
                self.snap.unknown.push(RawSample {
                    name: e.sample_name(s),
                    labels: s.labels.iter().cloned().collect(),
                    value,
                });
            }
        }
    }
}
