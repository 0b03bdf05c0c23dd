//! Checked launches (memcheck) end to end: kernels with one injected fault each
//! (`tests/ptx/check/`), at every kind of location: after and before device
//! allocations, straddling an end, freed memory, module data, a terabyte away,
//! misaligned, atomics and reductions, shared memory past the static plus dynamic size,
//! local memory past the frame, the parameter block, and a module with 32-bit
//! addresses.
//!
//! What a report must say comes from outside the checker: the faulting thread from the
//! launch arguments, the line from the `// FAULT name` marker in the PTX, the address
//! from the arguments, and whether an address is outside every allocation from the
//! runtime's list of live allocations (a model the kernel's binary search must agree
//! with). Each fault is reported exactly once; the refused access did not happen (its
//! destination reads 0, its memory is unchanged), every other thread's did; and no
//! fault crashes the process.

mod common;

use std::sync::Mutex;

use common::*;
use ptxvk::check::{CheckConfig, CheckReport, ViolationInfo};
use ptxvk::lower::ir::{AccessKind, Space};
use ptxvk::{Arg, Device, DeviceBuffer, Error, Module};

/// The launch: 2 blocks of 30 threads; global thread `WHO` (block 1, thread 7) faults.
const GRID: u32 = 2;
const BLOCK: u32 = 30;
const THREADS: usize = (GRID * BLOCK) as usize;
const WHO: u32 = 37;

/// The tests allocate and free memory and look for gaps between allocations; run one
/// at a time so that another test's allocation cannot fill a gap a test relies on.
static SERIAL: Mutex<()> = Mutex::new(());

fn source(file: &str) -> String {
    std::fs::read_to_string(repo().join("tests/ptx/check").join(file)).expect("read PTX")
}

/// The 1-based line of the `// FAULT name` marker.
fn fault_line(file: &str, name: &str) -> usize {
    let marker = format!("// FAULT {name}");
    source(file).lines().position(|l| l.trim_end().ends_with(&marker)).expect("marker") + 1
}

/// A device whose launches are checked, listing up to `limit` violations.
fn checked(limit: usize) -> Option<Device> {
    let mut d = device()?;
    d.set_check(CheckConfig { limit, ..CheckConfig::memcheck() });
    Some(d)
}

fn module(device: &Device, file: &str) -> Module {
    Module::from_ptx_named(device, file, &source(file)).expect("module")
}

/// Whether `[address, address + size)` lies inside one live allocation: the model.
fn inside_some_allocation(device: &Device, address: u64, size: u64) -> bool {
    device
        .vk()
        .live_allocations()
        .iter()
        .any(|r| r.start <= address && address + size <= r.start + r.size)
}

/// The report of a launch that must have failed its check.
fn report(result: Result<ptxvk::LaunchStats, Error>) -> CheckReport {
    match result {
        Err(Error::CheckFailed { report, .. }) => *report,
        other => panic!("expected a checked launch to refuse an access, got {other:?}"),
    }
}

/// The one violation of `report`, checked to be thread `WHO`'s at the marked line.
fn one(report: &CheckReport, file: &str, kernel: &str) -> ViolationInfo {
    assert_eq!(report.count, 1, "{}", report.text);
    let v = report.violations[0].clone();
    assert_eq!((v.ctaid, v.tid), ([WHO / BLOCK, 0, 0], [WHO % BLOCK, 0, 0]), "{}", report.text);
    assert_eq!(v.site.ptx, format!("{file}:{}", fault_line(file, kernel)), "{}", report.text);
    assert!(report.text.contains(&format!("in {kernel}:")), "{}", report.text);
    v
}

fn launch(module: &Module, kernel: &str, shared: u32, args: &[Arg<'_>]) -> CheckReport {
    report(module.kernel(kernel).expect("kernel").launch(GRID, BLOCK, shared, args))
}

/// `out[i] == i` for every thread but `WHO`, whose slot is `who_value`.
fn assert_others_stored(out: &DeviceBuffer<u32>, who_value: u32) {
    let got = out.to_vec().expect("read");
    for (i, &g) in got.iter().enumerate().take(THREADS) {
        let want = if i == WHO as usize { who_value } else { i as u32 };
        assert_eq!(g, want, "out[{i}]");
    }
}

#[test]
fn a_store_past_the_end_of_an_allocation_is_refused_and_named() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(device) = checked(10) else { return };
    let m = module(&device, "faults.ptx");
    // 60 words: 240 bytes, so the 16 bytes after them (allocations start at multiples
    // of 256) belong to no allocation.
    let out = device.zeroed::<u32>(THREADS).expect("out");
    let idx = THREADS as i32;
    let address = out.address() + 4 * idx as u64;
    assert!(!inside_some_allocation(&device, address, 4));
    let r = launch(&m, "global_store", 0, &[Arg::from(&out), Arg::from(WHO), Arg::from(idx)]);
    let v = one(&r, "faults.ptx", "global_store");
    assert_eq!(
        (v.space, v.access, v.size, v.misaligned),
        (Space::Global, AccessKind::Write, 4, false)
    );
    assert_eq!(v.address, address);
    assert!(
        v.place.contains("0 bytes after the end of the 240-byte allocation passed as argument 0"),
        "{}",
        r.text
    );
    assert_others_stored(&out, 0);
}

