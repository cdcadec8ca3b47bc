//! The method table: for each size class and placement of the two ranges, the copy
//! [`Method`] measured fastest on this CPU, and the one table this process copies with.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

use super::kernels::Method;

/// Smallest size class: copies of 2^6..2^7 bytes (64 and less go to the small routine).
const FIRST_CLASS: u32 = 6;
/// Largest size class: 2^23 bytes (8 MiB) and more.
const LAST_CLASS: u32 = 23;
/// Number of size classes.
pub(crate) const CLASSES: usize = (LAST_CLASS - FIRST_CLASS + 1) as usize;
/// Number of placements (the table's columns).
const PLACEMENTS: usize = 8;
/// The name of the strided patterns' column, after the placements'.
const STRIDED: &str = "strided";
/// The largest size class whose chunks a pattern copies with the strided column: the
/// strided trial copies 1 MiB, so this class is the last with 8 chunks or more in it.
pub(crate) const STRIDED_LARGEST: usize = (1 << 20) / 8;

/// Where the destination sits relative to the source within a 4 KiB page, and whether the
/// two are equally aligned within a 64-byte line: what decides, besides the size, which
/// copy is fastest (4K aliasing, split lines).
///
/// A destination less than a line ahead of its source has a class of its own: a forward
/// copy's loads then run just ahead of its stores at page offsets those stores share, the
/// worst case of 4K aliasing. On AMD EPYC (family 25 model 17) glibc 2.36's memcpy, whose
/// `rep movsb` handles such sizes, copied 8 KiB 1-15 bytes ahead at 2.2-3.5 GB/s and 16-31
/// at 30-46 GB/s, against 75-107 GB/s at other distances (`bench/probes/page_alias.c`,
/// two runs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Placement {
    /// Same page offset.
    Same,
    /// Destination 1..63 bytes ahead of the source (mod 4096).
    AheadNear,
    /// Destination 64..1023 bytes ahead of the source (mod 4096), whole lines apart.
    AheadLine,
    /// Destination 65..1023 bytes ahead, not whole lines apart.
    AheadOdd,
    /// Destination 64..1023 bytes behind the source (mod 4096), whole lines apart.
    BehindLine,
    /// Destination 1..1023 bytes behind, not whole lines apart.
    BehindOdd,
    /// 1024..3072 bytes apart either way, whole lines apart.
    ApartLine,
    /// 1024..3072 bytes apart either way, not whole lines apart.
    ApartOdd,
}

impl Placement {
    /// Every placement, in the table's column order.
    pub(crate) const ALL: [Placement; PLACEMENTS] = [
        Placement::Same,
        Placement::AheadNear,
        Placement::AheadLine,
        Placement::AheadOdd,
        Placement::BehindLine,
        Placement::BehindOdd,
        Placement::ApartLine,
        Placement::ApartOdd,
    ];

    /// The placement of a copy from `src` to `dst`: looked up by the 64-byte line of the
    /// destination's distance ahead in the page and whether it is a whole number of lines
    /// (every distance in one such cell has the same placement), without branches.
    #[inline(always)]
    pub(crate) fn of(src: usize, dst: usize) -> Placement {
        let ahead = dst.wrapping_sub(src) % 4096;
        PLACEMENT_BY_LINE[ahead / 64 * 2 + usize::from(ahead % 64 != 0)]
    }

    /// The placement of a destination `ahead` (< 4096) bytes ahead of its source in the
    /// page: the definition [`Placement::of`]'s table is built from.
    const fn of_distance(ahead: usize) -> Placement {
        let line = ahead % 64 == 0;
        match (ahead, line) {
            (0, _) => Placement::Same,
            (1..=63, _) => Placement::AheadNear,
            (1..=1023, true) => Placement::AheadLine,
            (1..=1023, false) => Placement::AheadOdd,
            (3073.., true) => Placement::BehindLine,
            (3073.., false) => Placement::BehindOdd,
            (_, true) => Placement::ApartLine,
            (_, false) => Placement::ApartOdd,
        }
    }

