//! The warp-level matrix instructions ([`InstKind::Matrix`]) in the IR text format,
//! every field written:
//!
//! ```text
//! %f1, %f2, %f3, %f4 = mma.m16n8k16.f32.f16.f16.f32 [%r1, %r2, %r3, %r4], [%r5, %r6], [%f5, %f6, %f7, %f8]
//! %r1, %r2 = mma.m8n8k128.s32.b1.b1.s32.xor [%r3], [%r4], [%r5, %r6]
//! %r1, %r2 = ldmatrix.trans [%r3+16]
//! stmatrix.generic [%rd3], %r1, %r2
//! %r1 = movmatrix %r2
//! %r1, %r2 = wmma_load.a.row.m16n16k16.f16.global [%rd1+8], 16
//! wmma_store.c.col.m16n16k16.f32.window.shared [%rd1], %r9, %f1, %f2
//! ```
//!
//! `mma`'s types are D's, A's, B's and C's, then `.satfinite` and a `.b1` form's
//! `.and`/`.xor`; `wmma_mma` is written the same way. `ldmatrix` and `stmatrix` take a
//! `.shared` address, or with `.generic` a generic one. A WMMA load or store names the
//! fragment (`a`, `b`, `c`), the layout, the shape, the element type, then the space
//! (`global`, `shared`, `window.shared`, `window.local`, `generic`); its operands are the
//! address and the stride, then a store's values.

use ptxvk_frontend::Diagnostic;

use super::video::{take_flag, Line};
use super::Spelled;
use crate::ir::*;

/// The spelling of an `mma` input type.
fn elem_spelling(e: MatrixElem) -> &'static str {
    match e {
        MatrixElem::Float(f) => f.spelling(),
        MatrixElem::F64 => "f64",
        MatrixElem::Int { bits: 8, signed: true } => "s8",
        MatrixElem::Int { bits: 8, signed: false } => "u8",
        MatrixElem::Int { bits: 4, signed: true } => "s4",
        MatrixElem::Int { bits: 4, signed: false } => "u4",
        MatrixElem::Int { .. } => "<int>",
        MatrixElem::Bit => "b1",
    }
}

fn elem_from(s: &str) -> Option<MatrixElem> {
    Some(match s {
        "f64" => MatrixElem::F64,
        "s8" => MatrixElem::Int { bits: 8, signed: true },
        "u8" => MatrixElem::Int { bits: 8, signed: false },
        "s4" => MatrixElem::Int { bits: 4, signed: true },
        "u4" => MatrixElem::Int { bits: 4, signed: false },
        "b1" => MatrixElem::Bit,
        _ => match FloatFormat::from_spelling(s)? {
            f @ (FloatFormat::F16
            | FloatFormat::Bf16
            | FloatFormat::Tf32
            | FloatFormat::E4m3
            | FloatFormat::E5m2) => MatrixElem::Float(f),
            _ => return None,
        },
    })
}

impl Spelled for MatrixAccum {
    const TABLE: &'static [(Self, &'static str)] = &[
        (MatrixAccum::F16, "f16"),
        (MatrixAccum::F32, "f32"),
        (MatrixAccum::F64, "f64"),
        (MatrixAccum::S32, "s32"),
    ];
}

impl Spelled for Fragment {
    const TABLE: &'static [(Self, &'static str)] =
        &[(Fragment::A, "a"), (Fragment::B, "b"), (Fragment::C, "c")];
}

fn list(values: &[Value], value: &impl Fn(Value) -> String) -> String {
    let all: Vec<String> = values.iter().map(|v| value(*v)).collect();
    format!("[{}]", all.join(", "))
}

pub(super) fn address(a: Address, reg: &impl Fn(RegId) -> String) -> String {
    match a.base {
        Some(b) if a.offset > 0 => format!("[{}+{}]", reg(b), a.offset),
        Some(b) if a.offset < 0 => format!("[{}{}]", reg(b), a.offset),
        Some(b) => format!("[{}]", reg(b)),
        None => format!("[{}]", a.offset),
    }
}

