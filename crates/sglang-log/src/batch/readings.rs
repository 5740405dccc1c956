//! The readings of the usual batch line in one pass ([`BatchLine::usual_decode`],
//! [`BatchLine::usual_prefill`]): the line SGLang prints, of the strict form and of the usual
//! keys only, read with one word load and one word-wise parse a value, each value as its
//! accessor reads it.

use super::{BatchLine, admits_f64, kid};
use crate::num::{bool_of_tail, hundredths_of_tail, u64_of_tail};

/// The readings of a `Decode batch` line of the usual keys only ([`BatchLine::usual_decode`]),
/// each equal to its accessor's. The graph flag of such a line is `cuda graph`'s, so its
/// device is never `npu`.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct DecodeReadings {
    /// [`BatchLine::running_req`] (requests).
    pub running: Option<u64>,
    /// [`BatchLine::queue_req`] (requests).
    pub queue: Option<u64>,
    /// [`BatchLine::num_token`] (tokens).
    pub tokens: Option<u64>,
    /// [`BatchLine::token_usage`] (fraction 0–1).
    pub usage: Option<f64>,
    /// [`BatchLine::gen_throughput`] (tokens/s).
    pub gen_tps: Option<f64>,
    /// [`BatchLine::graph`].
    pub graph: Option<bool>,
    /// [`BatchLine::accept_len`] (tokens/step).
    pub accept_len: Option<f64>,
}

/// The readings of a `Prefill batch` line of the usual keys only
/// ([`BatchLine::usual_prefill`]), each equal to its accessor's. The graph flag of such a
/// line is `cuda graph`'s.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PrefillReadings {
    /// [`BatchLine::new_seq`] (requests).
    pub new_seq: Option<u64>,
    /// [`BatchLine::new_token`] (tokens).
    pub new_token: Option<u64>,
    /// [`BatchLine::cached_token`] (tokens).
    pub cached_token: Option<u64>,
    /// [`BatchLine::running_req`] (requests).
    pub running: Option<u64>,
    /// [`BatchLine::queue_req`] (requests).
    pub queue: Option<u64>,
    /// [`BatchLine::token_usage`] (fraction 0–1).
    pub usage: Option<f64>,
    /// [`BatchLine::input_throughput`] (tokens/s).
    pub input_tps: Option<f64>,
    /// [`BatchLine::graph`].
    pub graph: Option<bool>,
}

const RUNNING: usize = kid("#running-req");
const QUEUE: usize = kid("#queue-req");
const TOKEN: usize = kid("#token");
const USAGE: usize = kid("token usage");
const GEN: usize = kid("gen throughput (token/s)");
const CUDA_GRAPH: usize = kid("cuda graph");
const ACCEPT_LEN: usize = kid("accept len");
const NEW_SEQ: usize = kid("#new-seq");
const NEW_TOKEN: usize = kid("#new-token");
const CACHED_TOKEN: usize = kid("#cached-token");
const PENDING_TOKEN: usize = kid("#pending-token");
const INPUT: usize = kid("input throughput (token/s)");

/// The keys a usual `Decode batch` line prints: [`DecodeReadings`]' own.
const DECODE_KEYS: [usize; 7] = [RUNNING, QUEUE, TOKEN, USAGE, GEN, CUDA_GRAPH, ACCEPT_LEN];

impl<'a> BatchLine<'a> {
    /// Whether the line is of the strict form (split by the fast splitter: no value has
    /// `name=` parts) and no value of the keys `ids` is to be looked at (no `check` bit set,
    /// see [`BatchLine::sound`]). On such a line whose every field is the first field of one
    /// of the keys a reading reads (as many of them present as fields), no other key has a
    /// field, and a reading is its accessor's with no stand-in key (`#running_req`,
    /// `#full token`, …) and no part; one of `ids` needs no range check: the value as it
    /// parses.
    #[inline(always)]
    fn strict_and_sound<const N: usize>(&self, ids: &[usize; N]) -> bool {
        // (`ids` are constants once inlined: `bits` is one)
        let mut bits = 0u64;
        for &id in ids {
            bits |= 1 << (id % 64);
        }
        self.strict && self.check & bits == 0
    }