    /// How far ahead (mod 4096) the calibration puts the destination for this placement.
    pub(crate) fn measured_ahead(self) -> usize {
        match self {
            Placement::Same => 0,
            // The worst of the window where one was measured (see the type's note).
            Placement::AheadNear => 1,
            Placement::AheadLine => 128,
            Placement::AheadOdd => 129,
            Placement::BehindLine => 4096 - 128,
            Placement::BehindOdd => 4096 - 127,
            Placement::ApartLine => 2048,
            Placement::ApartOdd => 2049,
        }
    }

    /// The column name in the cache file and in `gaspar info`.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Placement::Same => "same",
            Placement::AheadNear => "near",
            Placement::AheadLine => "ahead",
            Placement::AheadOdd => "ahead+odd",
            Placement::BehindLine => "behind",
            Placement::BehindOdd => "behind+odd",
            Placement::ApartLine => "apart",
            Placement::ApartOdd => "apart+odd",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// [`Placement::of`]'s table: entry `2 * line + odd` for the distances `line * 64 ..
/// line * 64 + 63` ahead, `odd` telling the whole lines (0) from the rest (1).
const PLACEMENT_BY_LINE: [Placement; 128] = {
    let mut table = [Placement::Same; 128];
    let mut i = 0;
    while i < 128 {
        // Any distance of the cell stands for all of them (checked in the tests).
        table[i] = Placement::of_distance(i / 2 * 64 + i % 2);
        i += 1;
    }
    table
};

/// The size class of a copy of `len` (> 64) bytes: floor(log2(len)), clamped to the table.
#[inline(always)]
pub(crate) fn class_of(len: usize) -> usize {
    let log = usize::BITS - 1 - len.max(1).leading_zeros();
    (log.clamp(FIRST_CLASS, LAST_CLASS) - FIRST_CLASS) as usize
}

/// The size the calibration measures for class `class` (its lower bound).
pub(crate) fn class_size(class: usize) -> usize {
    1 << (FIRST_CLASS as usize + class)
}

/// One entry: the method, and how much faster than memcpy it was measured (memcpy's time
/// over the method's; 1.0 for memcpy itself or where nothing was measured).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Choice {
    /// The method.
    pub(crate) method: Method,
    /// memcpy's time / this method's time, as measured.
    pub(crate) speedup: f64,
}

impl Choice {
    const MEMCPY: Choice = Choice {
        method: Method::Memcpy,
        speedup: 1.0,
    };
}

/// The copy method per (size class, placement), and per size class for the chunks of a
/// strided pattern.
///
/// ```
/// if let Ok(table) = gaspar::copy_engine::status().table {
///     // One line per size class: a method:speed-up cell per placement, then the
///     // strided patterns' cell.
///     println!("{table}");
/// }
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct MethodTable {
    choices: [[Choice; PLACEMENTS]; CLASSES],
    /// Per size class, the method for a strided pattern's chunks: measured on chunks a
    /// line apart from a 1 MiB footprint, larger than a first-level cache, each placed
    /// differently in its page (a column of its own because a method measured on one
    /// small copy repeated, its data in L1, can lose there: on AMD EPYC family 25 model
    /// 17 `rep movsb`, 1.25x memcpy for one 256-byte copy, made a 3-D get of 256-byte
    /// rows 2x slower). Consulted up to [`STRIDED_LARGEST`] (see
    /// [`MethodTable::pattern_method`]).
    strided: [Choice; CLASSES],
    /// Per size class, the method of every placement when they all have the same one
    /// (most rows): a copy of that size needs no placement worked out. Kept by
    /// [`set`](MethodTable::set).
    uniform: [Option<Method>; CLASSES],
}