#[test]
fn a_load_before_the_start_of_an_allocation_reads_zero() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(device) = checked(10) else { return };
    let m = module(&device, "faults.ptx");
    let input: Vec<u32> = (0..THREADS as u32).map(|i| 1000 + i).collect();
    let inb = device.buffer_from(&input).expect("in");
    let out = device.zeroed::<u32>(THREADS).expect("out");
    // The first word below the buffer that no allocation holds.
    let idx = (1..1 << 20)
        .map(|k| -k)
        .find(|&i| {
            !inside_some_allocation(&device, inb.address().wrapping_add_signed(4 * i64::from(i)), 4)
        })
        .expect("a gap below the buffer");
    let r = launch(
        &m,
        "global_load",
        0,
        &[Arg::from(&inb), Arg::from(&out), Arg::from(WHO), Arg::from(idx)],
    );
    let v = one(&r, "faults.ptx", "global_load");
    assert_eq!((v.space, v.access, v.size), (Space::Global, AccessKind::Read, 4));
    assert_eq!(v.address, inb.address().wrapping_add_signed(4 * i64::from(idx)));
    assert!(v.place.contains("is out of bounds"), "{}", r.text);
    let got = out.to_vec().expect("read");
    for (i, &g) in got.iter().enumerate() {
        // The refused load gives 0, so its thread stores 0 + 1.
        let want = if i == WHO as usize { 1 } else { input[i] + 1 };
        assert_eq!(g, want, "out[{i}]");
    }
}

#[test]
fn a_vector_load_straddling_the_end_is_refused_with_its_whole_size() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(device) = checked(10) else { return };
    let m = module(&device, "faults.ptx");
    // 58 words: the vector at word 56 has two words inside and two past the end.
    let input: Vec<u32> = (0..58).map(|i| i * 3 + 1).collect();
    let inb = device.buffer_from(&input).expect("in");
    let out = device.zeroed::<u32>(THREADS).expect("out");
    let r = launch(
        &m,
        "global_vector",
        0,
        &[Arg::from(&inb), Arg::from(&out), Arg::from(WHO), Arg::from(14i32)],
    );
    let v = one(&r, "faults.ptx", "global_vector");
    assert_eq!((v.access, v.size), (AccessKind::Read, 16));
    assert_eq!(v.address, inb.address() + 224);
    assert!(v.place.contains("8 of the access's bytes are past its end"), "{}", r.text);
    let got = out.to_vec().expect("read");
    for (i, &g) in got.iter().enumerate() {
        let k = (i % 4) * 4;
        let want = if i == WHO as usize { 0 } else { input[k..k + 4].iter().sum() };
        assert_eq!(g, want, "out[{i}]");
    }
}

#[test]
fn atomics_and_reductions_outside_allocations_are_refused() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(device) = checked(10) else { return };
    let m = module(&device, "faults.ptx");
    let idx = THREADS as i32;
    let out = device.zeroed::<u32>(THREADS).expect("out");
    let old = device.zeroed::<u32>(THREADS).expect("old");
    let r = launch(
        &m,
        "global_atomic",
        0,
        &[Arg::from(&out), Arg::from(&old), Arg::from(WHO), Arg::from(idx)],
    );
    let v = one(&r, "faults.ptx", "global_atomic");
    assert_eq!((v.access, v.size), (AccessKind::Atomic, 4));
    assert_eq!(v.address, out.address() + 4 * idx as u64);
    // The refused atomic returns 0 and adds nothing.
    let (got, olds) = (out.to_vec().expect("out"), old.to_vec().expect("old"));
    for i in 0..THREADS {
        assert_eq!(got[i], u32::from(i != WHO as usize), "out[{i}]");
        assert_eq!(olds[i], 100, "old[{i}]");
    }

    let sums = device.zeroed::<u32>(THREADS).expect("sums");
    let r = launch(&m, "global_reduction", 0, &[Arg::from(&sums), Arg::from(WHO), Arg::from(idx)]);
    let v = one(&r, "faults.ptx", "global_reduction");
    assert_eq!((v.access, v.address), (AccessKind::Atomic, sums.address() + 4 * idx as u64));
    let got = sums.to_vec().expect("sums");
    for (i, &g) in got.iter().enumerate() {
        assert_eq!(g, if i == WHO as usize { 0 } else { 5 }, "sums[{i}]");
    }
}