    /// The value of the first field of known key `id` as the 8 bytes that end it and its
    /// length (see `num::right_aligned_tail`), `present` counted up when the key has a field:
    /// `Some(None)` without a field of the key, `None` for a value that ends within the
    /// line's first 8 bytes.
    #[inline(always)]
    fn tail_of(&self, id: usize, present: &mut u8) -> Option<Option<(u64, usize)>> {
        let at = usize::from(*self.slot.get(id)?);
        if at == 0 {
            return Some(None);
        }
        *present += 1;
        let s = self.spans.get(at - 1)?;
        let (v0, v1) = (usize::from(s.v0), usize::from(s.v1));
        let tail = self.text.as_bytes().get(..v1)?.last_chunk::<8>()?;
        Some(Some((u64::from_le_bytes(*tail), v1.wrapping_sub(v0))))
    }

    /// [`BatchLine::u64_of`] of known key `id` on a line of the keys of
    /// [`BatchLine::strict_and_sound`]; `None`: not read here (a value of more than 8 bytes,
    /// or not digits).
    #[inline(always)]
    fn quick_u64(&self, id: usize, present: &mut u8) -> Option<Option<u64>> {
        match self.tail_of(id, present)? {
            None => Some(None),
            Some((tail, len)) => u64_of_tail(tail, len).map(Some),
        }
    }

    /// [`BatchLine::f64_of`] of known key `id` on a line of the keys of
    /// [`BatchLine::strict_and_sound`]; `None`: not read here (a value other than `%.2f` of
    /// 1 to 5 digits).
    #[inline(always)]
    fn quick_f64(&self, id: usize, present: &mut u8) -> Option<Option<f64>> {
        match self.tail_of(id, present)? {
            None => Some(None),
            Some((tail, len)) => hundredths_of_tail(tail, len).map(Some),
        }
    }

    /// [`BatchLine::graph`] on a line of the keys of [`BatchLine::strict_and_sound`] whose
    /// one graph key is `cuda graph`; `None`: not read here.
    #[inline(always)]
    fn quick_cuda_graph(&self, present: &mut u8) -> Option<Option<bool>> {
        match self.tail_of(CUDA_GRAPH, present)? {
            None => Some(None),
            Some((tail, len)) => Some(bool_of_tail(tail, len)),
        }
    }

    /// The readings of a `Decode batch` line whose every field is of the usual keys
    /// (`#running-req`, `#queue-req`, `#token`, `token usage`, `gen throughput (token/s)`,
    /// `cuda graph`, `accept len`; none twice), of the strict form and sound on sight, in one
    /// pass: each equal to its accessor's, and every other accessor's reading `None` (no
    /// other key has a field). `None` for any other line, and for a line with a value of
    /// another form than SGLang prints (more than 8 bytes, a count that is not digits, a rate
    /// or fraction that is not `%.2f`): read it with the accessors.
    #[inline]
    pub fn usual_decode(&self) -> Option<DecodeReadings> {
        if !self.strict_and_sound(&DECODE_KEYS) {
            return None;
        }
        let mut n = 0u8;
        let r = DecodeReadings {
            running: self.quick_u64(RUNNING, &mut n)?,
            queue: self.quick_u64(QUEUE, &mut n)?,
            tokens: self.quick_u64(TOKEN, &mut n)?,
            usage: self.quick_f64(USAGE, &mut n)?,
            gen_tps: self.quick_f64(GEN, &mut n)?,
            graph: self.quick_cuda_graph(&mut n)?,
            accept_len: self.quick_f64(ACCEPT_LEN, &mut n)?,
        };
        (n == self.len).then_some(r)
    }

