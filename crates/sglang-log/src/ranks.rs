//! Rank tags of the log prefix (`DP1 TP3 EP3`, spec §1.2) and the old in-message `[gpu=N]`.

use crate::grammar::PResult;
use nom::Parser;
use nom::branch::alt;
use nom::bytes::complete::tag;
use nom::character::complete::digit1;
use nom::combinator::{all_consuming, value, verify};

/// Which rank a tag names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Rank {
    Dp,
    Tp,
    Ep,
    Pp,
    AttnCp,
    MoeDp,
    Gpu,
}

/// One rank tag: a name (`DP`, `TP`, `EP`, `PP`, `ATTN_CP`, `MOE_DP`, `gpu=`, `gpu_id=`) and
/// 1 to 9 digits.
pub(crate) fn rank_tag(i: &[u8]) -> PResult<'_, (Rank, u32)> {
    let name = alt((
        value(Rank::Tp, tag(&b"TP"[..])),
        value(Rank::Dp, tag(&b"DP"[..])),
        value(Rank::Ep, tag(&b"EP"[..])),
        value(Rank::Pp, tag(&b"PP"[..])),
        value(Rank::AttnCp, tag(&b"ATTN_CP"[..])),
        value(Rank::MoeDp, tag(&b"MOE_DP"[..])),
        value(Rank::Gpu, tag(&b"gpu="[..])),
        value(Rank::Gpu, tag(&b"gpu_id="[..])),
    ));
    let number = verify(digit1, |d: &[u8]| d.len() <= 9)
        .map(|d: &[u8]| d.iter().fold(0u32, |n, c| n * 10 + u32::from(c - b'0')));
    (name, number).parse(i)
}

/// The ranks a line was printed by, taken from the prefix tokens `DP{d}`, `PP{p}`, `ATTN_CP{c}`,
/// `MOE_DP{m}`, `TP{t}`, `EP{e}` (any order, any subset) or from the v0.1.17 – v0.2.13
/// in-message tag `[gpu_id=N]` / `[gpu=N]` (`gpu`). A field is `None` when the line did not
/// carry that token; SGLang drops `TP` when tp_size is 1 (v0.4.6.post2+), so `None` is not
/// "rank 0".
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RankTags {
    /// Data-parallel rank (`DP{n}`).
    pub dp: Option<u32>,
    /// Pipeline-parallel stage (`PP{n}`).
    pub pp: Option<u32>,
    /// Attention context-parallel rank (`ATTN_CP{n}`, v0.5.9+).
    pub attn_cp: Option<u32>,
    /// MoE data-parallel rank (`MOE_DP{n}`, v0.5.9+).
    pub moe_dp: Option<u32>,
    /// Tensor-parallel rank (`TP{n}`).
    pub tp: Option<u32>,
    /// MoE expert-parallel rank (`EP{n}`, v0.4.10+).
    pub ep: Option<u32>,
    /// GPU id of the in-message tag `[gpu=N]` / `[gpu_id=N]` (≤ v0.2.13).
    pub gpu: Option<u32>,
}

impl RankTags {
    /// Whether no rank token was present.
    pub fn is_empty(&self) -> bool {
        *self == RankTags::default()
    }

    /// Applies one prefix token such as `DP1`, `TP3`, `ATTN_CP0`. Returns `false` (and changes
    /// nothing) when the token is not a rank tag.
    pub(crate) fn apply_token(&mut self, tok: &str) -> bool {
        self.apply_token_bytes(tok.as_bytes())
    }

    /// [`RankTags::apply_token`] on bytes: the whole token must be one [`rank_tag`].
    #[inline]
    pub(crate) fn apply_token_bytes(&mut self, tok: &[u8]) -> bool {
        match all_consuming(rank_tag).parse(tok) {
            Ok((_, (which, n))) => {
                *self.slot(which) = Some(n);
                true
            }
            Err(_) => false,
        }
    }

    fn slot(&mut self, which: Rank) -> &mut Option<u32> {
        match which {
            Rank::Dp => &mut self.dp,
            Rank::Tp => &mut self.tp,
            Rank::Ep => &mut self.ep,
            Rank::Pp => &mut self.pp,
            Rank::AttnCp => &mut self.attn_cp,
            Rank::MoeDp => &mut self.moe_dp,
            Rank::Gpu => &mut self.gpu,
        }
    }

    /// Fills the fields that are `None` here from `other`.
    pub(crate) fn fill_from(&mut self, other: &RankTags) {
        self.dp = self.dp.or(other.dp);
        self.pp = self.pp.or(other.pp);
        self.attn_cp = self.attn_cp.or(other.attn_cp);
        self.moe_dp = self.moe_dp.or(other.moe_dp);
        self.tp = self.tp.or(other.tp);
        self.ep = self.ep.or(other.ep);
        self.gpu = self.gpu.or(other.gpu);
    }
}

impl std::fmt::Display for RankTags {
    /// Writes the tags in SGLang's current order, e.g. `DP1 TP3`, `PP0 ATTN_CP1 TP1`,
    /// `gpu=0`; `-` when no tag was present.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let parts = [
            ("DP", self.dp),
            ("PP", self.pp),
            ("ATTN_CP", self.attn_cp),
            ("MOE_DP", self.moe_dp),
            ("TP", self.tp),
            ("EP", self.ep),
            ("gpu=", self.gpu),
        ];
        let mut first = true;
        for (name, v) in parts {
            if let Some(v) = v {
                if !first {
                    f.write_str(" ")?;
                }
                write!(f, "{name}{v}")?;
                first = false;
            }
        }
        if first {
            f.write_str("-")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_and_display() {
        let mut r = RankTags::default();
        assert_eq!(r.to_string(), "-");
        assert!(r.apply_token("TP3"));
        assert!(r.apply_token("DP1"));
        assert!(!r.apply_token("TPX"));
        assert!(!r.apply_token("file.py:222"));
        assert!(!r.apply_token("TP"));
        assert_eq!(r.to_string(), "DP1 TP3");
        assert!(r.apply_token("ATTN_CP1"));
        assert!(r.apply_token("MOE_DP2"));
        assert!(r.apply_token("PP0"));
        assert!(r.apply_token("EP3"));
        assert_eq!(r.to_string(), "DP1 PP0 ATTN_CP1 MOE_DP2 TP3 EP3");
    }
}