#[test]
fn a_misaligned_store_is_refused_as_misaligned() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(device) = checked(10) else { return };
    let m = module(&device, "faults.ptx");
    let out = device.zeroed::<u64>(THREADS).expect("out");
    let r = launch(&m, "global_misaligned", 0, &[Arg::from(&out), Arg::from(WHO), Arg::from(4i32)]);
    let v = one(&r, "faults.ptx", "global_misaligned");
    assert!(v.misaligned, "{}", r.text);
    assert_eq!((v.access, v.size), (AccessKind::Write, 8));
    assert_eq!(v.address, out.address() + 8 * u64::from(WHO) + 4);
    assert!(r.text.contains("Misaligned __global__ write of size 8 bytes"), "{}", r.text);
    let got = out.to_vec().expect("read");
    for (i, &g) in got.iter().enumerate() {
        assert_eq!(g, if i == WHO as usize { 0 } else { i as u64 }, "out[{i}]");
    }
}

#[test]
fn a_store_a_terabyte_away_is_refused_without_a_crash() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(device) = checked(10) else { return };
    let m = module(&device, "faults.ptx");
    let out = device.zeroed::<u32>(THREADS).expect("out");
    let r = launch(&m, "global_far", 0, &[Arg::from(&out), Arg::from(WHO), Arg::from(0i32)]);
    let v = one(&r, "faults.ptx", "global_far");
    assert_eq!(v.address, out.address() + (1 << 40));
    assert!(
        v.place.contains("1,099,511,627,536 bytes after the end of the 240-byte"),
        "{}",
        r.text
    );
}

#[test]
fn freed_memory_is_named_and_each_thread_reported_once() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(device) = checked(THREADS) else { return };
    let m = module(&device, "faults.ptx");
    let freed = device.zeroed::<u32>(THREADS).expect("buffer");
    let address = freed.address();
    drop(freed);
    assert!(!inside_some_allocation(&device, address, 4 * THREADS as u64));
    let r = launch(
        &m,
        "global_store",
        0,
        &[Arg::Bytes(address.to_le_bytes().to_vec()), Arg::from(u32::MAX), Arg::from(0i32)],
    );
    // Every thread stores into the freed memory: each is reported once.
    assert_eq!(r.count, THREADS, "{}", r.text);
    let mut threads: Vec<u32> =
        r.violations.iter().map(|v| v.ctaid[0] * BLOCK + v.tid[0]).collect();
    threads.sort_unstable();
    assert_eq!(threads, (0..THREADS as u32).collect::<Vec<_>>());
    for v in &r.violations {
        let offset = u64::from(v.ctaid[0] * BLOCK + v.tid[0]) * 4;
        assert_eq!(v.address, address + offset);
        assert!(
            v.place.contains(&format!(
                "is {offset} bytes inside a 240-byte allocation that was freed"
            )),
            "{}",
            r.text
        );
    }
}

#[test]
fn a_module_variable_is_checked_against_the_module_data() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(device) = checked(10) else { return };
    let m = module(&device, "faults.ptx");
    let out = device.zeroed::<u32>(THREADS).expect("out");
    let (table, size) = m.global_address("table").expect("table");
    assert_eq!(size, 16);
    assert!(!inside_some_allocation(&device, table + 16, 4));
    let r = launch(&m, "module_global", 0, &[Arg::from(&out), Arg::from(WHO), Arg::from(4i32)]);
    let v = one(&r, "faults.ptx", "module_global");
    assert_eq!(v.address, table + 16);
    assert!(
        v.place.contains("after the end of the 16-byte allocation of the module's"),
        "{}",
        r.text
    );
}

