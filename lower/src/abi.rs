//! The kernel parameter block of a PTX kernel: the launch ABI's layout
//! ([`ptxvk_abi::params`]) over PTX's scalar types.

use ptxvk_frontend::ast::ScalarType;

/// One kernel parameter's place in the parameter block.
pub type ParamSlot = ptxvk_abi::params::ParamSlot<ScalarType>;
/// The parameter block of one kernel.
pub type KernelAbi = ptxvk_abi::params::KernelAbi<ScalarType>;

/// [`KernelAbi::layout_with`] for PTX's scalar types, whose natural alignment is their
/// size (`KernelAbi::layout`).
pub trait Layout: Sized {
    /// Lays out parameters given as (name, element type, element count, explicit align).
    /// Returns `None` if the block would exceed 4 GiB.
    fn layout<'a>(
        params: impl IntoIterator<Item = (&'a str, ScalarType, u32, Option<u32>)>,
    ) -> Option<Self>;
}

impl Layout for KernelAbi {
    fn layout<'a>(
        params: impl IntoIterator<Item = (&'a str, ScalarType, u32, Option<u32>)>,
    ) -> Option<KernelAbi> {
        KernelAbi::layout_with(params, |elem| elem.bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ptxvk_frontend::ast::ScalarType::*;

    #[test]
    fn natural_alignment_and_explicit_align() {
        let abi = KernelAbi::layout([
            ("n", U32, 1, None),
            ("p", U64, 1, None),
            ("c", U8, 1, None),
            ("s", B8, 12, Some(8)),
            ("h", U16, 1, None),
        ])
        .expect("fits");
        let offsets: Vec<u32> = abi.params.iter().map(|p| p.offset).collect();
        assert_eq!(offsets, vec![0, 8, 16, 24, 36]);
        assert_eq!(abi.size, 40);
        assert_eq!(abi.align, 8);
    }
}
