//! Put, get and third-party copy of sections: the strided layer's direct or buffered
//! transfer when both sides pair up (same type, same shape), otherwise the general path
//! through a dense buffer in Fortran order (conversion, shape changes, a local side that
//! runs against the remote one).

use crate::gma::Handle;
use crate::transport::Run;

use super::convert::{check_conversion, convert, convert_common, is_plain_copy};
use super::error::{CoError, CoResult};
use super::section::{dense, pair, Dim, Section, MAX_RANK};
use super::{heap_location, Coarrays, Elem, Image, Placement, Token};
use crate::transport::Location;

/// The largest element a transfer of one element converts on the stack (complex(16)).
const ONE_ELEMENT: usize = 32;

/// The elements of `section` in `buf`, converted from `from` to `to` (of `to_len` bytes),
/// one after another in Fortran order.
fn pack(buf: &[u8], section: &Section<'_>, from: Elem, to: Elem, to_len: usize) -> Vec<u8> {
    let from_len = section.elem_len;
    let mut out = vec![0u8; section.count().unwrap_or(0) * to_len];
    for (k, at) in section.offsets().enumerate() {
        convert(
            from,
            &buf[at..at + from_len],
            to,
            &mut out[k * to_len..(k + 1) * to_len],
        );
    }
    out
}

/// Writes `count` elements of `section` in `buf` from `packed` (dense, of type `from`
/// and `from_len` bytes each), converted to `to`; a single packed element fills all.
fn unpack(
    packed: &[u8],
    from: Elem,
    from_len: usize,
    buf: &mut [u8],
    section: &Section<'_>,
    to: Elem,
) {
    let to_len = section.elem_len;
    let single = packed.len() == from_len;
    for (k, at) in section.offsets().enumerate() {
        let k = if single { 0 } else { k };
        convert(
            from,
            &packed[k * from_len..(k + 1) * from_len],
            to,
            &mut buf[at..at + to_len],
        );
    }
}

/// The runs that move a dense buffer (element k at byte `k * elem_len`) to or from
/// `remote`'s elements, merged where both sides continue, with remote offsets counted
/// from `low` (the section's lowest byte).
fn runs(remote: &Section<'_>, low: usize) -> Vec<Run> {
    let len = remote.elem_len as u64;
    let mut out: Vec<Run> = Vec::new();
    for (k, at) in remote.offsets().enumerate() {
        let (local, at) = (k as u64 * len, (at - low) as u64);
        match out.last_mut() {
            Some(last) if last.local + last.len == local && last.remote + last.len == at => {
                last.len += len;
            }
            _ => out.push(Run {
                local,
                remote: at,
                len,
            }),
        }
    }
    out
}

/// The element counts of both sides agree, or the source is one element to broadcast;
/// the destination writes each element once.
#[inline]
fn check_counts(
    call: &'static str,
    source: usize,
    destination: usize,
    dst: &Section<'_>,
) -> CoResult<()> {
    if source != destination && source != 1 {
        return Err(CoError::invalid(
            call,
            format!("the source has {source} elements but the destination {destination}"),
        ));
    }
    // What the general path packs is the destination's elements, one after another: a
    // destination whose elements take more bytes than it spans writes some twice (a
    // stride of 0 along a dimension of several elements), and could ask for any size.
    if !dst.spans_its_elements() {
        return Err(CoError::invalid(
            call,
            "the destination section writes some elements twice (a stride of 0?)",
        ));
    }
    Ok(())
}

