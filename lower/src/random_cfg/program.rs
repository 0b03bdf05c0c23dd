//! Random computing kernels ([`program`]) for the fuzz target of the passes.

use ptxvk_frontend::ast::ScalarType;
use ptxvk_frontend::Span;

use super::{kernel, Rng};
use crate::abi::{KernelAbi, Layout};
use crate::ir::*;

/// Registers of [`program`]'s kernels, after those of [`kernel`].
struct Regs {
    n: RegId,
    c: RegId,
    t: RegId,
    tid: RegId,
    wb: RegId,
    addr: RegId,
    common: RegId,
    sh: RegId,
    /// 32-bit integers, 64-bit integers, f32, f64, 16-bit integers.
    a: [RegId; 4],
    d: RegId,
    f: [RegId; 2],
    g: RegId,
    h: RegId,
    /// Every warp collective is of a `.sync` form (has its sync point).
    sync_all: bool,
}

/// Iterations of [`program`]'s counter after which every branch goes forward.
pub const PROGRAM_STEPS: u64 = 24;
/// Bytes of each thread's slot of the first buffer in [`program`]'s kernels.
pub const SLOT_BYTES: u32 = 32;

/// A random kernel that computes: [`kernel`]'s control flow, each block given random
/// straight-line code — integer and float arithmetic in every rounding direction with
/// `.ftz` and `.sat`, conversions, global, shared and local accesses (sub-word stores
/// among them), atomics, warp exchanges — and branches on the values it computes.
/// Odd seeds make programs with warp exchanges, whose branches are uniform in each warp
/// (warps still diverge from each other); even seeds branch on each thread's values.
/// A counter makes every branch go forward after [`PROGRAM_STEPS`] blocks, so that
/// every run ends. Parameters: a pointer to a buffer of [`SLOT_BYTES`] per thread of
/// the grid, which each thread reads its inputs from and writes its results to, and a
/// pointer to a few common words that threads update with commutative atomics only;
/// every access to shared memory is to the thread's own slot. The results therefore
/// do not depend on how threads interleave. A third of the programs start with a
/// barrier made of a polling loop, which `pass::schedule` turns into rounds; their
/// warp collectives are all `.sync` forms (legacy ones after a polling loop may run
/// with part of the warp once scheduled: the lanes that left the loop in that round).
pub fn program(seed: u64, blocks: usize) -> Kernel {
    let mut k = kernel(seed, blocks.max(2));
    let mut rng = Rng(seed ^ 0x5eed_cafe);
    let span = Span::default();
    let reg = |k: &mut Kernel, name: &str, ty: RegTy| {
        k.regs.push(RegInfo { name: name.into(), ty, span });
        RegId(k.regs.len() as u32 - 1)
    };
    let i32 = RegTy::Int(32);
    let r = Regs {
        n: reg(&mut k, "%n", i32),
        c: reg(&mut k, "%c", RegTy::Pred),
        t: reg(&mut k, "%t", i32),
        tid: reg(&mut k, "%tid", i32),
        wb: reg(&mut k, "%wb", i32),
        addr: reg(&mut k, "%addr", RegTy::Int(64)),
        common: reg(&mut k, "%common", RegTy::Int(64)),
        sh: reg(&mut k, "%sh", i32),
        a: [0, 1, 2, 3].map(|i| reg(&mut k, &format!("%a{i}"), i32)),
        d: reg(&mut k, "%d", RegTy::Int(64)),
        f: [0, 1].map(|i| reg(&mut k, &format!("%f{i}"), RegTy::Float(32))),
        g: reg(&mut k, "%g", RegTy::Float(64)),
        h: reg(&mut k, "%h", RegTy::Int(16)),
        sync_all: seed % 3 == 2,
    };
    let params = [("out", ScalarType::U64, 1, None), ("common", ScalarType::U64, 1, None)];
    k.abi = KernelAbi::layout(params).unwrap_or_default();
    k.shared.static_bytes = 516;
    k.shared.variables.push(("slots".into(), 0, 512));
    k.shared.variables.push(("arrived".into(), 512, 4));
    k.local_bytes = 16;
    let n = k.blocks.len();
    let warps = seed % 2 == 1;
    for b in 0..n {
        let mut code = Vec::new();
        for _ in 0..1 + rng.below(4) {
            code.extend(random_code(&mut rng, &r, warps));
        }
        code.push(bin(BinaryOp::Add, OpTy::U(32), r.n, Value::Reg(r.n), Value::Imm(1)));
        let term = k.blocks[b].term.clone();
        let (more, term) = bounded(&mut rng, &r, b, n, term, warps);
        code.extend(more);
        if term == Terminator::Return {
            code.extend(results(&r));
        }
        k.blocks[b].insts = code.into_iter().map(|kind| Inst { kind, span }).collect();
        k.blocks[b].term = term;
    }
    // The preamble runs once, in a block of its own: branches may go back to block 0.
    let mut insts = preamble(&r);
    let mut next = k.entry;
    if r.sync_all {
        next = spin_barrier(&mut k, &mut insts, next);
    }
    let insts = insts.into_iter().map(|kind| Inst { kind, span }).collect();
    let term = Terminator::Jump(next);
    k.blocks.push(Block { label: None, span, insts, term, term_span: span });
    k.entry = BlockId(k.blocks.len() as u32 - 1);
    k.name = format!("program_{seed}");
    k
}

