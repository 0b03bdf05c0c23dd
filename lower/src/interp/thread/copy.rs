//! The model of [`InstKind::Copy`](crate::ir::InstKind::Copy) before `pass::expand_copies`, from the PTX ISA 9.2
//! (§9.7.9.25.3.1 `cp.async`, §9.7.9.25.4.1 `cp.async.bulk`): the copy happens when it
//! is issued (`crate::ir::CopyInst`'s specification), as byte moves: the bytes read
//! from the source, zeros for the rest of a `cp.async`; a bulk copy's bytes in
//! increasing order, where the multicast mask has bit 0. Tensor copies
//! (`cp.async.bulk.tensor`) are [`Error::Unsupported`]: their model is the e2e tests'
//! CPU model (`tests/tensor_copy_e2e.rs`), not repeated here.

use ptxvk_frontend::Span;

use super::{Ctx, Error, Thread};
use crate::ir::{CopyInst, CopyRead, Space};

impl Thread<'_> {
    /// Runs an asynchronous copy.
    pub(super) fn exec_copy(
        &mut self,
        cx: &mut Ctx<'_>,
        c: &CopyInst,
        span: Span,
    ) -> Result<(), Error> {
        match c {
            CopyInst::Tensor(_) => {
                let what = "tensor copies before expand_copies".into();
                Err(Error::Unsupported { what, span })
            }
            CopyInst::Async(a) => {
                let read = match a.read {
                    CopyRead::All => a.size,
                    CopyRead::Count(n) => self.at_bits(n, 32).min(u64::from(a.size)) as u32,
                    CopyRead::IgnoreSrc { pred, negate } => {
                        if self.pred(pred) != negate {
                            0
                        } else {
                            a.size
                        }
                    }
                };
                let (src, dst) =
                    (self.address(Space::Global, &a.src), self.address(Space::Shared, &a.dst));
                let mut bytes = vec![0u64; a.size as usize];
                for (i, b) in bytes.iter_mut().enumerate().take(read as usize) {
                    *b = self.read(cx, Space::Global, src.wrapping_add(i as u64), 1, span)?;
                }
                for (i, b) in bytes.into_iter().enumerate() {
                    let at = dst.wrapping_add(i as u64) & 0xffff_ffff;
                    self.write(cx, Space::Shared, at, 1, b, span)?;
                }
                Ok(())
            }
            CopyInst::Bulk(b) => {
                let mask = b.mask.map_or(1, |m| self.at_bits(m, 16));
                if mask & 1 == 0 {
                    return Ok(());
                }
                let size = self.at_bits(b.size, 32);
                let (src, dst) =
                    (self.address(b.src_space, &b.src), self.address(b.dst_space, &b.dst));
                let at = |space: Space, a: u64, i: u64| {
                    let a = a.wrapping_add(i);
                    if space == Space::Global {
                        a
                    } else {
                        a & 0xffff_ffff
                    }
                };
                for i in 0..size {
                    let v = self.read(cx, b.src_space, at(b.src_space, src, i), 1, span)?;
                    self.write(cx, b.dst_space, at(b.dst_space, dst, i), 1, v, span)?;
                }
                Ok(())
            }
        }
    }
}
