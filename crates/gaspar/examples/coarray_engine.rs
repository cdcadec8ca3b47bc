//! The image program of the coarray engine's multi-image tests: `coarray_engine NAME`,
//! launched through `gaspar run` by `tests/coarray.rs`. Each scenario checks its own
//! values, prints `image I: NAME ok`, and exits non-zero on the first wrong one.

use gaspar::coarray::{
    stat, CoError, CoResult, Coarray, Coarrays, Dim, Elem, ElemType, FetchOp, Images, MemoryMethod,
    Section, Slice, TeamId, TeamLevel, Token,
};

const I1: Elem = Elem::new(ElemType::Integer, 1);
const I4: Elem = Elem::new(ElemType::Integer, 4);
const I8: Elem = Elem::new(ElemType::Integer, 8);
const R8: Elem = Elem::new(ElemType::Real, 8);
const CH1: Elem = Elem::new(ElemType::Character, 1);

fn main() {
    let name = std::env::args().nth(1).unwrap_or_default();
    let mut co = match Coarrays::init() {
        Ok(co) => co,
        Err(e) => fail(&name, &e),
    };
    match name.as_str() {
        "stop-early" => stop_early(co, false),
        "finalize-early" => stop_early(co, true),
        "fail-image" => fail_early(co, false),
        "killed-image" => fail_early(co, true),
        "stop-code" => {
            println!("image {}: stopping", co.this_image());
            co.stop(3)
        }
        "error-stop" => error_stop(co),
        "broadcast-then-stop" => broadcast_then_stop(co),
        "broadcasts-ahead" => broadcasts_ahead(co),
        "typed" => typed(co.into()),
        _ => {}
    }
    let result = match name.as_str() {
        "alloc" => alloc(&mut co),
        "memory" => memory(&mut co),
        "transfer" => transfer(&mut co),
        "sync" => sync(&mut co),
        "atomics" => atomics(&mut co),
        "locks" => locks(&mut co),
        "events" => events(&mut co),
        "collectives" => collectives(&mut co),
        "teams" => teams(&mut co),
        other => {
            eprintln!("unknown scenario {other:?}");
            std::process::exit(2)
        }
    };
    if let Err(e) = result {
        fail(&name, &e);
    }
    println!("image {}: {name} ok", co.this_image());
    if let Err(e) = co.finalize() {
        fail(&name, &e);
    }
}

fn fail(name: &str, e: &CoError) -> ! {
    eprintln!("scenario {name} failed: {e} (stat {})", e.stat());
    std::process::exit(1)
}

/// Fails the scenario with `what` unless `ok`.
fn check(ok: bool, what: impl FnOnce() -> String) -> CoResult<()> {
    if ok {
        Ok(())
    } else {
        Err(CoError::Invalid {
            call: "check",
            reason: what(),
        })
    }
}

/// `(extent, stride in bytes)` pairs as dimensions.
fn dims(pairs: &[(usize, isize)]) -> Vec<Dim> {
    pairs
        .iter()
        .map(|&(extent, stride)| Dim { extent, stride })
        .collect()
}

fn section(elem_len: usize, start: usize, dims: &[Dim]) -> Section<'_> {
    Section {
        elem_len,
        start,
        dims,
    }
}

fn f64_bytes(values: &[f64]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_ne_bytes()).collect()
}

fn f64s(bytes: &[u8]) -> Vec<f64> {
    bytes
        .chunks_exact(8)
        .map(|c| f64::from_ne_bytes(c.try_into().unwrap_or_default()))
        .collect()
}

fn i32s(bytes: &[u8]) -> Vec<i32> {
    bytes
        .chunks_exact(4)
        .map(|c| i32::from_ne_bytes(c.try_into().unwrap_or_default()))
        .collect()
}

/// This image's whole part of `token`, read through the engine.
fn own_part(co: &mut Coarrays, token: &Token) -> CoResult<Vec<u8>> {
    let mut out = vec![0u8; token.len()];
    let whole = dims(&[(token.len(), 1)]);
    let me = co.this_image();
    co.get(
        token,
        0,
        me,
        &section(1, 0, &whole),
        I1,
        &mut out,
        &section(1, 0, &whole),
        I1,
    )?;
    Ok(out)
}

/// Writes `bytes` over this image's part of `token` from byte 0.
fn set_own_part(co: &mut Coarrays, token: &Token, bytes: &[u8]) -> CoResult<()> {
    let whole = dims(&[(bytes.len(), 1)]);
    let me = co.this_image();
    co.put(
        token,
        0,
        me,
        &section(1, 0, &whole),
        I1,
        bytes,
        &section(1, 0, &whole),
        I1,
    )
}

fn alloc(co: &mut Coarrays) -> CoResult<()> {
    let n = co.num_images();
    for bytes in [0usize, 24, 1000, 100_000] {
        let t = co.allocate(bytes)?;
        check(t.len() == bytes && co.len(&t) == bytes, || "len".into())?;
        check(co.local_addr(&t)? % 16 == 0, || "alignment".into())?;
        let part = own_part(co, &t)?;
        check(part.iter().all(|&b| b == 0), || {
            format!("{bytes} bytes not zeroed")
        })?;
        // Dirty it, so a later allocation at the same place must be zeroed again.
        set_own_part(co, &t, &vec![0xAB; bytes])?;
        co.deallocate(t)?;
    }
    // A size that differs on one image: an error on every image, nothing allocated.
    let wanted = if co.this_image() == n { 64 } else { 32 };
    match co.allocate(wanted) {
        Err(e) if n > 1 => check(e.stat() == stat::OTHER_ERROR, || format!("stat {e}"))?,
        Err(e) => return Err(e),
        Ok(t) if n == 1 => co.deallocate(t)?,
        Ok(_) => return check(false, || "mismatched allocate succeeded".into()),
    }
    let t = co.allocate(8)?;
    co.sync_all()?;
    co.deallocate(t)
}

