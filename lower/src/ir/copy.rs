//! The asynchronous copy instructions of the CFG IR before `pass::expand_copies`
//! ([`crate::ir::InstKind::Copy`]), as semantic analysis resolves them: addresses and
//! values, modifiers typed, nothing that refers to the AST.
//!
//! # Specification
//!
//! * An asynchronous copy is performed when it is issued, by the issuing thread. The
//!   ISA orders one with nothing but the `wait_group`/`wait_all` (and the barriers after
//!   it) that completes it, so copying at once is one of the executions it allows, and
//!   every wait finds its group complete: committing and waiting are no operation at all
//!   and semantic analysis emits nothing for them.
//! * The reads and writes of a copy are the program's own accesses: `pass::check`
//!   instruments those of its expansion as it does `ld` and `st`'s, which is why
//!   `pass::expand_copies` runs before it.
//!
//! [`CopyInst::Async`] is `cp.async.{ca,cg}.shared.global` (PTX ISA 9.2 §9.7.9.25.3.1),
//! [`AsyncCopy`]: `size` bytes (4, 8 or 16) from the 64-bit global address `src` to the
//! 32-bit shared address `dst`, of which only the first bytes are read by
//! [`CopyRead`]: all of them; the first `count` (`src-size`; a count of `size` or more
//! reads all), the rest of the destination zeroed; or none where the `ignore-src`
//! predicate holds, the whole destination zeroed. A partial read reads the source byte
//! by byte, so that a source at the end of an allocation is not read past.
//!
//! [`CopyInst::Bulk`] is `cp.async.bulk` between global and shared memory (PTX ISA 9.2
//! §9.7.9.25.4.1), [`BulkCopy`]: `size` bytes (a 32-bit value, a multiple of 16, as are
//! the addresses) from `src` in `src_space` to `dst` in `dst_space` (a shared address
//! is 32-bit, a global one 64-bit), 16 bytes at a time in increasing order. With a
//! multicast mask (`.multicast::cluster`, 16 bits) the copy is made only where bit 0,
//! the cluster's only CTA (rank 0, `sema::cluster`), is set. The `complete_tx` on the
//! mbarrier of a copy into shared memory is not part of the operation: semantic
//! analysis emits it after the copy, an [`MbarrierOp::CompleteTx`] of the copy's size
//! (`pass::expand_mbarrier` expands it with the mbarrier instructions).
//!
//! [`CopyInst::Tensor`] is `cp.async.bulk.tensor` in `.tile` mode (§9.7.9.25.5.1),
//! [`TensorCopy`]: the box at `coords` (`rank` of them, s32) of the tensor that the
//! tensor map at the 64-bit global address `map` describes (ptxvk's layout,
//! [`ptxvk_abi::tensor_map`], read at run time; a null map or one without its magic
//! word traps), between global memory and the packed box at the 32-bit shared address
//! `shared`: loaded into it (`load`), elements outside the tensor filled with zero (or
//! NaN, with the map's NaN fill), or stored from it, elements outside the tensor
//! skipped; with a multicast mask only where its bit 0 is set. `bytes`, when given,
//! gets the box's size in bytes (every element counted) whether or not the copy was
//! made, for the [`MbarrierOp::CompleteTx`] that semantic analysis emits after a load.
//! `sema::tensor_copy`'s module doc has the box's traversal and swizzling.

#[cfg(doc)]
use super::MbarrierOp;
use super::{Address, RegId, Space, Value};

/// `cp.async.bulk.tensor.Nd.tile [shared], [map, {coords}]` and the store the other way.
#[derive(Clone, Debug, PartialEq)]
pub struct TensorCopy {
    /// Global to shared memory (else shared to global).
    pub load: bool,
    /// The tensor map's 64-bit global address.
    pub map: Address,
    /// One s32 coordinate per dimension, 1 to [`ptxvk_abi::tensor_map::MAX_RANK`].
    pub coords: Vec<Value>,
    /// The box's 32-bit shared address.
    pub shared: Address,
    /// The 16-bit CTA mask of `.multicast::cluster`.
    pub mask: Option<Value>,
    /// Gets the box's bytes (32-bit).
    pub bytes: Option<RegId>,
}

/// An asynchronous copy instruction.
#[derive(Clone, Debug, PartialEq)]
pub enum CopyInst {
    /// `cp.async` (§9.7.9.25.3.1).
    Async(AsyncCopy),
    /// `cp.async.bulk` (§9.7.9.25.4.1).
    Bulk(BulkCopy),
    /// `cp.async.bulk.tensor` (§9.7.9.25.5.1).
    Tensor(TensorCopy),
}

/// `cp.async.bulk.dst.src [dst], [src], size{, ctaMask}`, without its completion: into
/// shared memory from global or shared memory, or from shared to global memory.
#[derive(Clone, Debug, PartialEq)]
pub struct BulkCopy {
    pub dst_space: Space,
    pub dst: Address,
    pub src_space: Space,
    pub src: Address,
    /// Bytes copied (32-bit, a multiple of 16).
    pub size: Value,
    /// The 16-bit CTA mask of `.multicast::cluster`.
    pub mask: Option<Value>,
}

