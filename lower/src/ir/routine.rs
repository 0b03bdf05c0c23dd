//! Emulation routines: functions a pass adds to a kernel (module doc, *Emulation
//! routines*), named by what they compute.

use super::{Rounding, UnaryOp};

/// An emulation routine, as [`super::Function::routine`] names it: a pure function of
/// its 64-bit integer arguments to one 64-bit integer result, built by
/// `crate::routines` from core integer operations. `FmaF64`, `DivF64` and `SqrtF64`
/// take and return f64 bit patterns and round exactly as PTX's `fma`, `div` and `sqrt`
/// `.f64` with the given rounding (PTX ISA 9.2 §9.7.3.6, §9.7.3.8, §9.7.3.10); `FmaF64Odd`
/// is `fma.f64` rounded to odd (truncated, the last bit set when inexact), the first
/// rounding of the backend's exactly rounded f32 arithmetic without f64.
///
/// `Approx(op)` is one of the `.approx` functions of [`Routine::APPROX`] on f32 bit patterns
/// (32-bit argument and result): computed in f64 arithmetic and rounded once
/// (`crate::routines`' `approx`), the f64 arithmetic legalized for the target like any
/// (`pass::soft_f64` without f64, then `pass::emulate`), so that it may call the other
/// routines. `sin` and `cos` reduce their argument in a loop in their form for a target
/// without f64 ([`Routine::loop_iterations`]); every other routine is straight-line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Routine {
    FmaF64(Rounding),
    FmaF64Odd,
    DivF64(Rounding),
    SqrtF64(Rounding),
    Approx(UnaryOp),
}

/// The roundings of the routines, by their PTX suffix.
const ROUNDINGS: [(Rounding, &str); 4] = [
    (Rounding::Nearest, "rn"),
    (Rounding::Zero, "rz"),
    (Rounding::Down, "rm"),
    (Rounding::Up, "rp"),
];

fn suffix(r: Rounding) -> &'static str {
    ROUNDINGS.iter().find(|(x, _)| *x == r).map_or("rna", |(_, s)| s)
}

/// The iterations of `sin` and `cos`'s argument reduction loop on a target without f64:
/// one per 24-bit piece of 2/π after the first, of the 12 that reach 288 bits
/// (`crate::routines`' `trig` builds the loop and checks its table against this).
pub const SIN_COS_REDUCTION_ITERATIONS: u32 = 11;

impl Routine {
    /// The `.approx` functions that are routines ([`Routine::Approx`]).
    pub const APPROX: [UnaryOp; 6] =
        [UnaryOp::Ex2, UnaryOp::Lg2, UnaryOp::Rsqrt, UnaryOp::Tanh, UnaryOp::Sin, UnaryOp::Cos];

    /// The most iterations of a loop of its body, where its body has loops (those of
    /// `sin` and `cos` for a target without f64, one per piece of 2/π after the first:
    /// `crate::routines`' `trig`); 0 for the others. `pass::loop_guard` counts them at
    /// each call.
    pub fn loop_iterations(self) -> u32 {
        match self {
            Routine::Approx(UnaryOp::Sin | UnaryOp::Cos) => SIN_COS_REDUCTION_ITERATIONS,
            _ => 0,
        }
    }

    /// Every routine, in a fixed order.
    pub fn all() -> Vec<Routine> {
        let mut all = vec![Routine::FmaF64Odd];
        for (r, _) in ROUNDINGS {
            all.extend([Routine::FmaF64(r), Routine::DivF64(r), Routine::SqrtF64(r)]);
        }
        all.extend(Routine::APPROX.map(Routine::Approx));
        all
    }

    /// The function's name, e.g. `ptxvk.div.f64.rn`: not a PTX identifier (those have no
    /// dots, PTX ISA 9.2 §4.4), so no device function of a program has it.
    pub fn name(self) -> String {
        match self {
            Routine::FmaF64(r) => format!("ptxvk.fma.f64.{}", suffix(r)),
            Routine::FmaF64Odd => "ptxvk.fma.f64.ro".to_string(),
            Routine::DivF64(r) => format!("ptxvk.div.f64.{}", suffix(r)),
            Routine::SqrtF64(r) => format!("ptxvk.sqrt.f64.{}", suffix(r)),
            Routine::Approx(op) => format!("ptxvk.{op:?}.approx.f32").to_lowercase(),
        }
    }

    /// The routine named `name`, if it is one's.
    pub fn from_name(name: &str) -> Option<Routine> {
        Routine::all().into_iter().find(|r| r.name() == name)
    }

    /// How many arguments it takes (each an integer of [`Routine::bits`]).
    pub fn arity(self) -> usize {
        match self {
            Routine::FmaF64(_) | Routine::FmaF64Odd => 3,
            Routine::DivF64(_) => 2,
            Routine::SqrtF64(_) | Routine::Approx(_) => 1,
        }
    }

    /// The width of its arguments and of its result: f64 or f32 bit patterns.
    pub fn bits(self) -> u32 {
        match self {
            Routine::Approx(_) => 32,
            _ => 64,
        }
    }
}
