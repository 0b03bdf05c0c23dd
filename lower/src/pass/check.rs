//! Pass: memcheck. Every access of the program's own memory instructions is tested
//! before it happens, and one that fails the test does not happen but is recorded
//! (`docs/status.md`, *Checked launches*; `ptxvk run --check`, `PTXVK_CHECK=memcheck`).
//!
//! Pre: CFG IR from semantic analysis, before every other pass (so that an access is
//! seen once, as the program wrote it, before `legalize_atomics` makes loops of some);
//! [`Kernel::memory_instructions`] lists the spans of the PTX `ld`, `ldu`, `st`, `atom`
//! and `red` instructions.
//!
//! Post: each `Load`, `Store` and `Atomic` with one of those spans (the program's
//! accesses, not those semantic analysis adds for system calls, call frames or the
//! warp scratch) touches the program's memory only where its test holds. A global
//! access with a 64-bit base ([`guard_redirected`]) stays where it is, with its base
//! replaced by a select: its own where the test holds, else the system area's sink
//! ([`system::SINK`]); what it read is then replaced by 0, and the thread counts the
//! refusal and keeps the first, which it records in the system area
//! ([`crate::system`]) when it ends ([`flush`]), so that no branch surrounds the
//! access. Every other access ([`guard`]) has its block split before it, and the test
//! branches either to a block holding only the access, or to one that records a
//! violation and sets the access's destinations to 0; both continue with the rest of
//! the block. A global access through a register derived from a pointer parameter
//! ([`provenance`]) is first tested against the allocation that parameter points into
//! (a subtraction and a compare), and only outside it against the table. The tests, by
//! space:
//! * every space: the address is a multiple of the access size, the total of a vector
//!   (PTX ISA 9.2 §6.4.1: "the address must be naturally aligned to a multiple of the
//!   access size"); a misaligned access is recorded as such;
//! * global: the bytes lie inside one allocation of the launch's table (a call of the
//!   routine [`Routine::InAllocation`], a binary search of it): device and host memory,
//!   module data, the device heap, and for reads the parameter block, as the host lists
//!   them;
//! * shared: inside the launch's shared window, its static part (aligned for the
//!   dynamic region) plus its dynamic bytes;
//! * local: inside the thread's local window as semantic analysis sized it;
//! * param (constant offsets): inside the parameter block, decided here; an access
//!   inside needs no test.
//!
//! With racecheck ([`race`]), each plain shared access (not an atomic; `ld.volatile`
//! and `st.volatile` are plain here) that the test allows is first tested against the
//! block's shadow of the window and recorded in it; one that races with another
//! thread's is recorded as a violation, and happens. With initcheck ([`init`]), each
//! allowed global read or atomic first tests the write shadow of the words it reads,
//! and one of words nothing wrote is recorded and happens; each allowed global write
//! or atomic marks its words written after it.
//!
//! [`Kernel::check_sites`] gets an entry per instrumented access, which the records
//! name; the kernel gets a system area ([`Kernel::system`]), and the table's routines
//! it calls ([`Kernel::functions`]).
//!
//! # Confinement
//!
//! On a device that runs kernels inside the host process ([`Target::confine`], without
//! memcheck), the same instrumentation keeps an unchecked kernel inside the memory
//! ptxvk gave it, at a lower price ([`Mode::Confine`]): no alignment test, and every
//! global access is first tested against the device's one confinement range (every
//! allocation of the device lies in it, `ptxvk_vk`'s reservation), a subtraction and a
//! compare; outside it, the few ranges of registered host memory the launch passes
//! decide, in a slow path that a specialization constant
//! ([`SpecialReg::ConfinedOutside`]) removes from the pipelines of launches with none.
//! The host passes the range as the first of the parameter ranges
//! ([`system::CHECK_PARAMS`]). Shared, local and parameter accesses get memcheck's
//! bounds tests, but those whose constant address lies inside the window's static part
//! need none. A refused access is reported as memcheck reports it, but a thread keeps
//! its last refused access rather than its first (three instructions fewer per access).

use ptxvk_frontend::Span;

use crate::build::{Build, Builder};
use crate::ir::*;
use crate::pass::Target;
use crate::system;

mod init;
mod race;

const U32: OpTy = OpTy::U(32);
const U64: OpTy = OpTy::U(64);

/// What the pass tests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Bounds and alignment against each allocation (`PTXVK_CHECK`).
    Memcheck,
    /// Bounds against the device's confinement range ([module docs](self#confinement)).
    Confine,
}

impl Mode {
    /// The mode `target` asks for, if any: memcheck wins over confinement.
    pub fn of(target: &Target) -> Option<Mode> {
        if target.check {
            Some(Mode::Memcheck)
        } else if target.confine {
            Some(Mode::Confine)
        } else {
            None
        }
    }
}

/// Instruments `k` as the module doc says, with racecheck and initcheck as `target`
/// asks; nothing when `target` asks for no check.
pub fn run(k: &mut Kernel, target: &Target) {
    let Some(mode) = Mode::of(target) else { return };
    let mut spans = k.memory_instructions.clone();
    spans.sort_unstable();
    spans.dedup();
    if spans.is_empty() {
        return;
    }
    // Confinement leaves constant in-window accesses untested: a kernel with only
    // those needs no system area.
    let needs_tests = k
        .blocks
        .iter()
        .flat_map(|b| &b.insts)
        .any(|i| spans.binary_search(&i.span).is_ok() && access_of(k, i, mode).is_some());
    if !needs_tests {
        return;
    }
    k.system = true;
    let shared = prologue(k, &spans, target, mode);
    // Blocks to scan, each from an instruction on (past the accesses already guarded).
    let mut work: Vec<(BlockId, usize)> =
        (0..k.blocks.len() as u32).map(|b| (BlockId(b), 0)).collect();
    while let Some((b, from)) = work.pop() {
        let found = k.blocks[b.index()].insts.iter().enumerate().skip(from).find_map(|(at, i)| {
            let access = access_of(k, i, mode).filter(|_| spans.binary_search(&i.span).is_ok());
            access.map(|a| (at, a))
        });
        if let Some((at, access)) = found {
            work.push(guard(k, b, at, access, &shared));
        }
    }
    if let Some(deferred) = shared.deferred {
        flush(k, &shared, deferred);
    }
}

