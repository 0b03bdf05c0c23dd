//! The variables of the memory windows ([`crate::ir::Variable`]) and their addresses
//! ([`InstKind::VariableAddress`]) in the IR text format: a header line per variable,
//! in arena order, and the address naming the variable by its index:
//!
//! ```text
//!     variable buf local size 8 align 4          ; variable v0
//!     variable x local size 4 align 4 owner f1 scope 2.5 ; of function 1, in blocks 2 and 5
//!     variable $stack local size 1024 align 8 role stack ; made by semantic analysis
//! %r1 = address.u32 v0
//! %r2 = address.u32 v0+4                         ; plus a constant offset
//! ```

use ptxvk_frontend::Diagnostic;

use super::video::Line;
use super::{op_ty, parse_op_ty};
use crate::ir::*;

/// A variable's header line (without its indentation).
pub(super) fn print_variable(v: &Variable) -> String {
    let mut line =
        format!("variable {} {} size {} align {}", v.name, v.space.name(), v.size, v.align);
    if v.role != VariableRole::Declared {
        line += &format!(" role {}", v.role.name());
    }
    if let Some(f) = v.owner {
        line += &format!(" owner f{}", f.0);
    }
    if !v.scope.is_empty() {
        let scope: Vec<String> = v.scope.iter().map(u32::to_string).collect();
        line += &format!(" scope {}", scope.join("."));
    }
    line
}

/// The variable of a header line's words (`variable NAME SPACE size S align A`, then
/// `role R`, `owner fN`, `scope I.J`, each if any).
pub(super) fn parse_variable(words: &[&str]) -> Option<Variable> {
    let ["variable", name, space, "size", size, "align", align, ref rest @ ..] = *words else {
        return None;
    };
    let space = match space {
        "local" => Space::Local,
        "shared" => Space::Shared,
        _ => return None,
    };
    let mut v = Variable::new(name.to_string(), space, size.parse().ok()?, align.parse().ok()?);
    let mut rest = rest;
    if let ["role", role, more @ ..] = rest {
        v.role = VariableRole::parse(role)?;
        rest = more;
    }
    if let ["owner", f, more @ ..] = rest {
        v.owner = Some(FunctionId(f.strip_prefix('f')?.parse().ok()?));
        rest = more;
    }
    if let ["scope", path, more @ ..] = rest {
        v.scope = path.split('.').map(|s| s.parse().ok()).collect::<Option<_>>()?;
        rest = more;
    }
    rest.is_empty().then_some(v)
}

/// An address's line.
pub(super) fn print(a: &VariableAddress, reg: impl Fn(RegId) -> String) -> String {
    let offset = if a.offset == 0 { String::new() } else { format!("+{}", a.offset) };
    format!("{} = address.{} v{}{offset}", reg(a.dst), op_ty(a.ty), a.var.0)
}

/// The address of a line whose opcode is `address`, else `None`; takes the type from
/// `words`.
pub(super) fn parse<R, V, E>(
    line: &Line<'_, R, V, E>,
    words: &mut Vec<&str>,
) -> Result<Option<VariableAddress>, Diagnostic>
where
    R: Fn(&str) -> Result<RegId, Diagnostic>,
    V: Fn(&str) -> Result<Value, Diagnostic>,
    E: Fn(String) -> Diagnostic,
{
    if line.opcode != "address" {
        return Ok(None);
    }
    let bad = || (line.error)("`address` is `DST = address.TYPE vN`".to_string());
    let ty = words.first().and_then(|w| parse_op_ty(w)).ok_or_else(bad)?;
    words.remove(0);
    let (&[dst], &[var]) = (line.dsts, line.ops) else { return Err(bad()) };
    let (var, offset) = var.split_once('+').unwrap_or((var, "0"));
    let var = var.strip_prefix('v').and_then(|n| n.parse().ok()).ok_or_else(bad)?;
    let offset = offset.parse().map_err(|_| bad())?;
    Ok(Some(VariableAddress { ty, dst: (line.reg)(dst)?, var: VarId(var), offset }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_round_trip_and_unknown_ones_are_refused() {
        let line = "variable $stack local size 1024 align 8 role stack";
        let words: Vec<&str> = line.split_whitespace().collect();
        let v = parse_variable(&words).expect("parses");
        assert_eq!(v.role, VariableRole::Stack);
        assert_eq!(print_variable(&v), line);
        let declared = parse_variable(&["variable", "$stack", "local", "size", "4", "align", "4"]);
        assert_eq!(declared.map(|v| v.role), Some(VariableRole::Declared));
        let words = ["variable", "x", "shared", "size", "4", "align", "4", "role", "frame"];
        assert_eq!(parse_variable(&words), None);
    }
}
