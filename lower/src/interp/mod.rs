//! Interpreters of the IR, with no GPU.
//!
//! * [`run`] executes a kernel — its CFG, or its structured tree once
//!   `pass::structurize` has made one — over a small grid with the semantics
//!   [`crate::ir`] specifies, written from the PTX ISA 9.2: integer and float
//!   arithmetic exactly, in every rounding direction, with `.ftz` and `.sat`
//!   ([`arith`], [`float`]); the video instructions from the ISA's pseudocode
//!   ([`video`]), the integer and bit-level operations from the ISA's pseudocode
//!   ([`integer`]) and half arithmetic correctly rounded, the UE8M0 conversions and the
//!   other narrow-format conversions on exact values ([`half`]); the warp-level matrix instructions on whole matrices (`matrix`) and the warp
//!   collectives on the lanes' values (`collective`), both from the ISA; mbarrier objects by
//!   their phases, pending counts and tx-counts ([`mbarrier`]); global memory as allocations at device addresses, each
//!   block's shared window and each thread's local window as byte arrays, atomics
//!   ([`memory`]); the system calls' failure records, printf records and heap from the
//!   system area's layout (`thread/system.rs`); warps of 32 threads and the block's barriers ([`warp`]); calls of
//!   the kernel's functions on a call stack per thread (before `pass::inline`; a warp
//!   collective inside a called function is [`Error::Unsupported`]). It is the
//!   model [`check`] compares each pass against: the observable results of a kernel
//!   (its global memory after the launch, its system status, whether it faults) must
//!   not change through a pass.
//! * [`run_cfg`] and [`run_structured`] ([`control`]) follow control flow only, under
//!   given branch decisions, to check that structuring keeps the path.
//!
//! What the interpreter cannot model exactly (the device clock, module data, 32-bit
//! address windows, grid-wide barriers, device-side launches, texture fetches and
//! formatted surface accesses before `pass::expand_texture`) is an
//! [`Error::Unsupported`], which callers count and skip. A checked launch gets an
//! allocation table of its memory's regions, without write shadows (`check_tables`),
//! which the table's routines read as a device's.

pub mod arith;
pub mod check;
mod collective;
pub mod control;
mod error;
pub mod float;
pub mod half;
pub mod integer;
mod matrix;
pub mod mbarrier;
pub mod memory;
mod thread;
pub mod video;
mod warp;

pub use control::{run_cfg, run_structured, Decide};
pub use error::Error;

use ptxvk_frontend::Span;

use crate::ir::{Kernel, Node};
use memory::{Memory, Region};
use thread::{Ctx, Thread};

/// Where the parameter block (followed by the system area) lives in device memory.
pub const PARAM_BASE: u64 = 0x7f00_0000_0000;
/// Where the allocation table and the parameter ranges of a checked launch live.
pub const CHECK_TABLE_BASE: u64 = 0x7d00_0000_0000;
/// Where the launch arena of a kernel that launches lives.
pub const ARENA_BASE: u64 = 0x7b00_0000_0000;
/// Where the device heap of a kernel that calls `malloc` lives.
pub const HEAP_BASE: u64 = 0x7c00_0000_0000;
/// Where the shared windows of a kernel whose window is in device memory live.
pub const SHARED_AREA_BASE: u64 = 0x7e00_0000_0000;
/// Bytes of system area the interpreter gives a kernel (the header, and room for
/// printf-sized records).
pub const SYSTEM_BYTES: u32 = crate::system::HEADER + 4096;

/// A launch: grid and block sizes, the parameter block's bytes, the global
/// allocations the kernel may touch (their addresses are in the parameters).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Launch {
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub params: Vec<u8>,
    pub buffers: Vec<Region>,
    pub dynamic_shared: u32,
    /// Steps (instructions and structured statements) after which the run stops.
    pub step_limit: u64,
}

/// What a launch leaves that a host can see.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    /// The bytes of each of [`Launch::buffers`] after the launch.
    pub buffers: Vec<Vec<u8>>,
    /// The system area's status word ([`crate::system::STATUS`]): 0, or a failure.
    pub status: u32,
    /// The failure's details (line, message, file, function: the system area's bytes
    /// [`crate::system::LINE`] to [`crate::system::HEAP`]), zero without one.
    pub failure: Vec<u8>,
    /// The bytes of printf records reserved ([`crate::system::PRINTF_USED`]) and the
    /// records, by thread ([`thread::printf_records`]).
    pub printf: (u32, Vec<Vec<u8>>),
    /// The launches recorded in the launch arena of a kernel that launches, canonical
    /// ([`thread::launch_records`]), and the arena's data and slot counters.
    pub launches: (u32, u32, Vec<Vec<u8>>),
    /// Steps the launch took (not a result: passes change it).
    pub steps: u64,
}