impl Default for MethodTable {
    /// memcpy everywhere: the safe choice where nothing was measured.
    fn default() -> Self {
        MethodTable {
            choices: [[Choice::MEMCPY; PLACEMENTS]; CLASSES],
            strided: [Choice::MEMCPY; CLASSES],
            uniform: [Some(Method::Memcpy); CLASSES],
        }
    }
}

impl MethodTable {
    /// The method for copying `len` (> 64) bytes from `src` to `dst`.
    #[inline(always)]
    pub(crate) fn method(&self, len: usize, src: usize, dst: usize) -> Method {
        let class = class_of(len);
        if let Some(method) = self.uniform[class] {
            return method;
        }
        self.choices[class][Placement::of(src, dst).index()].method
    }

    /// The method for the chunks of `len` (> 64) bytes of a strided pattern whose first
    /// chunk goes from `src` to `dst`: the strided column, except where a placement
    /// decides more than the caches do (a destination less than a line ahead: 4K
    /// aliasing) and for chunks above [`STRIDED_LARGEST`], whose trial holds too few
    /// chunks to stand for a pattern (there the pattern is a few large copies).
    #[inline(always)]
    pub(crate) fn pattern_method(&self, len: usize, src: usize, dst: usize) -> Method {
        let class = class_of(len);
        if class > class_of(STRIDED_LARGEST) || Placement::of(src, dst) == Placement::AheadNear {
            return self.method(len, src, dst);
        }
        self.strided[class].method
    }

    /// [`MEMCPY_BY_LOG2`]'s bits for this table: a class's bit for the sizes it covers
    /// (the last class's for every size above it), set where every placement's method is
    /// memcpy.
    fn memcpy_by_log2(&self) -> u64 {
        (0..u64::BITS)
            .filter(|&log2| {
                let len = 1usize.checked_shl(log2).unwrap_or(usize::MAX);
                log2 < FIRST_CLASS || self.uniform[class_of(len)] == Some(Method::Memcpy)
            })
            .fold(0, |bits, log2| bits | 1 << log2)
    }

    /// Sets the entry of a class and placement.
    pub(crate) fn set(&mut self, class: usize, placement: Placement, choice: Choice) {
        let row = &mut self.choices[class];
        row[placement.index()] = choice;
        let first = row[0].method;
        self.uniform[class] = row.iter().all(|c| c.method == first).then_some(first);
    }

    /// Sets the strided patterns' entry of a class.
    pub(crate) fn set_strided(&mut self, class: usize, choice: Choice) {
        self.strided[class] = choice;
    }

    /// Each row's cells: one per placement, then the strided patterns' one.
    fn rows(&self) -> impl Iterator<Item = impl Iterator<Item = &Choice>> {
        self.choices
            .iter()
            .zip(&self.strided)
            .map(|(row, strided)| row.iter().chain(std::iter::once(strided)))
    }

    /// The column names, in order: the placements, then the strided patterns'.
    fn column_names() -> impl Iterator<Item = &'static str> {
        Placement::ALL
            .iter()
            .map(|p| p.name())
            .chain(std::iter::once(STRIDED))
    }

    /// The table as text: a header line, then one line per size class with one
    /// `method:speedup` cell per placement and one for strided patterns.
    /// [`MethodTable::parse`] reads it back.
    pub(crate) fn to_text(&self) -> String {
        let mut text = String::from("size");
        for name in Self::column_names() {
            text.push(' ');
            text.push_str(name);
        }
        text.push('\n');
        for (class, row) in self.rows().enumerate() {
            text.push_str(&class_size(class).to_string());
            for c in row {
                text.push_str(&format!(" {}:{:.3}", c.method.name(), c.speedup));
            }
            text.push('\n');
        }
        text
    }

    /// Reads what [`MethodTable::to_text`] wrote; `None` if anything is missing, extra or
    /// unknown, or names a method that cannot be used for its size on this build.
    pub(crate) fn parse(text: &str) -> Option<MethodTable> {
        let mut lines = text.lines();
        let header: Vec<&str> = lines.next()?.split_whitespace().collect();
        let expected: Vec<&str> = std::iter::once("size")
            .chain(Self::column_names())
            .collect();
        if header != expected {
            return None;
        }
        let mut table = MethodTable::default();
        for class in 0..CLASSES {
            let mut cells = lines.next()?.split_whitespace();
            if cells.next()?.parse::<usize>().ok()? != class_size(class) {
                return None;
            }
            let mut cell = || -> Option<Choice> {
                let (name, speedup) = cells.next()?.split_once(':')?;
                let method = Method::from_name(name)?;
                let speedup: f64 = speedup.parse().ok()?;
                if !method.candidate(class_size(class)) || !speedup.is_finite() || speedup <= 0.0 {
                    return None;
                }
                Some(Choice { method, speedup })
            };
            for p in Placement::ALL {
                let choice = cell()?;
                table.set(class, p, choice);
            }
            let choice = cell()?;
            table.set_strided(class, choice);
            if cells.next().is_some() {
                return None;
            }
        }
        lines.all(|l| l.trim().is_empty()).then_some(table)
    }
}

