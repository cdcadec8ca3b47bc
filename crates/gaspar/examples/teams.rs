//! Teams and their collectives: splits by parity and by halves, team barriers, broadcast,
//! reduce, allreduce (builtin operators, a closure, floats), allgather, alltoall, the byte
//! forms, and the errors of mismatched calls. Each rank checks its results and aborts the
//! job on a wrong one; it prints one line per check that passed.
//! `gaspar run -n 4 target/debug/examples/teams [all|mismatch|gone]` (`gone`: world rank 1
//! leaves the job while the other members of its team wait for it in a team barrier).

use gaspar::world::{ReduceOp, Team, World};
use gaspar::{Error, Result};

/// Fails the job's check `what` unless `ok`.
fn check(ok: bool, what: &str) -> Result<()> {
    if ok {
        Ok(())
    } else {
        Err(failed(what))
    }
}

/// The error of a failed check.
fn failed(what: impl Into<String>) -> Error {
    Error::InvalidArgument {
        call: "teams example",
        reason: what.into(),
    }
}

fn main() -> Result<()> {
    let mode = std::env::args().nth(1).unwrap_or_else(|| "all".into());
    gaspar::run_job(|rt| {
        let world: &World = rt.world();
        match mode.as_str() {
            "all" => {
                everything(world)?;
                let (me, n) = (rt.rank(), rt.procs());
                rt.acp_mut().reset(n - 1 - me)?;
                renumbered(rt.world(), me)
            }
            "mismatch" => mismatches(world),
            "gone" => member_gone(world),
            other => Err(failed(format!("no mode {other}"))),
        }
    })
}

fn everything(world: &World) -> Result<()> {
    let (me, n) = (world.rank(), world.procs());
    let all = world.team();
    check(all.size() == n && all.rank() == me, "world team numbering")?;
    all.barrier(world)?;

    // By parity: team rank = world rank / 2, in world order.
    let parity = all
        .split(world, Some(me % 2), 0)?
        .ok_or_else(|| failed("no team for a color"))?;
    let members = (n + 1 - me % 2) / 2;
    check(
        parity.size() == members && parity.rank() == me / 2,
        "parity numbering",
    )?;
    for r in 0..parity.size() {
        check(
            parity.world_rank(r)? == 2 * r + me % 2,
            "parity world ranks",
        )?;
    }
    check(parity.team_rank(me) == Some(me / 2), "parity team_rank")?;
    parity.barrier(world)?;
    collectives(world, &parity, "parity")?;

    // By halves, numbered backwards by key.
    let lower = me < n / 2;
    let halves = all
        .split(world, Some(u32::from(lower)), n - me)?
        .ok_or_else(|| failed("no team for a color"))?;
    let half_size = if lower { n / 2 } else { n - n / 2 };
    let first = if lower { 0 } else { n / 2 };
    check(
        halves.size() == half_size && halves.rank() == first + half_size - 1 - me,
        "halves numbering",
    )?;
    halves.barrier(world)?;
    collectives(world, &halves, "halves")?;

    // Rank 0 stays out; a team split from a team.
    let without_zero = all.split(world, (me != 0).then_some(7), me)?;
    check(without_zero.is_some() == (me != 0), "color None")?;
    if let Some(team) = &without_zero {
        check(
            team.size() == n - 1 && team.rank() == me - 1,
            "numbering without 0",
        )?;
        let nested = team
            .split(world, Some(team.rank() % 2), 0)?
            .ok_or_else(|| failed("no nested team"))?;
        let mut sum = [u64::from(me)];
        nested.allreduce(world, &mut sum, ReduceOp::Sum)?;
        let expected: u64 = (1..n)
            .filter(|w| (w - 1) % 2 == (me - 1) % 2)
            .map(u64::from)
            .sum();
        check(sum[0] == expected, "nested allreduce")?;
    }
    println!("rank {me}: splits ok");

    collectives(world, all, "world")?;
    floats(world)?;
    large(world)?;
    bytes(world)?;
    varied(world)
}

/// Small allreduces of 400 lengths in turn (1 to 500 integers): their notes take from
/// one cache line to a whole note, so over the calls they start at every line of the
/// rings of notes and many run past a ring's end.
fn varied(world: &World) -> Result<()> {
    let (me, n) = (world.rank(), world.procs());
    for call in 0..400u64 {
        let len = 1 + (call * 53) % 500;
        let mut values: Vec<u64> = (0..len).map(|i| u64::from(me) * i + call).collect();
        world.team().allreduce(world, &mut values, ReduceOp::Sum)?;
        let ranks = u64::from(n * (n - 1) / 2);
        let ok = (0..len).all(|i| values[i as usize] == ranks * i + u64::from(n) * call);
        check(ok, &format!("allreduce number {call} of {len} integers"))?;
    }
    println!("rank {me}: varied allreduces ok");
    Ok(())
}

