//! Rank 0's loop of N blocking puts or gets of SIZE bytes to or from rank 1's heap (or of
//! gets that issue a handle, `get-handle`), or of the same copy by memcpy between the same
//! buffers (rank 1's block as mapped here), for timing the shm transport's short-copy path
//! against the copy alone and for counting its instructions under callgrind (this VM has
//! no CPU counters). SRC_OFF and DST_OFF place the source and the destination that many
//! bytes after a page boundary (the copy engine's placements). Prints ns per operation for
//! five rounds.
//!
//! `target/release/gaspar run -n 2 target/release/examples/copy_loop MODE SIZE N [SRC_OFF DST_OFF]`
//! with MODE `put`, `get`, `get-handle` or `memcpy` (figures and commands in
//! `bench/probes/README.md`).

use std::time::Instant;

/// Bytes of the local buffer and of rank 1's block: room for 1 MiB after any page offset.
const SPAN: usize = 2 << 20;

fn usage() -> ! {
    eprintln!("usage: copy_loop put|get|get-handle|memcpy SIZE N [SRC_OFF DST_OFF] (SIZE + offsets <= 1 MiB + 4 KiB)");
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
    if !matches!(mode.as_str(), "put" | "get" | "memcpy" | "get-handle")
        || src_off.max(dst_off) >= 4096
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
            for _ in 0..5 {
                let start = Instant::now();
                match mode.as_str() {
                    "put" => {
                        for _ in 0..n {
                            acp.put_blocking(put_to, &local[local_src..local_src + size])?;
                        }
                    }
                    "get" => {
                        for _ in 0..n {
                            acp.get_blocking(&mut local[local_dst..local_dst + size], get_from)?;
                        }
                    }
                    "get-handle" => {
                        for _ in 0..n {
                            let handle = acp.get(
                                &mut local[local_dst..local_dst + size],
                                get_from,
                                gaspar::Handle::NULL,
                            )?;
                            std::hint::black_box(handle);
                        }
                    }
                    _ => {
                        let (from, to) = (local[local_src..].as_ptr(), mapped + remote_dst);
                        for _ in 0..n {
                            // SAFETY: `size` bytes at `from` are inside `local`, and at `to`
                            // inside rank 1's block as mapped here (`SPAN` bytes from
                            // `mapped`, of which at most 4 KiB + 1 MiB are used); two
                            // different memories, so disjoint; rank 1 waits in the barrier
                            // below and does not touch its block meanwhile.
                            unsafe {
                                std::ptr::copy_nonoverlapping(
                                    std::hint::black_box(from),
                                    std::hint::black_box(to as *mut u8),
                                    size,
                                )
                            }
                        }
                    }
                }
                let ns = start.elapsed().as_nanos() as f64 / n.max(1) as f64;
                println!("{mode} {size}: {ns:.2} ns");
            }
        }
        acp.barrier()?;
        acp.free(block)?;
        Ok(())
    })
}
