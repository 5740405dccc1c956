//! # `rejected_requests`: the server turned generation requests away
//!
//! **What it detects.** HTTP 4xx or 5xx responses to generation requests (`/generate`,
//! `/v1/completions`, `/v1/chat/completions`) in uvicorn's access lines, and SGLang's
//! context-length rejections (`The input (N tokens) is longer than the model's context length
//! (M tokens).`, `Requested token count exceeds the model's maximum context length of M
//! tokens. …`). Health and metrics probes are left out: a `503` on `/health_generate` during
//! start-up is the server saying it is not ready yet.
//!
//! **Why it matters.** A rejected request does no work: a client that sees low throughput may
//! be sending prompts that never run. A log whose only traffic is rejected has no batch lines
//! at all, and then this is the answer, not "no scheduler lines".
//!
//! **Evidence it needs.** The access lines (uvicorn prints them unless `--log-level-http
//! warning` is set), or the rejection messages.
//!
//! **What to change.** For context-length rejections: shorter prompts, a lower `max_tokens`
//! (prompt plus `max_tokens` must stay below `context_len`), or a larger `--context-length`
//! when the model supports it. For other 4xx, the request itself (its parameters, the model
//! name); for 5xx, the server's errors around those lines.
//!
//! **Source.** SGLang `managers/tokenizer_manager.py` (`_validate_one_request` raises both
//! context-length errors), `entrypoints/openai/serving_base.py` (a `ValueError` becomes HTTP
//! 400), uvicorn's access log format.

use crate::incidents::{ContextRejections, Rejections};
use crate::report::{Confidence, Figure, Finding, FindingKind, Lever, SourceRange, Unit};
use crate::rules::{Input, Rule};

/// What the rule saw.
#[derive(Clone, Debug, PartialEq)]
pub struct Facts {
    /// 4xx responses to generation requests (requests).
    pub client_errors: u64,
    /// 5xx responses to generation requests (requests).
    pub server_errors: u64,
    /// The context-length rejections, when the log prints them.
    pub context: Option<ContextRejections>,
    /// The lines: the first to the last rejection.
    pub evidence: Option<SourceRange>,
}

/// The rule over the incidents.
pub fn check(input: &Input<'_>) -> Option<Facts> {
    let r: &Rejections = &input.ev.incidents.rejections;
    if r.client_errors + r.server_errors == 0 && r.context.is_none() {
        return None;
    }
    let first = [r.first, r.context.map(|c| c.first)]
        .into_iter()
        .flatten()
        .min_by_key(|l| (l.source, l.line));
    let last = [r.last, r.context.map(|c| c.first)]
        .into_iter()
        .flatten()
        .max_by_key(|l| (l.source, l.line));
    let evidence = first.zip(last).map(|(a, b)| input.span(a, b));
    Some(Facts {
        client_errors: r.client_errors,
        server_errors: r.server_errors,
        context: r.context,
        evidence,
    })
}

/// The rule as [`super::FINDING_RULES`] runs it: [`check`], then the finding in its words: the context length, or the HTTP errors.
#[derive(Clone, Copy, Debug)]
pub struct RejectedRequests;

impl Rule for RejectedRequests {
    const NAME: &'static str = "rejected_requests";
    type Facts = Facts;

    fn check(input: &Input<'_>) -> impl IntoIterator<Item = Facts> {
        check(input)
    }