#[test]
fn shared_memory_is_checked_against_the_static_and_dynamic_size() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(device) = checked(10) else { return };
    let m = module(&device, "faults.ptx");
    let out = device.zeroed::<u32>(THREADS).expect("out");
    // 32 static words and 16 dynamic ones: word 47 is the last.
    let k = m.kernel("shared_store").expect("kernel");
    let args = |idx: i32| [Arg::from(&out), Arg::from(WHO), Arg::from(idx)];
    k.launch(GRID, BLOCK, 64, &args(47)).expect("word 47 is inside the dynamic region");
    let r = launch(&m, "shared_store", 64, &args(48));
    let v = one(&r, "faults.ptx", "shared_store");
    assert_eq!((v.space, v.access, v.address), (Space::Shared, AccessKind::Write, 192));
    assert!(v.place.contains("192 bytes of shared memory (128 static, 64 dynamic)"), "{}", r.text);
    let got = out.to_vec().expect("read");
    for (i, &g) in got.iter().enumerate() {
        if i != WHO as usize {
            assert_eq!(g, i as u32, "out[{i}]");
        }
    }

    let counts = device.zeroed::<u32>(THREADS).expect("counts");
    let r = launch(&m, "shared_atomic", 0, &[Arg::from(&counts), Arg::from(WHO), Arg::from(32i32)]);
    let v = one(&r, "faults.ptx", "shared_atomic");
    assert_eq!((v.space, v.access, v.address), (Space::Shared, AccessKind::Atomic, 128));
    let got = counts.to_vec().expect("read");
    for (i, &g) in got.iter().enumerate() {
        assert_eq!(g, u32::from(i != WHO as usize), "counts[{i}]");
    }
}

#[test]
fn local_memory_is_checked_against_the_frame() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(device) = checked(10) else { return };
    let m = module(&device, "faults.ptx");
    let out = device.zeroed::<u32>(THREADS).expect("out");
    let local_bytes = m.kernel("local_store").expect("kernel").info().local_bytes;
    assert_eq!(local_bytes, 16);
    let r = launch(&m, "local_store", 0, &[Arg::from(&out), Arg::from(WHO), Arg::from(4i32)]);
    let v = one(&r, "faults.ptx", "local_store");
    assert_eq!((v.space, v.access, v.address), (Space::Local, AccessKind::Write, 16));
    assert!(v.place.contains("local memory has 16 bytes"), "{}", r.text);
    // Thread i stores i at word i % 4, then reads word 0: i either way.
    assert_others_stored(&out, WHO);
}

#[test]
fn a_parameter_read_past_the_block_is_refused() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(device) = checked(10) else { return };
    let m = module(&device, "faults.ptx");
    let out = device.zeroed::<u32>(THREADS).expect("out");
    let r = launch(&m, "param_load", 0, &[Arg::from(&out), Arg::from(WHO), Arg::from(0i32)]);
    let v = one(&r, "faults.ptx", "param_load");
    assert_eq!((v.space, v.access, v.address, v.size), (Space::Param, AccessKind::Read, 76, 4));
    assert!(v.place.contains("the parameter block has 16 bytes"), "{}", r.text);
    assert_others_stored(&out, 0);
}

#[test]
fn a_module_with_32_bit_addresses_is_checked_in_its_window() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(device) = checked(10) else { return };
    let m = module(&device, "faults32.ptx");
    // Allocated after the module: inside the address window.
    let out = device.zeroed::<u32>(THREADS).expect("out");
    let idx = THREADS as i32;
    let r = launch(&m, "global_store32", 0, &[Arg::from(&out), Arg::from(WHO), Arg::from(idx)]);
    let v = one(&r, "faults32.ptx", "global_store32");
    assert_eq!(v.address, out.address() + 4 * idx as u64);
    assert!(
        v.place.contains("after the end of the 240-byte allocation passed as argument 0"),
        "{}",
        r.text
    );
    assert_others_stored(&out, 0);
}

#[test]
fn an_asynchronous_launch_reports_at_synchronize_and_valid_launches_pass() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(device) = checked(10) else { return };
    let m = module(&device, "faults.ptx");
    let out = device.zeroed::<u32>(THREADS).expect("out");
    let k = m.kernel("global_store").expect("kernel");
    // No thread faults: nothing to report.
    k.launch(GRID, BLOCK, 0, &[Arg::from(&out), Arg::from(u32::MAX), Arg::from(0i32)])
        .expect("a valid launch passes its check");
    assert_others_stored(&out, WHO);
    let stream = device.create_stream(ptxvk::StreamKind::NonBlocking).expect("stream");
    let args = [Arg::from(&out), Arg::from(WHO), Arg::from(THREADS as i32)];
    k.launch_on(&stream, GRID, BLOCK, 0, &args).expect("enqueued");
    let r = match stream.synchronize().map_err(Error::from) {
        Err(Error::CheckFailed { report, .. }) => *report,
        other => panic!("expected the refused access at synchronize, got {other:?}"),
    };
    one(&r, "faults.ptx", "global_store");
}