/// Records each thread's deferred refused accesses ([`Deferred`]) where it ends: before
/// every `return` (which `exit`, `trap` and failed assertions end in too).
fn flush(k: &mut Kernel, shared: &Prologue, d: Deferred) {
    let ends: Vec<usize> =
        (0..k.blocks.len()).filter(|&b| matches!(k.blocks[b].term, Terminator::Return)).collect();
    let (first, address, count) = (Value::Reg(d.first), Value::Reg(d.address), Value::Reg(d.count));
    for b in ends {
        let span = k.blocks[b].term_span;
        let end = new_block(k, span, Vec::new(), Terminator::Return, span);
        let mut r = Builder::new(k, span);
        record_counting(&mut r, shared, first, address, count);
        let insts = r.insts;
        let recorded = new_block(k, span, insts, Terminator::Jump(end), span);
        let mut c = Builder::new(k, span);
        let any = c.cmp(CmpOp::Ne, U32, count, Value::Imm(0));
        let test = c.insts;
        k.blocks[b].insts.extend(test);
        k.blocks[b].term =
            Terminator::Branch { cond: any, negate: false, if_true: recorded, if_false: end };
    }
}

/// What [`guard`] needs of an access.
struct Access {
    space: Space,
    kind: AccessKind,
    addr: Address,
    /// Bytes accessed.
    size: u32,
    /// Registers the access writes, which are 0 when it is refused.
    dsts: Vec<RegId>,
    /// A shared access that is not an atomic to the memory model, which racecheck
    /// tests.
    plain_shared: bool,
}

/// The access `inst` makes, if it is one the pass checks.
fn access_of(k: &Kernel, inst: &Inst, mode: Mode) -> Option<Access> {
    let bytes = |ty: OpTy| (ty.bits() / 8).max(1);
    let mut plain = true;
    let (space, access, addr, size, dsts) = match &inst.kind {
        InstKind::Load { space, ty, dsts, addr } => (
            *space,
            AccessKind::Read,
            *addr,
            bytes(*ty) * dsts.len() as u32,
            dsts.iter().flatten().copied().collect(),
        ),
        InstKind::Store { space, ty, srcs, addr } => {
            (*space, AccessKind::Write, *addr, bytes(*ty) * srcs.len() as u32, Vec::new())
        }
        InstKind::Atomic { op, space, ty, dst, addr, .. } => {
            let access = match op {
                AtomicOp::Load => AccessKind::Read,
                AtomicOp::Store => AccessKind::Write,
                _ => AccessKind::Atomic,
            };
            plain = access != AccessKind::Atomic && k.volatile_accesses.contains(&inst.span);
            (*space, access, *addr, bytes(*ty), dst.iter().copied().collect())
        }
        _ => return None,
    };
    // A constant parameter offset inside the block is always valid.
    let inside_params = space == Space::Param
        && addr.base.is_none()
        && addr.offset >= 0
        && addr.offset as u64 + u64::from(size) <= u64::from(k.abi.size)
        && (addr.offset as u64).is_multiple_of(u64::from(size));
    // Confinement tests no alignment, so a constant offset inside the shared window's
    // static part or the local window needs no test either.
    let static_end = match space {
        Space::Shared => Some(k.shared.static_bytes),
        Space::Local => Some(k.local_bytes),
        _ => None,
    };
    let inside_static = mode == Mode::Confine
        && addr.base.is_none()
        && static_end.is_some_and(|end| {
            addr.offset >= 0 && addr.offset as u64 + u64::from(size) <= u64::from(end)
        });
    let plain_shared = plain && space == Space::Shared;
    (!inside_params && !inside_static).then_some(Access {
        space,
        kind: access,
        addr,
        size,
        dsts,
        plain_shared,
    })
}

/// What every test and record of a kernel shares, computed once at the start of the
/// entry block.
struct Prologue {
    /// The system area's address.
    area: RegId,
    /// The allocation table's address.
    table: RegId,
    /// The pointer parameter each register's value derives from ([`provenance`]).
    provenance: Vec<Option<usize>>,
    /// The allocations of the pointer parameters accesses derive from.
    params: Vec<ParamRange>,
    /// Under confinement, the device's confinement range, which every global access
    /// is tested against first.
    window: Option<ParamRange>,
    /// Under confinement, the address of the passed ranges, after the confinement
    /// range: the allocations outside it ([`system::CONFINED_OUTSIDE`] of them), which
    /// an access outside the range is tested against (loaded there, off the fast path).
    outside: Option<RegId>,
    mode: Mode,
    /// The end of the launch's shared window (64-bit), when the kernel has shared
    /// accesses to test.
    shared_end: Value,
    /// This thread's racecheck epoch, under racecheck when the kernel has plain shared
    /// accesses.
    epoch: Option<race::Epoch>,
    /// Under initcheck, when the kernel has global accesses: the address of the system
    /// area's all-ones word ([`system::ALL_WRITTEN`]).
    all_written: Option<RegId>,
    /// The thread's refused global accesses so far, when some access is
    /// [`redirectable`] ([`guard_redirected`]), recorded when it ends ([`flush`]).
    deferred: Option<Deferred>,
}

/// A thread's refused global accesses, counted as they happen and recorded once, when
/// the thread ends: how many, and the first's packed violation and address; and the
/// sink they go to instead ([`system::SINK`]).
#[derive(Clone, Copy)]
struct Deferred {
    count: RegId,
    first: RegId,
    address: RegId,
    sink: RegId,
}

