//! The report's section from scripts/bench-quota: a job in a control group allowed one
//! core's worth of CPU time, rank 0 computing while the others wait in a barrier, on
//! gaspar and on OpenMPI (examples/imbalance.rs and imbalance_peer.c).

use super::charts::{self, Series};
use super::markdown::{duration, times, Section, Table};
use super::scripts::Script;
use super::Context;

pub(super) fn section(context: &Context) -> Result<Section, String> {
    let mut script = Script::new("bench-quota");
    if context.quick {
        script = script.env("RUNS", "1").env("ROUNDS", "50");
    }
    let figures = script.run_json(context.repo()?, &context.raw)?;
    let mut section = Section::new(super::Suite::Quota.title(), script.command_line());
    let work_s = figures["work_s"].as_f64();
    section.note(format!(
        "Wall time of the loop (rank 0 computes {} of CPU time in all) and the CPU time the \
         waiting ranks used, medians of {} alternated jobs each; a quota of one core on a \
         machine whose cores all stay in the ranks' affinity masks, as a container's CPU \
         limit sets it. Needs root (the script makes the control group).",
        duration(work_s.map(|s| s * 1e9)),
        figures["runs"].as_u64().unwrap_or(0)
    ));
    let mut table = Table::new(
        "Imbalanced barrier loop under a one-core CPU quota",
        &[
            "ranks",
            "gaspar",
            "OpenMPI",
            "gaspar/OpenMPI",
            "waiting ranks' CPU, gaspar",
            "waiting ranks' CPU, OpenMPI",
        ],
    );
    let jobs = figures["ranks"].as_object().cloned().unwrap_or_default();
    let ns = |job: &serde_json::Value, key: &str| job[key].as_f64().map(|s| s * 1e9);
    let ratio = |a: Option<f64>, b: Option<f64>| Some(a? / b?);
    for (ranks, job) in &jobs {
        let (ours, peer) = (ns(job, "gaspar_wall_s"), ns(job, "openmpi_wall_s"));
        table.row(vec![
            ranks.clone(),
            duration(ours),
            duration(peer),
            times(ratio(ours, peer)),
            duration(ns(job, "gaspar_waiters_cpu_s")),
            duration(ns(job, "openmpi_waiters_cpu_s")),
        ]);
    }
    section.table(table);
    let groups: Vec<String> = jobs.keys().map(|ranks| format!("{ranks} ranks")).collect();
    let column = |name: &str, value: &dyn Fn(&serde_json::Value) -> Option<f64>| Series {
        name: name.into(),
        points: jobs
            .values()
            .enumerate()
            .filter_map(|(group, job)| Some((group as f64, value(job)?)))
            .collect(),
    };
    let series = vec![
        column("gaspar", &|job| ns(job, "gaspar_wall_s")),
        column("OpenMPI", &|job| ns(job, "openmpi_wall_s")),
        column("rank 0's work", &|_| work_s.map(|s| s * 1e9)),
    ];
    let title = "Under a one-core CPU quota: wall time of an imbalanced barrier loop";
    context.chart(&mut section, "quota-imbalance.png", title, |path| {
        charts::bars(path, title, &groups, &series)
    });
    Ok(section)
}
