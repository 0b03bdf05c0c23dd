//! Emulation routines: functions a pass adds to a kernel (module doc, *Emulation
//! routines*), named by what they compute.

use super::Rounding;

/// An emulation routine, as [`super::Function::routine`] names it: a pure function of
/// its 64-bit integer arguments to one 64-bit integer result, built by
/// `crate::routines` from core integer operations. `FmaF64`, `DivF64` and `SqrtF64`
/// take and return f64 bit patterns and round exactly as PTX's `fma`, `div` and `sqrt`
/// `.f64` with the given rounding (PTX ISA 9.2 §9.7.3.6, §9.7.3.8, §9.7.3.10); `FmaF64Odd`
/// is `fma.f64` rounded to odd (truncated, the last bit set when inexact), the first
/// rounding of the backend's exactly rounded f32 arithmetic without f64.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Routine {
    FmaF64(Rounding),
    FmaF64Odd,
    DivF64(Rounding),
    SqrtF64(Rounding),
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

impl Routine {
    /// Every routine, in a fixed order.
    pub fn all() -> Vec<Routine> {
        let mut all = vec![Routine::FmaF64Odd];
        for (r, _) in ROUNDINGS {
            all.extend([Routine::FmaF64(r), Routine::DivF64(r), Routine::SqrtF64(r)]);
        }
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
        }
    }

    /// The routine named `name`, if it is one's.
    pub fn from_name(name: &str) -> Option<Routine> {
        Routine::all().into_iter().find(|r| r.name() == name)
    }

    /// How many arguments it takes (each a 64-bit integer).
    pub fn arity(self) -> usize {
        match self {
            Routine::FmaF64(_) | Routine::FmaF64Odd => 3,
            Routine::DivF64(_) => 2,
            Routine::SqrtF64(_) => 1,
        }
    }
}
