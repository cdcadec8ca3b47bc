//! The report's section from scripts/bench-mpi: gaspar on the mpi transport beside the
//! same MPI-3 RMA calls made directly, in the same job and as a separate program, and the
//! barrier, ping-pong and allreduce by job size beside OpenMPI.

use serde_json::Value;

use super::charts::{self, human_size, Series};
use super::markdown::{ns, times, Section, Table};
use super::scripts::Script;
use super::Context;

/// Jobs of the script in full mode (its default, 5, takes about a quarter of an hour).
const FULL_RUNS: &str = "3";
/// `gaspar bench`'s options in each of the script's runs in quick mode.
const QUICK_BENCH: &str = "--reps 5 --iters 2000 --rounds 1 --scaling-ranks 2,4 \
                           --barrier-iters 200 --pingpong-iters 50 --allreduce-ranks 2";

fn rows<'a>(figures: &'a Value, table: &str) -> impl Iterator<Item = &'a Value> + use<'a> {
    figures[table].as_array().into_iter().flatten()
}

fn value(row: &Value, name: &str) -> Option<f64> {
    row[name].as_f64()
}

fn range(row: &Value) -> String {
    match (value(row, "min"), value(row, "max")) {
        (Some(low), Some(high)) => format!("{low:.2}-{high:.2}x"),
        _ => "-".into(),
    }
}

pub(super) fn section(context: &Context) -> Result<Section, String> {
    let script = if context.quick {
        Script::new("bench-mpi")
            .env("RUNS", "1")
            .env("GASPAR_BENCH_ARGS", QUICK_BENCH)
    } else {
        Script::new("bench-mpi").env("RUNS", FULL_RUNS)
    };
    let figures = script.run_json(context.repo()?, &context.raw)?;
    let runs = figures["runs"].as_u64().unwrap_or(0);
    let mut section = Section::new(super::Suite::Mpi.title(), script.command_line());
    section.note(format!(
        "{runs} jobs of `gaspar bench --transport mpi` under mpirun (osc/sm); each figure is \
         the median over the jobs, the range that of the ratio. Ratios: time, gaspar / peer."
    ));
    let operation = |row: &Value| row["operation"].as_str().unwrap_or("").to_string();
    let size = |row: &Value| human_size(row["size"].as_f64().unwrap_or(0.0));
    let mut in_job = Table::new(
        "In the same job, alternating repetitions: gaspar vs the raw MPI calls",
        &[
            "operation",
            "size",
            "gaspar",
            "raw MPI",
            "gaspar/raw MPI",
            "range",
        ],
    );
    for row in rows(&figures, "in_job") {
        in_job.row(vec![
            operation(row),
            size(row),
            ns(value(row, "gaspar_ns")),
            ns(value(row, "peer_ns")),
            times(value(row, "ratio")),
            range(row),
        ]);
    }
    section.table(in_job);
    let mut program = Table::new(
        "Beside the separate C peer program (OpenMPI osc/sm), 8 B",
        &["operation", "gaspar", "OpenMPI", "gaspar/OpenMPI", "range"],
    );
    for row in rows(&figures, "peer_program") {
        program.row(vec![
            operation(row),
            ns(value(row, "gaspar_ns")),
            ns(value(row, "peer_ns")),
            times(value(row, "ratio")),
            range(row),
        ]);
    }
    section.table(program);
    let mut scaling = Table::new(
        "Barrier and ping-pong by job size on the mpi transport (OpenMPI: its faster way of waiting)",
        &[
            "operation",
            "ranks",
            "gaspar",
            "OpenMPI",
            "gaspar/OpenMPI",
            "range",
        ],
    );
    // The script's allreduce rows mix its two sizes (1 and 1 Mi doubles): left out.
    for row in rows(&figures, "scaling").filter(|row| row["operation"] != "allreduce") {
        scaling.row(vec![
            operation(row),
            row["ranks"].to_string(),
            ns(value(row, "gaspar_ns")),
            ns(value(row, "peer_ns")),
            times(value(row, "ratio")),
            range(row),
        ]);
    }
    section.table(scaling);
    let eight_bytes: Vec<&Value> = rows(&figures, "in_job")
        .filter(|row| row["size"].as_u64() == Some(8))
        .collect();
    let groups: Vec<String> = eight_bytes.iter().map(|row| operation(row)).collect();
    let column = |name: &str, field: &str| Series {
        name: name.into(),
        points: eight_bytes
            .iter()
            .enumerate()
            .filter_map(|(group, row)| Some((group as f64, value(row, field)?)))
            .collect(),
    };
    let series = vec![column("gaspar", "gaspar_ns"), column("raw MPI", "peer_ns")];
    let title = "mpi transport, 8 B, same job: gaspar vs the raw MPI calls";
    context.chart(&mut section, "mpi-latency.png", title, |path| {
        charts::bars(path, title, &groups, &series)
    });
    Ok(section)
}
