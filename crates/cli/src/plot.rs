//! `diagnose --plot FILE.svg`: a timeline picture of the run the report is about.
//!
//! Three stacked panels share one x axis, minutes since the first timestamped batch line
//! (seconds when everything drawn spans less than [`SECONDS_AXIS_BELOW_S`]):
//! 1. generation throughput (tok/s, the `gen throughput` of `Decode batch` lines),
//! 2. running and queued requests (`#running-req`, `#queue-req` of prefill and decode lines),
//! 3. token usage (fraction 0-1 of the KV pool) with a dashed line at 0.9.
//!
//! Each panel shades the ramp (`start_s..steady_start_s`) and the drain (`steady_end_s..end_s`)
//! of the report's spans in light grey and marks retractions with small red triangles at its top
//! edge. With one to four schedulers (DP ranks / PP stages) throughput and usage get one line per
//! scheduler; with more, throughput is summed and usage is the maximum over schedulers, on a
//! grid of [`GRID_POINTS`] times. Running and queued requests are summed over schedulers.
//!
//! The picture is drawn with `plotters`' SVG backend, which writes text as `<text>` elements:
//! fonts are the viewer's job. Nothing here panics on input: samples without a time or with a
//! non-finite value are skipped (and counted in a note under the title).

use std::path::{Path, PathBuf};

use diagnosis::evidence::SchedulerTimeline;
use diagnosis::{Evidence, Report};
use plotters::coord::Shift;
use plotters::prelude::*;

/// Width of the picture (pixels).
pub const WIDTH: u32 = 1200;
/// Height of the picture (pixels).
pub const HEIGHT: u32 = 960;
/// Times on the grid used to sum (or take the maximum of) several schedulers' series.
pub const GRID_POINTS: usize = 1000;
/// Caption of the throughput panel.
pub const TITLE_THROUGHPUT: &str = "Generation throughput (tok/s)";
/// Caption of the requests panel.
pub const TITLE_REQUESTS: &str = "Running and queued requests";
/// Caption of the token-usage panel.
pub const TITLE_USAGE: &str = "KV cache token usage (fraction of the pool)";
/// Usage level drawn as a dashed line in the usage panel (fraction 0-1).
pub const USAGE_MARK: f64 = 0.9;
/// Most schedulers drawn as separate lines; more are summed (throughput) or maxed (usage).
pub const MAX_SEPARATE_LINES: usize = 4;
/// Runs shorter than this (seconds) get an x axis in seconds, longer ones in minutes.
pub const SECONDS_AXIS_BELOW_S: f64 = 180.0;
/// x-axis title for runs of [`SECONDS_AXIS_BELOW_S`] or longer.
pub const X_DESC_MINUTES: &str = "minutes since the first batch line";
/// x-axis title for shorter runs.
pub const X_DESC_SECONDS: &str = "seconds since the first batch line";
/// Width of the legend column right of each panel (pixels).
pub const LEGEND_WIDTH: u32 = 230;
/// Longest headline shown under the verdict (characters); longer ones end in `…`.
pub const HEADLINE_CHARS: usize = 150;

