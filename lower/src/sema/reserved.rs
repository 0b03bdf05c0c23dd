//! The reserved shared-memory area of a CTA (PTX ISA 9.2 §10.34-10.37:
//! `%reserved_smem_offset_begin`, `_end`, `_cap` and `_<2>`).
//!
//! On sm_80 and later CUDA reserves 1 KiB of every block's shared memory
//! (`cudaDevAttrReservedSharedMemoryPerBlock`) for the system, and cooperative groups
//! keep their multi-warp scratch there: five barrier words, then one 64-bit slot per
//! warp, found through `%reserved_smem_offset_1` (`cooperative_groups/details/
//! memory.h`, which relies on the barrier words starting at zero). A kernel that names
//! one of these registers gets such an area in its shared window, after its static
//! variables (so it counts against the device's limit like them); `pass::layout_memory`
//! places it and has thread 0 zero its first words before anything else runs, as the
//! hardware does.
//!
//! ptxvk's layout: `_begin` is the area's offset in the window, `_cap` its size (1,024
//! bytes), `_end` = `_begin + _cap`; `_0` is `_begin` and `_1` is `_begin + 512`, two
//! halves of 512 bytes (cooperative groups need 288).

use ptxvk_frontend::{Diagnostic, Span};

use super::Resolver;
use crate::ir::{OpTy, Space, Value, Variable, VariableRole};

/// The size of the area, as CUDA reserves on sm_80 and later.
pub(super) const RESERVED_BYTES: u32 = 1024;

/// Whether `name` is one of the registers of the reserved area.
pub(super) fn is_reserved_register(name: &str) -> bool {
    name.starts_with("%reserved_smem_offset_")
}

impl Resolver<'_> {
    /// Declares the area after the static variables (16-byte aligned), a variable that
    /// `pass::layout_memory` places.
    pub(super) fn place_reserved(&mut self) {
        let (role, space) = (VariableRole::Reserved, Space::Shared);
        self.kernel.variables.push(Variable::made(role, "$reserved", space, RESERVED_BYTES, 16));
    }

    /// The value of register `name` of the area, read as `ty`: an offset in the area's
    /// variable, or its size.
    pub(super) fn reserved_register(
        &mut self,
        name: &str,
        ty: OpTy,
        span: Span,
    ) -> Result<Value, Diagnostic> {
        if ty.bits() != 32 || ty.is_float() {
            return Err(Diagnostic::error(span, format!("`{name}` is a 32-bit register")));
        }
        let Some(var) = self.made_variable(VariableRole::Reserved) else {
            return Err(Diagnostic::internal(span, "the reserved shared area was not placed"));
        };
        let offset = match &name["%reserved_smem_offset_".len()..] {
            "begin" | "0" => 0,
            "1" => RESERVED_BYTES / 2,
            "end" => RESERVED_BYTES,
            "cap" => return Ok(Value::Imm(u64::from(RESERVED_BYTES))),
            _ => {
                return Err(Diagnostic::error(
                    span,
                    format!("unknown special register `{name}` (PTX has `_begin`, `_end`, `_cap`, `_0`, `_1`)"),
                ))
            }
        };
        let address = self.variable_address(var, ty, span);
        self.offset_variable_address(address, u64::from(offset));
        Ok(Value::Reg(address))
    }
}
