//! An answer of the Prometheus HTTP API decoded as it arrives, under caps.
//!
//! The body is never held whole: reqwest's chunks are read through `tokio-util`'s
//! `StreamReader` and `SyncIoBridge` by `serde_json`'s streaming deserializer on a blocking
//! thread, and `serde` seeds count while they decode. An answer with more than
//! [`MAX_SERIES_PER_QUERY`](super::MAX_SERIES_PER_QUERY) series, more than
//! [`MAX_POINTS_PER_SERIES_ANSWER`](super::MAX_POINTS_PER_SERIES_ANSWER) points in one series
//! or more than [`MAX_POINTS_PER_QUERY`](super::MAX_POINTS_PER_QUERY) points in all stops
//! there, and so does a body past [`MAX_BODY_BYTES`](super::MAX_BODY_BYTES): what was decoded
//! is dropped, the error names the cap. Memory is what the kept series hold, not the body.

use std::cell::Cell;
use std::fmt;
use std::io::BufReader;
use std::sync::{Arc, Mutex};

use futures_util::StreamExt as _;
use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::{
    Labels, MAX_BODY_BYTES, MAX_POINTS_PER_QUERY, MAX_POINTS_PER_SERIES_ANSWER,
    MAX_SERIES_PER_QUERY, PromError,
};

/// What the `data` of an answer is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Shape {
    /// `/api/v1/series`: a list of label sets.
    LabelSets,
    /// `/api/v1/query` and `/api/v1/query_range`: `{resultType, result: [...]}`.
    Result,
}

/// One item of a `result`: its labels and points (one for a vector, a list for a matrix).
#[derive(Debug, Default)]
pub(super) struct Item {
    pub(super) metric: Labels,
    pub(super) points: Vec<(f64, f64)>,
}

/// The `data` of an answer.
#[derive(Debug)]
pub(super) enum Data {
    /// `/api/v1/series`.
    LabelSets(Vec<Labels>),
    /// A query's `resultType` and `result`.
    Result {
        result_type: Option<String>,
        result: Vec<Item>,
    },
}

/// The envelope of every answer.
#[derive(Debug, Default)]
pub(super) struct Envelope {
    pub(super) status: Option<String>,
    pub(super) data: Option<Data>,
    pub(super) error_type: Option<String>,
    pub(super) error: Option<String>,
}

/// The cap an answer passed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Exceeded {
    /// More than [`MAX_SERIES_PER_QUERY`] series.
    Series,
    /// More than [`MAX_POINTS_PER_SERIES_ANSWER`] points in one series.
    PointsOfOneSeries,
    /// More than [`MAX_POINTS_PER_QUERY`] points in all.
    Points,
}

/// The counts of one decode, shared by its seeds (one thread).
#[derive(Default)]
struct Counts {
    points: Cell<usize>,
    hit: Cell<Option<Exceeded>>,
}

impl Counts {
    fn exceeded<E: de::Error>(&self, what: Exceeded) -> E {
        self.hit.set(Some(what));
        E::custom("a cap was passed")
    }
}

