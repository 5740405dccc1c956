//! `GET /v1/loads` (SGLang v0.5.8+): a load snapshot per DP rank, with
//! memory and queue breakdowns (`GetLoadsReqOutput` in
//! `python/sglang/srt/managers/io_struct.py`).
//!
//! Decoded field by field like [`crate::ServerInfo`]: a missing field is
//! `None` (unknown, never 0), a field of the wrong type is named in
//! [`Loads::problems`]. The body may be the list of snapshots or an object
//! holding it under `loads`.

use serde_json::Value;

/// Memory breakdown of one rank (`memory` section).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LoadMemory {
    /// Weights, GB as SGLang reports them.
    pub weight_gb: Option<f64>,
    /// KV cache, GB.
    pub kv_cache_gb: Option<f64>,
    /// CUDA graphs, GB.
    pub graph_gb: Option<f64>,
    /// KV pool capacity, tokens.
    pub token_capacity: Option<u64>,
}

/// Queue breakdown of one rank (`queues` section), requests.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LoadQueues {
    /// The main waiting queue.
    pub waiting: Option<u64>,
    /// Waiting for grammar compilation.
    pub grammar: Option<u64>,
    /// Paused by a weight sync.
    pub paused: Option<u64>,
    /// Retracted, waiting to run again.
    pub retracted: Option<u64>,
}

/// One DP rank's load.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RankLoad {
    /// `dp_rank`.
    pub dp_rank: Option<u64>,
    /// `timestamp`, Unix seconds.
    pub timestamp: Option<f64>,
    /// `num_running_reqs`, requests.
    pub num_running_reqs: Option<u64>,
    /// `num_waiting_reqs`, requests.
    pub num_waiting_reqs: Option<u64>,
    /// `num_used_tokens`, tokens in the KV pool.
    pub num_used_tokens: Option<u64>,
    /// `num_total_tokens`: used plus pending prefill tokens.
    pub num_total_tokens: Option<u64>,
    /// `max_total_num_tokens`: KV pool capacity, tokens.
    pub max_total_num_tokens: Option<u64>,
    /// `token_usage`: 0–1, the highest over pools (KV, SWA, mamba).
    pub token_usage: Option<f64>,
    /// `gen_throughput`, tok/s.
    pub gen_throughput: Option<f64>,
    /// `cache_hit_rate`, 0–1.
    pub cache_hit_rate: Option<f64>,
    /// `utilization`, 0–1.
    pub utilization: Option<f64>,
    /// `max_running_requests`, requests.
    pub max_running_requests: Option<u64>,
    /// `memory` section.
    pub memory: Option<LoadMemory>,
    /// `queues` section.
    pub queues: Option<LoadQueues>,
}

/// A decoded `/v1/loads` answer.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Loads {
    /// One entry per DP rank, in the order given.
    pub ranks: Vec<RankLoad>,
    /// Fields with the wrong type (`loads[i].field: expected ..., got ...`).
    pub problems: Vec<String>,
}

struct Reader<'a> {
    obj: &'a serde_json::Map<String, Value>,
    at: String,
    problems: &'a mut Vec<String>,
}

impl Reader<'_> {
    fn get(&mut self, key: &str) -> Option<&Value> {
        self.obj.get(key).filter(|v| !v.is_null())
    }
    fn u64(&mut self, key: &str) -> Option<u64> {
        let v = self.get(key)?.clone();
        match v.as_u64() {
            Some(x) => Some(x),
            None => {
                self.problems
                    .push(format!("{}.{key}: expected a count, got {v}", self.at));
                None
            }
        }
    }
    fn f64(&mut self, key: &str) -> Option<f64> {
        let v = self.get(key)?.clone();
        match v.as_f64().filter(|x| x.is_finite()) {
            Some(x) => Some(x),
            None => {
                self.problems
                    .push(format!("{}.{key}: expected a number, got {v}", self.at));
                None
            }
        }
    }
    fn section(&mut self, key: &str) -> Option<serde_json::Map<String, Value>> {
        match self.get(key)? {
            Value::Object(m) => Some(m.clone()),
            other => {
                let other = other.clone();
                self.problems.push(format!(
                    "{}.{key}: expected an object, got {other}",
                    self.at
                ));
                None
            }
        }
    }
}