/// Every collective on `team`, with values built from world ranks.
fn collectives(world: &World, team: &Team, name: &str) -> Result<()> {
    let me = world.rank();
    let (rank, size) = (team.rank(), team.size());
    let worlds: Vec<u32> = (0..size)
        .map(|r| team.world_rank(r))
        .collect::<Result<_>>()?;

    let root = size - 1;
    let mut data: Vec<u64> = (0..5).map(|i| u64::from(me) * 10 + i).collect();
    team.broadcast(world, &mut data, root)?;
    let from = u64::from(worlds[root as usize]);
    check(
        data == (0..5).map(|i| from * 10 + i).collect::<Vec<_>>(),
        "broadcast",
    )?;

    let values = |w: u32| [u64::from(w) + 1, 1u64 << (w % 64), 1000 - u64::from(w)];
    let mine = values(me);
    let fold = |f: fn(u64, u64) -> u64, i: usize| {
        worlds
            .iter()
            .map(|&w| values(w)[i])
            .reduce(f)
            .unwrap_or_default()
    };
    for (op, f) in [
        (ReduceOp::Sum, (|a, b| a + b) as fn(u64, u64) -> u64),
        (ReduceOp::Min, u64::min),
        (ReduceOp::Max, u64::max),
        (ReduceOp::And, |a, b| a & b),
        (ReduceOp::Or, |a, b| a | b),
        (ReduceOp::Xor, |a, b| a ^ b),
    ] {
        let mut got = mine;
        team.allreduce(world, &mut got, op)?;
        let expected = [fold(f, 0), fold(f, 1), fold(f, 2)];
        check(got == expected, &format!("allreduce {op:?}"))?;
        let mut at_root = mine;
        team.reduce(world, &mut at_root, op, size / 2)?;
        if rank == size / 2 {
            check(at_root == expected, &format!("reduce {op:?}"))?;
        } else {
            check(at_root == mine, "reduce leaves non-roots alone")?;
        }
    }
    let mut signed = [-(me as i32), me as i32];
    team.allreduce(world, &mut signed, ReduceOp::Min)?;
    let lowest = *worlds.iter().max().unwrap_or(&0) as i32;
    check(
        signed == [-lowest, *worlds.iter().min().unwrap_or(&0) as i32],
        "i32 min",
    )?;

    // A closure that is associative but not commutative: composing affine maps
    // x -> a x + b, lower ranks' first.
    let map = |w: u32| [u64::from(w) + 2, u64::from(w) * 3 + 1];
    let compose = |acc: &mut [u64; 2], next: &[u64; 2]| {
        *acc = [
            next[0].wrapping_mul(acc[0]),
            next[0].wrapping_mul(acc[1]).wrapping_add(next[1]),
        ];
    };
    let expected = worlds.iter().skip(1).fold(map(worlds[0]), |mut acc, &w| {
        compose(&mut acc, &map(w));
        acc
    });
    let mut got = [map(me)];
    team.reduce_with(world, &mut got, None, compose)?;
    check(got[0] == expected, "allreduce with a closure")?;
    let mut got = [map(me)];
    team.reduce_with(world, &mut got, Some(0), compose)?;
    check(rank != 0 || got[0] == expected, "reduce with a closure")?;

    let mine = [me, me * 2, me * 3];
    let mut gathered = vec![0u32; 3 * size as usize];
    team.allgather(world, &mine, &mut gathered)?;
    let expected: Vec<u32> = worlds.iter().flat_map(|&w| [w, w * 2, w * 3]).collect();
    check(gathered == expected, "allgather")?;

    let send: Vec<u32> = worlds.iter().flat_map(|&w| [me * 100 + w; 2]).collect();
    let mut recv = vec![0u32; send.len()];
    team.alltoall(world, &send, &mut recv)?;
    let expected: Vec<u32> = worlds.iter().flat_map(|&w| [w * 100 + me; 2]).collect();
    check(recv == expected, "alltoall")?;
    large_on(world, team, &worlds)?;
    println!("rank {me}: {name} collectives ok");
    Ok(())
}

