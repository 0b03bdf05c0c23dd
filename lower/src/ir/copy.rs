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
//! The bulk (`cp.async.bulk`) and tensor (`cp.async.bulk.tensor`) copies are still
//! expanded by semantic analysis (`sema::bulk_copy`, `sema::tensor_copy`).

use super::{Address, RegId, Value};

/// An asynchronous copy instruction.
#[derive(Clone, Debug, PartialEq)]
pub enum CopyInst {
    /// `cp.async` (§9.7.9.25.3.1).
    Async(AsyncCopy),
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
        match self {
            CopyInst::Async(c) => {
                c.dst.base.iter_mut().chain(c.src.base.iter_mut()).for_each(&mut *f);
                match &mut c.read {
                    CopyRead::All | CopyRead::Count(Value::Imm(_)) => {}
                    CopyRead::Count(Value::Reg(r)) => f(r),
                    CopyRead::IgnoreSrc { pred, .. } => f(pred),
                }
            }
        }
    }

    /// The registers it reads, with their widths in bits (it defines none).
    pub fn uses(&self) -> Vec<(RegId, Option<u32>)> {
        match self {
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
        }
    }

    /// What is wrong with its shape, if anything (`crate::verify`).
    pub fn malformed(&self) -> Option<&'static str> {
        match self {
            CopyInst::Async(c) if !matches!(c.size, 4 | 8 | 16) => {
                Some("a `cp.async` of other than 4, 8 or 16 bytes")
            }
            CopyInst::Async(_) => None,
        }
    }
}
