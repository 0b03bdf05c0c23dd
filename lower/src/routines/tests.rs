//! The routines against the interpreter's correctly rounded model (`interp::float`,
//! exact rational arithmetic, independent of the routines' integer algorithms), on
//! operands that reach every path: random bits, specials, subnormals, products near
//! the addend (cancellation) and quotients and roots near halfway cases.
//!
//! The routine is run by a small evaluator over its CFG, each operation by the
//! interpreter's own semantics (`interp::arith`), fast enough for many inputs:
//! `PTXVK_ROUTINE_CASES` sets how many per routine (default 20,000; the change that
//! moved the routines ran 1,000,000 in release). The `.approx` routines are checked
//! against Rust's f64 math library instead (`PTXVK_APPROX_CASES`, default 20,000).

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

use super::{build, build_with};
use crate::interp::arith;
use crate::ir::{
    BinaryOp, F32Op, FloatMode, FloatPath, Function, Inst, InstKind, OpTy, RegId, RegInfo,
    Rounding, Routine, Terminator, UnaryOp, Value,
};

const F64: OpTy = OpTy::F(64);
const F32: OpTy = OpTy::F(32);

/// Runs routine `f` on `args`.
pub(super) fn eval(f: &crate::ir::Function, args: &[u64]) -> u64 {
    run(f, args).0
}

thread_local! {
    /// The routines called so far, built once (a call runs its callee's body).
    static CALLEES: RefCell<BTreeMap<Routine, Rc<Function>>> = RefCell::default();
}

/// Runs callee `i` of routine `f` ([`Routine::callees`]: a routine built alone calls
/// them by index) on `args`.
fn call(f: &Function, i: usize, args: &[u64]) -> u64 {
    let r = f.routine.and_then(|r| r.callees().get(i).copied());
    let r = r.unwrap_or_else(|| panic!("{} calls function {i}, not a callee", f.name));
    let callee =
        CALLEES.with(|c| c.borrow_mut().entry(r).or_insert_with(|| build(r).into()).clone());
    eval(&callee, args)
}

/// Runs routine `f`'s CFG on `args`: its result, and how many jumps went back to the
/// block they left or an earlier one (the iterations of its loops after their first:
/// the routines' blocks are in the order they are built).
fn run(f: &crate::ir::Function, args: &[u64]) -> (u64, u32) {
    let mut regs = vec![0u64; f.regs.len()];
    for (&(r, _), &a) in f.params.iter().zip(args) {
        regs[r.index()] = a;
    }
    let (mut at, mut back) = (f.entry, 0);
    loop {
        let block = &f.blocks[at.index()];
        run_block(f, &block.insts, &mut regs);
        let next = match block.term {
            Terminator::Return => return (regs[f.returns[0].0.index()], back),
            Terminator::Jump(b) => b,
            Terminator::Branch { cond, negate, if_true, if_false } => {
                if (regs[cond.index()] != 0) != negate {
                    if_true
                } else {
                    if_false
                }
            }
            ref other => panic!("a routine has {other:?}"),
        };
        back += u32::from(next.index() <= at.index());
        assert!(back < 1000, "{}: a loop runs on", f.name);
        at = next;
    }
}

/// Runs the instructions of one block of `f`.
fn run_block(f: &Function, insts: &[crate::ir::Inst], regs: &mut [u64]) {
    let get = |regs: &[u64], v: Value| match v {
        Value::Imm(b) => b,
        Value::Reg(r) => regs[r.index()],
    };
    for inst in insts {
        let (dst, v) = match &inst.kind {
            InstKind::Binary { op, ty, mode, dst, lhs, rhs } => {
                (*dst, arith::binary(*op, *ty, *mode, get(regs, *lhs), get(regs, *rhs)))
            }
            InstKind::Unary { op, ty, mode, dst, src } => {
                (*dst, arith::unary(*op, *ty, *mode, get(regs, *src)))
            }
            InstKind::Setp { cmp, ty, ftz, dst: Some(dst), lhs, rhs, .. } => {
                let c = arith::compare(*cmp, *ty, *ftz, get(regs, *lhs), get(regs, *rhs));
                (*dst, u64::from(c))
            }
            InstKind::Select { dst, a, b, cond, negate, .. } => {
                let c = (regs[cond.index()] != 0) != *negate;
                (*dst, if c { get(regs, *a) } else { get(regs, *b) })
            }
            InstKind::PredLogic { op, dst, lhs, rhs } => {
                let (a, b) = (regs[lhs.index()] != 0, regs[rhs.index()] != 0);
                (*dst, u64::from(arith::bool_op(*op, a, b)))
            }
            InstKind::Convert { to, from, rounding, mode, dst, src } => {
                (*dst, arith::convert(*to, *from, *rounding, *mode, get(regs, *src)))
            }
            InstKind::Mov { dst, src, .. } => (*dst, get(regs, *src)),
            InstKind::Fma { ty, mode, dst, a, b, c } => {
                let (a, b, c) = (get(regs, *a), get(regs, *b), get(regs, *c));
                (*dst, arith::fma(*ty, *mode, a, b, c))
            }
            InstKind::PredNot { dst, src } => (*dst, u64::from(regs[src.index()] == 0)),
            InstKind::Narrow { to, from, rounding, satfinite, relu, dst, src } => {
                let v = get(regs, *src);
                (*dst, arith::narrow(*to, *from, *rounding, *satfinite, *relu, v))
            }
            InstKind::IntToFloat { to, from, rounding, dst, src } => {
                (*dst, arith::int_to_float(*to, *from, *rounding, get(regs, *src)))
            }
            InstKind::Call { callee, args, results } => {
                let args: Vec<u64> = args.iter().map(|&a| get(regs, a)).collect();
                (results[0], call(f, callee.index(), &args))
            }
            other => panic!("a routine has {other:?}"),
        };
        regs[dst.index()] = v;
    }
}

