//! Emulation routines: functions a pass adds to a kernel (module doc, *Emulation
//! routines*), named by what they compute.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use super::{FloatFormat, OddOp, OpTy, Rounding, UnaryOp};

/// An emulation routine, as [`super::Function::routine`] names it: a pure function of
/// its integer arguments to one integer result (64-bit but where
/// [`Routine::param_bits`] and [`Routine::result_bits`] say otherwise), built by
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
/// without f64 ([`Routine::loop_iterations`]); every other routine but `Newton` is
/// straight-line.
///
/// `Narrow`, `IntToFloat` and `Widen` are the conversions of [`super::InstKind::Narrow`],
/// [`super::InstKind::IntToFloat`] and [`super::InstKind::Widen`] with those operations'
/// semantics, on their source's bit pattern (`from_bits` or `from` wide) to the result's
/// (`to.bits()` wide; an f32 pattern for `Widen`).
///
/// The f32 arithmetic of a target without f64 (`FloatPath::Integer`, `.soft`) calls
/// routines that call these ([`Routine::callees`]): `F32ToF64` is `cvt.f64.f32` on bit
/// patterns (exact; a NaN the f64 NaN of `FmaF64`'s results), `FmaF32`, `DivF32` and
/// `SqrtF32` round an f32 `fma`, `div` and `sqrt` once by the rounding (f32 bit
/// patterns, 32-bit arguments and result), and `OddF32(op)` is
/// [`super::InstKind::RoundToOdd`] `.soft`: `op` on f32 patterns rounded to odd in f64
/// (an f64 pattern).
///
/// `OddF32InF64 { op, repaired }` is [`super::InstKind::RoundToOdd`] on a target with
/// f64 (not `.soft`), the same function as `OddF32(op)`, built of f64 arithmetic
/// (`crate::routines`' `exact_f32`): products of f32 are exact in f64, and a sum is
/// rounded to odd with its exact TwoSum error. Its arithmetic is emitted as a
/// program's, its operands hidden from a driver that folds known operands
/// (`FloatConstants::Hidden`); with `repaired` (`FloatConstants::Repaired`, a driver
/// that was not probed) the sign of a zero sum is set from its operands' bits, since
/// such a driver may fold the `+ 0.0` of a constant addend once it has inlined the
/// call. `pass::emulate` picks the form for its target.
///
/// `DivF32InF64(rounding)`, `SqrtF32InF64(rounding)` and `FmaF32InF64 { repaired }` are
/// the exact f32 `div`, `sqrt` and `fma.rn` of a target with f64 ([`super::FloatPath::F64`])
/// on f32 bit patterns (32-bit arguments and result), built of f64 arithmetic
/// (`crate::routines`' `exact_f32`): `div` and `sqrt` correct the device's `.native`
/// f64 quotient or root rounded to f32 with exact residuals at the midpoints around it,
/// their arithmetic `.visible` ([`super::FloatMode::visible`]); `fma` is
/// `OddF32InF64 { op: Fma, repaired }` rounded to f32. `pass::emulate` makes the
/// directed `div`, `rcp` and `sqrt` calls of them; to nearest `NearestF32` calls them
/// where its fast path's test fails, and so does an exact run's second pass
/// (`pass::exact_runs`).
///
/// `FastF32(op)` and `NearestF32(op)` are the exact f32 `fma.rn`, `div.rn` and
/// `sqrt.rn` of a target with f64 ([`F32Op`], f32 bit patterns as arguments) by their
/// fast paths (`crate::routines`' `fast_f32`): `FastF32` is the cheap result and the
/// cheap test that proves it correctly rounded, packed into 64 bits (the result's bits
/// in the low word, 1 in the high word where the test fails, the low word then
/// meaningless); `NearestF32` the operation itself, that result where the test holds,
/// else a call of the exact routine above ([`F32Op::exact`]). `pass::emulate` makes
/// each f32 `div.rn`, `rcp.rn`, `sqrt.rn` and `fma.rn` of the f64 path a call of
/// `NearestF32`, and `pass::exact_runs` those of a run calls of `FastF32` (and of the
/// exact routines in its second pass).
///
/// `FastF64(op)` and `NearestF64(op)` are the exact f64 `fma.rn` and `div.rn` of a
/// target with f64 whose `Fma` is not fused ([`F64Op`], f64 bit patterns as arguments
/// and result) by their fast paths (`crate::routines`' `fast_f64`): `FastF64` is the
/// result of error-free transformations in the device's f64 arithmetic (`fma`) or the
/// device's quotient proved by an exact residual (`div`) where a guard on the
/// operands' exponents admits them, else the NaN [`F64Op::FAILED`] (the guard admits
/// only finite operands with normal results, so a NaN is never a fast result);
/// `NearestF64` the operation itself, that result where it is not that NaN, else a
/// call of the integer routine
/// ([`F64Op::exact`]: [`Routine::FmaF64`], [`Routine::DivF64`] to nearest) behind a
/// branch. `pass::emulate` makes the f64 `fma.rn`, `div.rn` and `rcp.rn` of a target
/// with f64 calls of `NearestF64`; `pass::retry_regions` makes a run of them a loop
/// that calls `FastF64` for each site and the integer routine once per pass.
///
/// `Newton { op, bits, soft }` is `div.rn` (`a / b`) or `sqrt.rn` on f32 (`bits` 32) or
/// f64 bit patterns, for a device whose `Fma` a probe found fused
/// ([`super::FloatPath::Fused`]): Newton steps on that `Fma` (`.native` `fma`, `div` and
/// `rsqrt`, the device's own) with an exact final rounding where the operands allow,
/// and the operation on the exact path elsewhere ([`super::FloatPath::F64`], or with
/// `soft` [`super::FloatPath::Integer`]), legalized like the `.approx` routines'
/// arithmetic (`crate::routines`' `newton`). Its body branches between the two.
///
/// `InAllocation { write }` and `ShadowWord` read the allocation table of a checked
/// launch (`crate::system`'s layout) at their first argument, a 64-bit device address,
/// with global loads besides their integer operations, the only routines that read
/// memory (`pass::check` calls them, for the same table during one launch;
/// `crate::routines`' `allocation_table`): `InAllocation` is 1 when the second
/// argument's `size` bytes (the third argument) lie inside one allocation of the table,
/// and for a `write` (or atomic) one that is not read-only, else 0 (32-bit result);
/// `ShadowWord` is initcheck's write shadow word covering the address (the device
/// address of the u32 word in the shadow of the allocation that holds it), or 0 when
/// that allocation has no shadow or there is none. Both search the table in a loop of
/// at most [`TABLE_SEARCH_ITERATIONS`] steps ([`Routine::loop_iterations`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Routine {
    FmaF64(Rounding),
    FmaF64Odd,
    DivF64(Rounding),
    SqrtF64(Rounding),
    Approx(UnaryOp),
    Narrow { to: FloatFormat, from_bits: u8, rounding: Rounding, satfinite: bool, relu: bool },
    IntToFloat { to: FloatFormat, from: OpTy, rounding: Rounding },
    Widen(FloatFormat),
    F32ToF64,
    FmaF32(Rounding),
    DivF32(Rounding),
    SqrtF32(Rounding),
    OddF32(OddOp),
    OddF32InF64 { op: OddOp, repaired: bool },
    DivF32InF64(Rounding),
    SqrtF32InF64(Rounding),
    FmaF32InF64 { repaired: bool },
    FastF32(F32Op),
    NearestF32(F32Op),
    FastF64(F64Op),
    NearestF64(F64Op),
    Newton { op: NewtonOp, bits: u8, soft: bool },
    InAllocation { write: bool },
    ShadowWord,
}

