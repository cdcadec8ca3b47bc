//! `gaspar demo`: a real parallel run on the shared-memory transport that shows the
//! runtime at work: a ring of puts, an atomic counter, and ACP's nonblocking allgather.

use std::process::ExitCode;

use gaspar::launcher::LaunchSpec;
use gaspar::{GlobalPtr, Handle};

pub(crate) fn launch(procs: u32) -> ExitCode {
    match crate::this_program() {
        Ok(program) => crate::launch(&LaunchSpec {
            procs,
            label: true,
            program,
            args: vec!["demo-rank".into()],
        }),
        Err(e) => {
            eprintln!("gaspar demo: {e}");
            ExitCode::FAILURE
        }
    }
}

pub(crate) fn rank() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("gaspar demo: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> gaspar::Result<()> {
    let rt = gaspar::init()?.into_acp();
    let (me, n) = (rt.rank(), rt.procs());
    println!("rank {me} of {n} on pid {}", std::process::id());

    // Ring: put my rank into my right neighbour's starter memory.
    let right = (me + 1) % n;
    GlobalPtr::<u64>::new(rt.starter_ga(right)?).put(&rt, &u64::from(me))?;
    rt.barrier()?;
    let from_left = GlobalPtr::<u64>::new(rt.starter_ga(me)?).get(&rt)?;
    println!("ring: received {from_left} from my left neighbour");

    // Counter: every rank adds 1000 times to one word on rank 0.
    let counter = rt.alloc(8)?;
    let word = GlobalPtr::<u64>::new(counter.ga(0)?);
    if me == 0 {
        word.put(&rt, &0)?;
    }
    rt.barrier()?;
    for _ in 0..1000 {
        word.fetch_add(&rt, 1)?;
    }
    rt.barrier()?;
    if me == 0 {
        println!(
            "counter: {} (expected {})",
            word.get(&rt)?,
            1000 * u64::from(n)
        );
    }

    // Allgather (ACP section 2.5): each rank's 8 bytes reach every rank's starter memory
    // through a binary tree of third-party copies ordered by handles.
    let block = 8u64;
    let slot = |rank: u32, of: u32| -> gaspar::Result<gaspar::GlobalAddr> {
        rt.starter_ga(rank)?
            .offset(block * u64::from(of))
            .ok_or(gaspar::Error::LengthOverflow {
                what: "starter slot",
            })
    };
    rt.barrier()?;
    GlobalPtr::<u64>::new(slot(me, me)?).put(&rt, &(100 + u64::from(me)))?;
    let mut handles = vec![Handle::NULL; n as usize];
    for i in 1..n {
        let dst = (me + i) % n;
        let src = (me + (i >> 1)) % n;
        handles[dst as usize] =
            rt.copy(slot(dst, me)?, slot(src, me)?, block, handles[src as usize])?;
    }
    rt.complete(Handle::ALL)?;
    rt.barrier()?;
    let mut all = vec![0u64; n as usize];
    GlobalPtr::<u64>::new(slot(me, 0)?).get_slice(&rt, &mut all)?;
    println!("allgather: {all:?}");
    rt.finalize()
}
