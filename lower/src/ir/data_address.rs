//! Addresses of the module data and of the parameter block as semantic analysis
//! resolves a name or a `.param` address into them ([`DataAddress`]), until
//! `pass::expand_data_addresses` writes them out.
//!
//! # Specification
//!
//! * [`DataAddress::Module`] (`dst = module_address offset`) sets `dst` (u64) to the
//!   device address of byte `offset` of the module data (`crate::globals`: the module's
//!   `.global` and `.const` variables): [`super::SpecialReg::ModuleData`] plus `offset`.
//! * [`DataAddress::ModuleWindow`] (`dst = module_window offset`) sets `dst` (u32) to
//!   that address's offset in the 32-bit address window of a module with
//!   `.address_size 32` (the address minus [`super::SpecialReg::WindowBase`], truncated: the
//!   module data lies in the window), which is the variable's address there.
//! * [`DataAddress::Param`] (`dst = param_address.ty offset`) sets `dst` (u64) to the
//!   device address of byte `offset` of the kernel's parameter block (a `.param`
//!   address in a register of the kernel, PTX ISA 9.2 §5.1.6.1): [`super::SpecialReg::ParamBlock`]
//!   plus the register (`ty`: u32, zero-extended, or u64).
//! * Each only computes its destination; none exists after the pass.

use super::{OpTy, RegId};

/// An address of the module data or of the parameter block (module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DataAddress {
    Module { dst: RegId, offset: u32 },
    ModuleWindow { dst: RegId, offset: u32 },
    Param { dst: RegId, ty: OpTy, offset: RegId },
}

impl DataAddress {
    /// The register it writes and its width.
    pub fn def(&self) -> (RegId, u32) {
        match *self {
            DataAddress::Module { dst, .. } | DataAddress::Param { dst, .. } => (dst, 64),
            DataAddress::ModuleWindow { dst, .. } => (dst, 32),
        }
    }

    /// The register it writes, then the one it reads, each with its width.
    pub fn operands(&self) -> Vec<(RegId, u32)> {
        match *self {
            DataAddress::Param { dst, ty, offset } => vec![(dst, 64), (offset, ty.bits())],
            _ => vec![self.def()],
        }
    }

    /// The registers it writes (`defs`) and reads (`uses`).
    pub fn defs_uses(&self, defs: &mut Vec<RegId>, uses: &mut Vec<RegId>) {
        let mut operands = self.operands().into_iter().map(|(r, _)| r);
        defs.extend(operands.next());
        uses.extend(operands);
    }

    /// Calls `f` on every register it names.
    pub fn for_each_reg(&mut self, f: &mut dyn FnMut(&mut RegId)) {
        match self {
            DataAddress::Module { dst, .. } | DataAddress::ModuleWindow { dst, .. } => f(dst),
            DataAddress::Param { dst, offset, .. } => {
                f(dst);
                f(offset);
            }
        }
    }

    /// What makes it malformed, if anything: a parameter offset other than u32 or u64.
    pub fn malformed(&self) -> Option<&'static str> {
        match self {
            DataAddress::Param { ty, .. } if !matches!(ty, OpTy::U(32 | 64)) => {
                Some("a parameter-block address whose offset is not u32 or u64")
            }
            _ => None,
        }
    }
}