/// A large allreduce (70 001 integers: a length no multiple of the team's size or of a
/// power of two, many chunks through the channels) and a broadcast of it from
/// the team's last member, checked element by element.
fn large_on(world: &World, team: &Team, worlds: &[u32]) -> Result<()> {
    let me = u64::from(world.rank());
    let len = 70_001u64;
    let mut values: Vec<u64> = (0..len).map(|i| i * 3 + me * 1_000_003).collect();
    team.allreduce(world, &mut values, ReduceOp::Sum)?;
    let members = worlds.len() as u64;
    let world_sum: u64 = worlds.iter().map(|&w| u64::from(w) * 1_000_003).sum();
    check(
        values
            .iter()
            .zip(0..)
            .all(|(&v, i)| v == members * i * 3 + world_sum),
        "large team allreduce",
    )?;
    let root = team.size() - 1;
    let mut copy: Vec<u64> = if team.rank() == root {
        values.iter().map(|v| v ^ me).collect()
    } else {
        vec![0; len as usize]
    };
    team.broadcast(world, &mut copy, root)?;
    let from = u64::from(worlds[root as usize]);
    check(
        copy.iter().zip(&values).all(|(&c, &v)| c == v ^ from),
        "large team broadcast",
    )
}

/// Float sums whose values depend on the order of additions, of a small buffer and of
/// two large ones, one of an odd length (the transport may reduce them along different
/// trees): their bits must be the same on every rank, and (the test compares runs) in
/// every run.
fn floats(world: &World) -> Result<()> {
    let me = world.rank();
    let mut digest = 0xcbf2_9ce4_8422_2325u64;
    for len in [1000u32, 20_000, 100_003] {
        let mut values: Vec<f64> = (0..len)
            .map(|i| {
                let x = f64::from(i * 7 + me * 13 + 1);
                x.sqrt() * 10f64.powi((i % 17) as i32 - 8) * if i % 2 == 0 { 1.0 } else { -1.0 }
            })
            .collect();
        world.team().allreduce(world, &mut values, ReduceOp::Sum)?;
        digest = values.iter().fold(digest, |h, v| {
            (h ^ v.to_bits()).wrapping_mul(0x100_0000_01b3)
        });
    }
    let mut digests = vec![0u64; world.procs() as usize];
    world.team().allgather(world, &[digest], &mut digests)?;
    check(
        digests.iter().all(|&d| d == digest),
        "float allreduce differs between ranks",
    )?;
    println!("rank {me}: float digest {digest:016x}");
    Ok(())
}

/// An allreduce of 300 007 doubles (many chunks through the channels, a length no
/// multiple of a chunk or of the team's size) and a broadcast of
/// them.
fn large(world: &World) -> Result<()> {
    let (me, n) = (world.rank(), world.procs());
    let len = 300_007usize;
    let mut values: Vec<f64> = (0..len)
        .map(|i| (i % 1000) as f64 + f64::from(me))
        .collect();
    world.team().allreduce(world, &mut values, ReduceOp::Sum)?;
    let ranks = f64::from(n * (n - 1) / 2);
    let ok = values
        .iter()
        .enumerate()
        .all(|(i, &v)| v == f64::from(n) * (i % 1000) as f64 + ranks);
    check(ok, "large allreduce")?;
    let mut copy: Vec<f64> = if me == n - 1 {
        values.clone()
    } else {
        vec![0.0; len]
    };
    world.team().broadcast(world, &mut copy, n - 1)?;
    check(copy == values, "large broadcast")?;
    println!("rank {me}: large collectives ok");
    Ok(())
}

/// The untyped forms the coarray layer uses.
fn bytes(world: &World) -> Result<()> {
    let (me, n) = (world.rank(), world.procs());
    let team = world.team();
    let mut text = if me == 0 { *b"from zero" } else { [0u8; 9] };
    team.broadcast_bytes(world, &mut text, 0)?;
    check(&text == b"from zero", "broadcast_bytes")?;
    // Elements of 3 bytes: [max, min, sum mod 256] of the ranks.
    let mut buf = [me as u8, me as u8, me as u8, 1, 1, 1];
    let mut combine = |acc: &mut [u8], other: &[u8]| {
        acc[0] = acc[0].max(other[0]);
        acc[1] = acc[1].min(other[1]);
        acc[2] = acc[2].wrapping_add(other[2]);
    };
    team.reduce_bytes(world, &mut buf, 3, &mut combine, None)?;
    let top = (n - 1) as u8;
    let sum = (0..n).map(|r| r as u8).fold(0u8, u8::wrapping_add);
    check(buf == [top, 0, sum, 1, 1, n as u8], "reduce_bytes")?;
    println!("rank {me}: byte collectives ok");
    Ok(())
}