/// The allocation a pointer parameter points into, as the host found it at launch
/// (`crate::system`'s parameter ranges; empty when it points into none).
struct ParamRange {
    param: usize,
    start: RegId,
    /// Per access size, the bound an access's offset from `start` must be below to fit:
    /// the allocation's length + 1 - size, or 0 when no access of that size fits.
    limits: Vec<(u32, RegId)>,
    /// Under initcheck, that allocation's write shadow (0 for none).
    shadow: Option<RegId>,
}

fn prologue(k: &mut Kernel, spans: &[Span], target: &Target, mode: Mode) -> Prologue {
    let provenance = provenance(k);
    let accesses: Vec<Access> = k
        .blocks
        .iter()
        .flat_map(|b| &b.insts)
        .filter(|i| spans.binary_search(&i.span).is_ok())
        .filter_map(|i| access_of(k, i, mode))
        .collect();
    // Under confinement, the sizes of the global accesses tested against the range.
    let mut window_sizes: Vec<u32> = accesses
        .iter()
        .filter(|a| mode == Mode::Confine && a.space == Space::Global)
        .map(|a| a.size)
        .collect();
    window_sizes.sort_unstable();
    window_sizes.dedup();
    // The pointer parameters global accesses derive from, with the sizes of those
    // accesses.
    let mut derived: Vec<(usize, u32)> = accesses
        .iter()
        .filter(|a| mode == Mode::Memcheck && a.space == Space::Global)
        .filter_map(|a| Some((provenance[a.addr.base?.index()]?, a.size)))
        .collect();
    let has_shared = accesses.iter().any(|a| a.space == Space::Shared);
    let races = target.racecheck && accesses.iter().any(|a| a.plain_shared);
    let initcheck = target.initcheck && accesses.iter().any(|a| a.space == Space::Global);
    let param_count = k.abi.params.len() as i64;
    derived.sort_unstable();
    derived.dedup();
    let span = k.span;
    let offset = system::offset(k.abi.size);
    let mut b = Builder::new(k, span);
    let params = b.temp(U64);
    b.push(InstKind::Special { dst: params, reg: SpecialReg::ParamBlock });
    let area = sum(&mut b, Value::Reg(params), Value::Imm(u64::from(offset)));
    // Confinement searches no table (the ranges outside its range are passed on their
    // own): the register is never read then.
    let table = b.temp(U64);
    if mode == Mode::Memcheck {
        b.push(InstKind::Load {
            space: Space::Global,
            ty: U64,
            dsts: vec![Some(table)],
            addr: Address { base: Some(area), offset: i64::from(system::CHECK_TABLE) },
        });
    }
    // Racecheck's epochs carry the linear thread index.
    let thread = races.then(|| linear(&mut b, SpecialReg::Tid, SpecialReg::Ntid, U32));
    let mut params = Vec::new();
    if !derived.is_empty() {
        let ranges = load_u64(&mut b, area, system::CHECK_PARAMS);
        let mut params_used: Vec<usize> = derived.iter().map(|d| d.0).collect();
        params_used.dedup();
        for param in params_used {
            let (start, end) = (b.temp(U64), b.temp(U64));
            let offset = 16 * param as i64;
            b.push(InstKind::Load {
                space: Space::Global,
                ty: U64,
                dsts: vec![Some(start), Some(end)],
                addr: Address { base: Some(ranges), offset },
            });
            let sizes = derived.iter().filter(|d| d.0 == param).map(|d| d.1);
            let limits = size_limits(&mut b, start, end, sizes);
            // The shadows follow the ranges (`crate::system`).
            let shadow = initcheck.then(|| {
                let shadow = b.temp(U64);
                b.push(InstKind::Load {
                    space: Space::Global,
                    ty: U64,
                    dsts: vec![Some(shadow)],
                    addr: Address {
                        base: Some(ranges),
                        offset: 16 * param_count + 8 * param as i64,
                    },
                });
                shadow
            });
            params.push(ParamRange { param, start, limits, shadow });
        }
    }
    // The confinement range is the first parameter range the host passes.
    let window = (!window_sizes.is_empty()).then(|| {
        let ranges = load_u64(&mut b, area, system::CHECK_PARAMS);
        let (start, end) = (b.temp(U64), b.temp(U64));
        b.push(InstKind::Load {
            space: Space::Global,
            ty: U64,
            dsts: vec![Some(start), Some(end)],
            addr: Address { base: Some(ranges), offset: 0 },
        });
        let limits = size_limits(&mut b, start, end, window_sizes.iter().copied());
        (ParamRange { param: usize::MAX, start, limits, shadow: None }, ranges)
    });
    let (window, outside) = match window {
        Some((window, outside)) => (Some(window), Some(outside)),
        None => (None, None),
    };
    // The window's end: the dynamic region's offset in the final layout plus the
    // launch's dynamic bytes.
    let shared_end = if has_shared {
        let base = b.temp(U32);
        b.push(InstKind::Special { dst: base, reg: SpecialReg::DynamicSharedBase });
        let dynamic = b.temp(U32);
        b.push(InstKind::Special { dst: dynamic, reg: SpecialReg::DynamicSharedBytes });
        let base = b.cvt(U64, U32, Value::Reg(base));
        let dynamic = b.cvt(U64, U32, Value::Reg(dynamic));
        b.add(U64, base, dynamic)
    } else {
        Value::Imm(0)
    };
    let all_written = initcheck
        .then(|| sum(&mut b, Value::Reg(area), Value::Imm(u64::from(system::ALL_WRITTEN))));
    let defers = accesses.iter().any(|a| redirectable(b.kernel, a, initcheck, mode).is_some());
    let deferred = defers.then(|| {
        let d = Deferred {
            count: b.temp(U32),
            first: b.temp(U32),
            address: b.temp(U64),
            sink: sum(&mut b, Value::Reg(area), Value::Imm(u64::from(system::SINK))),
        };
        b.mov(U32, d.count, Value::Imm(0));
        b.mov(U32, d.first, Value::Imm(0));
        b.mov(U64, d.address, Value::Imm(0));
        d
    });
    let mut insts = b.insts;
    let epoch = thread.map(|thread| {
        let (epoch, init) = race::epochs(k, thread);
        insts.extend(init);
        epoch
    });
    let entry = k.entry.index();
    k.blocks[entry].insts.splice(0..0, insts);
    Prologue {
        area,
        table,
        provenance,
        params,
        window,
        outside,
        mode,
        shared_end,
        epoch,
        all_written,
        deferred,
    }
}

