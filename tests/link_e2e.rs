//! Linking (`tests/ptx/link/`): a kernel module that calls a device function of a
//! library module, reads its variable, overrides nothing but is overridden (a `.weak`
//! function replaced by the library's `.visible` one), shares a `.common` array, and
//! has an internal function whose name the library also uses. Run through the Rust API
//! (`Module::link`) and the CLI (`ptxvk run a.ptx b.ptx`), checked against a CPU model
//! of what PTX ISA §11.6's linking rules make the program compute.

mod common;

use common::*;
use ptxvk::{Arg, Module, SourceMap};

fn sources() -> SourceMap {
    let dir = repo().join("tests/ptx/link");
    let read = |f: &str| std::fs::read_to_string(dir.join(f)).expect("test PTX");
    SourceMap::new([("main.ptx", read("main.ptx")), ("lib.ptx", read("lib.ptx"))])
}

/// `out[i]` by the linking rules: `scale` is lib's (its internal `helper` multiplies by
/// 5, then by lib's `factor` = 3); `offset` is lib's strong one (`+ 100`, not main's
/// weak `+ 1`); `helper` in main is main's own (`* 2`); then `+ factor`.
fn expected(n: u32) -> Vec<u32> {
    let factor = 3;
    (0..n).map(|i| i * 5 * factor + (i + 100) + i * 2 + factor).collect()
}

#[test]
fn a_program_of_two_modules_runs_with_the_linked_symbols() {
    let Some(device) = device() else { return };
    let module = Module::link(&device, &sources()).expect("links and compiles");
    let n = 300u32;
    let out = device.zeroed::<u32>(n as usize).expect("buffer");
    module
        .kernel("k")
        .expect("kernel")
        .launch(n.div_ceil(128), 128, 0, &[Arg::from(&out), Arg::from(n)])
        .expect("launch");
    assert_eq!(out.to_vec().expect("read"), expected(n));
    // The larger `.common counter[4]` (lib.ptx) is the one kept: main's kernel counts
    // into its fourth element, which main's own `counter[2]` does not have.
    let counter = module.read_global("counter").expect("counter");
    assert_eq!(counter.len(), 16);
    assert_eq!(u32::from_le_bytes(counter[12..16].try_into().expect("4 bytes")), n);
}

#[test]
fn the_cli_links_the_files_it_is_given() {
    let Some(_device) = device() else { return };
    let dir = repo().join("tests/ptx/link");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ptxvk"))
        .arg("run")
        .args([dir.join("main.ptx"), dir.join("lib.ptx")])
        .args(["--grid", "2", "--block", "32", "--arg", "buf:u32:zeros:64", "--arg", "u32:64"])
        .arg("--json")
        .output()
        .expect("ptxvk runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let data: Vec<u32> = json["buffers"][0]["data"]
        .as_array()
        .expect("data")
        .iter()
        .map(|v| v.as_u64().expect("number") as u32)
        .collect();
    assert_eq!(data, expected(64));
}

#[test]
fn the_library_alone_loads_without_kernels_and_the_kernel_alone_is_missing_symbols() {
    let Some(device) = device() else { return };
    let map = sources();
    let lib = SourceMap::new([("lib.ptx", &map.text()[map.range(1)])]);
    let module = Module::link(&device, &lib).expect("a module of device functions loads");
    assert!(module.kernel_names().is_empty());
    assert_eq!(module.read_global("factor").expect("factor"), 3u32.to_le_bytes());

    let main = SourceMap::new([("main.ptx", &map.text()[map.range(0)])]);
    let Err(err) = Module::link(&device, &main) else { panic!("undefined symbols must fail") };
    let text = err.to_string();
    assert!(text.contains("`factor` is never defined"), "{text}");
    assert!(text.contains("main.ptx:9:"), "{text}");
    assert_eq!(err.exit_code(), 1);
}

#[test]
fn a_call_expecting_a_result_of_a_void_function_links_by_name() {
    let Some(device) = device() else { return };
    let dir = repo().join("tests/ptx/link_void");
    let read = |f: &str| std::fs::read_to_string(dir.join(f)).expect("test PTX");
    let sources =
        SourceMap::new([("caller.ptx", read("caller.ptx")), ("callee.ptx", read("callee.ptx"))]);
    let module = Module::link(&device, &sources).expect("links by name");
    let out = device.zeroed::<u64>(2).expect("buffer");
    module.kernel("k").expect("kernel").launch(1, 1, 0, &[Arg::from(&out)]).expect("launch");
    // The callee wrote 42 through the pointer; the result variable kept the 7 the
    // caller stored, since a `void` function writes no result.
    assert_eq!(out.to_vec().expect("read"), [42, 7]);
}
