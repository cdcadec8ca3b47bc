//! The report's section from scripts/bench-caf: the Fortran coarray benchmark
//! (bench/caf/bench.f90) on libcaf_gaspar and on OpenCoarrays, read from the script's
//! tables (one per image count).

use super::charts::{self, Series};
use super::markdown::{number, times, Section, Table};
use super::scripts::Script;
use super::Context;

/// One figure of the script's table.
struct Figure {
    name: String,
    unit: String,
    opencoarrays: Option<f64>,
    gaspar: Option<f64>,
    advantage: Option<f64>,
}

/// The script's tables: (image count, figures). A table starts at a line
/// `== N images: ...`; a figure's line is `NAME UNIT OPENCOARRAYS GASPAR ADVANTAGEx`
/// (n/a where a runtime has no figure); other lines are ignored.
fn parse(output: &str) -> Vec<(u32, Vec<Figure>)> {
    let mut tables: Vec<(u32, Vec<Figure>)> = Vec::new();
    for line in output.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        if let ["==", count, "images:", ..] = fields[..] {
            if let Ok(count) = count.parse() {
                tables.push((count, Vec::new()));
            }
            continue;
        }
        let (Some((_, figures)), [name, unit, opencoarrays, gaspar, advantage]) =
            (tables.last_mut(), &fields[..])
        else {
            continue;
        };
        let Ok(opencoarrays) = opencoarrays.parse::<f64>() else {
            continue;
        };
        figures.push(Figure {
            name: name.to_string(),
            unit: unit.to_string(),
            opencoarrays: Some(opencoarrays),
            gaspar: gaspar.parse().ok(),
            advantage: advantage.trim_end_matches('x').parse().ok(),
        });
    }
    tables
}

/// The bytes of a figure name's size suffix: `put_bw_4KiB` -> 4096.
fn size_of(suffix: &str) -> Option<f64> {
    let (digits, scale) = if let Some(d) = suffix.strip_suffix("MiB") {
        (d, 1 << 20)
    } else if let Some(d) = suffix.strip_suffix("KiB") {
        (d, 1 << 10)
    } else {
        (suffix.strip_suffix('B')?, 1)
    };
    Some(digits.parse::<u32>().ok()? as f64 * f64::from(scale))
}

/// The bandwidth lines of one image count: (`put`|`get`, runtime) -> (bytes, GB/s).
fn bandwidth_series(figures: &[Figure]) -> Vec<Series> {
    bandwidth_lines(
        figures,
        &["gaspar", "OpenCoarrays"],
        |f| (&f.name, &f.unit),
        |f, k| if k == 0 { f.gaspar } else { f.opencoarrays },
    )
}

/// The put and get bandwidth lines of a Fortran benchmark's figures: for `put` then
/// `get`, and each of `runtimes` (index k), the figures `OP_bw_SIZE` in MB/s as (bytes,
/// GB/s), the value of runtime k read by `value`; a line with no point is left out.
pub(super) fn bandwidth_lines<F>(
    figures: &[F],
    runtimes: &[&str],
    name_and_unit: impl Fn(&F) -> (&str, &str),
    value: impl Fn(&F, usize) -> Option<f64>,
) -> Vec<Series> {
    let mut series = Vec::new();
    for op in ["put", "get"] {
        let prefix = format!("{op}_bw_");
        for (k, runtime) in runtimes.iter().enumerate() {
            let points: Vec<(f64, f64)> = figures
                .iter()
                .filter_map(|f| {
                    let (name, unit) = name_and_unit(f);
                    let bytes = size_of(name.strip_prefix(&prefix)?).filter(|_| unit == "MB/s")?;
                    Some((bytes, value(f, k)? / 1000.0))
                })
                .collect();
            if !points.is_empty() {
                series.push(Series {
                    name: format!("{runtime} {op}"),
                    points,
                });
            }
        }
    }
    series
}

/// The rows that put the 4 MiB put and get beside a local copy of the same size
/// (`memcpy_4MiB`): each runtime's bandwidth as a fraction of its own memcpy figure.
fn memcpy_fractions(figures: &[Figure]) -> Vec<Figure> {
    let find = |name: &str| figures.iter().find(|f| f.name == name);
    let Some(memcpy) = find("memcpy_4MiB") else {
        return Vec::new();
    };
    let fraction = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => Some(a / b),
        _ => None,
    };
    ["put_bw_4MiB", "get_bw_4MiB"]
        .iter()
        .filter_map(|&name| {
            let f = find(name)?;
            Some(Figure {
                name: format!("{name}/memcpy"),
                unit: "x".into(),
                opencoarrays: fraction(f.opencoarrays, memcpy.opencoarrays),
                gaspar: fraction(f.gaspar, memcpy.gaspar),
                advantage: None,
            })
        })
        .collect()
}