    fn finding(f: &Facts, _input: &Input<'_>) -> Finding {
        let mut figures = Vec::new();
        if f.client_errors > 0 {
            figures.push(Figure::new(
                "generation requests answered 4xx",
                f.client_errors as f64,
                Unit::Requests,
            ));
        }
        if f.server_errors > 0 {
            figures.push(Figure::new(
                "generation requests answered 5xx",
                f.server_errors as f64,
                Unit::Requests,
            ));
        }
        let (title, detail, levers) = match f.context {
            Some(c) => {
                figures.push(Figure::new("context length", c.context_len as f64, Unit::Tokens));
                if let Some(t) = c.largest_requested {
                    figures.push(Figure::new(
                        "largest prompt plus max_tokens rejected",
                        t as f64,
                        Unit::Tokens,
                    ));
                }
                (
                    format!(
                        "Requests rejected for the context length ({} tokens)",
                        c.context_len
                    ),
                    format!(
                        "SGLang refuses a request whose prompt, or prompt plus max_tokens, reaches the model's context length ({} tokens), and the client gets HTTP 400: those requests never run, and a client that counts them sees low throughput. {} message{} say{} so{}. Shorten the prompts or lower max_tokens, or raise --context-length if the model supports a longer one.",
                        c.context_len,
                        c.messages,
                        if c.messages == 1 { "" } else { "s" },
                        if c.messages == 1 { "s" } else { "" },
                        c.largest_requested
                            .map(|t| format!(" (the largest asked for {t} tokens)"))
                            .unwrap_or_default()
                    ),
                    vec![Lever::ContextLength],
                )
            }
            None => (
                "The server turned generation requests away".to_string(),
                "Generation requests were answered with HTTP errors: they never ran. A 4xx is the request's fault (its parameters, the model name, its length); a 5xx is the server's (see the lines around it).".to_string(),
                Vec::new(),
            ),
        };
        Finding {
            kind: FindingKind::RequestsRejected,
            title,
            detail,
            figures,
            evidence: f.evidence.clone().into_iter().collect(),
            confidence: Confidence::High,
            levers,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::testing::{edit, excerpt, with_input};

    const LOG: &str = "real-2/113-i36081-dsv4-dspark-v0.5.18-tp-ep-swa-accept-len-long-ctx.log";

    fn check_lines(lines: &str) -> Option<Facts> {
        with_input(lines, check)
    }

    #[test]
    fn a_served_request_is_no_rejection() {
        // line 2: `"POST /v1/chat/completions HTTP/1.1" 200 OK`
        assert_eq!(check_lines(&excerpt(LOG, 1..=4)), None);
        // a 503 on the health probe during start-up is not a rejected request
        let probe = excerpt("real-long/ascend-dsr1-dp16-mtp-mixed.log", 1828..=1831);
        assert_eq!(check_lines(&probe), None);
    }

    #[test]
    fn a_400_on_a_generation_endpoint_is_counted() {
        // the same real access line answered 400 (one field changed)
        let text = edit(
            &excerpt(LOG, 1..=4),
            "HTTP/1.1\" 200 OK",
            "HTTP/1.1\" 400 Bad Request",
        );
        let f = check_lines(&text).expect("rejected");
        assert_eq!((f.client_errors, f.server_errors), (1, 0));
        assert_eq!(
            f.evidence.map(|e| (e.first_line, e.last_line)),
            Some((2, 2))
        );
        let text = edit(
            &excerpt(LOG, 1..=4),
            "HTTP/1.1\" 200 OK",
            "HTTP/1.1\" 500 Internal Server Error",
        );
        assert_eq!(check_lines(&text).map(|f| f.server_errors), Some(1));
        // boundary: 399 is no error, 400 is
        let text = edit(
            &excerpt(LOG, 1..=4),
            "HTTP/1.1\" 200 OK",
            "HTTP/1.1\" 399 Odd",
        );
        assert_eq!(check_lines(&text), None);
    }

    #[test]
    fn a_context_length_rejection_gives_the_sizes() {
        // the access line answered 400, and the error SGLang's tokenizer manager raises for it
        // (its wording, `_validate_one_request`), stamped like the lines around it
        let mut text = edit(
            &excerpt(LOG, 1..=2),
            "HTTP/1.1\" 200 OK",
            "HTTP/1.1\" 400 Bad Request",
        );
        text.push_str("[2026-08-23 09:06:20] Error in request: Requested token count exceeds the model's maximum context length of 163840 tokens. You requested a total of 170000 tokens: 138000 tokens from the input messages and 32000 tokens for the completion. Please reduce the number of tokens in the input messages or the completion to fit within the limit.\n");
        let f = check_lines(&text).expect("rejected");
        let c = f.context.expect("context rejection");
        assert_eq!(c.context_len, 163840);
        assert_eq!(c.largest_input, Some(138000));
        assert_eq!(c.largest_requested, Some(170000));
        assert_eq!(c.messages, 1);
        assert_eq!(f.client_errors, 1);
    }
}
