//! Draws the speedups over Base of `scripts/bench-darray`'s table (target/bench-darray/
//! table.tsv) as grouped bars, one panel per transport and rank count, into a PNG.
//!
//! Usage: darray-chart TABLE.tsv OUT.png [FONT.ttf]

use std::collections::BTreeMap;
use std::error::Error;

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use plotters::style::{register_font, FontStyle};

/// The variants drawn, in order, with their colors (Base is the unit).
const VARIANTS: [(&str, RGBColor); 5] = [
    ("HandOpt", RGBColor(90, 90, 90)),
    ("AC", RGBColor(31, 119, 180)),
    ("MC", RGBColor(255, 127, 14)),
    ("AC+SD", RGBColor(44, 160, 44)),
    ("MC+SD", RGBColor(214, 39, 40)),
];

/// Speedups per panel (shm first, transport, ranks), benchmark and variant.
type Speedups = BTreeMap<(bool, String, u32), BTreeMap<String, BTreeMap<String, f64>>>;

fn read_table(path: &str) -> Result<Speedups, Box<dyn Error>> {
    let mut panels = Speedups::new();
    for line in std::fs::read_to_string(path)?.lines().skip(1) {
        let fields: Vec<&str> = line.split('\t').collect();
        if fields.len() < 6 || fields[5].is_empty() {
            continue;
        }
        panels
            .entry((
                fields[0] != "shm",
                fields[0].to_string(),
                fields[1].parse()?,
            ))
            .or_default()
            .entry(fields[2].to_string())
            .or_default()
            .insert(fields[3].to_string(), fields[5].parse()?);
    }
    Ok(panels)
}

fn main() -> Result<(), Box<dyn Error>> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 {
        return Err("usage: darray-chart TABLE.tsv OUT.png [FONT.ttf]".into());
    }
    let font = args
        .get(3)
        .cloned()
        .unwrap_or_else(|| "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf".into());
    let bytes: &'static [u8] = Box::leak(std::fs::read(&font)?.into_boxed_slice());
    register_font("sans-serif", FontStyle::Normal, bytes).map_err(|_| "bad font")?;
    let panels = read_table(&args[1])?;
    let height = 360 * panels.len().max(1) as u32;
    let root = BitMapBackend::new(&args[2], (1000, height)).into_drawing_area();
    root.fill(&WHITE)?;
    for (area, ((_, transport, ranks), benchmarks)) in
        root.split_evenly((panels.len(), 1)).iter().zip(&panels)
    {
        let top = benchmarks
            .values()
            .flat_map(|v| v.values())
            .fold(1.0f64, |m, &s| m.max(s));
        let names: Vec<&String> = benchmarks.keys().collect();
        let groups = names.len() as f64;
        let mut chart = ChartBuilder::on(area)
            .caption(
                format!("speedup over Base, {transport}, {ranks} ranks"),
                ("sans-serif", 22),
            )
            .margin(12)
            .x_label_area_size(30)
            .y_label_area_size(50)
            .build_cartesian_2d(0.0..groups, -top * 0.08..top * 1.1)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(0)
            .y_desc("x Base")
            .draw()?;
        let label = ("sans-serif", 16)
            .into_text_style(area)
            .pos(Pos::new(HPos::Center, VPos::Center));
        chart.draw_series(names.iter().enumerate().map(|(g, name)| {
            Text::new(
                name.to_string(),
                (g as f64 + 0.5, -top * 0.04),
                label.clone(),
            )
        }))?;
        let width = 0.8 / VARIANTS.len() as f64;
        for (v, (variant, color)) in VARIANTS.iter().enumerate() {
            let bars = names.iter().enumerate().filter_map(|(g, name)| {
                let speedup = *benchmarks[*name].get(*variant)?;
                let x0 = g as f64 + 0.1 + v as f64 * width;
                Some(Rectangle::new(
                    [(x0, 0.0), (x0 + width * 0.9, speedup)],
                    color.filled(),
                ))
            });
            chart
                .draw_series(bars)?
                .label(*variant)
                .legend(move |(x, y)| {
                    Rectangle::new([(x, y - 5), (x + 10, y + 5)], color.filled())
                });
        }
        chart.draw_series(std::iter::once(PathElement::new(
            vec![(0.0, 1.0), (groups, 1.0)],
            BLACK.stroke_width(1),
        )))?;
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperMiddle)
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()?;
    }
    root.present()?;
    Ok(())
}
