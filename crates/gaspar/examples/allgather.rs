//! ACP's nonblocking in-place allgather on starter memory (the ACP basic-layer paper,
//! section 2.5): each rank broadcasts its block down a binary tree of third-party copies,
//! each copy ordered after the one that delivered its source. Written on ACP's own
//! interface ([`gaspar::Runtime::acp`]): global addresses, byte lengths, order handles.
//! `gaspar run -n 5 target/debug/examples/allgather [BLOCK_BYTES]`.

use gaspar::{GlobalAddr, Handle, Result};

fn main() -> Result<()> {
    let block: u64 = std::env::args()
        .nth(1)
        .map(|a| a.parse().expect("BLOCK_BYTES must be a number"))
        .unwrap_or(1024);
    gaspar::run_job(|rt| {
        let (me, n) = (rt.rank(), rt.procs());
        let acp = rt.acp();
        let slot = |rank: u32, of: u32| -> Result<GlobalAddr> {
            acp.starter_ga(rank)?.offset(block * u64::from(of)).ok_or(
                gaspar::Error::LengthOverflow {
                    what: "starter slot",
                },
            )
        };
        let pattern = |of: u32, i: u64| (of as u64 * 31 + i * 7) as u8;

        let mine: Vec<u8> = (0..block).map(|i| pattern(me, i)).collect();
        acp.put(slot(me, me)?, &mine, Handle::NULL)?;
        acp.complete(Handle::ALL)?;

        let mut handle = vec![Handle::NULL; n as usize];
        for i in 1..n {
            let dst = (me + i) % n;
            let src = (me + (i >> 1)) % n;
            handle[dst as usize] =
                acp.copy(slot(dst, me)?, slot(src, me)?, block, handle[src as usize])?;
        }
        acp.complete(Handle::ALL)?;
        rt.barrier()?;

        let mut all = vec![0u8; (block * u64::from(n)) as usize];
        acp.get(&mut all, slot(me, 0)?, Handle::NULL)?;
        for of in 0..n {
            for i in 0..block {
                let got = all[(u64::from(of) * block + i) as usize];
                if got != pattern(of, i) {
                    rt.abort(&format!("byte {i} of rank {of}'s block is {got}"));
                }
            }
        }
        println!("rank {me}: allgather of {n} x {block} bytes ok");
        Ok(())
    })
}
