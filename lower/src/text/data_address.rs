//! The text of module-data and parameter-block addresses ([`DataAddress`]):
//!
//! ```text
//! %rd1 = module_address 16          ; the module data's address plus 16
//! %r1 = module_window 16            ; its offset in the 32-bit address window
//! %rd2 = param_address.u32 %r2      ; the parameter block's address plus %r2
//! ```

use ptxvk_frontend::Diagnostic;

use super::video::Line;
use super::{op_ty, parse_op_ty};
use crate::ir::*;

pub(super) fn print(a: &DataAddress, reg: impl Fn(RegId) -> String) -> String {
    match *a {
        DataAddress::Module { dst, offset } => format!("{} = module_address {offset}", reg(dst)),
        DataAddress::ModuleWindow { dst, offset } => {
            format!("{} = module_window {offset}", reg(dst))
        }
        DataAddress::Param { dst, ty, offset } => {
            format!("{} = param_address.{} {}", reg(dst), op_ty(ty), reg(offset))
        }
    }
}

pub(super) fn parse<R, V, E>(
    line: &Line<'_, R, V, E>,
    words: &mut Vec<&str>,
) -> Result<Option<DataAddress>, Diagnostic>
where
    R: Fn(&str) -> Result<RegId, Diagnostic>,
    V: Fn(&str) -> Result<Value, Diagnostic>,
    E: Fn(String) -> Diagnostic,
{
    let bad = || (line.error)(format!("`{}` takes one destination and one operand", line.opcode));
    let (&[dst], &[op]) = (line.dsts, line.ops) else {
        return match line.opcode {
            "module_address" | "module_window" | "param_address" => Err(bad()),
            _ => Ok(None),
        };
    };
    let dst = (line.reg)(dst)?;
    let offset = || op.parse::<u32>().map_err(|_| bad());
    Ok(Some(match line.opcode {
        "module_address" => DataAddress::Module { dst, offset: offset()? },
        "module_window" => DataAddress::ModuleWindow { dst, offset: offset()? },
        "param_address" => {
            let ty = words.first().and_then(|w| parse_op_ty(w)).ok_or_else(bad)?;
            words.remove(0);
            DataAddress::Param { dst, ty, offset: (line.reg)(op)? }
        }
        _ => return Ok(None),
    }))
}