const U32: OpTy = OpTy::U(32);

fn bin(op: BinaryOp, ty: OpTy, dst: RegId, lhs: Value, rhs: Value) -> InstKind {
    InstKind::Binary { op, ty, mode: FloatMode::default(), dst, lhs, rhs }
}

fn global(r: &Regs, offset: u32) -> Address {
    Address { base: Some(r.addr), offset: i64::from(offset) }
}

/// A barrier of the block made of a polling loop (every thread counts itself in a
/// shared word, then polls it until the whole block has), before `next`; returns the
/// loop's block. `insts` is the block before it.
fn spin_barrier(k: &mut Kernel, insts: &mut Vec<InstKind>, next: BlockId) -> BlockId {
    let span = Span::default();
    let mut reg = |name: &str, ty| {
        k.regs.push(RegInfo { name: name.into(), ty, span });
        RegId(k.regs.len() as u32 - 1)
    };
    let (seen, ntid, more) =
        (reg("%seen", RegTy::Int(32)), reg("%ntid", RegTy::Int(32)), reg("%more", RegTy::Pred));
    let at = Address { base: None, offset: 512 };
    let atom = |op, dst, src| InstKind::Atomic {
        op,
        space: Space::Shared,
        ty: U32,
        scope: Scope::Cta,
        order: Order::Relaxed,
        dst,
        addr: at,
        src: Value::Imm(src),
        cmp: Value::Imm(0),
    };
    insts.push(atom(AtomicOp::Add, None, 1));
    let poll = vec![
        atom(AtomicOp::Or, Some(seen), 0),
        InstKind::Special { dst: ntid, reg: SpecialReg::Ntid(Dim::X) },
        InstKind::Setp {
            cmp: CmpOp::Lt,
            ty: U32,
            ftz: false,
            dst: Some(more),
            dst_not: None,
            lhs: Value::Reg(seen),
            rhs: Value::Reg(ntid),
            combine: None,
        },
    ];
    let id = BlockId(k.blocks.len() as u32);
    let term = Terminator::Branch { cond: more, negate: false, if_true: id, if_false: next };
    let insts = poll.into_iter().map(|kind| Inst { kind, span }).collect();
    k.blocks.push(Block { label: None, span, insts, term, term_span: span });
    id
}