/// The memory method chosen by `GASPAR_COARRAY_MEMORY` is the one in use; a static
/// coarray and memory this image allocated and registered (CA's entry) carry puts and
/// gets, and the registered memory comes back holding what a neighbour wrote.
fn memory(co: &mut Coarrays) -> CoResult<()> {
    let (me, n) = (co.this_image(), co.num_images());
    let (right, left) = (me % n + 1, (me + n - 2) % n + 1);
    let wanted = std::env::var("GASPAR_COARRAY_MEMORY").unwrap_or_else(|_| "rs".into());
    check(
        MemoryMethod::parse(&wanted) == Some(co.memory_method()),
        || format!("method {:?} for {wanted:?}", co.memory_method()),
    )?;
    let s = co.allocate_static(64)?;
    check(own_part(co, &s)? == vec![0; 64], || {
        "static not zeroed".into()
    })?;
    co.sync_all()?;
    let whole = dims(&[(64, 1)]);
    co.put(
        &s,
        0,
        right,
        &section(1, 0, &whole),
        I1,
        &[me as u8; 64],
        &section(1, 0, &whole),
        I1,
    )?;
    co.sync_all()?;
    check(own_part(co, &s)? == vec![left as u8; 64], || {
        "static put".into()
    })?;
    co.deallocate(s)?;

    let mine = vec![u128::from(me); 4].into_boxed_slice();
    let r = co.register(mine)?;
    check(r.len() == 64, || format!("registered length {}", r.len()))?;
    let mut theirs = [0u8; 16];
    let one = dims(&[(16, 1)]);
    co.get(
        &r,
        16,
        right,
        &section(1, 0, &one),
        I1,
        &mut theirs,
        &section(1, 0, &one),
        I1,
    )?;
    check(u128::from_ne_bytes(theirs) == u128::from(right), || {
        "registered get".into()
    })?;
    co.sync_all()?;
    co.put(
        &r,
        0,
        right,
        &section(1, 0, &one),
        I1,
        &(u128::from(me) * 100).to_ne_bytes(),
        &section(1, 0, &one),
        I1,
    )?;
    co.sync_all()?;
    let back = co.deregister(r)?;
    check(
        back[0] == u128::from(left) * 100 && back[1..].iter().all(|&w| w == u128::from(me)),
        || format!("registered memory came back as {back:?}"),
    )?;
    // A length that differs on one image: an error on every image.
    let words = if me == n { 2 } else { 1 };
    match co.register(vec![0u128; words].into_boxed_slice()) {
        Err(e) if n > 1 => check(e.stat() == stat::OTHER_ERROR, || format!("stat {e}")),
        Err(e) => Err(e),
        Ok(t) if n == 1 => co.deregister(t).map(drop),
        Ok(_) => check(false, || "mismatched register succeeded".into()),
    }
}

