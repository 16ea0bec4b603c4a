//! Charts of one or more runs, each written twice: as SVG (sharp at any size, for reports and
//! browsers) and as PNG (for places that show only images, such as issue comments). The charts:
//! throughput over time, the latency percentile spectrum, load per shard and per partition,
//! sweep curves against a parameter, and a side-by-side comparison of scenarios.
//!
//! plotters runs without its default features, so nothing here links system libraries
//! (fontconfig, freetype): PNG text is drawn with ab_glyph from the font bundled in `font/`
//! (Roboto, Apache-2.0, see `font/LICENSE`), and SVG text names the same family for the viewer.

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Once;

use hdrhistogram::Histogram;
use plotters::chart::DualCoordChartContext;
use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint, ValueFormatter};
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::results::RunResult;

/// The family every text style names; the bundled font is registered under it.
const FONT_FAMILY: &str = "sans-serif";
const FONT_TTF: &[u8] = include_bytes!("font/Roboto-Regular.ttf");

const CHART_SIZE_PX: (u32, u32) = (1024, 640);
const SWEEP_SIZE_PX: (u32, u32) = (1024, 1200);
const SCENARIOS_SIZE_PX: (u32, u32) = (1280, 860);
const TITLE_FONT_PX: u32 = 26;
const CAPTION_FONT_PX: u32 = 20;
const AXIS_FONT_PX: u32 = 15;
const LEGEND_FONT_PX: u32 = 14;
const VALUE_FONT_PX: u32 = 13;
const MARGIN_PX: u32 = 14;
/// Wider on the right, where the last x tick's label is centred on the plot's edge.
const MARGIN_RIGHT_PX: u32 = 40;
/// Light grid lines between two labelled ticks (plotters' default of 10 crowds the plot).
const LIGHT_LINES_PER_TICK: usize = 1;
const X_LABEL_AREA_PX: u32 = 50;
const Y_LABEL_AREA_PX: u32 = 80;
const LINE_WIDTH_PX: u32 = 2;
const POINT_SIZE_PX: u32 = 4;
const DASH_PX: i32 = 8;
const DASH_GAP_PX: i32 = 5;
const LEGEND_SAMPLE_PX: i32 = 20;
const LEGEND_SWATCH_PX: i32 = 6;
const LEGEND_BACKGROUND_OPACITY: f64 = 0.85;
const GRID_OPACITY: f64 = 0.08;
/// Palette index of the bars of a single-series bar chart.
const BAR_COLOUR: usize = 0;
/// Palette index of reference lines (the mean partition load), red against the blue bars.
const REFERENCE_COLOUR: usize = 2;

/// Space above the highest line or bar, as a multiple of it, so the legend rarely covers data.
const HEADROOM: f64 = 1.15;
/// Bar charts leave room for the legend and the value printed above each bar.
const BAR_HEADROOM: f64 = 1.3;
/// Gap on each side of a bar group, as a fraction of its slot.
const BAR_GAP: f64 = 0.15;
/// More partitions than this are drawn as bins of adjacent partitions, so the SVG stays small.
const PARTITION_BARS_MAX: usize = 512;
/// Percentile steps per halving of the distance to 100%, as in the `.hgrm` files.
const SPECTRUM_TICKS_PER_HALF_DISTANCE: u32 = 5;
/// The spectrum's x axis spans at least 99% and at most 99.9999%.
const SPECTRUM_NINES_MIN: i32 = 2;
const SPECTRUM_NINES_MAX: i32 = 6;
const US_PER_MS: f64 = 1000.0;

/// Tableau 10: distinct at a glance and readable by most colour-blind viewers.
const PALETTE: [RGBColor; 10] = [
    RGBColor(0x4e, 0x79, 0xa7),
    RGBColor(0xf2, 0x8e, 0x2b),
    RGBColor(0xe1, 0x57, 0x59),
    RGBColor(0x76, 0xb7, 0xb2),
    RGBColor(0x59, 0xa1, 0x4f),
    RGBColor(0xed, 0xc9, 0x48),
    RGBColor(0xb0, 0x7a, 0xa1),
    RGBColor(0xff, 0x9d, 0xa7),
    RGBColor(0x9c, 0x75, 0x5f),
    RGBColor(0xba, 0xb0, 0xac),
];

type Area<DB> = DrawingArea<DB, Shift>;
type Drawn<DB> = Result<(), DrawingAreaErrorKind<<DB as DrawingBackend>::ErrorType>>;
type Chart2d<'a, DB, X> = ChartContext<'a, DB, Cartesian2d<X, RangedCoordf64>>;
type Keyed = Ticked<RangedCoordf64>;

/// A chart drawable on any backend; [`render`] draws it once as SVG and once as PNG.
trait Chart {
    fn size_px(&self) -> (u32, u32) {
        CHART_SIZE_PX
    }
    fn draw<DB: DrawingBackend>(&self, root: &Area<DB>) -> Drawn<DB>;
}

/// Operations per second in each interval, one line per run.
pub fn throughput_over_time(
    runs: &[&RunResult],
    dir: &Path,
    stem: &str,
) -> Result<Vec<PathBuf>, String> {
    render(&Throughput(runs), dir, stem)
}

/// Latency against percentile on the "number of nines" axis, one line per run and operation
/// type, dashed for the uncorrected latency of open-loop runs.
pub fn latency_spectrum(
    runs: &[&RunResult],
    dir: &Path,
    stem: &str,
) -> Result<Vec<PathBuf>, String> {
    render(&Spectrum(runs), dir, stem)
}

