//! PTX's special registers (PTX ISA 9.2 §10) as the IR reads them: one table
//! ([`ptx_register`]) from a register's PTX name and component to the one
//! [`SpecialReg`] semantic analysis resolves it into, and the registers that are derived
//! from others ([`PtxReg`]), which `pass::expand_special` writes out.
//!
//! # Specification
//!
//! * `%tid`, `%ntid`, `%ctaid`, `%nctaid` are [`SpecialReg::Tid`]… of their component;
//!   `%clusterid` and `%nclusterid` are `%ctaid` and `%nctaid` (every cluster is one
//!   CTA, `sema::cluster`); the warp model's registers are [`SpecialReg::Warp`]
//!   (`pass::expand_warp` writes them out); `%clock64` and `%globaltimer` are
//!   [`SpecialReg::DeviceClock`]; `%dynamic_smem_size` is
//!   [`SpecialReg::DynamicSharedBytes`], `%total_smem_size` and `%aggr_smem_size`
//!   [`SpecialReg::TotalSharedBytes`].
//! * The others are a [`SpecialReg::Ptx`] until `pass::expand_special`: the clocks'
//!   32-bit halves ([`PtxReg::ClockLow`]: `%clock`, `%globaltimer_lo`;
//!   [`PtxReg::ClockHigh`]: `%clock_hi`, `%globaltimer_hi`) are the low and high halves
//!   of [`SpecialReg::DeviceClock`]; `%envreg2` and `%envreg1` ([`PtxReg::EnvReg`]) the
//!   low and high halves of the grid workspace's address (a
//!   [`super::SystemInst::GridWorkspace`], which marks the kernel
//!   [`super::Kernel::grid_sync`]); `%is_explicit_cluster` (a predicate) is
//!   [`super::Kernel::explicit_cluster`]; `%cluster_ctaid` and `%cluster_ctarank` are 0,
//!   `%cluster_nctaid` and `%cluster_nctarank` 1.
//! * Every register is 32-bit but `%clock64` and `%globaltimer` (64-bit) and
//!   `%is_explicit_cluster` (a predicate): [`SpecialWidth`].

use super::{Dim, SpecialReg, WarpReg};

/// A special register derived from others (module doc), until `pass::expand_special`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PtxReg {
    /// `%clock`, `%globaltimer_lo`: the device clock's low 32 bits.
    ClockLow,
    /// `%clock_hi`, `%globaltimer_hi`: the device clock's high 32 bits.
    ClockHigh,
    /// `%envreg1` (`high`) or `%envreg2`: a half of the grid workspace's address.
    EnvReg { high: bool },
    /// `%is_explicit_cluster`: whether the kernel declares its cluster shape.
    IsExplicitCluster,
    /// `%cluster_ctaid`: 0.
    ClusterCtaid(Dim),
    /// `%cluster_nctaid`: 1.
    ClusterNctaid(Dim),
    /// `%cluster_ctarank`: 0.
    ClusterCtarank,
    /// `%cluster_nctarank`: 1.
    ClusterNctarank,
}

/// What a PTX special register reads as.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpecialWidth {
    Pred,
    Bits(u32),
}

/// What a name is among PTX's special registers ([`ptx_register`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpecialLookup {
    /// A register ptxvk reads: the IR register and the width PTX gives it.
    Reg(SpecialReg, SpecialWidth),
    /// A register PTX defines that ptxvk does not read (`%smid`, `%pm0`…).
    Unsupported,
    /// Not a special register.
    Unknown,
}

