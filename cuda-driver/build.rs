//! Gives the shared library the soname of NVIDIA's driver library, so that programs
//! linked against `libcuda.so.1` load it.
fn main() {
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libcuda.so.1");
}