impl fmt::Display for MethodTable {
    /// The table for people: sizes in B/KiB/MiB, each cell the method and its measured
    /// speed-up over memcpy.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:>8}", "size")?;
        for name in Self::column_names() {
            write!(f, " {name:>16}")?;
        }
        writeln!(f)?;
        for (class, row) in self.rows().enumerate() {
            let size = class_size(class);
            let shown = match size {
                s if s >= 1 << 20 => format!("{} MiB", s >> 20),
                s if s >= 1 << 10 => format!("{} KiB", s >> 10),
                s => format!("{s} B"),
            };
            write!(f, "{shown:>8}")?;
            for c in row {
                write!(
                    f,
                    " {:>16}",
                    format!("{} {:.2}x", c.method.name(), c.speedup)
                )?;
            }
            writeln!(f)?;
        }
        Ok(())
    }
}

/// The table this process copies with, once installed.
static INSTALLED: OnceLock<MethodTable> = OnceLock::new();

/// Bit k says that copies of 2^k to 2^(k+1) - 1 bytes (k >= 6) use memcpy at every
/// placement in the installed table (every bit while none is): the usual case of a
/// contiguous put or get, told by one load and a shift instead of a look-up of its
/// placement.
static MEMCPY_BY_LOG2: AtomicU64 = AtomicU64::new(u64::MAX);

/// Makes `table` the one this process copies with, unless one already is (a process
/// keeps its first table: copies in flight must not change method).
pub(crate) fn install(table: MethodTable) {
    let memcpy_by_log2 = table.memcpy_by_log2();
    if INSTALLED.set(table).is_ok() {
        MEMCPY_BY_LOG2.store(memcpy_by_log2, Ordering::Release);
    }
}

/// Whether the installed table copies `len` (> 64) bytes with memcpy wherever the two
/// ranges sit (see [`MEMCPY_BY_LOG2`]).
#[inline(always)]
pub(crate) fn memcpy_everywhere(len: usize) -> bool {
    let log2 = usize::BITS - 1 - len.max(1).leading_zeros();
    MEMCPY_BY_LOG2.load(Ordering::Relaxed) >> log2 & 1 != 0
}

/// The method for copying `len` (> 64) bytes from `src` to `dst`: the installed table's
/// choice, memcpy if none is installed.
#[inline(always)]
pub(crate) fn method_for(len: usize, src: usize, dst: usize) -> Method {
    match INSTALLED.get() {
        Some(table) => table.method(len, src, dst),
        None => Method::Memcpy,
    }
}