/// The operation of [`Routine::Newton`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum NewtonOp {
    /// `a / b` (`rcp` is `1 / b`).
    Div,
    /// `sqrt(a)`.
    Sqrt,
}

/// The operation of [`Routine::FastF32`] and [`Routine::NearestF32`], to nearest: `fma`
/// in its form for the target (`repaired` as [`Routine::OddF32InF64`]'s, for the
/// sign of a zero sum), `div` (`rcp` is `1 / b`) or `sqrt`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum F32Op {
    Fma { repaired: bool },
    Div,
    Sqrt,
}

impl F32Op {
    /// Every one, in a fixed order.
    pub const ALL: [F32Op; 4] =
        [F32Op::Fma { repaired: false }, F32Op::Fma { repaired: true }, F32Op::Div, F32Op::Sqrt];

    /// The exact routine of the operation ([`Routine::FmaF32InF64`],
    /// [`Routine::DivF32InF64`], [`Routine::SqrtF32InF64`], to nearest).
    pub fn exact(self) -> Routine {
        match self {
            F32Op::Fma { repaired } => Routine::FmaF32InF64 { repaired },
            F32Op::Div => Routine::DivF32InF64(Rounding::Nearest),
            F32Op::Sqrt => Routine::SqrtF32InF64(Rounding::Nearest),
        }
    }