fn transfer(co: &mut Coarrays) -> CoResult<()> {
    let (me, n) = (co.this_image(), co.num_images());
    let right = me % n + 1;
    let left = (me + n - 2) % n + 1;
    // real(8) :: a(10)[*]
    let a = co.allocate(80)?;
    // a(1:10:3)[right] = [me*100 + 1 .. me*100 + 4]
    let src: Vec<f64> = (1..=4).map(|k| f64::from(me * 100 + k)).collect();
    let dense4 = dims(&[(4, 8)]);
    let step3 = dims(&[(4, 24)]);
    co.put(
        &a,
        0,
        right,
        &section(8, 0, &step3),
        R8,
        &f64_bytes(&src),
        &section(8, 0, &dense4),
        R8,
    )?;
    // A get right after the put, before any sync, sees it (flow dependency).
    let mut back = vec![0u8; 32];
    co.get(
        &a,
        0,
        right,
        &section(8, 0, &step3),
        R8,
        &mut back,
        &section(8, 0, &dense4),
        R8,
    )?;
    check(f64s(&back) == src, || {
        format!("get after put: {:?}", f64s(&back))
    })?;
    co.sync_all()?;
    let mine = f64s(&own_part(co, &a)?);
    let from = f64::from(left * 100);
    let expected = [
        from + 1.0,
        0.0,
        0.0,
        from + 2.0,
        0.0,
        0.0,
        from + 3.0,
        0.0,
        0.0,
        from + 4.0,
    ];
    check(mine == expected, || format!("strided put: {mine:?}"))?;
    co.sync_all()?;

    // a(10:1:-2)[right] = [1,2,3,4,5]: negative stride on the remote side.
    let five: Vec<f64> = (1..=5).map(f64::from).collect();
    let backwards = dims(&[(5, -16)]);
    let dense5 = dims(&[(5, 8)]);
    co.put(
        &a,
        0,
        right,
        &section(8, 72, &backwards),
        R8,
        &f64_bytes(&five),
        &section(8, 0, &dense5),
        R8,
    )?;
    co.sync_all()?;
    let mine = f64s(&own_part(co, &a)?);
    check(
        [mine[9], mine[7], mine[5], mine[3], mine[1]] == [1.0, 2.0, 3.0, 4.0, 5.0],
        || format!("negative stride put: {mine:?}"),
    )?;
    co.sync_all()?;
    // local(5:1:-1) = a(2:10:2)[left]: negative stride on the local side.
    let mut local = vec![0u8; 40];
    let forward = dims(&[(5, 16)]);
    let local_back = dims(&[(5, -8)]);
    co.get(
        &a,
        0,
        left,
        &section(8, 8, &forward),
        R8,
        &mut local,
        &section(8, 32, &local_back),
        R8,
    )?;
    check(f64s(&local) == [1.0, 2.0, 3.0, 4.0, 5.0], || {
        format!("negative local: {:?}", f64s(&local))
    })?;
    co.sync_all()?;
    // Conversion: integer(4) values into the real(8) coarray, read back as integer(8).
    let ints: Vec<u8> = [7i32, -8, 9, -10, 11]
        .iter()
        .flat_map(|v| v.to_ne_bytes())
        .collect();
    let dense5_4 = dims(&[(5, 4)]);
    co.put(
        &a,
        0,
        right,
        &section(8, 0, &dense5),
        R8,
        &ints,
        &section(4, 0, &dense5_4),
        I4,
    )?;
    let mut wide = vec![0u8; 40];
    co.get(
        &a,
        0,
        right,
        &section(8, 0, &dense5),
        R8,
        &mut wide,
        &section(8, 0, &dense5),
        I8,
    )?;
    let wide: Vec<i64> = wide
        .chunks_exact(8)
        .map(|c| i64::from_ne_bytes(c.try_into().unwrap_or_default()))
        .collect();
    check(wide == [7, -8, 9, -10, 11], || {
        format!("conversion: {wide:?}")
    })?;
    // A scalar fills a section: a(6:10)[right] = 2.5.
    co.put(
        &a,
        0,
        right,
        &section(8, 40, &dense5),
        R8,
        &2.5f64.to_ne_bytes(),
        &section(8, 0, &[]),
        R8,
    )?;
    co.sync_all()?;
    let mine = f64s(&own_part(co, &a)?);
    check(
        mine[..5] == [7.0, -8.0, 9.0, -10.0, 11.0] && mine[5..] == [2.5; 5],
        || format!("scalar fill: {mine:?}"),
    )?;
    co.sync_all()?;

    // integer(4) :: b(4,5)[*]; b(2:3, 1:5:2)[right] = reshape(me*10 + 1..6, [2,3])
    let b = co.allocate(4 * 20)?;
    let src: Vec<u8> = (1..=6)
        .flat_map(|k| (me as i32 * 10 + k).to_ne_bytes())
        .collect();
    let remote = dims(&[(2, 4), (3, 32)]);
    let dense23 = dims(&[(2, 4), (3, 8)]);
    co.put(
        &b,
        0,
        right,
        &section(4, 4, &remote),
        I4,
        &src,
        &section(4, 0, &dense23),
        I4,
    )?;
    co.sync_all()?;
    let mine = i32s(&own_part(co, &b)?);
    let l = left as i32 * 10;
    let mut expected = [0i32; 20];
    for (k, (i, j)) in [(1, 0), (2, 0), (1, 2), (2, 2), (1, 4), (2, 4)]
        .into_iter()
        .enumerate()
    {
        expected[i + 4 * j] = l + k as i32 + 1;
    }
    check(mine == expected, || format!("2-d section: {mine:?}"))?;
    // A column lands directly in the destination: col = b(:, 3)[me].
    let mut col = vec![0u8; 16];
    let column = dims(&[(4, 4)]);
    co.get(
        &b,
        0,
        me,
        &section(4, 32, &column),
        I4,
        &mut col,
        &section(4, 0, &column),
        I4,
    )?;
    check(i32s(&col) == [0, l + 3, l + 4, 0], || {
        format!("column: {:?}", i32s(&col))
    })?;
    co.sync_all()?;

    // Third party: b(:, 1)[right] = b(:, 3)[left] issued by this image... one image at a
    // time, so the copies do not race: image 1 copies, the others check.
    if me == 1 {
        co.copy(
            &b,
            0,
            right,
            &section(4, 0, &column),
            I4,
            &b,
            32,
            left,
            &section(4, 0, &column),
            I4,
        )?;
        // Through this image: a strided source, converted.
        let every_other = dims(&[(2, 8)]);
        co.copy(
            &a,
            0,
            right,
            &section(8, 0, &dims(&[(2, 8)])),
            R8,
            &b,
            4,
            left,
            &section(4, 0, &every_other),
            I4,
        )?;
    }
    co.sync_all()?;
    if me == 1 {
        let mut copied = vec![0u8; 16];
        let mut original = vec![0u8; 16];
        co.get(
            &b,
            0,
            right,
            &section(4, 0, &column),
            I4,
            &mut copied,
            &section(4, 0, &column),
            I4,
        )?;
        co.get(
            &b,
            32,
            left,
            &section(4, 0, &column),
            I4,
            &mut original,
            &section(4, 0, &column),
            I4,
        )?;
        check(copied == original, || "third-party copy".into())?;
        let mut converted = vec![0u8; 16];
        co.get(
            &a,
            0,
            right,
            &section(8, 0, &dims(&[(2, 8)])),
            R8,
            &mut converted,
            &section(8, 0, &dims(&[(2, 8)])),
            R8,
        )?;
        let mut ints = vec![0u8; 8];
        co.get(
            &b,
            4,
            left,
            &section(4, 0, &dims(&[(2, 8)])),
            I4,
            &mut ints,
            &section(4, 0, &dims(&[(2, 4)])),
            I4,
        )?;
        let as_reals: Vec<f64> = i32s(&ints).into_iter().map(f64::from).collect();
        check(f64s(&converted) == as_reals, || {
            format!("converted copy {:?}", f64s(&converted))
        })?;
    }
    co.sync_all()?;
    // Character assignment with blank padding: c(1:4)[right] = "ab".
    let c = co.allocate(4)?;
    co.put(
        &c,
        0,
        right,
        &section(4, 0, &[]),
        CH1,
        b"ab",
        &section(2, 0, &[]),
        CH1,
    )?;
    co.sync_all()?;
    check(own_part(co, &c)? == b"ab  ", || "character padding".into())?;

    // 15 dimensions of extent 2 (integer(1)): put the whole section, read it back.
    let big = co.allocate(1 << 15)?;
    let all15: Vec<Dim> = (0..15)
        .map(|k| Dim {
            extent: 2,
            stride: 1 << k,
        })
        .collect();
    let pattern: Vec<u8> = (0..1usize << 15)
        .map(|k| (k * 7 + me as usize) as u8)
        .collect();
    co.put(
        &big,
        0,
        right,
        &section(1, 0, &all15),
        I1,
        &pattern,
        &section(1, 0, &all15),
        I1,
    )?;
    co.sync_all()?;
    let got = own_part(co, &big)?;
    check(
        got.iter()
            .enumerate()
            .all(|(k, &v)| v == (k * 7 + left as usize) as u8),
        || "15 dims".into(),
    )?;

    // Errors: images out of range, a section past the end of the coarray.
    for bad in [0, n + 1] {
        let e = co.get(
            &a,
            0,
            bad,
            &section(8, 0, &dense4),
            R8,
            &mut back,
            &section(8, 0, &dense4),
            R8,
        );
        check(matches!(e, Err(CoError::ImageOutOfRange { .. })), || {
            format!("image {bad}: {e:?}")
        })?;
    }
    let e = co.get(
        &a,
        48,
        right,
        &section(8, 0, &dense5),
        R8,
        &mut local,
        &section(8, 0, &dense5),
        R8,
    );
    check(
        matches!(&e, Err(err) if err.stat() == stat::OTHER_ERROR),
        || format!("past the end: {e:?}"),
    )?;
    co.sync_all()?;
    for t in [a, b, c, big] {
        co.deallocate(t)?;
    }
    Ok(())
}