/// The thread's addresses, and its inputs from its slot.
fn preamble(r: &Regs) -> Vec<InstKind> {
    let special = |dst, reg| InstKind::Special { dst, reg };
    let (u64t, reg) = (OpTy::U(64), Value::Reg);
    let param = |dst, at| InstKind::Load {
        space: Space::Param,
        ty: u64t,
        dsts: vec![Some(dst)],
        addr: Address { base: None, offset: at },
    };
    vec![
        param(r.addr, 0),
        param(r.common, 8),
        special(r.tid, SpecialReg::Tid(Dim::X)),
        special(r.t, SpecialReg::Ntid(Dim::X)),
        special(r.sh, SpecialReg::Ctaid(Dim::X)),
        InstKind::Mad {
            part: BinaryOp::Mul,
            ty: U32,
            dst: r.t,
            a: reg(r.sh),
            b: reg(r.t),
            c: reg(r.tid),
        },
        bin(BinaryOp::MulWide, U32, r.d, reg(r.t), Value::Imm(u64::from(SLOT_BYTES))),
        bin(BinaryOp::Add, u64t, r.addr, reg(r.addr), reg(r.d)),
        bin(BinaryOp::Shl, U32, r.sh, reg(r.tid), Value::Imm(3)),
        bin(BinaryOp::And, U32, r.wb, reg(r.tid), Value::Imm(0xffff_ffe0)),
        InstKind::Mov { ty: U32, dst: r.n, src: Value::Imm(0) },
        InstKind::Load {
            space: Space::Global,
            ty: U32,
            dsts: r.a.iter().map(|a| Some(*a)).collect(),
            addr: global(r, 0),
        },
        InstKind::Load {
            space: Space::Global,
            ty: u64t,
            dsts: vec![Some(r.d)],
            addr: global(r, 16),
        },
        // Through a generic address (a global one): `pass::expand_generic`'s dispatch.
        InstKind::Load {
            space: Space::Generic,
            ty: OpTy::F(32),
            dsts: vec![Some(r.f[0]), Some(r.f[1])],
            addr: global(r, 24),
        },
        InstKind::Convert {
            to: OpTy::F(64),
            from: OpTy::F(32),
            rounding: None,
            mode: FloatMode::default(),
            dst: r.g,
            src: reg(r.f[0]),
        },
        InstKind::Convert {
            to: OpTy::U(16),
            from: U32,
            rounding: None,
            mode: FloatMode::default(),
            dst: r.h,
            src: reg(r.a[3]),
        },
    ]
}

/// Stores the thread's results in its slot (the f64 and 16-bit ones folded in).
fn results(r: &Regs) -> Vec<InstKind> {
    let reg = Value::Reg;
    vec![
        InstKind::Unpack { elem: U32, dsts: vec![Some(r.t), None], src: reg(r.g) },
        bin(BinaryOp::Xor, U32, r.a[0], reg(r.a[0]), reg(r.t)),
        InstKind::Unpack { elem: U32, dsts: vec![None, Some(r.t)], src: reg(r.g) },
        bin(BinaryOp::Xor, U32, r.a[1], reg(r.a[1]), reg(r.t)),
        InstKind::Convert {
            to: U32,
            from: OpTy::U(16),
            rounding: None,
            mode: FloatMode::default(),
            dst: r.t,
            src: reg(r.h),
        },
        bin(BinaryOp::Add, U32, r.a[2], reg(r.a[2]), reg(r.t)),
        InstKind::Store {
            space: Space::Global,
            ty: U32,
            srcs: r.a.iter().map(|a| reg(*a)).collect(),
            addr: global(r, 0),
        },
        InstKind::Store {
            space: Space::Global,
            ty: OpTy::U(64),
            srcs: vec![reg(r.d)],
            addr: global(r, 16),
        },
        InstKind::Store {
            space: Space::Global,
            ty: OpTy::F(32),
            srcs: vec![reg(r.f[0]), reg(r.f[1])],
            addr: global(r, 24),
        },
    ]
}