/// Why no picture was made.
#[derive(Debug, thiserror::Error)]
pub enum PlotError {
    /// No prefill or decode line carries a timestamp, so there is no time axis.
    #[error("no batch line carries a timestamp, so there is no timeline to plot")]
    NoTimedSamples,
    /// `plotters` failed while drawing (the message is its error text).
    #[error("drawing the plot: {0}")]
    Draw(String),
    /// The SVG file could not be written.
    #[error("writing {}: {source}", path.display())]
    Io {
        /// The file being written.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
}

fn draw_err<E: std::fmt::Display>(e: E) -> PlotError {
    PlotError::Draw(e.to_string())
}

/// Write the timeline of `ev` / `report` as an SVG file at `path` (see [`render_svg`]).
///
/// # Errors
/// [`PlotError::NoTimedSamples`] and [`PlotError::Draw`] as for [`render_svg`];
/// [`PlotError::Io`] when the file cannot be written.
pub fn write_svg(ev: &Evidence, report: &Report, path: &Path) -> Result<(), PlotError> {
    let svg = render_svg(ev, report)?;
    std::fs::write(path, svg).map_err(|source| PlotError::Io {
        path: path.to_path_buf(),
        source,
    })
}

/// Render the timeline of `ev` (samples) and `report` (verdict, headline, spans) as SVG text,
/// [`WIDTH`] × [`HEIGHT`] pixels.
///
/// Degenerate input (one timestamped line, or every line at the same second) still gives a
/// picture: the x axis is widened to one second and a note says why.
///
/// # Errors
/// [`PlotError::NoTimedSamples`] when no batch line has a timestamp;
/// [`PlotError::Draw`] when `plotters` fails.
pub fn render_svg(ev: &Evidence, report: &Report) -> Result<String, PlotError> {
    let data = Prepared::new(ev, report)?;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT)).into_drawing_area();
        root.fill(&WHITE).map_err(draw_err)?;
        let title_h = 64 + 18 * data.notes.len().min(3) as u32;
        let (title, body) = root.split_vertically(title_h);
        draw_title(&title, report, &data.notes)?;
        let panels = body.split_evenly((3, 1));
        let [p_tps, p_req, p_use] = panels.as_slice() else {
            return Err(PlotError::Draw("expected three panels".into()));
        };
        draw_panel(p_tps, &data, &data.throughput_panel(), false)?;
        draw_panel(p_req, &data, &data.requests_panel(), false)?;
        draw_panel(p_use, &data, &data.usage_panel(), true)?;
        root.present().map_err(draw_err)?;
    }
    Ok(svg)
}

/// The x axis: seconds since `t0` divided by `scale` (60 for minutes, 1 for seconds).
#[derive(Clone, Copy)]
struct Axis {
    t0: f64,
    scale: f64,
}

impl Axis {
    fn x(self, t: f64) -> f64 {
        (t - self.t0) / self.scale
    }
}

/// An x-axis interval (from, to).
type Band = (f64, f64);

/// A point on the x axis and its value.
type Pt = (f64, f64);

/// One labelled line, already split where the log has gaps.
struct Line {
    label: String,
    color: RGBColor,
    segments: Vec<Vec<Pt>>,
}

/// What one panel shows.
struct PanelSpec<'a> {
    caption: &'static str,
    y_desc: &'static str,
    y_max: f64,
    lines: Vec<&'a Line>,
    /// A dashed horizontal line at this value from x to x (x-axis units), with its legend label.
    mark: Option<(f64, (f64, f64), String)>,
    /// Decimal places of the y tick labels.
    y_decimals: usize,
    /// Whether this panel's legend also explains the shading and the retraction markers.
    explain_marks: bool,
}

const PALETTE: [RGBColor; 4] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
];
const C_THROUGHPUT: RGBColor = RGBColor(31, 119, 180);
const C_RUNNING: RGBColor = RGBColor(44, 160, 44);
const C_QUEUED: RGBColor = RGBColor(255, 127, 14);
const C_USAGE: RGBColor = RGBColor(148, 103, 189);
const C_SHADE: RGBColor = RGBColor(200, 200, 200);
const C_RETRACT: RGBColor = RGBColor(220, 20, 20);
const C_MARK: RGBColor = RGBColor(90, 90, 90);

/// Per-scheduler gauges on the log clock (seconds), sorted by time.
struct SchedSeries {
    name: String,
    tps: Vec<Pt>,
    running: Vec<Pt>,
    queued: Vec<Pt>,
    usage: Vec<Pt>,
    /// Longest gap (seconds) across which a value is held; longer gaps break the line.
    max_gap: f64,
}

/// Everything the panels need, in x-axis units (see [`Axis`]).
struct Prepared {
    x_range: (f64, f64),
    /// Axis title, naming the unit.
    x_desc: &'static str,
    throughput: Vec<Line>,
    running: Line,
    queued: Line,
    usage: Vec<Line>,
    shades: Vec<(f64, f64)>,
    retractions: Vec<f64>,
    /// The report's steady generation throughput (tok/s), drawn when throughput is one line.
    steady_tps: Option<f64>,
    /// The steady span (x-axis units): between the ramp and the drain bands.
    steady_x: (f64, f64),
    notes: Vec<String>,
}