/// Decodes the 2xx answer `resp` of `url` as it arrives.
///
/// Errors: [`PromError::Transport`] (the body broke or timed out), [`PromError::TooLarge`],
/// [`PromError::TooManySeries`], [`PromError::TooManyPoints`], [`PromError::Decode`].
pub(super) async fn decode(
    resp: reqwest::Response,
    url: &str,
    shape: Shape,
) -> Result<Envelope, PromError> {
    let broke: Arc<Mutex<Option<String>>> = Arc::default();
    let too_large = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut read = 0usize;
    let (broke2, too_large2) = (broke.clone(), too_large.clone());
    let body = resp.bytes_stream().map(move |chunk| match chunk {
        Ok(b) => {
            read += b.len();
            if read > MAX_BODY_BYTES {
                too_large2.store(true, std::sync::atomic::Ordering::Relaxed);
                return Err(std::io::Error::other("body cap"));
            }
            Ok(b)
        }
        Err(e) => {
            let detail = super::transport_detail(&e);
            if let Ok(mut g) = broke2.lock() {
                *g = Some(detail.clone());
            }
            Err(std::io::Error::other(detail))
        }
    });
    let reader =
        tokio_util::io::SyncIoBridge::new(tokio_util::io::StreamReader::new(Box::pin(body)));
    let decoded = tokio::task::spawn_blocking(move || {
        let counts = Counts::default();
        let mut de =
            serde_json::Deserializer::from_reader(BufReader::with_capacity(64 << 10, reader));
        let r = EnvelopeSeed {
            shape,
            counts: &counts,
        }
        .deserialize(&mut de)
        .and_then(|v| de.end().map(|()| v));
        (r, counts.hit.get())
    })
    .await;
    let (r, hit) = decoded.map_err(|e| PromError::Transport {
        url: url.to_string(),
        detail: format!("the decoder stopped: {e}"),
    })?;
    if let Some(detail) = broke.lock().ok().and_then(|mut g| g.take()) {
        return Err(PromError::Transport {
            url: url.to_string(),
            detail,
        });
    }
    if too_large.load(std::sync::atomic::Ordering::Relaxed) {
        return Err(PromError::TooLarge {
            url: url.to_string(),
            limit: MAX_BODY_BYTES,
        });
    }
    match hit {
        Some(Exceeded::Series) => Err(PromError::TooManySeries {
            url: url.to_string(),
            limit: MAX_SERIES_PER_QUERY,
        }),
        Some(Exceeded::PointsOfOneSeries) => Err(PromError::TooManyPoints {
            url: url.to_string(),
            what: "in one series",
            limit: MAX_POINTS_PER_SERIES_ANSWER,
        }),
        Some(Exceeded::Points) => Err(PromError::TooManyPoints {
            url: url.to_string(),
            what: "in all",
            limit: MAX_POINTS_PER_QUERY,
        }),
        None => r.map_err(|e| PromError::Decode {
            url: url.to_string(),
            detail: e.to_string(),
        }),
    }
}

struct EnvelopeSeed<'a> {
    shape: Shape,
    counts: &'a Counts,
}

impl<'de> DeserializeSeed<'de> for EnvelopeSeed<'_> {
    type Value = Envelope;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Envelope, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for EnvelopeSeed<'_> {
    type Value = Envelope;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a Prometheus API answer {status, data}")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Envelope, A::Error> {
        let mut env = Envelope::default();
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "status" => env.status = map.next_value()?,
                "errorType" => env.error_type = map.next_value()?,
                "error" => env.error = map.next_value()?,
                "data" => {
                    env.data = Some(match self.shape {
                        Shape::LabelSets => {
                            Data::LabelSets(map.next_value_seed(LabelSetsSeed {
                                counts: self.counts,
                            })?)
                        }
                        Shape::Result => map.next_value_seed(ResultSeed {
                            counts: self.counts,
                        })?,
                    })
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(env)
    }
}

/// `[{label: value, ...}, ...]`, at most [`MAX_SERIES_PER_QUERY`].
struct LabelSetsSeed<'a> {
    counts: &'a Counts,
}

impl<'de> DeserializeSeed<'de> for LabelSetsSeed<'_> {
    type Value = Vec<Labels>;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Vec<Labels>, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for LabelSetsSeed<'_> {
    type Value = Vec<Labels>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list of label sets")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<Labels>, A::Error> {
        let mut out = Vec::new();
        while let Some(l) = seq.next_element::<Labels>()? {
            if out.len() == MAX_SERIES_PER_QUERY {
                return Err(self.counts.exceeded(Exceeded::Series));
            }
            out.push(l);
        }
        Ok(out)
    }
}

/// `{resultType, result: [...]}`.
struct ResultSeed<'a> {
    counts: &'a Counts,
}