#[test]
fn a_pointer_into_another_live_allocation_is_valid_as_compute_sanitizer_sees_it() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(device) = checked(10) else { return };
    let m = module(&device, "faults.ptx");
    let out = device.zeroed::<u32>(THREADS).expect("out");
    let other = device.zeroed::<u32>(4).expect("other");
    // Thread WHO's index reaches the other buffer from `out`: outside the argument's
    // allocation (the fast test fails) but inside a live one (the table's search holds).
    let distance = other.address() as i64 - out.address() as i64;
    let idx = i32::try_from(distance / 4).expect("two fresh buffers within 8 GiB of each other");
    let k = m.kernel("global_store").expect("kernel");
    k.launch(GRID, BLOCK, 0, &[Arg::from(&out), Arg::from(WHO), Arg::from(idx)])
        .expect("an access inside a live allocation is valid");
    assert_eq!(other.to_vec().expect("other")[0], WHO);
    assert_others_stored(&out, 0);
}

// Racecheck, on `tests/kernels/races.cu` as each of the six compilers built it: the
// races come from the kernels' design (which threads touch which words between which
// barriers), the lines from the PTX text, and the correct kernels' results from a
// CPU model.

/// The compilers' builds of `races.cu`.
const RACE_BUILDS: [&str; 6] = [
    "races.nvcc.sm_75.ptx",
    "races.nvcc.sm_80.ptx",
    "races.nvcc.sm_90.ptx",
    "races.nvrtc.compute_52.ptx",
    "races.nvrtc.compute_70.ptx",
    "races.clang.sm_70.ptx",
];

/// A device whose launches get racecheck (and memcheck).
fn racechecked() -> Option<Device> {
    let mut d = device()?;
    d.set_check(CheckConfig::racecheck());
    Some(d)
}

fn race_module(device: &Device, file: &str) -> (Module, String) {
    let ptx = std::fs::read_to_string(repo().join("tests/kernels").join(file)).expect("PTX");
    (Module::from_ptx_named(device, file, &ptx).expect("module"), ptx)
}

/// The `file:line`s of the lines of entry `kernel`'s body that contain `needle`.
fn lines_of(ptx: &str, file: &str, kernel: &str, needle: &str) -> Vec<String> {
    let start = ptx.find(&format!(".entry {kernel}(")).expect("entry");
    let end = ptx[start..].find("\n}").map_or(ptx.len(), |e| start + e);
    let first = ptx[..start].lines().count();
    ptx[start..end]
        .lines()
        .enumerate()
        .filter(|(_, l)| l.contains(needle))
        .map(|(i, _)| format!("{file}:{}", first + i))
        .collect()
}

fn race_report(result: Result<ptxvk::LaunchStats, Error>) -> CheckReport {
    let r = report(result);
    assert_eq!(r.count, 0, "no invalid access, only races: {}", r.text);
    r
}

#[test]
fn a_missing_syncthreads_is_one_race_between_warps_naming_both_lines() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(device) = racechecked() else { return };
    for file in RACE_BUILDS {
        let (m, ptx) = race_module(&device, file);
        let out = device.zeroed::<u32>(128).expect("out");
        let k = m.kernel("missing_syncthreads").expect("kernel");
        let r = race_report(k.launch(2, 64, 0, &[Arg::from(&out)]));
        assert_eq!(r.races.len(), 1, "{file}: one pair of instructions races:\n{}", r.text);
        let race = &r.races[0];
        let store = lines_of(&ptx, file, "missing_syncthreads", "st.shared");
        let load = lines_of(&ptx, file, "missing_syncthreads", "ld.shared");
        assert_eq!((store.len(), load.len()), (1, 1), "{file}");
        let mut sites = [race.first.site.ptx.clone(), race.second.site.ptx.clone()];
        sites.sort();
        let mut want = [store[0].clone(), load[0].clone()];
        want.sort();
        assert_eq!(sites, want, "{file}:\n{}", r.text);
        // Thread t reads the word thread 63 - t writes: a pair in different warps.
        let (a, b) = (race.first.tid[0], race.second.tid[0]);
        assert_eq!(a + b, 63, "{file}: threads {a} and {b}:\n{}", r.text);
        let writer = if race.first.access == AccessKind::Write { a } else { b };
        assert_eq!(race.offset, 4 * u64::from(writer), "{file}");
        assert!(!race.same_warp && r.text.contains("missing __syncthreads()"), "{}", r.text);
        assert!(race.hazards >= 1);
    }
}