impl Coarrays {
    /// Puts `src` (a section of `src_buf`, elements of type `src_elem`) into `image`'s
    /// part of `token`, at byte `offset`, laid out as `dst` (its `start` and strides
    /// relative to `offset`), converting element types where they differ. A source of one
    /// element fills the whole destination. Nonblocking: the put completes at the next
    /// image control statement; a get by this image from that image sees it.
    ///
    /// ```
    /// use gaspar::coarray::{Coarrays, Dim, Elem, ElemType, Section};
    /// let mut co = Coarrays::init()?;
    /// let a = co.allocate(8 * 4)?; // real(8) :: a(4)[*]
    /// let (r8, i4) = (Elem::new(ElemType::Real, 8), Elem::new(ElemType::Integer, 4));
    /// // a(2:4)[1] = [1, 2, 3] from integer(4) values: converted to real(8).
    /// let src: Vec<u8> = [1i32, 2, 3].iter().flat_map(|v| v.to_ne_bytes()).collect();
    /// let dst_dims = [Dim { extent: 3, stride: 8 }];
    /// let src_dims = [Dim { extent: 3, stride: 4 }];
    /// co.put(&a, 8, 1, &Section { elem_len: 8, start: 0, dims: &dst_dims }, r8,
    ///        &src, &Section { elem_len: 4, start: 0, dims: &src_dims }, i4)?;
    /// co.sync_all()?;
    /// let mut x = [0u8; 8];
    /// co.get(&a, 24, 1, &Section::scalar(8, 0), r8, &mut x, &Section::scalar(8, 0), r8)?;
    /// assert_eq!(f64::from_ne_bytes(x), 3.0);
    /// // A destination that writes one element 2^32 times (a stride of 0) is refused, as
    /// // is a get into such a destination here.
    /// let same = [Dim { extent: 1 << 32, stride: 0 }];
    /// let one = 1.0f64.to_ne_bytes();
    /// assert!(co.put(&a, 0, 1, &Section { elem_len: 8, start: 0, dims: &same }, r8,
    ///                &one, &Section::scalar(8, 0), r8).is_err());
    /// let mut small = [0u8; 8];
    /// assert!(co.get(&a, 0, 1, &Section { elem_len: 8, start: 0, dims: &same[..] }, r8,
    ///                &mut small, &Section { elem_len: 8, start: 0, dims: &same }, r8).is_err());
    /// // Elements of no bytes (character(len=0)), however many: nothing moves.
    /// let c0 = Elem::new(ElemType::Character, 1);
    /// co.put(&a, 0, 1, &Section { elem_len: 0, start: 0, dims: &same }, c0,
    ///        &[], &Section::scalar(0, 0), c0)?;
    /// co.deallocate(a)?;
    /// co.finalize()?;
    /// # Ok::<(), gaspar::coarray::CoError>(())
    /// ```
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub fn put(
        &mut self,
        token: &Token,
        offset: usize,
        image: Image,
        dst: &Section<'_>,
        dst_elem: Elem,
        src_buf: &[u8],
        src: &Section<'_>,
        src_elem: Elem,
    ) -> CoResult<()> {
        if let (Some((rank, target)), true) = (
            self.scalar_target(token, offset, image, dst),
            src.dims.is_empty(),
        ) {
            if let Some(bytes) = src_buf.get(src.start..src.start.wrapping_add(src.elem_len)) {
                if is_plain_copy(src_elem, src.elem_len, dst_elem, dst.elem_len) {
                    self.rt.put_located(target, bytes)?;
                    self.put_issued(rank);
                    return Ok(());
                }
                if dst.elem_len <= ONE_ELEMENT {
                    return self.put_one_converted(
                        rank,
                        target,
                        src_elem,
                        bytes,
                        dst_elem,
                        dst.elem_len,
                    );
                }
            }
        }
        self.put_run(token, offset, image, dst, dst_elem, src_buf, src, src_elem)
    }

    /// [`put`](Self::put) past its scalar fast path: one run of one type into a
    /// symmetric coarray (a row, a whole array) checked as the scalar is, without
    /// building a `CoResult`, and anything else (or anything wrong) in
    /// [`put_general`](Self::put_general). Inlined into the caller, as the raw put is:
    /// called out of line, with nine arguments, its prologue and the reloads of the
    /// sections cost a put of 1 KiB + `sync memory` 10-13 ns and a get of 1-8 KiB 5-8 ns
    /// more than the raw calls (AMD EPYC Zen 4; `get_run` alike).
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn put_run(
        &mut self,
        token: &Token,
        offset: usize,
        image: Image,
        dst: &Section<'_>,
        dst_elem: Elem,
        src_buf: &[u8],
        src: &Section<'_>,
        src_elem: Elem,
    ) -> CoResult<()> {
        if is_plain_copy(src_elem, src.elem_len, dst_elem, dst.elem_len) {
            if let Some(len) = Self::same_run(dst, src) {
                let end = src.start.checked_add(len);
                let bytes = end.and_then(|end| src_buf.get(src.start..end));
                let target = self.run_target(token, offset, image, dst.start, len);
                if let (Some(bytes), Some((rank, target))) = (bytes, target) {
                    self.rt.put_located(target, bytes)?;
                    self.put_issued(rank);
                    return Ok(());
                }
            }
        }
        self.put_general(token, offset, image, dst, dst_elem, src_buf, src, src_elem)
    }