/// The model: the interpreter's f64 arithmetic, rounded by `rounding`.
fn model(r: Routine, x: &[u64]) -> u64 {
    let mode = |rounding| FloatMode { rounding, ..FloatMode::default() };
    match r {
        Routine::FmaF64(rd) => arith::fma(F64, mode(rd), x[0], x[1], x[2]),
        Routine::DivF64(rd) => arith::binary(BinaryOp::Div, F64, mode(rd), x[0], x[1]),
        Routine::SqrtF64(rd) => arith::unary(UnaryOp::Sqrt, F64, mode(rd), x[0]),
        Routine::Approx(_) => panic!("the `.approx` routines have their own test"),
        Routine::Newton { .. } => panic!("the Newton routines have their own test (newton.rs)"),
        Routine::InAllocation { .. } | Routine::ShadowWord => {
            panic!("the allocation table's routines have their own test (allocation_table.rs)")
        }
        Routine::Narrow { to, from_bits, rounding, satfinite, relu } => {
            arith::narrow(to, OpTy::F(from_bits), rounding, satfinite, relu, x[0])
        }
        Routine::IntToFloat { to, from, rounding } => arith::int_to_float(to, from, rounding, x[0]),
        Routine::Widen(from) => arith::widen(from, x[0]),
        Routine::F32ToF64 => arith::convert(F64, F32, None, FloatMode::default(), x[0]),
        Routine::FmaF32(rd) => arith::fma(F32, mode(rd), x[0], x[1], x[2]),
        Routine::DivF32(rd) => arith::binary(BinaryOp::Div, F32, mode(rd), x[0], x[1]),
        Routine::SqrtF32(rd) => arith::unary(UnaryOp::Sqrt, F32, mode(rd), x[0]),
        Routine::FmaF32InF64 { .. } => arith::fma(F32, mode(Rounding::Nearest), x[0], x[1], x[2]),
        Routine::DivF32InF64(rd) => arith::binary(BinaryOp::Div, F32, mode(rd), x[0], x[1]),
        Routine::SqrtF32InF64(rd) => arith::unary(UnaryOp::Sqrt, F32, mode(rd), x[0]),
        Routine::NearestF32(op) => {
            let nearest = mode(Rounding::Nearest);
            match op {
                F32Op::Fma { .. } => arith::fma(F32, nearest, x[0], x[1], x[2]),
                F32Op::Div => arith::binary(BinaryOp::Div, F32, nearest, x[0], x[1]),
                F32Op::Sqrt => arith::unary(UnaryOp::Sqrt, F32, nearest, x[0]),
            }
        }
        Routine::FastF32(_) => panic!("the fast paths have their own test (fast_f32.rs)"),
        Routine::NearestF64(op) => model(op.exact(), x),
        Routine::FastF64(_) => panic!("the fast paths have their own test (fast_f64.rs)"),
        Routine::OddF32(op) | Routine::OddF32InF64 { op, .. } => {
            arith::round_to_odd(op, x[0], x[1], x.get(2).map_or(0, |&c| c))
        }
        // Truncated, the last bit set when inexact (the roundings down and up differ,
        // and not only in the sign of an exact zero).
        Routine::FmaF64Odd => {
            let z = arith::fma(F64, mode(Rounding::Zero), x[0], x[1], x[2]);
            let down = arith::fma(F64, mode(Rounding::Down), x[0], x[1], x[2]);
            let up = arith::fma(F64, mode(Rounding::Up), x[0], x[1], x[2]);
            if down == up || (down | up) << 1 == 0 {
                z
            } else {
                z | 1
            }
        }
    }
}

