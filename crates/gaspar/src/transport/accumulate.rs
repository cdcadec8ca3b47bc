//! Accumulate (ARMCI_Acc*): `dst += scale * src` element by element, for int, long,
//! float, double, complex float and complex double, over a contiguous, strided or
//! I/O-vector shape. The element arithmetic and the shapes live here; each transport
//! decides how the update reaches the target ([`Transport::accumulate`]): by default
//! under the target's accumulate lock ([`under_lock`]), on `mpi` through MPI calls as one
//! MPI_Accumulate.

use bytemuck::{pod_read_unaligned, Pod};

use super::{Location, Pattern, Run, Transport};
use crate::error::{Error, Result};

/// The element type of an accumulate (ARMCI_ACC_INT ... ARMCI_ACC_DCP, in that order).
///
/// ```
/// use gaspar::strided::AccKind;
/// assert_eq!(AccKind::ComplexDouble.size(), 16);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AccKind {
    /// C `int`.
    Int,
    /// C `long`.
    Long,
    /// C `float`.
    Float,
    /// C `double`.
    Double,
    /// Complex of two floats.
    ComplexFloat,
    /// Complex of two doubles.
    ComplexDouble,
}

impl AccKind {
    /// The kind for ARMCI's datatype number.
    ///
    /// ```
    /// use gaspar::strided::AccKind;
    /// assert_eq!(AccKind::from_armci(3), Some(AccKind::Double)); // ARMCI_ACC_DBL
    /// assert_eq!(AccKind::from_armci(9), None);
    /// ```
    pub fn from_armci(code: i32) -> Option<AccKind> {
        Some(match code {
            0 => AccKind::Int,
            1 => AccKind::Long,
            2 => AccKind::Float,
            3 => AccKind::Double,
            4 => AccKind::ComplexFloat,
            5 => AccKind::ComplexDouble,
            _ => return None,
        })
    }

    /// Bytes per element (and of the scale factor).
    ///
    /// ```
    /// use gaspar::strided::AccKind;
    /// assert_eq!(AccKind::Int.size(), 4);
    /// assert_eq!(AccKind::ComplexFloat.size(), 8);
    /// ```
    pub fn size(self) -> usize {
        match self {
            AccKind::Int | AccKind::Float => 4,
            AccKind::Long | AccKind::Double | AccKind::ComplexFloat => 8,
            AccKind::ComplexDouble => 16,
        }
    }

    /// Checks that `bytes` is a whole number of elements and `scale` one element.
    pub(crate) fn check(self, bytes: u64, scale: &[u8]) -> Result<()> {
        if scale.len() != self.size() {
            return Err(Error::invalid(
                "accumulate",
                format!("scale of {} bytes for {self:?}", scale.len()),
            ));
        }
        if bytes % self.size() as u64 != 0 {
            return Err(Error::invalid(
                "accumulate",
                format!(
                    "contiguous run of {bytes} bytes is not a whole number of {self:?} ({} bytes)",
                    self.size()
                ),
            ));
        }
        Ok(())
    }

    #[cfg(any(feature = "mpi", test))]
    /// Whether `scale` is this kind's one, so that `scale * src` is `src` exactly.
    pub(crate) fn is_unit(self, scale: &[u8]) -> bool {
        match self {
            AccKind::Int => scale == 1i32.to_ne_bytes(),
            AccKind::Long => scale == 1i64.to_ne_bytes(),
            AccKind::Float => scale == 1f32.to_ne_bytes(),
            AccKind::Double => scale == 1f64.to_ne_bytes(),
            AccKind::ComplexFloat => scale == bytemuck::bytes_of(&[1f32, 0.0]),
            AccKind::ComplexDouble => scale == bytemuck::bytes_of(&[1f64, 0.0]),
        }
    }

