//! A parser of the Prometheus text exposition format (version 0.0.4, as
//! written by Python's `prometheus_client`, which SGLang uses; the
//! OpenMetrics `# EOF` line and exemplars are tolerated).
//!
//! What it guarantees, where `prometheus-parse` 0.2 did not:
//! * metric names keep `:` (`sglang:num_running_reqs` is read as written);
//! * label values are decoded (`\\`, `\"`, `\n`), so a value holding `,`,
//!   `=` or `}` is read whole;
//! * samples are typed under their family: `x_bucket`, `x_sum`, `x_count`
//!   belong to histogram `x`, `x_sum`/`x_count` to summary `x`, and
//!   `x_total`/`x_created` to counter `x` (OpenMetrics naming), while a
//!   sample named exactly as its `# TYPE` line is that family's own;
//! * a line that cannot be read is counted with its 1-based line number and
//!   a reason, and parsing goes on with the next line;
//! * one pass over the text with hash lookups: time is linear in its size;
//! * lines can be fed one at a time as they arrive ([`Exposition::push_line`]), each sample
//!   handed back instead of kept, so a scrape is never held whole.
//!
//! The grammar follows the format's description in Prometheus'
//! `docs/instrumenting/exposition_formats.md` (`expfmt` in
//! `prometheus/common`): `name{label="value",...} value [timestamp_ms]`.

use std::collections::{HashMap, HashSet};

use nom::branch::alt;
use nom::bytes::complete::{is_not, tag, take_while, take_while1};
use nom::character::complete::{char, one_of, satisfy, space0, space1};
use nom::combinator::{map, opt, recognize};
use nom::multi::fold_many0;
use nom::sequence::{pair, preceded};
use nom::{IResult, Parser};

/// Label pairs in the order written, values decoded.
pub type LabelPairs = Vec<(String, String)>;

/// At most this many problems are kept whole; the rest are only counted in
/// [`Exposition::problems_total`] (a page of HTML must not cost memory per line).
pub const MAX_PROBLEMS_KEPT: usize = 100;

/// The type a `# TYPE` line gives a family.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MetricType {
    /// `counter`: monotone, reset only by a restart.
    Counter,
    /// `gauge`.
    Gauge,
    /// `histogram`: `_bucket{le}`, `_sum`, `_count`.
    Histogram,
    /// `summary`: `{quantile}`, `_sum`, `_count`.
    Summary,
    /// `gaugehistogram` (OpenMetrics; SGLang's routing-key metrics).
    GaugeHistogram,
    /// `info` (OpenMetrics).
    Info,
    /// `stateset` (OpenMetrics).
    StateSet,
    /// `untyped` / `unknown`, or a sample without a `# TYPE` line.
    Untyped,
}

impl MetricType {
    fn from_word(w: &str) -> Option<Self> {
        Some(match w {
            "counter" => MetricType::Counter,
            "gauge" => MetricType::Gauge,
            "histogram" => MetricType::Histogram,
            "summary" => MetricType::Summary,
            "gaugehistogram" => MetricType::GaugeHistogram,
            "info" => MetricType::Info,
            "stateset" => MetricType::StateSet,
            "untyped" | "unknown" => MetricType::Untyped,
            _ => return None,
        })
    }

    /// The sample-name suffixes this type owns, besides the bare name.
    fn suffixes(self) -> &'static [Suffix] {
        match self {
            MetricType::Counter => &[Suffix::Total, Suffix::Created],
            MetricType::Histogram => &[Suffix::Bucket, Suffix::Sum, Suffix::Count, Suffix::Created],
            MetricType::GaugeHistogram => &[Suffix::Bucket, Suffix::Gsum, Suffix::Gcount],
            MetricType::Summary => &[Suffix::Sum, Suffix::Count, Suffix::Created],
            MetricType::Info => &[Suffix::Info],
            MetricType::Gauge | MetricType::StateSet | MetricType::Untyped => &[],
        }
    }
}