    /// The fast path's one element of another type or kind (`x[i] = 1` into a real
    /// coarray): converted on the stack and put to `target` of `rank`.
    #[inline(never)]
    fn put_one_converted(
        &mut self,
        rank: u32,
        target: Location,
        src_elem: Elem,
        src: &[u8],
        dst_elem: Elem,
        dst_len: usize,
    ) -> CoResult<()> {
        let mut one = [0u8; ONE_ELEMENT];
        let one = &mut one[..dst_len];
        if !convert_common(src_elem, src, dst_elem, one) {
            check_conversion(src_elem, src.len(), dst_elem, dst_len)?;
            convert(src_elem, src, dst_elem, one);
        }
        self.rt.put_located(target, one)?;
        self.put_issued(rank);
        Ok(())
    }

    /// [`put`](Self::put) past its fast path: every check, with the error naming what is
    /// wrong; one contiguous run or one converted element here, the rest in
    /// [`put_sections`](Self::put_sections).
    #[allow(clippy::too_many_arguments)]
    #[inline(never)]
    fn put_general(
        &mut self,
        token: &Token,
        offset: usize,
        image: Image,
        dst: &Section<'_>,
        dst_elem: Elem,
        src_buf: &[u8],
        src: &Section<'_>,
        src_elem: Elem,
    ) -> CoResult<()> {
        let rank = self.team.rank_of(image)?;
        self.usable(token)?;
        let low = dst.check("put (remote side)", token.after("put", offset)?)?;
        let src_low = src.check("put (source)", src_buf.len())?;
        if is_plain_copy(src_elem, src.elem_len, dst_elem, dst.elem_len) {
            if let (Some(len), Some(src_len)) = (dst.run_len(), src.run_len()) {
                if len == src_len {
                    // One run (scalars, whole arrays): no descriptor, no allocation.
                    let bytes = &src_buf[src_low..src_low + len];
                    let target = token.location(&self.rt, rank, offset + low)?;
                    self.rt.put_located(target, bytes)?;
                    self.put_issued(rank);
                    return Ok(());
                }
            }
        }
        if dst.elem_len <= ONE_ELEMENT && dst.count()? == 1 && src.count()? == 1 {
            // One element of another kind (`x[i] = 1`): converted on the stack.
            check_conversion(src_elem, src.elem_len, dst_elem, dst.elem_len)?;
            let mut one = [0u8; ONE_ELEMENT];
            let one = &mut one[..dst.elem_len];
            convert(
                src_elem,
                &src_buf[src_low..src_low + src.elem_len],
                dst_elem,
                one,
            );
            self.rt
                .put_located(token.location(&self.rt, rank, offset + low)?, one)?;
            self.put_issued(rank);
            return Ok(());
        }
        self.put_sections(
            token, offset, rank, low, dst, dst_elem, src_buf, src, src_elem,
        )
    }

    /// The fast path of one element of a symmetric coarray (`x[i] = v`, `v = x[i]`): the
    /// job rank of `image` and the place of `section`'s element at `offset` of its part
    /// (see [`Token::location`]), when `section` is a scalar and every check passes;
    /// `None` sends the caller down the general path, which checks again and names what
    /// is wrong. Without building a `CoResult` on the way: the coarray layer's goal is
    /// the raw put's cost.
    #[inline(always)]
    fn scalar_target(
        &self,
        token: &Token,
        offset: usize,
        image: Image,
        section: &Section<'_>,
    ) -> Option<(u32, Location)> {
        if !section.dims.is_empty() {
            return None;
        }
        self.run_target(token, offset, image, section.start, section.elem_len)
    }