    /// How many operands it takes.
    pub fn arity(self) -> usize {
        match self {
            F32Op::Fma { .. } => 3,
            F32Op::Div => 2,
            F32Op::Sqrt => 1,
        }
    }

    /// Its PTX name and, for `fma`'s repaired form, `.repaired` after the rounding.
    fn names(self) -> (&'static str, &'static str) {
        match self {
            F32Op::Fma { repaired } => ("fma", if repaired { ".repaired" } else { "" }),
            F32Op::Div => ("div", ""),
            F32Op::Sqrt => ("sqrt", ""),
        }
    }
}

/// The operation of [`Routine::FastF64`] and [`Routine::NearestF64`], to nearest: `fma`
/// or `div` (`rcp` is `1 / b`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum F64Op {
    Fma,
    Div,
}

impl F64Op {
    /// Every one, in a fixed order.
    pub const ALL: [F64Op; 2] = [F64Op::Fma, F64Op::Div];

    /// What [`Routine::FastF64`] returns where its guard fails: a NaN (the IR's f64
    /// NaN, PTX's canonical one), which no fast result is. Its callers compare the
    /// result with this pattern (one comparison, where a test for any NaN takes two
    /// and made `f64_fma_div` about 3% slower on lavapipe).
    pub const FAILED: u64 = 0x7fff_ffff_ffff_ffff;

    /// The exact routine of the operation ([`Routine::FmaF64`], [`Routine::DivF64`], to
    /// nearest).
    pub fn exact(self) -> Routine {
        match self {
            F64Op::Fma => Routine::FmaF64(Rounding::Nearest),
            F64Op::Div => Routine::DivF64(Rounding::Nearest),
        }
    }

    /// How many operands it takes.
    pub fn arity(self) -> usize {
        match self {
            F64Op::Fma => 3,
            F64Op::Div => 2,
        }
    }

    /// Its PTX name.
    fn name(self) -> &'static str {
        match self {
            F64Op::Fma => "fma",
            F64Op::Div => "div",
        }
    }
}

/// The operations of [`Routine::OddF32`].
const ODD_OPS: [OddOp; 4] = [OddOp::Add, OddOp::Sub, OddOp::Mul, OddOp::Fma];

/// The roundings of the routines, by their PTX suffix.
const ROUNDINGS: [(Rounding, &str); 4] = [
    (Rounding::Nearest, "rn"),
    (Rounding::Zero, "rz"),
    (Rounding::Down, "rm"),
    (Rounding::Up, "rp"),
];

/// Every rounding of a conversion.
const CVT_ROUNDINGS: [Rounding; 5] =
    [Rounding::Nearest, Rounding::Zero, Rounding::Down, Rounding::Up, Rounding::NearestAway];

/// Every format but f64, which only integers convert to.
const FORMATS: [FloatFormat; 9] = [
    FloatFormat::F32,
    FloatFormat::F16,
    FloatFormat::Bf16,
    FloatFormat::Tf32,
    FloatFormat::E4m3,
    FloatFormat::E5m2,
    FloatFormat::E2m3,
    FloatFormat::E3m2,
    FloatFormat::E2m1,
];

fn suffix(r: Rounding) -> &'static str {
    ROUNDINGS.iter().find(|(x, _)| *x == r).map_or("rna", |(_, s)| s)
}

