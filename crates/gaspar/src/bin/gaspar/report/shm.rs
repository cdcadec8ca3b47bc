//! The report's sections from `gaspar bench --json` on shm: the 2-rank figures beside
//! memcpy and OpenMPI osc/sm, and the barrier, ping-pong and allreduce by job size.

use std::process::{Command, Stdio};

use serde_json::Value;

use super::charts::{self, human_size, Series};
use super::markdown::{gbs, ns, times, Section, Table};
use super::Context;

/// `gaspar bench`'s options for the 2-rank figures alone (full, quick).
const TWO_RANKS: [&[&str]; 2] = [
    &["--scaling-ranks", "--allreduce-ranks"],
    &[
        "--reps",
        "5",
        "--iters",
        "2000",
        "--rounds",
        "1",
        "--scaling-ranks",
        "--allreduce-ranks",
    ],
];
/// `gaspar bench`'s options for the job-size rows alone (full, quick).
const SCALING: [&[&str]; 2] = [
    &["--scaling-only"],
    &[
        "--scaling-only",
        "--reps",
        "5",
        "--rounds",
        "1",
        "--scaling-ranks",
        "2,4",
        "--barrier-iters",
        "200",
        "--pingpong-iters",
        "50",
        "--allreduce-ranks",
        "2",
    ],
];
/// Sizes of the table of bandwidth by placement of the buffers.
const PLACEMENT_SIZES: [u64; 4] = [4 << 10, 64 << 10, 1 << 20, 4 << 20];

/// Runs `gaspar bench --json raw/NAME.json OPTIONS` (its tables into raw/NAME.txt) and
/// returns the command and the JSON's rows.
fn bench(context: &Context, name: &str, options: &[&str]) -> Result<(String, Vec<Value>), String> {
    let program = crate::this_program()?;
    let json = context.raw.join(format!("{name}.json"));
    let text = context.raw.join(format!("{name}.txt"));
    let stdout = std::fs::File::create(&text).map_err(|e| format!("{}: {e}", text.display()))?;
    let status = Command::new(&program)
        .arg("bench")
        .args(options)
        .arg("--json")
        .arg(&json)
        .stdin(Stdio::null())
        .stdout(stdout)
        .status()
        .map_err(|e| format!("gaspar bench: {e}"))?;
    if !status.success() {
        return Err(format!(
            "gaspar bench {} failed: {status}",
            options.join(" ")
        ));
    }
    let parsed: Value = std::fs::read_to_string(&json)
        .map_err(|e| e.to_string())
        .and_then(|t| serde_json::from_str(&t).map_err(|e| e.to_string()))
        .map_err(|e| format!("{}: {e}", json.display()))?;
    let rows = parsed["results"].as_array().cloned().unwrap_or_default();
    let command = format!("gaspar bench {} --json {name}.json", options.join(" "));
    Ok((command, rows))
}

fn field(row: &Value, name: &str) -> Option<f64> {
    row.get(name).and_then(Value::as_f64)
}

fn operation(row: &Value) -> &str {
    row["operation"].as_str().unwrap_or("")
}

fn size(row: &Value) -> u64 {
    row["size"].as_u64().unwrap_or(0)
}

