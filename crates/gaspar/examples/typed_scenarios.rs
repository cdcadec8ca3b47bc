//! The rank program of the tests of the typed API (`tests/typed.rs`): `typed_scenarios
//! NAME`, launched through `gaspar run`. Each scenario checks its own results and ends the
//! job through `abort` when one is wrong.

use gaspar::{Compare, Error, Result, Runtime, SignalOp, SymmetricArray};

fn main() -> Result<()> {
    let name = std::env::args().nth(1).unwrap_or_default();
    gaspar::run_job(|rt| match name.as_str() {
        "put-signal" => put_signal(rt),
        "typed-array" => typed_array(rt),
        "leak" => leak(rt),
        "leak-behind-error" => leak_behind_error(rt),
        other => rt.abort(&format!("unknown scenario {other:?}")),
    })
}

fn check(rt: &Runtime, ok: bool, what: impl FnOnce() -> String) {
    if !ok {
        rt.abort(&what());
    }
}

/// The value of element `i` of what rank `from` sends in round `round`.
fn payload(from: u32, round: u64, i: usize) -> u64 {
    (u64::from(from) << 48) | (round << 24) | i as u64
}

/// Put-with-signal, both operations: each rank sends 32 KiB to its right neighbour with
/// the round number as a set signal, round after round (the receiver acknowledges each
/// round with an atomic, so that the next one does not overwrite data not yet checked);
/// then every rank signals rank 0 with an added signal.
fn put_signal(rt: &Runtime) -> Result<()> {
    const LEN: usize = 4096;
    const ROUNDS: u64 = 50;
    let (me, n) = (rt.rank(), rt.procs());
    let (right, left) = ((me + 1) % n, (me + n - 1) % n);
    let data = rt.alloc::<u64>(LEN)?;
    let signal = rt.alloc::<u64>(1)?;
    let acks = rt.alloc::<u64>(1)?;
    let mut outgoing = vec![0u64; LEN];
    let mut received = vec![0u64; LEN];
    for round in 1..=ROUNDS {
        // The right neighbour has checked the previous round.
        acks.wait_until(0, Compare::Ge, round - 1)?;
        for (i, v) in outgoing.iter_mut().enumerate() {
            *v = payload(me, round, i);
        }
        data.put_signal(right, 0, &outgoing, &signal, 0, SignalOp::Set(round))?;
        signal.wait_until(0, Compare::Eq, round)?;
        data.local().copy_to_slice(&mut received)?;
        let wrong = (0..LEN).find(|&i| received[i] != payload(left, round, i));
        check(rt, wrong.is_none(), || {
            format!("rank {me}, round {round}: element {wrong:?} is not rank {left}'s")
        });
        acks.fetch_add(left, 0, 1)?;
    }
    say(&format!(
        "rank {me}: {ROUNDS} signalled rounds from rank {left} ok"
    ));

    // One large transfer (the copy kernels for large sizes may use other stores).
    const BIG: usize = 1 << 20;
    let big = rt.alloc::<u64>(BIG)?;
    let big_signal = rt.alloc::<u64>(1)?;
    let outgoing: Vec<u64> = (0..BIG).map(|i| payload(me, 0, i)).collect();
    big.put_signal(right, 0, &outgoing, &big_signal, 0, SignalOp::Set(7))?;
    big_signal.wait_until(0, Compare::Eq, 7)?;
    let got = big.local().to_vec()?;
    let wrong = (0..BIG).find(|&i| got[i] != payload(left, 0, i));
    check(rt, wrong.is_none(), || {
        format!("rank {me}, 8 MiB: element {wrong:?} is not rank {left}'s")
    });
    say(&format!("rank {me}: 8 MiB signalled from rank {left} ok"));
    big.free()?;
    big_signal.free()?;

    // Added signals: every rank writes its slot of rank 0's array and adds 1.
    let slots = rt.alloc::<u64>(n as usize)?;
    let count = rt.alloc::<u64>(1)?;
    rt.barrier()?;
    slots.put_signal(
        0,
        me as usize,
        &[u64::from(me) + 100],
        &count,
        0,
        SignalOp::Add(1),
    )?;
    if me == 0 {
        count.wait_until(0, Compare::Eq, u64::from(n))?;
        let got = slots.local().to_vec()?;
        let expected: Vec<u64> = (0..u64::from(n)).map(|r| r + 100).collect();
        check(rt, got == expected, || {
            format!("rank 0's slots are {got:?}")
        });
        say(&format!("rank 0: {n} added signals ok"));
    }
    for array in [data, signal, acks, slots, count] {
        array.free()?;
    }
    Ok(())
}