/// Mismatched calls: every member gets the error, and the team works afterwards.
fn mismatches(world: &World) -> Result<()> {
    let me = world.rank();
    let team = world.team();
    let mut buf = vec![0u8; if me == 0 { 8 } else { 16 }];
    match team.broadcast_bytes(world, &mut buf, 0) {
        Err(Error::MismatchedCollective { .. }) if world.procs() > 1 => {
            println!("rank {me}: broadcast length mismatch reported")
        }
        Ok(()) if world.procs() == 1 => println!("rank {me}: broadcast length mismatch reported"),
        other => check(false, &format!("broadcast length mismatch gave {other:?}"))?,
    }
    let result = if me == 0 {
        team.barrier(world)
    } else {
        team.allreduce(world, &mut [1u64], ReduceOp::Sum)
    };
    match result {
        Err(Error::MismatchedCollective { .. }) if world.procs() > 1 => {
            println!("rank {me}: call mismatch reported")
        }
        Ok(()) if world.procs() == 1 => println!("rank {me}: call mismatch reported"),
        other => check(false, &format!("call mismatch gave {other:?}"))?,
    }
    // The same length, another call.
    let result = if me == 0 {
        team.broadcast(world, &mut [7u64], 0)
    } else {
        team.allreduce(world, &mut [7u64], ReduceOp::Max)
    };
    match result {
        Err(Error::MismatchedCollective { .. }) if world.procs() > 1 => {
            println!("rank {me}: kind mismatch reported")
        }
        Ok(()) if world.procs() == 1 => println!("rank {me}: kind mismatch reported"),
        other => check(false, &format!("kind mismatch gave {other:?}"))?,
    }
    // The same call and length, another operator; then another element type.
    let result = if me == 0 {
        team.allreduce(world, &mut [1u64; 4], ReduceOp::Sum)
    } else {
        team.allreduce(world, &mut [1u64; 4], ReduceOp::Max)
    };
    let operators = match result {
        Err(Error::MismatchedCollective { .. }) => world.procs() > 1,
        Ok(()) => world.procs() == 1,
        _ => false,
    };
    let result = if me == 0 {
        team.allreduce(world, &mut [1u64; 4], ReduceOp::Sum)
    } else {
        team.allreduce(world, &mut [1.0f64; 4], ReduceOp::Sum)
    };
    match result {
        Err(Error::MismatchedCollective { .. }) if world.procs() > 1 && operators => {
            println!("rank {me}: operator and type mismatches reported")
        }
        Ok(()) if world.procs() == 1 && operators => {
            println!("rank {me}: operator and type mismatches reported")
        }
        other => check(
            false,
            &format!("operator mismatch ok: {operators}; type mismatch gave {other:?}"),
        )?,
    }
    match team.allreduce(world, &mut [1.0f64], ReduceOp::Xor) {
        Err(Error::InvalidArgument { .. }) => println!("rank {me}: float xor refused"),
        other => check(false, &format!("float xor gave {other:?}"))?,
    }
    let mut one = [1u64];
    team.allreduce(world, &mut one, ReduceOp::Sum)?;
    check(
        one[0] == u64::from(world.procs()),
        "allreduce after mismatches",
    )?;
    println!("rank {me}: team usable after mismatches");
    Ok(())
}

/// World rank 1 exits without finalizing while the rest of its parity team waits for it
/// in a team barrier: the wait ends with an error, and the job fails, instead of hanging.
fn member_gone(world: &World) -> Result<()> {
    let me = world.rank();
    let parity = world
        .team()
        .split(world, Some(me % 2), 0)?
        .ok_or_else(|| failed("no team for a color"))?;
    if me == 1 {
        std::process::exit(3);
    }
    if me % 2 == 1 {
        println!("rank {me}: waiting in a team barrier");
        let error = parity
            .barrier(world)
            .err()
            .ok_or_else(|| failed("barrier passed"))?;
        println!("rank {me}: team barrier ended with: {error}");
        return Err(error);
    }
    Ok(())
}

/// After a reset that numbers the ranks backwards, the world team follows the new numbers
/// (`old` is this rank's number before it).
fn renumbered(world: &World, old: u32) -> Result<()> {
    let (me, n) = (world.rank(), world.procs());
    let team = world.team();
    check(
        team.rank() == me && team.world_rank(me)? == me,
        "renumbered world team",
    )?;
    let mut olds = vec![0u32; n as usize];
    team.allgather(world, &[old], &mut olds)?;
    check(
        olds == (0..n).rev().collect::<Vec<_>>(),
        "allgather in the new order",
    )?;
    let mut from_first = [old];
    team.broadcast(world, &mut from_first, 0)?;
    check(from_first[0] == n - 1, "broadcast from the new rank 0")?;
    collectives(world, team, "renumbered world")?;
    Ok(())
}
