//! The report's section from scripts/bench-coarray: the coarray layer of the Rust API
//! beside the raw calls it is built on (timed alternately in the same processes) and
//! beside OpenMPI RMA's nearest equivalent of each operation.

use super::markdown::{ns, times, Section, Table};
use super::scripts::Script;
use super::Context;

pub(super) fn section(context: &Context) -> Result<Section, String> {
    let mut script = Script::new("bench-coarray");
    if context.quick {
        script = script.arg("2");
    }
    let figures = script.run_json(context.repo()?, &context.raw)?;
    let mut section = Section::new(super::Suite::Coarray.title(), script.command_line());
    section.note(
        "ns per operation; raw: the gma/strided calls the layer makes; OpenMPI: \
         examples/coarray_bench_peer.c (its header names each equivalent). The \
         allocate/deallocate figures are in raw/bench-coarray.txt.",
    );
    let images = figures["images"].as_object().cloned().unwrap_or_default();
    for (count, operations) in &images {
        let mut table = Table::new(
            format!("{count} images"),
            &[
                "operation",
                "coarray",
                "raw",
                "OpenMPI",
                "coarray/raw",
                "coarray/OpenMPI",
            ],
        );
        for row in operations.as_array().into_iter().flatten() {
            let operation = row["operation"].as_str().unwrap_or("").to_string();
            let (coarray, raw, mpi) = (
                row["coarray"].as_f64(),
                row["raw"].as_f64(),
                row["mpi"].as_f64(),
            );
            let ratio = |a: Option<f64>, b: Option<f64>| Some(a? / b?);
            table.row(vec![
                operation,
                ns(coarray),
                ns(raw),
                ns(mpi),
                times(ratio(coarray, raw)),
                times(ratio(coarray.or(raw), mpi)),
            ]);
        }
        section.table(table);
    }
    Ok(section)
}