/// Put, get and atomics at 8 bytes, the barrier, bandwidth by size and by placement.
pub(super) fn two_ranks(context: &Context) -> Result<Section, String> {
    let (command, rows) = bench(context, "shm", TWO_RANKS[usize::from(context.quick)])?;
    let mut section = Section::new(super::Suite::Shm.title(), command);
    section.note(
        "memcpy: the same copy between two buffers of one process (bandwidth by placement: \
         between the very buffers gaspar used). OpenMPI: MPI_Put/MPI_Get + MPI_Win_flush on \
         an osc/sm window (bench_peer.c).",
    );
    let latency_rows: Vec<&Value> = rows
        .iter()
        .filter(|r| operation(r).ends_with("_lat") || operation(r) == "barrier")
        .collect();
    let mut latency = Table::new(
        "Latency (8 B; barrier: 2 ranks), time per operation",
        &[
            "operation",
            "gaspar",
            "memcpy",
            "OpenMPI",
            "gaspar/OpenMPI",
            "gaspar/memcpy",
        ],
    );
    for row in &latency_rows {
        latency.row(vec![
            operation(row).to_string(),
            ns(field(row, "gaspar_ns")),
            ns(field(row, "memcpy_ns")),
            ns(field(row, "openmpi_ns")),
            times(field(row, "ratio_vs_openmpi")),
            times(field(row, "ratio_vs_memcpy")),
        ]);
    }
    section.table(latency);
    let bandwidth_header = [
        "operation",
        "size",
        "gaspar",
        "memcpy",
        "OpenMPI",
        "vs OpenMPI",
        "vs memcpy",
    ];
    let bandwidth_row = |row: &Value| {
        let bytes = size(row);
        vec![
            operation(row).to_string(),
            human_size(bytes as f64),
            gbs(bytes, field(row, "gaspar_ns")),
            gbs(bytes, field(row, "memcpy_ns")),
            gbs(bytes, field(row, "openmpi_ns")),
            times(field(row, "ratio_vs_openmpi")),
            times(field(row, "ratio_vs_memcpy")),
        ]
    };
    let mut bandwidth = Table::new("Bandwidth by transfer size", &bandwidth_header);
    let mut placements = Table::new(
        "Bandwidth by placement (_ahead/_behind: destination 256 B ahead of/behind the \
         source in its page; _odd: 1 B ahead)",
        &bandwidth_header,
    );
    for row in &rows {
        match operation(row) {
            "put_bw" | "get_bw" => bandwidth.row(bandwidth_row(row)),
            name if name.contains("_bw_") && PLACEMENT_SIZES.contains(&size(row)) => {
                placements.row(bandwidth_row(row));
            }
            _ => {}
        }
    }
    section.table(bandwidth);
    section.table(placements);
    let mut strided = Table::new(
        "Strided through the Rust API (put_strided / get_strided, completed), time per call: \
         2row / 2d = 2 / 256 rows of 64 B, 1 KiB apart at the target; 3d = a 32^3 block of \
         doubles in a 64^3 array; local copy = the same rows copied by a loop in one process",
        &[
            "operation",
            "bytes",
            "gaspar",
            "local copy",
            "gaspar/local copy",
        ],
    );
    for row in rows
        .iter()
        .filter(|r| operation(r).starts_with("puts_") || operation(r).starts_with("gets_"))
    {
        strided.row(vec![
            operation(row).to_string(),
            human_size(size(row) as f64),
            ns(field(row, "gaspar_ns")),
            ns(field(row, "memcpy_ns")),
            times(field(row, "ratio_vs_memcpy")),
        ]);
    }
    section.table(strided);
    for op in ["put", "get"] {
        let name = format!("{op}_bw");
        let of = |column: &str| Series {
            name: match column {
                "gaspar_ns" => "gaspar".into(),
                "memcpy_ns" => "memcpy".into(),
                _ => "OpenMPI osc/sm".into(),
            },
            points: rows
                .iter()
                .filter(|r| operation(r) == name)
                .filter_map(|r| Some((size(r) as f64, size(r) as f64 / field(r, column)?)))
                .collect(),
        };
        let series: Vec<Series> = ["gaspar_ns", "memcpy_ns", "openmpi_ns"]
            .into_iter()
            .map(of)
            .filter(|s| !s.points.is_empty())
            .collect();
        let title = format!("{op}, 2 ranks (shm): bandwidth by transfer size");
        context.chart(
            &mut section,
            &format!("shm-{op}-bandwidth.png"),
            &title,
            |path| charts::bandwidth(path, &title, &series),
        );
    }
    let groups: Vec<String> = latency_rows
        .iter()
        .map(|r| operation(r).to_string())
        .collect();
    let series: Vec<Series> = [
        ("gaspar", "gaspar_ns"),
        ("OpenMPI osc/sm", "openmpi_ns"),
        ("memcpy", "memcpy_ns"),
    ]
    .into_iter()
    .map(|(name, column)| Series {
        name: name.into(),
        points: latency_rows
            .iter()
            .enumerate()
            .filter_map(|(group, r)| Some((group as f64, field(r, column)?)))
            .collect(),
    })
    .filter(|s| !s.points.is_empty())
    .collect();
    let title = "Latency, 2 ranks (shm): 8 B operations and the barrier";
    context.chart(&mut section, "shm-latency.png", title, |path| {
        charts::bars(path, title, &groups, &series)
    });
    Ok(section)
}

