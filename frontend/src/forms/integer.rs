//! The integer and bit-level instructions' modifiers decoded into the values their one
//! IR operation holds (sema reads them; the forms rows have checked the combinations):
//! `prmt`'s mode and its table (§9.7.8.7), `testp`'s class (§9.7.3.3), the half-word
//! element of packed `add`/`sub`/`min`/`max` (§9.7.1.1, §9.7.1.12-13), the narrow type
//! of `cvt.pack` (§9.7.9.22) and the signedness of `dp4a`/`dp2a`'s sources (§9.7.1.22-23).
//!
//! [`PermuteMode`] and [`FloatClass`] are also the IR's (`ptxvk_lower::ir` re-exports
//! them as `PrmtMode` and `FloatTest`), as `decode::CmpOp` is.

use crate::ast::ScalarType;
use crate::modifier::{FloatClass, Format, Modifier, PermuteMode};
use crate::span::Spanned;

impl PermuteMode {
    /// The ISA's table (§9.7.8.7): the selector word (four 3-bit byte indices in
    /// nibbles, byte 0 lowest) for each value of `c[1:0]`.
    pub fn table(self) -> [u64; 4] {
        match self {
            PermuteMode::F4e => [0x3210, 0x4321, 0x5432, 0x6543],
            PermuteMode::B4e => [0x5670, 0x6701, 0x7012, 0x0123],
            PermuteMode::Rc8 => [0x0000, 0x1111, 0x2222, 0x3333],
            PermuteMode::Ecl => [0x3210, 0x3211, 0x3222, 0x3333],
            PermuteMode::Ecr => [0x0000, 0x1110, 0x2210, 0x3210],
            PermuteMode::Rc16 => [0x1010, 0x3232, 0x1010, 0x3232],
        }
    }
}

/// The mode of `prmt.b32{.mode}` (§9.7.8.7): without one each result byte has a 4-bit
/// selector in `c` (bit 3: replicate the picked byte's sign); the modes pick by
/// `c[1:0]` from [`PermuteMode::table`].
pub fn permute_mode(details: &[Spanned<Modifier>]) -> Option<PermuteMode> {
    details.iter().find_map(|d| match d.value {
        Modifier::PermuteMode(p) => Some(p),
        _ => None,
    })
}

/// The class `testp.op` tests (§9.7.3.3; `.normal` counts zero as normal, per the
/// ISA). The form is checked: it names one.
pub fn float_class(details: &[Spanned<Modifier>]) -> FloatClass {
    let class = details.iter().find_map(|d| match d.value {
        Modifier::FloatClass(c) => Some(c),
        _ => None,
    });
    class.unwrap_or(FloatClass::Subnormal)
}

/// Whether `add`/`sub`/`min`/`max` is packed (`.u16x2`/`.s16x2`, which takes no type
/// modifier): `Some(signed)` of each half word.
pub fn packed_half(details: &[Spanned<Modifier>], types: &[Spanned<ScalarType>]) -> Option<bool> {
    if !types.is_empty() {
        return None;
    }
    details.iter().find_map(|d| match d.value {
        Modifier::Format(Format::U16x2) => Some(false),
        Modifier::Format(Format::S16x2) => Some(true),
        _ => None,
    })
}

/// The narrow type of `cvt.pack.sat.{u16,s16}.s32` or
/// `cvt.pack.sat.{u8,s8,u4,s4,u2,s2}.s32.b32` (§9.7.9.22): its bits and signedness. The
/// form is checked: it names one.
pub fn pack_narrow(details: &[Spanned<Modifier>], types: &[Spanned<ScalarType>]) -> (u8, bool) {
    let sub_byte = details.iter().find_map(|d| match d.value {
        Modifier::Format(Format::U4) => Some((4, false)),
        Modifier::Format(Format::S4) => Some((4, true)),
        Modifier::Format(Format::U2) => Some((2, false)),
        Modifier::Format(Format::S2) => Some((2, true)),
        _ => None,
    });
    let narrow = sub_byte.or_else(|| {
        types.iter().find_map(|t| match t.value {
            ScalarType::U16 => Some((16, false)),
            ScalarType::S16 => Some((16, true)),
            ScalarType::U8 => Some((8, false)),
            ScalarType::S8 => Some((8, true)),
            _ => None,
        })
    });
    narrow.unwrap_or((16, false))
}

/// Whether `dp4a.atype.btype`/`dp2a.mode.atype.btype`'s `a` and `b` are signed
/// (§9.7.1.22-23: `.s32`, else `.u32`). The form is checked: it has the two types.
pub fn dot_signed(types: &[Spanned<ScalarType>]) -> [bool; 2] {
    [0, 1].map(|k| types.get(k).is_some_and(|t| t.value == ScalarType::S32))
}
