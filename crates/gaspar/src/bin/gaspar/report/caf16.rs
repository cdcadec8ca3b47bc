//! The report's section from scripts/bench-caf16: the Fortran coarray benchmark
//! (bench/caf/bench.f90) compiled by gfortran 16 on libcaf_gaspar and on GCC 16's own
//! caf_shmem, and by gfortran 12 on OpenCoarrays, read from the script's tables (one per
//! image count).

use super::caf::bandwidth_lines;
use super::charts::{self, Series};
use super::markdown::{number, times, Section, Table};
use super::scripts::Script;
use super::Context;

/// The runtimes of the script's columns, in its order.
const RUNTIMES: [&str; 3] = ["gaspar", "caf_shmem", "OpenCoarrays"];

/// One figure of the script's table: a value per runtime of [`RUNTIMES`] and gaspar's
/// ratio to each peer.
struct Figure {
    name: String,
    unit: String,
    values: [Option<f64>; 3],
    ratios: [Option<f64>; 2],
}

/// A number of the script's table, `n/a` or a ratio such as `0.95x`; `None` when the
/// field is neither (a header).
fn field(text: &str) -> Option<Option<f64>> {
    if text == "n/a" {
        return Some(None);
    }
    text.trim_end_matches('x').parse().ok().map(Some)
}

/// The script's tables: (image count, figures). A table starts at a line `== N images:
/// ...`; a figure's line is `NAME UNIT GASPAR CAF_SHMEM OPENCOARRAYS VS_SHMEMx VS_OCx`
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
        let (Some((_, figures)), [name, unit, numbers @ ..]) = (tables.last_mut(), &fields[..])
        else {
            continue;
        };
        let Some(parsed) = numbers
            .iter()
            .map(|n| field(n))
            .collect::<Option<Vec<Option<f64>>>>()
        else {
            continue;
        };
        let [g, s, o, vs_shmem, vs_oc] = parsed[..] else {
            continue;
        };
        figures.push(Figure {
            name: name.to_string(),
            unit: unit.to_string(),
            values: [g, s, o],
            ratios: [vs_shmem, vs_oc],
        });
    }
    tables
}

/// Each runtime's 4 MiB put and get bandwidth as a fraction of its own `memcpy_4MiB` (a
/// local copy of the same size), as rows.
fn memcpy_fractions(figures: &[Figure]) -> Vec<Figure> {
    let find = |name: &str| figures.iter().find(|f| f.name == name);
    let Some(memcpy) = find("memcpy_4MiB") else {
        return Vec::new();
    };
    ["put_bw_4MiB", "get_bw_4MiB"]
        .iter()
        .filter_map(|&name| {
            let f = find(name)?;
            let mut values = [None; 3];
            for (k, value) in values.iter_mut().enumerate() {
                *value = match (f.values[k], memcpy.values[k]) {
                    (Some(a), Some(b)) if b > 0.0 => Some(a / b),
                    _ => None,
                };
            }
            Some(Figure {
                name: format!("{name}/memcpy"),
                unit: "x".into(),
                values,
                ratios: [None; 2],
            })
        })
        .collect()
}

/// The put and get bandwidth lines of gaspar and caf_shmem: (bytes, GB/s).
fn bandwidth_series(figures: &[Figure]) -> Vec<Series> {
    bandwidth_lines(
        figures,
        &RUNTIMES[..2],
        |f| (&f.name, &f.unit),
        |f, k| f.values[k],
    )
}