/// The method for the chunks of `len` (> 64) bytes of a strided pattern whose first
/// chunk goes from `src` to `dst` (see [`MethodTable::pattern_method`]): memcpy if no
/// table is installed.
#[inline(always)]
pub(crate) fn pattern_method_for(len: usize, src: usize, dst: usize) -> Method {
    match INSTALLED.get() {
        Some(table) => table.pattern_method(len, src, dst),
        None => Method::Memcpy,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placements_follow_the_page_offsets() {
        assert_eq!(Placement::of(4096, 8192), Placement::Same);
        assert_eq!(Placement::of(0, 1), Placement::AheadNear);
        assert_eq!(
            Placement::of(4000, 4096 * 2 + 4000 + 63),
            Placement::AheadNear
        );
        assert_eq!(Placement::of(0, 64), Placement::AheadLine);
        assert_eq!(Placement::of(0, 65), Placement::AheadOdd);
        assert_eq!(Placement::of(1, 0), Placement::BehindOdd);
        assert_eq!(Placement::of(0, 128), Placement::AheadLine);
        assert_eq!(Placement::of(0, 129), Placement::AheadOdd);
        assert_eq!(Placement::of(128, 0), Placement::BehindLine);
        assert_eq!(Placement::of(129, 0), Placement::BehindOdd);
        assert_eq!(Placement::of(0, 2048), Placement::ApartLine);
        assert_eq!(Placement::of(0, 2049), Placement::ApartOdd);
        assert_eq!(Placement::of(1, 1 + 4096 * 3 + 1023), Placement::AheadOdd);
        assert_eq!(Placement::of(5000, 5000 + 1024), Placement::ApartLine);
        for p in Placement::ALL {
            assert_eq!(Placement::of(4096, 4096 + p.measured_ahead()), p);
        }
        // The table agrees with the definition at every distance, from any source.
        for ahead in 0..4096 {
            for src in [0, 1, 4095, 4096 * 7 + 100] {
                assert_eq!(
                    Placement::of(src, src + ahead + 4096),
                    Placement::of_distance(ahead),
                    "{ahead} bytes ahead"
                );
            }
        }
    }

    #[test]
    fn a_row_of_one_method_is_looked_up_without_its_placement() {
        let mut table = MethodTable::default();
        assert_eq!(table.memcpy_by_log2(), u64::MAX);
        let pieces = Choice {
            method: Method::Pieces2K,
            speedup: 1.5,
        };
        // 4 KiB (class 6): pieces at one placement only, then at all of them.
        table.set(6, Placement::AheadLine, pieces);
        assert_eq!(table.uniform[6], None);
        assert_eq!(table.memcpy_by_log2() >> 12 & 1, 0);
        assert_eq!(table.memcpy_by_log2() >> 11 & 1, 1);
        assert_eq!(table.method(4096, 0, 128), Method::Pieces2K);
        assert_eq!(table.method(4096, 0, 0), Method::Memcpy);
        for p in Placement::ALL {
            table.set(6, p, pieces);
        }
        assert_eq!(table.uniform[6], Some(Method::Pieces2K));
        assert_eq!(table.method(5000, 0, 0), Method::Pieces2K);
        // The last class stands for every larger size.
        let movsb = Choice {
            method: Method::RepMovsb,
            speedup: 1.1,
        };
        for p in Placement::ALL {
            table.set(CLASSES - 1, p, movsb);
        }
        assert_eq!(table.memcpy_by_log2() >> 23, 0);
        assert_eq!(table.memcpy_by_log2() & ((1 << 12) - 1), (1 << 12) - 1);
    }

    #[test]
    fn size_classes_are_powers_of_two_clamped() {
        assert_eq!(class_of(65), 0);
        assert_eq!(class_of(127), 0);
        assert_eq!(class_of(128), 1);
        assert_eq!(class_of(4096), 6);
        assert_eq!(class_of(8 << 20), CLASSES - 1);
        assert_eq!(class_of(1 << 40), CLASSES - 1);
        for class in 0..CLASSES {
            assert_eq!(class_of(class_size(class)), class);
            assert_eq!(class_of(2 * class_size(class) - 1), class);
        }
    }

    #[test]
    fn selection_reads_the_entry_of_size_and_placement() {
        let mut table = MethodTable::default();
        let choice = Choice {
            method: Method::Pieces2K,
            speedup: 1.4,
        };
        table.set(class_of(64 << 10), Placement::AheadLine, choice);
        assert_eq!(table.method(64 << 10, 0, 256), Method::Pieces2K);
        assert_eq!(
            table.method((128 << 10) - 1, 4096, 4096 + 512),
            Method::Pieces2K
        );
        assert_eq!(table.method(64 << 10, 0, 0), Method::Memcpy);
        assert_eq!(table.method(128 << 10, 0, 256), Method::Memcpy);
        assert_eq!(table.method(32 << 10, 0, 256), Method::Memcpy);
    }

    fn table_of(text: &str) -> MethodTable {
        MethodTable::parse(text).expect("parses")
    }

    #[test]
    fn patterns_take_the_strided_column_but_near_placements_and_large_chunks() {
        let mut table = MethodTable::default();
        let pieces = Choice {
            method: Method::Pieces2K,
            speedup: 2.0,
        };
        let inline = Choice {
            method: Method::Inline16,
            speedup: 1.5,
        };
        table.set_strided(class_of(4096), pieces);
        table.set(class_of(4096), Placement::AheadNear, inline);
        table.set_strided(class_of(STRIDED_LARGEST), pieces);
        table.set_strided(class_of(2 * STRIDED_LARGEST), pieces);
        // Strided column at every placement but near.
        assert_eq!(table.pattern_method(4096, 0, 0), Method::Pieces2K);
        assert_eq!(table.pattern_method(4096, 0, 129), Method::Pieces2K);
        assert_eq!(table.pattern_method(4096, 100, 0), Method::Pieces2K);
        assert_eq!(table.pattern_method(4096, 0, 8), Method::Inline16);
        // Up to the largest strided class the column, above it the placement's method
        // (memcpy here).
        assert_eq!(
            table.pattern_method(2 * STRIDED_LARGEST - 1, 0, 0),
            Method::Pieces2K
        );
        assert_eq!(
            table.pattern_method(2 * STRIDED_LARGEST, 0, 0),
            Method::Memcpy
        );
    }

    #[test]
    fn text_round_trips_and_damage_is_refused() {
        let mut table = MethodTable::default();
        table.set(
            CLASSES - 1,
            Placement::Same,
            Choice {
                method: Method::Pieces2K,
                speedup: 1.25,
            },
        );
        table.set(
            0,
            Placement::ApartOdd,
            Choice {
                method: Method::Inline16,
                speedup: 2.5,
            },
        );
        table.set_strided(
            class_of(4096),
            Choice {
                method: Method::Pieces2K,
                speedup: 1.1,
            },
        );
        let text = table.to_text();
        assert!(text.starts_with("size same near "), "{text}");
        assert!(text.lines().next().is_some_and(|l| l.ends_with(" strided")));
        assert_eq!(MethodTable::parse(&text), Some(table));
        assert_eq!(table_of(&text).pattern_method(4096, 0, 0), Method::Pieces2K);
        // Every proper prefix of the lines is refused, and so is any changed cell.
        let lines: Vec<&str> = text.lines().collect();
        for keep in 0..lines.len() {
            assert_eq!(MethodTable::parse(&lines[..keep].join("\n")), None);
        }
        for damaged in [
            text.replacen("pieces2k", "pieces3k", 1),
            text.replacen("memcpy:1.000", "memcpy:-1", 1),
            text.replacen("memcpy:1.000", "memcpy", 1),
            text.replacen("size", "bytes", 1),
            text.replacen("\n64 ", "\n65 ", 1),
            text.clone() + "128 extra\n",
            // A row without its strided cell.
            text.replacen("pieces2k:1.100\n", "\n", 1),
            // Streaming stores are never a candidate for 64-byte copies.
            text.replacen("inline16:2.500", "nt-stores:2.500", 1),
        ] {
            assert_eq!(MethodTable::parse(&damaged), None, "{damaged}");
        }
    }
}