/// A register loaded with the u64 at byte `field` of the system area at `area`.
fn load_u64(b: &mut Builder<'_>, area: RegId, field: u32) -> RegId {
    let dst = b.temp(U64);
    let addr = Address { base: Some(area), offset: i64::from(field) };
    b.push(InstKind::Load { space: Space::Global, ty: U64, dsts: vec![Some(dst)], addr });
    dst
}

/// Per access size, the bound that an access's offset from `start` must be below for
/// the access to end before `end`, so that each test is a subtraction and one compare:
/// `end - start + 1 - size`, or 0 when nothing that size fits.
fn size_limits(
    b: &mut Builder<'_>,
    start: RegId,
    end: RegId,
    sizes: impl Iterator<Item = u32>,
) -> Vec<(u32, RegId)> {
    let length = b.bin(BinaryOp::Sub, U64, Value::Reg(end), Value::Reg(start));
    let room = b.add(U64, length, Value::Imm(1));
    sizes
        .map(|size| {
            let size64 = Value::Imm(u64::from(size));
            let fits = b.cmp(CmpOp::Le, U64, size64, room);
            let left = b.bin(BinaryOp::Sub, U64, room, size64);
            let limit = b.temp(U64);
            b.push(InstKind::Select {
                ty: U64,
                dst: limit,
                a: left,
                b: Value::Imm(0),
                cond: fits,
                negate: false,
            });
            (size, limit)
        })
        .collect()
}

/// Which pointer-sized kernel parameter each register's value derives from: loaded
/// from it, moved, or with a value added or subtracted that does not derive from a
/// parameter; `None` for a register with any other definition, or definitions that
/// disagree. Flow-insensitive, so a register is tagged only if every definition is
/// derived from the same parameter.
fn provenance(k: &Kernel) -> Vec<Option<usize>> {
    #[derive(Clone, Copy, PartialEq)]
    enum Origin {
        /// No definition seen yet.
        Unseen,
        Param(usize),
        Other,
    }
    let pointer_bits = if k.address_size == 32 { 32 } else { 64 };
    let param_at = |offset: i64| {
        k.abi.params.iter().position(|p| {
            p.size * 8 == pointer_bits && p.count == 1 && i64::from(p.offset) == offset
        })
    };
    let mut origin = vec![Origin::Unseen; k.regs.len()];
    let of = |origin: &[Origin], v: &Value| match v {
        Value::Reg(r) => origin[r.index()],
        Value::Imm(_) => Origin::Other,
    };
    loop {
        let mut changed = false;
        for inst in k.blocks.iter().flat_map(|b| &b.insts) {
            let (dst, from) = match &inst.kind {
                InstKind::Load { space: Space::Param, ty, dsts, addr }
                    if dsts.len() == 1 && addr.base.is_none() && ty.bits() == pointer_bits =>
                {
                    let from = param_at(addr.offset).map_or(Origin::Other, Origin::Param);
                    (dsts[0], from)
                }
                InstKind::Mov { dst, src, .. } => (Some(*dst), of(&origin, src)),
                InstKind::Binary {
                    op: op @ (BinaryOp::Add | BinaryOp::Sub),
                    dst,
                    lhs,
                    rhs,
                    ..
                } => {
                    let from = match (of(&origin, lhs), of(&origin, rhs)) {
                        (Origin::Unseen, _) | (_, Origin::Unseen) => Origin::Unseen,
                        (Origin::Param(p), Origin::Other) => Origin::Param(p),
                        (Origin::Other, Origin::Param(p)) if *op == BinaryOp::Add => {
                            Origin::Param(p)
                        }
                        _ => Origin::Other,
                    };
                    (Some(*dst), from)
                }
                other => {
                    let (mut defs, mut uses) = (Vec::new(), Vec::new());
                    crate::verify::inst_defs_uses(other, &mut defs, &mut uses);
                    for d in defs {
                        changed |= origin[d.index()] != Origin::Other;
                        origin[d.index()] = Origin::Other;
                    }
                    continue;
                }
            };
            let Some(dst) = dst else { continue };
            let met = match (origin[dst.index()], from) {
                (old, Origin::Unseen) => old,
                (Origin::Unseen, new) => new,
                (old, new) if old == new => old,
                _ => Origin::Other,
            };
            changed |= met != origin[dst.index()];
            origin[dst.index()] = met;
        }
        if !changed {
            break;
        }
    }
    origin.into_iter().map(|o| if let Origin::Param(p) = o { Some(p) } else { None }).collect()
}

/// `x + nx * (y + ny * z)` of `index` in a space of `size`, at type `ty`.
fn linear(
    b: &mut Builder<'_>,
    index: fn(Dim) -> SpecialReg,
    size: fn(Dim) -> SpecialReg,
    ty: OpTy,
) -> Value {
    let mut read = |reg: SpecialReg| {
        let r = b.temp(U32);
        b.push(InstKind::Special { dst: r, reg });
        if ty == U32 {
            Value::Reg(r)
        } else {
            b.cvt(ty, U32, Value::Reg(r))
        }
    };
    let [x, y, z] = [Dim::X, Dim::Y, Dim::Z].map(index).map(&mut read);
    let [nx, ny] = [Dim::X, Dim::Y].map(size).map(&mut read);
    let yz = b.bin(BinaryOp::Mul, ty, ny, z);
    let yz = b.add(ty, y, yz);
    let xyz = b.bin(BinaryOp::Mul, ty, nx, yz);
    b.add(ty, x, xyz)
}

