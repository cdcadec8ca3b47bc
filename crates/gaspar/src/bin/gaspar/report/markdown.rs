//! The report's text: sections of notes, Markdown tables and chart images, and the way
//! figures are written in them.

use std::fmt::Write;

/// One Markdown table under its title.
pub(super) struct Table {
    title: String,
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    pub(super) fn new(title: impl Into<String>, header: &[&str]) -> Table {
        Table {
            title: title.into(),
            header: header.iter().map(|h| h.to_string()).collect(),
            rows: Vec::new(),
        }
    }

    /// Adds a row (as many cells as the header has).
    pub(super) fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    fn render(&self, out: &mut String) {
        let _ = writeln!(out, "**{}**\n", self.title);
        let line = |cells: &[String]| format!("| {} |", cells.join(" | "));
        let _ = writeln!(out, "{}", line(&self.header));
        let rule: Vec<String> = (0..self.header.len())
            .map(|i| if i == 0 { ":--" } else { "--:" }.to_string())
            .collect();
        let _ = writeln!(out, "{}", line(&rule));
        for row in &self.rows {
            let _ = writeln!(out, "{}", line(row));
        }
        out.push('\n');
    }
}

/// The report's part for one benchmark: how it was run, notes, tables and charts.
pub(super) struct Section {
    title: String,
    command: String,
    notes: Vec<String>,
    tables: Vec<Table>,
    /// (file name in the report's directory, caption).
    charts: Vec<(String, String)>,
}

impl Section {
    /// A section for the benchmark `title`, produced by the shell command `command`.
    pub(super) fn new(title: impl Into<String>, command: impl Into<String>) -> Section {
        Section {
            title: title.into(),
            command: command.into(),
            notes: Vec::new(),
            tables: Vec::new(),
            charts: Vec::new(),
        }
    }

    pub(super) fn note(&mut self, text: impl Into<String>) {
        self.notes.push(text.into());
    }

    pub(super) fn table(&mut self, table: Table) {
        self.tables.push(table);
    }

    /// A chart drawn into `file`, or a note saying why it was not.
    pub(super) fn chart(&mut self, file: &str, caption: &str, drawn: Result<(), String>) {
        match drawn {
            Ok(()) => self.charts.push((file.to_string(), caption.to_string())),
            Err(e) => self.note(format!("chart {file} not drawn: {e}")),
        }
    }

    pub(super) fn render(&self, out: &mut String) {
        let _ = writeln!(out, "## {}\n", self.title);
        if !self.command.is_empty() {
            let _ = writeln!(out, "`{}`\n", self.command);
        }
        for note in &self.notes {
            let _ = writeln!(out, "{note}\n");
        }
        for table in &self.tables {
            table.render(out);
        }
        for (file, caption) in &self.charts {
            let _ = writeln!(out, "![{caption}]({file})\n");
        }
    }
}

/// Nanoseconds (a decimal below 1000), or "n/a".
pub(super) fn ns(value: Option<f64>) -> String {
    match value {
        None => "n/a".into(),
        Some(v) if v >= 1000.0 => format!("{v:.0} ns"),
        Some(v) => format!("{v:.1} ns"),
    }
}

/// A time from nanoseconds in the unit that keeps it short ("92.3 ns", "1.42 ms"), or
/// "n/a".
pub(super) fn duration(value_ns: Option<f64>) -> String {
    value_ns.map_or_else(|| "n/a".into(), super::charts::duration)
}

/// GB/s of `size` bytes moved in `ns` nanoseconds, or "n/a".
pub(super) fn gbs(size: u64, ns: Option<f64>) -> String {
    ns.map_or_else(
        || "n/a".into(),
        |ns| format!("{:.2} GB/s", size as f64 / ns),
    )
}

/// A ratio as "1.23x" (below 0.1: "0.0123x"), or "-".
pub(super) fn times(ratio: Option<f64>) -> String {
    match ratio {
        None => "-".into(),
        Some(r) if r < 0.1 => format!("{r:.3}x"),
        Some(r) => format!("{r:.2}x"),
    }
}

/// A plain number with 4 significant digits (more before the point if it has them) and
/// no exponent, or "n/a".
pub(super) fn number(value: Option<f64>) -> String {
    value.map_or_else(
        || "n/a".into(),
        |v| {
            let digits = if v == 0.0 {
                0
            } else {
                v.abs().log10().floor() as i32
            };
            format!("{v:.*}", (3 - digits).max(0) as usize)
        },
    )
}
