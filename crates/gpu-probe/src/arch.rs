//! GPU architecture from NVML or from the marketing name.

use serde::Serialize;

/// GPU architecture family. Derived from NVML's `nvmlDeviceGetArchitecture` when live, and from
/// the marketing name for files (see [`Architecture::from_name`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum Architecture {
    /// Kepler (K80, …).
    Kepler,
    /// Maxwell (M40, …).
    Maxwell,
    /// Pascal (P100, P40, GTX 10xx).
    Pascal,
    /// Volta (V100, TITAN V).
    Volta,
    /// Turing (T4, RTX 20xx, GTX 16xx, Quadro RTX 6000/8000).
    Turing,
    /// Ampere (A100, A800, A10, A30, A40, RTX 30xx, RTX A6000).
    Ampere,
    /// Ada Lovelace (L40, L40S, L4, L20, RTX 40xx, RTX 6000 Ada).
    Ada,
    /// Hopper (H100, H200, H20, H800, GH200).
    Hopper,
    /// Blackwell (B200, B100, B300, GB200, GB300, GB10, RTX PRO 6000 Blackwell, RTX 50xx, RTX 6000D).
    Blackwell,
}

impl Architecture {
    /// Architecture from a GPU name as NVML or `nvidia-smi` print it (case-insensitive; the
    /// `NVIDIA`, `GeForce`, `Tesla`, `Quadro` prefixes are ignored; a name the table truncated
    /// with `...` still matches when the model number survived). Returns `None` for names it does
    /// not know rather than guessing.
    ///
    /// Rules, first match wins: a word `Blackwell` or `Ada` in the name; a family name alone
    /// (`Hopper`, `Ampere`, …: what `nvidia-smi -q` prints as `Product Architecture`); the RTX PRO series
    /// (Blackwell only); data-centre model numbers (B100/B200/B300/GB200/GB300/GB10 → Blackwell,
    /// H100/H200/H20/H800/GH200 → Hopper, A100/A800/A10/A10G/A16/A2/A30/A40 → Ampere,
    /// L40/L40S/L4/L20 → Ada, T4 → Turing, V100 → Volta, P100/P40/P4 → Pascal); workstation
    /// `RTX 6000D`/`RTX 5000D` (China-market Blackwell) and `RTX A…` (Ampere); consumer
    /// `RTX 50xx/40xx/30xx/20xx`, `GTX 16xx/10xx`, `TITAN V/RTX`.
    pub fn from_name(name: &str) -> Option<Architecture> {
        use Architecture::*;
        let upper = name.to_ascii_uppercase();
        let words: Vec<&str> = upper
            .split(|c: char| c.is_whitespace() || c == '-' || c == '_' || c == '/')
            .map(|w| w.trim_end_matches('.'))
            .filter(|w| !w.is_empty())
            .collect();
        let has = |w: &str| words.contains(&w);
        if has("BLACKWELL") {
            return Some(Blackwell);
        }
        if has("ADA") {
            return Some(Ada);
        }
        // `nvidia-smi -q`'s `Product Architecture` line names the family itself.
        let family = [
            ("HOPPER", Hopper),
            ("AMPERE", Ampere),
            ("TURING", Turing),
            ("VOLTA", Volta),
            ("PASCAL", Pascal),
            ("MAXWELL", Maxwell),
            ("KEPLER", Kepler),
        ];
        if let [only] = words.as_slice()
            && let Some((_, a)) = family.iter().find(|(w, _)| w == only)
        {
            return Some(*a);
        }
        let pos_rtx = words.iter().position(|w| *w == "RTX");
        if let Some(i) = pos_rtx
            && words.get(i + 1) == Some(&"PRO")
        {
            // RTX PRO 6000/5000/4500/4000 exist only as Blackwell parts so far.
            return Some(Blackwell);
        }
        for w in &words {
            let a = match *w {
                "B100" | "B200" | "B300" | "GB200" | "GB300" | "GB10" | "GB100" => Some(Blackwell),
                "H100" | "H200" | "H20" | "H800" | "GH200" | "H100L" | "H100NVL" => Some(Hopper),
                "A100" | "A800" | "A10" | "A10G" | "A10M" | "A16" | "A2" | "A30" | "A40" => {
                    Some(Ampere)
                }
                "L40" | "L40S" | "L4" | "L20" | "L2" => Some(Ada),
                "T4" | "T4G" => Some(Turing),
                "V100" | "V100S" => Some(Volta),
                "P100" | "P40" | "P4" | "P6" => Some(Pascal),
                "K80" | "K40" | "K40M" | "K20" => Some(Kepler),
                "M40" | "M60" | "M10" => Some(Maxwell),
                _ => None,
            };
            if a.is_some() {
                return a;
            }
        }
        // Workstation and consumer numbers follow "RTX" / "GTX" / "TITAN".
        if pos_rtx.is_some() && has("QUADRO") {
            // Quadro RTX 4000/5000/6000/8000 are all Turing.
            return Some(Turing);
        }
        if let Some(i) = pos_rtx
            && let Some(next) = words.get(i + 1)
            && let Some(a) = rtx_number(next, words.get(i + 2).copied())
        {
            return Some(a);
        }
        if let Some(i) = words.iter().position(|w| *w == "GTX")
            && let Some(n) = words.get(i + 1).and_then(|w| leading_number(w))
        {
            return match n {
                1600..=1699 => Some(Turing),
                1000..=1099 => Some(Pascal),
                900..=999 => Some(Maxwell),
                _ => None,
            };
        }
        if let Some(i) = words.iter().position(|w| *w == "TITAN") {
            return match words.get(i + 1).copied() {
                Some("V") => Some(Volta),
                Some("RTX") => Some(Turing),
                Some("X") | Some("XP") => Some(Pascal),
                _ => None,
            };
        }
        None
    }

