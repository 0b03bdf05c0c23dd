//! The kernel parameter block, laid out per the CUDA ABI.
//!
//! A kernel's `.param` parameters are stored in one device buffer whose address the
//! launch passes in a push constant (`docs/architecture.md`, *The launch ABI*). Each
//! parameter sits at the next offset aligned to its alignment: the natural alignment of
//! its type, or its `.align` (PTX ISA 9.2 §5.1.6.1; "PTX Writer's Guide to
//! Interoperability", kernel parameters). This module is the contract between the
//! compiler (which turns `ld.param` into loads at these offsets) and the host (which
//! writes arguments at the same offsets).

/// One kernel parameter's place in the parameter block.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParamSlot {
    pub name: String,
    /// The declared element type, e.g. `.u64`, `.f32`, `.b8`.
    pub elem: ptxvk_frontend::ast::ScalarType,
    /// Number of elements (1 for a scalar; `N` for `.b8 p[N]`).
    pub count: u32,
    pub offset: u32,
    pub size: u32,
    pub align: u32,
}

/// The parameter block of one kernel.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KernelAbi {
    pub params: Vec<ParamSlot>,
    /// Total size in bytes, a multiple of `align`.
    pub size: u32,
    pub align: u32,
}

impl KernelAbi {
    /// Lays out parameters given as (name, element type, element count, explicit align).
    /// Returns `None` if the block would exceed 4 GiB.
    pub fn layout<'a>(
        params: impl IntoIterator<Item = (&'a str, ptxvk_frontend::ast::ScalarType, u32, Option<u32>)>,
    ) -> Option<KernelAbi> {
        let mut abi = KernelAbi { params: Vec::new(), size: 0, align: 1 };
        for (name, elem, count, align) in params {
            let natural = elem.bytes().max(1);
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

    pub fn param(&self, name: &str) -> Option<&ParamSlot> {
        self.params.iter().find(|p| p.name == name)
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