/// Routine `r`'s function with a new last argument of type `ty`, and after each of its
/// `.native` `div`, `sqrt` and `rsqrt` (the device's candidates and approximations) the
/// instruction `after(dst, k)` of the candidate's register and the argument's; and how
/// many candidates it has.
pub(super) fn with_candidate_argument(
    r: Routine,
    ty: OpTy,
    after: impl Fn(RegId, RegId) -> InstKind,
) -> (Function, usize) {
    let mut f = build(r);
    let k = RegId(f.regs.len() as u32);
    f.regs.push(RegInfo { name: "%candidate".into(), ty: ty.storage(), span: f.span });
    f.params.push((k, ty));
    let mut candidates = 0;
    for block in &mut f.blocks {
        for inst in std::mem::take(&mut block.insts) {
            let candidate = match inst.kind {
                InstKind::Binary { op: BinaryOp::Div, mode, dst, .. }
                | InstKind::Unary { op: UnaryOp::Sqrt | UnaryOp::Rsqrt, mode, dst, .. }
                    if mode.path == FloatPath::Native =>
                {
                    Some(dst)
                }
                _ => None,
            };
            let span = inst.span;
            block.insts.push(inst);
            if let Some(dst) = candidate {
                candidates += 1;
                block.insts.push(Inst { kind: after(dst, k), span });
            }
        }
    }
    (f, candidates)
}

/// Routine `r` built alone, structured and verified (`pass::routine`, as the structured
/// text format builds a routine it names), and its float `Binary` and `Unary`
/// operations: the binary operator (`None` for a unary one), the type and the mode.
pub(super) fn float_arithmetic(r: Routine) -> Vec<(Option<BinaryOp>, OpTy, FloatMode)> {
    let f = crate::pass::routine(r).unwrap_or_else(|d| panic!("{}: {d:?}", r.name()));
    let insts = f.blocks.iter().flat_map(|b| &b.insts);
    insts
        .filter_map(|i| match i.kind {
            InstKind::Binary { op, ty, mode, .. } if ty.is_float() => Some((Some(op), ty, mode)),
            InstKind::Unary { ty, mode, .. } if ty.is_float() => Some((None, ty, mode)),
            _ => None,
        })
        .collect()
}

/// xorshift64*.
pub(super) struct Rng(pub(super) u64);

impl Rng {
    pub(super) fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A value of binary exponent `e` (subnormal or zero below -1022), either sign.
    fn at(&mut self, e: i64) -> u64 {
        let sign = self.next() & (1 << 63);
        let frac = self.next() >> 12;
        let field = (e + 1023).clamp(0, 2046) as u64;
        sign | field << 52 | frac
    }

    /// An operand: special values, subnormals, random bits, or a value near 2^e.
    fn operand(&mut self, e: i64) -> u64 {
        const SPECIAL: [u64; 8] = [
            0,
            1 << 63,
            0x7ff0_0000_0000_0000,
            0xfff0_0000_0000_0000,
            0x7ff8_0000_0000_0001,
            1,
            0x000f_ffff_ffff_ffff,
            0x7fef_ffff_ffff_ffff,
        ];
        match self.next() % 16 {
            0 => SPECIAL[(self.next() % 8) as usize],
            1 => self.next() & 0x800f_ffff_ffff_ffff,
            2 | 3 => self.next(),
            _ => {
                let near = e + (self.next() % 9) as i64 - 4;
                self.at(near)
            }
        }
    }

    fn exponent(&mut self) -> i64 {
        (self.next() % 2200) as i64 - 1100
    }
}

/// Operands for `r`: an addend near the product (cancellation) or anywhere.
fn inputs(r: Routine, rng: &mut Rng) -> Vec<u64> {
    let (ea, eb, e) = (rng.exponent() / 2, rng.exponent() / 2, rng.exponent());
    let (a, b) = (rng.operand(ea), rng.operand(eb));
    match r.arity() {
        3 => {
            let p = f64::from_bits(a) * f64::from_bits(b);
            let c = match rng.next() % 3 {
                0 => (-p).to_bits().wrapping_add(rng.next() % 5),
                1 => {
                    let near = ea + eb + (rng.next() % 120) as i64 - 60;
                    rng.operand(near)
                }
                _ => rng.operand(e),
            };
            vec![a, b, c]
        }
        2 => vec![a, rng.operand(e)],
        _ => vec![rng.operand(e)],
    }
}

