//! `GlobalPtr<T>`: a typed global address for Rust users, restricted to plain-old-data
//! types. Blocking operations are the nonblocking ones plus `complete`.

use std::marker::PhantomData;

use bytemuck::Pod;

use super::Gma;
use crate::error::{Error, Result};
use crate::gmem::GlobalAddr;
use crate::transport::{AtomicOp, Width};

/// A global address of a `T` (or of the first of several). Copyable; never dereferenced
/// directly: every access goes through the runtime.
///
/// ```no_run
/// # let rt = gaspar::init()?;
/// let acp = rt.acp();
/// use gaspar::GlobalPtr;
/// let slot = GlobalPtr::<u64>::new(acp.starter_ga(0)?);
/// slot.put(acp, &42)?;
/// # Ok::<(), gaspar::Error>(())
/// ```
pub struct GlobalPtr<T> {
    ga: GlobalAddr,
    _type: PhantomData<fn() -> T>,
}

impl<T> Clone for GlobalPtr<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for GlobalPtr<T> {}

impl<T> std::fmt::Debug for GlobalPtr<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "GlobalPtr<{}>({})", std::any::type_name::<T>(), self.ga)
    }
}

impl<T: Pod> GlobalPtr<T> {
    /// A typed view of `ga`.
    ///
    /// ```no_run
    /// # let rt = gaspar::init()?;
    /// let acp = rt.acp();
    /// let word = gaspar::GlobalPtr::<i32>::new(acp.starter_ga(rt.rank())?);
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn new(ga: GlobalAddr) -> Self {
        GlobalPtr {
            ga,
            _type: PhantomData,
        }
    }

    /// The untyped address.
    ///
    /// ```no_run
    /// # let rt = gaspar::init()?;
    /// let acp = rt.acp();
    /// let word = gaspar::GlobalPtr::<i32>::new(acp.starter_ga(0)?);
    /// assert_eq!(word.ga(), acp.starter_ga(0)?);
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn ga(self) -> GlobalAddr {
        self.ga
    }

    /// The pointer `count` elements further on (as `<*const T>::add`: elements, where
    /// [`GlobalAddr::offset`] counts bytes).
    ///
    /// ```no_run
    /// # let rt = gaspar::init()?;
    /// let acp = rt.acp();
    /// let first = gaspar::GlobalPtr::<u64>::new(acp.starter_ga(0)?);
    /// let third = first.add(2)?; // 16 bytes on
    /// assert_eq!(third.ga(), acp.starter_ga(0)?.offset(16).unwrap());
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    // Named as `<*const T>::add`; not `std::ops::Add`, since it can fail.
    #[allow(clippy::should_implement_trait)]
    pub fn add(self, count: u64) -> Result<Self> {
        let bytes = count
            .checked_mul(std::mem::size_of::<T>() as u64)
            .and_then(|b| self.ga.offset(b))
            .ok_or(Error::LengthOverflow {
                what: "GlobalPtr::add",
            })?;
        Ok(Self::new(bytes))
    }

    /// Writes `value` and waits until it is visible at the target.
    ///
    /// ```no_run
    /// # let rt = gaspar::init()?;
    /// let acp = rt.acp();
    /// gaspar::GlobalPtr::<f64>::new(acp.starter_ga(0)?).put(acp, &2.5)?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn put(self, rt: &Gma, value: &T) -> Result<()> {
        self.put_slice(rt, std::slice::from_ref(value))
    }

    /// Writes `values` to consecutive elements and waits until they are visible.
    ///
    /// ```no_run
    /// # let rt = gaspar::init()?;
    /// let acp = rt.acp();
    /// gaspar::GlobalPtr::<u16>::new(acp.starter_ga(0)?).put_slice(acp, &[1, 2, 3])?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn put_slice(self, rt: &Gma, values: &[T]) -> Result<()> {
        rt.put_blocking(self.ga, bytemuck::cast_slice(values))
    }

    /// Reads one element.
    ///
    /// ```no_run
    /// # let rt = gaspar::init()?;
    /// let acp = rt.acp();
    /// let value: f64 = gaspar::GlobalPtr::new(acp.starter_ga(0)?).get(acp)?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn get(self, rt: &Gma) -> Result<T> {
        let mut value = T::zeroed();
        self.get_slice(rt, std::slice::from_mut(&mut value))?;
        Ok(value)
    }

    /// Reads `out.len()` consecutive elements.
    ///
    /// ```no_run
    /// # let rt = gaspar::init()?;
    /// let acp = rt.acp();
    /// let mut three = [0u16; 3];
    /// gaspar::GlobalPtr::new(acp.starter_ga(0)?).get_slice(acp, &mut three)?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn get_slice(self, rt: &Gma, out: &mut [T]) -> Result<()> {
        rt.get_blocking(bytemuck::cast_slice_mut(out), self.ga)
    }
}