/// Makes block `b`'s terminator test values it computes, going forward once the
/// counter reaches [`PROGRAM_STEPS`]: a back edge (or a jump anywhere) is taken only
/// while `%c` holds.
fn bounded(
    rng: &mut Rng,
    r: &Regs,
    b: usize,
    n: usize,
    term: Terminator,
    warps: bool,
) -> (Vec<InstKind>, Terminator) {
    let forward = BlockId((b + 1).min(n - 1) as u32);
    let ahead = |t: BlockId| t.index() > b;
    let mut out = vec![InstKind::Setp {
        cmp: CmpOp::Lt,
        ty: U32,
        ftz: false,
        dst: Some(r.c),
        dst_not: None,
        lhs: Value::Reg(r.n),
        rhs: Value::Imm(PROGRAM_STEPS),
        combine: None,
    }];
    // With warp exchanges, conditions are the same in a warp (of the counter and the
    // warp's first thread), so that which lanes meet at an exchange is unambiguous.
    let (data, mix) = if warps {
        (r.n, r.wb)
    } else {
        (r.a[rng.below(4) as usize], if rng.below(2) == 0 { r.tid } else { r.n })
    };
    out.push(bin(BinaryOp::Mul, U32, r.t, Value::Reg(data), Value::Imm(rng.next_u64() | 1)));
    out.push(bin(BinaryOp::Xor, U32, r.t, Value::Reg(r.t), Value::Reg(mix)));
    out.push(bin(BinaryOp::And, U32, r.t, Value::Reg(r.t), Value::Imm(1 << rng.below(3))));
    let term = match term {
        Terminator::Return => Terminator::Return,
        Terminator::Jump(t) if ahead(t) => Terminator::Jump(t),
        Terminator::Jump(t) => {
            Terminator::Branch { cond: r.c, negate: false, if_true: t, if_false: forward }
        }
        Terminator::Branch { cond, if_true, if_false, .. } => {
            let (back, fwd) = match (ahead(if_true), ahead(if_false)) {
                (_, true) => (if_true, if_false),
                (true, false) => (if_false, if_true),
                (false, false) => (if_true, forward),
            };
            out.push(InstKind::Setp {
                cmp: CmpOp::Ne,
                ty: U32,
                ftz: false,
                dst: Some(cond),
                dst_not: None,
                lhs: Value::Reg(r.t),
                rhs: Value::Imm(0),
                combine: Some((BoolOp::And, r.c, false)),
            });
            Terminator::Branch { cond, negate: false, if_true: back, if_false: fwd }
        }
        Terminator::Switch { selector, cases, default } => {
            out.push(InstKind::Select {
                ty: U32,
                dst: selector,
                a: Value::Reg(r.t),
                b: Value::Imm(u64::from(u32::MAX)),
                cond: r.c,
                negate: false,
            });
            let default = if ahead(default) { default } else { forward };
            let cases = cases.into_iter().enumerate().map(|(i, c)| (i as u32 * 2, c.1)).collect();
            Terminator::Switch { selector, cases, default }
        }
    };
    (out, term)
}

fn pick<T: Copy>(rng: &mut Rng, xs: &[T]) -> T {
    xs[rng.below(xs.len() as u64) as usize]
}

/// A 32-bit register of the program's data.
fn data(rng: &mut Rng, r: &Regs) -> RegId {
    r.a[rng.below(4) as usize]
}

/// An operand: mostly a data register, sometimes an edge-case constant.
fn operand(rng: &mut Rng, r: &Regs) -> Value {
    if rng.below(4) == 0 {
        let any = u64::from(rng.next_u32());
        Value::Imm(pick(rng, &[0, 1, 2, 31, 0x7fff_ffff, 0x8000_0000, 0xffff_ffff, any]))
    } else {
        Value::Reg(data(rng, r))
    }
}

fn rounding(rng: &mut Rng) -> Rounding {
    pick(rng, &[Rounding::Nearest, Rounding::Zero, Rounding::Down, Rounding::Up])
}

fn float_mode(rng: &mut Rng, rounding: Rounding) -> FloatMode {
    FloatMode {
        ftz: rng.below(3) == 0,
        sat: rng.below(5) == 0,
        rounding,
        path: FloatPath::default(),
        visible: false,
    }
}

fn int_type(rng: &mut Rng) -> OpTy {
    pick(rng, &[OpTy::U(32), OpTy::S(32)])
}

/// One to a few instructions of random straight-line code.
fn random_code(rng: &mut Rng, r: &Regs, warps: bool) -> Vec<InstKind> {
    match rng.below(20) {
        0..=4 => integer_code(rng, r),
        5..=12 => float_code(rng, r),
        13 | 14 => memory_code(rng, r),
        15 => atomic_code(rng, r),
        _ if warps => warp_code(rng, r),
        _ => memory_code(rng, r),
    }
}