/// `PTXVK_ROUTINE_CASES` (default 20,000) over `share`: how many operands a test tries
/// per routine.
fn routine_cases(share: usize) -> usize {
    let all: Option<usize> = std::env::var("PTXVK_ROUTINE_CASES").ok().and_then(|v| v.parse().ok());
    all.unwrap_or(20_000) / share
}

/// Fails naming `r` and the first few of its `wrong` cases, if any.
fn none_wrong(r: Routine, cases: usize, wrong: &[String]) {
    assert!(
        wrong.is_empty(),
        "{}: {} of {cases} wrong, e.g. {}",
        r.name(),
        wrong.len(),
        wrong[..wrong.len().min(4)].join("; ")
    );
}

#[test]
fn routines_round_as_the_model_in_every_direction() {
    let cases = routine_cases(1);
    let f64_routines = |r: &Routine| {
        matches!(
            r,
            Routine::FmaF64(_)
                | Routine::FmaF64Odd
                | Routine::DivF64(_)
                | Routine::SqrtF64(_)
                | Routine::NearestF64(_)
        )
    };
    for r in Routine::all().into_iter().filter(f64_routines) {
        let f = build(r);
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ r.name().len() as u64);
        let mut wrong = Vec::new();
        for _ in 0..cases {
            let x = inputs(r, &mut rng);
            let (got, want) = (eval(&f, &x), model(r, &x));
            if got != want {
                wrong.push(format!("{x:016x?}: {got:016x}, want {want:016x}"));
            }
        }
        none_wrong(r, cases, &wrong);
    }
}

/// An f32 operand: special values (zeros, infinities, NaNs, the subnormal and finite
/// extremes), subnormals, random bits, or a value near 2^e.
pub(super) fn f32_operand(rng: &mut Rng, e: i64) -> u64 {
    const SPECIAL: [u32; 10] = [
        0,
        0x8000_0000,
        0x7f80_0000,
        0xff80_0000,
        0x7fc0_0000,
        0xffa0_0001,
        1,
        0x007f_ffff,
        0x7f7f_ffff,
        0x3f80_0000,
    ];
    let bits = match rng.next() % 16 {
        0 => SPECIAL[(rng.next() % SPECIAL.len() as u64) as usize],
        1 => rng.next() as u32 & 0x807f_ffff,
        2 | 3 => rng.next() as u32,
        _ => {
            let near = e + (rng.next() % 9) as i64 - 4;
            let field = (near + 127).clamp(0, 254) as u32;
            (rng.next() as u32 & 0x8000_0000) | field << 23 | (rng.next() as u32 & 0x007f_ffff)
        }
    };
    u64::from(bits)
}

/// Operands for an f32 routine `r`: an addend near the product, its negation (the
/// product cancels), a tiny one that decides a tie, or anywhere; exponents over the
/// whole range, past overflow and below the subnormals.
fn f32_inputs(r: Routine, rng: &mut Rng) -> Vec<u64> {
    let exponent = |rng: &mut Rng| (rng.next() % 300) as i64 - 160;
    let (ea, eb, e) = (exponent(rng) / 2, exponent(rng) / 2, exponent(rng));
    let (a, b) = (f32_operand(rng, ea), f32_operand(rng, eb));
    match r.arity() {
        // A product halfway between two f32 (1 + m/2^12 times 1 + n/2^12, m and n odd)
        // and a tiny addend that decides its rounding: an `fma` rounded to nearest in f64
        // first would lose the addend and round the tie to even.
        3 if rng.next().is_multiple_of(4) => {
            let (m, n) = (rng.next() % 2048 * 2 + 1, rng.next() % 2048 * 2 + 1);
            let tiny = (27 + rng.next() % 60) << 23 | (rng.next() & 1) << 31;
            vec![0x3f80_0000 | m << 11, 0x3f80_0000 | n << 11, tiny]
        }
        3 => {
            let p = f32::from_bits(a as u32) * f32::from_bits(b as u32);
            let c = match rng.next() % 3 {
                0 => u64::from((-p).to_bits().wrapping_add(rng.next() as u32 % 5)),
                1 => {
                    let near = ea + eb + (rng.next() % 60) as i64 - 30;
                    f32_operand(rng, near)
                }
                _ => f32_operand(rng, e),
            };
            vec![a, b, c]
        }
        2 => vec![a, f32_operand(rng, e)],
        _ => vec![a],
    }
}