    /// As [`scalar_target`](Self::scalar_target) for a run of `len` bytes at `start` of a
    /// section at `offset` (one element, a row, a whole array).
    #[inline(always)]
    pub(super) fn run_target(
        &self,
        token: &Token,
        offset: usize,
        image: Image,
        start: usize,
        len: usize,
    ) -> Option<(u32, Location)> {
        let Placement::Symmetric(block) = &token.placement else {
            return None;
        };
        let rank = *self.team.ranks().get((image as usize).wrapping_sub(1))?;
        let at = offset.checked_add(start)?;
        if at.checked_add(len)? > token.bytes {
            return None;
        }
        let target = heap_location(&self.rt, rank, block.heap_offset() + at as u64)?;
        Some((rank, target))
    }

    /// The dense run both sections describe when they do, of the same bytes: its length.
    /// Sections of more than [`MAX_RANK`] dimensions are left to the checks that reject
    /// them.
    #[inline]
    fn same_run(a: &Section<'_>, b: &Section<'_>) -> Option<usize> {
        if a.dims.len() > MAX_RANK || b.dims.len() > MAX_RANK {
            return None;
        }
        let len = a.run_len()?;
        (b.run_len()? == len).then_some(len)
    }

    /// [`put`](Self::put) of anything but one contiguous run of one type.
    #[allow(clippy::too_many_arguments)]
    #[inline(never)]
    fn put_sections(
        &mut self,
        token: &Token,
        offset: usize,
        rank: u32,
        low: usize,
        dst: &Section<'_>,
        dst_elem: Elem,
        src_buf: &[u8],
        src: &Section<'_>,
        src_elem: Elem,
    ) -> CoResult<()> {
        let plain = is_plain_copy(src_elem, src.elem_len, dst_elem, dst.elem_len);
        if !plain {
            check_conversion(src_elem, src.elem_len, dst_elem, dst.elem_len)?;
        }
        let (n, m) = (dst.count()?, src.count()?);
        if n == 0 {
            return Ok(());
        }
        check_counts("put", m, n, dst)?;
        if dst.elem_len == 0 {
            // Elements of no bytes (character(len=0)): nothing moves, however many.
            return Ok(());
        }
        if m == n && plain {
            if let Some(p) = pair(src, dst, true)? {
                self.rt.put_strided(
                    &src_buf[p.local_base..],
                    &p.descriptor,
                    token.ga(rank, offset + p.remote_base)?,
                    Handle::NULL,
                )?;
                self.put_issued(rank);
                return Ok(());
            }
        }
        let mut packed = pack(src_buf, src, src_elem, dst_elem, dst.elem_len);
        if m == 1 {
            packed = packed.repeat(n);
        }
        let mut storage = Vec::new();
        let local = dense(dst, dst.elem_len, &mut storage);
        if let Some(p) = pair(&local, dst, true)? {
            self.rt.put_strided(
                &packed[p.local_base..],
                &p.descriptor,
                token.ga(rank, offset + p.remote_base)?,
                Handle::NULL,
            )?;
        } else {
            let at = token.ga(rank, offset + low)?;
            self.rt
                .put_runs(at, &packed, &runs(dst, low), Handle::NULL)?;
        }
        self.put_issued(rank);
        Ok(())
    }