/// A matrix instruction's line.
pub(super) fn print(
    m: &MatrixInst,
    reg: impl Fn(RegId) -> String,
    value: impl Fn(Value) -> String,
) -> String {
    let regs = |rs: &[RegId]| rs.iter().map(|&r| reg(r)).collect::<Vec<_>>().join(", ");
    let values = |vs: &[Value]| vs.iter().map(|&v| format!(", {}", value(v))).collect::<String>();
    let trans = |t: bool| if t { ".trans" } else { "" };
    let generic = |g: bool| if g { ".generic" } else { "" };
    match m {
        MatrixInst::Mma(x) => {
            let f = &x.form;
            let mut head = format!(
                "{}.m{}n{}k{}.{}.{}.{}.{}",
                if x.wmma { "wmma_mma" } else { "mma" },
                f.m,
                f.n,
                f.k,
                f.d.spelling(),
                elem_spelling(f.a),
                elem_spelling(f.b),
                f.c.spelling()
            );
            if f.satfinite {
                head += ".satfinite";
            }
            match f.popc {
                Some(BinaryOp::And) => head += ".and",
                Some(BinaryOp::Xor) => head += ".xor",
                _ => {}
            }
            let ops = [list(&x.a, &value), list(&x.b, &value), list(&x.c, &value)];
            format!("{} = {head} {}", regs(&x.d), ops.join(", "))
        }
        MatrixInst::LoadRows { trans: t, addr, generic: g, dsts } => {
            format!(
                "{} = ldmatrix{}{} {}",
                regs(dsts),
                trans(*t),
                generic(*g),
                address(*addr, &reg)
            )
        }
        MatrixInst::StoreRows { trans: t, addr, generic: g, srcs } => {
            format!("stmatrix{}{} {}{}", trans(*t), generic(*g), address(*addr, &reg), values(srcs))
        }
        MatrixInst::Transpose { dst, src } => format!("{} = movmatrix {}", reg(*dst), value(*src)),
        MatrixInst::WmmaLoad(w, dsts) => {
            format!("{} = wmma_load.{} {}", regs(dsts), access(w), operands(w, &reg, &value))
        }
        MatrixInst::WmmaStore(w, srcs) => {
            format!("wmma_store.{} {}{}", access(w), operands(w, &reg, &value), values(srcs))
        }
    }
}

/// A WMMA access's modifiers.
fn access(w: &WmmaAccess) -> String {
    let (m, n, k) = w.shape;
    let data = match w.data {
        WmmaData::In(e) => elem_spelling(e),
        WmmaData::Acc(a) => a.spelling(),
    };
    let space = match w.space {
        WmmaSpace::In(s) => s.spelling().to_string(),
        WmmaSpace::Window(s) => format!("window.{}", s.spelling()),
        WmmaSpace::Generic => "generic".into(),
    };
    let layout = if w.row_major { "row" } else { "col" };
    format!("{}.{layout}.m{m}n{n}k{k}.{data}.{space}", w.which.spelling())
}

fn operands(
    w: &WmmaAccess,
    reg: &impl Fn(RegId) -> String,
    value: &impl Fn(Value) -> String,
) -> String {
    format!("{}, {}", address(w.addr, reg), value(w.stride))
}

/// `mMnNkK`.
fn shape(s: &str) -> Option<(u32, u32, u32)> {
    let rest = s.strip_prefix('m')?;
    let (m, rest) = rest.split_once('n')?;
    let (n, k) = rest.split_once('k')?;
    Some((m.parse().ok()?, n.parse().ok()?, k.parse().ok()?))
}