/// Integer arithmetic, bit fields, 64-bit operations.
fn integer_code(rng: &mut Rng, r: &Regs) -> Vec<InstKind> {
    let reg = Value::Reg;
    match rng.below(5) {
        0..=2 => {
            let op = pick(
                rng,
                &[
                    BinaryOp::Add,
                    BinaryOp::Sub,
                    BinaryOp::Mul,
                    BinaryOp::MulHi,
                    BinaryOp::Div,
                    BinaryOp::Rem,
                    BinaryOp::Min,
                    BinaryOp::Max,
                    BinaryOp::And,
                    BinaryOp::Or,
                    BinaryOp::Xor,
                    BinaryOp::Shl,
                    BinaryOp::Shr,
                ],
            );
            vec![InstKind::Binary {
                op,
                ty: int_type(rng),
                mode: FloatMode::default(),
                dst: data(rng, r),
                lhs: operand(rng, r),
                rhs: operand(rng, r),
            }]
        }
        3 => {
            let op = pick(
                rng,
                &[
                    UnaryOp::Not,
                    UnaryOp::Neg,
                    UnaryOp::Abs,
                    UnaryOp::Popc,
                    UnaryOp::Clz,
                    UnaryOp::Brev,
                    UnaryOp::Cnot,
                ],
            );
            vec![InstKind::Unary {
                op,
                ty: int_type(rng),
                mode: FloatMode::default(),
                dst: data(rng, r),
                src: operand(rng, r),
            }]
        }
        _ => {
            let (ty, x, y) = (int_type(rng), operand(rng, r), operand(rng, r));
            match rng.below(4) {
                0 => vec![InstKind::Mad {
                    part: BinaryOp::MulWide,
                    ty,
                    dst: r.d,
                    a: x,
                    b: y,
                    c: reg(r.d),
                }],
                1 => vec![InstKind::Bfe {
                    ty,
                    dst: data(rng, r),
                    a: x,
                    pos: y,
                    len: operand(rng, r),
                }],
                2 => vec![InstKind::Bfi {
                    ty: U32,
                    dst: data(rng, r),
                    a: x,
                    b: y,
                    pos: operand(rng, r),
                    len: operand(rng, r),
                }],
                _ => {
                    let op = pick(
                        rng,
                        &[
                            BinaryOp::Add,
                            BinaryOp::Mul,
                            BinaryOp::Shr,
                            BinaryOp::Div,
                            BinaryOp::Xor,
                        ],
                    );
                    let ty = pick(rng, &[OpTy::U(64), OpTy::S(64)]);
                    let rhs = if op == BinaryOp::Shr { reg(data(rng, r)) } else { reg(r.d) };
                    let lhs = Value::Imm(rng.next_u64());
                    vec![
                        InstKind::Pack {
                            elem: U32,
                            dst: r.d,
                            srcs: vec![reg(data(rng, r)), reg(data(rng, r))],
                        },
                        InstKind::Binary {
                            op,
                            ty,
                            mode: FloatMode::default(),
                            dst: r.d,
                            lhs: reg(r.d),
                            rhs,
                        },
                        InstKind::Binary {
                            op: BinaryOp::Xor,
                            ty: OpTy::U(64),
                            mode: FloatMode::default(),
                            dst: r.d,
                            lhs: reg(r.d),
                            rhs: lhs,
                        },
                    ]
                }
            }
        }
    }
}

