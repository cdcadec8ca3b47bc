//! The report's PNG charts: lines of bandwidth against transfer size, and grouped bars of
//! times on a logarithmic axis (each bar labelled with its value). Drawn by plotters into
//! an RGB buffer, its text by ab_glyph from one TrueType file (no fontconfig, no system
//! font library), and encoded by png.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use plotters::style::{register_font, FontStyle};

/// Pixels of every chart.
const SIZE: (u32, u32) = (960, 480);
/// The font family every text of a chart is drawn in (registered by [`use_font`]).
const FAMILY: &str = "sans-serif";
/// Where Debian's fonts-dejavu-core and fonts-liberation put a sans-serif font.
const SYSTEM_FONTS: [&str; 2] = [
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
];
/// One color per series, in order.
const COLORS: [RGBColor; 5] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
];

/// One line of a line chart, or one kind of bar of a bar chart.
pub(super) struct Series {
    /// Its name in the legend.
    pub name: String,
    /// Line charts: (transfer size in bytes, GB/s). Bar charts: (group index, value).
    pub points: Vec<(f64, f64)>,
}

/// Loads the font of the charts' text once per process: `chosen`, else the first of
/// [`SYSTEM_FONTS`] present. `Err` says why charts cannot be drawn.
pub(super) fn use_font(chosen: Option<&Path>) -> Result<PathBuf, String> {
    static FONT: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    FONT.get_or_init(|| {
        let path = match chosen {
            Some(path) => path.to_path_buf(),
            None => SYSTEM_FONTS
                .iter()
                .map(PathBuf::from)
                .find(|path| path.exists())
                .ok_or_else(|| {
                    "no TrueType font: apt-get install fonts-dejavu-core, or pass --font FILE.ttf"
                        .to_string()
                })?,
        };
        let bytes = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        // plotters keeps registered fonts for the life of the process.
        let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
        register_font(FAMILY, FontStyle::Normal, bytes)
            .map_err(|_| format!("{}: not a TrueType font", path.display()))?;
        Ok(path)
    })
    .clone()
}

/// "8 B", "64 KiB", "4 MiB".
pub(super) fn human_size(bytes: f64) -> String {
    let bytes = bytes.round() as u64;
    match bytes {
        b if b >= 1 << 20 => format!("{} MiB", b >> 20),
        b if b >= 1 << 10 => format!("{} KiB", b >> 10),
        b => format!("{b} B"),
    }
}

/// A time given in nanoseconds, in the unit that keeps it short: "9.8 ns", "1.53 µs".
pub(super) fn duration(ns: f64) -> String {
    let (value, unit) = match ns {
        v if v >= 1e9 => (v / 1e9, "s"),
        v if v >= 1e6 => (v / 1e6, "ms"),
        v if v >= 1e3 => (v / 1e3, "µs"),
        v => (v, "ns"),
    };
    match value {
        v if v >= 100.0 || v.fract() == 0.0 => format!("{v:.0} {unit}"),
        v if v >= 10.0 => format!("{v:.1} {unit}"),
        v => format!("{v:.2} {unit}"),
    }
}

fn plotting<E: std::fmt::Debug>(e: E) -> String {
    format!("drawing the chart: {e:?}")
}