/// The f32 arithmetic of a target without f64 (`FmaF32`, `DivF32`, `SqrtF32` in every
/// rounding; `OddF32`, the `RoundToOdd` `.soft`) and the widening they call, each with
/// the routines it calls, and the exact f32 arithmetic of a target with f64 in f64
/// arithmetic (`OddF32InF64` and `FmaF32InF64`, both forms: the sign of a zero sum
/// repaired or not; `DivF32InF64`, `SqrtF32InF64` in every rounding; `NearestF32`, the
/// fast paths with the exact routines where their test fails), against the
/// interpreter's model of the PTX operation, on `PTXVK_ROUTINE_CASES / 4` operands each
/// (default 5,000). A NaN result is any NaN.
#[test]
fn f32_routines_round_as_the_model() {
    let cases = routine_cases(4);
    let f32_routine = |r: &Routine| {
        matches!(
            r,
            Routine::F32ToF64
                | Routine::FmaF32(_)
                | Routine::DivF32(_)
                | Routine::SqrtF32(_)
                | Routine::OddF32(_)
                | Routine::OddF32InF64 { .. }
                | Routine::FmaF32InF64 { .. }
                | Routine::DivF32InF64(_)
                | Routine::SqrtF32InF64(_)
                | Routine::NearestF32(_)
        )
    };
    let nan = |r: Routine, v: u64| match r.result_bits() {
        32 => v & 0x7fff_ffff > 0x7f80_0000,
        _ => v & !(1 << 63) > 0x7ff0_0000_0000_0000,
    };
    let mut total = 0;
    for r in Routine::all().into_iter().filter(f32_routine) {
        let f = build(r);
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ r.name().len() as u64 ^ total as u64);
        let mut wrong = Vec::new();
        for _ in 0..cases {
            let x = f32_inputs(r, &mut rng);
            let (got, want) = (eval(&f, &x), model(r, &x));
            if got != want && !(nan(r, got) && nan(r, want)) {
                wrong.push(format!("{x:08x?}: {got:x}, want {want:x}"));
            }
        }
        none_wrong(r, cases, &wrong);
        total += cases;
    }
    eprintln!("{total} cases of the f32 routines agree with the model");
}

/// A conversion's source: specials, random bits, or (floats) a value near the target's
/// range, its subnormals and overflow included, (integers) of any magnitude.
fn conversion_input(r: Routine, rng: &mut Rng) -> u64 {
    let (bits, pick) = (r.param_bits(), rng.next() % 4);
    let keep = |v: u64| if bits == 64 { v } else { v & ((1 << bits) - 1) };
    match r {
        Routine::Narrow { to, from_bits, .. } if pick > 0 => {
            let (es, ms, bias) = if from_bits == 32 { (8, 23, 127) } else { (11, 52, 1023) };
            let (et, mt) = to.layout();
            let sign = (rng.next() & 1) << (from_bits - 1);
            if pick == 3 {
                // Zero, infinity, a quiet and a signalling NaN.
                let inf = ((1 << es) - 1) << ms;
                return sign | [0, inf, inf | 1 << (ms - 1), inf | 1][(rng.next() % 4) as usize];
            }
            // A binary exponent from below the target's subnormals to past its largest.
            let (lo, hi) = (-2 - to.bias() - i64::from(mt), (1 << et) - to.bias() + 1);
            let e = lo + (rng.next() % (hi - lo + 1) as u64) as i64;
            let field = (e + bias).clamp(0, (1 << es) - 2) as u64;
            let frac = rng.next() & ((1 << ms) - 1);
            // Ties and exact values: nothing below the first bit that rounds.
            let frac = if pick == 1 { frac & !((1 << (ms - mt - 1)) - 1) } else { frac };
            sign | field << ms | frac
        }
        Routine::IntToFloat { .. } if pick > 0 => keep(rng.next() >> (rng.next() % 64)),
        _ => keep(rng.next()),
    }
}

/// The conversions against the interpreter's model: `Widen` of every bit pattern,
/// `Narrow` and `IntToFloat` of `PTXVK_ROUTINE_CASES / 10` sources each (default 2,000).
#[test]
fn conversions_round_as_the_model() {
    let cases = routine_cases(10);
    let conversions = Routine::all().into_iter().filter(|r| {
        matches!(r, Routine::Narrow { .. } | Routine::IntToFloat { .. } | Routine::Widen(_))
    });
    for r in conversions {
        let f = build(r);
        let mut rng = Rng(0x2545_f491_4f6c_dd1d ^ r.name().len() as u64);
        let inputs: Vec<u64> = match r {
            Routine::Widen(from) if from.bits() < 32 => (0..1u64 << from.bits()).collect(),
            _ => (0..cases).map(|_| conversion_input(r, &mut rng)).collect(),
        };
        let mut wrong = Vec::new();
        // `Widen` keeps a NaN a NaN: f32 and TF32 ones keep their bits (a bitcast).
        let nan = |v: u64| matches!(r, Routine::Widen(_)) && v & 0x7fff_ffff > 0x7f80_0000;
        for &x in &inputs {
            let (got, want) = (eval(&f, &[x]), model(r, &[x]));
            if got != want && !(nan(got) && nan(want)) {
                wrong.push(format!("{x:#x}: {got:#x}, want {want:#x}"));
            }
        }
        none_wrong(r, inputs.len(), &wrong);
    }
}