/// A format's or type's PTX name (`f16`, `e4m3`, `s32`).
fn lower(x: impl std::fmt::Debug) -> String {
    format!("{x:?}").to_lowercase().replace(['(', ')'], "")
}

/// The iterations of `sin` and `cos`'s argument reduction loop on a target without f64:
/// one per 24-bit piece of 2/π after the first, of the 12 that reach 288 bits
/// (`crate::routines`' `trig` builds the loop and checks its table against this).
pub const SIN_COS_REDUCTION_ITERATIONS: u32 = 11;

/// The most steps of the binary search of the allocation table
/// ([`Routine::InAllocation`], [`Routine::ShadowWord`]): one per bit of its 32-bit
/// entry count.
pub const TABLE_SEARCH_ITERATIONS: u32 = 32;

impl Routine {
    /// The `.approx` functions that are routines ([`Routine::Approx`]).
    pub const APPROX: [UnaryOp; 6] =
        [UnaryOp::Ex2, UnaryOp::Lg2, UnaryOp::Rsqrt, UnaryOp::Tanh, UnaryOp::Sin, UnaryOp::Cos];

    /// The most iterations of a loop of its body, where its body has loops (those of
    /// `sin` and `cos` for a target without f64, one per piece of 2/π after the first:
    /// `crate::routines`' `trig`; the allocation table's search); 0 for the others.
    /// `pass::loop_guard` counts them at each call.
    pub fn loop_iterations(self) -> u32 {
        match self {
            Routine::Approx(UnaryOp::Sin | UnaryOp::Cos) => SIN_COS_REDUCTION_ITERATIONS,
            Routine::InAllocation { .. } | Routine::ShadowWord => TABLE_SEARCH_ITERATIONS,
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
        let flags = [(false, false), (true, false), (false, true), (true, true)];
        for rounding in CVT_ROUNDINGS {
            for to in FORMATS {
                for from_bits in [32, 64].into_iter().filter(|&b| to != FloatFormat::F32 || b == 64)
                {
                    all.extend(flags.map(|(satfinite, relu)| Routine::Narrow {
                        to,
                        from_bits,
                        rounding,
                        satfinite,
                        relu,
                    }));
                }
            }
            for to in FORMATS.into_iter().chain([FloatFormat::F64]) {
                for bits in [8, 16, 32, 64] {
                    for from in [OpTy::U(bits), OpTy::S(bits)] {
                        all.push(Routine::IntToFloat { to, from, rounding });
                    }
                }
            }
        }
        all.extend(FORMATS.map(Routine::Widen));
        all.push(Routine::F32ToF64);
        for (r, _) in ROUNDINGS {
            all.extend([Routine::FmaF32(r), Routine::DivF32(r), Routine::SqrtF32(r)]);
        }
        all.extend(ODD_OPS.map(Routine::OddF32));
        for repaired in [false, true] {
            all.extend(ODD_OPS.map(|op| Routine::OddF32InF64 { op, repaired }));
        }
        for (r, _) in ROUNDINGS {
            all.extend([Routine::DivF32InF64(r), Routine::SqrtF32InF64(r)]);
        }
        all.extend([false, true].map(|repaired| Routine::FmaF32InF64 { repaired }));
        all.extend(F32Op::ALL.map(Routine::FastF32));
        all.extend(F32Op::ALL.map(Routine::NearestF32));
        all.extend(F64Op::ALL.map(Routine::FastF64));
        all.extend(F64Op::ALL.map(Routine::NearestF64));
        for op in [NewtonOp::Div, NewtonOp::Sqrt] {
            all.push(Routine::Newton { op, bits: 64, soft: false });
            for soft in [false, true] {
                all.push(Routine::Newton { op, bits: 32, soft });
            }
        }
        all.extend([false, true].map(|write| Routine::InAllocation { write }));
        all.push(Routine::ShadowWord);
        all
    }

    /// The routines its body calls, in a fixed order: in the function
    /// `crate::routines::build` makes of it alone, callee `i` is `FunctionId(i)` (a
    /// kernel's renumber them, `crate::routines::get`). The f32 arithmetic without f64
    /// widens its operands exactly and rounds once with the f64 routines: `fma` to
    /// nearest rounds to odd first, so that the rounding to f32 is the only one (the
    /// module doc of `crate::routines`' `soft_f32`); so does `FmaF32InF64`, with f64
    /// (`OddF32InF64`). The `.approx` routines' calls are not fixed (`pass::emulate`
    /// legalizes their bodies); the others call none.
    pub fn callees(self) -> Vec<Routine> {
        let narrow = |rounding| Routine::Narrow {
            to: FloatFormat::F32,
            from_bits: 64,
            rounding,
            satfinite: false,
            relu: false,
        };
        let widen = Routine::F32ToF64;
        match self {
            Routine::FmaF32(Rounding::Nearest) => {
                vec![widen, Routine::FmaF64Odd, narrow(Rounding::Nearest)]
            }
            Routine::FmaF32(r) => vec![widen, Routine::FmaF64(r), narrow(r)],
            Routine::DivF32(r) => vec![widen, Routine::DivF64(r), narrow(r)],
            Routine::SqrtF32(r) => vec![widen, Routine::SqrtF64(r), narrow(r)],
            Routine::OddF32(_) => vec![widen, Routine::FmaF64Odd],
            Routine::FmaF32InF64 { repaired } => {
                vec![Routine::OddF32InF64 { op: OddOp::Fma, repaired }]
            }
            Routine::NearestF32(op) => vec![Routine::FastF32(op), op.exact()],
            Routine::NearestF64(op) => vec![Routine::FastF64(op), op.exact()],
            _ => Vec::new(),
        }
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
            Routine::Narrow { to, from_bits, rounding, satfinite, relu } => format!(
                "ptxvk.cvt.{}.f{from_bits}.{}{}{}",
                lower(to),
                suffix(rounding),
                if satfinite { ".satfinite" } else { "" },
                if relu { ".relu" } else { "" }
            ),
            Routine::IntToFloat { to, from, rounding } => {
                format!("ptxvk.cvt.{}.{}.{}", lower(to), lower(from), suffix(rounding))
            }
            Routine::Widen(from) => format!("ptxvk.cvt.f32.{}", lower(from)),
            Routine::F32ToF64 => "ptxvk.cvt.f64.f32".to_string(),
            // `.int`: not the names of the backend's f32 helpers, which use f64.
            Routine::FmaF32(r) => format!("ptxvk.fma.f32.{}.int", suffix(r)),
            Routine::DivF32(r) => format!("ptxvk.div.f32.{}.int", suffix(r)),
            Routine::SqrtF32(r) => format!("ptxvk.sqrt.f32.{}.int", suffix(r)),
            Routine::OddF32(op) => format!("ptxvk.{}.ro.f64.f32", lower(op)),
            Routine::OddF32InF64 { op, repaired } => format!(
                "ptxvk.{}.ro.f64.f32.fp64{}",
                lower(op),
                if repaired { ".repaired" } else { "" }
            ),
            Routine::DivF32InF64(r) => format!("ptxvk.div.f32.{}.exact", suffix(r)),
            Routine::SqrtF32InF64(r) => format!("ptxvk.sqrt.f32.{}.exact", suffix(r)),
            Routine::FmaF32InF64 { repaired } => {
                format!("ptxvk.fma.f32.rn.exact{}", if repaired { ".repaired" } else { "" })
            }
            Routine::FastF32(op) => {
                let (name, form) = op.names();
                format!("ptxvk.{name}.f32.rn.fast{form}")
            }
            Routine::NearestF32(op) => {
                let (name, form) = op.names();
                format!("ptxvk.{name}.f32.rn{form}")
            }
            Routine::FastF64(op) => format!("ptxvk.{}.f64.rn.fast", op.name()),
            // `.fp64`: in the device's f64 arithmetic, beside the integer routine.
            Routine::NearestF64(op) => format!("ptxvk.{}.f64.rn.fp64", op.name()),
            Routine::Newton { op, bits, soft } => {
                format!("ptxvk.{}.f{bits}.rn.fused{}", lower(op), if soft { ".int" } else { "" })
            }
            Routine::InAllocation { write } => {
                format!("ptxvk.check.in_allocation{}", if write { ".write" } else { "" })
            }
            Routine::ShadowWord => "ptxvk.check.shadow_word".to_string(),
        }
    }

