//! Strided put and get through the Rust API (`put_strided` / `get_strided`, each
//! completed before the next), every repetition alternated with the same layout copied
//! locally by a loop of row copies, what a program would write (the `memcpy_` figures).
//! The layouts are those of libarmci's benchmark (`crates/armci/bench/bench_strided.c`):
//! two rows and 256 rows of 64 bytes, 1 KiB apart at the target (`puts_2row`,
//! `puts_2d`, ...), and a 32^3 block of doubles inside a 64^3 array (`puts_3d`, ...).

use gaspar::strided::Descriptor;
use gaspar::{GlobalAddr, Handle};

use super::{time_pair, Figures};

/// A block of `planes` x `rows` rows of `row` bytes: dense here, `row_stride` and
/// `plane_stride` bytes apart at the target.
struct Layout {
    name: &'static str,
    row: u64,
    rows: u64,
    planes: u64,
    row_stride: u64,
    plane_stride: u64,
    /// Transfers per timed loop.
    iters: u64,
}

const LAYOUTS: [Layout; 3] = [
    Layout {
        name: "2row",
        row: 64,
        rows: 2,
        planes: 1,
        row_stride: 1024,
        plane_stride: 2048,
        iters: 10_000,
    },
    Layout {
        name: "2d",
        row: 64,
        rows: 256,
        planes: 1,
        row_stride: 1024,
        plane_stride: 256 * 1024,
        iters: 200,
    },
    Layout {
        name: "3d",
        row: 32 * 8,
        rows: 32,
        planes: 32,
        row_stride: 64 * 8,
        plane_stride: 64 * 64 * 8,
        iters: 20,
    },
];

impl Layout {
    /// The bytes of the dense block.
    fn dense_len(&self) -> u64 {
        self.row * self.rows * self.planes
    }

    /// The bytes from the target's first byte to its last, plus one.
    fn strided_len(&self) -> u64 {
        (self.planes - 1) * self.plane_stride + (self.rows - 1) * self.row_stride + self.row
    }

    /// The transfer's descriptor, from the dense block to the target or back (a 2-D
    /// layout has one level of strides, a 3-D one two).
    fn descriptor(&self, dense_is_source: bool) -> gaspar::Result<Descriptor> {
        let levels = if self.planes > 1 { 2 } else { 1 };
        let count = [self.row, self.rows, self.planes];
        let dense = [self.row, self.row * self.rows];
        let strided = [self.row_stride, self.plane_stride];
        let (src, dst) = if dense_is_source {
            (&dense[..levels], &strided[..levels])
        } else {
            (&strided[..levels], &dense[..levels])
        };
        Descriptor::new(&count[..=levels], src, dst)
    }

    /// The local floor of a put: every row copied from `dense` into `strided`, laid out
    /// as at the target.
    fn scatter(&self, dense: &[u8], strided: &mut [u8]) {
        match self.row {
            64 => self.copy_rows::<64>(dense, strided, true),
            256 => self.copy_rows::<256>(dense, strided, true),
            _ => unreachable!("a layout's rows are 64 or 256 bytes"),
        }
    }

    /// The local floor of a get: every row copied from `strided` into `dense`.
    fn gather(&self, strided: &[u8], dense: &mut [u8]) {
        match self.row {
            64 => self.copy_rows::<64>(strided, dense, false),
            256 => self.copy_rows::<256>(strided, dense, false),
            _ => unreachable!("a layout's rows are 64 or 256 bytes"),
        }
    }

    /// Rows of `ROW` bytes (a constant, as in the C benchmark's `memcpy(.., 64)`, which
    /// compiles to a few moves) from `from` to `to`; `dense_first`: `from` is the dense
    /// block.
    fn copy_rows<const ROW: usize>(&self, from: &[u8], to: &mut [u8], dense_first: bool) {
        let (rows, row_stride) = (self.rows as usize, self.row_stride as usize);
        for z in 0..self.planes as usize {
            let (dense_plane, strided_plane) = (z * rows * ROW, z * self.plane_stride as usize);
            for y in 0..rows {
                let (d, s) = (dense_plane + y * ROW, strided_plane + y * row_stride);
                let (f, t) = if dense_first { (d, s) } else { (s, d) };
                let row: &[u8; ROW] = from[f..f + ROW].try_into().expect("a whole row");
                to[t..t + ROW].copy_from_slice(row);
            }
        }
    }
}

/// Rank 0 times each layout's put and get to `remote` (rank 1's block, at least 2 MiB)
/// beside its local copy: figures `puts_NAME`, `gets_NAME`, `memcpy_puts_NAME`,
/// `memcpy_gets_NAME`, keyed by the bytes moved.
pub(super) fn measure(
    rt: &gaspar::strided::Strided,
    remote: GlobalAddr,
    reps: u32,
    figures: &mut Figures,
) -> gaspar::Result<()> {
    for layout in &LAYOUTS {
        let put = layout.descriptor(true)?;
        let get = layout.descriptor(false)?;
        let mut dense = vec![1u8; layout.dense_len() as usize];
        let mut strided = vec![0u8; layout.strided_len() as usize];
        let mut back = vec![0u8; layout.dense_len() as usize];
        let (ours, floor) = time_pair(
            reps,
            layout.iters,
            || {
                let h = rt
                    .put_strided(&dense, &put, remote, Handle::NULL)
                    .expect("put_strided");
                rt.complete(h).expect("complete");
            },
            || layout.scatter(&dense, std::hint::black_box(&mut strided)),
        );
        let size = layout.dense_len();
        figures.insert((format!("puts_{}", layout.name), size), ours);
        figures.insert((format!("memcpy_puts_{}", layout.name), size), floor);
        let (ours, floor) = time_pair(
            reps,
            layout.iters,
            || {
                let h = rt
                    .get_strided(&mut back, &get, remote, Handle::NULL)
                    .expect("get_strided");
                rt.complete(h).expect("complete");
            },
            || layout.gather(&strided, std::hint::black_box(&mut dense)),
        );
        figures.insert((format!("gets_{}", layout.name), size), ours);
        figures.insert((format!("memcpy_gets_{}", layout.name), size), floor);
        // What the put wrote is what the get read back.
        if back != dense {
            rt.abort("gaspar bench: a strided get did not read back what the put wrote");
        }
    }
    Ok(())
}