    /// `dst[i] += scale * src[i]` over whole elements.
    pub(crate) fn apply(self, scale: &[u8], src: &[u8], dst: &mut [u8]) {
        let len = src.len().min(dst.len());
        // SAFETY: `dst` is `len` writable bytes of a slice this call borrows exclusively.
        unsafe { self.combine::<true>(scale, &src[..len], dst.as_mut_ptr()) }
    }

    /// [`apply`](Self::apply) to `src.len()` bytes at `dst`, memory that other processes
    /// map too (read and written through the pointer only, never a reference).
    ///
    /// # Safety
    /// `dst` points to `src.len()` readable and writable bytes that no other thread or
    /// process accumulates into during the call.
    pub(crate) unsafe fn apply_at(self, scale: &[u8], src: &[u8], dst: *mut u8) {
        // SAFETY: forwarded contract.
        unsafe { self.combine::<true>(scale, src, dst) }
    }

    #[cfg(any(feature = "mpi", test))]
    /// Appends `scale * src[i]` to `out` (what MPI then adds with MPI_SUM; the sum of two
    /// complex numbers is the sum of their parts).
    pub(crate) fn scale_into(self, scale: &[u8], src: &[u8], out: &mut Vec<u8>) {
        let start = out.len();
        out.resize(start + src.len(), 0);
        // SAFETY: the `src.len()` bytes after `start` were just added to `out`, which this
        // call borrows exclusively.
        unsafe { self.combine::<false>(scale, src, out[start..].as_mut_ptr()) }
    }

    /// `dst[i] = scale * src[i]`, plus `dst[i]` when `ADDS`, over the whole elements of
    /// `src`, with the integer kinds' arithmetic wrapping and the complex kinds'
    /// multiplication; `dst` is read and written through the pointer, unaligned.
    ///
    /// # Safety
    /// `dst` points to `src.len()` readable and writable bytes that nothing else writes
    /// during the call.
    unsafe fn combine<const ADDS: bool>(self, scale: &[u8], src: &[u8], dst: *mut u8) {
        #[cfg(target_arch = "x86_64")]
        {
            if std::is_x86_feature_detected!("avx512f") {
                // SAFETY: forwarded contract; the processor has AVX-512 (checked above).
                return unsafe { self.combine_avx512::<ADDS>(scale, src, dst) };
            }
            if std::is_x86_feature_detected!("avx2") {
                // SAFETY: forwarded contract; the processor has AVX2 (checked above).
                return unsafe { self.combine_avx2::<ADDS>(scale, src, dst) };
            }
        }
        // SAFETY: forwarded contract.
        unsafe { self.combine_with::<ADDS>(scale, src, dst) }
    }

    /// [`combine`](Self::combine) compiled for AVX-512, where the processor has it (as
    /// Open MPI's op/avx component does for MPI_Accumulate): a 12800-byte double
    /// accumulate in place took 143-145 ns, 163-169 with AVX2 and 230-235 with the
    /// baseline's SSE2 (AMD EPYC Zen 5, a loop of the same kernel). The same sums in every
    /// version: no fused multiply-add is enabled. A property of the processor, detected
    /// where the program runs, not a constant.
    ///
    /// # Safety
    /// As `combine`, on a processor with AVX-512F.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f")]
    unsafe fn combine_avx512<const ADDS: bool>(self, scale: &[u8], src: &[u8], dst: *mut u8) {
        // SAFETY: forwarded contract.
        unsafe { self.combine_with::<ADDS>(scale, src, dst) }
    }

