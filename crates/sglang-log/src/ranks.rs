//! Rank tags of the log prefix (`DP1 TP3 EP3`, spec §1.2) and the old in-message `[gpu=N]`.

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
        let b = tok.as_bytes();
        let split = b.iter().position(u8::is_ascii_digit).unwrap_or(b.len());
        if split == 0 || split == b.len() || b.len() - split > 9 {
            return false;
        }
        let (name, num) = tok.split_at(split);
        let Some(n) = crate::num::parse_u64(num).and_then(|n| u32::try_from(n).ok()) else {
            return false;
        };
        let slot = match name {
            "DP" => &mut self.dp,
            "TP" => &mut self.tp,
            "EP" => &mut self.ep,
            "PP" => &mut self.pp,
            "ATTN_CP" => &mut self.attn_cp,
            "MOE_DP" => &mut self.moe_dp,
            "gpu=" | "gpu_id=" => &mut self.gpu,
            _ => return false,
        };
        *slot = Some(n);
        true
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