    /// Whether its body is legalized for the target when `pass::emulate` adds it, and
    /// may call other routines: the `.approx` ones and `Newton`'s (whose arithmetic is
    /// a program's); the others are core integer operations.
    pub fn legalized(self) -> bool {
        matches!(self, Routine::Approx(_) | Routine::Newton { .. })
    }

    /// The routine named `name`, if it is one's.
    pub fn from_name(name: &str) -> Option<Routine> {
        static NAMES: OnceLock<BTreeMap<String, Routine>> = OnceLock::new();
        if !name.starts_with("ptxvk.") {
            return None;
        }
        let names =
            NAMES.get_or_init(|| Routine::all().into_iter().map(|r| (r.name(), r)).collect());
        names.get(name).copied()
    }

    /// How many arguments it takes (each an integer of [`Routine::param_bits`]).
    pub fn arity(self) -> usize {
        match self {
            Routine::FmaF64(_) | Routine::FmaF64Odd | Routine::FmaF32(_) => 3,
            Routine::InAllocation { .. } => 3,
            Routine::ShadowWord => 2,
            Routine::OddF32(OddOp::Fma) | Routine::OddF32InF64 { op: OddOp::Fma, .. } => 3,
            Routine::FmaF32InF64 { .. } => 3,
            Routine::DivF32InF64(_) => 2,
            Routine::SqrtF32InF64(_) => 1,
            Routine::FastF32(op) | Routine::NearestF32(op) => op.arity(),
            Routine::FastF64(op) | Routine::NearestF64(op) => op.arity(),
            Routine::DivF64(_) | Routine::DivF32(_) | Routine::OddF32(_) => 2,
            Routine::OddF32InF64 { .. } => 2,
            Routine::Newton { op, .. } => 1 + usize::from(op == NewtonOp::Div),
            Routine::SqrtF64(_) | Routine::SqrtF32(_) | Routine::Approx(_) => 1,
            Routine::Narrow { .. } | Routine::IntToFloat { .. } | Routine::Widen(_) => 1,
            Routine::F32ToF64 => 1,
        }
    }

