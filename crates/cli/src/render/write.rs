//! The writers: the sections laid out as terminal text (each piece of the report one line,
//! its control characters escaped) and as Markdown.

use super::*;

/// Column widths for a table: the widest cell of each column.
fn widths(header: &[&str], rows: &[Vec<String>]) -> Vec<usize> {
    let mut w: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (i, cell) in row.iter().enumerate() {
            if let Some(x) = w.get_mut(i) {
                *x = (*x).max(cell.chars().count());
            }
        }
    }
    w
}

/// One piece of the report as one line of terminal text: control characters (an escape
/// sequence, a carriage return, a newline a file name or a label carried) shown as escapes.
fn esc(s: &str) -> std::borrow::Cow<'_, str> {
    crate::flags::one_line(s)
}

/// Render the report as terminal text: every piece of the report one line, its control
/// characters escaped ([`crate::flags::one_line`]). With `color`, ANSI styles are emitted (the caller decides,
/// e.g. through `anstream`, whether the terminal keeps them; `NO_COLOR` is honoured there).
pub fn text(r: &Report, color: bool) -> String {
    let paint = |s: Style, t: &str| {
        if color {
            format!("{s}{t}{s:#}")
        } else {
            t.to_string()
        }
    };
    let mut o = String::new();
    let _ = writeln!(o, "{}", paint(BOLD, "throughput-doctor diagnosis"));
    let _ = writeln!(o);
    let h = &r.headline;
    let _ = writeln!(
        o,
        "{} {}",
        paint(
            style_for(r.bottleneck),
            &format!("Verdict: {}:", esc(&h.label))
        ),
        esc(&h.summary)
    );
    if let Some(e) = &r.expectation {
        let _ = writeln!(o, "{} {}", paint(BOLD, "Answer:"), esc(&e.text));
    }
    for s in sections(r) {
        if let Some(t) = &s.title {
            let _ = writeln!(o, "{}", paint(BOLD, &esc(t)));
        }
        for b in &s.blocks {
            match b {
                Block::Lines(lines) => {
                    let indent = if s.title.is_some() { "  " } else { "" };
                    for l in lines {
                        let _ = writeln!(o, "{indent}{}", esc(l));
                    }
                }
                Block::Notes(lines) => {
                    for l in lines {
                        let _ = writeln!(o, "{}", paint(DIM, &format!("  - {}", esc(l))));
                    }
                }
                Block::Table { header, rows } => {
                    let rows: Vec<Vec<String>> = rows
                        .iter()
                        .map(|r| r.iter().map(|c| esc(c).into_owned()).collect())
                        .collect();
                    let w = widths(header, &rows);
                    let line = |cells: Vec<&str>| {
                        let mut l = String::from(" ");
                        for (i, c) in cells.iter().enumerate() {
                            let pad = w[i].saturating_sub(c.chars().count());
                            if i == 0 {
                                let _ = write!(l, " {c}{}", " ".repeat(pad));
                            } else {
                                let _ = write!(l, "  {}{c}", " ".repeat(pad));
                            }
                        }
                        l
                    };
                    let _ = writeln!(o, "{}", line(header.to_vec()));
                    for row in &rows {
                        let _ = writeln!(o, "{}", line(row.iter().map(String::as_str).collect()));
                    }
                }
                Block::Recommendations(recs) => {
                    for (i, rec) in recs.iter().enumerate() {
                        let _ = writeln!(o, "  {}. {}", i + 1, esc(&rec.action));
                        let _ = writeln!(o, "     gain: {}", esc(&rec.expected_gain));
                        let _ = writeln!(o, "     risk: {}", esc(&rec.risk));
                    }
                }
                Block::Findings(fs) => {
                    for (i, fi) in fs.iter().enumerate() {
                        let title = format!(
                            "{}. {} [{} confidence]",
                            i + 1,
                            esc(&fi.title),
                            confidence_label(fi.confidence)
                        );
                        let _ = writeln!(o, "{}", paint(BOLD, &title));
                        let _ = writeln!(o, "   {}", esc(&fi.detail));
                        for l in finding_lines(fi) {
                            let _ = writeln!(o, "   {}", esc(&l));
                        }
                    }
                }
            }
        }
        let _ = writeln!(o);
    }
    o
}

/// The `.` that ends a sentence after `s`, or nothing when `s` already ends one: with `.`,
/// `!` or `?`, possibly inside closing backticks, quotes, brackets or `**` (a quoted log line
/// such as `` `Retract requests.` `` ends its sentence too).
fn full_stop(s: &str) -> &'static str {
    let t = s
        .trim_end()
        .trim_end_matches(['`', '"', '\'', ')', ']', '*', '\u{201d}', '\u{2019}']);
    if t.ends_with(['.', '!', '?']) {
        ""
    } else {
        "."
    }
}

/// Render the report as Markdown (for issues and chat), each piece of the report one line as
/// in [`text`].
pub fn markdown(r: &Report) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "# throughput-doctor diagnosis\n");
    let h = &r.headline;
    let _ = writeln!(o, "**Verdict: {}:** {}\n", esc(&h.label), esc(&h.summary));
    if let Some(e) = &r.expectation {
        let _ = writeln!(o, "**Answer:** {}\n", esc(&e.text));
    }
    for s in sections(r) {
        if let Some(t) = &s.title {
            let _ = writeln!(o, "## {}\n", esc(t));
        }
        for b in &s.blocks {
            match b {
                Block::Lines(lines) if !lines.is_empty() => {
                    let lines: Vec<_> = lines.iter().map(|l| esc(l)).collect();
                    let _ = writeln!(o, "```text\n{}\n```\n", lines.join("\n"));
                }
                Block::Lines(_) => {}
                Block::Notes(lines) => {
                    for l in lines {
                        let _ = writeln!(o, "- {}", esc(l));
                    }
                    let _ = writeln!(o);
                }
                Block::Table { header, rows } => {
                    let _ = writeln!(o, "| {} |", header.join(" | "));
                    let _ = writeln!(o, "|{}", "---|".repeat(header.len()));
                    for row in rows {
                        let row: Vec<_> = row.iter().map(|c| esc(c)).collect();
                        let _ = writeln!(o, "| {} |", row.join(" | "));
                    }
                    let _ = writeln!(o);
                }
                Block::Recommendations(recs) => {
                    for (i, rec) in recs.iter().enumerate() {
                        let _ = writeln!(
                            o,
                            "{}. **{}**{} Gain: {}{} Risk: {}{}",
                            i + 1,
                            esc(&rec.action),
                            full_stop(&rec.action),
                            esc(&rec.expected_gain),
                            full_stop(&rec.expected_gain),
                            esc(&rec.risk),
                            full_stop(&rec.risk)
                        );
                    }
                    let _ = writeln!(o);
                }
                Block::Findings(fs) => {
                    for (i, fi) in fs.iter().enumerate() {
                        let _ = writeln!(
                            o,
                            "{}. **{}** ({} confidence). {}",
                            i + 1,
                            esc(&fi.title),
                            confidence_label(fi.confidence),
                            esc(&fi.detail)
                        );
                        for l in finding_lines(fi) {
                            let _ = writeln!(o, "   {}", esc(&l));
                        }
                    }
                    let _ = writeln!(o);
                }
            }
        }
    }
    o
}
