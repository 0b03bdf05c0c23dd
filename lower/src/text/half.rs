//! Half arithmetic ([`InstKind::Half`]) and the narrow-format conversions
//! ([`InstKind::HalfConvert`], [`print_convert`]) in the IR text format. Arithmetic is
//! `h` and the operation,
//! then the format with its lane count, the rounding (of rounded operations) and the
//! flags, every field written:
//!
//! ```text
//! %r1 = hfma.f16x2.rn.ftz.sat.relu %r2, %r3, %r4
//! %h1 = hmax.bf16.nan %h2, %h3
//! ```

use ptxvk_frontend::Diagnostic;

use super::video::{take_flag, Line};
use super::Spelled;
use crate::ir::*;

const OPS: &[(HalfArith, &str)] = &[
    (HalfArith::Add, "hadd"),
    (HalfArith::Sub, "hsub"),
    (HalfArith::Mul, "hmul"),
    (HalfArith::Fma, "hfma"),
    (HalfArith::Neg, "hneg"),
    (HalfArith::Abs, "habs"),
    (HalfArith::Min, "hmin"),
    (HalfArith::Max, "hmax"),
    (HalfArith::Ex2, "hex2"),
    (HalfArith::Tanh, "htanh"),
];

/// A half operation's line.
pub(super) fn print(
    op: &HalfOp,
    reg: impl Fn(RegId) -> String,
    value: impl Fn(Value) -> String,
) -> String {
    let name = OPS.iter().find(|e| e.0 == op.op).map_or("h?", |e| e.1);
    let mut s = format!("{} = {name}.{}", reg(op.dst), op.format.spelling());
    if op.lanes == 2 {
        s.push_str("x2");
    }
    if op.op.rounds() || op.rounding != Rounding::Nearest {
        s.push('.');
        s.push_str(op.rounding.spelling());
    }
    for (on, flag) in [(op.ftz, ".ftz"), (op.sat, ".sat"), (op.relu, ".relu"), (op.nan, ".nan")] {
        if on {
            s.push_str(flag);
        }
    }
    let srcs: Vec<String> = op.srcs.iter().map(|&v| value(v)).collect();
    format!("{s} {}", srcs.join(", "))
}

/// The half operation of a line whose opcode is one, else `None`; takes the modifiers
/// it knows from `words`.
pub(super) fn parse<R, V, E>(
    line: &Line<'_, R, V, E>,
    words: &mut Vec<&str>,
) -> Result<Option<HalfOp>, Diagnostic>
where
    R: Fn(&str) -> Result<RegId, Diagnostic>,
    V: Fn(&str) -> Result<Value, Diagnostic>,
    E: Fn(String) -> Diagnostic,
{
    let opcode = line.opcode;
    let Some(op) = OPS.iter().find(|e| e.1 == opcode).map(|e| e.0) else { return Ok(None) };
    let first = if words.is_empty() { "" } else { words.remove(0) };
    let (format, lanes) = match first.strip_suffix("x2") {
        Some(f) => (FloatFormat::from_spelling(f), 2),
        None => (FloatFormat::from_spelling(first), 1),
    };
    let format =
        format.filter(|f| matches!(f, FloatFormat::F16 | FloatFormat::Bf16)).ok_or_else(|| {
            (line.error)(format!("`{opcode}` needs `.f16`, `.bf16` or their x2 forms"))
        })?;
    let mut flag = |w: &str| take_flag(words, w);
    let (ftz, sat, relu, nan) = (flag("ftz"), flag("sat"), flag("relu"), flag("nan"));
    let rounding = match words.iter().position(|w| Rounding::from_spelling(w).is_some()) {
        Some(i) => Rounding::from_spelling(words.remove(i)).unwrap_or_default(),
        None => Rounding::Nearest,
    };
    let ([dst], true) = (line.dsts, line.ops.len() == op.arity()) else {
        return Err((line.error)(format!(
            "`{opcode}` takes one destination and {} operand(s)",
            op.arity()
        )));
    };
    let srcs = line.ops.iter().map(|s| (line.value)(s)).collect::<Result<Vec<_>, _>>()?;
    let dst = (line.reg)(dst)?;
    Ok(Some(HalfOp { op, format, lanes, dst, srcs, rounding, ftz, sat, relu, nan }))
}