/// The barrier, the signal ping-pong and the allreduce at each job size beside OpenMPI.
pub(super) fn scaling(context: &Context) -> Result<Section, String> {
    let (command, rows) = bench(context, "scaling", SCALING[usize::from(context.quick)])?;
    let mut section = Section::new(super::Suite::Scaling.title(), command);
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    section.note(format!(
        "{cores} cores: jobs of more ranks oversubscribe them. Ping-pong: one round trip of \
         8 B and a signal between ranks 0 and 1 while the others wait in a barrier; its \
         ratio is to the faster of OpenMPI's two ways of waiting (MPI_Win_sync + load, or \
         MPI_Fetch_and_op: \"OpenMPI fop\")."
    ));
    let mut table = Table::new(
        "Barrier and ping-pong by job size, time per operation",
        &[
            "operation",
            "ranks",
            "gaspar",
            "OpenMPI",
            "OpenMPI fop",
            "gaspar/OpenMPI",
        ],
    );
    let mut allreduce = Table::new(
        "Allreduce (sum of doubles) on the world team",
        &["ranks", "doubles", "gaspar", "OpenMPI", "gaspar/OpenMPI"],
    );
    let (mut groups, mut ours, mut theirs) = (Vec::new(), Vec::new(), Vec::new());
    for row in &rows {
        let ranks = row["ranks"].as_u64().unwrap_or(0);
        let gaspar = field(row, "gaspar_ns");
        let best_peer = match (field(row, "openmpi_ns"), field(row, "openmpi_fop_ns")) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let group = match operation(row) {
            "allreduce" => {
                let doubles = row["doubles"].as_u64().unwrap_or(0);
                allreduce.row(vec![
                    ranks.to_string(),
                    doubles.to_string(),
                    super::markdown::duration(gaspar),
                    super::markdown::duration(field(row, "openmpi_ns")),
                    times(field(row, "ratio_vs_openmpi")),
                ]);
                let doubles = if doubles == 1 { "1" } else { "1 Mi" };
                format!("allreduce {doubles}\n{ranks} ranks")
            }
            name => {
                table.row(vec![
                    name.to_string(),
                    ranks.to_string(),
                    ns(gaspar),
                    ns(field(row, "openmpi_ns")),
                    ns(field(row, "openmpi_fop_ns")),
                    times(field(row, "ratio_vs_openmpi")),
                ]);
                format!("{name}\n{ranks} ranks")
            }
        };
        let index = groups.len() as f64;
        ours.extend(gaspar.map(|v| (index, v)));
        theirs.extend(best_peer.map(|v| (index, v)));
        groups.push(group);
    }
    section.table(table);
    section.table(allreduce);
    let series = vec![
        Series {
            name: "gaspar".into(),
            points: ours,
        },
        Series {
            name: "OpenMPI (best)".into(),
            points: theirs,
        },
    ];
    let title = "By job size, shm: time per operation (allreduce: of 1 or 1 Mi doubles)";
    context.chart(&mut section, "scaling.png", title, |path| {
        charts::bars(path, title, &groups, &series)
    });
    Ok(section)
}