/// Types a remote atomic can work on: 4- and 8-byte integers.
///
/// ```
/// use gaspar::{AtomicWord, Width};
/// assert_eq!(i32::WIDTH, Width::W4);
/// assert_eq!((-1i32).to_bits(), 0xffff_ffff);
/// assert_eq!(i32::from_bits(0xffff_ffff), -1);
/// ```
pub trait AtomicWord: Pod {
    /// Width of the word.
    ///
    /// ```
    /// use gaspar::{AtomicWord, Width};
    /// assert_eq!(i64::WIDTH, Width::W8);
    /// ```
    const WIDTH: Width;
    /// The bits, zero-extended.
    ///
    /// ```
    /// use gaspar::AtomicWord;
    /// assert_eq!((-2i64).to_bits(), u64::MAX - 1);
    /// assert_eq!(1.0f32.to_bits(), 0x3f80_0000);
    /// ```
    fn to_bits(self) -> u64;
    /// The value from the low bits.
    ///
    /// ```
    /// use gaspar::AtomicWord;
    /// assert_eq!(<u32 as AtomicWord>::from_bits(0x1_0000_0005), 5); // the low bits
    /// ```
    fn from_bits(bits: u64) -> Self;
}

macro_rules! atomic_word {
    ($($t:ty => $w:expr, $u:ty;)*) => {$(
        impl AtomicWord for $t {
            const WIDTH: Width = $w;
            fn to_bits(self) -> u64 { self as $u as u64 }
            fn from_bits(bits: u64) -> Self { bits as $u as $t }
        }
    )*};
}
atomic_word! {
    u32 => Width::W4, u32;
    i32 => Width::W4, u32;
    u64 => Width::W8, u64;
    i64 => Width::W8, u64;
}

impl<T: AtomicWord> GlobalPtr<T> {
    #[inline(always)]
    fn rmw(self, rt: &Gma, op: AtomicOp) -> Result<T> {
        Ok(T::from_bits(rt.atomic_blocking(self.ga, T::WIDTH, op)?))
    }

    /// Atomically adds `value`; returns the previous value.
    ///
    /// ```no_run
    /// # let rt = gaspar::init()?;
    /// let acp = rt.acp();
    /// let ticket = gaspar::GlobalPtr::<u64>::new(acp.starter_ga(0)?).fetch_add(acp, 1)?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    #[inline]
    pub fn fetch_add(self, rt: &Gma, value: T) -> Result<T> {
        self.rmw(rt, AtomicOp::Add(value.to_bits()))
    }

    /// Atomically stores `new` if the word equals `expected`; returns the previous value.
    ///
    /// ```no_run
    /// # let rt = gaspar::init()?;
    /// let acp = rt.acp();
    /// let lock = gaspar::GlobalPtr::<u64>::new(acp.starter_ga(0)?);
    /// let won = lock.compare_swap(acp, 0, 1)? == 0;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    #[inline]
    pub fn compare_swap(self, rt: &Gma, expected: T, new: T) -> Result<T> {
        self.rmw(
            rt,
            AtomicOp::CompareSwap {
                expected: expected.to_bits(),
                new: new.to_bits(),
            },
        )
    }

    /// Atomically stores `value`; returns the previous value.
    ///
    /// ```no_run
    /// # let rt = gaspar::init()?;
    /// let acp = rt.acp();
    /// let before = gaspar::GlobalPtr::<i64>::new(acp.starter_ga(0)?).swap(acp, -1)?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    #[inline]
    pub fn swap(self, rt: &Gma, value: T) -> Result<T> {
        self.rmw(rt, AtomicOp::Swap(value.to_bits()))
    }

    /// Atomic exclusive or; returns the previous value.
    ///
    /// ```no_run
    /// # let rt = gaspar::init()?;
    /// let acp = rt.acp();
    /// gaspar::GlobalPtr::<u32>::new(acp.starter_ga(0)?).fetch_xor(acp, 1)?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    #[inline]
    pub fn fetch_xor(self, rt: &Gma, value: T) -> Result<T> {
        self.rmw(rt, AtomicOp::Xor(value.to_bits()))
    }

    /// Atomic or; returns the previous value.
    ///
    /// ```no_run
    /// # let rt = gaspar::init()?;
    /// let acp = rt.acp();
    /// gaspar::GlobalPtr::<u64>::new(acp.starter_ga(0)?).fetch_or(acp, 1 << rt.rank())?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    #[inline]
    pub fn fetch_or(self, rt: &Gma, value: T) -> Result<T> {
        self.rmw(rt, AtomicOp::Or(value.to_bits()))
    }