    /// Gets `image`'s section `src` of `token` (at byte `offset`, elements of type
    /// `src_elem`) into `dst_buf` laid out as `dst`, converting element types. Lands
    /// directly in `dst_buf` when the types and shapes match; a source of one element
    /// fills the whole destination.
    ///
    /// ```
    /// use gaspar::coarray::{Coarrays, Dim, Elem, ElemType, Section};
    /// let mut co = Coarrays::init()?;
    /// let a = co.allocate(4 * 6)?; // integer(4) :: a(6)[*]
    /// let i4 = Elem::new(ElemType::Integer, 4);
    /// let all = [Dim { extent: 6, stride: 4 }];
    /// let values: Vec<u8> = (1..=6i32).flat_map(|v| v.to_ne_bytes()).collect();
    /// co.put(&a, 0, 1, &Section { elem_len: 4, start: 0, dims: &all }, i4,
    ///        &values, &Section { elem_len: 4, start: 0, dims: &all }, i4)?;
    /// co.sync_all()?;
    /// // b(:) = a(6:1:-2)[1]
    /// let backwards = [Dim { extent: 3, stride: -8 }];
    /// let dense = [Dim { extent: 3, stride: 4 }];
    /// let mut b = [0u8; 12];
    /// co.get(&a, 0, 1, &Section { elem_len: 4, start: 20, dims: &backwards }, i4,
    ///        &mut b, &Section { elem_len: 4, start: 0, dims: &dense }, i4)?;
    /// let b: Vec<i32> = b.chunks(4).map(|c| i32::from_ne_bytes(c.try_into().unwrap())).collect();
    /// assert_eq!(b, [6, 4, 2]);
    /// co.deallocate(a)?;
    /// co.finalize()?;
    /// # Ok::<(), gaspar::coarray::CoError>(())
    /// ```
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub fn get(
        &mut self,
        token: &Token,
        offset: usize,
        image: Image,
        src: &Section<'_>,
        src_elem: Elem,
        dst_buf: &mut [u8],
        dst: &Section<'_>,
        dst_elem: Elem,
    ) -> CoResult<()> {
        if let (Some((rank, source)), true) = (
            self.scalar_target(token, offset, image, src),
            dst.dims.is_empty(),
        ) {
            let end = dst.start.wrapping_add(dst.elem_len);
            if let Some(into) = dst_buf.get_mut(dst.start..end) {
                if is_plain_copy(src_elem, src.elem_len, dst_elem, dst.elem_len) {
                    self.before_read(rank)?;
                    self.rt.get_located(into, source)?;
                    return Ok(());
                }
                if src.elem_len <= ONE_ELEMENT {
                    return self.get_one_converted(
                        rank,
                        source,
                        src_elem,
                        src.elem_len,
                        into,
                        dst_elem,
                    );
                }
            }
        }
        self.get_run(token, offset, image, src, src_elem, dst_buf, dst, dst_elem)
    }

    /// [`get`](Self::get) past its scalar fast path: one run of one type from a
    /// symmetric coarray straight into the destination, anything else in
    /// [`get_general`](Self::get_general) (see [`put_run`](Self::put_run)).
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn get_run(
        &mut self,
        token: &Token,
        offset: usize,
        image: Image,
        src: &Section<'_>,
        src_elem: Elem,
        dst_buf: &mut [u8],
        dst: &Section<'_>,
        dst_elem: Elem,
    ) -> CoResult<()> {
        if is_plain_copy(src_elem, src.elem_len, dst_elem, dst.elem_len) {
            if let Some(len) = Self::same_run(src, dst) {
                let end = dst.start.checked_add(len);
                let into = end.and_then(|end| dst_buf.get_mut(dst.start..end));
                let source = self.run_target(token, offset, image, src.start, len);
                if let (Some(into), Some((rank, source))) = (into, source) {
                    self.before_read(rank)?;
                    self.rt.get_located(into, source)?;
                    return Ok(());
                }
            }
        }
        self.get_general(token, offset, image, src, src_elem, dst_buf, dst, dst_elem)
    }

    /// The fast path's one element of another type or kind (`n = x[i]`, an integer from
    /// a real coarray): fetched from `source` of `rank` and converted on the stack.
    #[inline(never)]
    fn get_one_converted(
        &mut self,
        rank: u32,
        source: Location,
        src_elem: Elem,
        src_len: usize,
        into: &mut [u8],
        dst_elem: Elem,
    ) -> CoResult<()> {
        check_conversion(src_elem, src_len, dst_elem, into.len())?;
        self.before_read(rank)?;
        let mut one = [0u8; ONE_ELEMENT];
        let one = &mut one[..src_len];
        self.rt.get_located(one, source)?;
        convert(src_elem, one, dst_elem, into);
        Ok(())
    }