/// Each shard's share of each run's requests, as grouped bars.
pub fn shard_load(runs: &[&RunResult], dir: &Path, stem: &str) -> Result<Vec<PathBuf>, String> {
    render(&ShardLoad(runs), dir, stem)
}

/// Requests per partition of one run.
pub fn partition_load(run: &RunResult, dir: &Path, stem: &str) -> Result<Vec<PathBuf>, String> {
    render(&PartitionLoad(run), dir, stem)
}

/// Throughput, latency percentiles and the node's cache and index figures against the value of
/// a swept parameter, in three panels.
pub fn sweep(
    parameter: &str,
    points: &[(u64, &RunResult)],
    dir: &Path,
    stem: &str,
) -> Result<Vec<PathBuf>, String> {
    let mut sorted = points.to_vec();
    sorted.sort_by_key(|&(value, _)| value);
    render(&Sweep { parameter, points: sorted }, dir, stem)
}

/// Throughput, p99 latency, shard skew and partition skew of each scenario, in four panels.
pub fn scenarios(runs: &[&RunResult], dir: &Path, stem: &str) -> Result<Vec<PathBuf>, String> {
    render(&Scenarios(runs), dir, stem)
}

/// Writes `{stem}.svg` and `{stem}.png` into `dir`.
fn render(chart: &impl Chart, dir: &Path, stem: &str) -> Result<Vec<PathBuf>, String> {
    register_bundled_font();
    let size = chart.size_px();
    let svg = dir.join(format!("{stem}.svg"));
    draw_on(SVGBackend::new(&svg, size).into_drawing_area(), chart)
        .map_err(|e| format!("writing chart {}: {e}", svg.display()))?;
    let png = dir.join(format!("{stem}.png"));
    let mut rgb = vec![0u8; size.0 as usize * size.1 as usize * 3];
    draw_on(BitMapBackend::with_buffer(&mut rgb, size).into_drawing_area(), chart)
        .map_err(|e| format!("writing chart {}: {e}", png.display()))?;
    write_png(&png, size, &rgb).map_err(|e| format!("writing chart {}: {e}", png.display()))?;
    Ok(vec![svg, png])
}

/// Encodes an RGB buffer as PNG with the `png` crate (plotters' own `bitmap_encoder` feature
/// pulls in the whole `image` crate, about a minute of a clean build on 2 cores).
fn write_png(path: &Path, (w, h): (u32, u32), rgb: &[u8]) -> Result<(), String> {
    let file = std::fs::File::create(path).map_err(|e| e.to_string())?;
    let mut encoder = png::Encoder::new(std::io::BufWriter::new(file), w, h);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    let mut writer = encoder.write_header().map_err(|e| e.to_string())?;
    writer.write_image_data(rgb).map_err(|e| e.to_string())?;
    writer.finish().map_err(|e| e.to_string())
}

fn draw_on<DB: DrawingBackend>(root: Area<DB>, chart: &impl Chart) -> Drawn<DB> {
    root.fill(&WHITE)?;
    chart.draw(&root)?;
    root.present()
}

/// ab_glyph knows no system fonts: text can be measured or drawn only once this has run.
fn register_bundled_font() {
    static REGISTERED: Once = Once::new();
    REGISTERED.call_once(|| {
        let registered = plotters::style::register_font(FONT_FAMILY, FontStyle::Normal, FONT_TTF);
        assert!(registered.is_ok(), "the bundled font is a valid TrueType font");
    });
}

struct Throughput<'a>(&'a [&'a RunResult]);

impl Chart for Throughput<'_> {
    fn draw<DB: DrawingBackend>(&self, root: &Area<DB>) -> Drawn<DB> {
        let lines: Vec<Vec<(f64, f64)>> = self.0.iter().map(|r| throughput_points(r)).collect();
        let x_max = max_of(lines.iter().flatten().map(|p| p.0));
        let y_max = max_of(lines.iter().flatten().map(|p| p.1)) * HEADROOM;
        let mut chart = builder(root, "Throughput over time", TITLE_FONT_PX)
            .build_cartesian_2d(axis(x_max), axis(y_max))?;
        draw_mesh(&mut chart, &Axes { x_desc: "seconds", y_desc: "ops/s", ..Axes::default() })?;
        for (i, (run, points)) in self.0.iter().zip(lines).enumerate() {
            let style = colour(i).stroke_width(LINE_WIDTH_PX);
            chart.draw_series(LineSeries::new(points, style))?.label(&run.label).legend(line(i));
        }
        draw_legend(&mut chart, SeriesLabelPosition::LowerRight)
    }
}

/// (end of interval in seconds, ops/s in the interval).
fn throughput_points(run: &RunResult) -> Vec<(f64, f64)> {
    let intervals = run.intervals.iter().filter(|i| i.length_s > 0.0);
    intervals.map(|i| (i.start_s + i.length_s, i.ops as f64 / i.length_s)).collect()
}

struct Spectrum<'a>(&'a [&'a RunResult]);

impl Chart for Spectrum<'_> {
    fn draw<DB: DrawingBackend>(&self, root: &Area<DB>) -> Drawn<DB> {
        let lines = spectrum_lines(self.0);
        let nines = spectrum_nines(lines.iter().flat_map(|l| &l.points).map(|p| p.0));
        let x_max = 10f64.powi(nines);
        let y_max = max_of(lines.iter().flat_map(|l| &l.points).map(|p| p.1)) * HEADROOM;
        let ticks = (0..=nines).map(|k| 10f64.powi(k)).collect();
        let x = Ticked { inner: LogCoord::from((1.0..x_max).log_scale()), ticks };
        let mut chart = builder(root, "Latency by percentile", TITLE_FONT_PX)
            .build_cartesian_2d(x, axis(y_max))?;
        let axes =
            Axes { x_desc: "percentile", y_desc: "latency (ms)", x_fmt: Box::new(nines_label) };
        draw_mesh(&mut chart, &axes)?;
        for l in lines {
            draw_spectrum_line(&mut chart, l, x_max)?;
        }
        draw_legend(&mut chart, SeriesLabelPosition::UpperLeft)
    }
}