/// Runs `k` (its structured tree `body` when given, else its CFG) for `launch`.
pub fn run(k: &Kernel, body: Option<&[Node]>, launch: &Launch) -> Result<Outcome, Error> {
    // Variables are where `pass::layout_memory` places them, with the windows it sizes.
    if body.is_none() && !k.variables.is_empty() {
        let mut placed = k.clone();
        crate::pass::layout_memory::run(&mut placed);
        return run(&placed, None, launch);
    }
    let none = Span::default();
    if k.grid_sync {
        return Err(Error::Unsupported { what: "grid-wide barriers".into(), span: none });
    }
    let system_at = crate::system::offset(k.abi.size.max(launch.params.len() as u32));
    let checked = !k.check_sites.is_empty();
    let system_bytes = if checked { crate::system::CHECKED_SIZE } else { SYSTEM_BYTES };
    let mut param_block = launch.params.clone();
    param_block.resize((system_at + system_bytes) as usize, 0);
    let mut mem = Memory { regions: vec![Region { base: PARAM_BASE, bytes: param_block }] };
    mem.regions.extend(launch.buffers.iter().cloned());
    if checked {
        check_tables(k, &mut mem, system_at);
    }
    // The module's device heap (`crate::system`): empty, its address in the area.
    if k.heap {
        let bytes = vec![0; crate::system::HEAP_BYTES as usize];
        mem.regions.push(Region { base: HEAP_BASE, bytes });
        let at = u64::from(system_at + crate::system::HEAP);
        let _ = memory::write(&mut mem.regions[0].bytes, at, 8, HEAP_BASE);
    }
    // The launch arena a host makes for a grid at depth 0 (`crate::device_launch`).
    if !k.device_launches.is_empty() {
        use crate::device_launch as dl;
        let slots = thread::ARENA_SLOTS;
        let mut bytes = vec![0; dl::arena_bytes(slots, dl::DATA_PER_SLOT) as usize];
        bytes[..dl::TABLE as usize].copy_from_slice(&dl::arena_header(
            slots,
            dl::DATA_PER_SLOT,
            slots,
            0,
        ));
        mem.regions.push(Region { base: ARENA_BASE, bytes });
        let at = u64::from(system_at + crate::system::LAUNCH_ARENA);
        let _ = memory::write(&mut mem.regions[0].bytes, at, 8, ARENA_BASE);
    }
    let window = k.shared.static_bytes + launch.dynamic_shared;
    let [gx, gy, gz] = launch.grid;
    if k.shared.in_device_memory {
        let bytes = window as usize * (gx * gy * gz) as usize;
        mem.regions.push(Region { base: SHARED_AREA_BASE, bytes: vec![0; bytes] });
    }
    let order = program_order(k, body);
    let mut steps = 0;
    for (index, ctaid) in
        (0..gz).flat_map(|z| (0..gy).flat_map(move |y| (0..gx).map(move |x| [x, y, z]))).enumerate()
    {
        let mut cx = Ctx {
            k,
            memory: &mut mem,
            shared: vec![0; window as usize],
            race_shadow: vec![0; 4 * window.div_ceil(4) as usize],
            ntid: launch.block,
            ctaid,
            nctaid: launch.grid,
            param_base: PARAM_BASE,
            dynamic_shared: launch.dynamic_shared,
            shared_window: SHARED_AREA_BASE + u64::from(window) * index as u64,
            steps,
            step_limit: launch.step_limit,
            order: order.clone(),
        };
        let [bx, by, bz] = launch.block;
        let mut threads: Vec<Thread<'_>> = (0..bz)
            .flat_map(|z| (0..by).flat_map(move |y| (0..bx).map(move |x| [x, y, z])))
            .enumerate()
            .map(|(linear, tid)| Thread::new(k, body, tid, linear as u32))
            .collect();
        warp::run_block(&mut cx, &mut threads)?;
        steps = cx.steps;
    }
    let area = mem.regions[0].bytes.get(system_at as usize..).unwrap_or_default();
    let status = memory::read(area, u64::from(crate::system::STATUS), 4).unwrap_or(0) as u32;
    let used = memory::read(area, u64::from(crate::system::PRINTF_USED), 4).unwrap_or(0) as u32;
    let (line, heap) = (crate::system::LINE as usize, crate::system::HEAP as usize);
    let failure = area.get(line..heap).unwrap_or_default().to_vec();
    let printf = (used, thread::printf_records(area));
    let launches = match mem.regions.iter().find(|r| r.base == ARENA_BASE) {
        Some(r) => {
            let kernels = k.device_launches.iter().filter(|n| !n.is_empty()).count();
            let records = thread::launch_records(&r.bytes, kernels)
                .map_err(|what| Error::Undefined { what, span: none })?;
            let word = |at: u32| memory::read(&r.bytes, u64::from(at), 4).unwrap_or(0) as u32;
            (word(crate::device_launch::USED), word(crate::device_launch::COUNT), records)
        }
        None => (0, 0, Vec::new()),
    };
    let buffers = mem.regions[1..=launch.buffers.len()].iter().map(|r| r.bytes.clone()).collect();
    Ok(Outcome { buffers, status, failure, printf, launches, steps })
}