/// The matrix instruction of a line whose opcode is one, else `None`; takes the
/// modifiers it knows from `words`. `addr` reads an address operand.
pub(super) fn parse<R, V, E>(
    line: &Line<'_, R, V, E>,
    words: &mut Vec<&str>,
    addr: impl Fn(&str) -> Result<Address, Diagnostic>,
) -> Result<Option<MatrixInst>, Diagnostic>
where
    R: Fn(&str) -> Result<RegId, Diagnostic>,
    V: Fn(&str) -> Result<Value, Diagnostic>,
    E: Fn(String) -> Diagnostic,
{
    let opcode = line.opcode;
    if !matches!(
        opcode,
        "mma" | "wmma_mma" | "ldmatrix" | "stmatrix" | "movmatrix" | "wmma_load" | "wmma_store"
    ) {
        return Ok(None);
    }
    let bad = |what: &str| (line.error)(format!("`{opcode}` needs {what}"));
    let dsts = || line.dsts.iter().map(|d| (line.reg)(d)).collect::<Result<Vec<_>, _>>();
    let values = |ops: &[&str]| ops.iter().map(|s| (line.value)(s)).collect::<Result<Vec<_>, _>>();
    let bracketed = |s: &str| -> Result<Vec<Value>, Diagnostic> {
        let inner = s.strip_prefix('[').and_then(|x| x.strip_suffix(']'));
        let inner = inner.ok_or_else(|| bad("`[...]` fragments"))?;
        inner.split(',').map(str::trim).filter(|x| !x.is_empty()).map(&line.value).collect()
    };
    let inst = match opcode {
        "mma" | "wmma_mma" => {
            let satfinite = take_flag(words, "satfinite");
            let popc = if take_flag(words, "and") {
                Some(BinaryOp::And)
            } else if take_flag(words, "xor") {
                Some(BinaryOp::Xor)
            } else {
                None
            };
            if words.len() < 5 {
                return Err(bad("a shape and four types"));
            }
            let w: Vec<&str> = words.drain(..5).collect();
            let (m, n, k) = shape(w[0]).ok_or_else(|| bad("a shape `.mMnNkK`"))?;
            let acc = |s: &str| MatrixAccum::from_spelling(s).ok_or_else(|| bad("C and D types"));
            let elem = |s: &str| elem_from(s).ok_or_else(|| bad("A and B types"));
            let form = MmaForm {
                m,
                n,
                k,
                d: acc(w[1])?,
                a: elem(w[2])?,
                b: elem(w[3])?,
                c: acc(w[4])?,
                satfinite,
                popc,
            };
            let [a, b, c] = line.ops else { return Err(bad("three fragments `[a], [b], [c]`")) };
            let (a, b, c) = (bracketed(a)?, bracketed(b)?, bracketed(c)?);
            MatrixInst::Mma(Mma { form, wmma: opcode == "wmma_mma", d: dsts()?, a, b, c })
        }
        "ldmatrix" | "stmatrix" => {
            let trans = take_flag(words, "trans");
            let generic = take_flag(words, "generic");
            let Some((first, rest)) = line.ops.split_first() else {
                return Err(bad("an address"));
            };
            let addr = addr(first)?;
            if opcode == "ldmatrix" {
                if !rest.is_empty() {
                    return Err(bad("one address"));
                }
                MatrixInst::LoadRows { trans, addr, generic, dsts: dsts()? }
            } else {
                if !line.dsts.is_empty() {
                    return Err(bad("no destination"));
                }
                MatrixInst::StoreRows { trans, addr, generic, srcs: values(rest)? }
            }
        }
        "movmatrix" => {
            let ([dst], [src]) = (line.dsts, line.ops) else {
                return Err(bad("one destination and one source"));
            };
            MatrixInst::Transpose { dst: (line.reg)(dst)?, src: (line.value)(src)? }
        }
        _ => {
            let store = opcode == "wmma_store";
            if words.len() < 5 {
                return Err(bad("a fragment, a layout, a shape, a type and a space"));
            }
            let w: Vec<&str> = words.drain(..5).collect();
            let which = Fragment::from_spelling(w[0]).ok_or_else(|| bad("`.a`, `.b` or `.c`"))?;
            let row_major = match w[1] {
                "row" => true,
                "col" => false,
                _ => return Err(bad("`.row` or `.col`")),
            };
            let shape = shape(w[2]).ok_or_else(|| bad("a shape `.mMnNkK`"))?;
            let data = match which {
                Fragment::C => MatrixAccum::from_spelling(w[3]).map(WmmaData::Acc),
                _ => elem_from(w[3]).map(WmmaData::In),
            };
            let data = data.ok_or_else(|| bad("an element type of its fragment"))?;
            let space = match w[4] {
                "generic" => WmmaSpace::Generic,
                "window" if !words.is_empty() => {
                    let s = Space::from_spelling(words.remove(0));
                    WmmaSpace::Window(s.ok_or_else(|| bad("a window's space"))?)
                }
                s => WmmaSpace::In(Space::from_spelling(s).ok_or_else(|| bad("a space"))?),
            };
            let [at, stride, srcs @ ..] = line.ops else {
                return Err(bad("an address and a stride"));
            };
            let access = WmmaAccess {
                which,
                row_major,
                shape,
                data,
                space,
                addr: addr(at)?,
                stride: (line.value)(stride)?,
            };
            if store {
                if !line.dsts.is_empty() {
                    return Err(bad("no destination"));
                }
                MatrixInst::WmmaStore(access, values(srcs)?)
            } else {
                if !srcs.is_empty() {
                    return Err(bad("an address and a stride only"));
                }
                MatrixInst::WmmaLoad(access, dsts()?)
            }
        }
    };
    Ok(Some(inst))
}