/// Float arithmetic in every rounding, conversions, comparisons and selects.
fn float_code(rng: &mut Rng, r: &Regs) -> Vec<InstKind> {
    let reg = Value::Reg;
    let f = |rng: &mut Rng| r.f[rng.below(2) as usize];
    match rng.below(9) {
        0..=2 => {
            let op = pick(
                rng,
                &[
                    BinaryOp::Add,
                    BinaryOp::Sub,
                    BinaryOp::Mul,
                    BinaryOp::Div,
                    BinaryOp::Min,
                    BinaryOp::Max,
                ],
            );
            let rd = if matches!(op, BinaryOp::Min | BinaryOp::Max) {
                Rounding::Nearest
            } else {
                rounding(rng)
            };
            let lhs = if rng.below(4) == 0 { reg(data(rng, r)) } else { reg(f(rng)) };
            vec![InstKind::Binary {
                op,
                ty: OpTy::F(32),
                mode: float_mode(rng, rd),
                dst: f(rng),
                lhs,
                rhs: reg(f(rng)),
            }]
        }
        3 => {
            let rd = rounding(rng);
            vec![InstKind::Fma {
                ty: OpTy::F(32),
                mode: float_mode(rng, rd),
                dst: f(rng),
                a: reg(f(rng)),
                b: reg(data(rng, r)),
                c: reg(f(rng)),
            }]
        }
        4 => {
            let op = pick(
                rng,
                &[
                    UnaryOp::Sqrt,
                    UnaryOp::Rcp,
                    UnaryOp::Neg,
                    UnaryOp::Abs,
                    UnaryOp::Ex2,
                    UnaryOp::Lg2,
                    UnaryOp::Rsqrt,
                    UnaryOp::Sin,
                ],
            );
            let rd = if matches!(op, UnaryOp::Sqrt | UnaryOp::Rcp) {
                rounding(rng)
            } else {
                Rounding::Nearest
            };
            let mut mode = float_mode(rng, rd);
            mode.sat &= matches!(op, UnaryOp::Sqrt | UnaryOp::Rcp);
            vec![InstKind::Unary { op, ty: OpTy::F(32), mode, dst: f(rng), src: reg(f(rng)) }]
        }
        5 => {
            let rd = rounding(rng);
            let op = pick(rng, &[BinaryOp::Add, BinaryOp::Mul, BinaryOp::Div]);
            let m = FloatMode { rounding: rd, ..FloatMode::default() };
            let (f64t, f32t) = (OpTy::F(64), OpTy::F(32));
            let cvt = |to, from, rounding, dst, src| InstKind::Convert {
                to,
                from,
                rounding,
                mode: FloatMode::default(),
                dst,
                src,
            };
            // An f64 `fma` too: to nearest, with f64, `pass::retry_regions` groups two
            // of these (or `div`s) in a block.
            let arith = if rng.below(3) == 0 {
                InstKind::Fma { ty: f64t, mode: m, dst: r.g, a: reg(r.g), b: reg(r.d), c: reg(r.g) }
            } else {
                InstKind::Binary { op, ty: f64t, mode: m, dst: r.g, lhs: reg(r.g), rhs: reg(r.d) }
            };
            vec![
                cvt(f64t, f32t, None, r.g, reg(f(rng))),
                arith,
                cvt(f32t, f64t, Some(rounding(rng)), f(rng), reg(r.g)),
            ]
        }
        6 => {
            let pairs = [
                (OpTy::S(32), OpTy::F(32)),
                (OpTy::U(32), OpTy::F(32)),
                (OpTy::F(32), OpTy::S(32)),
                (OpTy::F(32), OpTy::U(32)),
                (OpTy::F(32), OpTy::F(32)),
                (OpTy::U(16), OpTy::S(32)),
                (OpTy::S(16), OpTy::U(32)),
            ];
            let (to, from) = pick(rng, &pairs);
            let dst = if to.is_float() {
                f(rng)
            } else if to.bits() == 16 {
                r.h
            } else {
                data(rng, r)
            };
            let src = if from.is_float() { reg(f(rng)) } else { reg(data(rng, r)) };
            let rounding = (to.is_float() || from.is_float()).then(|| rounding(rng));
            let sat = to.bits() < 32 || (to.is_float() && rng.below(4) == 0);
            let mode = FloatMode { ftz: rng.below(3) == 0, sat, ..FloatMode::default() };
            vec![InstKind::Convert { to, from, rounding, mode, dst, src }]
        }
        // A chain of exact operations to nearest, as math kernels have: two f32 ones
        // (`pass::exact_runs` groups them) and two f64 ones (`pass::retry_regions`).
        8 => {
            let m = FloatMode { rounding: Rounding::Nearest, ..FloatMode::default() };
            let (f64t, f32t, [f0, f1]) = (OpTy::F(64), OpTy::F(32), r.f);
            let to64 = InstKind::Convert {
                to: f64t,
                from: f32t,
                rounding: None,
                mode: FloatMode::default(),
                dst: r.g,
                src: reg(f0),
            };
            let to32 = InstKind::Convert {
                to: f32t,
                from: f64t,
                rounding: Some(Rounding::Nearest),
                mode: FloatMode::default(),
                dst: f0,
                src: reg(r.g),
            };
            let div = |ty, dst, lhs, rhs| InstKind::Binary {
                op: BinaryOp::Div,
                ty,
                mode: m,
                dst,
                lhs: reg(lhs),
                rhs: reg(rhs),
            };
            let fma = |ty, dst, a, b, c| InstKind::Fma {
                ty,
                mode: m,
                dst,
                a: reg(a),
                b: reg(b),
                c: reg(c),
            };
            vec![
                div(f32t, f0, f0, f1),
                fma(f32t, f1, f1, data(rng, r), f0),
                to64,
                fma(f64t, r.g, r.g, r.d, r.g),
                div(f64t, r.g, r.g, r.d),
                to32,
            ]
        }
        _ => {
            let cmp =
                pick(rng, &[CmpOp::Lt, CmpOp::Le, CmpOp::Eq, CmpOp::Ne, CmpOp::Gtu, CmpOp::Nan]);
            let (ty, x, y) = if rng.below(2) == 0 {
                (OpTy::F(32), reg(f(rng)), reg(f(rng)))
            } else {
                (int_type(rng), operand(rng, r), operand(rng, r))
            };
            let cmp =
                if ty.is_float() { cmp } else { pick(rng, &[CmpOp::Lt, CmpOp::Ge, CmpOp::Eq]) };
            vec![
                InstKind::Setp {
                    cmp,
                    ty,
                    ftz: rng.below(2) == 0,
                    dst: Some(r.c),
                    dst_not: None,
                    lhs: x,
                    rhs: y,
                    combine: None,
                },
                InstKind::Select {
                    ty: U32,
                    dst: data(rng, r),
                    a: operand(rng, r),
                    b: operand(rng, r),
                    cond: r.c,
                    negate: rng.below(2) == 0,
                },
            ]
        }
    }
}