struct SpectrumLine {
    label: String,
    colour_index: usize,
    dashed: bool,
    /// (1 / (1 - percentile), latency in ms).
    points: Vec<(f64, f64)>,
}

fn spectrum_lines(runs: &[&RunResult]) -> Vec<SpectrumLine> {
    let mut lines = Vec::new();
    let ops = runs.iter().flat_map(|r| r.ops.iter().map(move |op| (r, op)));
    for (colour_index, (run, op)) in ops.enumerate() {
        let label = format!("{} {}", run.label, op.kind.name());
        let points = spectrum_points(&op.latency_us);
        lines.push(SpectrumLine { label: label.clone(), colour_index, dashed: false, points });
        if let Some(h) = &op.uncorrected_us {
            let (label, points) = (format!("{label} uncorrected"), spectrum_points(h));
            lines.push(SpectrumLine { label, colour_index, dashed: true, points });
        }
    }
    lines
}

/// The histogram's percentile steps below 100% (the 100% step lies at infinity on this axis).
fn spectrum_points(h: &Histogram<u64>) -> Vec<(f64, f64)> {
    let steps = h.iter_quantiles(SPECTRUM_TICKS_PER_HALF_DISTANCE);
    let steps = steps.map(|v| (v.quantile_iterated_to(), v.value_iterated_to() as f64));
    steps.filter(|&(q, _)| q < 1.0).map(|(q, us)| (1.0 / (1.0 - q), us / US_PER_MS)).collect()
}

/// How many nines the x axis shows: enough for the deepest percentile measured, within bounds.
fn spectrum_nines(xs: impl Iterator<Item = f64>) -> i32 {
    let deepest = max_of(xs).max(1.0);
    (deepest.log10().ceil() as i32).clamp(SPECTRUM_NINES_MIN, SPECTRUM_NINES_MAX)
}

/// The percentile at x = 1 / (1 - p) for x a power of ten: 0%, 90%, 99%, 99.9%, ...
fn nines_label(x: &f64) -> String {
    let nines = x.log10().round() as i32;
    if nines <= 0 {
        return "0%".to_owned();
    }
    let percent = 100.0 * (1.0 - 10f64.powi(-nines));
    format!("{percent:.decimals$}%", decimals = (nines - 2).max(0) as usize)
}

fn draw_spectrum_line<DB: DrawingBackend>(
    chart: &mut ChartContext<'_, DB, Cartesian2d<impl Ranged<ValueType = f64>, RangedCoordf64>>,
    l: SpectrumLine,
    x_max: f64,
) -> Drawn<DB> {
    let points: Vec<_> = l.points.into_iter().filter(|p| p.0 <= x_max).collect();
    if l.dashed {
        let series = dashed(points, l.colour_index);
        chart.draw_series(series)?.label(l.label).legend(dashed_line(l.colour_index));
    } else {
        let style = colour(l.colour_index).stroke_width(LINE_WIDTH_PX);
        chart
            .draw_series(LineSeries::new(points, style))?
            .label(l.label)
            .legend(line(l.colour_index));
    }
    Ok(())
}

struct ShardLoad<'a>(&'a [&'a RunResult]);

impl Chart for ShardLoad<'_> {
    fn draw<DB: DrawingBackend>(&self, root: &Area<DB>) -> Drawn<DB> {
        let shares: Vec<Vec<f64>> = self.0.iter().map(|r| percent_shares(&r.shard_ops)).collect();
        let shards = shares.iter().map(Vec::len).max().unwrap_or(0).max(1);
        let y_max = max_of(shares.iter().flatten().copied()) * BAR_HEADROOM;
        let mut chart = builder(root, "Share of requests per shard", TITLE_FONT_PX)
            .build_cartesian_2d(slots(shards), axis(y_max))?;
        let axes = Axes {
            x_desc: "shard",
            y_desc: "share of the run's requests (%)",
            x_fmt: Box::new(slot),
        };
        draw_mesh(&mut chart, &axes)?;
        let width = (1.0 - 2.0 * BAR_GAP) / self.0.len().max(1) as f64;
        for (i, (run, shares)) in self.0.iter().zip(shares).enumerate() {
            let offset = BAR_GAP + i as f64 * width;
            let bars = shares.into_iter().enumerate().map(|(shard, share)| {
                let x = shard as f64 + offset;
                Rectangle::new([(x, 0.0), (x + width, share)], colour(i).filled())
            });
            let label = format!("{} (shard skew {:.2})", run.label, run.shard_skew());
            chart.draw_series(bars)?.label(label).legend(swatch(i));
        }
        draw_legend(&mut chart, SeriesLabelPosition::UpperRight)
    }
}

/// Each count as a percentage of their sum (all zero when the sum is).
fn percent_shares(counts: &[u64]) -> Vec<f64> {
    let total = counts.iter().sum::<u64>().max(1) as f64;
    counts.iter().map(|&n| 100.0 * n as f64 / total).collect()
}

struct PartitionLoad<'a>(&'a RunResult);

