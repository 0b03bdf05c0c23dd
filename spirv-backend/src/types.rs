//! Caches of SPIR-V types and constants, so each is declared once and in a
//! deterministic order (first use).

use std::collections::BTreeMap;

use rspirv::dr::Builder;
use rspirv::spirv::{StorageClass, Word};

use ptxvk_lower::ir::{OpTy, RegTy};

/// A scalar SPIR-V type. Integers are always declared unsigned (signedness 0): SPIR-V's
/// signed operations take any integer type, and one type per width avoids casts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Scalar {
    Bool,
    Int(u8),
    Float(u8),
}

impl Scalar {
    pub fn of_op(t: OpTy) -> Scalar {
        match t {
            OpTy::Pred => Scalar::Bool,
            OpTy::U(b) | OpTy::S(b) => Scalar::Int(b),
            OpTy::F(b) => Scalar::Float(b),
        }
    }

    pub fn of_reg(t: RegTy) -> Scalar {
        match t {
            RegTy::Pred => Scalar::Bool,
            RegTy::Int(b) => Scalar::Int(b),
            RegTy::Float(b) => Scalar::Float(b),
        }
    }

    pub fn bits(self) -> u32 {
        match self {
            Scalar::Bool => 1,
            Scalar::Int(b) | Scalar::Float(b) => b as u32,
        }
    }
}

/// What the module has needed so far: drives capabilities and the device features the
/// runtime must check.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Used {
    pub int8: bool,
    pub int16: bool,
    pub float64: bool,
    pub storage8: bool,
    pub storage16: bool,
    pub int64_atomics: bool,
    /// Subgroup operations (native and split warp modes).
    pub subgroup: bool,
    /// The device clock (`OpReadClockKHR`).
    pub device_clock: bool,
    /// Loop counts (`Globals::loop_counts`: elect, broadcast).
    pub loop_counts: bool,
    /// A loop (`OpLoopMerge`), of the program's or of an emulation routine.
    pub loops: bool,
}

#[derive(Debug, Default)]
pub struct TypeCache {
    scalars: BTreeMap<Scalar, Word>,
    pointers: BTreeMap<(u32, Word), Word>,
    constants: BTreeMap<(Scalar, u64), Word>,
    /// The bits of each constant of `constants`, by its id.
    constant_bits: BTreeMap<Word, u64>,
    pub used: Used,
    /// The id of the function of each emulation routine the module calls
    /// (`emit::routines`).
    pub(crate) routines: BTreeMap<ptxvk_lower::ir::Routine, Word>,
}

impl TypeCache {
    /// Whether the module has float values (f16, f32 or f64) anywhere.
    pub fn has_floats(&self) -> bool {
        self.scalars.keys().any(|s| matches!(s, Scalar::Float(_)))
    }

    pub fn scalar(&mut self, b: &mut Builder, s: Scalar) -> Word {
        if let Some(&id) = self.scalars.get(&s) {
            return id;
        }
        let id = match s {
            Scalar::Bool => b.type_bool(),
            Scalar::Int(w) => {
                match w {
                    8 => self.used.int8 = true,
                    16 => self.used.int16 = true,
                    _ => {}
                }
                b.type_int(w as u32, 0)
            }
            Scalar::Float(w) => {
                if w == 64 {
                    self.used.float64 = true;
                }
                b.type_float(w as u32, None)
            }
        };
        self.scalars.insert(s, id);
        id
    }

    pub fn pointer(&mut self, b: &mut Builder, class: StorageClass, pointee: Word) -> Word {
        let key = (class as u32, pointee);
        if let Some(&id) = self.pointers.get(&key) {
            return id;
        }
        let id = b.type_pointer(None, class, pointee);
        self.pointers.insert(key, id);
        id
    }

    /// A constant of scalar type `s` with the given bits (masked to the width).
    pub fn constant(&mut self, b: &mut Builder, s: Scalar, bits: u64) -> Word {
        let bits = match s.bits() {
            64 => bits,
            1 => (bits != 0) as u64,
            w => bits & ((1u64 << w) - 1),
        };
        if let Some(&id) = self.constants.get(&(s, bits)) {
            return id;
        }
        let ty = self.scalar(b, s);
        let id = match s {
            Scalar::Bool if bits != 0 => b.constant_true(ty),
            Scalar::Bool => b.constant_false(ty),
            _ if s.bits() == 64 => b.constant_bit64(ty, bits),
            _ => b.constant_bit32(ty, bits as u32),
        };
        self.constants.insert((s, bits), id);
        self.constant_bits.insert(id, bits);
        id
    }

    /// The bits of `id` if it is a constant of [`Self::constant`].
    pub fn constant_bits(&self, id: Word) -> Option<u64> {
        self.constant_bits.get(&id).copied()
    }

    pub fn u32(&mut self, b: &mut Builder, v: u32) -> Word {
        self.constant(b, Scalar::Int(32), v as u64)
    }
}
