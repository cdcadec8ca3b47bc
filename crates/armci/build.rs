//! Links libarmci so that its own calls of its exported functions stay inside it: a
//! program that defines `ARMCI_Put` to intercept it (the PARMCI profiling interface)
//! must not be called back by libarmci's `PARMCI_Put`.
fn main() {
    println!("cargo:rustc-cdylib-link-arg=-Wl,-Bsymbolic-functions");
}