/// Puts k into `x[right]`, syncs with both neighbours, checks `x == k`, syncs again: the
/// counted signals keep every round apart (the second sync stops the next put from
/// overtaking a read).
fn sync(co: &mut Coarrays) -> CoResult<()> {
    let (me, n) = (co.this_image(), co.num_images());
    let right = me % n + 1;
    let left = (me + n - 2) % n + 1;
    let x = co.allocate(8)?;
    let scalar = section(8, 0, &[]);
    for k in 1..=200u64 {
        co.put(&x, 0, right, &scalar, I8, &k.to_ne_bytes(), &scalar, I8)?;
        co.sync_images(Some(&distinct(&[left, right])))?;
        let got = u64::from_ne_bytes(own_part(co, &x)?.try_into().unwrap_or_default());
        check(got == k, || format!("round {k}: x = {got}"))?;
        if k % 2 == 0 {
            co.sync_images(None)?;
        } else {
            co.sync_images(Some(&distinct(&[right, left, me])))?;
        }
    }
    co.sync_memory()?;
    if n >= 2 {
        let e = co.sync_images(Some(&[right, right]));
        check(matches!(e, Err(CoError::Invalid { .. })), || {
            format!("duplicate: {e:?}")
        })?;
    }
    co.sync_images(Some(&[me]))?;
    co.sync_all()?;
    co.deallocate(x)
}

/// The images of `list`, each once (a sync images list may not repeat one).
fn distinct(list: &[u32]) -> Vec<u32> {
    let mut out = list.to_vec();
    out.sort_unstable();
    out.dedup();
    out
}

fn atomics(co: &mut Coarrays) -> CoResult<()> {
    let (me, n) = (co.this_image(), co.num_images());
    // integer(8) :: counter, integer(4) :: small, bits (8 bytes each)
    let t = co.allocate(24)?;
    for _ in 0..500 {
        co.atomic_fetch(FetchOp::Add, &t, 0, 1, 8, 1)?;
        co.atomic_fetch(FetchOp::Add, &t, 8, 1, 4, u64::from(u32::MAX))?; // -1
    }
    co.atomic_fetch(FetchOp::Or, &t, 16, 1, 8, 1 << me)?;
    co.sync_all()?;
    let total = co.atomic_ref(&t, 0, 1, 8)?;
    check(total == 500 * u64::from(n), || format!("add: {total}"))?;
    let small = co.atomic_ref(&t, 8, 1, 4)? as u32 as i32;
    check(small == -500 * n as i32, || format!("4-byte add: {small}"))?;
    let bits = co.atomic_ref(&t, 16, 1, 8)?;
    check(bits == ((1u64 << (n + 1)) - 2), || format!("or: {bits:#x}"))?;
    co.sync_all()?;
    // Every image clears its bit with xor, then one CAS wins per value.
    co.atomic_fetch(FetchOp::Xor, &t, 16, 1, 8, 1 << me)?;
    co.sync_all()?;
    check(co.atomic_ref(&t, 16, 1, 8)? == 0, || "xor".into())?;
    co.sync_all()?;
    let old = co.atomic_cas(&t, 16, 1, 8, 0, u64::from(me))?;
    co.sync_all()?;
    let winner = co.atomic_ref(&t, 16, 1, 8)?;
    check((1..=u64::from(n)).contains(&winner), || {
        format!("cas winner {winner}")
    })?;
    check((old == 0) == (winner == u64::from(me)), || {
        format!("cas old {old}")
    })?;
    co.sync_all()?;
    if me == 1 {
        co.atomic_define(&t, 16, n, 8, 0xFFFF)?;
        let kept = co.atomic_fetch(FetchOp::And, &t, 16, n, 8, 0xF0F0)?;
        check(kept == 0xFFFF, || "fetch and".into())?;
    }
    co.sync_all()?;
    check(co.atomic_ref(&t, 16, n, 8)? == 0xF0F0, || "and".into())?;
    let e = co.atomic_ref(&t, 3, 1, 8);
    check(e.is_err(), || "misaligned atomic accepted".into())?;
    let e = co.atomic_ref(&t, 0, 1, 2);
    check(e.is_err(), || "2-byte atomic accepted".into())?;
    co.sync_all()?;
    co.deallocate(t)
}

fn locks(co: &mut Coarrays) -> CoResult<()> {
    let (me, n) = (co.this_image(), co.num_images());
    let l = co.allocate_locks(2)?;
    let counter = co.allocate(8)?;
    let scalar = section(8, 0, &[]);
    for _ in 0..100 {
        check(co.lock(&l, 0, 1, false)?, || "lock not acquired".into())?;
        let mut v = [0u8; 8];
        co.get(&counter, 0, 1, &scalar, I8, &mut v, &scalar, I8)?;
        let next = u64::from_ne_bytes(v) + 1;
        co.put(
            &counter,
            0,
            1,
            &scalar,
            I8,
            &next.to_ne_bytes(),
            &scalar,
            I8,
        )?;
        co.unlock(&l, 0, 1)?;
    }
    co.sync_all()?;
    let mut v = [0u8; 8];
    co.get(&counter, 0, 1, &scalar, I8, &mut v, &scalar, I8)?;
    check(u64::from_ne_bytes(v) == 100 * u64::from(n), || {
        format!("counter {}", u64::from_ne_bytes(v))
    })?;
    // The stat codes: locked twice, unlocked twice, another image's lock.
    if me == 1 {
        check(co.lock(&l, 1, n, false)?, || "lock".into())?;
        let e = co.lock(&l, 1, n, false).unwrap_err();
        check(e.stat() == stat::LOCKED, || format!("{e}"))?;
        check(co.lock(&l, 1, n, true).is_err(), || {
            "try-lock of own lock".into()
        })?;
    }
    co.sync_all()?;
    if me == n && n > 1 {
        check(!co.lock(&l, 1, n, true)?, || {
            "try-lock of a held lock acquired it".into()
        })?;
        let e = co.unlock(&l, 1, n).unwrap_err();
        check(
            matches!(e, CoError::LockedOtherImage { holder: 1 })
                && e.stat() == stat::LOCKED_OTHER_IMAGE,
            || format!("{e}"),
        )?;
    }
    co.sync_all()?;
    if me == 1 {
        co.unlock(&l, 1, n)?;
        let e = co.unlock(&l, 1, n).unwrap_err();
        check(e.stat() == stat::UNLOCKED, || format!("{e}"))?;
    }
    let e = co.lock(&l, 2, 1, false);
    check(e.is_err(), || "index past the locks".into())?;
    co.sync_all()?;
    co.deallocate(counter)?;
    co.deallocate(l)
}