impl<'de> DeserializeSeed<'de> for ResultSeed<'_> {
    type Value = Data;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Data, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for ResultSeed<'_> {
    type Value = Data;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("{resultType, result}")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Data, A::Error> {
        let (mut result_type, mut result) = (None, Vec::new());
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "resultType" => result_type = Some(map.next_value::<String>()?),
                "result" => {
                    result = map.next_value_seed(ItemsSeed {
                        counts: self.counts,
                    })?
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(Data::Result {
            result_type,
            result,
        })
    }
}

/// `[{metric, value | values}, ...]`, at most [`MAX_SERIES_PER_QUERY`] items.
struct ItemsSeed<'a> {
    counts: &'a Counts,
}

impl<'de> DeserializeSeed<'de> for ItemsSeed<'_> {
    type Value = Vec<Item>;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Vec<Item>, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for ItemsSeed<'_> {
    type Value = Vec<Item>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list of series")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<Item>, A::Error> {
        let mut out = Vec::new();
        while let Some(item) = seq.next_element_seed(ItemSeed {
            counts: self.counts,
        })? {
            if out.len() == MAX_SERIES_PER_QUERY {
                return Err(self.counts.exceeded(Exceeded::Series));
            }
            out.push(item);
        }
        Ok(out)
    }
}

/// `{metric: {...}, value: [t, "v"]}` or `{metric: {...}, values: [[t, "v"], ...]}`.
struct ItemSeed<'a> {
    counts: &'a Counts,
}

impl<'de> DeserializeSeed<'de> for ItemSeed<'_> {
    type Value = Item;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Item, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for ItemSeed<'_> {
    type Value = Item;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("{metric, value} or {metric, values}")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Item, A::Error> {
        let mut item = Item::default();
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "metric" => item.metric = map.next_value()?,
                "value" => {
                    let p: Point = map.next_value()?;
                    self.count(&mut item, 1)?;
                    item.points.push((p.0, p.1));
                }
                "values" => map.next_value_seed(PointsSeed {
                    counts: self.counts,
                    item: &mut item,
                })?,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(item)
    }
}

impl ItemSeed<'_> {
    /// Counts `n` more points of `item` against both caps.
    fn count<E: de::Error>(&self, item: &mut Item, n: usize) -> Result<(), E> {
        if item.points.len() + n > MAX_POINTS_PER_SERIES_ANSWER {
            return Err(self.counts.exceeded(Exceeded::PointsOfOneSeries));
        }
        let all = self.counts.points.get() + n;
        if all > MAX_POINTS_PER_QUERY {
            return Err(self.counts.exceeded(Exceeded::Points));
        }
        self.counts.points.set(all);
        Ok(())
    }
}

/// `[[t, "v"], ...]` appended to an item, each point counted as it is read.
struct PointsSeed<'a, 'b> {
    counts: &'a Counts,
    item: &'b mut Item,
}

impl<'de> DeserializeSeed<'de> for PointsSeed<'_, '_> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for PointsSeed<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list of [time, \"value\"]")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let counter = ItemSeed {
            counts: self.counts,
        };
        while let Some(p) = seq.next_element::<Point>()? {
            counter.count(self.item, 1)?;
            self.item.points.push((p.0, p.1));
        }
        Ok(())
    }
}

/// `[unix_seconds, "value"]`, decoded without keeping the string.
struct Point(f64, f64);

impl<'de> serde::Deserialize<'de> for Point {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Point;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("[time, \"value\"]")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Point, A::Error> {
                let t: f64 = seq
                    .next_element()?
                    .ok_or_else(|| de::Error::invalid_length(0, &self))?;
                let v: PointValue = seq
                    .next_element()?
                    .ok_or_else(|| de::Error::invalid_length(1, &self))?;
                Ok(Point(t, v.0))
            }
        }
        d.deserialize_seq(V)
    }
}

/// A point's value as the API writes it, a string (`"1.5"`, `"NaN"`, `"+Inf"`): read from
/// the decoder's buffer, never kept.
struct PointValue(f64);