    /// [`get`](Self::get) past its fast path (see [`put_general`](Self::put_general)).
    #[allow(clippy::too_many_arguments)]
    #[inline(never)]
    fn get_general(
        &mut self,
        token: &Token,
        offset: usize,
        image: Image,
        src: &Section<'_>,
        src_elem: Elem,
        dst_buf: &mut [u8],
        dst: &Section<'_>,
        dst_elem: Elem,
    ) -> CoResult<()> {
        let rank = self.team.rank_of(image)?;
        self.usable(token)?;
        let low = src.check("get (remote side)", token.after("get", offset)?)?;
        let dst_low = dst.check("get (destination)", dst_buf.len())?;
        if is_plain_copy(src_elem, src.elem_len, dst_elem, dst.elem_len) {
            if let (Some(len), Some(src_len)) = (dst.run_len(), src.run_len()) {
                if len == src_len {
                    // One run, straight into the destination.
                    self.before_read(rank)?;
                    let into = &mut dst_buf[dst_low..dst_low + len];
                    self.rt
                        .get_located(into, token.location(&self.rt, rank, offset + low)?)?;
                    return Ok(());
                }
            }
        }
        if src.elem_len <= ONE_ELEMENT && dst.count()? == 1 && src.count()? == 1 {
            // One element of another kind: fetched and converted on the stack.
            check_conversion(src_elem, src.elem_len, dst_elem, dst.elem_len)?;
            self.before_read(rank)?;
            let mut one = [0u8; ONE_ELEMENT];
            let one = &mut one[..src.elem_len];
            self.rt
                .get_located(one, token.location(&self.rt, rank, offset + low)?)?;
            convert(
                src_elem,
                one,
                dst_elem,
                &mut dst_buf[dst_low..dst_low + dst.elem_len],
            );
            return Ok(());
        }
        self.get_sections(
            token, offset, rank, low, src, src_elem, dst_buf, dst, dst_elem,
        )
    }

    /// [`get`](Self::get) of anything but one contiguous run of one type.
    #[allow(clippy::too_many_arguments)]
    #[inline(never)]
    fn get_sections(
        &mut self,
        token: &Token,
        offset: usize,
        rank: u32,
        low: usize,
        src: &Section<'_>,
        src_elem: Elem,
        dst_buf: &mut [u8],
        dst: &Section<'_>,
        dst_elem: Elem,
    ) -> CoResult<()> {
        let plain = is_plain_copy(src_elem, src.elem_len, dst_elem, dst.elem_len);
        if !plain {
            check_conversion(src_elem, src.elem_len, dst_elem, dst.elem_len)?;
        }
        let (n, m) = (dst.count()?, src.count()?);
        if n == 0 {
            return Ok(());
        }
        check_counts("get", m, n, dst)?;
        if dst.elem_len == 0 {
            // Elements of no bytes (character(len=0)): nothing moves, however many.
            return Ok(());
        }
        self.before_read(rank)?;
        if m == n && plain {
            if let Some(p) = pair(dst, src, false)? {
                self.rt.get_strided(
                    &mut dst_buf[p.local_base..],
                    &p.descriptor,
                    token.ga(rank, offset + p.remote_base)?,
                    Handle::NULL,
                )?;
                return Ok(());
            }
        }
        let mut packed = vec![0u8; m * src.elem_len];
        let mut storage = Vec::new();
        let local = dense(src, src.elem_len, &mut storage);
        if let Some(p) = pair(&local, src, false)? {
            self.rt.get_strided(
                &mut packed[p.local_base..],
                &p.descriptor,
                token.ga(rank, offset + p.remote_base)?,
                Handle::NULL,
            )?;
        } else {
            let at = token.ga(rank, offset + low)?;
            self.rt
                .get_runs(&mut packed, at, &runs(src, low), Handle::NULL)?;
        }
        unpack(&packed, src_elem, src.elem_len, dst_buf, dst, dst_elem);
        Ok(())
    }