    /// The readings of a `Prefill batch` line whose every field is of the usual keys
    /// (`#new-seq`, `#new-token`, `#cached-token`, `token usage`, `#running-req`,
    /// `#queue-req`, `#pending-token`, `input throughput (token/s)`, `cuda graph`), in one
    /// pass, as [`BatchLine::usual_decode`] reads a decode line. `None` for any other line.
    #[inline]
    pub fn usual_prefill(&self) -> Option<PrefillReadings> {
        // a rate of 10^4 tok/s or more (`28879.56`) is looked at: checked here as its accessor
        // checks it
        if !self.strict_and_sound(&[NEW_SEQ, NEW_TOKEN, CACHED_TOKEN, USAGE, RUNNING, QUEUE]) {
            return None;
        }
        let mut n = 0u8;
        // `#pending-token` is no reading, only a key the line may print
        let pending = usize::from(self.slot.get(PENDING_TOKEN).is_some_and(|&s| s != 0));
        let r = PrefillReadings {
            new_seq: self.quick_u64(NEW_SEQ, &mut n)?,
            new_token: self.quick_u64(NEW_TOKEN, &mut n)?,
            cached_token: self.quick_u64(CACHED_TOKEN, &mut n)?,
            running: self.quick_u64(RUNNING, &mut n)?,
            queue: self.quick_u64(QUEUE, &mut n)?,
            usage: self.quick_f64(USAGE, &mut n)?,
            input_tps: self
                .quick_f64(INPUT, &mut n)?
                .filter(|&x| self.sound(INPUT) || admits_f64(INPUT, x)),
            graph: self.quick_cuda_graph(&mut n)?,
        };
        (usize::from(n) + pending == usize::from(self.len)).then_some(r)
    }
}

#[cfg(test)]
mod tests {
    use super::super::{KeyOrder, parse_standard_into};
    use super::*;
    use crate::Event;

    /// Every reading of a usual line, by its accessor (the reference).
    fn decode_by_accessors(b: &BatchLine<'_>) -> DecodeReadings {
        DecodeReadings {
            running: b.running_req(),
            queue: b.queue_req(),
            tokens: b.num_token(),
            usage: b.token_usage(),
            gen_tps: b.gen_throughput(),
            graph: b.graph(),
            accept_len: b.accept_len(),
        }
    }

    fn prefill_by_accessors(b: &BatchLine<'_>) -> PrefillReadings {
        PrefillReadings {
            new_seq: b.new_seq(),
            new_token: b.new_token(),
            cached_token: b.cached_token(),
            running: b.running_req(),
            queue: b.queue_req(),
            usage: b.token_usage(),
            input_tps: b.input_throughput(),
            graph: b.graph(),
        }
    }

    /// The one-pass readings of `text` by both splitters, against the accessors; whether
    /// the fast splitter's line was read in one pass.
    fn agree(text: &str) -> bool {
        let mut one_pass = false;
        for fast in [true, false] {
            let mut ev = Event::Other;
            parse_standard_into(text, &mut ev, &mut KeyOrder::new(fast));
            let Event::Batch(b) = ev else {
                continue;
            };
            if let Some(r) = b.usual_decode() {
                assert_eq!(
                    format!("{r:?}"),
                    format!("{:?}", decode_by_accessors(&b)),
                    "{text}"
                );
                // no other key has a field: every other reading of a sample is absent
                assert_eq!(b.graph_on_npu(), (r.graph, false), "{text}");
                assert_eq!(
                    (
                        b.accept_rate(),
                        b.cap_len(),
                        b.pre_allocated_usage(),
                        b.mamba_usage()
                    ),
                    (None, None, None, None),
                    "{text}"
                );
                assert_eq!(
                    (b.prealloc_req(), b.transfer_req(), b.swa_token_usage()),
                    (None, None, None),
                    "{text}"
                );
                assert_eq!(b.fwd_occupancy(), None, "{text}");
                one_pass |= fast;
            }
            if let Some(r) = b.usual_prefill() {
                assert_eq!(
                    format!("{r:?}"),
                    format!("{:?}", prefill_by_accessors(&b)),
                    "{text}"
                );
                assert_eq!(b.graph_on_npu(), (r.graph, false), "{text}");
                assert_eq!(
                    (b.mamba_usage(), b.prealloc_req(), b.inflight_req()),
                    (None, None, None),
                    "{text}"
                );
                assert_eq!(b.fwd_occupancy(), None, "{text}");
                one_pass |= fast;
            }
        }
        one_pass
    }