/// Draws into a fresh white RGB buffer and writes it to `path` as a PNG.
fn render(
    path: &Path,
    draw: impl FnOnce(&DrawingArea<BitMapBackend, plotters::coord::Shift>) -> Result<(), String>,
) -> Result<(), String> {
    let (width, height) = SIZE;
    let mut pixels = vec![255u8; (width * height * 3) as usize];
    {
        let root = BitMapBackend::with_buffer(&mut pixels, SIZE).into_drawing_area();
        draw(&root)?;
        root.present().map_err(plotting)?;
    }
    let file = std::fs::File::create(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut encoder = png::Encoder::new(std::io::BufWriter::new(file), width, height);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    encoder.set_compression(png::Compression::Best);
    let mut writer = encoder.write_header().map_err(|e| e.to_string())?;
    writer.write_image_data(&pixels).map_err(|e| e.to_string())
}

/// Bandwidth (GB/s) against transfer size (a log2 axis), one line per series.
pub(super) fn bandwidth(path: &Path, title: &str, series: &[Series]) -> Result<(), String> {
    let points = series.iter().flat_map(|s| s.points.iter());
    let (mut low, mut high, mut top) = (f64::MAX, 1.0f64, 0.1f64);
    for &(size, gbs) in points {
        low = low.min(size.log2());
        high = high.max(size.log2());
        top = top.max(gbs);
    }
    if low > high {
        return Err("no figures to draw".into());
    }
    render(path, |root| {
        let mut chart = ChartBuilder::on(root)
            .caption(title, (FAMILY, 22))
            .margin(12)
            .margin_right(36)
            .x_label_area_size(44)
            .y_label_area_size(60)
            .build_cartesian_2d(low..high, 0.0..top * 1.1)
            .map_err(plotting)?;
        chart
            .configure_mesh()
            .x_labels(((high - low) as usize / 2) + 1)
            .x_label_formatter(&|log2| human_size(log2.exp2()))
            .x_desc("transfer size")
            .y_desc("GB/s")
            .label_style((FAMILY, 14))
            .draw()
            .map_err(plotting)?;
        for (s, color) in series.iter().zip(COLORS.iter().cycle()) {
            let line = s.points.iter().map(|&(size, gbs)| (size.log2(), gbs));
            chart
                .draw_series(LineSeries::new(line.clone(), color.stroke_width(2)))
                .map_err(plotting)?
                .label(s.name.as_str())
                .legend(move |(x, y)| {
                    PathElement::new([(x, y), (x + 18, y)], color.stroke_width(2))
                });
            chart
                .draw_series(line.map(|p| Circle::new(p, 3, color.filled())))
                .map_err(plotting)?;
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .label_font((FAMILY, 15))
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .draw()
            .map_err(plotting)
    })
}

/// Grouped bars of times: one group per name of `groups` (in two lines where it has a
/// '\n'), one bar per series in each (a
/// series' points are (group index, nanoseconds); a group it has no point for has no bar
/// of it), each bar labelled with its time. The time axis is logarithmic when the times
/// span more than [`LINEAR_SPAN`], else linear from zero.
pub(super) fn bars(
    path: &Path,
    title: &str,
    groups: &[String],
    series: &[Series],
) -> Result<(), String> {
    let values = series.iter().flat_map(|s| s.points.iter().map(|p| p.1));
    let (low, high) = values
        .filter(|v| *v > 0.0)
        .fold((f64::MAX, 0.0f64), |(l, h), v| (l.min(v), h.max(v)));
    if groups.is_empty() || high == 0.0 {
        return Err("no figures to draw".into());
    }
    let bars = Bars {
        title,
        groups,
        series,
    };
    if high / low > LINEAR_SPAN {
        let floor = 10f64.powf((low / 2.0).log10().floor());
        let ceiling = 10f64.powf((high * 30.0).log10().ceil());
        render(path, |root| {
            bars.draw(
                root,
                (floor..ceiling).log_scale(),
                floor,
                "time (log scale)",
            )
        })
    } else {
        render(path, |root| bars.draw(root, 0.0..high * 1.45, 0.0, "time"))
    }
}

/// The largest ratio of the longest time to the shortest drawn on a linear axis.
const LINEAR_SPAN: f64 = 20.0;

/// What a bar chart shows, whichever its time axis.
struct Bars<'a> {
    title: &'a str,
    groups: &'a [String],
    series: &'a [Series],
}

impl Bars<'_> {
    /// Draws the chart with the time axis `axis`, whose bars start at `floor`.
    fn draw<Y>(
        &self,
        root: &DrawingArea<BitMapBackend, plotters::coord::Shift>,
        axis: Y,
        floor: f64,
        axis_name: &str,
    ) -> Result<(), String>
    where
        Y: AsRangedCoord<Value = f64>,
        Y::CoordDescType: Ranged<ValueType = f64> + ValueFormatter<f64>,
    {
        let width = 0.8 / self.series.len().max(1) as f64;
        let mut chart = ChartBuilder::on(root)
            .caption(self.title, (FAMILY, 22))
            .margin(12)
            .x_label_area_size(44)
            .y_label_area_size(80)
            .build_cartesian_2d(0.0..self.groups.len() as f64, axis)
            .map_err(plotting)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(0)
            .y_label_formatter(&|v| duration(*v))
            .y_desc(axis_name)
            .label_style((FAMILY, 14))
            .draw()
            .map_err(plotting)?;
        let above =
            TextStyle::from((FAMILY, 11).into_font()).pos(Pos::new(HPos::Center, VPos::Bottom));
        for (index, (s, color)) in self.series.iter().zip(COLORS.iter().cycle()).enumerate() {
            let left = |group: f64| group + 0.1 + index as f64 * width;
            chart
                .draw_series(s.points.iter().map(|&(group, value)| {
                    Rectangle::new(
                        [(left(group), floor), (left(group) + width, value)],
                        color.filled(),
                    )
                }))
                .map_err(plotting)?
                .label(s.name.as_str())
                .legend(move |(x, y)| {
                    Rectangle::new([(x, y - 6), (x + 12, y + 6)], color.filled())
                });
            for &(group, value) in &s.points {
                let (x, y) = chart.backend_coord(&(left(group) + width / 2.0, value));
                root.draw(&Text::new(duration(value), (x, y - 3), above.clone()))
                    .map_err(plotting)?;
            }
        }
        // The groups' names under their centers (plotters' own labels fall on its ticks),
        // a line per '\n'.
        let below =
            TextStyle::from((FAMILY, 14).into_font()).pos(Pos::new(HPos::Center, VPos::Top));
        for (group, name) in self.groups.iter().enumerate() {
            let (x, y) = chart.backend_coord(&(group as f64 + 0.5, floor));
            for (line, text) in name.lines().enumerate() {
                let y = y + 6 + 16 * line as i32;
                root.draw(&Text::new(text, (x, y), below.clone()))
                    .map_err(plotting)?;
            }
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .label_font((FAMILY, 15))
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .draw()
            .map_err(plotting)
    }
}