/// Which part of its family a sample is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Suffix {
    /// The sample is named exactly as its family.
    None,
    /// `_total` of a counter.
    Total,
    /// `_created` (creation time, Unix seconds).
    Created,
    /// `_bucket` of a histogram (cumulative count, label `le`).
    Bucket,
    /// `_sum` of a histogram or summary.
    Sum,
    /// `_count` of a histogram or summary.
    Count,
    /// `_gsum` of a gauge histogram.
    Gsum,
    /// `_gcount` of a gauge histogram.
    Gcount,
    /// `_info` of an info metric.
    Info,
}

impl Suffix {
    fn text(self) -> &'static str {
        match self {
            Suffix::None => "",
            Suffix::Total => "_total",
            Suffix::Created => "_created",
            Suffix::Bucket => "_bucket",
            Suffix::Sum => "_sum",
            Suffix::Count => "_count",
            Suffix::Gsum => "_gsum",
            Suffix::Gcount => "_gcount",
            Suffix::Info => "_info",
        }
    }
}

/// One metric family: the name of its `# TYPE` line (or of an untyped
/// sample), its type and its `# HELP` text.
#[derive(Debug, Clone, PartialEq)]
pub struct Family {
    /// Family name, `:` kept (e.g. `sglang:time_to_first_token_seconds`).
    pub name: String,
    /// Declared type ([`MetricType::Untyped`] without a `# TYPE` line).
    pub kind: MetricType,
    /// `# HELP` text, unescaped.
    pub help: Option<String>,
}

/// One sample line.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// Index of its family in [`Exposition::families`].
    pub family: usize,
    /// Which part of the family it is (`_bucket`, `_sum`, ...).
    pub suffix: Suffix,
    /// Labels in the order written, values decoded.
    pub labels: LabelPairs,
    /// The value as written (may be NaN or ±Inf: the format allows them).
    pub value: f64,
    /// Optional timestamp, milliseconds since the Unix epoch.
    pub timestamp_ms: Option<i64>,
    /// 1-based line number.
    pub line: usize,
}

impl Sample {
    /// The value of label `name`, if present.
    pub fn label(&self, name: &str) -> Option<&str> {
        self.labels
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// A line that could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineProblem {
    /// 1-based line number.
    pub line: usize,
    /// What is wrong.
    pub reason: String,
    /// The line's first 120 characters.
    pub excerpt: String,
}

impl std::fmt::Display for LineProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "line {}: {}: {}", self.line, self.reason, self.excerpt)
    }
}

/// A whole parsed exposition.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Exposition {
    /// Families in order of first appearance.
    pub families: Vec<Family>,
    /// Samples in order of appearance.
    pub samples: Vec<Sample>,
    /// The first [`MAX_PROBLEMS_KEPT`] unreadable lines.
    pub problems: Vec<LineProblem>,
    /// Every unreadable line, counted.
    pub problems_total: usize,
    /// Lines in the text (the last one counted even without a newline).
    pub lines: usize,
    /// Samples read, duplicates left out (series).
    pub series: usize,
    index: HashMap<String, usize>,
    has_samples: Vec<bool>,
    /// Every series read: (family, suffix, its labels in one canonical string), compared in
    /// full, so a duplicate is found whatever the order of its labels.
    seen: HashSet<(usize, Suffix, Box<str>)>,
    /// An OpenMetrics `# EOF` was read: the lines after it are not.
    ended: bool,
}

impl Exposition {
    /// Parses a whole exposition. Never fails: each unreadable line is a
    /// [`LineProblem`] and the next line is read. A sample that repeats an
    /// earlier one (same name, same labels) is a problem too, and the first
    /// one is kept.
    pub fn parse(text: &str) -> Self {
        let mut p = Exposition::default();
        for raw in text.split('\n') {
            if let Some(s) = p.push_line(raw) {
                p.samples.push(s);
            }
        }
        p.lines = text.split('\n').count() - usize::from(text.ends_with('\n') || text.is_empty());
        p
    }

