//! Rank 0's loop of N blocking puts or gets of SIZE bytes to or from rank 1's heap (or of
//! gets that issue a handle, `get-handle`), or of the same copy by memcpy between the same
//! buffers (rank 1's block as mapped here), for timing the shm transport's short-copy path
//! against the copy alone and for counting its instructions under callgrind (this VM has
//! no CPU counters). SRC_OFF and DST_OFF place the source and the destination that many
//! bytes after a page boundary (the copy engine's placements). Prints ns per operation for
//! five rounds; `put+memcpy` and `get+memcpy` instead time gaspar's loop and memcpy's
//! (between the same buffers, in the same direction) alternately, 21 rounds of each, and
//! print both medians and the ratio: this VM's speed moves by up to 2x within a minute,
//! and only loops timed in alternation compare.
//!
//! `target/release/gaspar run -n 2 target/release/examples/copy_loop MODE SIZE N [SRC_OFF DST_OFF]`
//! with MODE `put`, `get`, `get-handle`, `memcpy`, `put+memcpy` or `get+memcpy` (figures
//! and commands in `bench/probes/README.md`).

use std::time::Instant;

/// Bytes of the local buffer and of rank 1's block: room for 1 MiB after any page offset.
const SPAN: usize = 2 << 20;

fn usage() -> ! {
    eprintln!("usage: copy_loop put|get|get-handle|memcpy|put+memcpy|get+memcpy SIZE N [SRC_OFF DST_OFF] (SIZE + offsets <= 1 MiB + 4 KiB)");
    std::process::exit(2);
}

fn main() -> gaspar::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let number = |i: usize, default: Option<usize>| -> usize {
        match args.get(i).map(|a| a.parse::<usize>()) {
            Some(Ok(n)) => n,
            None => default.unwrap_or_else(|| usage()),
            Some(Err(_)) => usage(),
        }
    };
    let (size, n) = (number(1, None), number(2, None));
    let (src_off, dst_off) = (number(3, Some(0)), number(4, Some(0)));
    let mode = args.first().cloned().unwrap_or_else(|| usage());
    if !matches!(
        mode.as_str(),
        "put" | "get" | "memcpy" | "get-handle" | "put+memcpy" | "get+memcpy"
    ) || src_off.max(dst_off) >= 4096
        || size > (1 << 20)
    {
        usage();
    }
    gaspar::run_job(|rt| {
        let acp = rt.acp();
        let block = acp.alloc(SPAN as u64)?;
        let mut storage = vec![1u8; SPAN];
        acp.barrier()?;
        if acp.rank() == 0 {
            let Some(mapped) = acp.mapped_address(block.ga(1)?, SPAN as u64)? else {
                eprintln!("copy_loop: rank 1's heap is not mapped here (not on shm?)");
                std::process::exit(1);
            };
            // Both sides from a page boundary on, then the offsets asked for.
            let skip = (4096 - storage.as_ptr() as usize % 4096) % 4096;
            let local = &mut storage[skip..];
            let remote_skip = (4096 - mapped % 4096) % 4096;
            let (local_src, remote_dst) = (src_off, remote_skip + dst_off);
            let (remote_src, local_dst) = (remote_skip + src_off, dst_off);
            let at = |offset: usize| block.ga(1).map(|ga| ga.offset(offset as u64));
            let (put_to, get_from) = (at(remote_dst)?, at(remote_src)?);
            let (Some(put_to), Some(get_from)) = (put_to, get_from) else {
                usage();
            };
            let (local_len, local_at) = (local.len(), local.as_mut_ptr() as usize);
            let memcpy = |from: usize, to: usize| {
                time(n, || {
                    // SAFETY: `size` bytes at `from` and at `to` are inside `local` and
                    // rank 1's block as mapped here (`SPAN` bytes from `mapped`, of which
                    // at most 4 KiB + 1 MiB are used), one each, so disjoint; rank 1
                    // waits in the barrier below and does not touch its block meanwhile,
                    // and no slice of `local` is alive while this runs.
                    unsafe {
                        std::ptr::copy_nonoverlapping(
                            std::hint::black_box(from as *const u8),
                            std::hint::black_box(to as *mut u8),
                            size,
                        )
                    };
                    Ok(())
                })
            };
            let memcpy_put = || memcpy(local_at + local_src, mapped + remote_dst);
            let memcpy_get = || memcpy(mapped + remote_src, local_at + local_dst);
            // Each access to `local` below makes its slice from `local_at` (memcpy writes
            // there too, so no borrow of `local` may outlive one operation).
            let slice = |offset: usize| {
                assert!(offset + size <= local_len, "inside the local buffer");
                // SAFETY: `offset + size` bytes lie in `local` (just checked); each slice
                // lives for one operation, and no other slice or memcpy touches `local`
                // meanwhile.
                unsafe { std::slice::from_raw_parts_mut((local_at + offset) as *mut u8, size) }
            };
            let put = || time(n, || acp.put_blocking(put_to, slice(local_src)));
            let get = || time(n, || acp.get_blocking(slice(local_dst), get_from));
            let get_handle = || {
                time(n, || {
                    let handle = acp.get(slice(local_dst), get_from, gaspar::Handle::NULL)?;
                    std::hint::black_box(handle);
                    Ok(())
                })
            };
            match mode.as_str() {
                "put+memcpy" => paired(&mode, size, put, memcpy_put)?,
                "get+memcpy" => paired(&mode, size, get, memcpy_get)?,
                _ => {
                    for _ in 0..5 {
                        let ns = match mode.as_str() {
                            "put" => put()?,
                            "get" => get()?,
                            "get-handle" => get_handle()?,
                            _ => memcpy_put()?,
                        };
                        println!("{mode} {size}: {ns:.2} ns");
                    }
                }
            }
        }
        acp.barrier()?;
        acp.free(block)?;
        Ok(())
    })
}

/// Nanoseconds per call of `body` over `n` calls (inlined, as a program's own loop is).
#[inline(always)]
fn time(n: usize, mut body: impl FnMut() -> gaspar::Result<()>) -> gaspar::Result<f64> {
    let start = Instant::now();
    for _ in 0..n {
        body()?;
    }
    Ok(start.elapsed().as_nanos() as f64 / n.max(1) as f64)
}

/// Times gaspar's loop and memcpy's in alternation, `PAIRED_ROUNDS` of each, and prints
/// both medians and their ratio (this VM's speed moves by 2x from one minute to the next:
/// only alternated loops compare).
fn paired(
    mode: &str,
    size: usize,
    mut ours: impl FnMut() -> gaspar::Result<f64>,
    mut memcpy: impl FnMut() -> gaspar::Result<f64>,
) -> gaspar::Result<()> {
    const PAIRED_ROUNDS: usize = 21;
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for _ in 0..PAIRED_ROUNDS {
        a.push(ours()?);
        b.push(memcpy()?);
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (ours, memcpy) = (median(&mut a), median(&mut b));
    println!(
        "{mode} {size}: {ours:.2} ns, memcpy {memcpy:.2} ns: {:.2}x memcpy's bandwidth",
        memcpy / ours
    );
    Ok(())
}