#[test]
fn a_warp_synchronous_reduction_without_syncwarp_is_reported_as_such() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(device) = racechecked() else { return };
    for file in RACE_BUILDS {
        let (m, ptx) = race_module(&device, file);
        let input = device.buffer_from(&(0..64u32).collect::<Vec<_>>()).expect("in");
        let out = device.zeroed::<u32>(2).expect("out");
        let k = m.kernel("warp_sum_unsynced").expect("kernel");
        let r = race_report(k.launch(2, 32, 0, &[Arg::from(&input), Arg::from(&out)]));
        assert!(!r.races.is_empty(), "{file}");
        let volatile = lines_of(&ptx, file, "warp_sum_unsynced", ".volatile.shared");
        for race in &r.races {
            // Both accesses are the reduction's, by two of its 16 threads, in warp 0.
            for side in [&race.first, &race.second] {
                assert!(volatile.contains(&side.site.ptx), "{file}: {}\n{}", side.site.ptx, r.text);
                assert!(side.tid[0] < 16, "{file}:\n{}", r.text);
            }
            assert_ne!(race.first.tid, race.second.tid);
            assert!(race.same_warp, "{file}:\n{}", r.text);
        }
        assert!(r.text.contains("missing __syncwarp()"), "{}", r.text);
    }
}

#[test]
fn correct_barriers_syncwarps_byte_neighbours_and_atomics_report_nothing() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(device) = racechecked() else { return };
    for file in RACE_BUILDS {
        let (m, _) = race_module(&device, file);
        let out = device.zeroed::<u32>(128).expect("out");
        let run = |name: &str, block: u32, args: &[Arg<'_>]| {
            let k = m.kernel(name).expect("kernel");
            if let Err(e) = k.launch(2, block, 0, args) {
                panic!("{file}: `{name}` is race-free, got: {e}");
            }
        };
        run("with_syncthreads", 64, &[Arg::from(&out)]);
        let want: Vec<u32> = (0..128).map(|i| 3 * (63 - i % 64) + 1).collect();
        assert_eq!(out.to_vec().expect("out"), want, "{file}: with_syncthreads");

        let values: Vec<u32> = (0..64).map(|i| i * 7 + 3).collect();
        let input = device.buffer_from(&values).expect("in");
        let sums = device.zeroed::<u32>(2).expect("sums");
        run("warp_sum_synced", 32, &[Arg::from(&input), Arg::from(&sums)]);
        let want: Vec<u32> = values.chunks(32).map(|c| c.iter().sum()).collect();
        assert_eq!(sums.to_vec().expect("sums"), want, "{file}: warp_sum_synced");

        run("bytes_and_atomics", 64, &[Arg::from(&out)]);
        let want: Vec<u32> = (0..128).map(|i| ((i % 64) ^ 1) + 64).collect();
        assert_eq!(out.to_vec().expect("out"), want, "{file}: bytes_and_atomics");
    }
}

/// A real race in real compiler output: clang 14 moves the load of `histogram`'s
/// `__shared__ is_last` above the `__syncthreads()` that orders it after thread 0's
/// store (`tests/kernels/atomics.cu`; the load's alias analysis does not see the
/// barrier touch the variable). NVIDIA's compilers keep the load after the barrier.
#[test]
fn racecheck_finds_clangs_shared_load_hoisted_above_syncthreads_and_nothing_in_nvcc_builds() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(device) = racechecked() else { return };
    let builds = [
        "atomics.clang.sm_70.ptx",
        "atomics.nvcc.sm_75.ptx",
        "atomics.nvcc.sm_80.ptx",
        "atomics.nvcc.sm_90.ptx",
        "atomics.nvrtc.compute_52.ptx",
        "atomics.nvrtc.compute_70.ptx",
    ];
    for file in builds {
        let (m, ptx) = race_module(&device, file);
        let data = device.buffer_from(&(0..500u32).collect::<Vec<_>>()).expect("data");
        let hist = device.zeroed::<u32>(256).expect("hist");
        let stats = device.zeroed::<u32>(8).expect("stats");
        let args = [Arg::from(&data), Arg::from(500i32), Arg::from(&hist), Arg::from(&stats)];
        let result = m.kernel("histogram").expect("kernel").launch(3, 64, 0, &args);
        // The PTX says which build has the load before the barrier that follows the store.
        let load = lines_of(&ptx, file, "histogram", "ld.shared.u32");
        let store = lines_of(&ptx, file, "histogram", "st.shared.u32");
        let line = |l: &String| l.rsplit(':').next().and_then(|n| n.parse::<usize>().ok());
        let is_last = |l: &&String| {
            let n = line(l).expect("line");
            ptx.lines().nth(n - 1).is_some_and(|t| t.contains("is_last"))
        };
        let load: Vec<&String> = load.iter().filter(is_last).collect();
        let store: Vec<&String> = store.iter().filter(is_last).collect();
        let hoisted = load.iter().zip(&store).any(|(l, s)| line(l) < line(s));
        if !hoisted {
            result.unwrap_or_else(|e| panic!("{file}: race-free, got: {e}"));
            continue;
        }
        assert_eq!(file, "atomics.clang.sm_70.ptx");
        let r = race_report(result);
        assert_eq!(r.races.len(), 1, "{}", r.text);
        let race = &r.races[0];
        let mut sites = [race.first.site.ptx.clone(), race.second.site.ptx.clone()];
        sites.sort();
        let mut want = [load[0].clone(), store[0].clone()];
        want.sort();
        assert_eq!(sites, want, "{}", r.text);
        // Thread 0 stores; the others of every warp load: a missing __syncthreads().
        let writer =
            if race.first.access == AccessKind::Write { &race.first } else { &race.second };
        assert_eq!(writer.tid, [0, 0, 0]);
        assert!(!race.same_warp && r.text.contains("missing __syncthreads()"), "{}", r.text);
    }
}