impl Loads {
    /// Decodes a `/v1/loads` body.
    ///
    /// Errors: the body is neither a list of objects nor an object with a
    /// `loads` list (the reason as text).
    pub fn from_json(v: &Value) -> Result<Self, String> {
        let list = match v {
            Value::Array(a) => a,
            Value::Object(o) => match o.get("loads") {
                Some(Value::Array(a)) => a,
                _ => return Err("an object without a \"loads\" list".into()),
            },
            other => return Err(format!("expected a list of loads, got {other}")),
        };
        let mut out = Loads::default();
        for (i, item) in list.iter().enumerate() {
            let Value::Object(obj) = item else {
                out.problems
                    .push(format!("loads[{i}]: expected an object, got {item}"));
                continue;
            };
            let mut r = Reader {
                obj,
                at: format!("loads[{i}]"),
                problems: &mut out.problems,
            };
            let memory = r.section("memory");
            let queues = r.section("queues");
            let mut rank = RankLoad {
                dp_rank: r.u64("dp_rank"),
                timestamp: r.f64("timestamp"),
                num_running_reqs: r.u64("num_running_reqs"),
                num_waiting_reqs: r.u64("num_waiting_reqs"),
                num_used_tokens: r.u64("num_used_tokens"),
                num_total_tokens: r.u64("num_total_tokens"),
                max_total_num_tokens: r.u64("max_total_num_tokens"),
                token_usage: r.f64("token_usage"),
                gen_throughput: r.f64("gen_throughput"),
                cache_hit_rate: r.f64("cache_hit_rate"),
                utilization: r.f64("utilization"),
                max_running_requests: r.u64("max_running_requests"),
                memory: None,
                queues: None,
            };
            if let Some(m) = memory {
                let mut r = Reader {
                    obj: &m,
                    at: format!("loads[{i}].memory"),
                    problems: &mut out.problems,
                };
                rank.memory = Some(LoadMemory {
                    weight_gb: r.f64("weight_gb"),
                    kv_cache_gb: r.f64("kv_cache_gb"),
                    graph_gb: r.f64("graph_gb"),
                    token_capacity: r.u64("token_capacity"),
                });
            }
            if let Some(q) = queues {
                let mut r = Reader {
                    obj: &q,
                    at: format!("loads[{i}].queues"),
                    problems: &mut out.problems,
                };
                rank.queues = Some(LoadQueues {
                    waiting: r.u64("waiting"),
                    grammar: r.u64("grammar"),
                    paused: r.u64("paused"),
                    retracted: r.u64("retracted"),
                });
            }
            out.ranks.push(rank);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_sections_and_wrong_types() {
        let v: Value = serde_json::from_str(
            r#"{"loads": [
              {"dp_rank": 0, "timestamp": 1.5, "num_running_reqs": 12, "num_waiting_reqs": 3,
               "num_used_tokens": 900, "max_total_num_tokens": 1000, "token_usage": 0.9,
               "gen_throughput": 450.5, "max_running_requests": 64,
               "memory": {"weight_gb": 70.1, "kv_cache_gb": 9.5, "graph_gb": 1.2, "token_capacity": 1000},
               "queues": {"waiting": 3, "grammar": 0, "paused": 0, "retracted": 1}},
              {"dp_rank": 1, "num_running_reqs": "many", "queues": 5}
            ]}"#,
        )
        .unwrap();
        let l = Loads::from_json(&v).unwrap();
        assert_eq!(l.ranks.len(), 2);
        let r0 = &l.ranks[0];
        assert_eq!(
            (r0.num_running_reqs, r0.num_waiting_reqs),
            (Some(12), Some(3))
        );
        assert_eq!(r0.token_usage, Some(0.9));
        assert_eq!(r0.memory.as_ref().unwrap().token_capacity, Some(1000));
        assert_eq!(r0.queues.as_ref().unwrap().retracted, Some(1));
        assert_eq!(l.ranks[1].num_running_reqs, None);
        assert_eq!(
            l.problems,
            [
                "loads[1].queues: expected an object, got 5",
                "loads[1].num_running_reqs: expected a count, got \"many\"",
            ]
        );
        // A bare list is accepted too; anything else is not.
        let bare: Value = serde_json::from_str(r#"[{"dp_rank": 0}]"#).unwrap();
        assert_eq!(Loads::from_json(&bare).unwrap().ranks.len(), 1);
        assert!(Loads::from_json(&Value::from(3)).is_err());
    }
}