    /// Reads the next line (without its `\n`; a trailing `\r` is dropped) and returns its
    /// sample, if it is one that is read; the sample is not kept in [`Exposition::samples`]
    /// (the caller keeps what it needs). Counts the line in [`Exposition::lines`]; an
    /// unreadable line is a [`LineProblem`], a sample that repeats an earlier one (same name,
    /// same labels) is one too, and the first is kept. Lines after `# EOF` are not read.
    pub fn push_line(&mut self, raw: &str) -> Option<Sample> {
        self.lines += 1;
        if self.ended {
            return None;
        }
        let line_no = self.lines;
        let line = raw.strip_suffix('\r').unwrap_or(raw);
        let t = line.trim_matches([' ', '\t']);
        if t.is_empty() {
            return None;
        }
        if let Some(rest) = t.strip_prefix('#') {
            if rest.trim() == "EOF" {
                self.ended = true;
                return None;
            }
            if let Err(why) = self.comment(rest) {
                self.problem(line_no, why, t);
            }
            return None;
        }
        match sample_line(t) {
            Ok(s) => {
                let (family, suffix) = self.family_of(s.name);
                if !self.seen.insert((family, suffix, canonical(&s.labels))) {
                    self.problem(line_no, "duplicate series (same name and labels)".into(), t);
                    return None;
                }
                self.series += 1;
                self.has_samples[family] = true;
                Some(Sample {
                    family,
                    suffix,
                    labels: s.labels,
                    value: s.value,
                    timestamp_ms: s.timestamp_ms,
                    line: line_no,
                })
            }
            Err(why) => {
                self.problem(line_no, why, t);
                None
            }
        }
    }

    /// The family called `name`.
    pub fn family(&self, name: &str) -> Option<(usize, &Family)> {
        let &i = self.index.get(name)?;
        Some((i, &self.families[i]))
    }

    /// The full sample name of `s` (family name + suffix).
    pub fn sample_name(&self, s: &Sample) -> String {
        format!("{}{}", self.families[s.family].name, s.suffix.text())
    }

    fn problem(&mut self, line: usize, reason: String, text: &str) {
        self.problems_total += 1;
        if self.problems.len() < MAX_PROBLEMS_KEPT {
            self.problems.push(LineProblem {
                line,
                reason,
                excerpt: crate::error::excerpt(text, 120),
            });
        }
    }

    fn intern(&mut self, name: &str, kind: MetricType) -> usize {
        if let Some(&i) = self.index.get(name) {
            return i;
        }
        self.families.push(Family {
            name: name.to_string(),
            kind,
            help: None,
        });
        let i = self.families.len() - 1;
        self.index.insert(name.to_string(), i);
        self.has_samples.push(false);
        i
    }

    /// `# HELP name text`, `# TYPE name type`, or a free comment.
    fn comment(&mut self, rest: &str) -> Result<(), String> {
        let rest = rest.trim_start_matches([' ', '\t']);
        let (kw, body) = match rest.split_once([' ', '\t']) {
            Some((kw @ ("HELP" | "TYPE"), body)) => (kw, body.trim_start_matches([' ', '\t'])),
            _ => return Ok(()), // a free comment
        };
        let (after, name) =
            metric_name(body).map_err(|_| format!("# {kw} without a valid metric name"))?;
        let tail = after.trim_matches([' ', '\t']);
        if kw == "HELP" {
            let i = self.intern(name, MetricType::Untyped);
            self.families[i].help = Some(unescape_help(tail));
            return Ok(());
        }
        let kind = MetricType::from_word(tail)
            .ok_or_else(|| format!("# TYPE {name}: unknown type {tail:?}"))?;
        match self.index.get(name) {
            Some(&i) if self.has_samples[i] => Err(format!("# TYPE {name} after its samples")),
            Some(&i) => {
                self.families[i].kind = kind;
                Ok(())
            }
            None => {
                self.intern(name, kind);
                Ok(())
            }
        }
    }

