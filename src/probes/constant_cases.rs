//! The constants probe's cases: operations of operands the driver knows, as data (the
//! kernel and the host's model are `constants.rs`'s; `findings.rs` counts the cases).

use ptxvk_lower::pass::FloatOps;

/// An operand of a constants case.
#[derive(Clone, Copy, Debug)]
pub(super) enum Src {
    /// Input `i`, loaded from memory: the driver cannot know it.
    In(usize),
    /// A literal in the instruction (`0f00000000`).
    Lit(f64),
    /// An integer literal moved into a float register (`mov.b32 %f, 0`).
    Mov(f64),
    /// `cvt.rn.f32.u32` of an integer literal.
    Cvt(u32),
    /// `cvt.rn.f32.u32` of `x - x` for an integer `x` from memory, which the driver
    /// folds to 0 first.
    SubSelf,
}

/// The inputs of the constants cases: inf, NaN, -3, -0, +0, 1.5.
pub(super) const INPUTS: [f64; 6] = [f64::INFINITY, f64::NAN, -3.0, -0.0, 0.0, 1.5];
pub(super) const INF: usize = 0;
pub(super) const NAN: usize = 1;
pub(super) const M3: usize = 2;
pub(super) const NZ: usize = 3;
pub(super) const PZ: usize = 4;
pub(super) const X: usize = 5;

/// An operation of a constants case.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Op {
    Add,
    Sub,
    Mul,
    Div,
    Fma,
    /// `div.approx.f32` (`a * (1/b)`), exact for these operands.
    DivApprox,
}

impl Op {
    pub(super) fn ptx(self) -> &'static str {
        match self {
            Op::Add => "add.rn",
            Op::Sub => "sub.rn",
            Op::Mul => "mul.rn",
            Op::Div => "div.rn",
            Op::Fma => "fma.rn",
            Op::DivApprox => "div.approx",
        }
    }

    /// The SPIR-V operations whose folding a wrong result of this operation points
    /// at: first the one that takes the known operand (for `fma`, the sum of the exact
    /// product and the addend), then every one ptxvk computes it with.
    pub(super) fn ops(self) -> [FloatOps; 2] {
        let none = FloatOps::default();
        let add = FloatOps { add: true, ..none };
        match self {
            Op::Add => [add; 2],
            Op::Sub => [FloatOps { sub: true, ..none }; 2],
            Op::Mul => [FloatOps { mul: true, ..none }; 2],
            Op::Div | Op::DivApprox => [FloatOps { div: true, mul: true, ..none }; 2],
            // The exact fma: an exact product, then a sum rounded to odd (TwoSum).
            Op::Fma => [add, FloatOps { add: true, sub: true, mul: true, div: false }],
        }
    }
}

/// The constants cases, for f32 and f64 (`div.approx` for f32 only).
pub(super) const CONSTANT_CASES: [(Op, Src, Src, Option<Src>); 32] = {
    use Src::*;
    [
        (Op::Mul, In(INF), Lit(0.0), None),
        (Op::Mul, In(NAN), Lit(0.0), None),
        (Op::Mul, In(M3), Lit(0.0), None),
        (Op::Mul, Lit(0.0), In(M3), None),
        (Op::Mul, In(INF), Mov(0.0), None),
        (Op::Mul, In(M3), Cvt(0), None),
        (Op::Mul, In(INF), SubSelf, None),
        (Op::Mul, In(NZ), Lit(1.0), None),
        (Op::Mul, Lit(1.0), In(NAN), None),
        (Op::Add, In(NZ), Lit(0.0), None),
        (Op::Add, Lit(0.0), In(NZ), None),
        (Op::Add, In(NZ), Mov(0.0), None),
        (Op::Add, In(NZ), Cvt(0), None),
        (Op::Add, Lit(-0.0), Lit(0.0), None),
        (Op::Sub, In(INF), In(INF), None),
        (Op::Sub, In(X), In(X), None),
        (Op::Sub, Lit(0.0), In(PZ), None),
        (Op::Sub, Mov(0.0), In(PZ), None),
        (Op::Sub, In(NZ), Lit(0.0), None),
        (Op::Div, In(M3), Lit(0.0), None),
        (Op::Div, Lit(0.0), In(M3), None),
        (Op::Div, Lit(0.0), In(PZ), None),
        (Op::Div, In(X), Lit(1.0), None),
        (Op::Div, In(INF), Cvt(0), None),
        (Op::Fma, In(M3), Lit(0.0), Some(Lit(0.0))),
        (Op::Fma, In(M3), Lit(0.0), Some(Lit(-0.0))),
        (Op::Fma, In(INF), Lit(0.0), Some(Lit(1.0))),
        (Op::Fma, In(M3), Mov(0.0), Some(Mov(0.0))),
        (Op::Fma, Lit(1.0), In(NZ), Some(Lit(0.0))),
        (Op::Fma, In(M3), Cvt(0), Some(Cvt(0))),
        (Op::DivApprox, In(M3), Lit(0.0), None),
        (Op::DivApprox, Lit(0.0), In(M3), None),
    ]
};

/// The constants cases of one width.
pub(super) fn constant_cases_of(
    width: u32,
) -> impl Iterator<Item = &'static (Op, Src, Src, Option<Src>)> {
    CONSTANT_CASES.iter().filter(move |c| width == 32 || c.0 != Op::DivApprox)
}

/// How many constants cases the device runs.
pub(super) fn constant_cases(has_f64: bool) -> usize {
    constant_cases_of(32).count() + if has_f64 { constant_cases_of(64).count() } else { 0 }
}
