//! The integer and bit-level operations ([`InstKind::Integer`]) in the IR text format:
//! PTX's name where it is free (the core IR has its own `add`, `min`, `mad`…), the
//! operation's fields as modifiers, every field written:
//!
//! ```text
//! %r1 = addsat %r2, %r3                  ; subsat, minrelu, maxrelu: .s32
//! %r1 = max2.s16.relu %r2, %r3           ; add2 min2 max2: .u16/.s16 lanes
//! %r1, %cc = subcarry.u32 %r2, %r3, %cc  ; addcarry subcarry madcarry.{lo,hi}: a
//!                                        ; second destination is the carry out, an
//!                                        ; operand past the sources the carry in
//! %r1 = madhisat %r2, %r3, %r4           ; mad24hisat
//! %r1 = mad24.hi.s32 %r2, %r3, %r4       ; mul24.{lo,hi} has two sources
//! %r1 = sad.u16 %r2, %r3, %r4
//! %r1 = bfind.shiftamt.s64 %rd2
//! %r1 = fns %r2, %r3, %r4
//! %r1 = bmsk.clamp %r2, %r3              ; szext.{clamp,wrap}.{u32,s32}
//! %r1 = prmt.f4e %r2, %r3, %r4           ; no mode: selector nibbles
//! %r1 = shf.l.wrap %r2, %r3, %r4
//! %r1, %p1 = lop3.0x96.and %r2, %r3, %r4, !%p2   ; `_` for no destination
//! %r1 = dp2a.hi.s32.u32 %r2, %r3, %r4    ; dp4a.atype.btype
//! %f1 = fmax.ftz.nan.abs.xorsign %f2, %f3
//! %f1 = copysign.f64 %fd2, %fd3
//! %p1 = testp.subnormal.f32 %f2
//! %r1 = set.lt.or.f16x2.onef16.ftz %r2, %r3, !%p2   ; ones32 ones16 onef32 onef16 onebf16
//! %r1 = slct.u32.f32.ftz %r2, %r3, %f4   ; dtype, the type of c
//! %r1 = cvtpack.s4 %r2, %r3, %r4
//! %f1 = divapprox.ftz %f2, %f3           ; div.approx.f32
//! %f1 = truncmad.sat %f2, %f3, %f4       ; PTX ISA 1.x mad.sat.f32
//! ```

use ptxvk_frontend::Diagnostic;

use super::video::{take_flag, Line};
use super::{op_ty, parse_op_ty, Spelled};
use crate::ir::*;

const MODES: &[(PrmtMode, &str)] = &[
    (PrmtMode::F4e, "f4e"),
    (PrmtMode::B4e, "b4e"),
    (PrmtMode::Rc8, "rc8"),
    (PrmtMode::Ecl, "ecl"),
    (PrmtMode::Ecr, "ecr"),
    (PrmtMode::Rc16, "rc16"),
];

const TESTS: &[(FloatTest, &str)] = &[
    (FloatTest::Finite, "finite"),
    (FloatTest::Infinite, "infinite"),
    (FloatTest::Number, "number"),
    (FloatTest::NotANumber, "notanumber"),
    (FloatTest::Normal, "normal"),
    (FloatTest::Subnormal, "subnormal"),
];

const TRUTHS: &[(SetTruth, &str)] = &[
    (SetTruth::Ones32, "ones32"),
    (SetTruth::Ones16, "ones16"),
    (SetTruth::F32, "onef32"),
    (SetTruth::F16, "onef16"),
    (SetTruth::Bf16, "onebf16"),
];

