//! Rank 0's loop of N strided puts or gets (`put_strided`/`get_strided`, completed) of
//! ROWS rows of 64 bytes, dense here and 1 KiB apart in rank 1's heap, for counting the
//! Rust API's fixed cost per call under callgrind (figures and commands in
//! `bench/probes/README.md`). Prints ns per call for five rounds, then checks that the
//! rows read back are the rows written.
//!
//! `target/release/gaspar run -n 2 target/release/examples/strided_loop put|get ROWS N`

use std::time::Instant;

use gaspar::strided::Descriptor;
use gaspar::Handle;

fn usage() -> ! {
    eprintln!("usage: strided_loop put|get ROWS N (1 <= ROWS <= 1024)");
    std::process::exit(2);
}

fn main() -> gaspar::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let number = |i: usize| -> u64 {
        match args.get(i).map(|a| a.parse::<u64>()) {
            Some(Ok(n)) => n,
            _ => usage(),
        }
    };
    let (rows, n) = (number(1), number(2));
    let mode = args.first().cloned().unwrap_or_else(|| usage());
    if !matches!(mode.as_str(), "put" | "get") || !(1..=1024).contains(&rows) {
        usage();
    }
    gaspar::run_job(|rt| {
        let acp = rt.acp();
        let block = acp.alloc(rows * 1024)?;
        acp.barrier()?;
        if acp.rank() == 0 {
            let remote = block.ga(1)?;
            let put = Descriptor::new(&[64, rows], &[64], &[1024])?;
            let get = Descriptor::new(&[64, rows], &[1024], &[64])?;
            // Row r holds r + 1 (mod 256); rank 0 checks at the end that a get of the
            // rows reads them back.
            let pattern: Vec<u8> = (0..64 * rows as usize)
                .map(|i| (i / 64 + 1) as u8)
                .collect();
            let mut local = pattern.clone();
            let h = acp.put_strided(&pattern, &put, remote, Handle::NULL)?;
            acp.complete(h)?;
            for _ in 0..5 {
                let start = Instant::now();
                for _ in 0..n {
                    let h = if mode == "put" {
                        acp.put_strided(&local, &put, remote, Handle::NULL)?
                    } else {
                        acp.get_strided(&mut local, &get, remote, Handle::NULL)?
                    };
                    acp.complete(h)?;
                }
                let ns = start.elapsed().as_nanos() as f64 / n.max(1) as f64;
                println!("{mode} {rows} rows: {ns:.2} ns");
            }
            if mode == "put" {
                local.fill(0);
                let h = acp.get_strided(&mut local, &get, remote, Handle::NULL)?;
                acp.complete(h)?;
            }
            if local != pattern {
                eprintln!("strided_loop: the rows read back differ from the rows written");
                std::process::exit(1);
            }
        }
        acp.barrier()?;
        acp.free(block)?;
        Ok(())
    })
}