fn memory_code(rng: &mut Rng, r: &Regs) -> Vec<InstKind> {
    let a = r.a[rng.below(4) as usize];
    let b = r.a[rng.below(4) as usize];
    let (space, base, room) = pick(
        rng,
        &[(Space::Global, r.addr, SLOT_BYTES), (Space::Shared, r.sh, 8), (Space::Local, r.t, 16)],
    );
    let ty = pick(rng, &[OpTy::U(8), OpTy::U(16), OpTy::U(32), OpTy::S(8), OpTy::S(16)]);
    let size = ty.bits() / 8;
    let offset = i64::from(size * rng.below(u64::from(room / size)) as u32);
    let (base, pre) = if space == Space::Local { (None, vec![]) } else { (Some(base), vec![]) };
    let addr = Address { base, offset };
    let mut v = pre;
    let narrow = ty.bits() < 32;
    if rng.below(2) == 0 {
        let src = if narrow && ty.bits() == 16 { Value::Reg(r.h) } else { Value::Reg(a) };
        if narrow && ty.bits() == 8 {
            // A byte store takes a wider register's low byte.
            v.push(InstKind::Store { space, ty, srcs: vec![Value::Reg(a)], addr });
        } else {
            v.push(InstKind::Store { space, ty, srcs: vec![src], addr });
        }
    }
    let dst = if narrow && ty.bits() == 16 { r.h } else { b };
    v.push(InstKind::Load { space, ty, dsts: vec![Some(dst)], addr });
    v
}

