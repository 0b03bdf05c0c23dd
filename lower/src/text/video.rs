//! The video instructions ([`InstKind::Video`]) in the IR text format, spelled as in
//! PTX (PTX ISA 9.2 §9.7.16), with every field written:
//!
//! ```text
//! %r1 = vadd.s32.u32.s32.sat.add %r2.b0, %r3.h1, %r4    ; types d, a, b; secondary op
//! %r1.h1 = vsub.u32.u32.u32 %r2, %r3, %r4               ; merged into c at .h1
//! %r1 = vset.u32.s32.lt %r2, %r3                        ; types a, b; the comparison
//! %r1 = vshl.s32.s32.u32.clamp %r2, %r3.b0              ; .clamp or .wrap
//! %r1 = vmad.u32.s32.po.sat.shr15 %r2.h0, -%r3, %r4     ; types a, b (no d: the sign
//!                                                       ; of the result is derived)
//! %r1.b3210 = vadd4.s32.u32.u32.sat %r2.b3210, %r3.b7654, %r4   ; mask and lanes
//! ```
//!
//! A `-` before `a` (`vmad`) negates the product, before `c` negates `c`. SIMD
//! instructions always write their destination mask and both lane selectors, digits
//! naming the high lane first, as PTX does.

use ptxvk_frontend::Diagnostic;

use super::{op_ty, parse_op_ty, Spelled};
use crate::ir::*;

const ARITH: &[(VideoArith, &str)] = &[
    (VideoArith::Add, "add"),
    (VideoArith::Sub, "sub"),
    (VideoArith::Absdiff, "absdiff"),
    (VideoArith::Min, "min"),
    (VideoArith::Max, "max"),
];

const SECONDARY: &[(VideoSecondary, &str)] =
    &[(VideoSecondary::Add, "add"), (VideoSecondary::Min, "min"), (VideoSecondary::Max, "max")];

fn ty(signed: bool) -> String {
    op_ty(if signed { OpTy::S(32) } else { OpTy::U(32) })
}

fn part(p: VideoPart) -> String {
    match p {
        VideoPart::Word => String::new(),
        VideoPart::Byte(k) => format!(".b{k}"),
        VideoPart::Half(k) => format!(".h{k}"),
    }
}

/// The mnemonic of a primary operation, with `suffix` (`2`, `4` or nothing), and the
/// comparison of `vset` as a modifier.
fn arith_name(op: VideoArith, suffix: &str) -> (String, String) {
    match op {
        VideoArith::Set(cmp) => (format!("vset{suffix}"), format!(".{}", cmp.spelling())),
        other => {
            let name = ARITH.iter().find(|e| e.0 == other).map_or("?", |e| e.1);
            (format!("v{name}{suffix}"), String::new())
        }
    }
}

/// Lane digits, the high lane first (`.h10`, `.b3210`).
fn digits(letter: char, lanes: &[u8]) -> String {
    let d: String = lanes.iter().rev().map(|l| char::from(b'0' + l)).collect();
    format!(".{letter}{d}")
}