/// `cp.async.{ca,cg}.shared.global [dst], [src], size{, src-size | ignore-src}`.
#[derive(Clone, Debug, PartialEq)]
pub struct AsyncCopy {
    /// The 32-bit shared destination.
    pub dst: Address,
    /// The 64-bit global source.
    pub src: Address,
    /// Bytes copied: 4, 8 or 16.
    pub size: u32,
    pub read: CopyRead,
}

/// How many source bytes a `cp.async` reads.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum CopyRead {
    /// All `size` of them.
    All,
    /// The first `count` (32-bit, unsigned), at most `size`; the rest are zero.
    Count(Value),
    /// None where the predicate (negated if `negate`) holds: all zero; else all.
    IgnoreSrc { pred: RegId, negate: bool },
}

impl CopyInst {
    /// Every register it names, for renaming (`pass::inline`).
    pub fn for_each_reg(&mut self, f: &mut dyn FnMut(&mut RegId)) {
        let value = |v: &mut Value, f: &mut dyn FnMut(&mut RegId)| {
            if let Value::Reg(r) = v {
                f(r)
            }
        };
        match self {
            CopyInst::Tensor(t) => {
                t.map.base.iter_mut().chain(t.shared.base.iter_mut()).for_each(&mut *f);
                t.bytes.iter_mut().for_each(&mut *f);
                t.coords.iter_mut().chain(t.mask.iter_mut()).for_each(|v| value(v, f));
            }
            CopyInst::Async(c) => {
                c.dst.base.iter_mut().chain(c.src.base.iter_mut()).for_each(&mut *f);
                match &mut c.read {
                    CopyRead::All | CopyRead::Count(Value::Imm(_)) => {}
                    CopyRead::Count(Value::Reg(r)) => f(r),
                    CopyRead::IgnoreSrc { pred, .. } => f(pred),
                }
            }
            CopyInst::Bulk(c) => {
                c.dst.base.iter_mut().chain(c.src.base.iter_mut()).for_each(&mut *f);
                for v in std::iter::once(&mut c.size).chain(c.mask.iter_mut()) {
                    if let Value::Reg(r) = v {
                        f(r)
                    }
                }
            }
        }
    }

    /// The register it writes, with its width in bits.
    pub fn def(&self) -> Option<(RegId, u32)> {
        match self {
            CopyInst::Tensor(t) => t.bytes.map(|r| (r, 32)),
            _ => None,
        }
    }

    /// The registers it reads, with their widths in bits.
    pub fn uses(&self) -> Vec<(RegId, Option<u32>)> {
        match self {
            CopyInst::Tensor(t) => {
                let mut out: Vec<(RegId, Option<u32>)> =
                    t.map.base.iter().chain(&t.shared.base).map(|&r| (r, None)).collect();
                let words = t.coords.iter().map(|v| (v, 32)).chain(t.mask.iter().map(|v| (v, 16)));
                for (v, bits) in words {
                    if let Value::Reg(r) = v {
                        out.push((*r, Some(bits)));
                    }
                }
                out
            }
            CopyInst::Async(c) => {
                let mut out: Vec<(RegId, Option<u32>)> =
                    c.dst.base.iter().chain(&c.src.base).map(|&r| (r, None)).collect();
                match c.read {
                    CopyRead::All | CopyRead::Count(Value::Imm(_)) => {}
                    CopyRead::Count(Value::Reg(r)) => out.push((r, Some(32))),
                    CopyRead::IgnoreSrc { pred, .. } => out.push((pred, Some(1))),
                }
                out
            }
            CopyInst::Bulk(c) => {
                let mut out: Vec<(RegId, Option<u32>)> =
                    c.dst.base.iter().chain(&c.src.base).map(|&r| (r, None)).collect();
                let values = [(Some(c.size), 32), (c.mask, 16)];
                for (v, bits) in values {
                    if let Some(Value::Reg(r)) = v {
                        out.push((r, Some(bits)));
                    }
                }
                out
            }
        }
    }

    /// What is wrong with its shape, if anything (`crate::verify`).
    pub fn malformed(&self) -> Option<&'static str> {
        match self {
            CopyInst::Async(c) if !matches!(c.size, 4 | 8 | 16) => {
                Some("a `cp.async` of other than 4, 8 or 16 bytes")
            }
            CopyInst::Bulk(c)
                if !matches!(
                    (c.dst_space, c.src_space),
                    (Space::Shared, Space::Global | Space::Shared) | (Space::Global, Space::Shared)
                ) =>
            {
                Some("a `cp.async.bulk` that is not into shared memory or from it to global")
            }
            CopyInst::Tensor(t)
                if t.coords.is_empty() || t.coords.len() > ptxvk_abi::tensor_map::MAX_RANK =>
            {
                Some("a `cp.async.bulk.tensor` of rank other than 1 to 5")
            }
            CopyInst::Async(_) | CopyInst::Bulk(_) | CopyInst::Tensor(_) => None,
        }
    }
}