    /// The family a sample named `name` belongs to: itself when declared,
    /// else the declared family whose type owns the suffix, else a new
    /// untyped family of that exact name.
    fn family_of(&mut self, name: &str) -> (usize, Suffix) {
        if let Some(&i) = self.index.get(name) {
            return (i, Suffix::None);
        }
        for suffix in [
            Suffix::Total,
            Suffix::Bucket,
            Suffix::Sum,
            Suffix::Count,
            Suffix::Created,
            Suffix::Gsum,
            Suffix::Gcount,
            Suffix::Info,
        ] {
            if let Some(base) = name.strip_suffix(suffix.text())
                && let Some(&i) = self.index.get(base)
                && self.families[i].kind.suffixes().contains(&suffix)
            {
                return (i, suffix);
            }
        }
        (self.intern(name, MetricType::Untyped), Suffix::None)
    }
}

/// A label set as one string whatever the order its labels were written in: each name and
/// value with its length before it, sorted by name (names are unique within a set).
fn canonical(labels: &[(String, String)]) -> Box<str> {
    use std::fmt::Write as _;
    let mut sorted: Vec<&(String, String)> = labels.iter().collect();
    sorted.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    let mut out = String::new();
    for (k, v) in sorted {
        let _ = write!(out, "{}:{k}{}:{v}", k.len(), v.len());
    }
    out.into_boxed_str()
}