    /// The width of its arguments: f64 or f32 bit patterns, a conversion's source, or
    /// 64-bit addresses and sizes (the allocation table's).
    pub fn param_bits(self) -> u32 {
        match self {
            Routine::Approx(_) | Routine::F32ToF64 => 32,
            Routine::FmaF32(_) | Routine::DivF32(_) | Routine::SqrtF32(_) => 32,
            Routine::OddF32(_) | Routine::OddF32InF64 { .. } => 32,
            Routine::DivF32InF64(_) | Routine::SqrtF32InF64(_) | Routine::FmaF32InF64 { .. } => 32,
            Routine::FastF32(_) | Routine::NearestF32(_) => 32,
            Routine::Narrow { from_bits, .. } => u32::from(from_bits),
            Routine::IntToFloat { from, .. } => from.bits(),
            Routine::Widen(from) => from.bits(),
            Routine::Newton { bits, .. } => u32::from(bits),
            _ => 64,
        }
    }

    /// The width of its result: f64 or f32 bit patterns, a conversion's result, or
    /// `InAllocation`'s 0 or 1 (32-bit; a caller compares it with 0).
    pub fn result_bits(self) -> u32 {
        match self {
            Routine::InAllocation { .. } => 32,
            Routine::Approx(_) | Routine::Widen(_) => 32,
            Routine::FmaF32(_) | Routine::DivF32(_) | Routine::SqrtF32(_) => 32,
            Routine::DivF32InF64(_) | Routine::SqrtF32InF64(_) | Routine::FmaF32InF64 { .. } => 32,
            Routine::NearestF32(_) => 32,
            Routine::Narrow { to, .. } | Routine::IntToFloat { to, .. } => to.bits(),
            Routine::Newton { bits, .. } => u32::from(bits),
            _ => 64,
        }
    }
}