    /// [`combine`](Self::combine) compiled for AVX2 (see
    /// [`combine_avx512`](Self::combine_avx512)).
    ///
    /// # Safety
    /// As `combine`, on a processor with AVX2.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn combine_avx2<const ADDS: bool>(self, scale: &[u8], src: &[u8], dst: *mut u8) {
        // SAFETY: forwarded contract.
        unsafe { self.combine_with::<ADDS>(scale, src, dst) }
    }

    /// The body of [`combine`](Self::combine), inlined into each instruction set's copy.
    ///
    /// # Safety
    /// As `combine`.
    #[inline(always)]
    unsafe fn combine_with<const ADDS: bool>(self, scale: &[u8], src: &[u8], dst: *mut u8) {
        /// # Safety
        /// As `combine`.
        #[inline(always)]
        unsafe fn each<T: Pod>(src: &[u8], dst: *mut u8, f: impl Fn(T, T) -> T) {
            let n = std::mem::size_of::<T>();
            let from = src.as_ptr();
            for k in 0..src.len() / n {
                // SAFETY: element k lies inside `src` and inside the `src.len()` bytes at
                // `dst` (caller's contract); unaligned reads and writes of a Pod type.
                unsafe {
                    let at = dst.add(k * n).cast::<T>();
                    let value = from.add(k * n).cast::<T>().read_unaligned();
                    at.write_unaligned(f(at.read_unaligned(), value));
                }
            }
        }
        // SAFETY: forwarded contract, in every arm.
        unsafe {
            match self {
                AccKind::Int => {
                    let k: i32 = pod_read_unaligned(scale);
                    each::<i32>(src, dst, |d, s| {
                        let p = k.wrapping_mul(s);
                        if ADDS {
                            d.wrapping_add(p)
                        } else {
                            p
                        }
                    })
                }
                AccKind::Long => {
                    let k: i64 = pod_read_unaligned(scale);
                    each::<i64>(src, dst, |d, s| {
                        let p = k.wrapping_mul(s);
                        if ADDS {
                            d.wrapping_add(p)
                        } else {
                            p
                        }
                    })
                }
                AccKind::Float => {
                    let k: f32 = pod_read_unaligned(scale);
                    each::<f32>(src, dst, |d, s| if ADDS { d + k * s } else { k * s })
                }
                AccKind::Double => {
                    let k: f64 = pod_read_unaligned(scale);
                    each::<f64>(src, dst, |d, s| if ADDS { d + k * s } else { k * s })
                }
                AccKind::ComplexFloat => {
                    let [kr, ki]: [f32; 2] = pod_read_unaligned(scale);
                    each::<[f32; 2]>(src, dst, |[dr, di], [sr, si]| {
                        let p = [kr * sr - ki * si, kr * si + ki * sr];
                        if ADDS {
                            [dr + p[0], di + p[1]]
                        } else {
                            p
                        }
                    })
                }
                AccKind::ComplexDouble => {
                    let [kr, ki]: [f64; 2] = pod_read_unaligned(scale);
                    each::<[f64; 2]>(src, dst, |[dr, di], [sr, si]| {
                        let p = [kr * sr - ki * si, kr * si + ki * sr];
                        if ADDS {
                            [dr + p[0], di + p[1]]
                        } else {
                            p
                        }
                    })
                }
            }
        }
    }
}

