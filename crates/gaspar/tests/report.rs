//! `gaspar bench --report DIR`, run as a user runs it (quick mode, the shm and scaling
//! benchmarks only): the Markdown report has its header and tables with figures in them,
//! and every chart it names is a PNG that decodes, with drawing and text in it.

mod common;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// The charts of the two sections run here.
const CHARTS: [&str; 4] = [
    "shm-put-bandwidth.png",
    "shm-get-bandwidth.png",
    "shm-latency.png",
    "scaling.png",
];

/// The rows of the Markdown table that follows the line `**title...**`.
fn table_rows<'a>(report: &'a str, title: &str) -> Vec<Vec<&'a str>> {
    let start = report
        .find(&format!("**{title}"))
        .unwrap_or_else(|| panic!("no table {title:?} in the report:\n{report}"));
    report[start..]
        .lines()
        .skip(2)
        .skip_while(|line| !line.starts_with('|'))
        .take_while(|line| line.starts_with('|'))
        .skip(2)
        .map(|line| line.trim_matches('|').split(" | ").map(str::trim).collect())
        .collect()
}

/// The number at the start of a cell such as "12.5 ns" or "3.20 GB/s".
fn figure(cell: &str) -> Option<f64> {
    cell.split_whitespace().next()?.parse().ok()
}

/// Decodes a PNG and checks its size and that it has drawing (non-white pixels) both in
/// the caption's band at the top (text) and in the plot.
fn assert_chart(path: &Path) {
    let file = std::fs::File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut reader = png::Decoder::new(file).read_info().expect("a PNG header");
    let mut pixels = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut pixels).expect("PNG image data");
    assert!(
        info.width >= 640 && info.height >= 400,
        "{}: {} x {}",
        path.display(),
        info.width,
        info.height
    );
    assert_eq!(info.color_type, png::ColorType::Rgb);
    let row = info.line_size;
    let drawn = |rows: std::ops::Range<usize>| {
        pixels[rows.start * row..rows.end * row]
            .chunks(3)
            .filter(|p| p != &[255, 255, 255])
            .count()
    };
    assert!(drawn(0..40) > 200, "{}: no caption text", path.display());
    assert!(
        drawn(40..info.height as usize) > 10_000,
        "{}: no plot",
        path.display()
    );
    let bytes = std::fs::metadata(path).unwrap().len();
    assert!(bytes < 200_000, "{}: {bytes} bytes", path.display());
}

