//! Redaction of secrets (an API key, a URL's password) from text a server echoes: error
//! bodies, logs, published reports. Never from answers: a model's answer is data, and a
//! redacted answer is a silently wrong one.
//!
//! A server may echo a key as it was sent, URL-encoded (`%2B` for `+`), `\u`-escaped by a JSON
//! encoder (`\u0073\u006b…`, any mix of escaped and plain characters), or base64-encoded (a
//! Basic-auth header, a dumped request), at any alignment inside a longer base64 string. So
//! [`Secrets::redact`] matches the secret on a decoded view of the text (`%XX`, `\uXXXX`, `\/`
//! decoded, each decoded byte mapped back to its span in the text) and the secret's base64
//! forms (standard and URL-safe alphabets, the characters that depend on the secret's bytes
//! only, at each of the three alignments) on the text itself, and replaces the spans in the
//! text by `<redacted>`.
//!
//! A secret shorter than [`MIN_SECRET_LEN`] is not redacted: a three-letter "key" (`tok`)
//! would rewrite every occurrence of a common word, and is no secret anyway.

use std::borrow::Cow;

/// Shortest secret redacted (bytes): shorter ones are common words, not keys.
pub const MIN_SECRET_LEN: usize = 8;

/// What replaces a secret.
pub const REDACTED: &str = "<redacted>";

/// A set of secrets to redact from text. Cheap to clone; `Debug` shows only how many.
#[derive(Clone, Default)]
pub struct Secrets {
    /// The secrets themselves, matched on the decoded view.
    raw: Vec<Vec<u8>>,
    /// Base64 forms, matched on the text as it is.
    encoded: Vec<String>,
}

impl std::fmt::Debug for Secrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Secrets({} redacted)", self.raw.len())
    }
}

impl Secrets {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `secret` (ignored when shorter than [`MIN_SECRET_LEN`] bytes, or already present).
    pub fn add(&mut self, secret: &str) {
        let b = secret.as_bytes();
        if b.len() < MIN_SECRET_LEN || self.raw.iter().any(|r| r == b) {
            return;
        }
        self.raw.push(b.to_vec());
        for form in base64_forms(b) {
            if !self.encoded.contains(&form) {
                self.encoded.push(form);
            }
        }
    }

    /// `self` with `secret` added (see [`Secrets::add`]).
    pub fn with(mut self, secret: &str) -> Self {
        self.add(secret);
        self
    }

    /// Adds the password of `url`'s user info, as written and percent-decoded (see
    /// [`Secrets::add`]); nothing for a URL without one.
    pub fn add_url_password(&mut self, url: &str) {
        let Ok(u) = reqwest::Url::parse(url) else {
            return;
        };
        if let Some(p) = u.password() {
            let decoded = percent_encoding::percent_decode_str(p)
                .decode_utf8_lossy()
                .into_owned();
            self.add(p);
            self.add(&decoded);
        }
    }

    /// Whether there is nothing to redact.
    pub fn is_empty(&self) -> bool {
        self.raw.is_empty()
    }

    /// `text` with every form of every secret replaced by [`REDACTED`].
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        if self.is_empty() {
            return Cow::Borrowed(text);
        }
        let mut spans: Vec<(usize, usize)> = Vec::new();
        // A base64 form leaves out the characters it shares with its neighbours: the span
        // takes one such character on each side, and the padding.
        let b = text.as_bytes();
        let b64 = |i: usize| {
            b.get(i)
                .is_some_and(|c| c.is_ascii_alphanumeric() || b"+/-_".contains(c))
        };
        for form in &self.encoded {
            for (i, m) in text.match_indices(form.as_str()) {
                let start = if i > 0 && b64(i - 1) { i - 1 } else { i };
                let mut end = i + m.len();
                if b64(end) {
                    end += 1;
                }
                while b.get(end) == Some(&b'=') {
                    end += 1;
                }
                spans.push((start, end));
            }
        }
        let (decoded, origin) = decoded_view(text);
        for secret in &self.raw {
            let mut from = 0;
            while let Some(i) = find(&decoded[from..], secret) {
                let (s, e) = (from + i, from + i + secret.len());
                spans.push((origin[s].0, origin[e - 1].1));
                from = s + 1;
            }
        }
        if spans.is_empty() {
            return Cow::Borrowed(text);
        }
        spans.sort_unstable();
        let mut out = String::with_capacity(text.len());
        let mut at = 0;
        for (s, e) in spans {
            if e <= at {
                continue;
            }
            if s >= at {
                out.push_str(&text[at..s]);
                out.push_str(REDACTED);
            }
            at = e;
        }
        out.push_str(&text[at..]);
        Cow::Owned(out)
    }
}

/// The first index of `needle` in `hay`.
fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() || hay.len() < needle.len() {
        return None;
    }
    hay.windows(needle.len()).position(|w| w == needle)
}