/// `x << shifts[0] | y << shifts[1] | z << shifts[2]` of `reg`'s components, at `ty`.
fn packed(b: &mut Builder<'_>, reg: fn(Dim) -> SpecialReg, ty: OpTy, shifts: [u64; 3]) -> Value {
    let mut out = Value::Imm(0);
    for (dim, shift) in [Dim::X, Dim::Y, Dim::Z].into_iter().zip(shifts) {
        let r = b.temp(U32);
        b.push(InstKind::Special { dst: r, reg: reg(dim) });
        let v = if ty == U32 { Value::Reg(r) } else { b.cvt(ty, U32, Value::Reg(r)) };
        let v = if shift == 0 { v } else { b.bin(BinaryOp::Shl, ty, v, Value::Imm(shift)) };
        out = if out == Value::Imm(0) { v } else { b.or(ty, out, v) };
    }
    out
}

/// A register holding the 64-bit `lhs + rhs`, to be an address's base.
fn sum(b: &mut Builder<'_>, lhs: Value, rhs: Value) -> RegId {
    let dst = b.temp(U64);
    let (op, mode) = (BinaryOp::Add, FloatMode::default());
    b.push(InstKind::Binary { op, ty: U64, mode, dst, lhs, rhs });
    dst
}

/// Splits block `b` around its instruction `at`, which makes `access`, as the module
/// doc says, and returns the block with the instructions after it, and where in it they
/// start.
fn guard(
    k: &mut Kernel,
    b: BlockId,
    at: usize,
    access: Access,
    shared: &Prologue,
) -> (BlockId, usize) {
    let inst = k.blocks[b.index()].insts[at].clone();
    let span = inst.span;
    let site = k.check_sites.len() as u32;
    k.check_sites.push(CheckSite {
        span,
        space: access.space,
        access: access.kind,
        size: access.size,
    });
    // A global access through a pointer parameter's register: inside that parameter's
    // allocation, two compares decide; the table is searched only outside it.
    let range = match (access.space, access.addr.base) {
        (Space::Global, _) if shared.window.is_some() => shared.window.as_ref(),
        (Space::Global, Some(r)) => {
            shared.params.iter().find(|p| Some(p.param) == shared.provenance[r.index()])
        }
        _ => None,
    };

    let redirect = redirectable(k, &access, shared.all_written.is_some(), shared.mode);
    if let (Some(base), Some(deferred)) = (redirect, shared.deferred) {
        return guard_redirected(k, b, at, access, shared, site, (base, deferred), range);
    }
    let mut t = Builder::new(k, span);
    let address = address_of(&mut t, &access);
    let aligned = alignment_test(&mut t, address, access.size, shared.mode);
    let (first, slow, violation) = match range {
        Some(range) => {
            let inside = in_range(&mut t, address, access.size, range);
            let ok = match aligned {
                Some(aligned) => t.pred_and(aligned, inside),
                None => inside,
            };
            let mut s = Builder::new(t.kernel, span);
            let inside = match shared.outside {
                Some(ranges) => in_outside(&mut s, address, access.size, ranges),
                None => in_table(&mut s, &access, address, shared.table),
            };
            let (slow_ok, violation) = verdict(&mut s, aligned, inside, site);
            (ok, Some((s.insts, slow_ok)), violation)
        }
        None => {
            let inside = match access.space {
                Space::Global => in_table(&mut t, &access, address, shared.table),
                _ => in_window(&mut t, &access, address, shared.shared_end),
            };
            let (ok, violation) = verdict(&mut t, aligned, inside, site);
            (ok, None, violation)
        }
    };
    let test_insts = t.insts;

    let mut r = Builder::new(k, span);
    record(&mut r, shared, violation, address);
    for &d in &access.dsts {
        let ty = bits_ty(r.kernel, d);
        r.mov(ty, d, Value::Imm(0));
    }
    let record_insts = r.insts;

    let rest = split(k, b, at, test_insts, Vec::new());
    let refused = new_block(k, span, record_insts, Terminator::Jump(rest), span);
    // The block that makes the access where its test allows it, reached through `via`'s
    // allocation test (the fast path) or the table's; with racecheck or initcheck, what
    // they test comes first (a finding is recorded, and the access still happens), and
    // initcheck's marking of written words after.
    let allowed = |k: &mut Kernel, via: Option<&ParamRange>| {
        let mut t = Builder::new(k, span);
        let mut finding: Option<(RegId, u32, Value)> = None;
        let mut mark = None;
        if let Some(all_written) = shared.all_written.filter(|_| access.space == Space::Global) {
            let word = match via.and_then(|r| r.shadow.map(|s| (r.start, s))) {
                Some((start, shadow)) => init::param_word(&mut t, shadow, start, address),
                None => init::table_word(&mut t, shared.table, address),
            };
            let (at, mask) = init::locate(&mut t, word, all_written, address, access.size);
            if access.kind != AccessKind::Write {
                let unwritten = init::unwritten(&mut t, at, mask);
                finding = Some((unwritten, system::VIOLATION_UNINITIALIZED, address));
            }
            if access.kind != AccessKind::Read {
                mark = Some((at, mask));
            }
        }
        if let Some(epoch) = shared.epoch.filter(|_| access.plain_shared) {
            let write = access.kind == AccessKind::Write;
            let race = race::test(&mut t, epoch, address, access.size, write, site);
            finding = Some((race.races, system::VIOLATION_RACE, race.record));
        }
        let test = t.insts;
        let mut insts = vec![inst.clone()];
        if let Some((at, mask)) = mark {
            let mut m = Builder::new(k, span);
            init::mark(&mut m, at, mask);
            insts.extend(m.insts);
        }
        let Some((found, violation, recorded_address)) = finding else {
            let mut all = test;
            all.extend(insts);
            return new_block(k, span, all, Terminator::Jump(rest), span);
        };
        let access_block = new_block(k, span, insts, Terminator::Jump(rest), span);
        let mut r = Builder::new(k, span);
        let packed = violation << system::VIOLATION_SHIFT | site;
        record(&mut r, shared, Value::Imm(u64::from(packed)), recorded_address);
        let insts = r.insts;
        let recorded = new_block(k, span, insts, Terminator::Jump(access_block), span);
        let term = Terminator::Branch {
            cond: found,
            negate: false,
            if_true: recorded,
            if_false: access_block,
        };
        new_block(k, span, test, term, span)
    };
    // The access has a block of its own on each path that allows it, so that the
    // structured form is two nested `if`s rather than a shared join.
    let otherwise = match slow {
        Some((insts, ok)) => {
            let if_true = allowed(k, None);
            let term = Terminator::Branch { cond: ok, negate: false, if_true, if_false: refused };
            new_block(k, span, insts, term, span)
        }
        None => refused,
    };
    let if_true = allowed(k, range);
    k.blocks[b.index()].term =
        Terminator::Branch { cond: first, negate: false, if_true, if_false: otherwise };
    (rest, 0)
}

