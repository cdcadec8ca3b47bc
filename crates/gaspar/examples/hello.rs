//! Every rank says who it is: `gaspar run -n 4 target/debug/examples/hello`.

fn main() -> gaspar::Result<()> {
    gaspar::run_job(|rt| {
        println!("hello from rank {} of {}", rt.rank(), rt.procs());
        Ok(())
    })
}
