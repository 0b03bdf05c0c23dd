//! Thread-block clusters of sm_90 (PTX ISA 9.2 §2.2.2, §9.7.13.8, §9.7.9.23), for the
//! clusters ptxvk launches: one CTA each. Vulkan has no clusters, but a grid of
//! one-CTA clusters is exactly a grid of CTAs, so the cluster instructions are exact
//! there:
//!
//! - `%clusterid` is `%ctaid`, `%nclusterid` is `%nctaid`, `%cluster_ctaid` is 0,
//!   `%cluster_nctaid` 1, `%cluster_ctarank` 0, `%cluster_nctarank` 1, and the
//!   predicate `%is_explicit_cluster` says whether the kernel declares its cluster
//!   shape (`.explicitcluster` or `.reqnctapercluster`): `crate::ir::PtxReg`, which
//!   `pass::expand_special` writes out;
//! - `barrier.cluster.arrive` does nothing and `barrier.cluster.wait` is the block's
//!   barrier: every thread of the cluster has arrived once every thread of the CTA
//!   reaches the wait, and the barrier orders their memory as the pair's release and
//!   acquire do;
//! - `mapa` maps an address to itself (rank 0 is the only CTA; other ranks are outside
//!   the cluster, which PTX leaves undefined) and `getctarank` is 0;
//! - `.shared::cluster` addresses are the CTA's `.shared` ones (the front end reads the
//!   state space as `.shared`), and the `.cluster` scope is the `.cta` scope.
//!
//! A kernel that requires clusters of more CTAs (`.reqnctapercluster` with a product
//! above 1) is rejected with a diagnostic, as is a launch asking for them (the driver
//! library's `cuLaunchKernelEx`).

use ptxvk_frontend::ast;
use ptxvk_frontend::modifier::{BarrierForm, Modifier, Scope};
use ptxvk_frontend::{Diagnostic, Opcode};

use super::{Mods, Resolver};
use crate::ir::{InstKind, OpTy, Value};

/// Whether kernel `f` declares its cluster (`.explicitcluster`, `.reqnctapercluster`:
/// `%is_explicit_cluster`); an error when it requires clusters of several CTAs.
pub(super) fn cluster_attributes(f: &ast::Function) -> Result<bool, Diagnostic> {
    let mut explicit = false;
    for a in &f.attributes {
        let ast::DirectiveKind::Tuning { name, values } = &a.kind else { continue };
        match name.value.as_str() {
            ".explicitcluster" => explicit = true,
            ".reqnctapercluster" => {
                explicit = true;
                let ctas: u64 = values.iter().map(|v| u64::from(v.value)).product();
                if ctas > 1 {
                    return Err(super::unsupported(
                        a.span,
                        &format!("a cluster of {ctas} CTAs (`.reqnctapercluster`)"),
                        "ptxvk runs every cluster as one CTA (Vulkan has no thread-block \
                         clusters or distributed shared memory)",
                    ));
                }
            }
            _ => {}
        }
    }
    Ok(explicit)
}

impl Resolver<'_> {
    /// `mapa`, `getctarank` and `barrier.cluster`; `None` for other instructions.
    pub(super) fn cluster(
        &mut self,
        op: Opcode,
        i: &ast::Instruction,
        m: &Mods,
    ) -> Option<Result<(), Diagnostic>> {
        Some(match op {
            Opcode::Mapa => self.mapa(i, m, true),
            Opcode::Getctarank => self.mapa(i, m, false),
            Opcode::Barrier if m.has(Modifier::Scope(Scope::Cluster)) => self.barrier_cluster(i, m),
            _ => return None,
        })
    }

    /// `mapa{.shared::cluster}.type d, a, rank` (`d = a`) and
    /// `getctarank{.shared::cluster}.type d, a` (`d = 0`); the rank is read (it is an
    /// operand) but only rank 0 exists. Their forms are checked
    /// (`ptxvk_frontend::forms`).
    fn mapa(&mut self, i: &ast::Instruction, m: &Mods, map: bool) -> Result<(), Diagnostic> {
        let span = i.span;
        let (dst, value) = if map {
            let (dst, [a, _rank]) = self.fixed_args(i, m)?;
            (dst, a)
        } else {
            let (dst, [_a]) = self.fixed_args(i, m)?;
            (dst, Value::Imm(0))
        };
        let ty = if map { self.one_type(i, m)? } else { OpTy::U(32) };
        self.push(InstKind::Mov { ty, dst, src: value }, span);
        Ok(())
    }

    /// `barrier.cluster.arrive{.release|.relaxed}{.aligned}` (nothing to do) and
    /// `barrier.cluster.wait{.acquire}{.aligned}` (the block's barrier), whose form is
    /// checked (`ptxvk_frontend::forms`).
    fn barrier_cluster(&mut self, i: &ast::Instruction, m: &Mods) -> Result<(), Diagnostic> {
        if m.has(Modifier::BarrierForm(BarrierForm::Wait)) {
            self.push(InstKind::Barrier, i.span);
        }
        Ok(())
    }
}