fn finite(v: Option<f64>) -> Option<f64> {
    v.filter(|x| x.is_finite())
}

fn count(v: Option<u64>) -> Option<f64> {
    v.map(|x| x as f64)
}

impl SchedSeries {
    fn new(name: String, tl: &SchedulerTimeline, skipped: &mut u64) -> Self {
        let mut s = SchedSeries {
            name,
            tps: Vec::new(),
            running: Vec::new(),
            queued: Vec::new(),
            usage: Vec::new(),
            max_gap: 0.0,
        };
        let mut times = Vec::new();
        for d in tl.decode.samples() {
            let Some(t) = finite(d.t) else {
                *skipped += 1;
                continue;
            };
            times.push(t);
            push_opt(&mut s.tps, t, finite(d.gen_tps));
            push_opt(&mut s.running, t, count(d.running));
            push_opt(&mut s.queued, t, count(d.queue));
            push_opt(&mut s.usage, t, finite(d.usage));
        }
        for p in tl.prefill.samples() {
            let Some(t) = finite(p.t) else {
                *skipped += 1;
                continue;
            };
            times.push(t);
            push_opt(&mut s.running, t, count(p.running));
            push_opt(&mut s.queued, t, count(p.queue));
            push_opt(&mut s.usage, t, finite(p.usage));
        }
        for v in [&mut s.tps, &mut s.running, &mut s.queued, &mut s.usage] {
            v.sort_by(|a, b| a.0.total_cmp(&b.0));
        }
        times.sort_by(f64::total_cmp);
        let mut gaps: Vec<f64> = times.windows(2).map(|w| w[1] - w[0]).collect();
        gaps.sort_by(f64::total_cmp);
        let median = gaps.get(gaps.len() / 2).copied().unwrap_or(0.0);
        // A line is held across ordinary logging intervals but broken across idle periods.
        s.max_gap = (20.0 * median).max(30.0);
        s
    }
}

fn push_opt(v: &mut Vec<Pt>, t: f64, y: Option<f64>) {
    if let Some(y) = y {
        v.push((t, y));
    }
}

/// The value held at `t`: the last point at or before `t`, if it is at most `max_gap` old.
fn held_at(pts: &[Pt], t: f64, max_gap: f64) -> Option<f64> {
    let idx = pts.partition_point(|p| p.0 <= t);
    let p = pts.get(idx.checked_sub(1)?)?;
    (t - p.0 <= max_gap).then_some(p.1)
}

/// Split a time-sorted series (log seconds) into segments (x-axis units) at gaps.
fn segments(pts: &[Pt], axis: Axis, max_gap: f64) -> Vec<Vec<Pt>> {
    let mut out: Vec<Vec<Pt>> = Vec::new();
    let mut last: Option<f64> = None;
    for &(t, y) in pts {
        let new_segment = last.is_none_or(|l| t - l > max_gap);
        if new_segment {
            out.push(Vec::new());
        }
        if let Some(seg) = out.last_mut() {
            seg.push((axis.x(t), y));
        }
        last = Some(t);
    }
    out
}

/// Combine one gauge of several schedulers on a grid, `combine` over the schedulers holding a
/// value at each grid time; grid times where none holds a value break the line.
fn combined(
    series: &[SchedSeries],
    pick: fn(&SchedSeries) -> &[Pt],
    t_range: (f64, f64),
    axis: Axis,
    combine: fn(f64, f64) -> f64,
) -> Vec<Vec<Pt>> {
    let (a, b) = t_range;
    let n = GRID_POINTS.max(2);
    let mut out: Vec<Vec<Pt>> = Vec::new();
    let mut in_segment = false;
    for i in 0..n {
        let t = a + (b - a) * i as f64 / (n - 1) as f64;
        let v = series
            .iter()
            .filter_map(|s| held_at(pick(s), t, s.max_gap))
            .reduce(combine);
        match v {
            Some(y) => {
                if !in_segment {
                    out.push(Vec::new());
                    in_segment = true;
                }
                if let Some(seg) = out.last_mut() {
                    seg.push((axis.x(t), y));
                }
            }
            None => in_segment = false,
        }
    }
    out
}