#[test]
fn routine_names_name_them() {
    for r in Routine::all() {
        assert_eq!(Routine::from_name(&r.name()), Some(r));
        assert_eq!(build(r).routine, Some(r));
    }
    assert_eq!(Routine::from_name("fma_f64"), None);
}

/// A kernel that calls routines prints its structured form with the routines named
/// after the body, and parses back to the same routines.
#[test]
fn structured_text_names_the_routines() {
    let k = buffer_kernel(
        "calls",
        "f64 %fd1 %fd2",
        "%fd1 = load.global.f64 [%rd1]\n    %fd2 = sqrt.rz.f64 %fd1\n    \
         %fd1 = fma.rm.f64 %fd2, %fd1, %fd2\n    store.global.f64 [%rd1], %fd1",
    );
    let lowered = crate::pass::run(k, &crate::pass::Target::default()).expect("lowers");
    let printed = crate::text::print_structured(&lowered.kernel, &lowered.body);
    assert!(printed.contains("routine fn0 ptxvk.sqrt.f64.rz\nroutine fn1 ptxvk.fma.f64.rm\n"));
    let parsed = crate::text::parse_structured(&printed).expect("parses back");
    let (k2, body2) = &parsed[0];
    assert_eq!(crate::text::print_structured(k2, body2), printed);
    let names: Vec<_> = k2.functions.iter().map(|f| f.routine).collect();
    assert_eq!(
        names,
        [Some(Routine::SqrtF64(Rounding::Zero)), Some(Routine::FmaF64(Rounding::Down))]
    );
    assert_eq!(
        k2.functions[1].blocks[0].insts.len(),
        lowered.kernel.functions[1].blocks[0].insts.len()
    );
}

/// A kernel gets the same routines, in the same order, whether this process builds and
/// legalizes them ([`super::build_with`], `pass::emulate::add`) or copies those it kept
/// ([`super::Memo`]): lowered with nothing kept, again (each routine asked for a second
/// time, now kept), and a third time (all copied). Its own `div.rn.f64` comes first, so
/// that the `.approx` routines' legalization finds that routine in the kernel.
#[test]
fn kept_routines_are_the_routines_built() {
    let k = buffer_kernel(
        "kept",
        "f32 %f1 %f2\n    reg f64 %fd1",
        "%fd1 = load.global.f64 [%rd1]\n    %fd1 = div.rn.f64 %fd1, %fd1\n    \
         store.global.f64 [%rd1], %fd1\n    %f1 = load.global.f32 [%rd1]\n    \
         %f2 = lg2.f32 %f1\n    %f1 = sin.f32 %f2\n    %f2 = div.rn.f32 %f1, %f2\n    \
         %f1 = sqrt.rn.f32 %f2\n    store.global.f32 [%rd1], %f1",
    );
    let fused = crate::pass::FusedFma { f32: true, f64: true };
    for target in [
        crate::pass::Target::default(),
        crate::pass::Target { float64: false, ..Default::default() },
        crate::pass::Target { fused_fma: fused, ..Default::default() },
    ] {
        crate::pass::emulate::forget_kept();
        let printed: Vec<String> = (0..3)
            .map(|_| {
                let lowered = crate::pass::run(k.clone(), &target).expect("lowers");
                crate::text::print(&lowered.kernel)
            })
            .collect();
        assert!(printed[0].contains("ptxvk.lg2.approx.f32"), "{}", printed[0]);
        assert!(printed[0].contains("ptxvk.div.f64.rn"));
        assert_eq!(printed[1], printed[0], "{}", target.float_strategy());
        assert_eq!(printed[2], printed[0], "{}", target.float_strategy());
    }
}

/// The `.approx` routine `r` as a target without f64 gets it: [`crate::pass::soft_f64`]
/// on its body (before `pass::emulate` makes its `fma`, `div` and `sqrt` calls).
fn soft(r: Routine) -> crate::ir::Function {
    let mut f = build_with(r, true);
    let mut shell = f.shell();
    crate::pass::soft_f64::run(&mut shell).expect("legalizes");
    assert!(shell.regs.iter().all(|r| r.ty != crate::ir::RegTy::Float(64)));
    (f.regs, f.blocks) = (shell.regs, shell.blocks);
    f
}