pub(super) fn section(context: &Context) -> Result<Section, String> {
    let mut script = Script::new("bench-caf");
    if context.quick {
        script = script.arg("3").arg("3");
    }
    let output = script.run(context.repo()?, &context.raw)?;
    let mut section = Section::new(super::Suite::Caf.title(), script.command_line());
    section.note(
        "advantage: OpenCoarrays' time / gaspar's (for MB/s, gaspar's / OpenCoarrays'); \
         above 1: gaspar is faster. startup_trivial: the wall time of a job of a trivial \
         program, launcher included. put_bw_4MiB/memcpy, get_bw_4MiB/memcpy: each \
         runtime's 4 MiB bandwidth as a fraction of its memcpy_4MiB (a local copy of the \
         same size).",
    );
    let tables = parse(&output);
    if tables.is_empty() {
        return Err("scripts/bench-caf printed no table (raw/bench-caf.txt)".into());
    }
    let series = bandwidth_series(&tables[0].1);
    let title = format!(
        "Fortran coarrays, {} images: coindexed put/get bandwidth",
        tables[0].0
    );
    for (count, figures) in tables {
        let mut table = Table::new(
            format!("{count} images"),
            &["figure", "unit", "OpenCoarrays", "gaspar", "advantage"],
        );
        let fractions = memcpy_fractions(&figures);
        for figure in figures.into_iter().chain(fractions) {
            table.row(vec![
                figure.name,
                figure.unit,
                number(figure.opencoarrays),
                number(figure.gaspar),
                times(figure.advantage),
            ]);
        }
        section.table(table);
    }
    context.chart(&mut section, "caf-bandwidth.png", &title, |path| {
        charts::bandwidth(path, &title, &series)
    });
    Ok(section)
}

#[cfg(test)]
mod tests {
    use super::parse;

    #[test]
    fn reads_each_image_count_and_its_figures() {
        let output = "bench-caf: note\n\n== 2 images: OpenCoarrays 2.10 vs gaspar (medians) ==\n\
            figure                 unit    OpenCoarrays         gaspar  advantage\n\
            put_lat                us             1.5           0.5      3.00x\n\
            get_bw                 MB/s          1000           n/a        n/a\n\
            \n== 4 images: OpenCoarrays 2.10 vs gaspar (medians) ==\n\
            figure                 unit    OpenCoarrays         gaspar  advantage\n\
            sync_all               us             9             3      3.00x\n";
        let tables = parse(output);
        assert_eq!(tables.len(), 2);
        assert_eq!(tables[0].0, 2);
        assert_eq!(tables[0].1.len(), 2);
        let put = &tables[0].1[0];
        assert_eq!((put.name.as_str(), put.unit.as_str()), ("put_lat", "us"));
        assert_eq!(
            (put.opencoarrays, put.gaspar, put.advantage),
            (Some(1.5), Some(0.5), Some(3.0))
        );
        assert_eq!(tables[0].1[1].gaspar, None);
        assert_eq!((tables[1].0, tables[1].1[0].name.as_str()), (4, "sync_all"));
    }

    #[test]
    fn the_4_mib_figures_are_put_beside_memcpy() {
        let output = "== 2 images: x ==\n\
            put_bw_4MiB    MB/s   1e+04  9000   0.90x\n\
            get_bw_4MiB    MB/s   5000   n/a    n/a\n\
            memcpy_4MiB    MB/s   2e+04  1e+04  0.50x\n";
        let tables = parse(output);
        let rows = super::memcpy_fractions(&tables[0].1);
        let names: Vec<&str> = rows.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["put_bw_4MiB/memcpy", "get_bw_4MiB/memcpy"]);
        assert_eq!(
            (rows[0].opencoarrays, rows[0].gaspar),
            (Some(0.5), Some(0.9))
        );
        assert_eq!((rows[1].opencoarrays, rows[1].gaspar), (Some(0.25), None));
        assert!(super::memcpy_fractions(&tables[0].1[..2]).is_empty());
    }

    #[test]
    fn bandwidth_figures_become_lines_in_gb_per_second() {
        let output = "== 2 images: x ==\n\
            put_bw_8B      MB/s   40     400   10.00x\n\
            put_bw_4KiB    MB/s   2e+04  4e+04  2.00x\n\
            get_bw_2MiB    MB/s   5e+04  n/a    n/a\n";
        let tables = parse(output);
        let series = super::bandwidth_series(&tables[0].1);
        let names: Vec<&str> = series.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(
            names,
            ["gaspar put", "OpenCoarrays put", "OpenCoarrays get"]
        );
        assert_eq!(series[0].points, [(8.0, 0.4), (4096.0, 40.0)]);
        assert_eq!(series[2].points, [(2.0 * 1048576.0, 50.0)]);
    }
}
