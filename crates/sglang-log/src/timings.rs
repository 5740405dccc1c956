//! `Engine startup timings (s): load_weight=1.13, kv_cache_allocation=0.02,
//! scheduler_e2e=11.66, cuda_graph={prefill=4.29, decode=0.91, target_verify=0.00,
//! draft_prefill=0.00, draft_decode=0.00, draft_extend=0.00}, tokenizer_e2e=18.74`: how long
//! each start-up step took (SGLang v0.5.x, printed once when the engine is up). A graph kind
//! captured in 0.00 s was not captured: `decode=0.00` is a server whose decode steps run
//! without CUDA graphs whatever its batch.

use crate::num::parse_f64_bytes;

/// The start-up steps' durations (seconds), as far as the line prints them.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StartupTimings {
    /// Loading the weights (`load_weight`). Unit: seconds.
    pub load_weight_s: Option<f64>,
    /// The scheduler's start-up, end to end (`scheduler_e2e`). Unit: seconds.
    pub scheduler_e2e_s: Option<f64>,
    /// Capturing the prefill graphs (`cuda_graph={prefill=…}`). Unit: seconds.
    pub graph_prefill_s: Option<f64>,
    /// Capturing the decode graphs (`cuda_graph={decode=…}`); 0.00 when none was captured.
    /// Unit: seconds.
    pub graph_decode_s: Option<f64>,
}

/// Reads the message after `Engine startup timings (s):` (see the module doc); fields it does
/// not know are skipped.
pub fn parse_startup_timings(msg: &str) -> StartupTimings {
    let mut out = StartupTimings::default();
    let body = msg.split_once(':').map_or(msg, |(_, rest)| rest).as_bytes();
    // `key=value` at the top level, `cuda_graph={k=v, …}` one level down
    let mut in_graph = false;
    for raw in body.split(|&c| c == b',') {
        let mut item = raw.trim_ascii();
        if let Some(r) = item.strip_prefix(b"cuda_graph={") {
            in_graph = true;
            item = r;
        }
        let closes = item.ends_with(b"}");
        let item = item.strip_suffix(b"}").unwrap_or(item);
        if let Some(eq) = item.iter().position(|&c| c == b'=') {
            let (k, v) = (&item[..eq], parse_f64_bytes(&item[eq + 1..]));
            let v = v.filter(|x| x.is_finite() && *x >= 0.0);
            match (in_graph, k) {
                (false, b"load_weight") => out.load_weight_s = v,
                (false, b"scheduler_e2e") => out.scheduler_e2e_s = v,
                (true, b"prefill") => out.graph_prefill_s = v,
                (true, b"decode") => out.graph_decode_s = v,
                _ => {}
            }
        }
        if closes {
            in_graph = false;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// real-long rtx4090 (v0.5.x): the line as printed.
    #[test]
    fn the_line_as_printed() {
        let t = parse_startup_timings(
            "Engine startup timings (s): load_weight=1.13, kv_cache_allocation=0.02, scheduler_e2e=11.66, cuda_graph={prefill=4.29, decode=0.91, target_verify=0.00, draft_prefill=0.00, draft_decode=0.00, draft_extend=0.00}, tokenizer_e2e=18.74",
        );
        assert_eq!(t.load_weight_s, Some(1.13));
        assert_eq!(t.scheduler_e2e_s, Some(11.66));
        assert_eq!(t.graph_prefill_s, Some(4.29));
        assert_eq!(t.graph_decode_s, Some(0.91));
        // no graph block, a bad value: nothing read of them
        let t =
            parse_startup_timings("Engine startup timings (s): load_weight=x, scheduler_e2e=3.5");
        assert_eq!(
            (t.load_weight_s, t.scheduler_e2e_s, t.graph_decode_s),
            (None, Some(3.5), None)
        );
        // `decode` outside the graph block is not the graph's
        let t = parse_startup_timings(
            "Engine startup timings (s): decode=2.0, cuda_graph={decode=0.00}",
        );
        assert_eq!(t.graph_decode_s, Some(0.0));
    }
}