pub(super) fn section(context: &Context) -> Result<Section, String> {
    let mut script = Script::new("bench-caf16");
    if context.quick {
        script = script.env("ROUNDS", "1").arg("3");
    }
    let output = script.run(context.repo()?, &context.raw)?;
    let mut section = Section::new(super::Suite::Caf16.title(), script.command_line());
    section.note(
        "ratio: gaspar's time / the peer's (for MB/s, the peer's bandwidth / gaspar's); \
         below 1: gaspar is faster. gaspar and caf_shmem run programs built by gfortran 16 \
         (in the Debian sid chroot of scripts/sid-chroot), OpenCoarrays one built by \
         gfortran 12. put_bw_4MiB/memcpy, get_bw_4MiB/memcpy: each runtime's 4 MiB \
         bandwidth as a fraction of its memcpy_4MiB (a local copy of the same size).",
    );
    let tables = parse(&output);
    if tables.iter().all(|(_, figures)| figures.is_empty()) {
        return Err("scripts/bench-caf16 printed no figure (raw/bench-caf16.txt)".into());
    }
    let series = bandwidth_series(&tables[0].1);
    let title = format!(
        "Fortran coarrays (gfortran 16), {} images: coindexed put/get bandwidth",
        tables[0].0
    );
    for (count, figures) in tables {
        let mut table = Table::new(
            format!("{count} images"),
            &[
                "figure",
                "unit",
                RUNTIMES[0],
                RUNTIMES[1],
                RUNTIMES[2],
                "vs caf_shmem",
                "vs OpenCoarrays",
            ],
        );
        let fractions = memcpy_fractions(&figures);
        for figure in figures.into_iter().chain(fractions) {
            let [g, s, o] = figure.values;
            let [vs_shmem, vs_oc] = figure.ratios;
            table.row(vec![
                figure.name,
                figure.unit,
                number(g),
                number(s),
                number(o),
                times(vs_shmem),
                times(vs_oc),
            ]);
        }
        section.table(table);
    }
    context.chart(&mut section, "caf16-bandwidth.png", &title, |path| {
        charts::bandwidth(path, &title, &series)
    });
    Ok(section)
}

#[cfg(test)]
mod tests {
    use super::parse;

    /// Lines as scripts/bench-caf16 prints them.
    const OUTPUT: &str = "CPU: AMD EPYC, 2 cores; load average at start: 0.03 0.85 2.21\n\n\
        == 2 images: gaspar and caf_shmem (gfortran 16), OpenCoarrays 2.10.1 (gfortran 12); medians ==\n\
        figure                 unit        gaspar    caf_shmem OpenCoarrays   vs shmem      vs OC\n\
        put_latency_8B         us         0.01472     0.008124       0.1488     1.812x     0.099x\n\
        put_bw_4MiB            MB/s     1.675e+04    1.961e+04          n/a     1.170x        n/a\n\
        memcpy_4MiB            MB/s     3.696e+04    4.767e+04    3.986e+04     1.290x     1.079x\n\
        put / get 4 MiB as a fraction of memcpy_4MiB: gaspar 0.45 / 0.46, caf_shmem 0.41 / 0.41\n\n\
        == 4 images: gaspar and caf_shmem (gfortran 16) ==\n\
        figure                 unit        gaspar    caf_shmem OpenCoarrays   vs shmem      vs OC\n\
        sync_all               us           2.428        26.59        4.931     0.091x     0.492x\n";

    #[test]
    fn reads_each_image_count_and_its_figures() {
        let tables = parse(OUTPUT);
        assert_eq!(tables.len(), 2);
        assert_eq!(tables[0].0, 2);
        let names: Vec<&str> = tables[0].1.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["put_latency_8B", "put_bw_4MiB", "memcpy_4MiB"]);
        let put = &tables[0].1[0];
        assert_eq!(put.unit, "us");
        assert_eq!(put.values, [Some(0.01472), Some(0.008124), Some(0.1488)]);
        assert_eq!(put.ratios, [Some(1.812), Some(0.099)]);
        assert_eq!(tables[0].1[1].values[2], None);
        assert_eq!(tables[0].1[1].ratios, [Some(1.17), None]);
        assert_eq!((tables[1].0, tables[1].1[0].name.as_str()), (4, "sync_all"));
    }

    #[test]
    fn the_4_mib_figures_are_put_beside_each_runtimes_memcpy() {
        let tables = parse(OUTPUT);
        let rows = super::memcpy_fractions(&tables[0].1);
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].name, "put_bw_4MiB/memcpy");
        let [g, s, o] = rows[0].values;
        assert!((g.unwrap() - 1.675e4 / 3.696e4).abs() < 1e-9);
        assert!((s.unwrap() - 1.961e4 / 4.767e4).abs() < 1e-9);
        assert_eq!(o, None);
    }

    #[test]
    fn bandwidth_lines_are_gaspars_and_caf_shmems() {
        let tables = parse(OUTPUT);
        let series = super::bandwidth_series(&tables[0].1);
        let names: Vec<&str> = series.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["gaspar put", "caf_shmem put"]);
        assert_eq!(series[0].points, [(4.0 * 1048576.0, 16.75)]);
    }
}