/// Producer/consumer: every image sends 50 values to image 1, each announced by an event
/// post; image 1 waits for them in rounds.
fn events(co: &mut Coarrays) -> CoResult<()> {
    let (me, n) = (co.this_image(), co.num_images());
    let ev = co.allocate_events(2)?;
    // slot(image) on image 1: the last value each image sent.
    let slots = co.allocate(8 * n as usize)?;
    let scalar = section(8, 0, &[]);
    const ROUNDS: u64 = 50;
    for k in 1..=ROUNDS {
        if me != 1 {
            co.put(
                &slots,
                8 * (me as usize - 1),
                1,
                &scalar,
                I8,
                &k.to_ne_bytes(),
                &scalar,
                I8,
            )?;
            co.event_post(&ev, 0, 1)?;
            // Wait until image 1 consumed this round before overwriting the slot.
            co.event_wait(&ev, 1, 1)?;
        } else if n > 1 {
            co.event_wait(&ev, 0, u64::from(n - 1))?;
            let part = own_part(co, &slots)?;
            for (image, v) in part.chunks_exact(8).enumerate().skip(1) {
                let v = u64::from_ne_bytes(v.try_into().unwrap_or_default());
                check(v == k, || {
                    format!("round {k}: image {} sent {v}", image + 1)
                })?;
            }
            for image in 2..=n {
                co.event_post(&ev, 1, image)?;
            }
        }
    }
    co.sync_all()?;
    check(
        co.event_query(&ev, 0, me)? == 0 && co.event_query(&ev, 1, me)? == 0,
        || "counts left".into(),
    )?;
    co.event_post(&ev, 0, me)?;
    co.event_post(&ev, 0, me)?;
    check(co.event_query(&ev, 0, me)? == 2, || "query".into())?;
    co.event_wait(&ev, 0, 0)?;
    check(co.event_query(&ev, 0, me)? == 1, || {
        "wait without until_count takes one".into()
    })?;
    co.event_wait(&ev, 0, 1)?;
    co.sync_all()?;
    co.deallocate(slots)?;
    co.deallocate(ev)
}

/// A 2x2 integer matrix product, `acc := acc * other`: associative, not commutative.
fn matrix_product(acc: &mut [u8], other: &[u8]) {
    let m = |b: &[u8]| -> Vec<i64> {
        b.chunks_exact(8)
            .map(|c| i64::from_ne_bytes(c.try_into().unwrap_or_default()))
            .collect()
    };
    let (a, b) = (m(acc), m(other));
    let product = [
        a[0] * b[0] + a[1] * b[2],
        a[0] * b[1] + a[1] * b[3],
        a[2] * b[0] + a[3] * b[2],
        a[2] * b[1] + a[3] * b[3],
    ];
    acc.copy_from_slice(
        &product
            .iter()
            .flat_map(|v| v.to_ne_bytes())
            .collect::<Vec<u8>>(),
    );
}

fn collectives(co: &mut Coarrays) -> CoResult<()> {
    let (me, n) = (co.this_image(), co.num_images());
    let images = 1..=n;
    // co_sum of real(8) :: x(1000) on every image, twice: the same bits.
    let values: Vec<f64> = (0..1000)
        .map(|k| 0.1 * f64::from(me) + f64::from(k))
        .collect();
    let mut first = f64_bytes(&values);
    co.co_sum(&mut first, R8, 8, None)?;
    let mut second = f64_bytes(&values);
    co.co_sum(&mut second, R8, 8, None)?;
    check(first == second, || {
        "co_sum of reals differs between runs".into()
    })?;
    let sums = f64s(&first);
    let tenths: f64 = images.clone().map(|i| 0.1 * f64::from(i)).sum();
    check(
        sums.iter()
            .enumerate()
            .all(|(k, &s)| (s - (tenths + f64::from(n) * k as f64)).abs() < 1e-9),
        || format!("co_sum reals: {:?}", &sums[..3]),
    )?;
    // co_sum of integer(4) to image 1 only.
    let mut ints: Vec<u8> = [me as i32, -(me as i32)]
        .iter()
        .flat_map(|v| v.to_ne_bytes())
        .collect();
    co.co_sum(&mut ints, I4, 4, Some(1))?;
    let total = (n * (n + 1) / 2) as i32;
    if me == 1 {
        check(i32s(&ints) == [total, -total], || {
            format!("co_sum to image 1: {:?}", i32s(&ints))
        })?;
    }
    // co_min / co_max of integer(8) and real(4).
    let mut v = (i64::from(me) * 10 - 15).to_ne_bytes();
    co.co_min(&mut v, I8, 8, None)?;
    check(i64::from_ne_bytes(v) == -5, || "co_min".into())?;
    let mut r = (f32::from(me as u8) * -0.5).to_ne_bytes();
    co.co_max(&mut r, Elem::new(ElemType::Real, 4), 4, None)?;
    check(f32::from_ne_bytes(r) == -0.5, || "co_max real".into())?;
    // integer(16), complex(8) and character through the byte path.
    let mut big = (i128::from(me) << 80).to_ne_bytes();
    co.co_sum(&mut big, Elem::new(ElemType::Integer, 16), 16, None)?;
    check(i128::from_ne_bytes(big) == i128::from(total) << 80, || {
        "co_sum integer(16)".into()
    })?;
    let mut z = f64_bytes(&[f64::from(me), -1.0]);
    co.co_sum(&mut z, Elem::new(ElemType::Complex, 8), 16, Some(n))?;
    if me == n {
        check(f64s(&z) == [f64::from(total), -f64::from(n)], || {
            "co_sum complex".into()
        })?;
    }
    let mut word = [b'a' + me as u8, b'z' - me as u8, b'x'];
    co.co_max(&mut word, CH1, 3, None)?;
    check(word == [b'a' + n as u8, b'z' - n as u8, b'x'], || {
        "co_max character".into()
    })?;
    // co_broadcast from the last image.
    let mut data = vec![me as u8; 100];
    co.co_broadcast(&mut data, n)?;
    check(data.iter().all(|&b| b == n as u8), || "co_broadcast".into())?;
    // Many in a row from one image, which runs ahead of the others (one way) only as far
    // as flow control lets it: every value arrives, in order.
    for k in 0..200u8 {
        let mut value = [if me == 1 { k } else { 0 }];
        co.co_broadcast(&mut value, 1)?;
        check(value == [k], || {
            format!("co_broadcast number {k} gave {value:?}")
        })?;
    }
    // co_reduce with a non-commutative operation: the product in image order.
    let mine = [1i64, i64::from(me), 0, 1];
    let mut m: Vec<u8> = mine.iter().flat_map(|v| v.to_ne_bytes()).collect();
    co.co_reduce(&mut m, 32, &mut matrix_product, None)?;
    let mut expected: Vec<u8> = [1i64, 0, 0, 1]
        .iter()
        .flat_map(|v| v.to_ne_bytes())
        .collect();
    for i in images {
        let factor: Vec<u8> = [1i64, i64::from(i), 0, 1]
            .iter()
            .flat_map(|v| v.to_ne_bytes())
            .collect();
        matrix_product(&mut expected, &factor);
    }
    check(m == expected, || "co_reduce".into())?;
    // Errors: no sum of logicals, an image out of range.
    let mut l = [1u8; 4];
    check(
        co.co_sum(&mut l, Elem::new(ElemType::Logical, 4), 4, None)
            .is_err(),
        || "co_sum logical".into(),
    )?;
    check(
        matches!(
            co.co_broadcast(&mut l, n + 1),
            Err(CoError::ImageOutOfRange { .. })
        ),
        || "co_broadcast image".into(),
    )?;
    // A co_broadcast whose length differs on the other images: each of them gets the
    // error. The source image, which sends one way, need not learn of it (where the
    // transport agrees first it does); the images go on together.
    if n > 1 {
        let mut mismatched = vec![me as u8; if me == 1 { 8 } else { 16 }];
        let result = co.co_broadcast(&mut mismatched, 1);
        let reported = matches!(&result, Err(e) if e.stat() == stat::OTHER_ERROR);
        check(reported || (me == 1 && result.is_ok()), || {
            format!("mismatched co_broadcast gave {result:?}")
        })?;
        let mut after = [me as u8; 3];
        co.co_broadcast(&mut after, 1)?;
        check(after == [1; 3], || "co_broadcast after a mismatch".into())?;
    }
    co.sync_all()
}

