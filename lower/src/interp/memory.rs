//! The interpreter's memory: global memory as allocations at device addresses (the
//! parameter block and its system area among them), and the byte arrays of a block's
//! shared window and a thread's local window (`docs/architecture.md`, *The launch
//! ABI*). All values are little-endian; atomics are read-modify-writes on them
//! (PTX ISA 9.2 §9.7.13.5), trivially atomic since one thread runs at a time.

use ptxvk_frontend::Span;

use super::arith::{self, mask, sext};
use super::Error;
use crate::ir::{AtomicOp, OpTy, Space, LOCAL_WINDOW_32, PARAM_WINDOW_32, SHARED_WINDOW_32};

/// The model's address window of a module with 32-bit addresses
/// ([`crate::ir::SpecialReg::WindowBase`]): where `interp::check`'s first buffer is.
pub const WINDOW_BASE: u64 = 0x1_0000_0000;

/// The space and address of a 32-bit generic address (PTX ISA 9.2 §6.4.1.1, the launch
/// ABI's 32-bit windows): an offset in the shared, local or parameter window at the top
/// of the 32-bit range, else an offset from the address window's base.
pub fn narrow_generic_place(a: u32) -> (Space, u64) {
    let (space, start) = match a {
        a if a >= SHARED_WINDOW_32 => (Space::Shared, SHARED_WINDOW_32),
        a if a >= LOCAL_WINDOW_32 => (Space::Local, LOCAL_WINDOW_32),
        a if a >= PARAM_WINDOW_32 => (Space::Param, PARAM_WINDOW_32),
        a => return (Space::Global, WINDOW_BASE + u64::from(a)),
    };
    (space, u64::from(a - start))
}

/// One allocation of global memory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Region {
    pub base: u64,
    pub bytes: Vec<u8>,
}

/// Global memory: disjoint allocations.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Memory {
    pub regions: Vec<Region>,
}

/// Reads `size` bytes (1 to 8) at `offset` of `bytes`.
pub fn read(bytes: &[u8], offset: u64, size: u32) -> Option<u64> {
    let start = usize::try_from(offset).ok()?;
    let slice = bytes.get(start..start.checked_add(size as usize)?)?;
    Some(slice.iter().rev().fold(0u64, |acc, b| acc << 8 | u64::from(*b)))
}

/// Writes the low `size` bytes of `v` at `offset` of `bytes`.
pub fn write(bytes: &mut [u8], offset: u64, size: u32, v: u64) -> Option<()> {
    let start = usize::try_from(offset).ok()?;
    let slice = bytes.get_mut(start..start.checked_add(size as usize)?)?;
    for (i, b) in slice.iter_mut().enumerate() {
        *b = (v >> (8 * i)) as u8;
    }
    Some(())
}

impl Memory {
    /// The allocation holding `size` bytes at `addr`, and the offset in it.
    fn locate(&self, addr: u64, size: u32) -> Option<(usize, u64)> {
        self.regions
            .iter()
            .position(|r| {
                addr >= r.base
                    && addr.saturating_add(u64::from(size)) <= r.base + r.bytes.len() as u64
            })
            .map(|i| (i, addr - self.regions[i].base))
    }

    pub fn read(&self, addr: u64, size: u32, span: Span) -> Result<u64, Error> {
        let fault = Error::Fault { space: "global", addr, size, span };
        let (r, off) = self.locate(addr, size).ok_or(fault.clone())?;
        read(&self.regions[r].bytes, off, size).ok_or(fault)
    }

    pub fn write(&mut self, addr: u64, size: u32, v: u64, span: Span) -> Result<(), Error> {
        let fault = Error::Fault { space: "global", addr, size, span };
        let (r, off) = self.locate(addr, size).ok_or(fault.clone())?;
        write(&mut self.regions[r].bytes, off, size, v).ok_or(fault)
    }
}

/// The value an atomic leaves in memory, from the `old` one (`src` and `cmp` read at
/// the operation type `ty`), as [`AtomicOp`] documents each.
pub fn atomic_update(op: AtomicOp, ty: OpTy, old: u64, src: u64, cmp: u64) -> u64 {
    let bits = ty.bits();
    let m = mask(bits);
    let (old, src, cmp) = (old & m, src & m, cmp & m);
    let signed = ty.is_signed();
    let new = match op {
        AtomicOp::Load => old,
        AtomicOp::Store | AtomicOp::Exch => src,
        AtomicOp::Add => old.wrapping_add(src),
        AtomicOp::And => old & src,
        AtomicOp::Or => old | src,
        AtomicOp::Xor => old ^ src,
        AtomicOp::Min if signed => sext(old, bits).min(sext(src, bits)) as u64,
        AtomicOp::Max if signed => sext(old, bits).max(sext(src, bits)) as u64,
        AtomicOp::Min => old.min(src),
        AtomicOp::Max => old.max(src),
        AtomicOp::Cas => {
            if old == cmp {
                src
            } else {
                old
            }
        }
        AtomicOp::Inc => {
            if old >= src {
                0
            } else {
                old + 1
            }
        }
        AtomicOp::Dec => {
            if old == 0 || old > src {
                src
            } else {
                old - 1
            }
        }
        AtomicOp::FloatAdd { ftz } => arith::float_add(ty, ftz, old, src),
        AtomicOp::HalfAdd { format, lanes } => arith::half_lanes(format, lanes, old, src, None),
        AtomicOp::HalfMinMax { max, format, lanes } => {
            arith::half_lanes(format, lanes, old, src, Some(max))
        }
    };
    new & m
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::FloatFormat;

    #[test]
    fn atomics_follow_the_isa() {
        let u32 = OpTy::U(32);
        assert_eq!(atomic_update(AtomicOp::Inc, u32, 9, 9, 0), 0);
        assert_eq!(atomic_update(AtomicOp::Inc, u32, 3, 9, 0), 4);
        assert_eq!(atomic_update(AtomicOp::Dec, u32, 0, 9, 0), 9);
        assert_eq!(atomic_update(AtomicOp::Dec, u32, 10, 9, 0), 9);
        assert_eq!(atomic_update(AtomicOp::Dec, u32, 5, 9, 0), 4);
        assert_eq!(atomic_update(AtomicOp::Min, OpTy::S(32), 5, 0xffff_ffff, 0), 0xffff_ffff);
        assert_eq!(atomic_update(AtomicOp::Cas, OpTy::U(16), 7, 1, 7), 1);
        // f16 lanes: 1.0 + 2.0 = 3.0 (0x3c00 + 0x4000 = 0x4200) in each half.
        let add = AtomicOp::HalfAdd { format: FloatFormat::F16, lanes: 2 };
        assert_eq!(atomic_update(add, u32, 0x3c00_3c00, 0x4000_4000, 0), 0x4200_4200);
    }

    #[test]
    fn little_endian_bytes() {
        let mut b = vec![0u8; 8];
        write(&mut b, 2, 4, 0x1122_3344).expect("in range");
        assert_eq!(b, [0, 0, 0x44, 0x33, 0x22, 0x11, 0, 0]);
        assert_eq!(read(&b, 3, 2), Some(0x2233));
        assert_eq!(read(&b, 6, 4), None);
    }
}
