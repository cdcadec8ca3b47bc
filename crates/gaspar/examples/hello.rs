//! Every rank says who it is: `gaspar run -n 4 target/debug/examples/hello`.

fn main() -> gaspar::Result<()> {
    let rt = gaspar::init()?;
    println!("hello from rank {} of {}", rt.rank(), rt.procs());
    rt.finalize()
}