impl Chart for PartitionLoad<'_> {
    fn draw<DB: DrawingBackend>(&self, root: &Area<DB>) -> Drawn<DB> {
        let run = self.0;
        let (bin, bins) = bin_counts(&run.partition_ops, PARTITION_BARS_MAX);
        let partitions = run.partition_ops.len().max(1) as f64;
        let y_max = max_of(bins.iter().map(|&n| n as f64)) * HEADROOM;
        let mut chart = builder(root, &partition_title(run), CAPTION_FONT_PX)
            .build_cartesian_2d(0.0..partitions, axis(y_max))?;
        let y_desc =
            if bin == 1 { "requests".into() } else { format!("requests per {bin} partitions") };
        draw_mesh(&mut chart, &Axes { x_desc: "partition", y_desc: &y_desc, ..Axes::default() })?;
        let bars = bins.iter().enumerate().filter(|(_, &n)| n > 0).map(|(i, &n)| {
            let x = (i * bin) as f64;
            Rectangle::new([(x, 0.0), (x + bin as f64, n as f64)], colour(BAR_COLOUR).filled())
        });
        chart.draw_series(bars)?;
        let mean = bins.iter().sum::<u64>() as f64 / bins.len().max(1) as f64;
        let mean_series = dashed([(0.0, mean), (partitions, mean)], REFERENCE_COLOUR);
        chart.draw_series(mean_series)?.label("mean").legend(dashed_line(REFERENCE_COLOUR));
        draw_legend(&mut chart, SeriesLabelPosition::UpperRight)
    }
}

fn partition_title(run: &RunResult) -> String {
    let (touched, total) = (run.partitions_touched(), run.partition_ops.len());
    let skew = run.partition_skew();
    format!("{}: requests per partition, {touched} of {total} touched, skew {skew:.2}", run.label)
}

/// Sums of `counts` over bins of adjacent entries, at most `bins_max` bins: (bin width, sums).
fn bin_counts(counts: &[u64], bins_max: usize) -> (usize, Vec<u64>) {
    let width = counts.len().div_ceil(bins_max).max(1);
    (width, counts.chunks(width).map(|c| c.iter().sum()).collect())
}

struct Sweep<'a> {
    parameter: &'a str,
    points: Vec<(u64, &'a RunResult)>,
}

impl Chart for Sweep<'_> {
    fn size_px(&self) -> (u32, u32) {
        SWEEP_SIZE_PX
    }

    fn draw<DB: DrawingBackend>(&self, root: &Area<DB>) -> Drawn<DB> {
        let title = format!("Sweep over {}", self.parameter);
        let root = root.titled(&title, (FONT_FAMILY, TITLE_FONT_PX))?;
        let panels = root.split_evenly((3, 1));
        let x = SweepAxis::new(self.points.iter().map(|p| p.0));
        self.throughput_panel(&panels[0], &x)?;
        self.latency_panel(&panels[1], &x)?;
        self.node_panel(&panels[2], &x)
    }
}

impl Sweep<'_> {
    fn throughput_panel<DB: DrawingBackend>(&self, area: &Area<DB>, x: &SweepAxis) -> Drawn<DB> {
        let points: Vec<_> =
            self.points.iter().map(|&(v, r)| (x.position(v), r.ops_per_second())).collect();
        let y_max = max_of(points.iter().map(|p| p.1)) * HEADROOM;
        let mut chart = x.chart(area, "Throughput", y_max)?;
        draw_mesh(&mut chart, &x.axes(self.parameter, "ops/s"))?;
        let style = colour(0).stroke_width(LINE_WIDTH_PX);
        let series = LineSeries::new(points, style).point_size(POINT_SIZE_PX);
        chart.draw_series(series)?.label("throughput").legend(line(0));
        draw_legend(&mut chart, SeriesLabelPosition::LowerRight)
    }

    fn latency_panel<DB: DrawingBackend>(&self, area: &Area<DB>, x: &SweepAxis) -> Drawn<DB> {
        const QUANTILES: [(f64, &str); 3] = [(0.5, "p50"), (0.99, "p99"), (0.999, "p999")];
        let merged: Vec<_> = self.points.iter().map(|&(v, r)| (v, r.latency_all_us())).collect();
        let ms = |h: &Histogram<u64>, q| h.value_at_quantile(q) as f64 / US_PER_MS;
        let y_max = max_of(merged.iter().map(|(_, h)| ms(h, QUANTILES[2].0))) * HEADROOM;
        let mut chart = x.chart(area, "Latency", y_max)?;
        draw_mesh(&mut chart, &x.axes(self.parameter, "latency (ms)"))?;
        for (i, (q, name)) in QUANTILES.into_iter().enumerate() {
            let points = merged.iter().map(|(v, h)| (x.position(*v), ms(h, q)));
            let series = LineSeries::new(points, colour(i).stroke_width(LINE_WIDTH_PX));
            chart.draw_series(series.point_size(POINT_SIZE_PX))?.label(name).legend(line(i));
        }
        draw_legend(&mut chart, SeriesLabelPosition::UpperLeft)
    }

    /// Cache hit ratio on the left axis, index bytes per key on the right; points whose run did
    /// not read the node's figures are left out.
    fn node_panel<DB: DrawingBackend>(&self, area: &Area<DB>, x: &SweepAxis) -> Drawn<DB> {
        let nodes =
            self.points.iter().filter_map(|&(v, r)| Some((x.position(v), r.node.as_ref()?)));
        let hits: Vec<_> =
            nodes.clone().filter_map(|(x, n)| Some((x, 100.0 * n.cache_hit_ratio()?))).collect();
        let bytes: Vec<_> = nodes.map(|(x, n)| (x, n.index_bytes_per_key())).collect();
        let bytes_max = max_of(bytes.iter().map(|p| p.1)) * HEADROOM;
        let mut chart = builder(area, "Node: cache hit ratio and index size", CAPTION_FONT_PX)
            .right_y_label_area_size(Y_LABEL_AREA_PX)
            .build_cartesian_2d(x.range(), axis(100.0 * HEADROOM))?
            .set_secondary_coord(x.range(), axis(bytes_max));
        draw_mesh(&mut chart, &x.axes(self.parameter, "cache hit ratio (%)"))?;
        draw_secondary_mesh(&mut chart, "index bytes per key")?;
        let hit_style = colour(0).stroke_width(LINE_WIDTH_PX);
        let hit_series = LineSeries::new(hits, hit_style).point_size(POINT_SIZE_PX);
        chart.draw_series(hit_series)?.label("cache hit ratio").legend(line(0));
        let byte_series = dashed(bytes, 1);
        chart
            .draw_secondary_series(byte_series)?
            .label("index bytes per key")
            .legend(dashed_line(1));
        draw_legend(&mut chart, SeriesLabelPosition::LowerRight)
    }
}