/// Where the elements of an accumulate lie on both sides.
///
/// ```
/// use gaspar::{AccShape, Handle, Pattern};
/// use gaspar::strided::AccKind;
/// let rt = gaspar::init()?;
/// let acp = rt.acp();
/// let start = acp.starter_ga(0)?;
/// acp.put_blocking(start, bytemuck::cast_slice(&[0i64; 4]))?;
/// // Elements 0 and 2 of the target += 3 * [1, 2]: 8-byte chunks, 16 bytes apart there.
/// let shape = AccShape::Pattern(Pattern { chunk: 8, counts: &[2], local_strides: &[8], remote_strides: &[16] });
/// let h = acp.accumulate(start, bytemuck::cast_slice(&[1i64, 2]), shape, AccKind::Long, &3i64.to_ne_bytes(), Handle::NULL)?;
/// acp.complete(h)?;
/// let mut out = [0i64; 4];
/// acp.get_blocking(bytemuck::cast_slice_mut(&mut out), start)?;
/// assert_eq!(out, [3, 0, 6, 0]);
/// rt.finalize()?;
/// # Ok::<(), gaspar::Error>(())
/// ```
#[derive(Debug, Clone, Copy)]
pub enum AccShape<'a> {
    /// A regular pattern (contiguous when it has no level; ARMCI_Acc and ARMCI_AccS).
    Pattern(Pattern<'a>),
    /// Runs at arbitrary offsets on both sides (ARMCI_AccV).
    Runs(&'a [Run]),
}

impl AccShape<'_> {
    /// Checks the shape against a local buffer of `local_len` bytes, every run against
    /// `kind` and `scale` against `kind`; returns the remote extent (one past the
    /// furthest byte after the remote location).
    pub(crate) fn checked_extent(
        &self,
        local_len: usize,
        kind: AccKind,
        scale: &[u8],
    ) -> Result<u64> {
        match self {
            AccShape::Pattern(pattern) => {
                kind.check(pattern.chunk, scale)?;
                Ok(pattern.checked_extents(local_len)?.1)
            }
            AccShape::Runs(runs) => {
                kind.check(0, scale)?;
                for run in runs.iter() {
                    kind.check(run.len, scale)?;
                }
                super::runs_extent(runs, local_len, "accumulate")
            }
        }
    }

    /// Calls `f(run)` for every contiguous piece, in order (after
    /// [`checked_extent`](Self::checked_extent)).
    pub(crate) fn for_each_run(&self, mut f: impl FnMut(Run) -> Result<()>) -> Result<()> {
        match self {
            AccShape::Pattern(pattern) => {
                let len = pattern.chunk;
                pattern.for_each(|local, remote| f(Run { local, remote, len }))
            }
            AccShape::Runs(runs) => runs.iter().try_for_each(|&run| f(run)),
        }
    }
}

/// An accumulate as every transport can do it: under `dst.rank`'s accumulate lock (see
/// [`Transport::accumulate_lock`]), each run is updated in place where this process maps
/// the target's memory (every rank's heap on `shm`), else read, updated here and written
/// back; then flushed to the target before the lock is released, so that no update is lost and
/// the next holder sees it. The lock holds this rank's physical number plus one; a rank
/// that finds it taken waits until the holder releases it, or leaves the job.
pub(crate) fn under_lock<T: Transport + ?Sized>(
    transport: &T,
    dst: Location,
    src: &[u8],
    shape: AccShape<'_>,
    kind: AccKind,
    scale: &[u8],
) -> Result<()> {
    let extent = shape.checked_extent(src.len(), kind, scale)?;
    transport.check_range(dst, extent)?;
    let me = u64::from(transport.rank()) + 1;
    let claim = super::AtomicOp::CompareSwap {
        expected: 0,
        new: me,
    };
    loop {
        let holder = transport.accumulate_lock(dst.rank(), claim)?;
        if holder == 0 {
            break;
        }
        let holder_rank = u32::try_from(holder - 1).unwrap_or(u32::MAX);
        transport.wait(
            dst.rank(),
            Some(holder_rank),
            super::Writers::Atomics,
            &mut || Ok(transport.accumulate_lock(dst.rank(), super::AtomicOp::Load)? != holder),
        )?;
    }
    let mut buffer = Vec::new();
    let updated = shape
        .for_each_run(|run| {
            let at = dst.at_offset(
                dst.offset
                    .checked_add(run.remote)
                    .ok_or(Error::LengthOverflow { what: "run offset" })?,
            );
            let values = &src[run.local as usize..(run.local + run.len) as usize];
            if let Some(address) = transport.mapped_address(at, run.len) {
                // SAFETY: `mapped_address` vouches for `run.len` bytes at `address`, in
                // this process's mapping of the target's memory; the lock keeps every
                // other accumulate out of them.
                unsafe { kind.apply_at(scale, values, address as *mut u8) };
                return Ok(());
            }
            buffer.resize(run.len as usize, 0);
            transport.get(at, &mut buffer)?;
            kind.apply(scale, values, &mut buffer);
            Ok(transport.put(at, &buffer)?)
        })
        .and_then(|()| Ok(transport.flush(dst.rank())?));
    let released = transport.accumulate_lock(dst.rank(), super::AtomicOp::Store(0));
    updated?;
    Ok(released.map(drop)?)
}