/// The text's bytes with `%XX`, `\uXXXX` and `\/` decoded (the backslash possibly escaped
/// itself, any number of times), and for each decoded byte the byte
/// span of the text it came from. Spans lie on char boundaries of `text`.
fn decoded_view(text: &str) -> (Vec<u8>, Vec<(usize, usize)>) {
    let b = text.as_bytes();
    let hex = |s: &[u8]| -> Option<u32> {
        if !s.iter().all(u8::is_ascii_hexdigit) {
            return None;
        }
        u32::from_str_radix(std::str::from_utf8(s).ok()?, 16).ok()
    };
    let mut out = Vec::with_capacity(b.len());
    let mut origin = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%'
            && let Some(v) = b.get(i + 1..i + 3).and_then(hex)
        {
            out.push(v as u8);
            origin.push((i, i + 3));
            i += 3;
            continue;
        }
        if b[i] == b'\\' {
            // One escape or several (a JSON string inside a JSON string: `\\u0073`).
            let j = i + b[i..].iter().take_while(|&&c| c == b'\\').count();
            if b.get(j) == Some(&b'/') {
                out.push(b'/');
                origin.push((i, j + 1));
                i = j + 1;
                continue;
            }
            if matches!(b.get(j), Some(b'u' | b'U'))
                && let Some(c) = b.get(j + 1..j + 5).and_then(hex).and_then(char::from_u32)
            {
                let mut buf = [0u8; 4];
                for &x in c.encode_utf8(&mut buf).as_bytes() {
                    out.push(x);
                    origin.push((i, j + 5));
                }
                i = j + 5;
                continue;
            }
        }
        // One whole char, so that every span ends on a char boundary.
        let len = text[i..].chars().next().map_or(1, char::len_utf8);
        for &x in &b[i..i + len] {
            out.push(x);
            origin.push((i, i + len));
        }
        i += len;
    }
    (out, origin)
}

/// The base64 characters of `secret` at each of the three alignments, in the standard and the
/// URL-safe alphabets: only the characters whose six bits all come from the secret.
fn base64_forms(secret: &[u8]) -> Vec<String> {
    use base64::Engine as _;
    use base64::engine::general_purpose::{STANDARD_NO_PAD, URL_SAFE_NO_PAD};
    let mut out = Vec::new();
    for k in 0..3usize {
        let mut bytes = vec![0u8; k];
        bytes.extend_from_slice(secret);
        let (first, last) = ((8 * k).div_ceil(6), (8 * (k + secret.len())) / 6);
        for engine in [&STANDARD_NO_PAD, &URL_SAFE_NO_PAD] {
            let enc = engine.encode(&bytes);
            if let Some(s) = enc.get(first..last)
                && s.len() >= MIN_SECRET_LEN
                && !out.iter().any(|o: &String| o == s)
            {
                out.push(s.to_string());
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine as _;

    const KEY: &str = "sk-Abc+def/123=";

    fn red(text: &str) -> String {
        Secrets::new().with(KEY).redact(text).into_owned()
    }

    #[test]
    fn plain_percent_and_unicode_escaped_forms_are_redacted() {
        assert_eq!(red(&format!("key {KEY} bad")), "key <redacted> bad");
        let pct = percent_encoding::utf8_percent_encode(KEY, percent_encoding::NON_ALPHANUMERIC)
            .to_string();
        assert_eq!(red(&format!("?k={pct}&x")), "?k=<redacted>&x");
        let uni: String = KEY
            .chars()
            .map(|c| format!("\\u{:04x}", c as u32))
            .collect();
        assert_eq!(red(&format!("\"{uni}\"")), "\"<redacted>\"");
        // Escaped twice (JSON inside JSON).
        let twice: String = KEY
            .chars()
            .map(|c| format!("\\\\u{:04x}", c as u32))
            .collect();
        assert_eq!(red(&format!("[{twice}]")), "[<redacted>]");
        // A JSON encoder that escapes only `/` and `+`.
        assert_eq!(red("sk-Abc\\u002bdef\\/123= ok"), "<redacted> ok");
    }

    #[test]
    fn base64_at_any_alignment_is_redacted() {
        let e = base64::engine::general_purpose::STANDARD;
        for prefix in ["", "a", "ab", "Bearer ", "user:"] {
            let enc = e.encode(format!("{prefix}{KEY}"));
            let out = red(&format!("hdr {enc} end"));
            assert!(
                out.contains(REDACTED) && !out.contains(&enc),
                "{prefix}: {out}"
            );
        }
    }

    #[test]
    fn a_url_password_is_added_decoded_too() {
        let mut s = Secrets::new();
        s.add_url_password("http://admin:p%40ssword-123@h:1/x");
        assert_eq!(
            s.redact("a p@ssword-123 b p%40ssword-123"),
            "a <redacted> b <redacted>"
        );
        let mut none = Secrets::new();
        none.add_url_password("http://h:1");
        none.add_url_password("not a url");
        assert!(none.is_empty());
    }

    #[test]
    fn short_keys_are_not_secrets_and_text_without_them_is_borrowed() {
        let s = Secrets::new().with("tok");
        assert!(s.is_empty());
        assert!(matches!(s.redact("tok tok"), Cow::Borrowed("tok tok")));
        let s = Secrets::new().with(KEY);
        assert!(matches!(
            s.redact("nothing here é %zz \\u12"),
            Cow::Borrowed(_)
        ));
        assert_eq!(
            s.redact("é{KEY}é".replace("{KEY}", KEY).as_str()),
            "é<redacted>é"
        );
    }
}