/// The base register of a global access that [`guard_redirected`] can test: one with
/// a 64-bit base in a module with 64-bit addresses, in a kernel without initcheck
/// (whose tests need the access's own path).
///
/// Under confinement, shared and local accesses with a base register too: a refused
/// one goes to offset 0 of its window instead ([`guard_redirected`]; the emitter
/// clamps every window index to the window, so even a window smaller than the access
/// is not left), so that the
/// kernel's control flow does not grow by two blocks per access (a `-G` build's
/// thousands of generic accesses took lavapipe minutes to compile that way).
fn redirectable(k: &Kernel, access: &Access, initcheck: bool, mode: Mode) -> Option<RegId> {
    let base = access.addr.base?;
    let wide = k.address_size != 32 && k.reg(base).ty.bits() == 64;
    let window = mode == Mode::Confine && matches!(access.space, Space::Shared | Space::Local);
    (window || (access.space == Space::Global && wide && !initcheck)).then_some(base)
}

/// [`guard`] for a global access with a 64-bit base, with no branch around the access
/// nor to a record. Where the test fails, the access goes to the system area's sink
/// ([`system::SINK`]) instead of its address, so it does not happen where the program
/// aimed it, what it reads is replaced by 0, and the thread counts it ([`Deferred`]) for
/// the record it makes when it ends. Only the table's search (when the pointer
/// parameter's allocation does not hold the address) is branched to. On llvmpipe the
/// branches cost more than the tests.
#[allow(clippy::too_many_arguments)]
fn guard_redirected(
    k: &mut Kernel,
    b: BlockId,
    at: usize,
    access: Access,
    shared: &Prologue,
    site: u32,
    (base, d): (RegId, Deferred),
    range: Option<&ParamRange>,
) -> (BlockId, usize) {
    let inst = k.blocks[b.index()].insts[at].clone();
    let span = inst.span;
    let mut t = Builder::new(k, span);
    let address = address_of(&mut t, &access);
    let aligned = alignment_test(&mut t, address, access.size, shared.mode);
    let ok = t.temp(OpTy::Pred);
    let in_space_window = access.space != Space::Global;
    let first = match range {
        _ if in_space_window => in_window(&mut t, &access, address, shared.shared_end),
        Some(range) => in_range(&mut t, address, access.size, range),
        None => in_table(&mut t, &access, address, shared.table),
    };
    let (first, violation) = verdict(&mut t, aligned, first, site);
    t.mov(OpTy::Pred, ok, Value::Reg(first));
    // Under confinement the slow path is skipped, too, where the launch has no
    // allocation outside the range: with the specialization constant 0 the branch's
    // condition is a constant and the driver drops the slow path and the branch.
    let skip_slow = match (range, shared.outside) {
        (Some(_), Some(_)) => {
            let flag = t.special(SpecialReg::ConfinedOutside);
            let none_outside = t.cmp(CmpOp::Eq, U32, flag, Value::Imm(0));
            t.pred_or(first, none_outside)
        }
        _ => ok,
    };
    let test_insts = t.insts;

    // Outside the parameter's allocation: the table decides; outside the confinement
    // range, the few allocations outside it do, with no loop.
    let slow_insts = range.map(|_| {
        let mut s = Builder::new(k, span);
        let inside = match shared.outside {
            Some(ranges) => in_outside(&mut s, address, access.size, ranges),
            None => in_table(&mut s, &access, address, shared.table),
        };
        let allowed = match aligned {
            Some(aligned) => s.pred_and(aligned, inside),
            None => inside,
        };
        s.mov(OpTy::Pred, ok, Value::Reg(allowed));
        s.insts
    });

    // Where the test failed: counted, and the first kept, for the record at the end.
    // Confinement keeps the last instead, three instructions fewer per access: any
    // refusal fails the launch, and a thread that makes several is rare.
    let mut a = Builder::new(k, span);
    let (first, first_address) = if shared.mode == Mode::Confine {
        (violation, address)
    } else {
        let none_yet = a.cmp(CmpOp::Eq, U32, Value::Reg(d.count), Value::Imm(0));
        let first = a.sel(U32, none_yet, violation, Value::Reg(d.first));
        (first, a.sel(U64, none_yet, address, Value::Reg(d.address)))
    };
    let refused = a.sel(U32, ok, Value::Imm(0), Value::Imm(1));
    for (ty, dst, refused_value) in [(U32, d.first, first), (U64, d.address, first_address)] {
        let (kept, taken) = (Value::Reg(dst), refused_value);
        a.push(InstKind::Select { ty, dst, a: kept, b: taken, cond: ok, negate: false });
    }
    a.push(InstKind::Binary {
        op: BinaryOp::Add,
        ty: U32,
        mode: FloatMode::default(),
        dst: d.count,
        lhs: Value::Reg(d.count),
        rhs: refused,
    });
    // The access, at its base or at the sink (minus its offset): the system area's for
    // a global access, offset 0 of its window for the others.
    let base_ty = bits_ty(a.kernel, base);
    let back = access.addr.offset.wrapping_neg() as u64;
    let sink = if in_space_window {
        Value::Imm(if base_ty.bits() == 64 { back } else { back & 0xffff_ffff })
    } else {
        a.add(U64, Value::Reg(d.sink), Value::Imm(back))
    };
    let target = a.temp(base_ty);
    let to_base = Value::Reg(base);
    a.push(InstKind::Select {
        ty: base_ty,
        dst: target,
        a: to_base,
        b: sink,
        cond: ok,
        negate: false,
    });
    let mut moved = inst.clone();
    retarget(&mut moved.kind, target);
    a.insts.push(moved);
    for &dst in &access.dsts {
        let ty = bits_ty(a.kernel, dst);
        let (kept, zero) = (Value::Reg(dst), Value::Imm(0));
        a.push(InstKind::Select { ty, dst, a: kept, b: zero, cond: ok, negate: false });
    }
    let access_insts = a.insts;
    let guarded = access_insts.len();

    let rest = split(k, b, at, test_insts, access_insts);
    k.blocks[b.index()].term = match slow_insts {
        Some(insts) => {
            let slow = new_block(k, span, insts, Terminator::Jump(rest), span);
            Terminator::Branch { cond: skip_slow, negate: false, if_true: rest, if_false: slow }
        }
        None => Terminator::Jump(rest),
    };
    (rest, guarded)
}