// Initcheck, on `tests/kernels/vector_add.cu` as each compiler built it
// (`c[i] = a[i] + b[i]` for `i < n`): which reads are of unwritten words follows from
// which bytes the test wrote with the host, which the kernel wrote, and the launch.

const VECTOR_ADD_BUILDS: [&str; 6] = [
    "vector_add.nvcc.sm_75.ptx",
    "vector_add.nvcc.sm_80.ptx",
    "vector_add.nvcc.sm_90.ptx",
    "vector_add.nvrtc.compute_52.ptx",
    "vector_add.nvrtc.compute_70.ptx",
    "vector_add.clang.sm_70.ptx",
];

/// A device whose launches get initcheck (and memcheck), listing up to 1,000 findings.
fn initchecked() -> Option<Device> {
    let mut d = device()?;
    d.set_check(CheckConfig { limit: 1000, ..CheckConfig::initcheck() });
    Some(d)
}

#[test]
fn initcheck_reports_exactly_the_reads_of_words_nothing_wrote() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(device) = initchecked() else { return };
    const N: usize = 100;
    const WRITTEN: usize = 37;
    let floats = |n: usize| -> Vec<u8> {
        (0..n).flat_map(|i| (i as f32 * 0.5).to_le_bytes()).collect::<Vec<u8>>()
    };
    for file in VECTOR_ADD_BUILDS {
        let (m, _) = race_module(&device, file);
        let k = m.kernel("vector_add").expect("kernel");
        let bytes = 4 * N as u64;
        let [a, b, c, d] = [0; 4].map(|_| device.alloc_uninitialized(bytes).expect("buffer"));
        // All of a, the first WRITTEN elements of b, none of c.
        device.vk().upload(&a, 0, &floats(N)).expect("a");
        device.vk().upload(&b, 0, &floats(WRITTEN)).expect("b");
        let args = |x, y, z| [Arg::from(x), Arg::from(y), Arg::from(z), Arg::from(N as i32)];
        let r = race_report(k.launch(2, 64, 0, &args(&a, &b, &c)));
        assert_eq!((r.uninitialized, r.races.len()), (N - WRITTEN, 0), "{file}:\n{}", r.text);
        // Records come in the order threads made them; one per unwritten element.
        let mut found = r.violations.clone();
        found.sort_by_key(|v| v.address);
        for (v, i) in found.iter().zip(WRITTEN..) {
            assert!(v.uninitialized && v.space == Space::Global, "{file}: {v:?}");
            assert_eq!(v.address, b.address() + 4 * i as u64, "{file}:\n{}", r.text);
            let i = i as u32;
            assert_eq!((v.ctaid, v.tid), ([i / 64, 0, 0], [i % 64, 0, 0]), "{file}");
            assert!(v.place.contains("passed as argument 1"), "{}", v.place);
        }
        assert!(r.text.contains("Uninitialized __global__ memory read of size 4 bytes"));
        // The kernel wrote all of c (its stores mark it); reading it back is clean.
        k.launch(2, 64, 0, &args(&c, &a, &d)).unwrap_or_else(|e| panic!("{file}: {e}"));
        // A memset and a device-to-device copy write too.
        let stream = device.vk().default_stream();
        stream.memset(&b, 4 * WRITTEN as u64, 4 * 40, ptxvk_vk::Pattern::U32(0)).expect("set");
        stream.copy_buffer(&a, 0, &b, 4 * 77, 4 * 23).expect("copy");
        k.launch(2, 64, 0, &args(&a, &b, &d)).unwrap_or_else(|e| panic!("{file}: {e}"));
    }
}