/// A video instruction's line.
pub(super) fn print(
    op: &VideoOp,
    reg: impl Fn(RegId) -> String,
    value: impl Fn(Value) -> String,
) -> String {
    let src = |s: &VideoSource| format!("{}{}", value(s.value), part(s.part));
    match op {
        VideoOp::Scalar(s) => {
            let (name, cmp) = match s.op {
                ScalarVideoOp::Arith(a) => arith_name(a, ""),
                ScalarVideoOp::Shl { clamp } | ScalarVideoOp::Shr { clamp } => {
                    let name =
                        if matches!(s.op, ScalarVideoOp::Shl { .. }) { "vshl" } else { "vshr" };
                    (name.to_string(), if clamp { ".clamp" } else { ".wrap" }.to_string())
                }
            };
            let dty = match s.op {
                ScalarVideoOp::Arith(VideoArith::Set(_)) => String::new(),
                _ => format!(".{}", ty(s.dst_signed)),
            };
            let (dsel, second, c) = match s.finish {
                VideoFinish::Plain => (String::new(), String::new(), String::new()),
                VideoFinish::Secondary(op, c) => {
                    let name = SECONDARY.iter().find(|e| e.0 == op).map_or("?", |e| e.1);
                    (String::new(), format!(".{name}"), format!(", {}", value(c)))
                }
                VideoFinish::Merge(p, c) => (part(p), String::new(), format!(", {}", value(c))),
            };
            format!(
                "{}{dsel} = {name}{dty}.{}.{}{cmp}{}{second} {}, {}{c}",
                reg(s.dst),
                ty(s.a.signed),
                ty(s.b.signed),
                if s.sat { ".sat" } else { "" },
                src(&s.a),
                src(&s.b)
            )
        }
        VideoOp::Mad(m) => {
            let neg = |on: bool| if on { "-" } else { "" };
            let shift = match m.shift {
                0 => String::new(),
                n => format!(".shr{n}"),
            };
            format!(
                "{} = vmad.{}.{}{}{}{shift} {}{}, {}, {}{}",
                reg(m.dst),
                ty(m.a.signed),
                ty(m.b.signed),
                if m.adjust == MadAdjust::PlusOne { ".po" } else { "" },
                if m.sat { ".sat" } else { "" },
                neg(m.adjust == MadAdjust::NegateProduct),
                src(&m.a),
                src(&m.b),
                neg(m.adjust == MadAdjust::NegateC),
                value(m.c)
            )
        }
        VideoOp::Simd(s) => {
            let suffix = s.lanes.to_string();
            let (name, cmp) = match s.op {
                SimdVideoOp::Arith(a) => arith_name(a, &suffix),
                SimdVideoOp::Avrg => (format!("vavrg{suffix}"), String::new()),
            };
            let [d, a, b] = s.signed;
            let dty = if cmp.is_empty() { format!(".{}", ty(d)) } else { String::new() };
            let letter = if s.lanes == 2 { 'h' } else { 'b' };
            let mask: Vec<u8> = (0..s.lanes).filter(|k| s.mask & (1 << k) != 0).collect();
            format!(
                "{}{} = {name}{dty}.{}.{}{cmp}{}{} {}{}, {}{}, {}",
                reg(s.dst),
                digits(letter, &mask),
                ty(a),
                ty(b),
                if s.sat { ".sat" } else { "" },
                if s.accumulate { ".add" } else { "" },
                value(s.a),
                digits(letter, &s.a_lanes),
                value(s.b),
                digits(letter, &s.b_lanes),
                value(s.c)
            )
        }
    }
}

/// What a parsed operand names: the operand without its selector and negation, the
/// selector's letter and digits, and whether it was negated.
struct Operand<'a> {
    base: &'a str,
    selector: Option<(char, &'a str)>,
    negated: bool,
}

fn operand(s: &str) -> Operand<'_> {
    let (negated, s) = match s.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, s),
    };
    // Register names and numbers have no dots: a dot starts the selector.
    match s.split_once('.') {
        Some((base, sel)) => {
            let mut chars = sel.chars();
            let letter = chars.next().unwrap_or(' ');
            Operand { base, selector: Some((letter, chars.as_str())), negated }
        }
        None => Operand { base: s, selector: None, negated },
    }
}

/// The parser's view of one instruction line, for [`parse`] (and `text/half.rs`'s).
pub(super) struct Line<'a, R, V, E> {
    pub opcode: &'a str,
    pub dsts: &'a [&'a str],
    pub ops: &'a [&'a str],
    pub reg: R,
    pub value: V,
    pub error: E,
}