/// Rust's f64 math library with the PTX ISA's special values (§9.7.3.15-22):
/// lg2(±0) = -inf, lg2(x < 0) = NaN, rsqrt(±0) = ±inf, rsqrt(x < 0) = NaN, sin and cos
/// of ±inf NaN.
fn libm(op: UnaryOp, x: f32) -> f64 {
    let x = f64::from(x);
    match op {
        UnaryOp::Ex2 => x.exp2(),
        UnaryOp::Lg2 if x == 0.0 => f64::NEG_INFINITY,
        UnaryOp::Lg2 => x.log2(),
        UnaryOp::Rsqrt if x == 0.0 => f64::INFINITY.copysign(x),
        UnaryOp::Rsqrt => 1.0 / x.sqrt(),
        UnaryOp::Sin => x.sin(),
        UnaryOp::Cos => x.cos(),
        _ => x.tanh(),
    }
}

/// Whether `got` is `v` rounded to f32 in one direction or the other (so within one
/// ulp); NaN for NaN.
fn faithful(got: f32, v: f64) -> bool {
    if v.is_nan() {
        return got.is_nan();
    }
    let f = v as f32;
    let other = match f64::from(f).partial_cmp(&v) {
        Some(std::cmp::Ordering::Less) => f.next_up(),
        Some(std::cmp::Ordering::Greater) => f.next_down(),
        _ => f,
    };
    got.to_bits() == f.to_bits() || got.to_bits() == other.to_bits()
}

/// Edge values of f32: zeros, ones, infinities, a NaN, the extremes, the smallest
/// subnormals.
pub(super) const F32_EDGES: [f32; 14] = [
    0.0,
    -0.0,
    1.0,
    -1.0,
    0.5,
    2.0,
    f32::INFINITY,
    f32::NEG_INFINITY,
    f32::NAN,
    f32::MAX,
    f32::MIN_POSITIVE,
    1e-45,
    -1e-45,
    128.0,
];

/// An f32 input for `op`: edge values, random bits, or a value in the range where the
/// function is not saturated (ex2's [-150, 130], tanh's [-10, 10], lg2's and rsqrt's
/// positive numbers of every magnitude, subnormals included; sin's and cos's [-100π,
/// 100π], where the ISA bounds their error).
fn approx_input(op: UnaryOp, rng: &mut Rng) -> f32 {
    let unit = (rng.next() >> 40) as f32 / (1u64 << 24) as f32;
    match rng.next() % 8 {
        0 => F32_EDGES[(rng.next() % F32_EDGES.len() as u64) as usize],
        1 | 2 => f32::from_bits(rng.next() as u32),
        _ => match op {
            UnaryOp::Ex2 => unit * 280.0 - 150.0,
            UnaryOp::Tanh => unit * 20.0 - 10.0,
            UnaryOp::Sin | UnaryOp::Cos => (unit - 0.5) * 200.0 * std::f32::consts::PI,
            _ => f32::from_bits(rng.next() as u32 & 0x7fff_ffff),
        },
    }
}

