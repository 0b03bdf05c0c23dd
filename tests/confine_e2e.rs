//! Confinement end to end (`docs/status.md`, *Security*): on a device that runs
//! kernels inside this process (lavapipe), an unchecked kernel's wild pointer reaches
//! no memory of the process but what ptxvk allocated. A read of a host secret, a write
//! over it and a write a terabyte away are refused and reported as memcheck reports
//! them (`CUDA_ERROR_ILLEGAL_ADDRESS` through the driver library), the secret stays
//! as it was, and the process goes on; registered host memory, which lies outside the
//! confinement range, stays reachable; shared and local accesses past their windows
//! are refused too.
//!
//! The expected values come from the test's own model: the secret's bytes before the
//! launch, and `out[i] = i` for every thread but the one with the wild pointer.

mod common;

use common::*;
use ptxvk::check::CheckReport;
use ptxvk::lower::ir::{AccessKind, Space};
use ptxvk::{Arg, Device, DeviceBuffer, Error, Module};

const GRID: u32 = 2;
const BLOCK: u32 = 30;
const THREADS: usize = (GRID * BLOCK) as usize;
/// The thread with the wild pointer: block 1, thread 7.
const WHO: u32 = 37;
const SECRET: u32 = 0x5ec2_e7ed;

fn source(file: &str) -> String {
    std::fs::read_to_string(repo().join("tests/ptx/check").join(file)).expect("read PTX")
}

/// The default device, if it confines its kernels; a device that does not (a GPU,
/// whose faults do not reach host memory) skips, loudly.
fn confined() -> Option<Device> {
    let d = device()?;
    if d.vk().confinement().is_none() {
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED: {} does not run kernels in this process, so it confines none",
            d.info().name
        );
        return None;
    }
    Some(d)
}

fn module(device: &Device, file: &str) -> Module {
    Module::from_ptx_named(device, file, &source(file)).expect("module")
}

fn refused(result: Result<ptxvk::LaunchStats, Error>) -> CheckReport {
    match result {
        Err(Error::CheckFailed { report, .. }) => *report,
        other => panic!("expected confinement to refuse an access, got {other:?}"),
    }
}

/// Runs `poke` with thread `WHO` aimed at `target`.
fn poke(device: &Device, target: u64) -> (Result<ptxvk::LaunchStats, Error>, Vec<u32>) {
    let m = module(device, "confine.ptx");
    let out: DeviceBuffer<u32> = device.zeroed(THREADS).expect("out");
    let args = [Arg::from(&out), Arg::from(target), Arg::from(WHO)];
    let result = m.kernel("poke").expect("kernel").launch(GRID, BLOCK, 0, &args);
    (result, out.to_vec().expect("read out"))
}

/// Every thread but `WHO` stored its index; `WHO` stored `who_value`.
fn assert_stored(out: &[u32], who_value: u32) {
    for (i, &got) in out.iter().enumerate() {
        let want = if i == WHO as usize { who_value } else { i as u32 };
        assert_eq!(got, want, "out[{i}]");
    }
}

#[test]
fn a_wild_pointer_neither_reads_nor_writes_host_memory() {
    let Some(device) = confined() else { return };
    let secret: Box<[u32]> = vec![SECRET; 1024].into_boxed_slice();
    let target = secret.as_ptr() as u64 + 4 * 512;
    let range = device.vk().confinement().expect("confined");
    assert!(!(range.start..range.start + range.size).contains(&target));
    let (result, out) = poke(&device, target);
    let report = refused(result);
    // The read and the write, counted; the thread records its last (confinement keeps
    // the last refused access of a thread, memcheck the first).
    assert_eq!(report.count, 2, "{}", report.text);
    let v = &report.violations[0];
    assert_eq!((v.space, v.access, v.size), (Space::Global, AccessKind::Write, 4));
    assert_eq!(v.address, target);
    assert_eq!((v.ctaid, v.tid), ([WHO / BLOCK, 0, 0], [WHO % BLOCK, 0, 0]));
    assert!(report.text.starts_with("confinement: kernel `poke`"), "{}", report.text);
    assert!(v.place.contains("refused by confinement"), "{}", report.text);
    // The secret was neither read (the thread got 0) nor written.
    assert_stored(&out, 0);
    assert!(secret.iter().all(|&w| w == SECRET));
    // The process goes on, and so does the device.
    let (again, out) = poke(&device, 0);
    assert!(again.is_err());
    assert_stored(&out, 0);
}

#[test]
fn a_write_a_terabyte_away_is_refused_and_the_process_lives() {
    let Some(device) = confined() else { return };
    let base = device.zeroed::<u32>(4).expect("buffer");
    let target = base.address() + (1 << 40);
    let (result, out) = poke(&device, target);
    let report = refused(result);
    assert_eq!(report.violations[0].address, target, "{}", report.text);
    assert_stored(&out, 0);
}