fn atomic_code(rng: &mut Rng, r: &Regs) -> Vec<InstKind> {
    let reg = Value::Reg;
    let a = r.a[rng.below(4) as usize];
    let src = reg(r.a[rng.below(4) as usize]);
    let cmp = reg(r.a[rng.below(4) as usize]);
    let atom = |op, space, ty, dst, base, offset, src, cmp| InstKind::Atomic {
        op,
        space,
        ty,
        scope: Scope::Gpu,
        order: Order::Relaxed,
        dst,
        addr: Address { base: Some(base), offset },
        src,
        cmp,
    };
    let word = 4 * rng.below(8) as i64;
    match rng.below(6) {
        0 => {
            let op = pick(
                rng,
                &[
                    AtomicOp::Add,
                    AtomicOp::Exch,
                    AtomicOp::Cas,
                    AtomicOp::Inc,
                    AtomicOp::Dec,
                    AtomicOp::Min,
                    AtomicOp::Max,
                    AtomicOp::And,
                ],
            );
            let ty = pick(rng, &[U32, OpTy::S(32)]);
            vec![atom(op, Space::Global, ty, Some(a), r.addr, word, src, cmp)]
        }
        1 => {
            let op = AtomicOp::FloatAdd { ftz: rng.below(2) == 0 };
            vec![atom(
                op,
                Space::Global,
                OpTy::F(32),
                Some(r.f[0]),
                r.addr,
                word,
                reg(r.f[1]),
                Value::Imm(0),
            )]
        }
        2 => {
            let op = pick(
                rng,
                &[
                    AtomicOp::Cas,
                    AtomicOp::Add,
                    AtomicOp::Exch,
                    AtomicOp::HalfAdd { format: FloatFormat::F16, lanes: 1 },
                    AtomicOp::HalfMinMax { max: true, format: FloatFormat::Bf16, lanes: 1 },
                ],
            );
            let half = 2 * rng.below(4) as i64;
            vec![atom(
                op,
                Space::Shared,
                OpTy::U(16),
                Some(r.h),
                r.sh,
                half,
                reg(r.h),
                Value::Imm(rng.below(3)),
            )]
        }
        3 => {
            let op = pick(
                rng,
                &[
                    AtomicOp::Add,
                    AtomicOp::Inc,
                    AtomicOp::Max,
                    AtomicOp::HalfAdd { format: FloatFormat::F16, lanes: 2 },
                ],
            );
            vec![atom(op, Space::Shared, U32, Some(a), r.sh, 4 * rng.below(2) as i64, src, cmp)]
        }
        4 => {
            // Updates of common words that commute (one operation per word: a max and
            // a xor of one word do not), their old values not used.
            let ops = [AtomicOp::Add, AtomicOp::Or, AtomicOp::Xor, AtomicOp::Max];
            let op = ops[(word / 4) as usize % ops.len()];
            vec![atom(op, Space::Global, U32, None, r.common, word, src, Value::Imm(0))]
        }
        _ => vec![atom(
            AtomicOp::Add,
            Space::Global,
            OpTy::U(64),
            Some(r.d),
            r.addr,
            16,
            reg(r.d),
            Value::Imm(0),
        )],
    }
}

/// A warp exchange as semantic analysis makes one (`sema::warp`): a sync point of
/// the `.sync` forms, the publish, reads or a ballot, the end.
fn warp_code(rng: &mut Rng, r: &Regs) -> Vec<InstKind> {
    let reg = Value::Reg;
    // The published register keeps its value through the reads, as in sema's.
    let published = rng.below(4) as usize;
    let value = reg(r.a[published]);
    let mut v = vec![];
    if r.sync_all || rng.below(2) == 0 {
        let members = Value::Imm(0xffff_ffff);
        // One kind for all: every exchange of the program meets every other.
        let kind = WarpSyncKind::new("shfl.sync.idx.b32");
        v.push(InstKind::SyncPoint { point: SyncPoint::Warp { members, kind } });
    }
    v.push(InstKind::WarpPublish { value });
    for _ in 0..1 + rng.below(2) {
        let dst = r.a[(published + 1 + rng.below(3) as usize) % 4];
        if rng.below(3) == 0 {
            let any = u64::from(rng.next_u32());
            let lanes = Value::Imm(pick(rng, &[0xffff_ffff, 0x0000_ffff, any]));
            v.push(InstKind::WarpBallot { dst, value, lanes, warp_base: reg(r.wb) });
        } else {
            let lane = if rng.below(2) == 0 {
                Value::Imm(rng.below(32))
            } else {
                v.push(bin(BinaryOp::Xor, U32, r.t, reg(r.tid), Value::Imm(1 + rng.below(31))));
                v.push(bin(BinaryOp::And, U32, r.t, reg(r.t), Value::Imm(31)));
                reg(r.t)
            };
            v.push(InstKind::WarpRead { dst, value, lane, warp_base: reg(r.wb) });
        }
    }
    v.push(InstKind::WarpSync);
    v
}