fn say(line: &str) {
    println!("{line}");
}

/// A type that needs more alignment than a symmetric array gets.
#[derive(Clone, Copy, bytemuck::Zeroable, bytemuck::Pod)]
#[repr(C, align(128))]
struct Wide([u8; 128]);

/// Element and slice transfers, sections, atomics and the local view across ranks, and
/// each misuse refused with its error.
fn typed_array(rt: &Runtime) -> Result<()> {
    let (me, n) = (rt.rank(), rt.procs());
    let right = (me + 1) % n;
    let a = rt.alloc::<i32>(16)?;
    check(rt, a.local().to_vec()? == vec![0; 16], || {
        "a new array is not zeroed".into()
    });
    rt.barrier()?;
    // Slices and single elements to the right neighbour.
    let base = me as i32 * 100;
    a.put_slice(right, 0, &[base, base + 1, base + 2])?;
    a.put(right, 15, &-(me as i32))?;
    rt.barrier()?;
    let left = ((me + n - 1) % n) as i32;
    let mut first = [0i32; 3];
    a.get_slice(me, 0, &mut first)?;
    check(
        rt,
        first == [left * 100, left * 100 + 1, left * 100 + 2],
        || format!("rank {me}: first three are {first:?}"),
    );
    check(rt, a.local().get(15)? == -left, || "last element".into());
    check(rt, a.get(right, 15)? == -(me as i32), || {
        "remote get".into()
    });

    // A 2-D section: column 1 of our 4 x 4 (column-major) into row 2 of the right's.
    let m = rt.alloc::<f64>(16)?;
    let mine: Vec<f64> = (0..16)
        .map(|i| f64::from(me) * 16.0 + f64::from(i))
        .collect();
    rt.barrier()?;
    m.put_section(&mine[4..], [1], [4], right, 2, [4])?;
    rt.barrier()?;
    let mut row = [0.0; 4];
    m.get_section(&mut row, [1], [4], me, 2, [4])?;
    let from = f64::from((me + n - 1) % n) * 16.0;
    check(
        rt,
        row == [from + 4.0, from + 5.0, from + 6.0, from + 7.0],
        || format!("rank {me}: row 2 is {row:?}"),
    );

    // Nonblocking puts, completed by quiet before a flag tells the target.
    let late = rt.alloc::<u64>(64)?;
    let flag = rt.alloc::<u64>(1)?;
    let values: Vec<u64> = (0..64).map(|i| u64::from(me) * 1000 + i).collect();
    late.put_slice_nbi(right, 0, &values[..63])?;
    late.put_nbi(right, 63, &values[63])?;
    rt.quiet()?;
    flag.atomic_store(right, 0, 1)?;
    flag.wait_until(0, Compare::Eq, 1)?;
    let expected: Vec<u64> = (0..64).map(|i| u64::from(left as u32) * 1000 + i).collect();
    let got = late.local().to_vec()?;
    check(rt, got == expected, || {
        format!("rank {me}: after quiet {got:?}")
    });
    rt.barrier()?;
    late.free()?;
    flag.free()?;

    // Atomics on every rank's word.
    let words = rt.alloc::<u64>(2)?;
    for r in 0..n {
        words.fetch_add(r, 0, u64::from(me) + 1)?;
        words.fetch_or(r, 1, 1 << me)?;
    }
    rt.barrier()?;
    let sum = u64::from(n) * u64::from(n + 1) / 2;
    check(rt, words.atomic_load(me, 0)? == sum, || "fetch_add".into());
    check(rt, words.atomic_load(me, 1)? == (1u64 << n) - 1, || {
        "fetch_or".into()
    });
    rt.barrier()?;
    if me == 0 {
        check(rt, words.compare_swap(right, 0, sum, 7)? == sum, || {
            "cas".into()
        });
        check(rt, words.swap(right, 0, 9)? == 7, || "swap".into());
        check(rt, words.fetch_xor(right, 1, 1)? == (1u64 << n) - 1, || {
            "xor".into()
        });
        check(rt, words.fetch_and(right, 1, 2)? == (1u64 << n) - 2, || {
            "and".into()
        });
        words.atomic_store(right, 1, 5)?;
        check(rt, words.atomic_load(right, 1)? == 5, || "store".into());
    }

    // Misuse, each refused with its error and nothing moved.
    let refused = |what: &str, result: Result<()>, ok: fn(&Error) -> bool| match result {
        Err(e) if ok(&e) => {}
        other => rt.abort(&format!("{what} gave {other:?}")),
    };
    refused("a put past the end", a.put(me, 16, &1), |e| {
        matches!(
            e,
            Error::IndexOutOfRange {
                index: 16,
                count: 1,
                len: 16
            }
        )
    });
    refused(
        "a slice past the end",
        a.put_slice(me, 14, &[1, 2, 3]),
        |e| {
            matches!(
                e,
                Error::IndexOutOfRange {
                    index: 14,
                    count: 3,
                    len: 16
                }
            )
        },
    );
    refused("a rank past the job", a.put(n, 0, &1), |e| {
        matches!(e, Error::RankOutOfRange { .. })
    });
    refused(
        "a section past the end",
        m.put_section(&mine, [1, 4], [4, 4], me, 1, [1, 4]),
        |e| matches!(e, Error::IndexOutOfRange { .. }),
    );
    refused(
        "a short local copy",
        a.local().copy_from_slice(&[1, 2]),
        |e| matches!(e, Error::InvalidArgument { .. }),
    );
    refused(
        "an index past the end in wait_until",
        words.wait_until(2, Compare::Eq, 0).map(drop),
        |e| matches!(e, Error::IndexOutOfRange { .. }),
    );
    refused("an over-aligned type", rt.alloc::<Wide>(1).map(drop), |e| {
        matches!(e, Error::InvalidArgument { .. })
    });
    refused(
        "a length that overflows",
        rt.alloc::<u64>(usize::MAX).map(drop),
        |e| matches!(e, Error::LengthOverflow { .. }),
    );
    // An empty array: allocated and freed like any other, every element refused.
    let empty = rt.alloc::<u64>(0)?;
    check(
        rt,
        empty.is_empty() && empty.local().to_vec()?.is_empty(),
        || "an empty array is not empty".into(),
    );
    refused("a put into an empty array", empty.put(me, 0, &1), |e| {
        matches!(
            e,
            Error::IndexOutOfRange {
                index: 0,
                count: 1,
                len: 0
            }
        )
    });
    empty.free()?;
    rt.barrier()?;
    a.free()?;
    words.free()?;
    m.free()?;
    say(&format!("rank {me}: typed array ok"));
    Ok(())
}

/// Rank 0 drops an array without freeing it; its next collective call ends the job.
fn leak(rt: &Runtime) -> Result<()> {
    let kept = rt.alloc::<u64>(8)?;
    {
        let _forgotten = rt.alloc::<u64>(10)?;
        if rt.rank() != 0 {
            std::mem::forget(_forgotten);
        }
    }
    rt.barrier()?;
    kept.free()
}

/// An error returned early with `?` drops an array on its way out: the job reports the
/// error, not the leak it caused.
fn leak_behind_error(rt: &Runtime) -> Result<()> {
    let _array: SymmetricArray<u64> = rt.alloc(4)?;
    Err(Error::InvalidArgument {
        call: "leak-behind-error",
        reason: "the error to report".into(),
    })
}
