//! Accumulate (ARMCI_Acc*): `dst += scale * src` element by element, for int, long,
//! float, double, complex float and complex double. Concurrent accumulates to one rank are
//! applied one at a time under that rank's accumulate lock (a word the transport keeps
//! outside the memory global addresses name), so no update is lost.

use bytemuck::{pod_read_unaligned, Pod};

use crate::error::{Error, Result};
use crate::gma::Gma;
use crate::transport::{AtomicOp, Transport};

/// A rank's accumulate lock: the transport's own word (see
/// [`Transport::accumulate_lock`]), which no user transfer can reach, so that a put
/// anywhere in the heap or starter memory cannot leave it taken.
pub(crate) struct AccumulateLock {
    /// The owner's physical rank.
    rank: u32,
}

impl AccumulateLock {
    /// The lock of logical rank `rank`.
    pub(crate) fn of(gma: &Gma, rank: u32) -> Result<AccumulateLock> {
        Ok(AccumulateLock {
            rank: gma.physical(rank)?,
        })
    }

    /// Stores `new` if the lock holds `expected`; returns what it held.
    pub(crate) fn compare_swap(&self, gma: &Gma, expected: u64, new: u64) -> Result<u64> {
        let op = AtomicOp::CompareSwap { expected, new };
        Ok(gma.transport().accumulate_lock(self.rank, op)?)
    }

    /// What the lock holds.
    pub(crate) fn atomic_load(&self, gma: &Gma) -> Result<u64> {
        Ok(gma.transport().accumulate_lock(self.rank, AtomicOp::Load)?)
    }

    /// Stores `value`; returns what the lock held.
    pub(crate) fn atomic_store(&self, gma: &Gma, value: u64) -> Result<u64> {
        Ok(gma
            .transport()
            .accumulate_lock(self.rank, AtomicOp::Store(value))?)
    }
}

/// The element type of an accumulate (ARMCI_ACC_INT ... ARMCI_ACC_DCP, in that order).
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

    /// `dst[i] += scale * src[i]` over whole elements.
    pub(crate) fn apply(self, scale: &[u8], src: &[u8], dst: &mut [u8]) {
        fn each<T: Pod>(src: &[u8], dst: &mut [u8], f: impl Fn(T, T) -> T) {
            let n = std::mem::size_of::<T>();
            for (s, d) in src.chunks_exact(n).zip(dst.chunks_exact_mut(n)) {
                let v = f(pod_read_unaligned::<T>(d), pod_read_unaligned::<T>(s));
                d.copy_from_slice(bytemuck::bytes_of(&v));
            }
        }
        match self {
            AccKind::Int => {
                let k: i32 = pod_read_unaligned(scale);
                each::<i32>(src, dst, |d, s| d.wrapping_add(k.wrapping_mul(s)))
            }
            AccKind::Long => {
                let k: i64 = pod_read_unaligned(scale);
                each::<i64>(src, dst, |d, s| d.wrapping_add(k.wrapping_mul(s)))
            }
            AccKind::Float => {
                let k: f32 = pod_read_unaligned(scale);
                each::<f32>(src, dst, |d, s| d + k * s)
            }
            AccKind::Double => {
                let k: f64 = pod_read_unaligned(scale);
                each::<f64>(src, dst, |d, s| d + k * s)
            }
            AccKind::ComplexFloat => {
                let [kr, ki]: [f32; 2] = pod_read_unaligned(scale);
                each::<[f32; 2]>(src, dst, |[dr, di], [sr, si]| {
                    [dr + kr * sr - ki * si, di + kr * si + ki * sr]
                })
            }
            AccKind::ComplexDouble => {
                let [kr, ki]: [f64; 2] = pod_read_unaligned(scale);
                each::<[f64; 2]>(src, dst, |[dr, di], [sr, si]| {
                    [dr + kr * sr - ki * si, di + kr * si + ki * sr]
                })
            }
        }
    }
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
}