/// Odd and even images form two teams; inside them image numbers, sync, transfers and
/// collectives are the team's. Then all images form one team numbered backwards.
fn teams(co: &mut Coarrays) -> CoResult<()> {
    let (me, n) = (co.this_image(), co.num_images());
    let x = co.allocate(8)?;
    let scalar = section(8, 0, &[]);
    set_own_part(co, &x, &u64::from(me).to_ne_bytes())?;
    co.sync_all()?;
    let number = i64::from(2 - me % 2); // 1: odd images, 2: even images
    let parity = co.form_team(number, None)?;
    check(
        co.team_number(None)? == -1 && co.team_number(Some(parity))? == number,
        || "team_number".into(),
    )?;
    co.change_team(parity)?;
    let (tme, tn) = (co.this_image(), co.num_images());
    let members: Vec<u32> = (1..=n).filter(|i| i % 2 == me % 2).collect();
    check(
        tn as usize == members.len() && members[tme as usize - 1] == me,
        || format!("team image {tme} of {tn}"),
    )?;
    check(co.team_number(None)? == number, || {
        "current team_number".into()
    })?;
    check(co.get_team(TeamLevel::Parent) == TeamId::INITIAL, || {
        "parent".into()
    })?;
    // Team image 1's x holds its initial-team image number.
    let mut v = [0u8; 8];
    co.get(&x, 0, 1, &scalar, I8, &mut v, &scalar, I8)?;
    check(u64::from_ne_bytes(v) == u64::from(members[0]), || {
        format!("get in team: {}", u64::from_ne_bytes(v))
    })?;
    let mut sum = u64::from(me).to_ne_bytes();
    co.co_sum(&mut sum, I8, 8, None)?;
    let expected: u64 = members.iter().map(|&i| u64::from(i)).sum();
    check(u64::from_ne_bytes(sum) == expected, || {
        "co_sum in team".into()
    })?;
    co.sync_images(None)?;
    // A coarray allocated inside the team: slot(i) on team image 1 gets team image i's
    // initial-team number.
    let slots = co.allocate(8 * tn as usize)?;
    check(own_part(co, &slots)? == vec![0; 8 * tn as usize], || {
        "zeroed in team".into()
    })?;
    co.sync_all()?;
    co.put(
        &slots,
        8 * (tme as usize - 1),
        1,
        &scalar,
        I8,
        &u64::from(me).to_ne_bytes(),
        &scalar,
        I8,
    )?;
    co.sync_all()?;
    if tme == 1 {
        let got: Vec<u64> = own_part(co, &slots)?
            .chunks_exact(8)
            .map(|c| u64::from_ne_bytes(c.try_into().unwrap_or_default()))
            .collect();
        let expected: Vec<u64> = members.iter().map(|&i| u64::from(i)).collect();
        check(got == expected, || format!("slots {got:?}"))?;
    }
    co.sync_all()?;
    co.deallocate(slots)?;
    // One left allocated: END TEAM frees it.
    let left = co.allocate(16)?;
    co.end_team()?;
    let e = co.get(&left, 0, me, &scalar, I8, &mut v, &scalar, I8);
    check(e.is_err(), || {
        "a coarray freed at end team still reachable".into()
    })?;
    let e = co.allocate(8).and_then(|t| co.deallocate(t));
    check(e.is_ok(), || format!("allocate after end team: {e:?}"))?;
    check(co.this_image() == me && co.num_images() == n, || {
        "after end team".into()
    })?;
    co.sync_team(parity)?;
    // Everybody, numbered backwards.
    let backwards = co.form_team(7, Some(n - me + 1))?;
    co.change_team(backwards)?;
    check(co.this_image() == n - me + 1, || {
        format!("new_index: image {}", co.this_image())
    })?;
    let mut first = [me as u8];
    co.co_broadcast(&mut first, 1)?;
    check(first == [n as u8], || {
        "broadcast from the new image 1".into()
    })?;
    co.end_team()?;
    check(co.end_team().is_err(), || {
        "end team outside change team".into()
    })?;
    check(co.form_team(0, None).is_err(), || "team number 0".into())?;
    co.sync_all()?;
    co.deallocate(x)
}