fn max_y(lines: &[&Line]) -> f64 {
    lines
        .iter()
        .flat_map(|l| l.segments.iter().flatten())
        .map(|p| p.1)
        .fold(0.0, f64::max)
}

impl Prepared {
    fn new(ev: &Evidence, report: &Report) -> Result<Self, PlotError> {
        let mut skipped = 0u64;
        let series: Vec<SchedSeries> = ev
            .schedulers
            .iter()
            .map(|(k, tl)| SchedSeries::new(k.to_string(), tl, &mut skipped))
            .collect();
        let times = series
            .iter()
            .flat_map(|s| [&s.tps, &s.running, &s.queued, &s.usage])
            .flat_map(|v| v.iter().map(|p| p.0));
        let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
        for t in times {
            lo = lo.min(t);
            hi = hi.max(t);
        }
        if !(lo.is_finite() && hi.is_finite()) {
            return Err(PlotError::NoTimedSamples);
        }
        let t0 = lo;
        let mut notes = Vec::new();
        if skipped > 0 {
            notes.push(format!(
                "{skipped} batch lines without a timestamp are not shown."
            ));
        }
        let decimated: u64 = ev
            .schedulers
            .values()
            .filter(|s| s.decode.is_decimated() || s.prefill.is_decimated())
            .count() as u64;
        if decimated > 0 {
            notes.push(format!(
                "Long log: {decimated} scheduler timeline(s) thinned to an evenly spread sample of their lines."
            ));
        }

        let retraction_times: Vec<f64> =
            ev.retractions.iter().filter_map(|r| finite(r.t)).collect();
        let total = ev.retraction_totals.events as usize;
        if total > ev.retractions.len() {
            notes.push(format!(
                "{total} retractions: an evenly spread {} of them are marked.",
                ev.retractions.len()
            ));
        }
        let untimed = ev.retractions.len() - retraction_times.len();
        if untimed > 0 {
            notes.push(format!(
                "{untimed} retractions without a timestamp are not marked."
            ));
        }
        // Span in seconds of everything drawn: under SECONDS_AXIS_BELOW_S the axis is in seconds.
        let first = retraction_times.iter().copied().fold(lo, f64::min);
        let last = retraction_times.iter().copied().fold(hi, f64::max);
        let axis = Axis {
            t0,
            scale: if last - first < SECONDS_AXIS_BELOW_S {
                1.0
            } else {
                60.0
            },
        };
        let retractions: Vec<f64> = retraction_times.iter().map(|&t| axis.x(t)).collect();

        // x range: every sample and every marked retraction, widened when degenerate.
        let (mut x0, mut x1) = (axis.x(first), axis.x(last));
        if x1 - x0 < 1e-6 {
            notes.push(
                "All timestamped lines fall on one time: the x axis is widened to one second."
                    .into(),
            );
            x0 -= 0.5;
            x1 += 0.5;
        } else {
            let pad = (x1 - x0) * 0.01;
            x0 -= pad;
            x1 += pad;
        }

        let separate = series.len() <= MAX_SEPARATE_LINES;
        let t_range = (lo, hi);
        let throughput = if separate {
            series
                .iter()
                .enumerate()
                .map(|(i, s)| Line {
                    label: if series.len() == 1 {
                        "gen throughput".into()
                    } else {
                        format!("{} gen throughput", s.name)
                    },
                    color: if series.len() == 1 {
                        C_THROUGHPUT
                    } else {
                        PALETTE[i % PALETTE.len()]
                    },
                    segments: segments(&s.tps, axis, s.max_gap),
                })
                .collect()
        } else {
            vec![Line {
                label: format!("gen throughput, {} summed", series.len()),
                color: C_THROUGHPUT,
                segments: combined(&series, |s| &s.tps, t_range, axis, |a, b| a + b),
            }]
        };
        // The report's figure is the sum over DP ranks: comparable only with a single line.
        let steady_tps = if throughput.len() == 1 {
            report
                .steady_gen_throughput
                .as_ref()
                .map(|r| r.value)
                .filter(|v| v.is_finite() && *v > 0.0)
        } else {
            None
        };
        let usage = if separate {
            series
                .iter()
                .enumerate()
                .map(|(i, s)| Line {
                    label: if series.len() == 1 {
                        "token usage".into()
                    } else {
                        format!("{} token usage", s.name)
                    },
                    color: if series.len() == 1 {
                        C_USAGE
                    } else {
                        PALETTE[i % PALETTE.len()]
                    },
                    segments: segments(&s.usage, axis, s.max_gap),
                })
                .collect()
        } else {
            vec![Line {
                label: format!("token usage, max of {}", series.len()),
                color: C_USAGE,
                segments: combined(&series, |s| &s.usage, t_range, axis, f64::max),
            }]
        };
        let (running, queued) = if let [s] = series.as_slice() {
            (
                segments(&s.running, axis, s.max_gap),
                segments(&s.queued, axis, s.max_gap),
            )
        } else {
            (
                combined(&series, |s| &s.running, t_range, axis, |a, b| a + b),
                combined(&series, |s| &s.queued, t_range, axis, |a, b| a + b),
            )
        };
        let suffix = if series.len() > 1 {
            format!(", {} summed", series.len())
        } else {
            String::new()
        };
        let running = Line {
            label: format!("running{suffix}"),
            color: C_RUNNING,
            segments: running,
        };
        let queued = Line {
            label: format!("queued{suffix}"),
            color: C_QUEUED,
            segments: queued,
        };

        let (shades, steady_x) = shades(report, axis);
        let steady_x = steady_x.unwrap_or((x0, x1));
        Ok(Prepared {
            x_range: (x0, x1),
            x_desc: if axis.scale == 1.0 {
                X_DESC_SECONDS
            } else {
                X_DESC_MINUTES
            },
            throughput,
            running,
            queued,
            usage,
            shades,
            retractions,
            steady_tps,
            steady_x,
            notes,
        })
    }