/// The sweep's x axis: log2 of the parameter value when every value is positive (sizes and
/// counts usually double from point to point), the value itself otherwise; ticks at the values.
struct SweepAxis {
    log2: bool,
    ticks: Vec<f64>,
}

impl SweepAxis {
    fn new(values: impl Iterator<Item = u64> + Clone) -> Self {
        let log2 = values.clone().all(|v| v > 0);
        let mut axis = SweepAxis { log2, ticks: Vec::new() };
        axis.ticks = values.map(|v| axis.position(v)).collect();
        axis
    }

    fn position(&self, value: u64) -> f64 {
        if self.log2 {
            (value as f64).log2()
        } else {
            value as f64
        }
    }

    fn label(&self, x: &f64) -> String {
        let value = if self.log2 { x.exp2() } else { *x };
        format!("{}", value.round())
    }

    /// The values' span with half a step's margin (a unit step for a single value).
    fn range(&self) -> Keyed {
        let lo = self.ticks.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = self.ticks.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let (lo, hi) = if lo.is_finite() { (lo, hi) } else { (0.0, 0.0) };
        let pad = if hi > lo { (hi - lo) / (2 * self.ticks.len()) as f64 } else { 1.0 };
        Ticked { inner: ((lo - pad)..(hi + pad)).into(), ticks: self.ticks.clone() }
    }

    /// A panel with one y axis, as wide as the node panel with its second one.
    fn chart<'a, DB: DrawingBackend>(
        &self,
        area: &'a Area<DB>,
        caption: &str,
        y_max: f64,
    ) -> Result<Chart2d<'a, DB, Keyed>, DrawingAreaErrorKind<DB::ErrorType>> {
        builder(area, caption, CAPTION_FONT_PX)
            .margin_right(MARGIN_RIGHT_PX + Y_LABEL_AREA_PX)
            .build_cartesian_2d(self.range(), axis(y_max))
    }

    fn axes<'a>(&'a self, x_desc: &'a str, y_desc: &'a str) -> Axes<'a> {
        Axes { x_desc, y_desc, x_fmt: Box::new(|x| self.label(x)) }
    }
}

struct Scenarios<'a>(&'a [&'a RunResult]);

impl Chart for Scenarios<'_> {
    fn size_px(&self) -> (u32, u32) {
        SCENARIOS_SIZE_PX
    }

    fn draw<DB: DrawingBackend>(&self, root: &Area<DB>) -> Drawn<DB> {
        let root = root.titled("Scenarios", (FONT_FAMILY, TITLE_FONT_PX))?;
        let labels: Vec<&str> = self.0.iter().map(|r| r.label.as_str()).collect();
        let values = |f: fn(&RunResult) -> f64| self.0.iter().map(|r| f(r)).collect();
        let panels = [
            ("Throughput", "ops/s", values(RunResult::ops_per_second)),
            ("p99 latency", "ms", values(p99_ms)),
            ("Shard skew", "max / mean", values(RunResult::shard_skew)),
            ("Partition skew", "max / mean", values(RunResult::partition_skew)),
        ];
        for (area, (title, y_desc, values)) in root.split_evenly((2, 2)).iter().zip(panels) {
            draw_bar_panel(area, &BarPanel { title, y_desc, labels: &labels, values })?;
        }
        Ok(())
    }
}

fn p99_ms(run: &RunResult) -> f64 {
    run.latency_all_us().value_at_quantile(0.99) as f64 / US_PER_MS
}

struct BarPanel<'a> {
    title: &'a str,
    y_desc: &'a str,
    labels: &'a [&'a str],
    values: Vec<f64>,
}

/// One bar per scenario, its value printed above it, scenario names under the x axis.
fn draw_bar_panel<DB: DrawingBackend>(area: &Area<DB>, panel: &BarPanel<'_>) -> Drawn<DB> {
    let y_max = max_of(panel.values.iter().copied()) * BAR_HEADROOM;
    let mut chart = builder(area, panel.title, CAPTION_FONT_PX)
        .build_cartesian_2d(slots(panel.values.len()), axis(y_max))?;
    let name =
        |x: &f64| panel.labels.get(x.floor() as usize).map_or(String::new(), |l| l.to_string());
    draw_mesh(&mut chart, &Axes { x_desc: "", y_desc: panel.y_desc, x_fmt: Box::new(name) })?;
    let bars = panel.values.iter().enumerate().map(|(i, &v)| {
        let x = i as f64;
        Rectangle::new([(x + BAR_GAP, 0.0), (x + 1.0 - BAR_GAP, v)], colour(i).filled())
    });
    chart.draw_series(bars)?;
    let above = Pos::new(HPos::Center, VPos::Bottom);
    let style = TextStyle::from((FONT_FAMILY, VALUE_FONT_PX).into_font()).pos(above);
    let texts = panel
        .values
        .iter()
        .enumerate()
        .map(|(i, &v)| Text::new(number(&v), (i as f64 + 0.5, v), style.clone()));
    chart.draw_series(texts)?;
    Ok(())
}