#[test]
fn quick_report_of_shm_and_scaling_has_tables_and_charts() {
    let fonts = [
        "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
        "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
    ];
    if !fonts.iter().any(|f| Path::new(f).exists()) {
        common::skip("no font for the charts (apt-get install fonts-dejavu-core)");
        return;
    }
    let openmpi = common::mpirun_installed();
    let dir = std::env::temp_dir().join(format!("gaspar-report-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let mut cmd = Command::new(common::gaspar());
    // The README's quick command, `gaspar bench --report /tmp/report --quick --only
    // shm,scaling`, in this test's own directory.
    cmd.args(["bench", "--report"])
        .arg(&dir)
        .args(["--quick", "--only", "shm,scaling"]);
    let outcome = common::run_command_within(cmd, Duration::from_secs(120));
    outcome.assert_success();
    let report = std::fs::read_to_string(dir.join("report.md")).expect("report.md");

    for header in [
        "- command: `",
        "- CPU: ",
        " cores",
        "- kernel: ",
        "OpenMPI ",
        "gfortran ",
    ] {
        assert!(
            report.contains(header),
            "header lacks {header:?}:\n{report}"
        );
    }
    assert!(
        report.contains("--only shm,scaling"),
        "the command line:\n{report}"
    );
    assert!(
        !report.contains("## ARMCI"),
        "a benchmark not asked for ran"
    );

    let latency = table_rows(&report, "Latency");
    let operations: Vec<&str> = latency.iter().map(|r| r[0]).collect();
    assert_eq!(
        operations,
        ["barrier", "cas_lat", "fadd_lat", "get_lat", "put_lat"]
    );
    for row in &latency {
        assert!(figure(row[1]).is_some_and(|ns| ns > 0.0), "{row:?}");
        if openmpi {
            assert!(figure(row[3]).is_some_and(|ns| ns > 0.0), "{row:?}");
            assert!(row[4].ends_with('x'), "{row:?}");
        }
    }
    let bandwidth = table_rows(&report, "Bandwidth by transfer size");
    assert_eq!(
        bandwidth.len(),
        40,
        "put and get at 20 sizes: {bandwidth:?}"
    );
    for row in &bandwidth {
        assert!(row[2].ends_with("GB/s") && figure(row[2]).is_some_and(|g| g > 0.0));
        assert!(figure(row[3]).is_some_and(|g| g > 0.0), "memcpy: {row:?}");
    }
    let strided = table_rows(&report, "Strided through the Rust API");
    let operations: Vec<&str> = strided.iter().map(|r| r[0]).collect();
    assert_eq!(
        operations,
        [
            "gets_2d",
            "gets_2row",
            "gets_3d",
            "puts_2d",
            "puts_2row",
            "puts_3d"
        ]
    );
    for row in &strided {
        assert!(figure(row[2]).is_some_and(|ns| ns > 0.0), "{row:?}");
        assert!(
            figure(row[3]).is_some_and(|ns| ns > 0.0),
            "local copy: {row:?}"
        );
        assert!(row[4].ends_with('x'), "{row:?}");
    }
    let scaling = table_rows(&report, "Barrier and ping-pong by job size");
    let ranks: Vec<(&str, &str)> = scaling.iter().map(|r| (r[0], r[1])).collect();
    assert_eq!(
        ranks,
        [
            ("barrier", "2"),
            ("pingpong", "2"),
            ("barrier", "4"),
            ("pingpong", "4")
        ]
    );
    assert!(
        scaling.iter().all(|r| figure(r[2]).is_some()),
        "{scaling:?}"
    );
    let allreduce = table_rows(&report, "Allreduce");
    assert_eq!(allreduce.len(), 2, "1 and 1 Mi doubles at 2 ranks");

    for chart in CHARTS {
        assert!(
            report.contains(&format!("]({chart})")),
            "{chart} not in the report"
        );
        assert_chart(&dir.join(chart));
    }
    assert!(dir.join("raw/shm.json").exists() && dir.join("raw/scaling.json").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

/// The sections of the whole report, in the order `gaspar bench --report` writes them.
const SECTIONS: [&str; 9] = [
    "shm transport, 2 ranks: gaspar vs memcpy and OpenMPI osc/sm",
    "Barrier, ping-pong and allreduce by job size (shm) vs OpenMPI",
    "mpi transport vs raw MPI-3 RMA",
    "ARMCI: gaspar's libarmci vs ARMCI-MPI",
    "Coarray layer (Rust API) vs its raw calls and OpenMPI",
    "Fortran coarrays: libcaf_gaspar vs OpenCoarrays",
    "Fortran coarrays, gfortran 16: libcaf_gaspar vs caf_shmem and OpenCoarrays",
    "Distributed arrays: the LAPPS benchmarks' variants",
    "Waiting under a one-core CPU quota: gaspar vs OpenMPI",
];

/// The report of every benchmark, `gaspar bench --report DIR --quick` as the README gives
/// it, which scripts/test writes after its test rounds into the directory
/// `GASPAR_TEST_FULL_REPORT` names (the benchmark scripts rebuild target/release with other
/// features, so it cannot run beside other tests): every section is there, in order, with
/// tables of figures, and every chart it names decodes. A section that says "skipped" fails
/// under `GASPAR_TEST_REQUIRE_ALL=1` (CI), where everything is installed.
#[test]
#[ignore = "reads the report scripts/test writes after its rounds (GASPAR_TEST_FULL_REPORT)"]
fn the_whole_quick_report_has_every_section_with_figures() {
    let dir = std::path::PathBuf::from(
        std::env::var_os("GASPAR_TEST_FULL_REPORT")
            .expect("GASPAR_TEST_FULL_REPORT names the report's directory"),
    );
    let report = std::fs::read_to_string(dir.join("report.md")).expect("report.md");
    let headings: Vec<&str> = report
        .lines()
        .filter_map(|l| l.strip_prefix("## "))
        .collect();
    assert_eq!(headings, SECTIONS, "the report's sections");
    let require_all = std::env::var("GASPAR_TEST_REQUIRE_ALL").as_deref() == Ok("1");
    for (k, title) in SECTIONS.iter().enumerate() {
        let start = report.find(&format!("## {title}")).unwrap();
        let end = SECTIONS
            .get(k + 1)
            .and_then(|next| report.find(&format!("## {next}")))
            .unwrap_or(report.len());
        let section = &report[start..end];
        if let Some(line) = section.lines().find(|l| l.starts_with("skipped:")) {
            assert!(!require_all, "{title}: {line}");
            eprintln!("{title}: {line}");
            continue;
        }
        let figures = section
            .lines()
            .filter(|l| l.starts_with("| "))
            .flat_map(|l| l.trim_matches('|').split(" | "))
            .filter(|cell| figure(cell.trim()).is_some())
            .count();
        assert!(figures >= 4, "{title}: no table of figures:\n{section}");
        for chart in section.split("](").skip(1) {
            let Some(file) = chart.split(')').next().filter(|f| f.ends_with(".png")) else {
                continue;
            };
            assert_chart(&dir.join(file));
        }
    }
}