    fn throughput_panel(&self) -> PanelSpec<'_> {
        let lines: Vec<&Line> = self.throughput.iter().collect();
        PanelSpec {
            caption: TITLE_THROUGHPUT,
            y_desc: "tok/s",
            y_max: nice_top(max_y(&lines).max(self.steady_tps.unwrap_or(0.0))),
            lines,
            mark: self
                .steady_tps
                .map(|v| (v, self.steady_x, format!("steady mean {v:.0} tok/s"))),
            y_decimals: 0,
            explain_marks: true,
        }
    }

    fn requests_panel(&self) -> PanelSpec<'_> {
        PanelSpec {
            caption: TITLE_REQUESTS,
            y_desc: "requests",
            y_max: nice_top(max_y(&[&self.running, &self.queued])),
            lines: vec![&self.running, &self.queued],
            mark: None,
            y_decimals: 0,
            explain_marks: false,
        }
    }

    fn usage_panel(&self) -> PanelSpec<'_> {
        let lines: Vec<&Line> = self.usage.iter().collect();
        PanelSpec {
            caption: TITLE_USAGE,
            y_desc: "fraction 0-1",
            y_max: (max_y(&lines) * 1.05).max(1.05),
            lines,
            mark: Some((
                USAGE_MARK,
                self.x_range,
                format!("token usage {USAGE_MARK:.1}"),
            )),
            y_decimals: 1,
            explain_marks: false,
        }
    }
}

/// Top of a y axis: 10 % above the largest value, at least 1.
fn nice_top(max: f64) -> f64 {
    if max.is_finite() && max > 0.0 {
        max * 1.1
    } else {
        1.0
    }
}