fn spell<T: PartialEq + Copy>(table: &[(T, &'static str)], v: T) -> &'static str {
    table.iter().find(|e| e.0 == v).map_or("?", |e| e.1)
}

fn int_ty(signed: bool, bits: u32) -> String {
    format!("{}{bits}", if signed { "s" } else { "u" })
}

fn pick<'a>(on: bool, yes: &'a str, no: &'a str) -> &'a str {
    if on {
        yes
    } else {
        no
    }
}

/// The mnemonic and modifiers of an operation.
fn spelling(op: &IntegerOp) -> (&'static str, Vec<String>) {
    let s = |w: &str| w.to_string();
    match *op {
        IntegerOp::AddSat { sub } => (pick(sub, "subsat", "addsat"), vec![]),
        IntegerOp::Relu { max } => (pick(max, "maxrelu", "minrelu"), vec![]),
        IntegerOp::Packed { op, signed, relu } => {
            let name = match op {
                PackedOp::Add => "add2",
                PackedOp::Min => "min2",
                PackedOp::Max => "max2",
            };
            let mut w = vec![int_ty(signed, 16)];
            if relu {
                w.push(s("relu"));
            }
            (name, w)
        }
        IntegerOp::Carry { op, ty, .. } => match op {
            CarryOp::Add => ("addcarry", vec![op_ty(ty)]),
            CarryOp::Sub => ("subcarry", vec![op_ty(ty)]),
            CarryOp::MadLo => ("madcarry", vec![s("lo"), op_ty(ty)]),
            CarryOp::MadHi => ("madcarry", vec![s("hi"), op_ty(ty)]),
        },
        IntegerOp::MadHiSat { mul24 } => (pick(mul24, "mad24hisat", "madhisat"), vec![]),
        IntegerOp::Mul24 { signed, hi, mad } => {
            (pick(mad, "mad24", "mul24"), vec![s(pick(hi, "hi", "lo")), int_ty(signed, 32)])
        }
        IntegerOp::Sad { ty } => ("sad", vec![op_ty(ty)]),
        IntegerOp::Bfind { ty, shiftamt } => {
            let mut w = Vec::new();
            if shiftamt {
                w.push(s("shiftamt"));
            }
            w.push(op_ty(ty));
            ("bfind", w)
        }
        IntegerOp::Fns => ("fns", vec![]),
        IntegerOp::Bmsk { clamp } => ("bmsk", vec![s(pick(clamp, "clamp", "wrap"))]),
        IntegerOp::Szext { clamp, signed } => {
            ("szext", vec![s(pick(clamp, "clamp", "wrap")), int_ty(signed, 32)])
        }
        IntegerOp::Prmt { mode } => {
            ("prmt", mode.map(|m| s(spell(MODES, m))).into_iter().collect())
        }
        IntegerOp::Shf { left, clamp } => {
            ("shf", vec![s(pick(left, "l", "r")), s(pick(clamp, "clamp", "wrap"))])
        }
        IntegerOp::Lop3 { lut, combine } => {
            let mut w = vec![format!("0x{lut:02x}")];
            w.extend(combine.map(|c| s(c.with.op.spelling())));
            ("lop3", w)
        }
        IntegerOp::Dot { pairs, hi, a_signed, b_signed } => {
            let mut w = Vec::new();
            if pairs == 2 {
                w.push(s(pick(hi, "hi", "lo")));
            }
            w.push(int_ty(a_signed, 32));
            w.push(int_ty(b_signed, 32));
            (pick(pairs == 4, "dp4a", "dp2a"), w)
        }
        IntegerOp::FloatMinMax { max, ftz, nan, abs, xorsign } => {
            let flags = [(ftz, "ftz"), (nan, "nan"), (abs, "abs"), (xorsign, "xorsign")];
            let w = flags.iter().filter(|f| f.0).map(|f| s(f.1)).collect();
            (pick(max, "fmax", "fmin"), w)
        }
        IntegerOp::Copysign { ty } => ("copysign", vec![op_ty(ty)]),
        IntegerOp::Testp { test, ty } => ("testp", vec![s(spell(TESTS, test)), op_ty(ty)]),
        IntegerOp::Set { cmp, source, ftz, truth, combine } => {
            let mut w = vec![s(cmp.spelling())];
            w.extend(combine.map(|c| s(c.op.spelling())));
            w.push(match source {
                SetSource::Scalar(t) => op_ty(t),
                SetSource::Half { format, lanes } => {
                    format!("{}{}", format.spelling(), if lanes == 2 { "x2" } else { "" })
                }
            });
            w.push(s(spell(TRUTHS, truth)));
            if ftz {
                w.push(s("ftz"));
            }
            ("set", w)
        }
        IntegerOp::HalfSetp { cmp, format, lanes, ftz, combine, .. } => {
            let mut w = vec![s(cmp.spelling())];
            w.extend(combine.map(|c| s(c.op.spelling())));
            w.push(format!("{}{}", format.spelling(), if lanes == 2 { "x2" } else { "" }));
            if ftz {
                w.push(s("ftz"));
            }
            ("hsetp", w)
        }
        IntegerOp::Slct { ty, float, ftz } => {
            let mut w = vec![op_ty(ty), s(pick(float, "f32", "s32"))];
            if ftz {
                w.push(s("ftz"));
            }
            ("slct", w)
        }
        IntegerOp::CvtPack { bits, signed } => ("cvtpack", vec![int_ty(signed, u32::from(bits))]),
        IntegerOp::ApproxDiv { ftz } => ("divapprox", ftz.then(|| s("ftz")).into_iter().collect()),
        IntegerOp::TruncatedMad { sat } => {
            ("truncmad", sat.then(|| s("sat")).into_iter().collect())
        }
    }
}

/// An integer operation's line.
pub(super) fn print(
    i: &IntegerInst,
    reg: impl Fn(RegId) -> String,
    value: impl Fn(Value) -> String,
) -> String {
    let (name, words) = spelling(&i.op);
    let opt = |r: Option<RegId>| r.map_or("_".to_string(), &reg);
    let pred = |p: PredSource| format!("{}{}", pick(p.negate, "!", ""), reg(p.pred));
    let mut dsts = vec![opt(i.dst)];
    let mut srcs: Vec<String> = i.srcs.iter().map(|&v| value(v)).collect();
    match i.op {
        IntegerOp::Carry { carry_in, carry_out, .. } => {
            dsts.extend(carry_out.map(&reg));
            srcs.extend(carry_in.map(&reg));
        }
        IntegerOp::Lop3 { combine: Some(c), .. } => {
            dsts.push(opt(c.dst));
            srcs.push(pred(c.with));
        }
        IntegerOp::Set { combine: Some(c), .. } => srcs.push(pred(c)),
        IntegerOp::HalfSetp { combine, q, .. } => {
            dsts.push(opt(q));
            srcs.extend(combine.map(pred));
        }
        _ => {}
    }
    let modifiers: String = words.iter().map(|w| format!(".{w}")).collect();
    format!("{} = {name}{modifiers} {}", dsts.join(", "), srcs.join(", "))
}

/// A half format and its lanes: `f16`, `bf16`, `f16x2` or `bf16x2`.
fn half_lanes(w: &str) -> Option<(FloatFormat, u8)> {
    let (f, lanes) = w.strip_suffix("x2").map_or((w, 1), |f| (f, 2));
    FloatFormat::from_spelling(f)
        .filter(|f| matches!(f, FloatFormat::F16 | FloatFormat::Bf16))
        .map(|format| (format, lanes))
}

/// Removes and returns the first word `f` accepts.
fn take<T>(words: &mut Vec<&str>, f: impl Fn(&str) -> Option<T>) -> Option<T> {
    let at = words.iter().position(|w| f(w).is_some())?;
    f(words.remove(at))
}

/// `u`/`s` and a width among `widths`.
fn int_word(w: &str, widths: &[u32]) -> Option<(bool, u32)> {
    let signed = match w.as_bytes().first() {
        Some(b's') => true,
        Some(b'u') => false,
        _ => return None,
    };
    let bits: u32 = w[1..].parse().ok()?;
    widths.contains(&bits).then_some((signed, bits))
}

/// The integer operation of a line whose opcode is one, else `None`; takes the
/// modifiers it knows from `words`.
pub(super) fn parse<R, V, E>(
    line: &Line<'_, R, V, E>,
    words: &mut Vec<&str>,
) -> Result<Option<IntegerInst>, Diagnostic>
where
    R: Fn(&str) -> Result<RegId, Diagnostic>,
    V: Fn(&str) -> Result<Value, Diagnostic>,
    E: Fn(String) -> Diagnostic,
{
    let opcode = line.opcode;
    let need = |what: &str| (line.error)(format!("`{opcode}` needs {what}"));
    let ty = |words: &mut Vec<&str>| take(words, parse_op_ty).ok_or_else(|| need("a type"));
    let either = |words: &mut Vec<&str>, yes: &str, no: &str| {
        if take_flag(words, yes) {
            Ok(true)
        } else if take_flag(words, no) {
            Ok(false)
        } else {
            Err(need(&format!("`.{yes}` or `.{no}`")))
        }
    };
    let int32 = |words: &mut Vec<&str>| {
        take(words, |w| int_word(w, &[32])).map(|t| t.0).ok_or_else(|| need("`.u32` or `.s32`"))
    };
    // Filled in below where the operation has them.
    let (mut carry_in, mut carry_out, mut combine_op) = (false, false, None);
    let op = match opcode {
        "addsat" | "subsat" => IntegerOp::AddSat { sub: opcode == "subsat" },
        "minrelu" | "maxrelu" => IntegerOp::Relu { max: opcode == "maxrelu" },
        "add2" | "min2" | "max2" => {
            let signed = take(words, |w| int_word(w, &[16])).ok_or_else(|| need("`.u16`"))?.0;
            let op = match opcode {
                "add2" => PackedOp::Add,
                "min2" => PackedOp::Min,
                _ => PackedOp::Max,
            };
            IntegerOp::Packed { op, signed, relu: take_flag(words, "relu") }
        }
        "addcarry" | "subcarry" | "madcarry" => {
            let op = match opcode {
                "addcarry" => CarryOp::Add,
                "subcarry" => CarryOp::Sub,
                _ if either(words, "hi", "lo")? => CarryOp::MadHi,
                _ => CarryOp::MadLo,
            };
            let arity = if matches!(op, CarryOp::Add | CarryOp::Sub) { 2 } else { 3 };
            carry_in = line.ops.len() > arity;
            carry_out = line.dsts.len() > 1;
            IntegerOp::Carry { op, ty: ty(words)?, carry_in: None, carry_out: None }
        }
        "madhisat" | "mad24hisat" => IntegerOp::MadHiSat { mul24: opcode == "mad24hisat" },
        "mul24" | "mad24" => {
            let hi = either(words, "hi", "lo")?;
            IntegerOp::Mul24 { signed: int32(words)?, hi, mad: opcode == "mad24" }
        }
        "sad" => IntegerOp::Sad { ty: ty(words)? },
        "bfind" => IntegerOp::Bfind { shiftamt: take_flag(words, "shiftamt"), ty: ty(words)? },
        "fns" => IntegerOp::Fns,
        "bmsk" => IntegerOp::Bmsk { clamp: either(words, "clamp", "wrap")? },
        "szext" => {
            let clamp = either(words, "clamp", "wrap")?;
            IntegerOp::Szext { clamp, signed: int32(words)? }
        }
        "prmt" => {
            IntegerOp::Prmt { mode: take(words, |w| MODES.iter().find(|e| e.1 == w).map(|e| e.0)) }
        }
        "shf" => {
            let left = either(words, "l", "r")?;
            IntegerOp::Shf { left, clamp: either(words, "clamp", "wrap")? }
        }
        "lop3" => {
            let lut = take(words, |w| u8::from_str_radix(w.strip_prefix("0x")?, 16).ok())
                .ok_or_else(|| need("a table such as `.0x96`"))?;
            combine_op = take(words, BoolOp::from_spelling);
            IntegerOp::Lop3 { lut, combine: None }
        }
        "dp4a" | "dp2a" => {
            let pairs = if opcode == "dp4a" { 4 } else { 2 };
            let hi = pairs == 2 && either(words, "hi", "lo")?;
            let a_signed = int32(words)?;
            IntegerOp::Dot { pairs, hi, a_signed, b_signed: int32(words)? }
        }
        "fmin" | "fmax" => {
            let mut flag = |w: &str| take_flag(words, w);
            let (ftz, nan, abs, xorsign) = (flag("ftz"), flag("nan"), flag("abs"), flag("xorsign"));
            IntegerOp::FloatMinMax { max: opcode == "fmax", ftz, nan, abs, xorsign }
        }
        "copysign" => IntegerOp::Copysign { ty: ty(words)? },
        "testp" => {
            let test = take(words, |w| TESTS.iter().find(|e| e.1 == w).map(|e| e.0))
                .ok_or_else(|| need("a test such as `.finite`"))?;
            IntegerOp::Testp { test, ty: ty(words)? }
        }
        "set" => {
            let cmp = take(words, CmpOp::from_spelling).ok_or_else(|| need("a comparison"))?;
            combine_op = take(words, BoolOp::from_spelling);
            let half =
                |w: &str| half_lanes(w).map(|(format, lanes)| SetSource::Half { format, lanes });
            let source = take(words, half)
                .or_else(|| take(words, parse_op_ty).map(SetSource::Scalar))
                .ok_or_else(|| need("a source type"))?;
            let truth = take(words, |w| TRUTHS.iter().find(|e| e.1 == w).map(|e| e.0))
                .ok_or_else(|| need("`.ones32`, `.ones16`, `.onef32`, `.onef16` or `.onebf16`"))?;
            IntegerOp::Set { cmp, source, ftz: take_flag(words, "ftz"), truth, combine: None }
        }
        "hsetp" => {
            let cmp = take(words, CmpOp::from_spelling).ok_or_else(|| need("a comparison"))?;
            combine_op = take(words, BoolOp::from_spelling);
            let (format, lanes) = take(words, half_lanes).ok_or_else(|| need("a half format"))?;
            let ftz = take_flag(words, "ftz");
            IntegerOp::HalfSetp { cmp, format, lanes, ftz, combine: None, q: None }
        }
        "slct" => {
            let ty = ty(words)?;
            let float = either(words, "f32", "s32")?;
            IntegerOp::Slct { ty, float, ftz: take_flag(words, "ftz") }
        }
        "cvtpack" => {
            let (signed, bits) = take(words, |w| int_word(w, &[2, 4, 8, 16]))
                .ok_or_else(|| need("a narrow integer type"))?;
            IntegerOp::CvtPack { bits: bits as u8, signed }
        }
        "divapprox" => IntegerOp::ApproxDiv { ftz: take_flag(words, "ftz") },
        "truncmad" => IntegerOp::TruncatedMad { sat: take_flag(words, "sat") },
        _ => return Ok(None),
    };
    operands(line, op, [carry_in, carry_out], combine_op).map(Some)
}

/// The destinations and operands of `op`, with the extra ones its fields name.
fn operands<R, V, E>(
    line: &Line<'_, R, V, E>,
    mut op: IntegerOp,
    [carry_in, carry_out]: [bool; 2],
    combine_op: Option<BoolOp>,
) -> Result<IntegerInst, Diagnostic>
where
    R: Fn(&str) -> Result<RegId, Diagnostic>,
    V: Fn(&str) -> Result<Value, Diagnostic>,
    E: Fn(String) -> Diagnostic,
{
    let arity = op.src_tys(line.ops.len() == 3).len();
    let extra_src = usize::from(carry_in || combine_op.is_some());
    let two_dsts = carry_out
        || (combine_op.is_some() && matches!(op, IntegerOp::Lop3 { .. }))
        || matches!(op, IntegerOp::HalfSetp { .. });
    let dsts = 1 + usize::from(two_dsts);
    if line.dsts.len() != dsts || line.ops.len() != arity + extra_src {
        return Err((line.error)(format!(
            "`{}` takes {dsts} destination(s) and {} operand(s) here",
            line.opcode,
            arity + extra_src
        )));
    }
    let opt = |s: &str| if s == "_" { Ok(None) } else { (line.reg)(s).map(Some) };
    let pred = |s: &str| match s.strip_prefix('!') {
        Some(r) => Ok(((line.reg)(r)?, true)),
        None => Ok(((line.reg)(s)?, false)),
    };
    let srcs = line.ops[..arity].iter().map(|s| (line.value)(s)).collect::<Result<Vec<_>, _>>()?;
    match &mut op {
        IntegerOp::Carry { carry_in: cin, carry_out: cout, .. } => {
            if carry_in {
                *cin = Some((line.reg)(line.ops[arity])?);
            }
            if carry_out {
                *cout = Some((line.reg)(line.dsts[1])?);
            }
        }
        IntegerOp::Lop3 { combine, .. } => {
            if let Some(bop) = combine_op {
                let (p, negate) = pred(line.ops[arity])?;
                let with = PredSource { op: bop, pred: p, negate };
                *combine = Some(Lop3Combine { dst: opt(line.dsts[1])?, with });
            }
        }
        IntegerOp::Set { combine, .. } => {
            if let Some(bop) = combine_op {
                let (p, negate) = pred(line.ops[arity])?;
                *combine = Some(PredSource { op: bop, pred: p, negate });
            }
        }
        IntegerOp::HalfSetp { combine, q, .. } => {
            if let Some(bop) = combine_op {
                let (p, negate) = pred(line.ops[arity])?;
                *combine = Some(PredSource { op: bop, pred: p, negate });
            }
            *q = opt(line.dsts[1])?;
        }
        _ => {}
    }
    Ok(IntegerInst { op, dst: opt(line.dsts[0])?, srcs })
}

#[cfg(test)]
mod tests {
    use super::super::{parse as parse_text, print as print_text};

    /// Every form of the pass file tests prints back as it was written, and malformed
    /// lines are refused with what is wrong.
    #[test]
    fn every_form_round_trips() {
        let files = [
            include_str!("../../tests/passes/expand_integer_results.ir"),
            include_str!("../../tests/passes/expand_integer_float_results.ir"),
            include_str!("../../tests/passes/expand_integer_approx_div_results.ir"),
            include_str!("../../tests/passes/expand_integer_truncated_mad_results.ir"),
        ];
        let mnemonics = [
            "addsat",
            "subsat",
            "minrelu",
            "maxrelu",
            "add2",
            "min2",
            "max2",
            "addcarry",
            "subcarry",
            "madcarry",
            "madhisat",
            "mad24hisat",
            "mul24",
            "mad24",
            "sad",
            "bfind",
            "fns",
            "bmsk",
            "szext",
            "prmt",
            "shf",
            "lop3",
            "dp4a",
            "dp2a",
            "fmin",
            "fmax",
            "copysign",
            "testp",
            "set",
            "slct",
            "cvtpack",
            "divapprox",
            "truncmad",
        ];
        let mut seen = 0;
        for text in files {
            let kernels = parse_text(text).unwrap_or_else(|d| panic!("{}", d.message));
            let printed = print_text(&kernels[0]);
            for line in text.lines() {
                let Some((_, rest)) = line.split_once(" = ") else { continue };
                let name = rest.split(['.', ' ']).next().unwrap_or("");
                if mnemonics.contains(&name) {
                    assert!(printed.lines().any(|p| p == line), "{line} prints as something else");
                    seen += 1;
                }
            }
        }
        assert!(seen > 120, "only {seen} forms");
        let text = files[0];
        for (from, to, says) in [
            ("bmsk.clamp %a, %b", "bmsk %a, %b", "`.clamp` or `.wrap`"),
            ("fns %a, %b, %c", "fns %a, %b", "1 destination(s) and 3"),
            ("prmt.f4e %a", "prmt.f4e.wat %a", ".wat"),
            ("lop3.0x96 %a", "lop3 %a", "a table"),
        ] {
            let bad = text.replacen(from, to, 1);
            let d = parse_text(&bad).err().unwrap_or_else(|| panic!("accepted {to}"));
            assert!(d.message.contains(says), "{to}: {}", d.message);
        }
    }
}