impl<'de> serde::Deserialize<'de> for PointValue {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = PointValue;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a value as a string")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<PointValue, E> {
                Ok(PointValue(parse_point(v)))
            }
        }
        d.deserialize_str(V)
    }
}

/// A point's value: a number, `NaN`, `+Inf` or `-Inf`; anything else is NaN.
pub(super) fn parse_point(v: &str) -> f64 {
    match v {
        "NaN" => f64::NAN,
        "+Inf" => f64::INFINITY,
        "-Inf" => f64::NEG_INFINITY,
        _ => v.parse().unwrap_or(f64::NAN),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_str(
        text: &str,
        shape: Shape,
    ) -> (Result<Envelope, serde_json::Error>, Option<Exceeded>) {
        let counts = Counts::default();
        let mut de = serde_json::Deserializer::from_reader(text.as_bytes());
        let r = EnvelopeSeed {
            shape,
            counts: &counts,
        }
        .deserialize(&mut de);
        (r, counts.hit.get())
    }

    #[test]
    fn matrix_vector_and_label_sets_are_read() {
        let (r, hit) = decode_str(
            r#"{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"a":"1"},"values":[[1,"2"],[2,"NaN"]]}],"extra":[1]},"warnings":["w"]}"#,
            Shape::Result,
        );
        let env = r.expect("decoded");
        assert_eq!((env.status.as_deref(), hit), (Some("success"), None));
        let Some(Data::Result {
            result_type,
            result,
        }) = env.data
        else {
            panic!("no result")
        };
        assert_eq!(result_type.as_deref(), Some("matrix"));
        assert_eq!(result[0].metric.get("a").map(String::as_str), Some("1"));
        assert_eq!(result[0].points[0], (1.0, 2.0));
        assert!(result[0].points[1].1.is_nan());
        let (r, _) = decode_str(
            r#"{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[5.5,"+Inf"]}]}}"#,
            Shape::Result,
        );
        let Some(Data::Result { result, .. }) = r.expect("decoded").data else {
            panic!("no result")
        };
        assert_eq!(result[0].points, [(5.5, f64::INFINITY)]);
        let (r, _) = decode_str(
            r#"{"status":"success","data":[{"instance":"h:1"},{"instance":"h:2"}]}"#,
            Shape::LabelSets,
        );
        let Some(Data::LabelSets(l)) = r.expect("decoded").data else {
            panic!("no label sets")
        };
        assert_eq!(l.len(), 2);
    }

    #[test]
    fn series_past_the_cap_stop_the_decode() {
        let one = r#"{"metric":{"i":"x"},"value":[1,"1"]}"#;
        let items = vec![one; MAX_SERIES_PER_QUERY + 1].join(",");
        let text = format!(
            r#"{{"status":"success","data":{{"resultType":"vector","result":[{items}]}}}}"#
        );
        let (r, hit) = decode_str(&text, Shape::Result);
        assert!(r.is_err());
        assert_eq!(hit, Some(Exceeded::Series));
        // at the cap: read
        let items = vec![one; MAX_SERIES_PER_QUERY].join(",");
        let text = format!(
            r#"{{"status":"success","data":{{"resultType":"vector","result":[{items}]}}}}"#
        );
        let (r, hit) = decode_str(&text, Shape::Result);
        assert!(r.is_ok() && hit.is_none());
    }

    #[test]
    fn points_past_a_series_cap_stop_the_decode() {
        let pts = vec![r#"[1,"1"]"#; MAX_POINTS_PER_SERIES_ANSWER + 1].join(",");
        let text = format!(
            r#"{{"status":"success","data":{{"resultType":"matrix","result":[{{"metric":{{}},"values":[{pts}]}}]}}}}"#
        );
        let (r, hit) = decode_str(&text, Shape::Result);
        assert!(r.is_err());
        assert_eq!(hit, Some(Exceeded::PointsOfOneSeries));
    }
}