/// The ramp and drain to shade (x-axis units): the ramp lasts until every scheduler is
/// steady, the drain starts when the first scheduler leaves its steady span. Also returns the
/// steady span between them, when the report has spans.
fn shades(report: &Report, axis: Axis) -> (Vec<Band>, Option<Band>) {
    let spans: Vec<_> = report
        .schedulers
        .iter()
        .filter_map(|s| s.span.as_ref())
        .filter(|s| {
            [s.start_s, s.steady_start_s, s.steady_end_s, s.end_s]
                .iter()
                .all(|v| v.is_finite())
        })
        .collect();
    if spans.is_empty() {
        return (Vec::new(), None);
    }
    let start = spans
        .iter()
        .map(|s| s.start_s)
        .fold(f64::INFINITY, f64::min);
    let steady_start = spans
        .iter()
        .map(|s| s.steady_start_s)
        .fold(f64::NEG_INFINITY, f64::max);
    let steady_end = spans
        .iter()
        .map(|s| s.steady_end_s)
        .fold(f64::INFINITY, f64::min)
        .max(steady_start);
    let end = spans
        .iter()
        .map(|s| s.end_s)
        .fold(f64::NEG_INFINITY, f64::max);
    let m = |t: f64| axis.x(t);
    let bands = [(start, steady_start), (steady_end, end)]
        .into_iter()
        .filter(|(a, b)| b > a)
        .map(|(a, b)| (m(a), m(b)))
        .collect();
    (bands, Some((m(steady_start), m(steady_end))))
}