#[test]
fn initcheck_counts_zeroed_buffers_host_memory_and_earlier_allocations_as_written() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(mut device) = device() else { return };
    // Made before initcheck: no shadow. (The device is shared: the initcheck test that
    // held the lock before may have left write tracking on.)
    device.set_check(CheckConfig::default());
    let early = device.alloc_uninitialized(400).expect("early");
    device.set_check(CheckConfig::initcheck());
    let (m, _) = race_module(&device, VECTOR_ADD_BUILDS[0]);
    let k = m.kernel("vector_add").expect("kernel");
    let zeroed = device.zeroed::<f32>(100).expect("zeroed");
    let host = device.vk().alloc_host(400).expect("pinned");
    let out = device.alloc_uninitialized(400).expect("out");
    let args = [Arg::from(&early), Arg::from(&host), Arg::from(&out), Arg::from(100i32)];
    k.launch(2, 64, 0, &args).expect("nothing unwritten is read");
    let args = [Arg::from(&zeroed), Arg::from(&out), Arg::from(&early), Arg::from(100i32)];
    k.launch(2, 64, 0, &args).expect("nothing unwritten is read");
}

/// A module compiled for initcheck on a device that tracks no writes would find no
/// shadow and count every allocation as written, checking nothing: its launch fails
/// and says why, and the same module launches once the device tracks writes.
#[test]
fn an_initcheck_module_on_a_device_that_tracks_no_writes_is_refused() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(mut device) = device() else { return };
    device.set_check(CheckConfig::memcheck());
    let file = VECTOR_ADD_BUILDS[0];
    let ptx = std::fs::read_to_string(repo().join("tests/kernels").join(file)).expect("PTX");
    let target = ptxvk::compile::Target { check: true, initcheck: true, ..device.target() };
    let compiled = ptxvk::compile::compile_with(file, &ptx, None, target).expect("compile");
    let m = Module::from_compiled(&device, compiled).expect("module");
    let k = m.kernel("vector_add").expect("kernel");
    let buffers = |d: &Device| [0; 3].map(|_| d.zeroed::<f32>(64).expect("buffer"));
    let [a, b, c] = buffers(&device);
    let args = [Arg::from(&a), Arg::from(&b), Arg::from(&c), Arg::from(64i32)];
    match k.launch(1, 64, 0, &args) {
        Err(Error::Launch(e)) => assert!(e.contains("initcheck"), "{e}"),
        other => panic!("an initcheck kernel launched untracked: {other:?}"),
    }
    device.set_check(CheckConfig::initcheck());
    let [a, b, c] = buffers(&device);
    let args = [Arg::from(&a), Arg::from(&b), Arg::from(&c), Arg::from(64i32)];
    k.launch(1, 64, 0, &args).expect("tracked: the launch runs");
}

/// A thread that makes several refused global accesses records the first and counts
/// them all: in `vector_add` with one-element `a` and `b`, every thread but 0 reads
/// both past their end. Which of those reads are refused is the model's: the ones that
/// land outside every live allocation (compute-sanitizer's rule too).
#[test]
fn a_threads_refused_accesses_are_all_counted_and_its_first_is_listed() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(device) = checked(1000) else { return };
    for file in VECTOR_ADD_BUILDS {
        let (m, _) = race_module(&device, file);
        let k = m.kernel("vector_add").expect("kernel");
        let a = device.buffer_from(&[1.5f32]).expect("a");
        let b = device.buffer_from(&[2.0f32]).expect("b");
        let c = device.buffer_from(&[7.0f32; 64]).expect("c");
        let refused = |i: u64| {
            [a.address() + 4 * i, b.address() + 4 * i]
                .into_iter()
                .filter(|&at| !inside_some_allocation(&device, at, 4))
                .collect::<Vec<u64>>()
        };
        let total: usize = (0..64).map(|i| refused(i).len()).sum();
        let threads: Vec<u32> = (0..64u32).filter(|&i| !refused(u64::from(i)).is_empty()).collect();
        assert!(total > threads.len(), "the model has threads refused twice");
        let args = [Arg::from(&a), Arg::from(&b), Arg::from(&c), Arg::from(64i32)];
        let r = report(k.launch(1, 64, 0, &args));
        assert_eq!(r.count, total, "{file}:\n{}", r.text);
        assert_eq!(r.violations.len(), threads.len(), "{file}: one per thread:\n{}", r.text);
        let mut listed: Vec<u32> = r.violations.iter().map(|v| v.tid[0]).collect();
        listed.sort_unstable();
        assert_eq!(listed, threads, "{file}");
        for v in &r.violations {
            assert!(refused(u64::from(v.tid[0])).contains(&v.address), "{file}: {v:?}");
        }
        // Thread 0's reads were valid; a thread whose reads were both refused read 0s.
        let got = c.to_vec().expect("c");
        assert_eq!(got[0], 3.5, "{file}");
        for i in (1..64).filter(|&i| refused(i).len() == 2) {
            assert_eq!(got[i as usize], 0.0, "{file}: c[{i}]");
        }
    }
}