/// Each `.approx` routine, in f64 and legalized without f64 (`sin` and `cos` with
/// their reduction a loop), on random and edge inputs: the two forms give the same
/// bits, within one ulp of the math library's value (a faithful rounding of it).
#[test]
fn approx_routines_are_faithful_to_the_math_library() {
    let cases: usize =
        std::env::var("PTXVK_APPROX_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(20_000);
    for op in Routine::APPROX {
        let r = Routine::Approx(op);
        let (f, s) = (build(r), soft(r));
        let mut rng = Rng(0x2545_f491_4f6c_dd1d ^ op as u64);
        let (mut wrong, mut nearest) = (Vec::new(), 0usize);
        for _ in 0..cases {
            let x = approx_input(op, &mut rng);
            let got = eval(&f, &[u64::from(x.to_bits())]);
            let soft_got = eval(&s, &[u64::from(x.to_bits())]);
            let (got32, v) = (f32::from_bits(got as u32), libm(op, x));
            nearest += usize::from(got32.to_bits() == (v as f32).to_bits() || v.is_nan());
            if got != soft_got || !faithful(got32, v) {
                wrong.push(format!("{x:e}: {got:08x} (soft {soft_got:08x}), libm {v:e}"));
            }
        }
        eprintln!("{}: {nearest} of {cases} the nearest f32 of libm's", r.name());
        none_wrong(r, cases, &wrong);
    }
}

/// A kernel that calls `.approx` routines parses back from its structured text with
/// each routine's body (the form for a target with f64).
#[test]
fn structured_text_rebuilds_the_approx_routines() {
    let k = buffer_kernel(
        "approx",
        "f32 %f1 %f2",
        "%f1 = load.global.f32 [%rd1]\n    %f2 = lg2.f32 %f1\n    %f1 = rsqrt.f32 %f2\n    \
         store.global.f32 [%rd1], %f1",
    );
    let lowered = crate::pass::run(k, &crate::pass::Target::default()).expect("lowers");
    let printed = crate::text::print_structured(&lowered.kernel, &lowered.body);
    // The `.approx` routines round to f32 with the `Narrow` routine, named before them.
    assert!(printed.contains(
        "routine fn0 ptxvk.cvt.f32.f64.rn\nroutine fn1 ptxvk.lg2.approx.f32\n\
         routine fn2 ptxvk.rsqrt.approx.f32\n"
    ));
    let parsed = crate::text::parse_structured(&printed).expect("parses back");
    let (k2, body2) = &parsed[0];
    assert_eq!(crate::text::print_structured(k2, body2), printed);
    for (a, b) in k2.functions.iter().zip(&lowered.kernel.functions) {
        assert_eq!(a.blocks[0].insts.len(), b.blocks[0].insts.len(), "{}", a.name);
    }
}

/// The form of `sin` and `cos` for a target without f64 reduces its argument in one
/// loop of [`Routine::loop_iterations`] iterations, which `pass::loop_guard` counts at
/// each call; every other routine, and that form of the others, is straight-line but
/// the branches of the Newton routines and `NearestF32` to their exact paths (and the
/// allocation table's search, whose loop reads memory: `allocation_table.rs` tests it).
#[test]
fn only_the_reduction_of_sin_and_cos_loops() {
    let table = |r: &Routine| matches!(r, Routine::InAllocation { .. } | Routine::ShadowWord);
    for r in Routine::all().into_iter().filter(|r| !table(r)) {
        for looped in [false, true] {
            let f = build_with(r, looped);
            let (_, back) = run(&f, &vec![0x3f80_0000; r.arity()]);
            let iterations = if back == 0 { 0 } else { back + 1 };
            let want = if looped { r.loop_iterations() } else { 0 };
            assert_eq!(iterations, want, "{} (loops: {looped})", r.name());
            // The Newton routines branch between their steps and the exact path, and
            // `NearestF32` and `NearestF64` between their fast path and the exact routine.
            let branches = matches!(
                r,
                Routine::Newton { .. } | Routine::NearestF32(_) | Routine::NearestF64(_)
            );
            assert_eq!(f.blocks.len() == 1, want == 0 && !branches, "{}", r.name());
        }
    }
}

/// `pass::loop_guard` counts the reduction loop of `sin` at each call, where the target
/// has no f64 (with f64 the routine has no loop, and the kernel none to count).
#[test]
fn the_loop_guard_counts_the_loop_of_sin_without_f64() {
    let k = buffer_kernel(
        "trig",
        "f32 %f1 %f2",
        "%f1 = load.global.f32 [%rd1]\n    %f2 = sin.f32 %f1\n    store.global.f32 [%rd1], %f2",
    );
    let guard = crate::pass::LoopGuard { limit: 60_000, subgroups: 4 };
    for (float64, want) in [(true, vec![]), (false, vec![11])] {
        let target = crate::pass::Target { float64, loop_guard: Some(guard), ..Default::default() };
        let lowered = crate::pass::run(k.clone(), &target).expect("lowers");
        let counts: Vec<i32> = lowered
            .kernel
            .all_insts()
            .filter_map(|i| match i.kind {
                InstKind::LoopCount { add, .. } => Some(add),
                _ => None,
            })
            .collect();
        assert_eq!(counts, want, "float64: {float64}");
    }
}

/// A kernel of one block in the IR text format whose parameter is a buffer: `%rd1` holds
/// its address, `regs` declares the other registers, `body` runs before the return.
fn buffer_kernel(name: &str, regs: &str, body: &str) -> crate::ir::Kernel {
    let text = format!(
        "kernel {name} {{\n    params size 8 align 8\n    \
         param out .u64 x1 @0 size 8 align 8\n    shared 0\n    local 0\n    \
         entry bb0\n    reg i64 %rd1\n    reg {regs}\nbb0:\n    \
         %rd1 = load.param.u64 [0]\n    {body}\n    return\n}}\n"
    );
    crate::text::parse(&text).expect("parses").remove(0)
}