/// `# HELP` text escapes: `\\` and `\n`.
fn unescape_help(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut it = s.chars();
    while let Some(c) = it.next() {
        if c == '\\' {
            match it.next() {
                Some('n') => out.push('\n'),
                Some('\\') => out.push('\\'),
                Some(o) => {
                    out.push('\\');
                    out.push(o);
                }
                None => out.push('\\'),
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// A sample line before its family is known.
struct RawLine<'a> {
    name: &'a str,
    labels: Vec<(String, String)>,
    value: f64,
    timestamp_ms: Option<i64>,
}

/// `[a-zA-Z_:][a-zA-Z0-9_:]*`
fn metric_name(i: &str) -> IResult<&str, &str> {
    recognize(pair(
        satisfy(|c| c.is_ascii_alphabetic() || c == '_' || c == ':'),
        take_while(|c: char| c.is_ascii_alphanumeric() || c == '_' || c == ':'),
    ))
    .parse(i)
}

/// `[a-zA-Z_][a-zA-Z0-9_]*`
fn label_name(i: &str) -> IResult<&str, &str> {
    recognize(pair(
        satisfy(|c| c.is_ascii_alphabetic() || c == '_'),
        take_while(|c: char| c.is_ascii_alphanumeric() || c == '_'),
    ))
    .parse(i)
}

/// A quoted label value with `\\`, `\"` and `\n` decoded.
fn label_value(i: &str) -> IResult<&str, String> {
    enum Piece<'a> {
        Text(&'a str),
        Escaped(char),
    }
    let piece = alt((
        map(is_not("\\\"\n"), Piece::Text),
        map(preceded(char('\\'), one_of("\\\"n")), |c| {
            Piece::Escaped(if c == 'n' { '\n' } else { c })
        }),
    ));
    let body = fold_many0(piece, String::new, |mut s, p| {
        match p {
            Piece::Text(t) => s.push_str(t),
            Piece::Escaped(c) => s.push(c),
        }
        s
    });
    let (rest, v) = preceded(char('"'), body).parse(i)?;
    let (rest, _) = char('"').parse(rest)?;
    Ok((rest, v))
}

/// `{name="value",...}` with an optional trailing comma; errors carry a reason.
fn label_set(mut i: &str) -> Result<(&str, LabelPairs), String> {
    let mut labels: Vec<(String, String)> = Vec::new();
    i = i.trim_start_matches([' ', '\t']);
    loop {
        if let Some(rest) = i.strip_prefix('}') {
            return Ok((rest, labels));
        }
        if i.is_empty() {
            return Err("unclosed label set".into());
        }
        let (rest, name) = label_name(i).map_err(|_| "bad label name".to_string())?;
        let (rest, _) = (space0::<&str, nom::error::Error<&str>>, char('='), space0)
            .parse(rest)
            .map_err(|_| format!("label {name} without '='"))?;
        let (rest, value) = label_value(rest).map_err(|_| {
            if rest.starts_with('"') {
                format!("label {name}: unterminated value or unknown escape")
            } else {
                format!("label {name}: value is not quoted")
            }
        })?;
        if labels.iter().any(|(k, _)| k == name) {
            return Err(format!("label {name} given twice"));
        }
        labels.push((name.to_string(), value));
        let rest = rest.trim_start_matches([' ', '\t']);
        i = match rest.strip_prefix(',') {
            Some(r) => r.trim_start_matches([' ', '\t']),
            None if rest.starts_with('}') => rest,
            None if rest.is_empty() => return Err("unclosed label set".into()),
            None => return Err(format!("after label {name}: expected ',' or '}}'")),
        };
    }
}

/// A float as Go's `strconv.ParseFloat` reads it in the format (`NaN`,
/// `+Inf`, `-Inf` included).
fn number(i: &str) -> IResult<&str, &str> {
    take_while1(|c: char| !c.is_ascii_whitespace() && c != '#').parse(i)
}

fn parse_value(s: &str) -> Option<f64> {
    match s {
        "NaN" | "nan" => Some(f64::NAN),
        "+Inf" | "Inf" | "+inf" | "inf" => Some(f64::INFINITY),
        "-Inf" | "-inf" => Some(f64::NEG_INFINITY),
        _ if s
            .bytes()
            .all(|b| b.is_ascii_digit() || b"+-.eE".contains(&b)) =>
        {
            s.parse().ok()
        }
        _ => None,
    }
}

fn sample_line(t: &str) -> Result<RawLine<'_>, String> {
    let (rest, name) = metric_name(t).map_err(|_| "bad metric name".to_string())?;
    let (rest, labels) = match rest.strip_prefix('{') {
        Some(r) => label_set(r)?,
        None => (rest, Vec::new()),
    };
    let (rest, _) = space1::<&str, nom::error::Error<&str>>(rest).map_err(|_| {
        if rest.is_empty() {
            "missing value".to_string()
        } else {
            "bad metric name".to_string()
        }
    })?;
    let (rest, v) = number(rest).map_err(|_| "missing value".to_string())?;
    let value = parse_value(v).ok_or_else(|| format!("value {v:?} is not a number"))?;
    let (rest, ts) = opt(preceded(space1, number))
        .parse(rest)
        .map_err(|_: nom::Err<nom::error::Error<&str>>| "bad timestamp".to_string())?;
    let timestamp_ms = match ts {
        None => None,
        Some(ts) => match ts.parse::<i64>() {
            Ok(ms) => Some(ms),
            // OpenMetrics writes seconds with a fraction.
            Err(_) => match parse_value(ts) {
                Some(s) if s.is_finite() && s.abs() < 1e13 => Some((s * 1000.0).round() as i64),
                _ => return Err(format!("timestamp {ts:?} is not a number")),
            },
        },
    };
    let rest = rest.trim_start_matches([' ', '\t']);
    // An OpenMetrics exemplar (` # {...} v`) is allowed after the value.
    if !rest.is_empty()
        && tag::<&str, &str, nom::error::Error<&str>>("#")
            .parse(rest)
            .is_err()
    {
        return Err("text after the value".into());
    }
    Ok(RawLine {
        name,
        labels,
        value,
        timestamp_ms,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colon_names_escapes_and_families() {
        let text = "# HELP sglang:ttft_seconds Time\\nto first token.\n\
            # TYPE sglang:ttft_seconds histogram\n\
            sglang:ttft_seconds_bucket{le=\"0.1\",model_name=\"a,b=\\\"c\\\"\\\\d}\"} 3.0\n\
            sglang:ttft_seconds_bucket{le=\"+Inf\",model_name=\"a,b=\\\"c\\\"\\\\d}\"} 4.0\n\
            sglang:ttft_seconds_sum{model_name=\"a,b=\\\"c\\\"\\\\d}\"} 0.5\n\
            sglang:ttft_seconds_count{model_name=\"a,b=\\\"c\\\"\\\\d}\",} 4\n\
            # TYPE x counter\n\
            x_total 7 1700000000000\n";
        let e = Exposition::parse(text);
        assert!(e.problems.is_empty(), "{:?}", e.problems);
        assert_eq!(e.lines, 8);
        let (hi, h) = e.family("sglang:ttft_seconds").unwrap();
        assert_eq!(h.kind, MetricType::Histogram);
        assert_eq!(h.help.as_deref(), Some("Time\nto first token."));
        let of_h: Vec<Suffix> = e
            .samples
            .iter()
            .filter(|s| s.family == hi)
            .map(|s| s.suffix)
            .collect();
        assert_eq!(
            of_h,
            [Suffix::Bucket, Suffix::Bucket, Suffix::Sum, Suffix::Count]
        );
        assert_eq!(e.samples[0].label("model_name"), Some("a,b=\"c\"\\d}"));
        assert_eq!(e.samples[1].label("le"), Some("+Inf"));
        assert_eq!(e.samples[3].value, 4.0);
        let x = &e.samples[4];
        assert_eq!(e.sample_name(x), "x_total");
        assert_eq!(e.families[x.family].kind, MetricType::Counter);
        assert_eq!((x.value, x.timestamp_ms), (7.0, Some(1_700_000_000_000)));
    }

    #[test]
    fn garbage_is_counted_with_line_numbers() {
        let text = "<html><body>502 Bad Gateway</body></html>\n\
            ok 1\n\
            bad{le=\"1\" 2\n\
            bad2{a=\"x\\q\"} 1\n\
            bad3 one\n\
            bad4{a=\"1\",a=\"2\"} 1\n\
            ok 2\n\
            # TYPE y nonsense\n\
            bad5 1 2 3\n";
        let e = Exposition::parse(text);
        let lines: Vec<(usize, &str)> = e
            .problems
            .iter()
            .map(|p| (p.line, p.reason.as_str()))
            .collect();
        assert_eq!(
            lines,
            [
                (1, "bad metric name"),
                (3, "after label le: expected ',' or '}'"),
                (4, "label a: unterminated value or unknown escape"),
                (5, "value \"one\" is not a number"),
                (6, "label a given twice"),
                (7, "duplicate series (same name and labels)"),
                (8, "# TYPE y: unknown type \"nonsense\""),
                (9, "text after the value"),
            ]
        );
        assert_eq!(e.problems_total, 8);
        assert_eq!(e.samples.len(), 1);
        assert_eq!(e.samples[0].value, 1.0);
    }

    #[test]
    fn a_duplicate_is_found_whatever_the_label_order() {
        let e =
            Exposition::parse("a{x=\"1\",y=\"2\"} 1\na{y=\"2\",x=\"1\"} 2\na{y=\"1\",x=\"2\"} 3\n");
        let lines: Vec<usize> = e.problems.iter().map(|p| p.line).collect();
        assert_eq!(lines, [2]);
        assert_eq!(e.samples.len(), 2);
    }

    #[test]
    fn special_values_are_read_as_written() {
        let e = Exposition::parse("a NaN\nb +Inf\nc -Inf\nd 1.8e19\ne 1e3");
        assert!(e.problems.is_empty(), "{:?}", e.problems);
        let v: Vec<f64> = e.samples.iter().map(|s| s.value).collect();
        assert!(v[0].is_nan());
        assert_eq!(&v[1..], [f64::INFINITY, f64::NEG_INFINITY, 1.8e19, 1000.0]);
        assert_eq!(e.lines, 5);
    }

    #[test]
    fn problems_kept_are_bounded_but_all_counted() {
        let text = "<p>\n".repeat(10_000);
        let e = Exposition::parse(&text);
        assert_eq!(e.problems_total, 10_000);
        assert_eq!(e.problems.len(), MAX_PROBLEMS_KEPT);
        assert!(e.samples.is_empty());
    }
}