/// Image 1 makes 100 co_broadcasts of one value, then posts an event to every other
/// image, which receives the broadcasts only after it has waited for that event: so on
/// `shm`, where a small broadcast goes one way in notes, the source runs 100 calls ahead
/// of images that are not there yet (a hang, ended by the test's timeout, otherwise), as
/// MPI's eager messages let a root of MPI_Bcast.
fn broadcasts_ahead(mut co: Coarrays) -> ! {
    let name = "broadcasts-ahead";
    let result = (|| {
        let (me, n) = (co.this_image(), co.num_images());
        let go = co.allocate_events(1)?;
        co.sync_all()?;
        if me != 1 {
            co.event_wait(&go, 0, 1)?;
        }
        for k in 0..100u8 {
            let mut value = [if me == 1 { k } else { 0 }; 8];
            co.co_broadcast(&mut value, 1)?;
            check(value == [k; 8], || {
                format!("co_broadcast number {k} gave {value:?}")
            })?;
        }
        if me == 1 {
            for image in 2..=n {
                co.event_post(&go, 0, image)?;
            }
        }
        co.sync_all()?;
        co.deallocate(go)
    })();
    let me = co.this_image();
    match result.and_then(|()| co.finalize()) {
        Ok(()) => {
            println!("image {me}: {name} ok");
            std::process::exit(0)
        }
        Err(e) => fail(name, &e),
    }
}

/// The last image broadcasts two values and stops at once, most often before the others
/// (busy with syncs among themselves first) reach their co_broadcast: the source leaves
/// without waiting for them, but announces its stop only once they have taken in its
/// values, so every image gets both and none finds the source stopped.
fn broadcast_then_stop(mut co: Coarrays) -> ! {
    let (me, n) = (co.this_image(), co.num_images());
    let name = "broadcast-then-stop";
    let mut broadcasts = || -> CoResult<()> {
        if me != n {
            let receivers: Vec<u32> = (1..n).collect();
            for _ in 0..500 {
                co.sync_images(Some(&receivers))?;
            }
        }
        for k in 0..2u64 {
            let mut value = if me == n { 1000 + k } else { 0 }.to_ne_bytes();
            co.co_broadcast(&mut value, n)?;
            let got = u64::from_ne_bytes(value);
            check(got == 1000 + k, || {
                format!("co_broadcast number {k} gave {got}")
            })?;
        }
        Ok(())
    };
    if let Err(e) = broadcasts() {
        fail(name, &e);
    }
    println!("image {me}: {name} ok");
    co.stop(0)
}

/// The last image stops at once; the others find it stopped in sync images, in
/// image_status and stopped_images, go on among themselves, then stop.
fn stop_early(mut co: Coarrays, by_finalize: bool) -> ! {
    let (me, n) = (co.this_image(), co.num_images());
    let name = if by_finalize {
        "finalize-early"
    } else {
        "stop-early"
    };
    if me == n {
        println!("image {me}: {name} ok");
        if !by_finalize {
            co.stop(0)
        }
        if let Err(e) = co.finalize() {
            fail(name, &e);
        }
        std::process::exit(0)
    }
    if let Err(e) = survive_a_stopped_image(&mut co) {
        fail(name, &e);
    }
    println!("image {me}: {name} ok");
    co.stop(0)
}

fn survive_a_stopped_image(co: &mut Coarrays) -> CoResult<()> {
    let (me, n) = (co.this_image(), co.num_images());
    let e = co.sync_images(Some(&[n])).unwrap_err();
    check(
        matches!(e, CoError::StoppedImage { .. }) && e.stat() == stat::STOPPED_IMAGE,
        || format!("{e}"),
    )?;
    check(co.image_status(n)? == stat::STOPPED_IMAGE, || {
        "image_status".into()
    })?;
    check(
        co.stopped_images() == [n] && co.failed_images().is_empty(),
        || "stopped_images".into(),
    )?;
    check(co.image_status(me)? == 0, || "own status".into())?;
    let others: Vec<u32> = (1..n).collect();
    co.sync_images(Some(&others))?;
    let e = co.sync_all().unwrap_err();
    check(e.stat() == stat::STOPPED_IMAGE, || format!("sync all: {e}"))?;
    let mut x = 1.0f64.to_ne_bytes();
    let e = co.co_sum(&mut x, R8, 8, None).unwrap_err();
    check(e.stat() == stat::STOPPED_IMAGE, || format!("co_sum: {e}"))?;
    let e = co.allocate(8).unwrap_err();
    check(e.stat() == stat::STOPPED_IMAGE, || format!("allocate: {e}"))?;
    co.sync_images(Some(&others))
}

/// The last image fails (`fail image`, or its process is killed by SIGABRT); the others
/// see it failed in sync images, sync all, image_status and failed_images, still
/// synchronize among themselves, and stop.
fn fail_early(mut co: Coarrays, killed: bool) -> ! {
    let (me, n) = (co.this_image(), co.num_images());
    let name = if killed { "killed-image" } else { "fail-image" };
    let (x, ev) = match co.allocate(8).and_then(|x| Ok((x, co.allocate_events(1)?))) {
        Ok(tokens) => tokens,
        Err(e) => fail(name, &e),
    };
    if let Err(e) = co.sync_all() {
        fail(name, &e);
    }
    if me == n {
        println!("image {me}: {name} ok");
        if killed {
            std::process::abort()
        }
        co.fail_image()
    }
    if let Err(e) = survive_a_failed_image(&mut co, &x, &ev) {
        fail(name, &e);
    }
    println!("image {me}: {name} ok");
    co.stop(0)
}

fn survive_a_failed_image(co: &mut Coarrays, x: &Token, ev: &Token) -> CoResult<()> {
    let (me, n) = (co.this_image(), co.num_images());
    let e = co.sync_images(Some(&[n])).unwrap_err();
    check(
        matches!(e, CoError::FailedImage { .. }) && e.stat() == stat::FAILED_IMAGE,
        || format!("sync images: {e}"),
    )?;
    check(co.image_status(n)? == stat::FAILED_IMAGE, || {
        "image_status".into()
    })?;
    check(
        co.failed_images() == [n] && co.stopped_images().is_empty(),
        || format!("failed_images {:?}", co.failed_images()),
    )?;
    // sync all reports the failed image but still synchronizes the others: the put
    // before it is seen after it.
    let right = me % (n - 1) + 1;
    let scalar = section(8, 0, &[]);
    co.put(
        x,
        0,
        right,
        &scalar,
        I8,
        &u64::from(me).to_ne_bytes(),
        &scalar,
        I8,
    )?;
    let e = co.sync_all().unwrap_err();
    check(e.stat() == stat::FAILED_IMAGE, || format!("sync all: {e}"))?;
    let left = (me + n - 3) % (n - 1) + 1;
    let got = u64::from_ne_bytes(own_part(co, x)?.try_into().unwrap_or_default());
    check(got == u64::from(left), || {
        format!("after sync all: {got}, expected {left}")
    })?;
    let mut one = 1.0f64.to_ne_bytes();
    let e = co.co_sum(&mut one, R8, 8, None).unwrap_err();
    check(e.stat() == stat::FAILED_IMAGE, || format!("co_sum: {e}"))?;
    if n == 2 {
        // Nobody is left to post: the wait ends with the failed image.
        let e = co.event_wait(ev, 0, 1).unwrap_err();
        check(e.stat() == stat::FAILED_IMAGE, || {
            format!("event wait: {e}")
        })?;
    }
    let others: Vec<u32> = (1..n).filter(|&i| i != me).collect();
    co.sync_images(Some(&others))
}