    /// `dst_image`'s section `dst` of `dst_token` := `src_image`'s section `src` of
    /// `src_token` (Fortran's `a(..)[j] = b(..)[k]`, issued by a third image): a
    /// third-party copy when both sections are contiguous and of one type, otherwise
    /// through this image. Nonblocking as a put is.
    ///
    /// ```
    /// use gaspar::coarray::{Coarrays, Elem, ElemType, Section};
    /// let mut co = Coarrays::init()?;
    /// let (a, b) = (co.allocate(8)?, co.allocate(8)?);
    /// let i8 = Elem::new(ElemType::Integer, 8);
    /// let one = Section::scalar(8, 0);
    /// co.put(&a, 0, 1, &one, i8, &9i64.to_ne_bytes(), &one, i8)?;
    /// co.sync_all()?;
    /// co.copy(&b, 0, 1, &one, i8, &a, 0, 1, &one, i8)?; // b[1] = a[1]
    /// co.sync_all()?;
    /// let mut x = [0u8; 8];
    /// co.get(&b, 0, 1, &one, i8, &mut x, &one, i8)?;
    /// assert_eq!(i64::from_ne_bytes(x), 9);
    /// co.deallocate(b)?;
    /// co.deallocate(a)?;
    /// co.finalize()?;
    /// # Ok::<(), gaspar::coarray::CoError>(())
    /// ```
    #[allow(clippy::too_many_arguments)]
    pub fn copy(
        &mut self,
        dst_token: &Token,
        dst_offset: usize,
        dst_image: Image,
        dst: &Section<'_>,
        dst_elem: Elem,
        src_token: &Token,
        src_offset: usize,
        src_image: Image,
        src: &Section<'_>,
        src_elem: Elem,
    ) -> CoResult<()> {
        let (drank, srank) = (self.team.rank_of(dst_image)?, self.team.rank_of(src_image)?);
        self.usable(dst_token)?;
        self.usable(src_token)?;
        let dst_low = dst.check("copy (destination)", dst_token.after("copy", dst_offset)?)?;
        let src_low = src.check("copy (source)", src_token.after("copy", src_offset)?)?;
        check_conversion(src_elem, src.elem_len, dst_elem, dst.elem_len)?;
        let (n, m) = (dst.count()?, src.count()?);
        if n == 0 {
            return Ok(());
        }
        check_counts("copy", m, n, dst)?;
        if dst.elem_len == 0 {
            // Elements of no bytes (character(len=0)): nothing moves, however many.
            return Ok(());
        }
        let same_memory = drank == srank && std::ptr::eq(dst_token, src_token);
        if m == n
            && !same_memory
            && is_plain_copy(src_elem, src.elem_len, dst_elem, dst.elem_len)
            && src.is_contiguous()
            && dst.is_contiguous()
        {
            self.before_read(srank)?;
            let bytes = (n * dst.elem_len) as u64;
            self.rt.copy(
                dst_token.ga(drank, dst_offset + dst_low)?,
                src_token.ga(srank, src_offset + src_low)?,
                bytes,
                Handle::NULL,
            )?;
            self.put_issued(drank);
            return Ok(());
        }
        let mut packed = vec![0u8; m * src.elem_len];
        let mut storage = Vec::new();
        let local = dense(src, src.elem_len, &mut storage);
        self.get(
            src_token,
            src_offset,
            src_image,
            src,
            src_elem,
            &mut packed,
            &local,
            src_elem,
        )?;
        let one = [Dim {
            extent: m,
            stride: src.elem_len as isize,
        }];
        let flat = Section {
            elem_len: src.elem_len,
            start: 0,
            dims: &one,
        };
        self.put(
            dst_token, dst_offset, dst_image, dst, dst_elem, &packed, &flat, src_elem,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_merge_where_both_sides_continue() {
        let dims = [
            Dim {
                extent: 2,
                stride: 8,
            },
            Dim {
                extent: 2,
                stride: -64,
            },
        ];
        let s = Section {
            elem_len: 8,
            start: 64,
            dims: &dims,
        };
        let r = runs(&s, 0);
        assert_eq!(
            r,
            [
                Run {
                    local: 0,
                    remote: 64,
                    len: 16
                },
                Run {
                    local: 16,
                    remote: 0,
                    len: 16
                }
            ]
        );
    }
}
