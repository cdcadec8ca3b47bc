//! The report's section from scripts/bench-darray: the LAPPS paper's application
//! benchmarks in their six variants, read from the script's table
//! (target/bench-darray/table.tsv), with its chart of the speedups.

use std::collections::BTreeMap;

use super::markdown::{times, Section, Table};
use super::scripts::Script;
use super::Context;

/// Problem sizes of quick mode (benchmark:size:iterations).
const QUICK_SIZES: &str = "sobel:256:2 heat:32:2 transpose:256:2 dgemm:64:1 sparse:64:1";

/// The table's rows by (transport, ranks): (benchmark, variant, seconds, speedup over
/// Base, ratio to HandOpt, memory over Base).
type Rows = BTreeMap<(String, String), Vec<[String; 6]>>;

fn parse(tsv: &str) -> Rows {
    let mut rows = Rows::new();
    for line in tsv.lines().skip(1) {
        let fields: Vec<&str> = line.split('\t').collect();
        let [transport, ranks, benchmark, variant, seconds, speedup, handopt, memory] = fields[..]
        else {
            continue;
        };
        let ratio = |v: &str| times(v.parse().ok());
        rows.entry((transport.to_string(), ranks.to_string()))
            .or_default()
            .push([
                benchmark.to_string(),
                variant.to_string(),
                seconds.to_string(),
                ratio(speedup),
                ratio(handopt),
                ratio(memory),
            ]);
    }
    rows
}

pub(super) fn section(context: &Context) -> Result<Section, String> {
    let mut script = Script::new("bench-darray");
    if context.quick {
        script = script.env("GASPAR_BENCH_SIZES", QUICK_SIZES).arg("1");
    }
    let repo = context.repo()?;
    script.run(repo, &context.raw)?;
    let out = repo.join("target/bench-darray");
    let tsv = std::fs::read_to_string(out.join("table.tsv"))
        .map_err(|e| format!("target/bench-darray/table.tsv: {e}"))?;
    let mut section = Section::new(super::Suite::Darray.title(), script.command_line());
    section.note(
        "The peer of each variant is the hand-optimized program (HandOpt); Base is the \
         naive one. Seconds: the median of the runs; each run checked its result. The \
         synthetic benchmarks are in raw/bench-darray.txt.",
    );
    for ((transport, ranks), rows) in parse(&tsv) {
        let mut table = Table::new(
            format!("{transport}, {ranks} ranks"),
            &[
                "benchmark",
                "variant",
                "seconds",
                "speedup over Base",
                "time/HandOpt",
                "memory/Base",
            ],
        );
        for row in rows {
            table.row(row.to_vec());
        }
        section.table(table);
    }
    let chart = "darray-speedups.png";
    let copied = std::fs::copy(out.join("speedups.png"), context.dir.join(chart))
        .map(drop)
        .map_err(|e| format!("target/bench-darray/speedups.png: {e}"));
    section.chart(chart, "Distributed arrays: speedup over Base", copied);
    Ok(section)
}

#[cfg(test)]
mod tests {
    use super::parse;

    #[test]
    fn groups_the_rows_by_transport_and_ranks() {
        let tsv = "transport\tranks\tbenchmark\tvariant\tseconds\tspeedup_over_base\tratio_to_handopt\tmemory_over_base\n\
            shm\t2\tsobel\tBase\t0.5000\t1.0000\t2.0000\t1.0000\n\
            shm\t2\tsobel\tAC\t0.2500\t2.0000\t\t0.9000\n\
            shm\t4\theat\tBase\t1.0000\t1.0000\t1.0000\t1.0000\n";
        let rows = parse(tsv);
        assert_eq!(rows.len(), 2);
        let two = &rows[&("shm".to_string(), "2".to_string())];
        assert_eq!(two[1], ["sobel", "AC", "0.2500", "2.00x", "-", "0.90x"]);
    }
}
