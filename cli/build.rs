//! Rebuilds the binary when the shipped graphs change: they are compiled in (`graph::shipped`).
fn main() {
    println!("cargo:rerun-if-changed=../graphs");
    println!("cargo:rerun-if-changed=build.rs");
}