/// The register PTX's `name` (with `component`, `.x`, `.y`, `.z`) names (module doc).
pub fn ptx_register(name: &str, component: Option<Dim>) -> SpecialLookup {
    let reg = match (name, component) {
        ("%tid", Some(d)) => SpecialReg::Tid(d),
        ("%ntid", Some(d)) => SpecialReg::Ntid(d),
        ("%ctaid" | "%clusterid", Some(d)) => SpecialReg::Ctaid(d),
        ("%nctaid" | "%nclusterid", Some(d)) => SpecialReg::Nctaid(d),
        ("%cluster_ctaid", Some(d)) => SpecialReg::Ptx(PtxReg::ClusterCtaid(d)),
        ("%cluster_nctaid", Some(d)) => SpecialReg::Ptx(PtxReg::ClusterNctaid(d)),
        (_, Some(_)) => return known(name),
        ("%laneid", None) => SpecialReg::Warp(WarpReg::LaneId),
        ("%warpid", None) => SpecialReg::Warp(WarpReg::WarpId),
        ("%nwarpid", None) => SpecialReg::Warp(WarpReg::Nwarpid),
        ("%lanemask_eq", None) => SpecialReg::Warp(WarpReg::LanemaskEq),
        ("%lanemask_lt", None) => SpecialReg::Warp(WarpReg::LanemaskLt),
        ("%lanemask_le", None) => SpecialReg::Warp(WarpReg::LanemaskLe),
        ("%lanemask_gt", None) => SpecialReg::Warp(WarpReg::LanemaskGt),
        ("%lanemask_ge", None) => SpecialReg::Warp(WarpReg::LanemaskGe),
        ("%clock" | "%globaltimer_lo", None) => SpecialReg::Ptx(PtxReg::ClockLow),
        ("%clock_hi" | "%globaltimer_hi", None) => SpecialReg::Ptx(PtxReg::ClockHigh),
        ("%clock64" | "%globaltimer", None) => {
            return SpecialLookup::Reg(SpecialReg::DeviceClock, SpecialWidth::Bits(64))
        }
        ("%dynamic_smem_size", None) => SpecialReg::DynamicSharedBytes,
        ("%total_smem_size" | "%aggr_smem_size", None) => SpecialReg::TotalSharedBytes,
        ("%envreg1", None) => SpecialReg::Ptx(PtxReg::EnvReg { high: true }),
        ("%envreg2", None) => SpecialReg::Ptx(PtxReg::EnvReg { high: false }),
        ("%is_explicit_cluster", None) => {
            return SpecialLookup::Reg(
                SpecialReg::Ptx(PtxReg::IsExplicitCluster),
                SpecialWidth::Pred,
            )
        }
        ("%cluster_ctarank", None) => SpecialReg::Ptx(PtxReg::ClusterCtarank),
        ("%cluster_nctarank", None) => SpecialReg::Ptx(PtxReg::ClusterNctarank),
        _ => return known(name),
    };
    SpecialLookup::Reg(reg, SpecialWidth::Bits(32))
}

/// [`SpecialLookup::Unsupported`] for the other names PTX gives its special registers
/// (PTX ISA 9.2 §10), else [`SpecialLookup::Unknown`].
fn known(name: &str) -> SpecialLookup {
    const OTHERS: &[&str] = &[
        "%tid",
        "%ntid",
        "%laneid",
        "%warpid",
        "%nwarpid",
        "%ctaid",
        "%nctaid",
        "%smid",
        "%nsmid",
        "%gridid",
        "%lanemask_eq",
        "%lanemask_le",
        "%lanemask_lt",
        "%lanemask_ge",
        "%lanemask_gt",
        "%clock",
        "%clock_hi",
        "%clock64",
        "%globaltimer",
        "%globaltimer_lo",
        "%globaltimer_hi",
        "%total_smem_size",
        "%dynamic_smem_size",
        "%aggr_smem_size",
        "%is_explicit_cluster",
        "%clusterid",
        "%nclusterid",
        "%cluster_ctaid",
        "%cluster_nctaid",
        "%cluster_ctarank",
        "%cluster_nctarank",
        "%current_graph_exec",
    ];
    if OTHERS.contains(&name) || name.starts_with("%pm") || name.starts_with("%envreg") {
        SpecialLookup::Unsupported
    } else {
        SpecialLookup::Unknown
    }
}