    /// Map NVML's enum; `Unknown` (a newer family than the wrapper knows) gives `None`.
    pub(crate) fn from_nvml(a: nvml_wrapper::enums::device::DeviceArchitecture) -> Option<Self> {
        use nvml_wrapper::enums::device::DeviceArchitecture as N;
        match a {
            N::Kepler => Some(Architecture::Kepler),
            N::Maxwell => Some(Architecture::Maxwell),
            N::Pascal => Some(Architecture::Pascal),
            N::Volta => Some(Architecture::Volta),
            N::Turing => Some(Architecture::Turing),
            N::Ampere => Some(Architecture::Ampere),
            N::Ada => Some(Architecture::Ada),
            N::Hopper => Some(Architecture::Hopper),
            N::Blackwell => Some(Architecture::Blackwell),
            N::Unknown => None,
        }
    }
}

/// The word after "RTX": `5090` → Blackwell, `6000D` → Blackwell, `A6000` → Ampere,
/// `6000` + `ADA` and `Quadro RTX …` are handled by the caller.
fn rtx_number(word: &str, after: Option<&str>) -> Option<Architecture> {
    use Architecture::*;
    if word.len() > 1 && word.starts_with('A') && word[1..].bytes().all(|b| b.is_ascii_digit()) {
        return Some(Ampere);
    }
    if (word == "6000D" || word == "5000D") && after != Some("ADA") {
        return Some(Blackwell);
    }
    let n = leading_number(word)?;
    match n {
        5000..=5099 => Some(Blackwell),
        4000..=4099 => Some(Ada),
        3000..=3099 => Some(Ampere),
        2000..=2099 => Some(Turing),
        _ => None,
    }
}

fn leading_number(word: &str) -> Option<u32> {
    let end = word.bytes().take_while(|b| b.is_ascii_digit()).count();
    word[..end].parse().ok()
}

#[cfg(test)]
mod tests {
    use super::Architecture::{self, *};

    #[test]
    fn names_map_to_families() {
        let cases: &[(&str, Option<Architecture>)] = &[
            ("NVIDIA B200", Some(Blackwell)),
            ("NVIDIA B100", Some(Blackwell)),
            ("NVIDIA GB200", Some(Blackwell)),
            ("NVIDIA GB300", Some(Blackwell)),
            (
                "NVIDIA RTX PRO 6000 Blackwell Server Edition",
                Some(Blackwell),
            ),
            ("NVIDIA RTX PRO 6000 Blac...", Some(Blackwell)),
            ("NVIDIA GeForce RTX 5090", Some(Blackwell)),
            ("NVIDIA RTX 6000D", Some(Blackwell)),
            ("NVIDIA H100 80GB HBM3", Some(Hopper)),
            ("NVIDIA H200", Some(Hopper)),
            ("NVIDIA H20", Some(Hopper)),
            ("NVIDIA GH200 480GB", Some(Hopper)),
            ("NVIDIA A100-SXM4-80GB", Some(Ampere)),
            ("NVIDIA A10G", Some(Ampere)),
            ("NVIDIA GeForce RTX 3090", Some(Ampere)),
            ("NVIDIA RTX A6000", Some(Ampere)),
            ("NVIDIA L40S", Some(Ada)),
            ("NVIDIA GeForce RTX 4090", Some(Ada)),
            ("NVIDIA RTX 6000 Ada Generation", Some(Ada)),
            ("Quadro RTX 6000", Some(Turing)),
            ("Tesla T4", Some(Turing)),
            ("Tesla V100-SXM2-16GB", Some(Volta)),
            ("Tesla P100-PCIE-16GB", Some(Pascal)),
            ("NVIDIA GeForce GTX 1080 Ti", Some(Pascal)),
            ("AMD Instinct MI300X", None),
            // `nvidia-smi -q`'s Product Architecture (a real H200 prints `Hopper`)
            ("Hopper", Some(Hopper)),
            ("Ada Lovelace", Some(Ada)),
            ("Ampere", Some(Ampere)),
            ("NVIDIA Ampere Altra", None),
            ("", None),
        ];
        for (name, want) in cases {
            assert_eq!(Architecture::from_name(name), *want, "{name}");
        }
    }
}