impl<R, V, E> Line<'_, R, V, E>
where
    R: Fn(&str) -> Result<RegId, Diagnostic>,
    V: Fn(&str) -> Result<Value, Diagnostic>,
    E: Fn(String) -> Diagnostic,
{
    fn part(&self, o: &Operand<'_>) -> Result<VideoPart, Diagnostic> {
        let bad = || (self.error)(format!("`{}` takes `.b0`-`.b3`, `.h0`, `.h1`", self.opcode));
        match o.selector {
            None => Ok(VideoPart::Word),
            Some((letter, d)) => {
                let k: u8 = d.parse().map_err(|_| bad())?;
                match letter {
                    'b' if k < 4 && d.len() == 1 => Ok(VideoPart::Byte(k)),
                    'h' if k < 2 && d.len() == 1 => Ok(VideoPart::Half(k)),
                    _ => Err(bad()),
                }
            }
        }
    }

    fn source(&self, s: &str, signed: bool) -> Result<(VideoSource, bool), Diagnostic> {
        let o = operand(s);
        let part = self.part(&o)?;
        Ok((VideoSource { value: (self.value)(o.base)?, signed, part }, o.negated))
    }

    /// `lanes` digits after `letter`, the high lane first, each below `limit`; lane 0
    /// first in the result.
    fn lanes(&self, s: Option<(char, &str)>, lanes: u8, limit: u8) -> Result<Vec<u8>, Diagnostic> {
        let letter = if lanes == 2 { 'h' } else { 'b' };
        let bad = || {
            (self.error)(format!("`{}` takes `.{letter}` and digits below {limit}", self.opcode))
        };
        let (l, d) = s.ok_or_else(bad)?;
        let lanes_of: Vec<u8> = d.bytes().rev().map(|c| c.wrapping_sub(b'0')).collect();
        if l != letter || lanes_of.iter().any(|&x| x >= limit) || lanes_of.is_empty() {
            return Err(bad());
        }
        Ok(lanes_of)
    }
}

/// The video instruction of a line whose opcode is a video mnemonic, else `None`.
/// Takes every modifier it knows from `words`.
pub(super) fn parse<R, V, E>(
    line: &Line<'_, R, V, E>,
    words: &mut Vec<&str>,
) -> Result<Option<VideoOp>, Diagnostic>
where
    R: Fn(&str) -> Result<RegId, Diagnostic>,
    V: Fn(&str) -> Result<Value, Diagnostic>,
    E: Fn(String) -> Diagnostic,
{
    let name = line.opcode;
    let Some(stem) = name.strip_prefix('v') else { return Ok(None) };
    let (stem, lanes) = match stem.strip_suffix(['2', '4']) {
        Some(s) => (s, stem.as_bytes()[stem.len() - 1] - b'0'),
        None => (stem, 0),
    };
    let arith = ARITH.iter().find(|e| e.1 == stem).map(|e| e.0);
    let known = arith.is_some()
        || stem == "set"
        || (lanes == 0 && matches!(stem, "shl" | "shr" | "mad"))
        || (lanes != 0 && stem == "avrg");
    if !known {
        return Ok(None);
    }
    let sat = take_flag(words, "sat");
    let set = stem == "set";
    let cmp = if set {
        let at = words.iter().position(|w| CmpOp::from_spelling(w).is_some());
        let cmp = at.and_then(|i| CmpOp::from_spelling(words.remove(i)));
        Some(cmp.ok_or_else(|| (line.error)(format!("`{name}` needs a comparison")))?)
    } else {
        None
    };
    // The types, in order: d (but for vset and vmad), a, b.
    let count = if set || stem == "mad" { 2 } else { 3 };
    let mut types = Vec::new();
    while types.len() < count {
        let Some(i) = words.iter().position(|w| parse_op_ty(w).is_some()) else {
            return Err((line.error)(format!("`{name}` needs {count} types")));
        };
        let t = parse_op_ty(words.remove(i)).unwrap_or(OpTy::U(32));
        if !matches!(t, OpTy::U(32) | OpTy::S(32)) {
            return Err((line.error)(format!("`{name}` takes `.u32` or `.s32` types")));
        }
        types.push(t.is_signed());
    }
    let (d_signed, a_signed, b_signed) = match count {
        3 => (types[0], types[1], types[2]),
        _ => (false, types[0], types[1]),
    };
    let primary = match (arith, cmp) {
        (_, Some(cmp)) => Some(VideoArith::Set(cmp)),
        (arith, None) => arith,
    };
    if lanes != 0 {
        let accumulate = take_flag(words, "add");
        let op = primary.map_or(SimdVideoOp::Avrg, SimdVideoOp::Arith);
        return simd(line, lanes, op, [d_signed, a_signed, b_signed], sat, accumulate).map(Some);
    }
    if stem == "mad" {
        let adjust = if take_flag(words, "po") { MadAdjust::PlusOne } else { MadAdjust::None };
        let shift = if take_flag(words, "shr7") {
            7
        } else if take_flag(words, "shr15") {
            15
        } else {
            0
        };
        return mad(line, [a_signed, b_signed], adjust, shift, sat).map(Some);
    }
    let second = SECONDARY.iter().find(|e| take_flag(words, e.1)).map(|e| e.0);
    let op = match primary {
        Some(a) => ScalarVideoOp::Arith(a),
        None => {
            let clamp = take_flag(words, "clamp");
            if !clamp && !take_flag(words, "wrap") {
                return Err((line.error)(format!("`{name}` needs `.clamp` or `.wrap`")));
            }
            shift_op(stem, clamp)
        }
    };
    scalar(line, op, [d_signed, a_signed, b_signed], sat, second).map(Some)
}

