//! Pass: the special registers derived from others ([`SpecialReg::Ptx`], specified in
//! `crate::ir::special`'s doc) become what they are derived from:
//!
//! - `%clock`, `%globaltimer_lo` ([`PtxReg::ClockLow`]): the low half of the device
//!   clock (PTX ISA 9.2 §10.22-10.25, [`SpecialReg::DeviceClock`]), `%clock_hi`,
//!   `%globaltimer_hi` its high half;
//! - `%envreg2`, `%envreg1` ([`PtxReg::EnvReg`]): a half of the grid workspace's
//!   address, [`SystemInst::GridWorkspace`] (which `pass::split_grid` recognizes and
//!   `pass::expand_system` writes out); the kernel synchronizes its grid
//!   ([`Kernel::grid_sync`]): CUDA 12's cooperative groups read these two as the
//!   workspace of `this_grid().sync()` (`cooperative_groups/details/sync.h`);
//! - `%is_explicit_cluster`: the kernel's [`Kernel::explicit_cluster`]; the cluster
//!   registers of a one-CTA cluster (`sema::cluster`): `%cluster_ctaid` and
//!   `%cluster_ctarank` 0, `%cluster_nctaid` and `%cluster_nctarank` 1.
//!
//! Pre: CFG IR after `pass::inline` (the kernel's blocks only).
//!
//! Post: no [`SpecialReg::Ptx`] is left; each became instructions with its span that
//! write its register.

use crate::build::{Build, Builder};
use crate::ir::{
    BinaryOp, FloatMode, InstKind, Kernel, OpTy, PtxReg, RegId, SpecialReg, SystemInst, Value,
};

const U32: OpTy = OpTy::U(32);
const U64: OpTy = OpTy::U(64);

/// Whether `kind` reads a derived special register, which this pass expands
/// (`pass::leftover`).
pub fn is_derived_special(kind: &InstKind) -> bool {
    matches!(kind, InstKind::Special { reg: SpecialReg::Ptx(_), .. })
}

/// Expands every derived special register of `k` as the module doc says.
pub fn run(k: &mut Kernel) {
    super::expander::each_in_block(k, is_derived_special, |e, kind| {
        if let InstKind::Special { dst, reg: SpecialReg::Ptx(reg) } = kind {
            expand(e, reg, dst);
        }
    });
}

/// The instructions that write derived register `reg` into `dst`.
fn expand(e: &mut Builder<'_>, reg: PtxReg, dst: RegId) {
    let constant = |e: &mut Builder<'_>, ty: OpTy, v: u64| e.mov(ty, dst, Value::Imm(v));
    match reg {
        PtxReg::ClockLow | PtxReg::ClockHigh => {
            let mut src = e.special(SpecialReg::DeviceClock);
            if reg == PtxReg::ClockHigh {
                src = e.bin(BinaryOp::Shr, U64, src, Value::Imm(32));
            }
            let mode = FloatMode::default();
            e.push(InstKind::Convert { to: U32, from: U64, rounding: None, mode, dst, src });
        }
        PtxReg::EnvReg { high } => {
            e.kernel.grid_sync = true;
            e.push(InstKind::System(Box::new(SystemInst::GridWorkspace { dst, high })));
        }
        PtxReg::IsExplicitCluster => {
            let explicit = u64::from(e.kernel.explicit_cluster);
            constant(e, OpTy::Pred, explicit)
        }
        PtxReg::ClusterCtaid(_) | PtxReg::ClusterCtarank => constant(e, U32, 0),
        PtxReg::ClusterNctaid(_) | PtxReg::ClusterNctarank => constant(e, U32, 1),
    }
}
