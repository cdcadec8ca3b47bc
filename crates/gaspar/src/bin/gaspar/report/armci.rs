//! The report's section from scripts/bench-armci: gaspar's libarmci beside ARMCI-MPI
//! (default settings and ARMCI_STRIDED_METHOD=DIRECT), 2 ranks, the same C program.

use super::charts::{self, Series};
use super::markdown::{ns, times, Section, Table};
use super::scripts::Script;
use super::Context;

/// The strided and vector operations, each with the local copy of the same layout in the
/// same direction (a get's floor copies strided -> contiguous).
const TRANSFERS: [(&str, &str); 7] = [
    ("puts_2d", "local_2d"),
    ("gets_2d", "local_2d_get"),
    ("puts_3d", "local_3d"),
    ("gets_3d", "local_3d_get"),
    ("putv_1000x8", "local_v_ptrs"),
    ("getv_1000x8", "local_v_ptrs"),
    ("puts_1k_rows", "local_2d"),
];
/// The accumulates (no local reference).
const ACCUMULATES: [&str; 4] = ["acc_8", "acc_contig_16k", "accs_2d", "accs_3d"];
/// The transfers drawn in the chart.
const CHARTED: usize = 6;

pub(super) fn section(context: &Context) -> Result<Section, String> {
    let mut script = Script::new("bench-armci");
    if context.quick {
        script = script.env("ROUNDS", "1").arg("5");
    }
    let figures = script.run_json(context.repo()?, &context.raw)?;
    let mut section = Section::new(super::Suite::Armci.title(), script.command_line());
    section.note(
        "ns per operation (put operations include ARMCI_Fence); gaspar/ARMCI-MPI is to the \
         faster of its two settings; local copy: the same layout copied by memcpy in one \
         process, in the transfer's direction (puts_1k_rows, 64 rows of 1 KiB, is compared \
         with the 2-D copy, which means little). Shapes: crates/armci/bench/bench_strided.c.",
    );
    let of = |library: &str, op: &str| figures[library][op].as_f64();
    let best_peer = |op: &str| match (of("armci_mpi", op), of("armci_mpi_direct", op)) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    let ratio = |a: Option<f64>, b: Option<f64>| Some(a? / b?);
    let mut table = Table::new(
        "Strided, vector and accumulate operations, 2 ranks",
        &[
            "operation",
            "gaspar",
            "ARMCI-MPI",
            "ARMCI-MPI DIRECT",
            "gaspar/ARMCI-MPI",
            "local copy",
            "gaspar/local copy",
        ],
    );
    let rows = TRANSFERS
        .iter()
        .map(|&(op, local)| (op, Some(local)))
        .chain(ACCUMULATES.iter().map(|&op| (op, None)));
    for (op, local) in rows {
        let gaspar = of("gaspar", op);
        let local = local.and_then(|l| of("gaspar", l));
        table.row(vec![
            op.to_string(),
            ns(gaspar),
            ns(of("armci_mpi", op)),
            ns(of("armci_mpi_direct", op)),
            times(ratio(gaspar, best_peer(op))),
            local.map_or_else(|| "-".into(), |l| ns(Some(l))),
            times(ratio(gaspar, local)),
        ]);
    }
    section.table(table);
    let groups: Vec<String> = TRANSFERS[..CHARTED]
        .iter()
        .map(|(op, _)| op.to_string())
        .collect();
    let column = |name: &str, value: &dyn Fn(&str, &str) -> Option<f64>| Series {
        name: name.into(),
        points: TRANSFERS[..CHARTED]
            .iter()
            .enumerate()
            .filter_map(|(group, &(op, local))| Some((group as f64, value(op, local)?)))
            .collect(),
    };
    let series = vec![
        column("gaspar", &|op, _| of("gaspar", op)),
        column("ARMCI-MPI", &|op, _| of("armci_mpi", op)),
        column("ARMCI-MPI DIRECT", &|op, _| of("armci_mpi_direct", op)),
        column("local copy", &|_, local| of("gaspar", local)),
    ];
    let title = "ARMCI strided and vector transfers, 2 ranks: time per operation";
    context.chart(&mut section, "armci-strided.png", title, |path| {
        charts::bars(path, title, &groups, &series)
    });
    Ok(section)
}