/// An axis with ticks (and grid lines) exactly at the given values. plotters' own
/// `WithKeyPoints` does the same but offers no label formatter, so its axes cannot be drawn.
struct Ticked<R> {
    inner: R,
    ticks: Vec<f64>,
}

impl<R: Ranged<ValueType = f64>> Ranged for Ticked<R> {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        self.inner.map(value, limit)
    }

    /// The ticks as the bold points, no light points between them.
    fn key_points<H: KeyPointHint>(&self, hint: H) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            Vec::new()
        } else {
            self.ticks.clone()
        }
    }

    fn range(&self) -> Range<f64> {
        self.inner.range()
    }
}

/// Axis titles and the x tick label formatter (y ticks are always [`number`]s).
struct Axes<'a> {
    x_desc: &'a str,
    y_desc: &'a str,
    x_fmt: Box<dyn Fn(&f64) -> String + 'a>,
}

impl Default for Axes<'_> {
    fn default() -> Self {
        Axes { x_desc: "", y_desc: "", x_fmt: Box::new(number) }
    }
}

fn draw_mesh<DB, X>(chart: &mut Chart2d<'_, DB, X>, axes: &Axes<'_>) -> Drawn<DB>
where
    DB: DrawingBackend,
    X: Ranged<ValueType = f64> + ValueFormatter<f64>,
{
    chart
        .configure_mesh()
        .x_desc(axes.x_desc)
        .y_desc(axes.y_desc)
        .x_label_formatter(&*axes.x_fmt)
        .y_label_formatter(&number)
        .label_style((FONT_FAMILY, AXIS_FONT_PX))
        .axis_desc_style((FONT_FAMILY, AXIS_FONT_PX))
        .light_line_style(BLACK.mix(GRID_OPACITY))
        .max_light_lines(LIGHT_LINES_PER_TICK)
        .draw()
}

fn draw_secondary_mesh<DB: DrawingBackend, X, Y>(
    chart: &mut DualCoordChartContext<'_, DB, impl CoordTranslate, Cartesian2d<X, Y>>,
    y_desc: &str,
) -> Drawn<DB>
where
    X: Ranged + ValueFormatter<X::ValueType>,
    Y: Ranged<ValueType = f64> + ValueFormatter<f64>,
{
    chart
        .configure_secondary_axes()
        .y_desc(y_desc)
        .y_label_formatter(&number)
        .label_style((FONT_FAMILY, AXIS_FONT_PX))
        .axis_desc_style((FONT_FAMILY, AXIS_FONT_PX))
        .draw()
}

fn draw_legend<'a, DB: DrawingBackend + 'a, CT: CoordTranslate>(
    chart: &mut ChartContext<'a, DB, CT>,
    position: SeriesLabelPosition,
) -> Drawn<DB> {
    chart
        .configure_series_labels()
        .position(position)
        .label_font((FONT_FAMILY, LEGEND_FONT_PX))
        .background_style(WHITE.mix(LEGEND_BACKGROUND_OPACITY))
        .border_style(BLACK)
        .draw()
}

fn builder<'a, DB: DrawingBackend>(
    area: &'a Area<DB>,
    caption: &str,
    caption_px: u32,
) -> ChartBuilder<'a, 'static, DB> {
    let mut b = ChartBuilder::on(area);
    b.caption(caption, (FONT_FAMILY, caption_px))
        .margin(MARGIN_PX)
        .margin_right(MARGIN_RIGHT_PX)
        .x_label_area_size(X_LABEL_AREA_PX)
        .y_label_area_size(Y_LABEL_AREA_PX);
    b
}

/// 0..max, or 0..1 when there is nothing to show (plotters needs a non-empty range).
fn axis(max: f64) -> Range<f64> {
    0.0..if max > 0.0 { max } else { 1.0 }
}

/// `n` unit slots with a tick in the middle of each, for bar charts.
fn slots(n: usize) -> Keyed {
    let ticks = (0..n).map(|i| i as f64 + 0.5).collect();
    Ticked { inner: (0.0..n.max(1) as f64).into(), ticks }
}

/// The slot index a tick in the middle of a slot stands for.
fn slot(x: &f64) -> String {
    format!("{}", x.floor())
}

/// A tick label: SI suffix above a thousand, fewer decimals for larger numbers.
fn number(v: &f64) -> String {
    const SUFFIXES: [(f64, &str); 3] = [(1e9, "G"), (1e6, "M"), (1e3, "k")];
    if let Some((scale, suffix)) = SUFFIXES.into_iter().find(|(s, _)| v.abs() >= *s) {
        return format!("{}{suffix}", trimmed(v / scale, 1));
    }
    let decimals = if v.abs() >= 10.0 { 0 } else { 2 };
    trimmed(*v, decimals)
}

/// `v` with at most `decimals` decimals and no trailing zeros.
fn trimmed(v: f64, decimals: usize) -> String {
    let s = format!("{v:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_owned()
    } else {
        s
    }
}

fn max_of(values: impl Iterator<Item = f64>) -> f64 {
    values.fold(0.0, f64::max)
}

