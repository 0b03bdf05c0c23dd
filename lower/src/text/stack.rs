//! The stack operations ([`InstKind::Stack`], [`StackInst`]) in the IR text format,
//! every field written; the stack pointer is a destination where it is written:
//!
//! ```text
//! %rd1, %sp = alloca.u64 %sp, %rd2, 16, 1024   ; size, alignment, the stack's bytes
//! %rd1 = stacksave.u64 %sp
//! %sp = stackrestore.u64 %rd1
//! %fp, %sp = frame %sp, 32, 8, 4096            ; size, alignment, the stack's bytes
//! %fp = frame %sp, 0, 8, 4096                  ; an empty frame: the stack pointer
//! ```

use ptxvk_frontend::Diagnostic;

use super::video::Line;
use super::{op_ty, parse_op_ty};
use crate::ir::*;

/// A stack operation's line.
pub(super) fn print(
    s: &StackInst,
    reg: impl Fn(RegId) -> String,
    value: impl Fn(Value) -> String,
) -> String {
    match *s {
        StackInst::Alloca { ty, dst, sp, size, align, stack } => format!(
            "{}, {} = alloca.{} {}, {}, {align}, {stack}",
            reg(dst),
            reg(sp),
            op_ty(ty),
            reg(sp),
            value(size)
        ),
        StackInst::Save { ty, dst, sp } => {
            format!("{} = stacksave.{} {}", reg(dst), op_ty(ty), reg(sp))
        }
        StackInst::Restore { ty, sp, src } => {
            format!("{} = stackrestore.{} {}", reg(sp), op_ty(ty), value(src))
        }
        StackInst::Frame { fp, sp, size, align, stack } => {
            let dsts = if size > 0 { format!("{}, {}", reg(fp), reg(sp)) } else { reg(fp) };
            format!("{dsts} = frame {}, {size}, {align}, {stack}", reg(sp))
        }
    }
}

/// The operation of a line whose opcode is one of these, else `None`; takes the type
/// from `words`.
pub(super) fn parse<R, V, E>(
    line: &Line<'_, R, V, E>,
    words: &mut Vec<&str>,
) -> Result<Option<StackInst>, Diagnostic>
where
    R: Fn(&str) -> Result<RegId, Diagnostic>,
    V: Fn(&str) -> Result<Value, Diagnostic>,
    E: Fn(String) -> Diagnostic,
{
    let opcode = line.opcode;
    if !matches!(opcode, "alloca" | "stacksave" | "stackrestore" | "frame") {
        return Ok(None);
    }
    let bad = |what: &str| (line.error)(format!("`{opcode}` needs {what}"));
    let mut ty = || -> Result<OpTy, Diagnostic> {
        let t = words.first().and_then(|w| parse_op_ty(w)).ok_or_else(|| bad("a type"))?;
        words.remove(0);
        Ok(t)
    };
    let values = line.ops.iter().map(|o| (line.value)(o)).collect::<Result<Vec<_>, _>>()?;
    let imm = |v: &Value| match v {
        Value::Imm(x) => u32::try_from(*x).map_err(|_| bad("32-bit constants")),
        Value::Reg(_) => Err(bad("constants for its size, alignment and stack")),
    };
    let reg = |v: &Value| match v {
        Value::Reg(r) => Ok(*r),
        Value::Imm(_) => Err(bad("the stack pointer register")),
    };
    let dsts = line.dsts.iter().map(|d| (line.reg)(d)).collect::<Result<Vec<_>, _>>()?;
    Ok(Some(match (opcode, dsts.as_slice(), values.as_slice()) {
        ("alloca", &[dst, sp], [at, size, align, stack]) if reg(at)? == sp => {
            let ty = ty()?;
            StackInst::Alloca {
                ty,
                dst,
                sp,
                size: *size,
                align: imm(align)?.into(),
                stack: imm(stack)?,
            }
        }
        ("stacksave", &[dst], [sp]) => StackInst::Save { ty: ty()?, dst, sp: reg(sp)? },
        ("stackrestore", &[sp], [src]) => StackInst::Restore { ty: ty()?, sp, src: *src },
        ("frame", [fp, rest @ ..], [at, size, align, stack])
            if rest.iter().all(|r| Some(*r) == reg(at).ok())
                && rest.len() == usize::from(imm(size)? > 0) =>
        {
            StackInst::Frame {
                fp: *fp,
                sp: reg(at)?,
                size: imm(size)?,
                align: imm(align)?,
                stack: imm(stack)?,
            }
        }
        _ => return Err(bad("other operands (`crate::text::stack`'s module doc)")),
    }))
}

#[cfg(test)]
mod tests {
    const KERNEL: &str = "\
kernel stack {
    params size 0 align 1
    shared 0
    local 1024
    entry bb0
    reg i32 %sp %fp %r1
    reg i64 %rd1 %rd2
bb0:
    %rd1, %sp = alloca.u64 %sp, %rd2, 16, 1024
    %r1, %sp = alloca.u32 %sp, 8, 8, 1024
    %rd1 = stacksave.u64 %sp
    %sp = stackrestore.u64 %rd1
    %fp, %sp = frame %sp, 32, 8, 1024
    %fp = frame %sp, 0, 8, 1024
    return
}
";

    #[test]
    fn every_stack_operation_round_trips() {
        let k = crate::text::parse(KERNEL).expect("parses").remove(0);
        crate::verify::run(&k).unwrap_or_else(|d| panic!("{d:?}"));
        assert_eq!(crate::text::print(&k), KERNEL);
    }

    #[test]
    fn a_stack_pointer_that_is_not_the_one_written_is_refused() {
        for (from, to) in [
            ("%rd1, %sp = alloca.u64 %sp,", "%rd1, %fp = alloca.u64 %sp,"),
            ("%fp, %sp = frame %sp, 32,", "%fp = frame %sp, 32,"),
            ("%fp = frame %sp, 0,", "%fp, %sp = frame %sp, 0,"),
            ("alloca.u64 %sp, %rd2, 16,", "alloca.u64 %sp, %rd2, %r1,"),
        ] {
            let text = KERNEL.replace(from, to);
            assert!(crate::text::parse(&text).is_err(), "{to}");
        }
    }
}