/// Points the access `kind` makes at base register `base` (its offset unchanged).
fn retarget(kind: &mut InstKind, base: RegId) {
    if let InstKind::Load { addr, .. }
    | InstKind::Store { addr, .. }
    | InstKind::Atomic { addr, .. } = kind
    {
        addr.base = Some(base);
    }
}

/// Splits block `b` at its instruction `at`: the block keeps what comes before it,
/// then `test`; a new block, returned, gets `head` and what comes after it, and the
/// block's terminator. The caller gives `b` its new terminator.
fn split(k: &mut Kernel, b: BlockId, at: usize, test: Vec<Inst>, mut head: Vec<Inst>) -> BlockId {
    let block = &mut k.blocks[b.index()];
    let span = block.insts[at].span;
    let rest = block.insts.split_off(at + 1);
    block.insts.truncate(at);
    block.insts.extend(test);
    let term = std::mem::replace(&mut block.term, Terminator::Return);
    let term_span = std::mem::replace(&mut block.term_span, span);
    head.extend(rest);
    new_block(k, span, head, term, term_span)
}

/// The integer type of register `r`'s width (a predicate's own), to zero or select it.
fn bits_ty(k: &Kernel, r: RegId) -> OpTy {
    match k.reg(r).ty {
        RegTy::Pred => OpTy::Pred,
        other => OpTy::U(other.bits() as u8),
    }
}

fn new_block(
    k: &mut Kernel,
    span: Span,
    insts: Vec<Inst>,
    term: Terminator,
    term_span: Span,
) -> BlockId {
    let id = BlockId(k.blocks.len() as u32);
    k.blocks.push(Block { label: None, span, insts, term, term_span });
    id
}

/// The address `a` reaches: a 64-bit device address for global memory, else the
/// offset in its space (widened to 64 bits).
fn address_of(b: &mut Builder<'_>, a: &Access) -> Value {
    if a.space == Space::Global {
        return global_address(b, a.addr);
    }
    let offset = match a.addr.base {
        None => Value::Imm(a.addr.offset as u64 & 0xffff_ffff),
        Some(r) => {
            let base = match b.kernel.reg(r).ty.bits() {
                64 => b.lo32(Value::Reg(r)),
                _ => Value::Reg(r),
            };
            b.add(U32, base, Value::Imm(a.addr.offset as u64 & 0xffff_ffff))
        }
    };
    b.cvt(U64, U32, offset)
}

/// Whether `address` is a multiple of `size` (PTX ISA 9.2 §6.4.1); `None` under
/// confinement, which does not test it.
fn alignment_test(b: &mut Builder<'_>, address: Value, size: u32, mode: Mode) -> Option<RegId> {
    if mode == Mode::Confine {
        return None;
    }
    let mask = u64::from(size).next_power_of_two() - 1;
    let low = b.and(U64, address, Value::Imm(mask));
    Some(b.cmp(CmpOp::Eq, U64, low, Value::Imm(0)))
}

/// Whether the `size` bytes at `address` lie inside the parameter's allocation.
fn in_range(b: &mut Builder<'_>, address: Value, size: u32, range: &ParamRange) -> RegId {
    let offset = b.bin(BinaryOp::Sub, U64, address, Value::Reg(range.start));
    let limit =
        range.limits.iter().find(|l| l.0 == size).map_or(Value::Imm(0), |l| Value::Reg(l.1));
    b.cmp(CmpOp::Lt, U64, offset, limit)
}

/// Whether the global access lies inside one allocation of the table (and a writable
/// one for a write or atomic): a call of [`Routine::InAllocation`].
fn in_table(b: &mut Builder<'_>, a: &Access, address: Value, table: RegId) -> RegId {
    let routine = Routine::InAllocation { write: a.kind != AccessKind::Read };
    let size = Value::Imm(u64::from(a.size));
    let found = call(b, routine, vec![Value::Reg(table), address, size]);
    b.cmp(CmpOp::Ne, U32, found, Value::Imm(0))
}

/// A call of routine `r` on `args`, the routine added to the kernel on its first use.
fn call(b: &mut Builder<'_>, r: Routine, args: Vec<Value>) -> Value {
    let callee = crate::routines::get(b.kernel, r);
    let dst = b.temp(OpTy::U(r.result_bits() as u8));
    b.push(InstKind::Call { callee, args, results: vec![dst] });
    Value::Reg(dst)
}