/// Each block's place in program order: in the structured tree, the order of its
/// statements (SPIR-V's structured order, where branches reconverge after their
/// merge); in a CFG, reverse post-order.
fn program_order(k: &Kernel, body: Option<&[Node]>) -> Vec<usize> {
    fn walk(nodes: &[Node], order: &mut [usize], next: &mut usize) {
        for n in nodes {
            match n {
                Node::Code(b) => {
                    if let Some(o) = order.get_mut(b.index()) {
                        *o = *next;
                        *next += 1;
                    }
                }
                Node::If { then, otherwise, .. } => {
                    walk(then, order, next);
                    walk(otherwise, order, next);
                }
                Node::Switch { cases, .. } => cases.iter().for_each(|c| walk(&c.body, order, next)),
                Node::Loop { body, .. } => walk(body, order, next),
                Node::Break | Node::Continue | Node::Return => {}
            }
        }
    }
    let mut order = vec![usize::MAX; k.blocks.len()];
    match body {
        Some(nodes) => walk(nodes, &mut order, &mut 0),
        None => {
            let cfg = crate::cfg::Cfg::new(k);
            for (b, o) in order.iter_mut().enumerate() {
                *o = cfg.rpo_index[b].unwrap_or(usize::MAX);
            }
        }
    }
    order
}