    /// Atomic and; returns the previous value.
    ///
    /// ```no_run
    /// # let rt = gaspar::init()?;
    /// let acp = rt.acp();
    /// gaspar::GlobalPtr::<u64>::new(acp.starter_ga(0)?).fetch_and(acp, !(1 << rt.rank()))?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    #[inline]
    pub fn fetch_and(self, rt: &Gma, value: T) -> Result<T> {
        self.rmw(rt, AtomicOp::And(value.to_bits()))
    }

    /// Atomic read.
    ///
    /// ```no_run
    /// # let rt = gaspar::init()?;
    /// let acp = rt.acp();
    /// let now = gaspar::GlobalPtr::<u64>::new(acp.starter_ga(0)?).atomic_load(acp)?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    #[inline]
    pub fn atomic_load(self, rt: &Gma) -> Result<T> {
        self.rmw(rt, AtomicOp::Load)
    }

    /// Atomic write.
    ///
    /// ```no_run
    /// # let rt = gaspar::init()?;
    /// let acp = rt.acp();
    /// gaspar::GlobalPtr::<u64>::new(acp.starter_ga(0)?).atomic_store(acp, 0)?;
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    #[inline]
    pub fn atomic_store(self, rt: &Gma, value: T) -> Result<()> {
        self.rmw(rt, AtomicOp::Store(value.to_bits())).map(drop)
    }

    /// Waits until this word of this rank's memory (starter memory or symmetric heap)
    /// compares to `value` as `cmp` says, and returns the word (OpenSHMEM's
    /// `shmem_wait_until`). Other ranks set it with an atomic or a put (complete once the
    /// put returns, or after `complete`); the wait polls briefly, then sleeps until such a
    /// write wakes it. Ends with [`Error::JobAborted`] when the job is aborted.
    ///
    /// ```no_run
    /// # let rt = gaspar::init()?;
    /// let acp = rt.acp();
    /// use gaspar::{Compare, GlobalPtr};
    /// let arrivals = GlobalPtr::<u64>::new(acp.starter_ga(0)?);
    /// arrivals.fetch_add(acp, 1)?;
    /// if rt.rank() == 0 {
    ///     arrivals.wait_until(acp, Compare::Ge, u64::from(rt.procs()))?;
    /// }
    /// # Ok::<(), gaspar::Error>(())
    /// ```
    pub fn wait_until(self, rt: &Gma, cmp: Compare, value: T) -> Result<T>
    where
        T: PartialOrd,
    {
        if self.ga.rank() != rt.rank() {
            return Err(Error::invalid(
                "wait_until",
                format!(
                    "{} is memory of rank {}, not of this rank ({}): a rank waits on its own memory",
                    self.ga,
                    self.ga.rank(),
                    rt.rank()
                ),
            ));
        }
        let mut seen = T::zeroed();
        rt.wait(rt.rank(), None, || {
            seen = self.atomic_load(rt)?;
            Ok(cmp.holds(seen, value))
        })?;
        Ok(seen)
    }
}

/// How `wait_until` compares the word with its value (OpenSHMEM's `SHMEM_CMP_*`).
///
/// ```
/// use gaspar::Compare;
/// assert!(Compare::Ge.holds(3u64, 3));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compare {
    /// Equal to the value.
    Eq,
    /// Not equal to the value.
    Ne,
    /// Greater than the value.
    Gt,
    /// Greater than or equal to the value.
    Ge,
    /// Less than the value.
    Lt,
    /// Less than or equal to the value.
    Le,
}

impl Compare {
    /// Whether `word` compares to `value` as `self` says.
    ///
    /// ```
    /// use gaspar::Compare;
    /// assert!(Compare::Lt.holds(-1i64, 0));
    /// assert!(!Compare::Ne.holds(5u32, 5));
    /// ```
    pub fn holds<T: PartialOrd>(self, word: T, value: T) -> bool {
        match self {
            Compare::Eq => word == value,
            Compare::Ne => word != value,
            Compare::Gt => word > value,
            Compare::Ge => word >= value,
            Compare::Lt => word < value,
            Compare::Le => word <= value,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Compare;

    #[test]
    fn comparisons_are_signed_for_signed_words() {
        assert!(Compare::Lt.holds(-1i64, 0));
        assert!(Compare::Gt.holds(u64::MAX, 0));
        assert!(Compare::Ge.holds(3u32, 3));
        assert!(!Compare::Ne.holds(3i32, 3));
        assert!(Compare::Le.holds(i32::MIN, -5));
        assert!(Compare::Eq.holds(7u64, 7));
    }
}