/// A narrow-format conversion's line: `to_ue8m0x2` with the source type (`.f32`, two
/// sources, or `.bf16x2`), `.rz` or `.rp` and `.satfinite`; `from_ue8m0x2`.
///
/// ```text
/// %h1 = to_ue8m0x2.f32.rp.satfinite %f1, %f2
/// %r1 = from_ue8m0x2 %h1
/// ```
pub(super) fn print_convert(
    c: &HalfConvert,
    reg: impl Fn(RegId) -> String,
    value: impl Fn(Value) -> String,
) -> String {
    let name = match c.op {
        HalfConvertOp::ToUe8m0 { bf16x2, up, satfinite } => format!(
            "to_ue8m0x2.{}.{}{}",
            if bf16x2 { "bf16x2" } else { "f32" },
            if up { "rp" } else { "rz" },
            if satfinite { ".satfinite" } else { "" }
        ),
        HalfConvertOp::FromUe8m0 => "from_ue8m0x2".to_string(),
        HalfConvertOp::Narrow(n) => narrow_name(n),
    };
    let srcs: Vec<String> = c.srcs.iter().map(|&v| value(v)).collect();
    format!("{} = {name} {}", reg(c.dst), srcs.join(", "))
}

/// The narrow-format conversion of a line whose opcode is one, else `None`; takes the
/// modifiers it knows from `words`.
pub(super) fn parse_convert<R, V, E>(
    line: &Line<'_, R, V, E>,
    words: &mut Vec<&str>,
) -> Result<Option<HalfConvert>, Diagnostic>
where
    R: Fn(&str) -> Result<RegId, Diagnostic>,
    V: Fn(&str) -> Result<Value, Diagnostic>,
    E: Fn(String) -> Diagnostic,
{
    let opcode = line.opcode;
    let op = match opcode {
        "ncvt" => HalfConvertOp::Narrow(parse_narrow(line, words)?),
        "from_ue8m0x2" => HalfConvertOp::FromUe8m0,
        "to_ue8m0x2" => {
            let bf16x2 = if take_flag(words, "bf16x2") {
                true
            } else if take_flag(words, "f32") {
                false
            } else {
                return Err((line.error)(format!("`{opcode}` needs `.f32` or `.bf16x2`")));
            };
            let up = if take_flag(words, "rp") {
                true
            } else if take_flag(words, "rz") {
                false
            } else {
                return Err((line.error)(format!("`{opcode}` needs `.rz` or `.rp`")));
            };
            HalfConvertOp::ToUe8m0 { bf16x2, up, satfinite: take_flag(words, "satfinite") }
        }
        _ => return Ok(None),
    };
    let arity = op.src_bits().len();
    let ([dst], true) = (line.dsts, line.ops.len() == arity) else {
        return Err((line.error)(format!(
            "`{opcode}` takes one destination and {arity} operand(s)"
        )));
    };
    let srcs = line.ops.iter().map(|s| (line.value)(s)).collect::<Result<Vec<_>, _>>()?;
    Ok(Some(HalfConvert { op, dst: (line.reg)(dst)?, srcs }))
}

/// A side of a narrow `cvt`: an operation type, or a format with `x2` for a pair.
fn side_name(s: CvtSide) -> String {
    match s {
        CvtSide::Op(t) => super::op_ty(t),
        CvtSide::Narrow(f, 2) => format!("{}x2", f.spelling()),
        CvtSide::Narrow(f, _) => f.spelling().to_string(),
    }
}

/// A narrow `cvt`'s opcode: `ncvt`, the destination's side, the source's, the rounding
/// (`i` after an integral one), then the flags.
///
/// ```text
/// %h1 = ncvt.e4m3x2.f32.rn.relu.satfinite %f1, %f2
/// %r1 = ncvt.s32.f16.rzi.ftz %h1
/// ```
fn narrow_name(n: NarrowCvt) -> String {
    let mut s = format!("ncvt.{}.{}", side_name(n.to), side_name(n.from));
    if let Some(r) = n.rounding {
        s.push('.');
        s.push_str(r.spelling());
        if n.integral {
            s.push('i');
        }
    }
    for (on, flag) in [(n.ftz, ".ftz"), (n.relu, ".relu"), (n.satfinite, ".satfinite")] {
        if on {
            s.push_str(flag);
        }
    }
    s
}

fn parse_side(w: &str) -> Option<CvtSide> {
    // `f16` is the narrow format here; `f32` and `f64` are operation types.
    let op = super::parse_op_ty(w).filter(|t| !matches!(t, OpTy::Pred | OpTy::F(16)));
    if let Some(t) = op {
        return Some(CvtSide::Op(t));
    }
    let (f, lanes) = match w.strip_suffix("x2") {
        Some(f) => (f, 2),
        None => (w, 1),
    };
    FloatFormat::from_spelling(f).map(|f| CvtSide::Narrow(f, lanes))
}