/// Whether `words` has the modifier `w`, which it loses.
pub(super) fn take_flag(words: &mut Vec<&str>, w: &str) -> bool {
    match words.iter().position(|x| *x == w) {
        Some(i) => {
            words.remove(i);
            true
        }
        None => false,
    }
}

fn shift_op(stem: &str, clamp: bool) -> ScalarVideoOp {
    if stem == "shl" {
        ScalarVideoOp::Shl { clamp }
    } else {
        ScalarVideoOp::Shr { clamp }
    }
}

fn scalar<R, V, E>(
    line: &Line<'_, R, V, E>,
    op: ScalarVideoOp,
    [dst_signed, a_signed, b_signed]: [bool; 3],
    sat: bool,
    second: Option<VideoSecondary>,
) -> Result<VideoOp, Diagnostic>
where
    R: Fn(&str) -> Result<RegId, Diagnostic>,
    V: Fn(&str) -> Result<Value, Diagnostic>,
    E: Fn(String) -> Diagnostic,
{
    let [dst] = line.dsts else {
        return Err((line.error)(format!("`{}` takes one destination", line.opcode)));
    };
    let d = operand(dst);
    let dpart = line.part(&d)?;
    let with_c = second.is_some() || dpart != VideoPart::Word;
    if line.ops.len() != 2 + usize::from(with_c) {
        return Err((line.error)(format!(
            "`{}` takes {} operands",
            line.opcode,
            2 + usize::from(with_c)
        )));
    }
    let (a, _) = line.source(line.ops[0], a_signed)?;
    let (b, _) = line.source(line.ops[1], b_signed)?;
    let finish = match (second, line.ops.get(2)) {
        (Some(op), Some(c)) => VideoFinish::Secondary(op, (line.value)(c)?),
        (None, Some(c)) => VideoFinish::Merge(dpart, (line.value)(c)?),
        _ => VideoFinish::Plain,
    };
    if second.is_some() && dpart != VideoPart::Word {
        return Err((line.error)("a merge excludes a secondary operation".into()));
    }
    let dst = (line.reg)(d.base)?;
    Ok(VideoOp::Scalar(ScalarVideo { op, dst, dst_signed, a, b, sat, finish }))
}

fn mad<R, V, E>(
    line: &Line<'_, R, V, E>,
    [a_signed, b_signed]: [bool; 2],
    adjust: MadAdjust,
    shift: u8,
    sat: bool,
) -> Result<VideoOp, Diagnostic>
where
    R: Fn(&str) -> Result<RegId, Diagnostic>,
    V: Fn(&str) -> Result<Value, Diagnostic>,
    E: Fn(String) -> Diagnostic,
{
    let ([dst], [a, b, c]) = (line.dsts, line.ops) else {
        return Err((line.error)("`vmad` takes one destination and three operands".into()));
    };
    let (a, negate_product) = line.source(a, a_signed)?;
    let (b, _) = line.source(b, b_signed)?;
    let c = operand(c);
    let adjust = match (adjust, negate_product, c.negated) {
        (adjust, false, false) => adjust,
        (MadAdjust::None, true, false) => MadAdjust::NegateProduct,
        (MadAdjust::None, false, true) => MadAdjust::NegateC,
        _ => return Err((line.error)("`vmad` takes one of `.po`, `-a` and `-c`".into())),
    };
    if c.selector.is_some() {
        return Err((line.error)("`c` of `vmad` takes no selector".into()));
    }
    let (c, dst) = ((line.value)(c.base)?, (line.reg)(dst)?);
    Ok(VideoOp::Mad(VideoMad { dst, a, b, c, adjust, shift, sat }))
}