fn colour(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

fn line(i: usize) -> impl Fn((i32, i32)) -> PathElement<(i32, i32)> {
    move |(x, y)| {
        PathElement::new([(x, y), (x + LEGEND_SAMPLE_PX, y)], colour(i).stroke_width(LINE_WIDTH_PX))
    }
}

fn dashed<I>(points: I, colour_index: usize) -> DashedLineSeries<I::IntoIter, i32>
where
    I: IntoIterator<Item = (f64, f64)>,
    I::IntoIter: Clone,
{
    let style = colour(colour_index).stroke_width(LINE_WIDTH_PX);
    DashedLineSeries::new(points, DASH_PX, DASH_GAP_PX, style)
}

fn dashed_line(
    i: usize,
) -> impl Fn((i32, i32)) -> DashedPathElement<std::array::IntoIter<(i32, i32), 2>, i32> {
    move |(x, y)| {
        let style = colour(i).stroke_width(LINE_WIDTH_PX);
        DashedPathElement::new(
            [(x, y), (x + LEGEND_SAMPLE_PX, y)],
            DASH_PX / 2,
            DASH_GAP_PX / 2,
            style,
        )
    }
}

fn swatch(i: usize) -> impl Fn((i32, i32)) -> Rectangle<(i32, i32)> {
    move |(x, y)| {
        let h = LEGEND_SWATCH_PX;
        Rectangle::new([(x, y - h), (x + LEGEND_SAMPLE_PX, y + h)], colour(i).filled())
    }
}

#[cfg(test)]
mod tests {
    //! Draws every chart from synthetic runs into a temporary directory and checks what a reader
    //! would get: both files exist, the SVG is a complete document that names the runs, and the
    //! PNG is a PNG of the size the chart asks for (read from its IHDR header).

    use super::*;
    use crate::results::{latency_histogram, Interval, NodeFigures, OpKind, OpResult};

    const PNG_SIGNATURE: [u8; 8] = [0x89, b'P', b'N', b'G', b'\r', b'\n', 0x1a, b'\n'];
    const INTERVALS: usize = 5;

    fn histogram(lo_us: u64, n: u64) -> Histogram<u64> {
        let mut h = latency_histogram();
        for i in 0..n {
            h.record(lo_us + i * 3).expect("within bounds");
        }
        h
    }

    /// A run whose throughput, latency and load scale with `speed`; open loop when `open`.
    fn run(label: &str, speed: u64, open: bool) -> RunResult {
        let op = |kind, lo_us| OpResult {
            kind,
            ok: 1_000 * speed,
            not_found: 0,
            errors: 0,
            errors_by_status: Default::default(),
            latency_us: histogram(lo_us / speed, 2_000),
            uncorrected_us: open.then(|| histogram(lo_us / speed / 2, 2_000)),
        };
        let interval = |i: usize| Interval {
            start_s: i as f64,
            length_s: 1.0,
            ops: 400 * speed + i as u64 * 10,
            errors: 0,
            latency_us: OpKind::ALL.iter().map(|_| histogram(100, 10)).collect(),
            shard_ops: vec![100 * speed; 4],
        };
        let node = NodeFigures {
            index_keys: 1_000,
            index_bytes: 40_000 * speed,
            cache_hits: 90,
            cache_misses: 10 * speed,
            ..NodeFigures::default()
        };
        RunResult {
            label: label.to_owned(),
            seconds: INTERVALS as f64,
            ops: vec![op(OpKind::Read, 200), op(OpKind::Update, 900)],
            intervals: (0..INTERVALS).map(interval).collect(),
            shard_ops: vec![500 * speed, 300, 200, 100],
            partition_ops: (0..1_500).map(|p| (p % 7) * speed).collect(),
            server_cpu_seconds: None,
            client_cpu_seconds: None,
            shard_cpu_seconds: None,
            node: Some(node),
            error_messages: Default::default(),
        }
    }

    /// Checks both files and returns the SVG's text.
    fn check_files(paths: &[PathBuf], stem: &str, size_px: (u32, u32)) -> String {
        let names: Vec<_> = paths.iter().filter_map(|p| p.file_name()?.to_str()).collect();
        assert_eq!(names, [format!("{stem}.svg"), format!("{stem}.png")]);
        let svg = std::fs::read_to_string(&paths[0]).expect("svg is text");
        assert!(svg.starts_with("<svg") || svg.starts_with("<?xml"), "{}", &svg[..80]);
        assert!(svg.trim_end().ends_with("</svg>"));
        let png = std::fs::read(&paths[1]).expect("png");
        assert_eq!(png[..8], PNG_SIGNATURE);
        assert_eq!(&png[12..16], b"IHDR");
        let be = |at: usize| u32::from_be_bytes(png[at..at + 4].try_into().expect("4 bytes"));
        assert_eq!((be(16), be(20)), size_px);
        svg
    }

    fn assert_names(svg: &str, names: &[&str]) {
        for name in names {
            assert!(svg.contains(name), "{name} missing from the SVG");
        }
    }

    #[test]
    fn throughput_over_time_draws_a_line_per_run() {
        let (a, b) = (run("closed-64", 2, false), run("open-64", 1, true));
        let dir = tempfile::tempdir().expect("tempdir");
        let paths = throughput_over_time(&[&a, &b], dir.path(), "tput").expect("drawn");
        let svg = check_files(&paths, "tput", CHART_SIZE_PX);
        assert_names(&svg, &["closed-64", "open-64", "ops/s", "seconds"]);
    }

    #[test]
    fn latency_spectrum_labels_each_run_and_kind_and_the_uncorrected_lines() {
        let (a, b) = (run("closed", 2, false), run("open", 1, true));
        let dir = tempfile::tempdir().expect("tempdir");
        let paths = latency_spectrum(&[&a, &b], dir.path(), "spectrum").expect("drawn");
        let svg = check_files(&paths, "spectrum", CHART_SIZE_PX);
        assert_names(&svg, &["closed read", "closed update", "open read", "open update"]);
        assert_names(&svg, &["open read uncorrected", "99.9%", "90%"]);
        assert!(!svg.contains("closed read uncorrected"));
    }

    #[test]
    fn nines_labels() {
        let labels: Vec<_> = [1.0, 10.0, 100.0, 1e3, 1e4].iter().map(nines_label).collect();
        assert_eq!(labels, ["0%", "90%", "99%", "99.9%", "99.99%"]);
    }

    #[test]
    fn shard_load_writes_the_skew_in_the_legend() {
        let (a, b) = (run("uniform", 1, false), run("zipf", 3, false));
        let dir = tempfile::tempdir().expect("tempdir");
        let paths = shard_load(&[&a, &b], dir.path(), "shards").expect("drawn");
        let svg = check_files(&paths, "shards", CHART_SIZE_PX);
        let skew = format!("zipf (shard skew {:.2})", b.shard_skew());
        assert_names(&svg, &["uniform (shard skew", &skew]);
    }

    #[test]
    fn partition_load_titles_touched_partitions_and_skew() {
        let r = run("hot-partition", 2, false);
        let dir = tempfile::tempdir().expect("tempdir");
        let paths = partition_load(&r, dir.path(), "partitions").expect("drawn");
        let svg = check_files(&paths, "partitions", CHART_SIZE_PX);
        let title =
            format!("{} of 1500 touched, skew {:.2}", r.partitions_touched(), r.partition_skew());
        assert_names(&svg, &["hot-partition", &title, "requests per 3 partitions"]);
    }

    #[test]
    fn partition_bins_keep_the_total() {
        let counts: Vec<u64> = (0..1_000).collect();
        let (width, bins) = bin_counts(&counts, 300);
        assert_eq!((width, bins.len()), (4, 250));
        assert_eq!(bins.iter().sum::<u64>(), counts.iter().sum::<u64>());
        assert_eq!(bin_counts(&[1, 2], 300), (1, vec![1, 2]));
        assert_eq!(bin_counts(&[], 300), (1, vec![]));
    }

    #[test]
    fn sweep_draws_three_panels_even_when_a_run_lacks_node_figures() {
        let sizes = [32u64, 64, 128, 256];
        let runs: Vec<_> =
            sizes.iter().zip(1..).map(|(b, s)| run(&format!("key-size={b}"), s, false)).collect();
        let mut no_node = run("key-size=512", 5, false);
        no_node.node = None;
        // Out of order on purpose: the chart sorts by parameter value.
        let mut points: Vec<_> = sizes.into_iter().zip(&runs).rev().collect();
        points.push((512, &no_node));
        let dir = tempfile::tempdir().expect("tempdir");
        let paths = sweep("key size (bytes)", &points, dir.path(), "sweep").expect("drawn");
        let svg = check_files(&paths, "sweep", SWEEP_SIZE_PX);
        assert_names(&svg, &["Sweep over key size (bytes)", "p50", "p99", "p999", "512", "32"]);
        assert_names(&svg, &["cache hit ratio", "index bytes per key"]);
    }

    #[test]
    fn sweep_with_a_zero_value_uses_a_linear_axis() {
        let r = run("r", 1, false);
        let dir = tempfile::tempdir().expect("tempdir");
        let paths = sweep("cache bytes", &[(0, &r), (1_000, &r)], dir.path(), "z").expect("drawn");
        check_files(&paths, "z", SWEEP_SIZE_PX);
    }

    #[test]
    fn scenarios_compare_four_figures_per_run() {
        let runs = [run("ycsb-a", 2, false), run("ycsb-b", 3, false), run("time-key", 1, true)];
        let refs: Vec<_> = runs.iter().collect();
        let dir = tempfile::tempdir().expect("tempdir");
        let paths = scenarios(&refs, dir.path(), "scenarios").expect("drawn");
        let svg = check_files(&paths, "scenarios", SCENARIOS_SIZE_PX);
        assert_names(&svg, &["ycsb-a", "ycsb-b", "time-key", "Shard skew", "Partition skew"]);
    }

    #[test]
    fn empty_inputs_still_draw() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut r = run("empty", 1, false);
        (r.intervals, r.ops, r.shard_ops, r.partition_ops) = (vec![], vec![], vec![], vec![]);
        throughput_over_time(&[], dir.path(), "a").expect("drawn");
        latency_spectrum(&[&r], dir.path(), "b").expect("drawn");
        shard_load(&[&r], dir.path(), "c").expect("drawn");
        partition_load(&r, dir.path(), "d").expect("drawn");
        sweep("x", &[], dir.path(), "e").expect("drawn");
        scenarios(&[], dir.path(), "f").expect("drawn");
    }

    #[test]
    fn errors_name_the_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let missing = dir.path().join("missing");
        let err = throughput_over_time(&[], &missing, "t").expect_err("no directory");
        assert!(err.contains("t.svg"), "{err}");
    }

    #[test]
    fn tick_numbers() {
        let labels: Vec<_> =
            [0.0, 0.25, 2.5, 42.0, 1_500.0, 2_000_000.0].iter().map(number).collect();
        assert_eq!(labels, ["0", "0.25", "2.5", "42", "1.5k", "2M"]);
    }
}