/// Image 1 ends the job with error stop 5 while the others wait in sync all.
fn error_stop(mut co: Coarrays) -> ! {
    if co.this_image() == 1 {
        co.error_stop(5)
    }
    let result = co.sync_all();
    println!(
        "image {}: sync all after error stop: {result:?}",
        co.this_image()
    );
    // The others must not go on: syncing among themselves, they are stopped too.
    let (me, n) = (co.this_image(), co.num_images());
    let others: Vec<u32> = (2..=n).filter(|&i| i != me).collect();
    loop {
        if let Err(e) = co.sync_images(Some(&others)) {
            println!("image {me}: stopped by the error stop: {e}");
            std::process::exit(1)
        }
    }
}

/// The typed API: sections by ranges with steps (also backwards), elements, whole arrays,
/// typed collectives.
fn typed(mut images: Images) -> ! {
    let me = images.this_image();
    if let Err(e) = typed_sections(&mut images).and_then(|()| typed_collectives(&mut images)) {
        fail("typed", &e);
    }
    println!("image {me}: typed ok");
    if let Err(e) = images.finalize() {
        fail("typed", &e);
    }
    std::process::exit(0)
}

fn typed_sections(images: &mut Images) -> CoResult<()> {
    let (me, n) = (images.this_image(), images.num_images());
    let right = me % n + 1;
    let left = (me + n - 2) % n + 1;
    // integer(4) :: x(3, 6)[*] (row-major), x(r, c) = 100 * image + 10 * r + c.
    let x = Coarray::<i32, 2>::new(images, [3, 6])?;
    check(x.shape() == [3, 6] && x.len() == 18, || "shape".into())?;
    check(x.local(images)? == vec![0; 18], || "zeroed".into())?;
    let value = |image: u32, r: usize, c: usize| (100 * image + 10 * r as u32 + c as u32) as i32;
    let mine: Vec<i32> = (0..18).map(|k| value(me, k / 6, k % 6)).collect();
    x.set_local(images, &mine)?;
    images.sync_all()?;
    // x(1, 0:6:2)[right]
    let row = x
        .on(right)
        .get(images, [Slice::at(1), Slice::from(0..6).step(2)])?;
    check(
        row == [value(right, 1, 0), value(right, 1, 2), value(right, 1, 4)],
        || format!("row {row:?}"),
    )?;
    // x(:, 5)[left], backwards: x(2:0:-1, 5)
    let col = x
        .on(left)
        .get(images, [Slice::all().step(-1), Slice::at(5)])?;
    check(
        col == [value(left, 2, 5), value(left, 1, 5), value(left, 0, 5)],
        || format!("column {col:?}"),
    )?;
    check(
        x.on(right).at(images, [2, 3])? == value(right, 2, 3),
        || "at".into(),
    )?;
    images.sync_all()?;
    // x(0:3:2, 1:6:2)[right] = -(1..6); then a scalar fills x(1, :)[right].
    let block: Vec<i32> = (1..=6).map(|v| -v).collect();
    x.on(right).put(
        images,
        [Slice::from(0..3).step(2), Slice::from(1..6).step(2)],
        &block,
    )?;
    images.sync_all()?;
    let got = x.local(images)?;
    let mut expected: Vec<i32> = (0..18).map(|k| value(me, k / 6, k % 6)).collect();
    for (k, (r, c)) in [(0, 1), (0, 3), (0, 5), (2, 1), (2, 3), (2, 5)]
        .into_iter()
        .enumerate()
    {
        expected[r * 6 + c] = -(k as i32 + 1);
    }
    check(got == expected, || format!("strided put {got:?}"))?;
    images.sync_all()?;
    x.on(right)
        .put(images, [Slice::at(1), Slice::all()], &[7])?;
    x.on(right).set(images, [0, 0], 9)?;
    images.sync_all()?;
    let got = x.local(images)?;
    check(got[6..12] == [7; 6] && got[0] == 9, || {
        format!("fill {got:?}")
    })?;
    // Errors: a slice past the dimension, a step of 0, a wrong number of values.
    check(
        x.on(me).get(images, [Slice::at(3), Slice::all()]).is_err(),
        || "row 3".into(),
    )?;
    check(
        x.on(me)
            .get(images, [Slice::all().step(0), Slice::all()])
            .is_err(),
        || "step 0".into(),
    )?;
    check(x.on(me).write(images, &[1, 2]).is_err(), || {
        "short write".into()
    })?;
    check(
        x.on(right)
            .put(images, [Slice::at(0), Slice::all()], &[1, 2])
            .is_err(),
        || "short put".into(),
    )?;
    images.sync_all()?;
    x.free(images)
}

fn typed_collectives(images: &mut Images) -> CoResult<()> {
    let (me, n) = (images.this_image(), images.num_images());
    let mut v = [f64::from(me), -f64::from(me)];
    images.co_sum(&mut v, None)?;
    let total = f64::from(n * (n + 1) / 2);
    check(v == [total, -total], || format!("co_sum {v:?}"))?;
    let mut m = [i64::from(me)];
    images.co_max(&mut m, Some(1))?;
    if me == 1 {
        check(m == [i64::from(n)], || "co_max".into())?;
    }
    let mut m = [me as i16];
    images.co_min(&mut m, None)?;
    check(m == [1], || "co_min".into())?;
    let mut b = [me; 3];
    images.co_broadcast(&mut b, n)?;
    check(b == [n; 3], || "co_broadcast".into())?;
    // Concatenation of digits, as (number, 10^digits): associative, not commutative.
    let mut digits = [[u64::from(me), 10]];
    images.co_reduce(
        &mut digits,
        |acc, other| *acc = [acc[0] * other[1] + other[0], acc[1] * other[1]],
        None,
    )?;
    let expected = (1..=u64::from(n)).fold(0, |acc, d| acc * 10 + d);
    check(digits[0][0] == expected, || format!("co_reduce {digits:?}"))?;
    images.sync_all()
}