#[cfg(test)]
mod tests {
    use super::AccKind;

    #[test]
    fn every_type_accumulates() {
        let mut d = bytemuck::cast_slice::<i32, u8>(&[1, 2]).to_vec();
        AccKind::Int.apply(
            &3i32.to_ne_bytes(),
            bytemuck::cast_slice(&[10i32, 20]),
            &mut d,
        );
        assert_eq!(bytemuck::cast_slice::<u8, i32>(&d), [31, 62]);
        let mut d = bytemuck::cast_slice::<f64, u8>(&[0.5]).to_vec();
        AccKind::Double.apply(
            &2f64.to_ne_bytes(),
            bytemuck::cast_slice(&[0.25f64]),
            &mut d,
        );
        assert_eq!(bytemuck::cast_slice::<u8, f64>(&d), [1.0]);
        // (1+2i) += (0+1i) * (3+4i) = (1+2i) + (-4+3i) = (-3+5i)
        let mut d = bytemuck::cast_slice::<f32, u8>(&[1.0, 2.0]).to_vec();
        AccKind::ComplexFloat.apply(
            bytemuck::cast_slice(&[0f32, 1.0]),
            bytemuck::cast_slice(&[3f32, 4.0]),
            &mut d,
        );
        assert_eq!(bytemuck::cast_slice::<u8, f32>(&d), [-3.0, 5.0]);
        let mut d = bytemuck::cast_slice::<f64, u8>(&[1.0, 2.0]).to_vec();
        AccKind::ComplexDouble.apply(
            bytemuck::cast_slice(&[0f64, 1.0]),
            bytemuck::cast_slice(&[3f64, 4.0]),
            &mut d,
        );
        assert_eq!(bytemuck::cast_slice::<u8, f64>(&d), [-3.0, 5.0]);
        let mut d = 5i64.to_ne_bytes().to_vec();
        AccKind::Long.apply(&(-1i64).to_ne_bytes(), &7i64.to_ne_bytes(), &mut d);
        assert_eq!(i64::from_ne_bytes(d.try_into().unwrap()), -2);
        assert!(AccKind::Int.check(6, &[0; 4]).is_err());
        assert!(AccKind::Int.check(8, &[0; 8]).is_err());
        assert_eq!(AccKind::from_armci(5), Some(AccKind::ComplexDouble));
        assert_eq!(AccKind::from_armci(6), None);
    }

    #[test]
    fn scaling_alone_gives_the_products_and_one_is_recognized() {
        let mut out = vec![9u8];
        AccKind::ComplexDouble.scale_into(
            bytemuck::cast_slice(&[0f64, 1.0]),
            bytemuck::cast_slice(&[3f64, 4.0]),
            &mut out,
        );
        assert_eq!(out[0], 9);
        assert_eq!(
            bytemuck::pod_read_unaligned::<[f64; 2]>(&out[1..]),
            [-4.0, 3.0]
        );
        let mut out = Vec::new();
        AccKind::Int.scale_into(
            &(-2i32).to_ne_bytes(),
            bytemuck::cast_slice(&[5i32, 7]),
            &mut out,
        );
        assert_eq!(bytemuck::cast_slice::<u8, i32>(&out), [-10, -14]);
        assert!(AccKind::Double.is_unit(&1f64.to_ne_bytes()));
        assert!(!AccKind::Double.is_unit(&2f64.to_ne_bytes()));
        assert!(AccKind::ComplexFloat.is_unit(bytemuck::bytes_of(&[1f32, 0.0])));
        assert!(!AccKind::ComplexFloat.is_unit(bytemuck::bytes_of(&[1f32, 1.0])));
        assert!(AccKind::Long.is_unit(&1i64.to_ne_bytes()));
    }
}
