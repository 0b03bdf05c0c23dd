//! The kernel parameter block, laid out per the CUDA ABI.
//!
//! A kernel's `.param` parameters are stored in one device buffer whose address the
//! launch passes in a push constant ([`crate::PushConstants::param_address`]). Each
//! parameter sits at the next offset aligned to its alignment: the natural alignment of
//! its type, or its `.align` (PTX ISA 9.2 §5.1.6.1; "PTX Writer's Guide to
//! Interoperability", kernel parameters). This module is the contract between the
//! compiler (which turns `ld.param` into loads at these offsets) and the host (which
//! writes arguments at the same offsets).
//!
//! The element type `E` is the compiler's (PTX's scalar types, `ptxvk-lower`'s
//! `abi::KernelAbi`): this crate knows only the bytes of one element.

/// One kernel parameter's place in the parameter block.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParamSlot<E> {
    pub name: String,
    /// The declared element type, e.g. `.u64`, `.f32`, `.b8`.
    pub elem: E,
    /// Number of elements (1 for a scalar; `N` for `.b8 p[N]`).
    pub count: u32,
    pub offset: u32,
    pub size: u32,
    pub align: u32,
}

/// The parameter block of one kernel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelAbi<E> {
    pub params: Vec<ParamSlot<E>>,
    /// Total size in bytes, a multiple of `align`.
    pub size: u32,
    pub align: u32,
}

impl<E> Default for KernelAbi<E> {
    fn default() -> Self {
        KernelAbi { params: Vec::new(), size: 0, align: 1 }
    }
}

impl<E> KernelAbi<E> {
    /// Lays out parameters given as (name, element type, element count, explicit
    /// align), where `bytes` gives an element's size (and natural alignment). Returns
    /// `None` if the block would exceed 4 GiB.
    pub fn layout_with<'a>(
        params: impl IntoIterator<Item = (&'a str, E, u32, Option<u32>)>,
        bytes: impl Fn(&E) -> u32,
    ) -> Option<KernelAbi<E>> {
        let mut abi = KernelAbi::default();
        for (name, elem, count, align) in params {
            let natural = bytes(&elem).max(1);
            let align = align.unwrap_or(natural).max(natural);
            let size = natural.checked_mul(count)?;
            let offset = abi.size.checked_next_multiple_of(align)?;
            abi.size = offset.checked_add(size)?;
            abi.align = abi.align.max(align);
            abi.params.push(ParamSlot { name: name.to_string(), elem, count, offset, size, align });
        }
        abi.size = abi.size.checked_next_multiple_of(abi.align)?;
        Some(abi)
    }

    pub fn param(&self, name: &str) -> Option<&ParamSlot<E>> {
        self.params.iter().find(|p| p.name == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn natural_alignment_and_explicit_align() {
        // Elements given by their bytes: u32, u64, u8, b8[12] aligned to 8, u16.
        let abi = KernelAbi::layout_with(
            [
                ("n", 4, 1, None),
                ("p", 8, 1, None),
                ("c", 1, 1, None),
                ("s", 1, 12, Some(8)),
                ("h", 2, 1, None),
            ],
            |&bytes| bytes,
        )
        .expect("fits");
        let offsets: Vec<u32> = abi.params.iter().map(|p| p.offset).collect();
        assert_eq!(offsets, vec![0, 8, 16, 24, 36]);
        assert_eq!(abi.size, 40);
        assert_eq!(abi.align, 8);
    }

    #[test]
    fn a_block_past_4_gib_has_no_layout() {
        let huge = [("a", 1u32, u32::MAX, None), ("b", 4, 1, None)];
        assert!(KernelAbi::layout_with(huge, |&bytes| bytes).is_none());
    }
}