#[cfg(test)]
mod tests {
    use super::super::{parse as parse_text, print as print_text};

    /// Every form of the pass file tests prints back as it was written, and malformed
    /// lines are refused with what they lack.
    #[test]
    fn every_form_round_trips() {
        let files = [
            include_str!("../../tests/passes/expand_matrix_mma.ir"),
            include_str!("../../tests/passes/expand_matrix_ldmatrix.ir"),
            include_str!("../../tests/passes/expand_matrix_wmma.ir"),
        ];
        let ops = ["mma.", "ldmatrix", "stmatrix", "movmatrix", "wmma_"];
        let mut forms = 0;
        for text in files {
            let kernels = parse_text(text).unwrap_or_else(|d| panic!("{}", d.message));
            let printed = print_text(&kernels[0]);
            // Not the sync points, whose kinds are spelled as the PTX instructions.
            let lines = text.lines().filter(|l| !l.starts_with(';') && !l.contains("sync_point"));
            for line in lines.filter(|l| ops.iter().any(|o| l.contains(o))) {
                forms += 1;
                assert!(printed.lines().any(|p| p == line), "{line} prints as something else");
            }
        }
        assert_eq!(forms, 25);
        let mma = files[0];
        for (from, to, says) in [
            ("mma.m16n8k16.f32.f16.f16.f32", "mma.m16n8k16.f32.f16.f16", "a shape and four types"),
            ("mma.m16n8k16.f32.f16.f16.f32", "mma.m16n8k16.f32.f17.f16.f32", "A and B types"),
            ("%d21 = movmatrix %r3", "%d21 = movmatrix %r3, %r4", "one destination"),
            ("[%r9], [%r10], [%r11, %r12]", "[%r9], [%r10]", "three fragments"),
        ] {
            let bad = mma.replacen(from, to, 1);
            let d = parse_text(&bad).err().unwrap_or_else(|| panic!("accepted {to}"));
            assert!(d.message.contains(says), "{to}: {}", d.message);
        }
        let wmma = files[2].replacen("f16.global [%rd5], 16", "f16.constant [%rd5], 16", 1);
        let d = parse_text(&wmma).err().unwrap_or_else(|| panic!("accepted .constant"));
        assert!(d.message.contains("a space"), "{}", d.message);
    }
}
