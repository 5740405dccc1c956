//! The `--plot` timeline: structure of the SVG for the kimi-k25-b2 scenario, and degenerate input.

use throughput_doctor_cli::plot;

use std::path::Path;

use diagnosis::{Bottleneck, Evidence, EvidenceBuilder};
use plot::{PlotError, TITLE_REQUESTS, TITLE_THROUGHPUT, TITLE_USAGE};
use sglang_log::LogReader;

fn evidence_from_text(name: &str, text: &[u8]) -> Evidence {
    let mut b = EvidenceBuilder::new();
    let id = b.add_source(name);
    let mut reader = LogReader::from_reader(name, text);
    let stats = reader.for_each(|rec| b.push(id, rec)).expect("read log");
    b.finish_source(id, &stats);
    b.build()
}

fn b2() -> Evidence {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/data/scenarios/kimi-k25-b2/server.log");
    let text = std::fs::read(&path).expect("read kimi-k25-b2/server.log");
    evidence_from_text("kimi-k25-b2/server.log", &text)
}

/// Whether the SVG has a `<text>` element reading exactly `label` (plotters puts it on its own line).
fn has_text(svg: &str, label: &str) -> bool {
    svg.contains(&format!(">\n{label}\n</text>"))
}

fn count(hay: &str, needle: &str) -> usize {
    hay.matches(needle).count()
}