/// Shorten to `max` characters, ending in `…` when cut.
fn shorten(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let mut out: String = s.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

fn draw_title(
    area: &DrawingArea<SVGBackend<'_>, Shift>,
    report: &Report,
    notes: &[String],
) -> Result<(), PlotError> {
    let big = ("sans-serif", 28).into_font().style(FontStyle::Bold);
    let small = ("sans-serif", 18).into_font();
    let note_font = ("sans-serif", 17)
        .into_font()
        .color(&RGBColor(110, 110, 110));
    area.draw_text(
        &format!(
            "throughput-doctor verdict: {}",
            diagnosis::narrative::bottleneck_label(report.bottleneck)
        ),
        &big.into_text_style(area),
        (16, 10),
    )
    .map_err(draw_err)?;
    area.draw_text(
        &shorten(&report.headline.summary, HEADLINE_CHARS),
        &small.into_text_style(area),
        (16, 42),
    )
    .map_err(draw_err)?;
    for (i, note) in notes.iter().take(3).enumerate() {
        area.draw_text(
            &format!("Note: {}", shorten(note, HEADLINE_CHARS)),
            &note_font,
            (16, 64 + 18 * i as i32),
        )
        .map_err(draw_err)?;
    }
    Ok(())
}

/// A legend entry's swatch.
enum Swatch {
    Line(RGBColor),
    Dashed(RGBColor),
    Band,
    Triangle,
}

fn draw_panel(
    area: &DrawingArea<SVGBackend<'_>, Shift>,
    data: &Prepared,
    spec: &PanelSpec<'_>,
    bottom: bool,
) -> Result<(), PlotError> {
    let (plot_area, legend_area) = area.split_horizontally(WIDTH.saturating_sub(LEGEND_WIDTH));
    let (x0, x1) = data.x_range;
    let y_max = spec.y_max;
    let mut chart = ChartBuilder::on(&plot_area)
        .caption(spec.caption, ("sans-serif", 21).into_font())
        .margin_left(12)
        .margin_right(12)
        .margin_top(4)
        .margin_bottom(if bottom { 4 } else { 8 })
        .x_label_area_size(if bottom { 48 } else { 24 })
        .y_label_area_size(78)
        .build_cartesian_2d(x0..x1, 0.0..y_max)
        .map_err(draw_err)?;
    let decimals = spec.y_decimals;
    let y_fmt = |v: &f64| format!("{v:.decimals$}");
    let span = x1 - x0;
    let x_decimals = if span >= 10.0 {
        0
    } else if span >= 1.0 {
        1
    } else {
        2
    };
    let x_fmt = |v: &f64| format!("{v:.x_decimals$}");
    let mut mesh = chart.configure_mesh();
    mesh.y_desc(spec.y_desc)
        .y_label_formatter(&y_fmt)
        .x_label_formatter(&x_fmt)
        .x_labels(16)
        .y_labels(6)
        .bold_line_style(RGBColor(215, 215, 215))
        .light_line_style(TRANSPARENT)
        .label_style(("sans-serif", 16))
        .axis_desc_style(("sans-serif", 17));
    if bottom {
        mesh.x_desc(data.x_desc);
    }
    mesh.draw().map_err(draw_err)?;

    let mut legend: Vec<(Swatch, String)> = Vec::new();

    // Ramp and drain: light grey bands under the data.
    let shade = C_SHADE.mix(0.45).filled();
    chart
        .draw_series(
            data.shades
                .iter()
                .map(|&(a, b)| Rectangle::new([(a, 0.0), (b, y_max)], shade)),
        )
        .map_err(draw_err)?;
    if spec.explain_marks && !data.shades.is_empty() {
        legend.push((Swatch::Band, "ramp / drain (not steady)".into()));
    }

    if let Some((mark, (from, to), label)) = &spec.mark {
        let mark = *mark;
        chart
            .draw_series(DashedLineSeries::new(
                vec![(*from, mark), (*to, mark)],
                8,
                5,
                C_MARK.stroke_width(1),
            ))
            .map_err(draw_err)?;
        legend.push((Swatch::Dashed(C_MARK), label.clone()));
    }

    for line in &spec.lines {
        let style = line.color.stroke_width(2);
        for seg in &line.segments {
            if seg.len() == 1 {
                chart
                    .draw_series(seg.iter().map(|&p| Circle::new(p, 3, style.filled())))
                    .map_err(draw_err)?;
            } else {
                chart
                    .draw_series(LineSeries::new(seg.iter().copied(), style))
                    .map_err(draw_err)?;
            }
        }
        if !line.segments.is_empty() {
            legend.push((Swatch::Line(line.color), line.label.clone()));
        }
    }

    // Retractions: small red triangles hanging from the top edge.
    let red = C_RETRACT.filled();
    chart
        .draw_series(data.retractions.iter().map(|&x| {
            EmptyElement::at((x, y_max)) + Polygon::new(vec![(-4, 0), (4, 0), (0, 8)], red)
        }))
        .map_err(draw_err)?;
    if spec.explain_marks && !data.retractions.is_empty() {
        legend.push((
            Swatch::Triangle,
            format!("retraction ({})", data.retractions.len()),
        ));
    }
    draw_legend(&legend_area, &legend)
}

/// The legend, in its own column right of the plot so it never hides data.
fn draw_legend(
    area: &DrawingArea<SVGBackend<'_>, Shift>,
    entries: &[(Swatch, String)],
) -> Result<(), PlotError> {
    let font = ("sans-serif", 16).into_font().color(&BLACK);
    for (i, (swatch, label)) in entries.iter().enumerate() {
        let y = 40 + 22 * i as i32;
        match swatch {
            Swatch::Line(c) => area
                .draw(&PathElement::new(vec![(4, y), (28, y)], c.stroke_width(2)))
                .map_err(draw_err)?,
            Swatch::Dashed(c) => {
                for x in [4, 14, 24] {
                    area.draw(&PathElement::new(
                        vec![(x, y), (x + 6, y)],
                        c.stroke_width(1),
                    ))
                    .map_err(draw_err)?;
                }
            }
            Swatch::Band => area
                .draw(&Rectangle::new(
                    [(4, y - 7), (28, y + 7)],
                    C_SHADE.mix(0.45).filled(),
                ))
                .map_err(draw_err)?,
            Swatch::Triangle => area
                .draw(&Polygon::new(
                    vec![(12, y - 4), (20, y - 4), (16, y + 4)],
                    C_RETRACT.filled(),
                ))
                .map_err(draw_err)?,
        }
        area.draw_text(label, &font, (36, y - 6))
            .map_err(draw_err)?;
    }
    Ok(())
}