/// The allocation table and parameter ranges a checked launch's host writes
/// (`crate::system`'s layout): one entry per allocation (the parameter block read-only)
/// after the (0, 0) one, no write shadows, every parameter's range the allocation its
/// value points into.
fn check_tables(k: &Kernel, mem: &mut Memory, system_at: u32) {
    use crate::system as sys;
    let mut ranges: Vec<(u64, u64)> =
        mem.regions.iter().map(|r| (r.base, r.base + r.bytes.len() as u64)).collect();
    ranges.sort_unstable();
    let n = ranges.len() + 1;
    let mut table = vec![0u8; 16 + 24 * n];
    let _ = memory::write(&mut table, 0, 4, n as u64);
    for (i, (start, end)) in ranges.iter().enumerate() {
        let at = 16 + 16 * (i as u64 + 1);
        let read_only = if *start == PARAM_BASE { sys::TABLE_READ_ONLY } else { 0 };
        let _ = memory::write(&mut table, at, 8, *start);
        let _ = memory::write(&mut table, at + 8, 8, *end | read_only);
    }
    let params_at = table.len() as u64;
    let mut params = vec![0u8; 24 * k.abi.params.len()];
    for (i, p) in k.abi.params.iter().enumerate() {
        let value = memory::read(&mem.regions[0].bytes, u64::from(p.offset), 8).unwrap_or(0);
        let range = ranges.iter().find(|r| p.size == 8 && r.0 <= value && value < r.1);
        if let Some((start, end)) = range {
            let _ = memory::write(&mut params, 16 * i as u64, 8, *start);
            let _ = memory::write(&mut params, 16 * i as u64 + 8, 8, *end);
        }
    }
    table.extend(params);
    let system = &mut mem.regions[0].bytes;
    let at = u64::from(system_at);
    let _ = memory::write(system, at + u64::from(sys::CHECK_TABLE), 8, CHECK_TABLE_BASE);
    let _ =
        memory::write(system, at + u64::from(sys::CHECK_PARAMS), 8, CHECK_TABLE_BASE + params_at);
    let _ = memory::write(system, at + u64::from(sys::ALL_WRITTEN), 4, u64::from(u32::MAX));
    mem.regions.push(Region { base: CHECK_TABLE_BASE, bytes: table });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each thread reads lane 7's input and its right neighbour's, and the ballot of the
    /// odd inputs among lanes 0-15; thread 5 exits first (its lane reads as 0).
    const EXCHANGE: &str = "\
kernel exchange {
    params size 8 align 8
    param out .u64 x1 @0 size 8 align 8
    shared 0
    local 0
    entry bb0
    reg pred %p1
    reg i64 %rd1 %rd2
    reg i32 %r1 %r2 %r3 %r4 %r5 %r6 %r7
bb0:
    %rd1 = load.param.u64 [0]
    %r1 = special.tid.x
    %rd2 = mulwide.u32 %r1, 4
    %rd1 = add.u64 %rd1, %rd2
    %r2 = load.global.u32 [%rd1]
    %p1, _ = setp.eq.u32 %r1, 5
    branch %p1, bb2, bb1
bb1:
    %r3 = and.u32 %r1, 0xffffffe0
    %r7 = add.u32 %r1, 1
    %r7 = and.u32 %r7, 31
    warp_publish %r2
    %r4 = warp_read %r2, 7, %r3
    %r5 = warp_read %r2, %r7, %r3
    warp_sync
    %r6 = and.u32 %r2, 1
    warp_publish %r6
    %r6 = warp_ballot %r6, 0xffff, %r3
    warp_sync
    store.global.u32 [%rd1], %r4, %r5, %r6
    return
bb2:
    return
}
";

    #[test]
    fn warp_exchanges_follow_the_isa() {
        let k = crate::text::parse(EXCHANGE).expect("parses").remove(0);
        let input: Vec<u32> = (0..64u32).map(|i| i.wrapping_mul(0x9e37_79b9) ^ 0x55).collect();
        let bytes: Vec<u8> = input.iter().flat_map(|v| v.to_le_bytes()).collect();
        let buffer = Region { base: 0x1_0000_0000, bytes: bytes.clone() };
        let launch = Launch {
            grid: [1, 1, 1],
            block: [32, 1, 1],
            params: 0x1_0000_0000u64.to_le_bytes().to_vec(),
            buffers: vec![buffer],
            dynamic_shared: 0,
            step_limit: 100_000,
        };
        let out = run(&k, None, &launch).expect("runs");
        let word = |i: usize| {
            let b = &out.buffers[0][4 * i..4 * i + 4];
            u32::from_le_bytes([b[0], b[1], b[2], b[3]])
        };
        // The model: lane 5 has exited, so it reads as 0 and does not vote.
        let published = |l: usize| if l == 5 { 0 } else { input[l] };
        let ballot = (0..16).filter(|&l| published(l) & 1 == 1).fold(0, |a, l| a | 1 << l);
        // Thread t stores three words from word t on, after thread t - 1: word t is
        // its read of lane 7, but word 5, which thread 4 wrote last (lane 5 read as 0).
        for t in (0..32).filter(|&t| t != 5) {
            assert_eq!(word(t), published(7), "thread {t}: lane 7");
        }
        assert_eq!(word(5), 0, "thread 4's read of the exited lane 5");
        assert_eq!(word(32), published(0), "thread 31's neighbour, lane 0");
        assert_eq!(word(33), ballot, "thread 31's ballot");
        assert_eq!(word(34), input[34], "nothing past it");
    }

    #[test]
    fn a_structured_kernel_runs_as_its_cfg() {
        let k = crate::text::parse(EXCHANGE).expect("parses").remove(0);
        let mut s = k.clone();
        let body = crate::pass::structurize::run(&mut s).expect("structures");
        let launch = Launch {
            grid: [2, 1, 1],
            block: [64, 1, 1],
            params: 0x1_0000_0000u64.to_le_bytes().to_vec(),
            buffers: vec![Region { base: 0x1_0000_0000, bytes: vec![7; 1024] }],
            dynamic_shared: 0,
            step_limit: 100_000,
        };
        let cfg = run(&k, None, &launch).expect("runs");
        let tree = run(&s, Some(&body), &launch).expect("runs");
        assert_eq!(cfg.buffers, tree.buffers);
        assert_ne!(cfg.buffers[0], vec![7; 1024], "it stores results");
    }
}