#[test]
fn b2_timeline_has_three_panels_lines_shading_and_retractions() {
    let ev = b2();
    let report = diagnosis::diagnose(&ev);
    assert_eq!(report.bottleneck, Bottleneck::KvCacheBound);
    let svg = plot::render_svg(&ev, &report).expect("render");

    assert!(svg.starts_with("<svg"), "{}", &svg[..80.min(svg.len())]);
    assert!(svg.trim_end().ends_with("</svg>"));
    assert!(svg.contains(r#"width="1200""#) && svg.contains(r#"height="960""#));
    for title in [TITLE_THROUGHPUT, TITLE_REQUESTS, TITLE_USAGE] {
        assert_eq!(count(&svg, title), 1, "panel title {title}");
    }
    assert!(svg.contains("throughput-doctor verdict: KV-cache bound"));
    assert!(
        svg.contains(plot::X_DESC_MINUTES),
        "a 2-hour run is in minutes"
    );
    for label in ["tok/s", "requests", "fraction 0-1"] {
        assert!(svg.contains(label), "axis label {label}");
    }
    // One scheduler (TP8, no DP): gen throughput, running, queued, token usage are one polyline
    // each (this log has no idle gap to break them), plus one legend swatch each.
    for color in ["#1F77B4", "#2CA02C", "#FF7F0E", "#9467BD"] {
        let n = count(
            &svg,
            &format!(r#"<polyline fill="none" opacity="1" stroke="{color}""#),
        );
        assert_eq!(n, 2, "line + legend swatch in {color}");
    }
    for label in ["gen throughput", "running", "queued", "token usage"] {
        assert!(has_text(&svg, label), "legend {label}");
    }
    // Dashed lines: token usage 0.9 across the panel, the steady mean over the steady span.
    assert!(has_text(&svg, "token usage 0.9"));
    let steady = report.steady_gen_throughput.as_ref().expect("steady rate");
    assert_eq!(steady.value.round(), 727.0);
    assert!(has_text(&svg, "steady mean 727 tok/s"));
    // 8 px dashes every 13 px over ~850 px plot width (~65 each), plus 3 per legend swatch.
    let dashes = count(&svg, r##"stroke="#5A5A5A""##);
    assert!((100..150).contains(&dashes), "{dashes} dashes");

    // Retractions: 1752 lines in the log, one per TP rank; 8 TP ranks print each event.
    let timed = ev.retractions.iter().filter(|r| r.t.is_some()).count();
    assert_eq!(report.retractions.lines, 1752);
    assert_eq!(timed as u64, report.retractions.events);
    assert!(has_text(&svg, &format!("retraction ({timed})")));
    let red_polygons = count(&svg, r##"<polygon"##);
    // Each panel draws one triangle per event, plus one legend triangle.
    assert_eq!(red_polygons, 3 * timed + 1);

    // Ramp and drain shading: the b2 span has both a ramp and a drain, in each of 3 panels.
    let span = report.schedulers[0].span.as_ref().expect("span");
    assert!(span.steady_start_s > span.start_s);
    let grey_rects = count(&svg, r##"fill="#C8C8C8""##);
    let expected_bands = usize::from(span.steady_start_s > span.start_s)
        + usize::from(span.end_s > span.steady_end_s);
    assert_eq!(
        expected_bands, 1,
        "ramp only: the steady span runs to the last line"
    );
    assert_eq!(grey_rects, 3 * expected_bands + 1, "bands + legend swatch");
}

#[test]
fn write_svg_writes_the_file_and_names_the_path_on_error() {
    let ev = b2();
    let report = diagnosis::diagnose(&ev);
    let dir = std::env::temp_dir().join(format!("td-plot-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join("b2.svg");
    plot::write_svg(&ev, &report, &path).expect("write");
    let text = std::fs::read_to_string(&path).expect("read back");
    assert_eq!(text, plot::render_svg(&ev, &report).expect("render again"));
    if let Ok(out) = std::env::var("PLOT_OUT") {
        std::fs::write(out, &text).expect("write PLOT_OUT");
    }

    let bad = dir.join("no-such-dir").join("b2.svg");
    let err = plot::write_svg(&ev, &report, &bad).expect_err("missing dir");
    assert!(matches!(err, PlotError::Io { .. }));
    assert!(err.to_string().contains("no-such-dir"), "{err}");
    std::fs::remove_dir_all(&dir).expect("clean up");
}

#[test]
fn no_timestamps_is_an_error_not_a_panic() {
    let empty = Evidence::default();
    let report = diagnosis::diagnose(&empty);
    assert!(matches!(
        plot::render_svg(&empty, &report),
        Err(PlotError::NoTimedSamples)
    ));

    // Batch lines without timestamps: parsed, but nothing to put on a time axis.
    let log = b"Decode batch, #running-req: 3, #token: 900, token usage: 0.50, gen throughput (token/s): 120.00, #queue-req: 0, \n";
    let ev = evidence_from_text("untimed.log", log);
    assert_eq!(ev.total_batch_lines(), 1);
    let report = diagnosis::diagnose(&ev);
    assert!(matches!(
        plot::render_svg(&ev, &report),
        Err(PlotError::NoTimedSamples)
    ));
}

#[test]
fn one_instant_gives_a_plot_with_a_note() {
    let log = b"[2026-02-10 14:00:01] Decode batch, #running-req: 3, #token: 900, token usage: 0.50, gen throughput (token/s): 120.00, #queue-req: 2, \n\
[2026-02-10 14:00:01] Decode batch, #running-req: 4, #token: 950, token usage: 0.52, gen throughput (token/s): 130.00, #queue-req: 1, \n";
    let ev = evidence_from_text("instant.log", log);
    assert_eq!(ev.total_batch_lines(), 2);
    let report = diagnosis::diagnose(&ev);
    let svg = plot::render_svg(&ev, &report).expect("render degenerate");
    assert!(svg.contains("the x axis is widened to one second"));
    assert!(svg.contains(plot::X_DESC_SECONDS));
    for title in [TITLE_THROUGHPUT, TITLE_REQUESTS, TITLE_USAGE] {
        assert!(svg.contains(title));
    }
    // Two points at one time form a (zero-length) line per gauge; no retractions, no legend triangle.
    assert_eq!(count(&svg, "<polygon"), 0);

    let single = b"[2026-02-10 14:00:01] Decode batch, #running-req: 3, #token: 900, token usage: 0.50, gen throughput (token/s): 120.00, #queue-req: 2, \n";
    let ev = evidence_from_text("single.log", single);
    let report = diagnosis::diagnose(&ev);
    let svg = plot::render_svg(&ev, &report).expect("render one sample");
    // A lone sample is drawn as a dot: gen throughput, running, queued, usage.
    assert_eq!(count(&svg, "<circle"), 4);
    assert!(svg.contains("the x axis is widened to one second"));
}