#[test]
fn memory_ptxvk_allocated_and_registered_host_memory_stay_reachable() {
    let Some(device) = confined() else { return };
    // Another allocation of the process: inside the range, so allowed.
    let other = device.buffer_from(&[77u32; 8]).expect("other");
    let (result, out) = poke(&device, other.address() + 8);
    result.expect("an access to an allocation is allowed");
    assert_stored(&out, 77);
    assert_eq!(other.to_vec().expect("read"), [77, 77, 2989, 77, 77, 77, 77, 77]);
    // Registered host memory lies outside the range; the table lets it through.
    if !device.vk().can_register_host() {
        return;
    }
    let mut host = vec![55u32; 1024];
    let target = {
        // SAFETY: `host` outlives the registration, dropped at the end of this block
        // after the launch completed.
        let registered =
            unsafe { device.vk().register_host(host.as_mut_ptr().cast(), 4096) }.expect("register");
        let (result, out) = poke(&device, registered.address() + 40);
        result.expect("an access to registered memory is allowed");
        assert_stored(&out, 55);
        registered.address() + 40
    };
    assert_eq!(host[10], 2989);
    assert!(host.iter().enumerate().all(|(i, &w)| i == 10 || w == 55));
    // Once unregistered, the same address is refused.
    let (result, _) = poke(&device, target);
    refused(result);
}

#[test]
fn shared_and_local_accesses_past_their_windows_are_refused() {
    let Some(device) = confined() else { return };
    let m = module(&device, "faults.ptx");
    for (kernel, space) in [("shared_store", Space::Shared), ("local_store", Space::Local)] {
        let out: DeviceBuffer<u32> = device.zeroed(THREADS).expect("out");
        let args = [Arg::from(&out), Arg::from(WHO), Arg::from(1i32 << 28)];
        let report = refused(m.kernel(kernel).expect("kernel").launch(GRID, BLOCK, 0, &args));
        assert_eq!(report.count, 1, "{}", report.text);
        let v = &report.violations[0];
        assert_eq!((v.space, v.access), (space, AccessKind::Write), "{}", report.text);
        assert!(v.place.contains("is out of bounds"), "{}", report.text);
    }
}

/// `poke` compiled for `target` and loaded on `device`, thread `WHO` aimed at
/// `address`.
fn poke_compiled(
    device: &Device,
    target: ptxvk::compile::Target,
    address: u64,
) -> (Result<ptxvk::LaunchStats, Error>, Vec<u32>) {
    let file = "confine.ptx";
    let compiled =
        ptxvk::compile::compile_with(file, &source(file), None, target).expect("compile");
    let m = Module::from_compiled(device, compiled).expect("module");
    let out: DeviceBuffer<u32> = device.zeroed(THREADS).expect("out");
    let args = [Arg::from(&out), Arg::from(address), Arg::from(WHO)];
    let result = m.kernel("poke").expect("kernel").launch(GRID, BLOCK, 0, &args);
    (result, out.to_vec().expect("read out"))
}

/// A launch gets the table its code was compiled for, not the one the device's own
/// check setting would give its modules: a memcheck module on a confining device
/// (whose modules are compiled for confinement) and a confinement module on a device
/// set to memcheck each allow an access to another allocation and refuse one a
/// terabyte away, reported by their own tool.
#[test]
fn each_kernel_gets_the_table_its_code_was_compiled_for() {
    let Some(mut device) = confined() else { return };
    let memcheck = ptxvk::compile::Target { check: true, ..device.target() };
    let confine = ptxvk::compile::Target { check: false, confine: true, ..device.target() };
    for (target, device_check, tool) in [
        (memcheck, ptxvk::check::CheckConfig::default(), "memcheck"),
        (confine, ptxvk::check::CheckConfig::memcheck(), "confinement"),
    ] {
        device.set_check(device_check);
        let other = device.buffer_from(&[77u32; 8]).expect("other");
        let (result, out) = poke_compiled(&device, target, other.address() + 8);
        result.unwrap_or_else(|e| panic!("{tool}: an access to an allocation is allowed: {e}"));
        assert_stored(&out, 77);
        assert_eq!(other.to_vec().expect("read")[2], 2989, "{tool}");
        let (result, out) = poke_compiled(&device, target, other.address() + (1 << 40));
        let report = refused(result);
        assert!(report.text.starts_with(&format!("{tool}: kernel `poke`")), "{}", report.text);
        assert_eq!(report.violations[0].address, other.address() + (1 << 40), "{}", report.text);
        assert_stored(&out, 0);
    }
}