/// The fields of an `ncvt` line's opcode; takes them from `words`.
fn parse_narrow<R, V, E>(
    line: &Line<'_, R, V, E>,
    words: &mut Vec<&str>,
) -> Result<NarrowCvt, Diagnostic>
where
    R: Fn(&str) -> Result<RegId, Diagnostic>,
    V: Fn(&str) -> Result<Value, Diagnostic>,
    E: Fn(String) -> Diagnostic,
{
    let mut side = || {
        let w = if words.is_empty() { "" } else { words.remove(0) };
        parse_side(w).ok_or_else(|| (line.error)(format!("`ncvt` has no type `{w}`")))
    };
    let (to, from) = (side()?, side()?);
    let mut flag = |w: &str| take_flag(words, w);
    let (ftz, relu, satfinite) = (flag("ftz"), flag("relu"), flag("satfinite"));
    let (mut rounding, mut integral) = (None, false);
    if let Some(i) = words.iter().position(|w| {
        Rounding::from_spelling(w.strip_suffix('i').unwrap_or(w)).is_some()
            || Rounding::from_spelling(w).is_some()
    }) {
        let w = words.remove(i);
        rounding = Rounding::from_spelling(w);
        if rounding.is_none() {
            rounding = Rounding::from_spelling(w.strip_suffix('i').unwrap_or(w));
            integral = true;
        }
    }
    Ok(NarrowCvt { to, from, rounding, integral, relu, satfinite, ftz })
}

#[cfg(test)]
mod tests {
    use super::super::{parse as parse_text, print as print_text};

    /// Every form of the pass file test prints back as it was written.
    #[test]
    fn every_form_round_trips() {
        let text = include_str!("../../tests/passes/expand_formats_results.ir");
        let kernels = parse_text(text).unwrap_or_else(|d| panic!("{}", d.message));
        let printed = print_text(&kernels[0]);
        let forms: Vec<&str> = text.lines().filter(|l| l.contains(" = h")).collect();
        assert_eq!(forms.len(), 20);
        for line in forms {
            assert!(printed.lines().any(|p| p == line), "{line} prints as something else");
        }
        for (from, to, says) in [
            ("hadd.f16x2.rn %r1, %r2", "hadd.f32.rn %r1, %r2", "`.f16`, `.bf16`"),
            ("hadd.f16x2.rn %r1, %r2", "hadd.f16x2.rn %r1", "one destination and 2"),
            ("hneg.f16x2.ftz %r1", "hneg.f16x2.ftz.wat %r1", ".wat"),
        ] {
            let bad = text.replacen(from, to, 1);
            let d = parse_text(&bad).err().unwrap_or_else(|| panic!("accepted {to}"));
            assert!(d.message.contains(says), "{to}: {}", d.message);
        }
    }

    /// The conversion forms print back as they were written.
    #[test]
    fn every_conversion_round_trips() {
        let text = include_str!("../../tests/passes/expand_formats_convert_results.ir");
        let kernels = parse_text(text).unwrap_or_else(|d| panic!("{}", d.message));
        let printed = print_text(&kernels[0]);
        let forms: Vec<&str> = text.lines().filter(|l| l.contains("_ue8m0x2")).collect();
        assert_eq!(forms.len(), 9);
        for line in forms {
            assert!(printed.lines().any(|p| p == line), "{line} prints as something else");
        }
        let bad = text.replacen("to_ue8m0x2.f32.rz ", "to_ue8m0x2.f32 ", 1);
        let d = parse_text(&bad).err().unwrap_or_else(|| panic!("accepted no rounding"));
        assert!(d.message.contains("`.rz` or `.rp`"), "{}", d.message);
    }

    /// The narrow `cvt` forms print back as they were written; an unknown type is refused.
    #[test]
    fn every_narrow_conversion_round_trips() {
        let text = include_str!("../../tests/passes/expand_formats_narrow_results.ir");
        let kernels = parse_text(text).unwrap_or_else(|d| panic!("{}", d.message));
        let printed = print_text(&kernels[0]);
        let forms: Vec<&str> = text.lines().filter(|l| l.contains("= ncvt.")).collect();
        assert!(forms.len() > 100, "{} forms", forms.len());
        for line in forms {
            assert!(printed.lines().any(|p| p == line), "{line} prints as something else");
        }
        let bad = text.replacen("ncvt.f16.f32.rn ", "ncvt.f15.f32.rn ", 1);
        let d = parse_text(&bad).err().unwrap_or_else(|| panic!("accepted `.f15`"));
        assert!(d.message.contains("no type `f15`"), "{}", d.message);
        // A form that does not exist parses, and the verifier refuses it.
        let bad = text.replacen("ncvt.f16.f32.rn ", "ncvt.f32.f32.rn ", 1);
        let kernels = parse_text(&bad).unwrap_or_else(|d| panic!("{}", d.message));
        let errors = crate::verify::run(&kernels[0]).err().unwrap_or_default();
        assert!(errors.iter().any(|d| d.message.contains("does not exist")), "{errors:?}");
    }
}