    #[test]
    fn usual_lines_are_read_in_one_pass_as_the_accessors_read_them() {
        for text in [
            "Decode batch. #running-req: 4, #token: 10, token usage: 0.01, cuda graph: True, gen throughput (token/s): 1066.23, #queue-req: 0",
            "Decode batch, #running-req: 16, #token: 48123, token usage: 0.85, accept len: 2.89, cuda graph: False, gen throughput (token/s): 831.69, #queue-req: 146, ",
            "Decode batch. #running-req: 0, #token: 0, token usage: 0.00, gen throughput (token/s): 0.00, #queue-req: 0",
            "Decode batch. #running-req: 4",
            "Prefill batch. #new-seq: 7, #new-token: 2422, #cached-token: 371, token usage: 0.01, #running-req: 7, #queue-req: 146",
            "Prefill batch. #new-seq: 7, #new-token: 1785, #cached-token: 3822, token usage: 0.03, #running-req: 9, #queue-req: 140, #pending-token: 642, input throughput (token/s): 28879.56",
            "Prefill batch. #new-seq: 1, #new-token: 5, #cached-token: 0, token usage: 0.00, #running-req: 0, #queue-req: 0, cuda graph: True",
        ] {
            assert!(agree(text), "{text}");
        }
    }

    #[test]
    fn other_lines_are_left_to_the_accessors_or_read_alike() {
        for text in [
            // values of other forms than SGLang's: long, signed, not `%.2f`, flags of any case
            "Decode batch. #running-req: 123456789, #token: 10, token usage: 0.01, #queue-req: 0",
            "Decode batch. #running-req: 4, #token: 10, token usage: 0.5, gen throughput (token/s): 1066.2, #queue-req: 0",
            "Decode batch. #running-req: 4, #token: 10, token usage: 1.25, #queue-req: 0",
            "Decode batch. #running-req: 4, #token: 10, token usage: 0.01, gen throughput (token/s): 123456.78, #queue-req: 0",
            "Decode batch. #running-req: 4, #token: 10, token usage: 0.01, gen throughput (token/s): 99999999, #queue-req: 0",
            "Decode batch. #running-req: 4, #token: 10, token usage: 0.01, gen throughput (token/s): 1e5, #queue-req: 0",
            "Decode batch. #running-req: -4, #token: 10, #queue-req: 0",
            "Decode batch. #running-req: 4, cuda graph: true, #queue-req: 0",
            "Decode batch. #running-req: 4, cuda graph: maybe, #queue-req: 0",
            "Decode batch. #running-req: 4, cuda graph: TRUE, #queue-req: 0",
            "Decode batch. #running-req: 4, token usage: nan, #queue-req: 0",
            "Decode batch. #running-req: 4, token usage: 0.99999, #queue-req: 0",
            "Decode batch. #running-req: 4, accept len: 123.45, #queue-req: 0",
            "Decode batch. #running-req: 10000000, #queue-req: 0",
            // other keys: stand-ins, parts, other graph devices, repeats, unknown keys
            "Decode batch. #running_req: 4, #queue-req: 0",
            "Decode batch. #running-req: 4, #token: full=10, swa=5, token usage: full=0.01, swa=0.02, #queue-req: 0",
            "Decode batch. #running-req: 4, #full token: 10, full token usage: 0.01, #queue-req: 0",
            "Decode batch. #running-req: 4, npu graph: True, #queue-req: 0",
            "Decode batch. #running-req: 4, xpu graph: True, cuda graph: False, #queue-req: 0",
            "Decode batch. #running-req: 4, #running-req: 5, #queue-req: 0",
            "Decode batch. #running-req: 4, #new thing: 3, #queue-req: 0",
            "Decode batch. #running-req: 4, accept rate: 0.80, #queue-req: 0",
            "Decode batch. #running-req: 4, fwd occupancy: 87.31%, #queue-req: 0",
            "Decode batch. #running-req: 4, mamba usage: 0.10, #queue-req: 0",
            "Decode batch. #running-req: 4, npu graph: True,, #queue-req: 0",
            "Prefill batch. #new-seq: 1, #new-token: 5, #cached-token: 0, token usage: 0.00, #running-req: 0, #queue-req: 0, #inflight-req: 2",
            "Prefill batch. #seq: 1, #new-token: 5, #queue-req: 0",
            "Prefill batch(mixed #running-req: 3). #new-seq: 1, npu graph: True",
            "Prefill batch. #new-seq: 1, #new-token: 5, input throughput (token/s): 128879.56",
            "Prefill batch. #new-seq: 1, mamba usage: 0.50, #queue-req: 0",
        ] {
            agree(text);
        }
    }
}