/// Whether the `size` bytes at `address` lie inside one of the confined launch's
/// allocations outside its confinement range, whose (start, end) pairs follow the range
/// at `ranges`: a subtraction and a compare per range, no loop (an empty range, start =
/// end = 0, holds nothing). The answer is ANDed with [`SpecialReg::ConfinedOutside`], a
/// specialization constant that is 0 for a launch with no such allocations (the common
/// case): the driver then folds the loads and compares away, and an access outside the
/// range is refused with no further test.
fn in_outside(b: &mut Builder<'_>, address: Value, size: u32, ranges: RegId) -> RegId {
    let mut found: Option<RegId> = None;
    for slot in 1..=i64::from(system::CONFINED_OUTSIDE) {
        let (start, end) = (b.temp(U64), b.temp(U64));
        b.push(InstKind::Load {
            space: Space::Global,
            ty: U64,
            dsts: vec![Some(start), Some(end)],
            addr: Address { base: Some(ranges), offset: 16 * slot },
        });
        let offset = b.bin(BinaryOp::Sub, U64, address, Value::Reg(start));
        let length = b.bin(BinaryOp::Sub, U64, Value::Reg(end), Value::Reg(start));
        // offset + size <= length, without overflow: offset <= length - size, size <= length.
        let fits = b.cmp(CmpOp::Le, U64, Value::Imm(u64::from(size)), length);
        let room = b.bin(BinaryOp::Sub, U64, length, Value::Imm(u64::from(size)));
        let within = b.cmp(CmpOp::Le, U64, offset, room);
        let inside = b.pred_and(fits, within);
        found = Some(match found {
            Some(a) => b.pred_or(a, inside),
            None => inside,
        });
    }
    let flag = b.special(SpecialReg::ConfinedOutside);
    let may_be_outside = b.cmp(CmpOp::Ne, U32, flag, Value::Imm(0));
    match found {
        Some(found) => b.pred_and(may_be_outside, found),
        None => b.cmp(CmpOp::Ne, U32, Value::Imm(0), Value::Imm(0)),
    }
}

/// Whether a shared, local or parameter access at `offset` lies inside its window
/// (the shared one ends at `shared_end`).
fn in_window(b: &mut Builder<'_>, a: &Access, offset: Value, shared_end: Value) -> RegId {
    let end = b.add(U64, offset, Value::Imm(u64::from(a.size)));
    let limit = match a.space {
        Space::Shared => shared_end,
        Space::Local => Value::Imm(u64::from(b.kernel.local_bytes)),
        _ => Value::Imm(u64::from(b.kernel.abi.size)),
    };
    b.cmp(CmpOp::Le, U64, end, limit)
}

/// The predicate that lets an access happen, and the packed violation and site its
/// record gets where it does not.
fn verdict(
    b: &mut Builder<'_>,
    aligned: Option<RegId>,
    inside: RegId,
    site: u32,
) -> (RegId, Value) {
    let packed = |v: u32| Value::Imm(u64::from(v << system::VIOLATION_SHIFT | site));
    let Some(aligned) = aligned else { return (inside, packed(system::VIOLATION_BOUNDS)) };
    let ok = b.pred_and(aligned, inside);
    let violation =
        b.sel(U32, aligned, packed(system::VIOLATION_BOUNDS), packed(system::VIOLATION_MISALIGNED));
    (ok, violation)
}

/// The device address a global access reaches, as the emitter forms it: in a module
/// with 32-bit addresses, a 32-bit offset (wrapping) into the address window.
fn global_address(b: &mut Builder<'_>, addr: Address) -> Value {
    let base_bits = addr.base.map(|r| b.kernel.reg(r).ty.bits());
    if b.kernel.address_size == 32 && base_bits != Some(64) {
        let offset = Value::Imm(addr.offset as u64 & 0xffff_ffff);
        let low = match addr.base {
            None => offset,
            Some(r) => b.add(U32, Value::Reg(r), offset),
        };
        let wide = b.cvt(U64, U32, low);
        let window = b.temp(U64);
        b.push(InstKind::Special { dst: window, reg: SpecialReg::WindowBase });
        return b.add(U64, Value::Reg(window), wide);
    }
    let offset = Value::Imm(addr.offset as u64);
    match (addr.base, base_bits) {
        (None, _) => offset,
        (Some(r), Some(32)) => {
            let wide = b.cvt(U64, U32, Value::Reg(r));
            b.add(U64, wide, offset)
        }
        (Some(r), _) => b.add(U64, Value::Reg(r), offset),
    }
}

/// Appends a violation record (`crate::system`): the counter's old value, capped at
/// the capacity, picks the slot. The thread and block are read here, off the path of
/// accesses that pass.
fn record(b: &mut Builder<'_>, shared: &Prologue, violation: Value, address: Value) {
    record_counting(b, shared, violation, address, Value::Imm(1));
}

/// [`record`] of the first of `violations` violations (a thread's deferred ones).
fn record_counting(
    b: &mut Builder<'_>,
    shared: &Prologue,
    violation: Value,
    address: Value,
    violations: Value,
) {
    let thread = packed(b, SpecialReg::Tid, U32, [0, 10, 20]);
    let block = packed(b, SpecialReg::Ctaid, U64, [0, 32, 48]);
    let at = |field: u32| Address { base: Some(shared.area), offset: i64::from(field) };
    b.atomic_add_global(U32, at(system::CHECK_COUNT), violations);
    let index = b.atomic_add_global(U32, at(system::CHECK_SLOTS), Value::Imm(1));
    let capped =
        b.bin(BinaryOp::Min, U32, Value::Reg(index), Value::Imm(u64::from(system::CHECK_CAPACITY)));
    let wide = b.cvt(U64, U32, capped);
    let offset = b.bin(BinaryOp::Mul, U64, wide, Value::Imm(u64::from(system::CHECK_RECORD)));
    let slot = sum(b, Value::Reg(shared.area), offset);
    let at =
        |field: u32| Address { base: Some(slot), offset: i64::from(system::CHECK_RECORDS + field) };
    for (ty, field, v) in
        [(U32, 0, violation), (U32, 4, thread), (U64, 8, address), (U64, 16, block)]
    {
        b.push(InstKind::Store { space: Space::Global, ty, srcs: vec![v], addr: at(field) });
    }
}