fn simd<R, V, E>(
    line: &Line<'_, R, V, E>,
    lanes: u8,
    op: SimdVideoOp,
    signed: [bool; 3],
    sat: bool,
    accumulate: bool,
) -> Result<VideoOp, Diagnostic>
where
    R: Fn(&str) -> Result<RegId, Diagnostic>,
    V: Fn(&str) -> Result<Value, Diagnostic>,
    E: Fn(String) -> Diagnostic,
{
    let ([dst], [a, b, c]) = (line.dsts, line.ops) else {
        return Err((line.error)(format!(
            "`{}` takes one destination and three operands",
            line.opcode
        )));
    };
    let (d, a, b) = (operand(dst), operand(a), operand(b));
    let mask = line.lanes(d.selector, lanes, lanes)?.iter().fold(0u8, |m, &k| m | 1 << k);
    let a_lanes = line.lanes(a.selector, lanes, 2 * lanes)?;
    let b_lanes = line.lanes(b.selector, lanes, 2 * lanes)?;
    if a_lanes.len() != usize::from(lanes) || b_lanes.len() != usize::from(lanes) {
        return Err((line.error)(format!("`{}` selects {lanes} lanes", line.opcode)));
    }
    Ok(VideoOp::Simd(SimdVideo {
        op,
        lanes,
        dst: (line.reg)(d.base)?,
        signed,
        a: (line.value)(a.base)?,
        b: (line.value)(b.base)?,
        c: (line.value)(c)?,
        a_lanes,
        b_lanes,
        mask,
        sat,
        accumulate,
    }))
}

#[cfg(test)]
mod tests {
    use super::super::{parse as parse_text, print as print_text};

    /// Every form of the pass file test prints back as it was written.
    #[test]
    fn every_form_round_trips() {
        let text = include_str!("../../tests/passes/expand_video_results.ir");
        let kernels = parse_text(text).unwrap_or_else(|d| panic!("{}", d.message));
        let printed = print_text(&kernels[0]);
        let forms: Vec<&str> = text.lines().filter(|l| l.starts_with("    %v")).collect();
        assert_eq!(forms.len(), 24);
        for line in forms {
            assert!(printed.lines().any(|p| p == line), "{line} prints as something else");
        }
        let again = parse_text(&printed).unwrap_or_else(|d| panic!("{}", d.message));
        assert_eq!(print_text(&again[0]), printed);
    }

    #[test]
    fn malformed_forms_are_errors() {
        let text = include_str!("../../tests/passes/expand_video_results.ir");
        for (from, to, says) in [
            ("vadd.s32.u32.s32.sat %r1.b0", "vadd.s32.u32.sat %r1.b0", "3 types"),
            ("vadd.s32.u32.s32.sat %r1.b0", "vadd.s32.u32.s32.sat %r1.b4", ".b0"),
            ("vshl.s32.s32.u32.clamp.sat", "vshl.s32.s32.u32.sat", ".clamp"),
            ("vset.s32.u32.lt.max", "vset.s32.u32.max", "comparison"),
            ("%r2.h32, %r3", "%r2.h34, %r3", "digits below 4"),
            ("vmad.u32.u32.sat -%r1, %r2, %r3", "vmad.u32.u32.sat -%r1, %r2, -%r3", "one of"),
            ("vmin.s32.s32.s32.sat %r1.b3", "vmin.s32.s32.s32.sat.add %r1.b3", "merge"),
        ] {
            let bad = text.replacen(from, to, 1);
            assert_ne!(bad, text, "{from}");
            let d = parse_text(&bad).err().unwrap_or_else(|| panic!("accepted {to}"));
            assert!(d.message.contains(says), "{to}: {}", d.message);
        }
    }
}
